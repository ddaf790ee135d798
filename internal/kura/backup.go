package kura

// BackupFormat names the layout of a backup directory: kura.db (a
// consistent SQLite snapshot) and manifest.json describing it.
const BackupFormat = "kura-backup-1"

// BackupFormatPostgres names the layout of a backup of a PostgreSQL
// store: kura.pgdump (a pg_dump custom-format archive of one exported
// snapshot) and manifest.json describing it.
const BackupFormatPostgres = "kura-backup-pg-1"

// BackupManifest is manifest.json of a backup directory. Counts and
// LastEventSeq are read from the snapshot file itself, so they describe
// exactly what a restore brings back. Signature is kurad's Ed25519
// signature over the manifest without it (see store.ManifestSigningMessage),
// so a backup edited together with its manifest is still caught.
type BackupManifest struct {
	Format                 string           `json:"format"`
	CreatedAt              string           `json:"created_at"`
	SchemaVersion          int              `json:"schema_version"`
	LastEventSeq           int64            `json:"last_event_seq"`
	EventsCompactedThrough int64            `json:"events_compacted_through"`
	Counts                 map[string]int64 `json:"counts"`
	PublicKey              string           `json:"public_key"`
	Files                  []BackupFile     `json:"files"`
	Signature              string           `json:"signature"`
}

// BackupFile is one file of a backup with its size and SHA-256.
type BackupFile struct {
	Name   string `json:"name"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// Backup is the answer of POST /v1/admin/backup: where the backup was
// written (on the kurad host) and its manifest.
type Backup struct {
	Path string `json:"path"`
	BackupManifest
}

// RestoreReport is what kura restore did and what it verified.
type RestoreReport struct {
	Backup       string          `json:"backup"`             // the backup directory
	DataDir      string          `json:"data_dir,omitempty"` // where it was restored (SQLite)
	Database     string          `json:"database"`           // the restored file, or the PostgreSQL URL without its password
	MovedAside   string          `json:"moved_aside,omitempty"`
	Manifest     *BackupManifest `json:"manifest"`
	Verification *StoreCheck     `json:"verification"`
}

// StoreCheck is a full verification of a database: SQLite's own
// integrity check (on PostgreSQL: the restored database against the
// backup's manifest), then every session's chain and every ledger.
type StoreCheck struct {
	OK             bool     `json:"ok"`
	Integrity      string   `json:"integrity"` // "ok", or SQLite's first complaint (PostgreSQL: the first difference from the manifest)
	Sessions       int      `json:"sessions_verified"`
	Ledgers        int      `json:"ledgers_verified"`
	Records        int      `json:"records_checked"`
	FailedSessions []string `json:"failed_sessions,omitempty"`
	FailedLedgers  []string `json:"failed_ledgers,omitempty"`
	LastEventSeq   int64    `json:"last_event_seq"`
}

// EventCompaction is the answer of POST /v1/admin/compact-events.
type EventCompaction struct {
	RequestedBeforeSeq int64 `json:"requested_before_seq"`
	// CompactedThrough: every event with seq <= it is gone (0: none ever).
	CompactedThrough int64 `json:"compacted_through"`
	Removed          int64 `json:"removed"`       // by this call
	RemovedTotal     int64 `json:"removed_total"` // by every compaction so far
	PublishedSeq     int64 `json:"published_seq"`
	FirstSeq         int64 `json:"first_seq"` // oldest event kept (0: none)
	LastSeq          int64 `json:"last_seq"`
}
