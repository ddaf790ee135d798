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
	"github.com/kura-memory/kura/kurahash"
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
	// Each event served is checked against its leaf in the log (the
	// log_hashes row is the same transaction's), so a row changed since
	// it was committed is not passed off as kurad's (servedEvent).
	checked := !db.logs.off
	var q strings.Builder
	q.WriteString("SELECT events.seq, events.id, events.type, events.project, events.subject, events.refs, events.created_at")
	if checked {
		q.WriteString(", events.digest, h.hashes FROM events LEFT JOIN log_hashes h ON h.leaf = events.seq - 1")
	} else {
		q.WriteString(" FROM events")
	}
	q.WriteString(" WHERE events.seq > ? AND events.seq <= ?")
	if len(f.Types) > 0 || f.Project != "" || f.Restricted {
		upper = min(upper, f.After+eventScanWindow)
	}
	args := []any{f.After, upper}
	if f.Restricted {
		// Memory, context and knowledge-base events carry their scope in
		// the project column; everything else a project.
		q.WriteString(` AND (CASE WHEN events.type LIKE 'memory.%' OR events.type LIKE 'context.%' OR events.type = 'kb.changed'
			THEN ? OR events.project IN (SELECT value FROM json_each(?))
			ELSE ? OR events.project IN (SELECT value FROM json_each(?)) END)`)
		args = append(args, slices.Contains(f.Scopes, "*"), projectsJSON(f.Scopes), slices.Contains(f.Projects, "*"), projectsJSON(f.Projects))
	}
	if f.Project != "" {
		q.WriteString(" AND events.project = ?")
		args = append(args, f.Project)
	}
	if len(f.Types) > 0 {
		q.WriteString(" AND events.type IN (?" + strings.Repeat(",?", len(f.Types)-1) + ")")
		for _, t := range f.Types {
			args = append(args, t)
		}
	}
	q.WriteString(" ORDER BY events.seq LIMIT " + strconv.Itoa(f.Limit))
	rows, err := db.rdb.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	var leaves [][]byte
	for rows.Next() {
		var e *kura.Event
		if checked {
			var digest string
			var leaf []byte
			if e, err = scanEvent(rows, &digest, &leaf); err == nil {
				e.Digest = digest
				leaves = append(leaves, leaf)
			}
		} else {
			e, err = scanEvent(rows)
		}
		if err != nil {
			return nil, err
		}
		page.Events = append(page.Events, *e)
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(err)
	}
	rows.Close()
	if checked {
		if err := db.checkServedEvents(ctx, page.Events, leaves); err != nil {
			return nil, err
		}
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

// checkServedEvents marks Mismatch every event whose leaf data no longer
// hashes to its leaf in the log (leaves[i], the stored hashes of event
// i's leaf): kurad never serves as its own an event its log does not
// commit to. The digests a leaf reads from elsewhere are looked up for the
// whole page at once: a record.written event's is its record's seal, a
// record.redacted event's is recomputed from its redaction (qLeafEvents).
func (db *DB) checkServedEvents(ctx context.Context, events []kura.Event, leaves [][]byte) error {
	var records []string // record ids, and the events they are of
	var of []int
	var redacted []int
	for i := range events {
		e := &events[i]
		switch {
		case e.Mismatch:
		case e.Type == kura.EventRecordWritten && e.Digest == "":
			records, of = append(records, e.Refs["record_id"]), append(of, i)
		case e.Type == kura.EventRecordRedacted && e.Digest != "":
			redacted = append(redacted, i)
		}
	}
	if len(records) > 0 {
		// A record that is gone leaves its event's digest empty: it then
		// no longer hashes to its leaf.
		rows, err := db.rdb.QueryContext(ctx, "SELECT j.key, r.seal FROM json_each(?) j CROSS JOIN records r ON r.id = j.value", jsonList(records))
		err = scanRows(rows, err, func(rows *sql.Rows) error {
			var k int
			var seal string
			if err := rows.Scan(&k, &seal); err != nil {
				return err
			}
			if k >= 0 && k < len(of) {
				events[of[k]].Digest = seal
			}
			return nil
		})
		if err != nil {
			return mapErr(err)
		}
	}
	for _, i := range redacted {
		leaf, err := db.LogLeaves(ctx, events[i].Seq-1, events[i].Seq, nil)
		if err != nil {
			return err
		}
		if leaf[0].Data == nil {
			events[i].Mismatch = true
		}
	}
	for i := range events {
		e := &events[i]
		if e.Mismatch || (e.Type == kura.EventRecordRedacted && e.Digest != "") {
			continue
		}
		data, err := leafData(e)
		e.Mismatch = err != nil || len(leaves[i]) < 32 || [32]byte(kurahash.LogLeafHash(data)) != [32]byte(leaves[i][:32])
	}
	return nil
}

// scanEvent reads an event's columns, then extra. Refs that are not a JSON
// object make an event that is not what the log committed to.
func scanEvent(row rowScanner, extra ...any) (*kura.Event, error) {
	var e kura.Event
	var refs string
	if err := row.Scan(append([]any{&e.Seq, &e.ID, &e.Type, &e.Project, &e.Subject, &refs, &e.CreatedAt}, extra...)...); err != nil {
		return nil, mapErr(err)
	}
	var err error
	if e.Refs, err = parseRefs(refs); err != nil {
		if len(extra) > 0 {
			e.Refs, e.Mismatch = nil, true
			return &e, nil
		}
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

// parseRefs decodes an event's stored refs, a JSON object of strings.
// The writer stores them as refsJSON writes them, every string printable
// ASCII without quotes or backslashes (ids, slugs, hashes), which reads
// the same in any JSON decoder: those are split at their quotes, the feed
// reading a thousand of them a page. Anything else goes through
// encoding/json.
func parseRefs(s string) (map[string]string, error) {
	if refs, ok := plainRefs(s); ok {
		return refs, nil
	}
	var refs map[string]string
	if err := json.Unmarshal([]byte(s), &refs); err != nil {
		return nil, err
	}
	if refs == nil {
		return nil, errParseNull
	}
	return refs, nil
}

// errParseNull: stored refs that are JSON null are no object of ids.
var errParseNull = errors.New("refs are null, not an object")

// plainRefs parses {"k":"v",...} whose strings are all plain; ok is false
// for anything else.
func plainRefs(s string) (map[string]string, bool) {
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
		return nil, false
	}
	refs := make(map[string]string, 4)
	i := 1
	str := func() (string, bool) {
		if i >= len(s) || s[i] != '"' {
			return "", false
		}
		start := i + 1
		for j := start; j < len(s); j++ {
			switch c := s[j]; {
			case c == '"':
				i = j + 1
				return s[start:j], true
			case c < 0x20 || c > 0x7e || c == '\\':
				return "", false
			}
		}
		return "", false
	}
	for i < len(s)-1 {
		if len(refs) > 0 {
			if s[i] != ',' {
				return nil, false
			}
			i++
		}
		k, ok := str()
		if !ok || i >= len(s) || s[i] != ':' {
			return nil, false
		}
		i++
		v, ok := str()
		if !ok {
			return nil, false
		}
		if _, dup := refs[k]; dup {
			return nil, false
		}
		refs[k] = v
	}
	return refs, i == len(s)-1
}
