package store

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kura-memory/kura/internal/atomicfile"
	"github.com/kura-memory/kura/internal/dirlock"
	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/kurahash"
)

// The files of a backup directory.
const (
	BackupDatabase = "kura.db"
	BackupManifest = "manifest.json"
)

// maxManifestBytes bounds what a restore reads as manifest.json: a real one
// is about a kilobyte.
const maxManifestBytes = 1 << 20

// snapshotCounts are the tables a manifest counts, by the name it uses.
// Tables a schema does not have (yet) are left out.
var snapshotCounts = [][2]string{
	{"records", "records"}, {"ledgers", "ledgers"}, {"sessions", "sessions"}, {"turns", "turns"},
	{"events", "events"}, {"nodes", "nodes"}, {"relations", "relations"}, {"bundles", "context_bundles"},
	{"kb_entries", "kb_entries"},
}

// backupRuns are the backups running. A redaction abandons them: their
// snapshot was taken before it, so they would hold the content it drops,
// and their read transaction would keep that content in the WAL for as
// long as they run.
type backupRuns struct {
	mu     sync.Mutex
	gen    int64 // redactions committed since Open
	next   int
	cancel map[int]context.CancelCauseFunc
}

// errRedactedDuringBackup is the cause a redaction cancels backups with.
var errRedactedDuringBackup = errors.New("a record was redacted while the backup ran")

// start registers a backup and returns its id and the redaction count it
// began under.
func (b *backupRuns) start(cancel context.CancelCauseFunc) (int, int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cancel == nil {
		b.cancel = map[int]context.CancelCauseFunc{}
	}
	b.next++
	b.cancel[b.next] = cancel
	return b.next, b.gen
}

func (b *backupRuns) end(id int) {
	b.mu.Lock()
	delete(b.cancel, id)
	b.mu.Unlock()
}

// abandonBackups counts a committed redaction and cancels every backup
// running, before the redaction answers.
func (db *DB) abandonBackups() {
	b := &db.backups
	b.mu.Lock()
	defer b.mu.Unlock()
	b.gen++
	for _, cancel := range b.cancel {
		cancel(errRedactedDuringBackup)
	}
}

// errBackupAbandoned answers a backup a redaction cut short.
func errBackupAbandoned() error {
	return kura.Errorf(kura.EUnavailable, "a record was redacted while the backup ran; the backup was abandoned, since it would have held the redacted content: take it again")
}

// Backup writes a consistent snapshot of the database and its manifest into
// dir, an absolute path that must not exist or be an empty directory.
//
// The snapshot is VACUUM INTO on a connection of its own: one read
// transaction, so it holds exactly what was committed when it started, while
// the writer goes on committing (WAL readers never block the writer). Every
// write acknowledged before Backup was called is in it. The manifest's
// counts and last_event_seq are read back from the snapshot file, not from
// memory, and the manifest is signed with kurad's key. The private key is
// never written into a backup. A redaction committed while it runs
// abandons it (EUnavailable): no backup finished after a redaction
// answered holds the redacted content.
//
// On PostgreSQL the snapshot is kura.pgdump instead, written by pg_dump
// (backup_pg.go); everything else is the same.
func (db *DB) Backup(ctx context.Context, dir string) (*kura.BackupManifest, error) {
	if dir == "" || !filepath.IsAbs(dir) {
		return nil, kura.Invalid("path", "path must be an absolute directory on the kurad host")
	}
	dir = filepath.Clean(dir)
	db.mu.RLock()
	closed := db.closed
	db.mu.RUnlock()
	if closed {
		return nil, kura.Errorf(kura.EUnavailable, "kurad is shutting down")
	}
	name, pgDump := BackupDatabase, ""
	if db.pg != nil {
		// Before anything is created: a kurad that cannot take the backup
		// leaves no directory behind.
		var err error
		if pgDump, err = findPGTool("pg_dump", db.cfg.PGDump); err != nil {
			return nil, err
		}
		name = BackupPGDump
	}
	created, err := prepareBackupDir(dir)
	if err != nil {
		return nil, err
	}
	dst := filepath.Join(dir, name)
	// Created here, exclusively, so that two backups racing for the same
	// empty directory cannot both write into it; VACUUM INTO and pg_dump
	// accept an empty file.
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if created {
			os.Remove(dir)
		}
		if errors.Is(err, fs.ErrExist) {
			return nil, kura.Errorf(kura.EConflict, "the directory is being written by another backup").WithDetail("field", "path")
		}
		return nil, kura.Invalid("path", "cannot write into the directory: %v", osReason(err))
	}
	f.Close()
	ok := false
	defer func() {
		if ok {
			return
		}
		// A backup that did not finish is worthless and must not be
		// mistaken for one: nothing of it stays.
		os.Remove(dst)
		if created {
			os.Remove(dir)
		}
	}()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	run, gen := db.backups.start(cancel)
	defer db.backups.end(run)
	if f := db.cfg.Hooks.Backup; f != nil {
		f("snapshot")
	}
	// A redaction's cancel surfaces as whatever the step it hit says.
	cut := func(err error) error {
		if errors.Is(context.Cause(ctx), errRedactedDuringBackup) {
			return errBackupAbandoned()
		}
		return err
	}
	var m *kura.BackupManifest
	if db.pg != nil {
		if m, err = db.dumpPG(ctx, pgDump, dst); err != nil {
			return nil, cut(err)
		}
		if f := db.cfg.Hooks.Backup; f != nil {
			f("manifest")
		}
	} else {
		if err := db.vacuumInto(ctx, dst); err != nil {
			return nil, cut(err)
		}
		if f := db.cfg.Hooks.Backup; f != nil {
			f("manifest")
		}
		if err := syncFile(dst); err != nil {
			return nil, fmt.Errorf("backup: %w", err)
		}
		if m, err = describeSnapshot(ctx, dst); err != nil {
			return nil, cut(err)
		}
	}
	m.CreatedAt = kura.FormatTime(db.now())
	m.PublicKey = publicKeyString(db.pub)
	file, err := hashFile(dst)
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	m.Files = []kura.BackupFile{file}
	unsigned, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	msg, err := ManifestSigningMessage(unsigned)
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	m.Signature = hex.EncodeToString(ed25519.Sign(db.signer, msg))
	body, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	// manifest.json appears last and whole: a directory holding it holds a
	// complete backup. Under the lock redactions take to abandon backups:
	// one that committed after this snapshot began shows in gen, and no
	// redaction can answer between the check and the manifest.
	db.backups.mu.Lock()
	defer db.backups.mu.Unlock()
	if db.backups.gen != gen {
		return nil, errBackupAbandoned()
	}
	if err := atomicfile.Write(filepath.Join(dir, BackupManifest), append(body, '\n'), 0o600); err != nil {
		return nil, mapErr(fmt.Errorf("backup: %w", err))
	}
	ok = true
	return m, nil
}

// prepareBackupDir makes sure dir is an empty directory, creating it (and
// its parents) when missing; created says whether dir itself was made here.
// Its errors name neither the directory nor anything in it: the caller
// knows the path it gave, and what a directory holds is not its business.
func prepareBackupDir(dir string) (created bool, err error) {
	st, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return false, kura.Invalid("path", "cannot create the directory: %v", osReason(err))
		}
		return true, nil
	case err != nil:
		return false, kura.Invalid("path", "cannot use the directory: %v", osReason(err))
	case !st.IsDir():
		return false, kura.Errorf(kura.EConflict, "the path exists and is not a directory").WithDetail("field", "path")
	}
	f, err := os.Open(dir)
	if err != nil {
		return false, kura.Invalid("path", "cannot read the directory: %v", osReason(err))
	}
	names, err := f.Readdirnames(1)
	f.Close()
	if err != nil && !errors.Is(err, io.EOF) {
		return false, kura.Invalid("path", "cannot read the directory: %v", osReason(err))
	}
	if len(names) > 0 {
		return false, kura.Errorf(kura.EConflict, "the directory is not empty; a backup goes into a new or empty directory").WithDetail("field", "path")
	}
	return false, nil
}

// osReason is the operating system's reason of a file error, without the
// operation and path the caller names anyway.
func osReason(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// vacuumInto copies the database into dst on a connection of its own:
// the read pool is query_only, which VACUUM INTO refuses even though it
// writes nothing of the source.
func (db *DB) vacuumInto(ctx context.Context, dst string) error {
	c, err := sql.Open("sqlite", "file:"+db.cfg.Path+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer c.Close()
	c.SetMaxOpenConns(1)
	if _, err := c.ExecContext(ctx, "VACUUM INTO ?", dst); err != nil {
		return mapErr(fmt.Errorf("backup: vacuum into %s: %w", dst, err))
	}
	return nil
}

// describeSnapshot reads the manifest's facts from the snapshot file.
func describeSnapshot(ctx context.Context, path string) (*kura.BackupManifest, error) {
	c, err := sql.Open("sqlite", "file:"+path+"?mode=ro&immutable=1")
	if err != nil {
		return nil, fmt.Errorf("read snapshot: %w", err)
	}
	defer c.Close()
	m := &kura.BackupManifest{Format: kura.BackupFormat, Counts: map[string]int64{}}
	if err := c.QueryRowContext(ctx, "PRAGMA user_version").Scan(&m.SchemaVersion); err != nil {
		return nil, mapErr(fmt.Errorf("read snapshot: %w", err))
	}
	if err := describeContents(ctx, c, m, "SELECT name FROM sqlite_schema WHERE type = 'table'"); err != nil {
		return nil, err
	}
	return m, nil
}

// describeContents fills in what a manifest says a database holds (its
// last event, how far its events were compacted, its rows by kind),
// reading through q; tables lists the database's tables.
func describeContents(ctx context.Context, q queryer, m *kura.BackupManifest, tables string) error {
	if err := q.QueryRowContext(ctx, qMaxEventSeq).Scan(&m.LastEventSeq); err != nil {
		return mapErr(fmt.Errorf("read snapshot: %w", err))
	}
	var err error
	if m.EventsCompactedThrough, err = metaInt(ctx, q, metaCompactedThrough); err != nil {
		return fmt.Errorf("read snapshot: %w", err)
	}
	have := map[string]bool{}
	rows, err := q.QueryContext(ctx, tables)
	if err != nil {
		return mapErr(fmt.Errorf("read snapshot: %w", err))
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return mapErr(err)
		}
		have[name] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return mapErr(fmt.Errorf("read snapshot: %w", err))
	}
	for _, tc := range snapshotCounts {
		if !have[tc[1]] {
			continue
		}
		var n int64
		if err := q.QueryRowContext(ctx, "SELECT count(*) FROM "+tc[1]).Scan(&n); err != nil {
			return mapErr(fmt.Errorf("read snapshot: %w", err))
		}
		m.Counts[tc[0]] = n
	}
	return nil
}

// ManifestSigningMessage is what kurad signs for a backup: the SHA-256 of
// the RFC 8785 form of manifest.json without its "signature" member. Working
// on the JSON object rather than a Go struct keeps members added by later
// versions covered.
func ManifestSigningMessage(manifest []byte) ([]byte, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(manifest, &obj); err != nil {
		return nil, fmt.Errorf("manifest is not a JSON object: %w", err)
	}
	delete(obj, "signature")
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	canon, err := kurahash.Canonical(b)
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	return []byte("kura-backup-v1\n" + kurahash.SumHex(canon)), nil
}

// publicKeyString renders a key the way /v1/info publishes it.
func publicKeyString(pub ed25519.PublicKey) string {
	return "ed25519:" + hex.EncodeToString(pub)
}

// CheckBackup reads dir's manifest and checks it completely before anything
// is restored from it: the format, the schema version, that it was made by
// the kurad whose public key is pub, its signature, and every file's size
// and SHA-256.
func CheckBackup(dir string, pub ed25519.PublicKey) (*kura.BackupManifest, error) {
	f, err := os.Open(filepath.Join(dir, BackupManifest))
	if err != nil {
		return nil, fmt.Errorf("backup %s: %w", dir, err)
	}
	raw, err := io.ReadAll(io.LimitReader(f, maxManifestBytes+1))
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("backup %s: read manifest: %w", dir, err)
	}
	if len(raw) > maxManifestBytes {
		return nil, fmt.Errorf("backup %s: manifest.json is larger than %d bytes", dir, maxManifestBytes)
	}
	var m kura.BackupManifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("backup %s: manifest.json: %w", dir, err)
	}
	// The snapshot file each format holds, and the schema this build
	// knows for its engine.
	var snapshot string
	var schema int
	switch m.Format {
	case kura.BackupFormat:
		snapshot, schema = BackupDatabase, SchemaVersion
	case kura.BackupFormatPostgres:
		snapshot, schema = BackupPGDump, PGSchemaVersion
	default:
		return nil, fmt.Errorf("backup %s: format %q is neither %q nor %q", dir, m.Format, kura.BackupFormat, kura.BackupFormatPostgres)
	}
	if m.SchemaVersion > schema {
		return nil, fmt.Errorf("backup %s: schema version %d is newer than this build supports (%d); restore it with a newer kura", dir, m.SchemaVersion, schema)
	}
	if want := publicKeyString(pub); m.PublicKey != want {
		return nil, fmt.Errorf("backup %s was made by the kurad with public key %s, but the key given is %s: the restored kurad could not verify its own signatures; use the original key", dir, m.PublicKey, want)
	}
	msg, err := ManifestSigningMessage(raw)
	if err != nil {
		return nil, fmt.Errorf("backup %s: %w", dir, err)
	}
	sig, err := hex.DecodeString(m.Signature)
	if err != nil || !ed25519.Verify(pub, msg, sig) {
		return nil, fmt.Errorf("backup %s: the manifest's signature does not verify: manifest.json was changed", dir)
	}
	seen := map[string]bool{}
	for _, bf := range m.Files {
		if bf.Name == "" || bf.Name != filepath.Base(bf.Name) || bf.Name == "." || bf.Name == ".." || seen[bf.Name] {
			return nil, fmt.Errorf("backup %s: manifest lists a bad file name %q", dir, bf.Name)
		}
		seen[bf.Name] = true
		got, err := hashFile(filepath.Join(dir, bf.Name))
		if err != nil {
			return nil, fmt.Errorf("backup %s: %w", dir, err)
		}
		if got.Bytes != bf.Bytes {
			return nil, fmt.Errorf("backup %s: %s has %d bytes, the manifest says %d: the file was changed or damaged", dir, bf.Name, got.Bytes, bf.Bytes)
		}
		if got.SHA256 != bf.SHA256 {
			return nil, fmt.Errorf("backup %s: %s has SHA-256 %s, the manifest says %s: the file was changed or damaged", dir, bf.Name, got.SHA256, bf.SHA256)
		}
	}
	if !seen[snapshot] {
		return nil, fmt.Errorf("backup %s: the manifest lists no %s", dir, snapshot)
	}
	return &m, nil
}

// RestoreOptions say what to restore where.
type RestoreOptions struct {
	BackupDir string
	DataDir   string
	// PublicKey is the key the restored kurad verifies with: the backup
	// must have been made by it.
	PublicKey ed25519.PublicKey
	// Force moves what DataDir holds aside into pre-restore-<time>/
	// instead of refusing a non-empty directory.
	Force bool
	// Keep names entries of DataDir that are neither in the way nor moved,
	// such as the key file.
	Keep []string
	Now  func() time.Time
	// DatabaseURL, when set, restores a PostgreSQL backup into this
	// database, which must be empty (backup_pg.go); DataDir is unused.
	DatabaseURL string
	// PGRestore is the pg_restore to run (empty: found on PATH or in
	// /usr/lib/postgresql/*/bin).
	PGRestore string
}

// Restore installs a backup as DataDir's database. It holds DataDir's lock
// (package dirlock) throughout: it refuses while a kurad runs there, and a
// kurad started meanwhile refuses to start. It checks the backup (CheckBackup), copies
// the snapshot into a staging directory inside DataDir, hashes the copy,
// brings it to this build's schema and verifies it in full (VerifyAll);
// only then does it move any old files aside and rename the copy into
// place. A backup that fails any step leaves DataDir as it was, and nothing
// is ever deleted.
func Restore(ctx context.Context, o RestoreOptions) (*kura.RestoreReport, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.DatabaseURL != "" {
		return restorePG(ctx, o)
	}
	backupDir, err := filepath.Abs(o.BackupDir)
	if err != nil {
		return nil, err
	}
	dataDir, err := filepath.Abs(o.DataDir)
	if err != nil {
		return nil, err
	}
	if backupDir == dataDir {
		return nil, errors.New("restore: the data directory is the backup directory; restore into another one")
	}
	m, err := CheckBackup(backupDir, o.PublicKey)
	if err != nil {
		return nil, err
	}
	if m.Format != kura.BackupFormat {
		return nil, fmt.Errorf("restore: %s is a backup of a PostgreSQL store (format %s): restore it into an empty PostgreSQL database with --database-url (or KURA_DATABASE_URL), not into a data directory", backupDir, m.Format)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	lock, err := dirlock.Acquire(dataDir, "kura restore")
	if err != nil {
		return nil, fmt.Errorf("restore: %w; stop it before restoring", err)
	}
	defer lock.Release()
	// The lock file is neither old state nor to be moved: moving it while
	// held would let a kurad lock a new one beside it.
	inTheWay, err := dataDirEntries(dataDir, append(slices.Clip(o.Keep), dirlock.File))
	if err != nil {
		return nil, err
	}
	if len(inTheWay) > 0 && !o.Force {
		return nil, fmt.Errorf("restore: %s is not empty (%s); restore into an empty directory, or force it to move those files aside into %s",
			dataDir, strings.Join(inTheWay[:min(5, len(inTheWay))], ", "), filepath.Join(dataDir, "pre-restore-<time>"))
	}
	stamp := o.Now().UTC().Format("20060102T150405Z")
	// Staged in DataDir itself, so the final step is a rename on one file
	// system.
	stage, err := os.MkdirTemp(dataDir, ".restore-"+stamp+"-")
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	defer os.RemoveAll(stage)
	staged := filepath.Join(stage, BackupDatabase)
	if err := copyChecked(filepath.Join(backupDir, BackupDatabase), staged, m); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	check, err := checkDatabase(ctx, staged, o.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	rep := &kura.RestoreReport{Backup: backupDir, DataDir: dataDir, Database: filepath.Join(dataDir, BackupDatabase), Manifest: m, Verification: check}
	if !check.OK {
		return rep, fmt.Errorf("restore: the backup does not verify (integrity %s, %d sessions and %d ledgers failing); %s is unchanged",
			check.Integrity, len(check.FailedSessions), len(check.FailedLedgers), dataDir)
	}
	// Closing the last connection removes the journal; anything else beside
	// the copy would be a database file that must not be left behind.
	if rest, _ := os.ReadDir(stage); len(rest) != 1 {
		return rep, fmt.Errorf("restore: the staged database left files beside it in %s", stage)
	}
	if len(inTheWay) > 0 {
		aside, err := moveAside(dataDir, inTheWay, "pre-restore-"+stamp)
		if err != nil {
			return rep, fmt.Errorf("restore: %w", err)
		}
		rep.MovedAside = aside
	}
	if err := os.Rename(staged, rep.Database); err != nil {
		return rep, fmt.Errorf("restore: %w", err)
	}
	if err := atomicfile.SyncDir(dataDir); err != nil {
		return rep, fmt.Errorf("restore: %w", err)
	}
	return rep, nil
}

// dataDirEntries lists what in dir a restore would replace: everything but
// the kept names.
func dataDirEntries(dir string, keep []string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	var out []string
	for _, e := range entries {
		if !slices.Contains(keep, e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// moveAside moves names from dir into a new directory dir/prefix-*, moving
// them back should one rename fail: a restore never deletes and never
// leaves half of an old data directory behind.
func moveAside(dir string, names []string, prefix string) (string, error) {
	aside, err := os.MkdirTemp(dir, prefix+"-")
	if err != nil {
		return "", err
	}
	for i, n := range names {
		if err := os.Rename(filepath.Join(dir, n), filepath.Join(aside, n)); err != nil {
			for _, back := range names[:i] {
				os.Rename(filepath.Join(aside, back), filepath.Join(dir, back))
			}
			os.Remove(aside)
			return "", fmt.Errorf("move %s aside: %w", n, err)
		}
	}
	// Best effort: the moves are done, and failing here would leave the
	// data dir with neither the old database nor the new one.
	atomicfile.SyncDir(aside)
	return aside, nil
}

// copyChecked copies the backup's database to dst (mode 0600) and checks
// that what was written is what the manifest describes: the backup may
// change between CheckBackup and the copy.
func copyChecked(src, dst string, m *kura.BackupManifest) error {
	var want kura.BackupFile
	for _, f := range m.Files {
		if f.Name == BackupDatabase {
			want = f
		}
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h), in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if sum := hex.EncodeToString(h.Sum(nil)); n != want.Bytes || sum != want.SHA256 {
		return fmt.Errorf("the copy of %s (%d bytes, SHA-256 %s) does not match the manifest: the backup changed while it was restored", src, n, sum)
	}
	return nil
}

// checkDatabase brings the database file at path to this build's schema
// and verifies it in full, with no kurad running on it.
func checkDatabase(ctx context.Context, path string, pub ed25519.PublicKey) (*kura.StoreCheck, error) {
	db := New(Config{Path: path})
	db.pub = pub
	if err := checkSchemaVersion(ctx, path); err != nil {
		return nil, err
	}
	// Rollback-journal mode (the snapshot's own), not WAL: once closed, the
	// file stands alone and can be renamed into place.
	wdb, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=foreign_keys(ON)")
	if err != nil {
		return nil, err
	}
	wdb.SetMaxOpenConns(1)
	db.wdb = wdb
	err = db.migrate(ctx)
	if cerr := wdb.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	rdb, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=query_only(ON)")
	if err != nil {
		return nil, err
	}
	db.rdb = rdb
	check, err := db.VerifyAll(ctx)
	if cerr := rdb.Close(); err == nil {
		err = cerr
	}
	return check, err
}

// verifyPage is how many sessions or ledgers VerifyAll reads per query.
const verifyPage = 500

// VerifyAll checks a whole database: SQLite's integrity_check, every
// session's first-parent chain (VerifySession) and every ledger
// (VerifyLedger), all against the store's public key. It reads only, so it
// runs on a live store too.
func (db *DB) VerifyAll(ctx context.Context) (*kura.StoreCheck, error) {
	c := &kura.StoreCheck{}
	if err := db.rdb.QueryRowContext(ctx, "PRAGMA integrity_check(1)").Scan(&c.Integrity); err != nil {
		return nil, mapErr(fmt.Errorf("integrity check: %w", err))
	}
	return c, db.verifyChains(ctx, c)
}

// verifyChains fills c with every session's and every ledger's
// verification, after its Integrity is set.
func (db *DB) verifyChains(ctx context.Context, c *kura.StoreCheck) error {
	if err := db.rdb.QueryRowContext(ctx, "SELECT coalesce(max(seq), 0) FROM events").Scan(&c.LastEventSeq); err != nil {
		return mapErr(err)
	}
	for after := ""; ; {
		page, next, err := db.ListSessions(ctx, "", after, verifyPage)
		if err != nil {
			return err
		}
		for _, s := range page {
			v, err := db.VerifySession(ctx, s.ID, "")
			if err != nil {
				return err
			}
			c.Sessions++
			if !v.OK {
				c.FailedSessions = append(c.FailedSessions, s.ID)
			}
		}
		if next == "" {
			break
		}
		after = next
	}
	for after := ""; ; {
		rows, err := db.rdb.QueryContext(ctx, "SELECT id FROM ledgers WHERE id > ? ORDER BY id LIMIT ?", after, verifyPage)
		if err != nil {
			return mapErr(err)
		}
		var ids []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return mapErr(err)
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return mapErr(err)
		}
		for _, id := range ids {
			v, err := db.VerifyLedger(ctx, id)
			if err != nil {
				return err
			}
			c.Ledgers++
			c.Records += v.RecordsChecked
			if !v.OK {
				c.FailedLedgers = append(c.FailedLedgers, id)
			}
		}
		if len(ids) < verifyPage {
			break
		}
		after = ids[len(ids)-1]
	}
	c.OK = c.Integrity == "ok" && len(c.FailedSessions) == 0 && len(c.FailedLedgers) == 0
	return nil
}

func hashFile(path string) (kura.BackupFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return kura.BackupFile{}, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return kura.BackupFile{}, err
	}
	return kura.BackupFile{Name: filepath.Base(path), Bytes: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
