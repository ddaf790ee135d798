package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/kura-memory/kura/internal/kura"
)

// eventScanWindow bounds how many seqs one filtered feed query examines, so
// a filter that matches rarely cannot turn one request into a scan of the
// whole log; the client continues from next_after.
const eventScanWindow = 20000

// ListEvents answers the catch-up feed: committed events with seq > After,
// oldest first.
func (db *DB) ListEvents(ctx context.Context, f kura.EventFilter) (*kura.EventPage, error) {
	if db.pg != nil && (f.Through == 0 || f.Through > db.LastEventSeq()) {
		// Other instances commit too: the feed reads to the database's
		// newest event, not to the last this one heard of.
		if err := db.pgCatchUpSeq(ctx); err != nil {
			return nil, err
		}
	}
	last := db.LastEventSeq()
	page := &kura.EventPage{LastSeq: last, NextAfter: f.After, Events: []kura.Event{}}
	upper := last
	if f.Through > 0 {
		upper = min(upper, f.Through)
	}
	if f.After >= upper {
		return page, nil
	}
	if f.Limit <= 0 {
		f.Limit = 100
	}
	var q strings.Builder
	q.WriteString("SELECT seq, id, type, project, subject, refs, created_at FROM events WHERE seq > ? AND seq <= ?")
	if len(f.Types) > 0 || f.Project != "" || f.Restricted {
		upper = min(upper, f.After+eventScanWindow)
	}
	args := []any{f.After, upper}
	if f.Restricted {
		// Memory, context and knowledge-base events carry their scope in
		// the project column; everything else a project.
		q.WriteString(` AND (CASE WHEN type LIKE 'memory.%' OR type LIKE 'context.%' OR type = 'kb.changed'
			THEN ? OR project IN (SELECT value FROM json_each(?))
			ELSE ? OR project IN (SELECT value FROM json_each(?)) END)`)
		args = append(args, slices.Contains(f.Scopes, "*"), projectsJSON(f.Scopes), slices.Contains(f.Projects, "*"), projectsJSON(f.Projects))
	}
	if f.Project != "" {
		q.WriteString(" AND project = ?")
		args = append(args, f.Project)
	}
	if len(f.Types) > 0 {
		q.WriteString(" AND type IN (?" + strings.Repeat(",?", len(f.Types)-1) + ")")
		for _, t := range f.Types {
			args = append(args, t)
		}
	}
	q.WriteString(" ORDER BY seq LIMIT " + strconv.Itoa(f.Limit))
	rows, err := db.rdb.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return nil, err
		}
		page.Events = append(page.Events, *e)
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(err)
	}
	// A page that does not start right after f.After may have lost its
	// start to compaction; the checkpoint is read after the page, so it can
	// only overstate what was missed, never hide it.
	if len(page.Events) == 0 || page.Events[0].Seq > f.After+1 {
		through, err := db.EventsCompactedThrough(ctx)
		if err != nil {
			return nil, err
		}
		if f.After < through {
			page.CompactedThrough = through
		}
	}
	if n := len(page.Events); n == f.Limit {
		page.NextAfter = page.Events[n-1].Seq
	} else {
		page.NextAfter = upper
	}
	return page, nil
}

func scanEvent(row rowScanner) (*kura.Event, error) {
	var e kura.Event
	var refs string
	if err := row.Scan(&e.Seq, &e.ID, &e.Type, &e.Project, &e.Subject, &refs, &e.CreatedAt); err != nil {
		return nil, mapErr(err)
	}
	if err := json.Unmarshal([]byte(refs), &e.Refs); err != nil {
		return nil, kura.Errorf(kura.EInternal, "event %d: stored refs are not a JSON object: %v", e.Seq, err)
	}
	return &e, nil
}

// moveSeqTo moves the feed to seq, the last event of a batch this
// instance committed, and reports whether the batch's events are still to
// be counted. On PostgreSQL a reader (the poller, the feed) may find the
// commit in the database before the writer gets here, and count its
// events with the rest it found (advanceSeq); then the feed is already
// there, and they are not counted twice. A commit is seen whole or not at
// all, so the feed is never inside the batch.
func (db *DB) moveSeqTo(seq int64) bool {
	for {
		cur := db.lastSeq.Load()
		if cur >= seq {
			return false
		}
		if db.lastSeq.CompareAndSwap(cur, seq) {
			return true
		}
	}
}

// EventsChanged returns a channel closed at the next commit that writes an
// event: long polls and streams wait on it instead of polling the database.
func (db *DB) EventsChanged() <-chan struct{} {
	db.evMu.Lock()
	defer db.evMu.Unlock()
	return db.evCh
}

const publishedKey = "outbox_published_seq"

// PublishedSeq is the doorbell's saved cursor: every event up to it has been
// handed to NATS. Events after it are published again after a restart.
func (db *DB) PublishedSeq(ctx context.Context) (int64, error) {
	var v string
	err := db.rdb.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = ?", publishedKey).Scan(&v)
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return 0, nil
		}
		return 0, mapErr(err)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, kura.Errorf(kura.EInternal, "meta %s is not a number: %q", publishedKey, v)
	}
	return n, nil
}

const qSavePublished = `INSERT INTO meta(key, value) VALUES('` + publishedKey + `', ?)
	ON CONFLICT(key) DO UPDATE SET value = excluded.value
	WHERE CAST(meta.value AS INTEGER) < CAST(excluded.value AS INTEGER)`

// SavePublishedSeq moves the doorbell's cursor forward (never back). It is
// bookkeeping, not a mutation of Kura's data, so it writes no event.
func (db *DB) SavePublishedSeq(ctx context.Context, seq int64) error {
	return db.Update(ctx, func(tx *Tx) error {
		_, err := tx.Exec(qSavePublished, strconv.FormatInt(seq, 10))
		return err
	})
}
