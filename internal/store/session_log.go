package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/kurahash"
)

// Hashes and signatures cannot show that a session's newest turns were
// cut off consistently: delete its last ledgers with their records,
// parents and reflog rows, rewind head_ledger_id, and what is left is a
// shorter history that verifies. The log still holds the leaves of the
// head moves that were cut, so the session's head is checked against the
// newest session.head leaf of the session, on the server, with no state
// kept by a client.

// qSessionLogEvent is the newest session.head event of a session or, when
// it has none, its session.created event (the index events_session), with
// the leaf hash the log holds for it. Its stored digest is what its leaf
// commits to: the head hash, or the session's own digest.
const qSessionLogEvent = `SELECT e.seq, e.id, e.type, e.project, e.subject, e.refs, e.created_at, e.digest, h.hashes
	FROM events e LEFT JOIN log_hashes h ON h.leaf = e.seq - 1
	WHERE e.type IN ('session.created', 'session.head') AND json_extract(e.refs, '$.session_id') = ?
	ORDER BY e.seq DESC LIMIT 1`

// checkLogHead compares the session's head with the newest session.head
// leaf of the log for it, and checks that the feed still holds every event
// the log holds after that leaf: a cut that also deleted the head moves'
// events leaves a hole the log does not. Everything is read on one
// snapshot, so a head moving meanwhile is seen with its event.
func (db *DB) checkLogHead(ctx context.Context, sessionID string, v *kura.SessionVerification, problem func(ledger, field, detail string)) error {
	if db.logs.off {
		v.LogHead = &kura.LogHeadCheck{Reason: "kurad keeps no log"}
		return nil
	}
	opts := &sql.TxOptions{ReadOnly: true}
	if db.pg != nil {
		opts.Isolation = sql.LevelRepeatableRead
	}
	tx, err := db.rdb.BeginTx(ctx, opts)
	if err != nil {
		return mapErr(err)
	}
	defer tx.Rollback()
	var head, hash sql.NullString
	if err := tx.QueryRowContext(ctx, "SELECT s.head_ledger_id, l.hash"+sessionFrom+" WHERE s.id = ?", sessionID).Scan(&head, &hash); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return kura.Errorf(kura.ENotFound, "session not found")
		}
		return mapErr(err)
	}
	var (
		e      kura.Event
		refs   string
		leaf   []byte
		exists = true
	)
	err = tx.QueryRowContext(ctx, qSessionLogEvent, sessionID).Scan(&e.Seq, &e.ID, &e.Type, &e.Project, &e.Subject, &refs, &e.CreatedAt, &e.Digest, &leaf)
	if errors.Is(err, sql.ErrNoRows) {
		exists = false
	} else if err != nil {
		return mapErr(err)
	}
	through, err := parseMetaInt(metaCompactedThrough, tx.QueryRowContext(ctx, qMetaValue, metaCompactedThrough))
	if err != nil {
		return err
	}
	c := &kura.LogHeadCheck{Checked: true}
	v.LogHead = c
	from := through
	switch {
	case !exists && through > 0:
		// Both its creation and every head move are older than the
		// compaction checkpoint: the feed no longer holds what the log's
		// leaves hash.
		c.Checked, c.Reason = false, "the session's events were compacted away (through seq "+strconv.FormatInt(through, 10)+")"
	case !exists:
		problem("", "log_head", "the event feed holds neither the creation nor a head move of this session, though nothing was compacted: its events were deleted")
	default:
		from = max(from, e.Seq)
		if err := json.Unmarshal([]byte(refs), &e.Refs); err != nil {
			problem("", "log_head", "event "+strconv.FormatInt(e.Seq, 10)+" of the session holds refs that are not a JSON object")
			break
		}
		data, err := leafData(&e)
		if err != nil {
			return err
		}
		if len(leaf) < 32 || [32]byte(kurahash.LogLeafHash(data)) != [32]byte(leaf[:32]) {
			problem("", "log_head", "event "+strconv.FormatInt(e.Seq, 10)+", the session's newest in the feed, no longer hashes to its leaf in the log: the event was changed")
			break
		}
		if e.Type == kura.EventSessionCreated {
			if head.Valid {
				problem(head.String, "log_head", "the log holds no head move of this session, but its head is ledger "+head.String)
			}
			break
		}
		c.Seq, c.LedgerID, c.HeadHash = e.Seq, e.Refs["ledger_id"], e.Refs["head_hash"]
		if !head.Valid || head.String != c.LedgerID || hash.String != c.HeadHash {
			problem(head.String, "log_head", "the log's newest head move of this session (seq "+strconv.FormatInt(e.Seq, 10)+") is to ledger "+
				c.LedgerID+", hash "+c.HeadHash+"; the session's head is "+orNone(head)+", hash "+orNone(hash)+": history was cut short or rewritten")
		}
	}
	// Compaction removes events up to its checkpoint only, and never the
	// newest: every event after from is still in the feed unless deleted.
	var leaves, held int64
	if err := tx.QueryRowContext(ctx, "SELECT coalesce(max(leaf) + 1, 0) FROM log_hashes").Scan(&leaves); err != nil {
		return mapErr(err)
	}
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM events WHERE seq > ?", from).Scan(&held); err != nil {
		return mapErr(err)
	}
	if want := leaves - from; held < want {
		problem("", "log_head", strconv.FormatInt(want-held, 10)+" of the "+strconv.FormatInt(want, 10)+" events the log holds after seq "+
			strconv.FormatInt(from, 10)+" are missing from the feed (deleted, not compacted): the session's newest head moves may be among them")
	}
	return nil
}

func orNone(s sql.NullString) string {
	if !s.Valid || s.String == "" {
		return "none"
	}
	return s.String
}

// SessionHeadLogSeq is the seq of the newest session.head event of a
// session (the leaf GET /v1/log/inclusion?session_id= proves), or a
// not_found error when the feed holds none (no head move, or compacted).
func (db *DB) SessionHeadLogSeq(ctx context.Context, sessionID string) (int64, error) {
	var seq int64
	err := db.rdb.QueryRowContext(ctx, `SELECT seq FROM events WHERE type IN ('session.created', 'session.head')
		AND json_extract(refs, '$.session_id') = ? AND type = 'session.head' ORDER BY seq DESC LIMIT 1`, sessionID).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, kura.Errorf(kura.ENotFound, "session %s has no head move in the log (none, or compacted away)", sessionID)
	}
	return seq, mapErr(err)
}
