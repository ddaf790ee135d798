package store

import (
	"context"
	"crypto/ed25519"
	"database/sql"
	"encoding/hex"
	"errors"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/kurahash"
)

const sessionCols = "s.id, s.project, s.name, s.scope, s.head_ledger_id, l.hash, s.created_at, s.updated_at, (SELECT t.id FROM turns t WHERE t.session_id = s.id AND t.state = '" + kura.TurnOpen + "'), s.created_by"

const sessionFrom = " FROM sessions s LEFT JOIN ledgers l ON l.id = s.head_ledger_id"

func scanSession(row rowScanner) (*kura.Session, error) {
	var s kura.Session
	var head, hash, open, by sql.NullString
	if err := row.Scan(&s.ID, &s.Project, &s.Name, &s.Scope, &head, &hash, &s.CreatedAt, &s.UpdatedAt, &open, &by); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, kura.Errorf(kura.ENotFound, "session not found")
		}
		return nil, err
	}
	if head.Valid {
		s.HeadLedgerID, s.HeadHash = &head.String, &hash.String
	}
	if open.Valid {
		s.OpenTurnID = &open.String
	}
	if by.Valid {
		s.CreatedBy = &by.String
	}
	return &s, nil
}

const qSessionByID = "SELECT " + sessionCols + sessionFrom + " WHERE s.id = ?"

// session reads a session inside a write transaction.
func (tx *Tx) session(id string) (*kura.Session, error) {
	return scanSession(tx.QueryRow(qSessionByID, id))
}

// GetSession reads a session.
func (db *DB) GetSession(ctx context.Context, id string) (*kura.Session, error) {
	if !kura.ValidID(id) {
		return nil, kura.Invalid("id", "%q is not a lowercase UUID", id)
	}
	s, err := scanSession(db.rdb.QueryRowContext(ctx, "SELECT "+sessionCols+sessionFrom+" WHERE s.id = ?", id))
	return s, mapErr(err)
}

// ListSessions lists sessions oldest first, optionally of one project.
func (db *DB) ListSessions(ctx context.Context, project, after string, limit int) ([]kura.Session, string, error) {
	q := "SELECT " + sessionCols + sessionFrom + " WHERE s.id > ?"
	args := []any{after}
	if project != "" {
		q += " AND s.project = ?"
		args = append(args, project)
	}
	q += " ORDER BY s.id LIMIT ?"
	args = append(args, limit+1)
	rows, err := db.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, "", mapErr(err)
	}
	return scanPage(rows, limit, scanSession, func(s *kura.Session) string { return s.ID })
}

// CreateSession creates a session, its head at from_ledger_id when forking.
func (db *DB) CreateSession(ctx context.Context, in *kura.SessionInput, opts ...kura.WriteOption) (*kura.Session, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	if in.Scope == "" {
		in.Scope = in.Project
	}
	var out *kura.Session
	err := db.write(ctx, opts, func(tx *Tx) error {
		var exists string
		err := tx.QueryRow("SELECT id FROM sessions WHERE project = ? AND name = ?", in.Project, in.Name).Scan(&exists)
		if err == nil {
			return kura.Errorf(kura.EConflict, "session %s/%s exists", in.Project, in.Name).WithDetail("session_id", exists)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		id := uuid.Must(uuid.NewV7()).String()
		now := tx.NowString()
		var creator any // NULL when the caller names no one
		if in.CreatedBy != "" {
			creator = in.CreatedBy
		}
		if _, err := tx.Exec("INSERT INTO sessions(id, project, name, scope, created_at, updated_at, created_by) VALUES(?,?,?,?,?,?,?)",
			id, in.Project, in.Name, in.Scope, now, now, creator); err != nil {
			return err
		}
		if err := tx.AddEvent(kura.EventSessionCreated, in.Project, map[string]string{"session_id": id},
			objectDigest(map[string]string{"id": id, "project": in.Project, "name": in.Name, "scope": in.Scope, "created_at": now, "created_by": in.CreatedBy})); err != nil {
			return err
		}
		if in.FromLedgerID != "" {
			if _, err := tx.moveHead(id, in.Project, nil, in.FromLedgerID, "fork from ledger "+in.FromLedgerID); err != nil {
				if kura.IsCode(err, kura.EInvalid) {
					return kura.Invalid("from_ledger_id", "ledger %s does not exist", in.FromLedgerID).WithDetail("missing", []string{in.FromLedgerID})
				}
				return err
			}
		}
		if out, err = tx.session(id); err != nil {
			return err
		}
		return tx.KeepAnswer(true, out)
	})
	return out, err
}

const (
	qLedgerHashForHead = "SELECT hash FROM ledgers WHERE id = ?"
	qReflogNext        = "SELECT coalesce(max(seq), 0) + 1 FROM session_reflog WHERE session_id = ?"
	qInsertReflog      = "INSERT INTO session_reflog(session_id, seq, from_ledger_id, to_ledger_id, head_hash, reason, at, signature) VALUES(?,?,?,?,?,?,?,?)"
	qSetHead           = "UPDATE sessions SET head_ledger_id = ?, updated_at = ? WHERE id = ?"
)

// moveHead points a session at ledger to, logs and signs the move and
// appends a session.head event. It returns the new head hash.
func (tx *Tx) moveHead(sessionID, project string, from *string, to, reason string) (string, error) {
	var hash string
	if err := tx.QueryRow(qLedgerHashForHead, to).Scan(&hash); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return "", kura.Invalid("ledger_id", "ledger %s does not exist", to).WithDetail("missing", []string{to})
		}
		return "", err
	}
	var seq int64
	if err := tx.QueryRow(qReflogNext, sessionID).Scan(&seq); err != nil {
		return "", err
	}
	sig := hex.EncodeToString(ed25519.Sign(tx.db.signer, kurahash.HeadSigningMessage(sessionID, seq, hash)))
	now := tx.NowString()
	var fromArg any
	if from != nil {
		fromArg = *from
	}
	if _, err := tx.Exec(qInsertReflog, sessionID, seq, fromArg, to, hash, reason, now, sig); err != nil {
		return "", err
	}
	if _, err := tx.Exec(qSetHead, to, now, sessionID); err != nil {
		return "", err
	}
	return hash, tx.AddEvent(kura.EventSessionHead, project, map[string]string{"session_id": sessionID, "ledger_id": to, "head_hash": hash}, hash)
}

// MoveHead is the compare-and-swap of a session head: it moves only when
// the head is still expected_head (null for an empty session). Heads of
// sessions with an open turn move only with the turn.
func (db *DB) MoveHead(ctx context.Context, sessionID string, mv *kura.HeadMove, opts ...kura.WriteOption) (*kura.Session, error) {
	if !kura.ValidID(sessionID) {
		return nil, kura.Invalid("id", "%q is not a lowercase UUID", sessionID)
	}
	if !kura.ValidID(mv.LedgerID) {
		return nil, kura.Invalid("ledger_id", "%q is not a lowercase UUID", mv.LedgerID)
	}
	if mv.ExpectedHead != nil && !kura.ValidID(*mv.ExpectedHead) {
		return nil, kura.Invalid("expected_head", "%q is not a lowercase UUID", *mv.ExpectedHead)
	}
	if len(mv.Reason) > 256 {
		return nil, kura.Invalid("reason", "reason is at most 256 bytes")
	}
	var out *kura.Session
	err := db.write(ctx, opts, func(tx *Tx) error {
		s, err := tx.session(sessionID)
		if err != nil {
			return err
		}
		if !sameHead(s.HeadLedgerID, mv.ExpectedHead) {
			e := kura.Errorf(kura.EConflict, "the head is not the expected one")
			e.Details = map[string]any{"actual_head": s.HeadLedgerID, "actual_head_hash": s.HeadHash, "expected_head": mv.ExpectedHead}
			return e
		}
		if s.OpenTurnID != nil {
			return kura.Errorf(kura.EConflict, "turn %s is open on this session; the head moves with the turn", *s.OpenTurnID).WithDetail("turn_id", *s.OpenTurnID)
		}
		reason := mv.Reason
		if reason == "" {
			reason = "head moved"
		}
		if _, err := tx.moveHead(sessionID, s.Project, s.HeadLedgerID, mv.LedgerID, reason); err != nil {
			return err
		}
		if out, err = tx.session(sessionID); err != nil {
			return err
		}
		return tx.KeepAnswer(false, out)
	})
	return out, err
}

func sameHead(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// Reflog lists every head move of a session, oldest first.
func (db *DB) Reflog(ctx context.Context, sessionID string) ([]kura.ReflogEntry, error) {
	if _, err := db.GetSession(ctx, sessionID); err != nil {
		return nil, err
	}
	rows, err := db.rdb.QueryContext(ctx, "SELECT seq, from_ledger_id, to_ledger_id, head_hash, reason, at, signature FROM session_reflog WHERE session_id = ? ORDER BY seq", sessionID)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	out := []kura.ReflogEntry{}
	for rows.Next() {
		var e kura.ReflogEntry
		var from sql.NullString
		if err := rows.Scan(&e.Seq, &from, &e.To, &e.HeadHash, &e.Reason, &e.At, &e.Signature); err != nil {
			return nil, mapErr(err)
		}
		if from.Valid {
			e.From = &from.String
		}
		out = append(out, e)
	}
	return out, mapErr(rows.Err())
}

// SessionLog lists the ledgers from the head following first parents,
// newest first (like git log), in one recursive query. after continues
// from the first parent of that ledger (a page's last); next is the ledger
// to continue after, empty at the root.
func (db *DB) SessionLog(ctx context.Context, sessionID, after string, limit int) ([]kura.Ledger, string, error) {
	s, err := db.GetSession(ctx, sessionID)
	if err != nil {
		return nil, "", err
	}
	out := []kura.Ledger{}
	start := s.HeadLedgerID
	if after != "" {
		var parent sql.NullString
		err := db.rdb.QueryRowContext(ctx, "SELECT parent_id FROM ledger_parents WHERE ledger_id = ? AND pos = 0", after).Scan(&parent)
		if errors.Is(err, sql.ErrNoRows) {
			return out, "", nil
		}
		if err != nil {
			return nil, "", mapErr(err)
		}
		start = &parent.String
	}
	if start == nil {
		return out, "", nil
	}
	rows, err := db.rdb.QueryContext(ctx, `WITH RECURSIVE chain(id, depth) AS (
		SELECT ?, 0
		UNION ALL
		SELECT lp.parent_id, chain.depth + 1 FROM chain JOIN ledger_parents lp ON lp.ledger_id = chain.id AND lp.pos = 0
		WHERE chain.depth + 1 < ?)
	SELECT l.id, l.hash, l.root_hash, l.label, l.record_count, l.created_at, l.signature,
		(SELECT group_concat(parent_id, ',') FROM (SELECT parent_id FROM ledger_parents WHERE ledger_id = l.id ORDER BY pos) AS pp),
		(SELECT group_concat(h, ',') FROM (SELECT coalesce(p.hash, '') AS h FROM ledger_parents lp LEFT JOIN ledgers p ON p.id = lp.parent_id WHERE lp.ledger_id = l.id ORDER BY lp.pos) AS ph)
	FROM chain JOIN ledgers l ON l.id = chain.id ORDER BY chain.depth`, *start, limit+1)
	if err != nil {
		return nil, "", mapErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		var l kura.Ledger
		var parents, parentHashes sql.NullString
		if err := rows.Scan(&l.ID, &l.Hash, &l.RootHash, &l.Label, &l.RecordCount, &l.CreatedAt, &l.Signature, &parents, &parentHashes); err != nil {
			return nil, "", mapErr(err)
		}
		l.ParentIDs, l.ParentHashes = []string{}, []string{}
		if parents.Valid {
			l.ParentIDs = strings.Split(parents.String, ",")
			l.ParentHashes = strings.Split(parentHashes.String, ",")
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, "", mapErr(err)
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = out[limit-1].ID
	}
	return out, next, nil
}

// VerifySession walks the first-parent chain from the head, verifies every
// ledger and record on it, checks that the head is the one the latest
// signed reflog entry names and the one the log's newest head move of the
// session names (checkLogHead), and, given expectHeadHash, that the chain
// still holds that hash (a history cut short since it was handed out).
func (db *DB) VerifySession(ctx context.Context, sessionID, expectHeadHash string) (*kura.SessionVerification, error) {
	if expectHeadHash != "" && !kura.ValidHash(expectHeadHash) {
		return nil, kura.Invalid("expect_head_hash", "%q is not a lowercase hex SHA-256", expectHeadHash)
	}
	s, err := db.GetSession(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	v := &kura.SessionVerification{SessionID: s.ID, HeadLedgerID: s.HeadLedgerID, HeadHash: s.HeadHash, Problems: []kura.SessionIssue{}, ExpectHeadHash: expectHeadHash}
	problem := func(ledger, field, detail string) {
		v.Problems = append(v.Problems, kura.SessionIssue{LedgerID: ledger, Field: field, Detail: detail})
	}
	if err := db.verifyReflog(ctx, s, v, problem); err != nil {
		return nil, err
	}
	found := false
	seen := map[string]bool{}
	for cur := s.HeadLedgerID; cur != nil; {
		id := *cur
		if seen[id] {
			problem(id, "chain", "the first-parent chain loops")
			break
		}
		seen[id] = true
		lv, err := db.VerifyLedger(ctx, id)
		if kura.IsCode(err, kura.ENotFound) {
			problem(id, "ledger", "a ledger on the chain is missing")
			break
		}
		if err != nil {
			return nil, err
		}
		v.LedgersChecked++
		v.RecordsChecked += lv.RecordsChecked
		for _, rid := range lv.Redacted {
			if !slices.Contains(v.Redacted, rid) {
				v.Redacted = append(v.Redacted, rid)
			}
		}
		if !lv.OK {
			v.Ledgers = append(v.Ledgers, lv)
			problem(id, "ledger", "ledger does not verify ("+itoa(len(lv.Mismatches))+" mismatches)")
		}
		if lv.Hash == expectHeadHash {
			found = true
		}
		var parent sql.NullString
		err = db.rdb.QueryRowContext(ctx, "SELECT parent_id FROM ledger_parents WHERE ledger_id = ? AND pos = 0", id).Scan(&parent)
		if errors.Is(err, sql.ErrNoRows) || !parent.Valid {
			break
		}
		if err != nil {
			return nil, mapErr(err)
		}
		cur = &parent.String
	}
	if err := db.checkLogHead(ctx, s.ID, v, problem); err != nil {
		return nil, err
	}
	if expectHeadHash != "" {
		v.ExpectHeadHashFound = &found
		if !found {
			problem("", "expect_head_hash", "the chain no longer holds the head hash handed out: history was cut short or rewritten since")
		}
	}
	v.OK = len(v.Problems) == 0
	return v, nil
}

// verifyReflog checks every head move of the session, not only the last:
// each signature against the store's key, each entry continuing the one
// before it (seq 1, 2, ...; from = the previous to), each named ledger
// still having the hash the move signed; and the session's head must be
// the last move's. A consistent rewrite of the database changes ledger
// hashes, and no one without the key can sign the moves to them.
func (db *DB) verifyReflog(ctx context.Context, s *kura.Session, v *kura.SessionVerification, problem func(ledger, field, detail string)) error {
	rows, err := db.rdb.QueryContext(ctx, `SELECT rl.seq, rl.from_ledger_id, rl.to_ledger_id, rl.head_hash, rl.signature, l.hash
		FROM session_reflog rl LEFT JOIN ledgers l ON l.id = rl.to_ledger_id WHERE rl.session_id = ? ORDER BY rl.seq`, s.ID)
	if err != nil {
		return mapErr(err)
	}
	defer rows.Close()
	var (
		last    *kura.ReflogEntry
		wantSeq int64 = 1
	)
	for rows.Next() {
		var e kura.ReflogEntry
		var from, ledgerHash sql.NullString
		if err := rows.Scan(&e.Seq, &from, &e.To, &e.HeadHash, &e.Signature, &ledgerHash); err != nil {
			return mapErr(err)
		}
		v.HeadMovesChecked++
		n := itoa(int(e.Seq))
		sig, derr := hex.DecodeString(e.Signature)
		if derr != nil || !ed25519.Verify(db.pub, kurahash.HeadSigningMessage(s.ID, e.Seq, e.HeadHash), sig) {
			problem(e.To, "head_signature", "the signature of head move "+n+" does not verify")
		}
		if e.Seq != wantSeq {
			problem(e.To, "reflog", "head move "+n+" follows head move "+itoa(int(wantSeq-1))+": a move was removed or inserted")
		}
		wantSeq = e.Seq + 1
		if last != nil && (!from.Valid || from.String != last.To) {
			problem(e.To, "reflog", "head move "+n+" does not start where head move "+itoa(int(last.Seq))+" ended")
		}
		switch {
		case !ledgerHash.Valid:
			problem(e.To, "reflog", "the ledger head move "+n+" points at is missing")
		case ledgerHash.String != e.HeadHash:
			problem(e.To, "head_hash", "head move "+n+" signed ledger hash "+e.HeadHash+"; the ledger's hash is now "+ledgerHash.String)
		}
		last = &e
	}
	if err := rows.Err(); err != nil {
		return mapErr(err)
	}
	switch {
	case last == nil:
		if s.HeadLedgerID != nil {
			problem(*s.HeadLedgerID, "reflog", "the session has a head but no signed head move")
		}
	case s.HeadLedgerID == nil || *s.HeadLedgerID != last.To:
		problem(last.To, "head", "the head is not the ledger the last signed head move named")
	case s.HeadHash != nil && *s.HeadHash != last.HeadHash:
		problem(last.To, "head_hash", "the head ledger's hash is not the one the last signed head move named")
	}
	return nil
}
