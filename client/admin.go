package client

import (
	"context"
	"net/http"

	"github.com/kura-memory/kura/internal/kura"
)

type (
	// Backup is the answer of a backup: where it was written and its manifest.
	Backup = kura.Backup
	// BackupManifest is manifest.json of a backup directory.
	BackupManifest = kura.BackupManifest
	// BackupFile is one file of a backup with its size and SHA-256.
	BackupFile = kura.BackupFile
	// EventCompaction is the answer of an event-log compaction.
	EventCompaction = kura.EventCompaction
)

// Backup makes kurad write a consistent snapshot of its database and a
// signed manifest into a directory inside its backup directory (POST
// /v1/admin/backup, admin only; kurad's --backup-dir). dir "" lets kurad
// name a new subdirectory from the time; a relative dir is taken inside
// the backup directory; an absolute one must lie inside it. The directory
// must not exist or be empty. Writes go on meanwhile; every write
// acknowledged before the call is in the backup. The call takes as long as
// the copy: give the HTTP client no short timeout.
func (c *Client) Backup(ctx context.Context, dir string) (*Backup, error) {
	var out Backup
	body := map[string]string{}
	if dir != "" {
		body["path"] = dir
	}
	if err := c.do(ctx, "backup", http.MethodPost, "/v1/admin/backup", nil, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// CompactEvents removes events with seq < beforeSeq from kurad's event log
// (POST /v1/admin/compact-events, admin only), as far as the doorbell has
// published them and never the newest one. Verification does not depend on
// the events; the catch-up feed then reports compacted_through to readers
// that ask for history before it.
func (c *Client) CompactEvents(ctx context.Context, beforeSeq int64) (*EventCompaction, error) {
	var out EventCompaction
	body := map[string]int64{"before_seq": beforeSeq}
	if err := c.do(ctx, "compact events", http.MethodPost, "/v1/admin/compact-events", nil, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
