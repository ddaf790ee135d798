package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/kura-memory/kura/internal/admission"
	"github.com/kura-memory/kura/internal/kura"
)

const turnCols = "id, session_id, number, state, context_ledger_id, output_ledger_id, context_bundle_id, epoch, worker, lease_expires_at, dispatch, deadline_at, opened_at, closed_at"

func scanTurn(row rowScanner) (*kura.Turn, error) {
	var t kura.Turn
	var out, bundle, worker, lease, dispatch, closed sql.NullString
	if err := row.Scan(&t.ID, &t.SessionID, &t.Number, &t.State, &t.ContextLedgerID, &out, &bundle, &t.Epoch, &worker, &lease, &dispatch, &t.DeadlineAt, &t.OpenedAt, &closed); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, kura.Errorf(kura.ENotFound, "turn not found")
		}
		return nil, err
	}
	str := func(n sql.NullString) *string {
		if n.Valid {
			return &n.String
		}
		return nil
	}
	t.OutputLedgerID, t.ContextBundleID, t.Worker, t.LeaseExpiresAt, t.Dispatch, t.ClosedAt = str(out), str(bundle), str(worker), str(lease), str(dispatch), str(closed)
	return &t, nil
}

const (
	qTurnByID      = "SELECT " + turnCols + " FROM turns WHERE id = ?"
	qTurnOutput    = "SELECT record_id FROM turn_output WHERE turn_id = ? ORDER BY pos"
	qInsertOutput  = "INSERT INTO turn_output(turn_id, pos, record_id) VALUES(?,?,?)"
	qRecordByID    = "SELECT " + recordCols + " FROM records WHERE id = ?"
	qOutputTypes   = "SELECT r.type, count(*) FROM turn_output o CROSS JOIN records r ON r.id = o.record_id WHERE o.turn_id = ? GROUP BY r.type"
	qOutputExtract = "SELECT o.record_id, r.type FROM turn_output o CROSS JOIN records r ON r.id = o.record_id WHERE o.turn_id = ? AND r.type IN ('" + kura.RecordMemoryFact + "', '" + kura.RecordMemoryDecision + "') ORDER BY o.pos"
	qDeliverables  = "SELECT lr.record_id FROM ledger_records lr CROSS JOIN records r ON r.id = lr.record_id WHERE lr.ledger_id = ? AND r.type = '" + kura.RecordTaskDeliverable + "' ORDER BY lr.pos"
)

// turn reads a turn and its output so far inside a write transaction.
func (tx *Tx) turn(id string) (*kura.Turn, error) {
	t, err := scanTurn(tx.QueryRow(qTurnByID, id))
	if err != nil {
		return nil, err
	}
	rows, err := tx.Query(qTurnOutput, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	t.OutputRecordIDs = []string{}
	for rows.Next() {
		var rid string
		if err := rows.Scan(&rid); err != nil {
			return nil, err
		}
		t.OutputRecordIDs = append(t.OutputRecordIDs, rid)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	t.Extracted, err = tx.extracted(id)
	return t, err
}

// extracted lists the node refs a turn's close extracted.
func (tx *Tx) extracted(turnID string) ([]string, error) {
	rows, err := tx.Query(qTurnExtracted, turnID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	refs := []string{}
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			return nil, err
		}
		refs = append(refs, r)
	}
	return refs, rows.Err()
}

// GetTurn reads a turn with its output record ids so far.
func (db *DB) GetTurn(ctx context.Context, id string) (*kura.Turn, error) {
	if !kura.ValidID(id) {
		return nil, kura.Invalid("id", "%q is not a lowercase UUID", id)
	}
	t, err := scanTurn(db.rdb.QueryRowContext(ctx, "SELECT "+turnCols+" FROM turns WHERE id = ?", id))
	if err != nil {
		return nil, mapErr(err)
	}
	rows, err := db.rdb.QueryContext(ctx, "SELECT record_id FROM turn_output WHERE turn_id = ? ORDER BY pos", id)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	t.OutputRecordIDs = []string{}
	for rows.Next() {
		var rid string
		if err := rows.Scan(&rid); err != nil {
			return nil, mapErr(err)
		}
		t.OutputRecordIDs = append(t.OutputRecordIDs, rid)
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(err)
	}
	rows.Close()
	if t.State != kura.TurnOpen {
		erows, err := db.rdb.QueryContext(ctx, "SELECT ref FROM turn_extracted WHERE turn_id = ? ORDER BY pos", id)
		if err != nil {
			return nil, mapErr(err)
		}
		defer erows.Close()
		t.Extracted = []string{}
		for erows.Next() {
			var r string
			if err := erows.Scan(&r); err != nil {
				return nil, mapErr(err)
			}
			t.Extracted = append(t.Extracted, r)
		}
		return t, mapErr(erows.Err())
	}
	return t, nil
}

// ListTurns lists turns oldest first, by session and state.
func (db *DB) ListTurns(ctx context.Context, sessionID, state, after string, limit int) ([]kura.Turn, string, error) {
	q := "SELECT " + turnCols + " FROM turns WHERE id > ?"
	args := []any{after}
	if sessionID != "" {
		q += " AND session_id = ?"
		args = append(args, sessionID)
	}
	if state != "" {
		q += " AND state = ?"
		args = append(args, state)
	}
	q += " ORDER BY id LIMIT ?"
	args = append(args, limit+1)
	rows, err := db.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, "", mapErr(err)
	}
	out, next, err := scanPage(rows, limit, scanTurn, func(t *kura.Turn) string { return t.ID })
	if err != nil {
		return nil, "", err
	}
	if err := db.loadOutputs(ctx, out); err != nil {
		return nil, "", err
	}
	return out, next, nil
}

// loadOutputs fills the output record ids of a page of turns in one query.
func (db *DB) loadOutputs(ctx context.Context, turns []kura.Turn) error {
	if len(turns) == 0 {
		return nil
	}
	idx := make(map[string]int, len(turns))
	args := make([]any, len(turns))
	marks := make([]byte, 0, 2*len(turns))
	for i := range turns {
		turns[i].OutputRecordIDs = []string{}
		idx[turns[i].ID] = i
		args[i] = turns[i].ID
		if i > 0 {
			marks = append(marks, ',')
		}
		marks = append(marks, '?')
	}
	rows, err := db.rdb.QueryContext(ctx, "SELECT turn_id, record_id FROM turn_output WHERE turn_id IN ("+string(marks)+") ORDER BY turn_id, pos", args...)
	if err != nil {
		return mapErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		var tid, rid string
		if err := rows.Scan(&tid, &rid); err != nil {
			return mapErr(err)
		}
		t := &turns[idx[tid]]
		t.OutputRecordIDs = append(t.OutputRecordIDs, rid)
	}
	return mapErr(rows.Err())
}

// outputTypes counts the record types of a turn's output so far, in one
// query, however long the output has grown.
func (tx *Tx) outputTypes(turnID string) (map[string]int, error) {
	rows, err := tx.Query(qOutputTypes, turnID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var typ string
		var n int
		if err := rows.Scan(&typ, &n); err != nil {
			return nil, err
		}
		out[typ] = n
	}
	return out, rows.Err()
}

// OpenTurn opens a turn on a session: it writes the instruction and context
// records, builds the context ledger (instruction, context, the previous
// output's task.deliverable records; parent = the previous head), moves
// the head to it, all in one transaction.
func (db *DB) OpenTurn(ctx context.Context, sessionID string, in *kura.TurnOpenInput, defaultDeadline time.Duration, opts ...kura.WriteOption) (*kura.Turn, error) {
	if !kura.ValidID(sessionID) {
		return nil, kura.Invalid("id", "%q is not a lowercase UUID", sessionID)
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	deadline := in.Deadline(defaultDeadline)
	instr, err := db.PrepareRecord(in.Instruction, "instruction.")
	if err != nil {
		return nil, err
	}
	// Memory is compiled from a read snapshot before the write: a compile
	// over a large scope must not hold the writer.
	var bundle *admission.Bundle
	var stored any // the bundle as context_bundles keeps it
	var memRecs []*PreparedRecord
	if in.Memory != nil {
		if bundle, memRecs, err = db.turnMemory(ctx, sessionID, in.Memory); err != nil {
			return nil, err
		}
		// Encoded and packed before the write, too: not by the writer.
		if stored, err = db.encodeBundle(bundle); err != nil {
			return nil, err
		}
		bundle.Result = admission.Result{} // in stored and memRecs now

	}
	var out *kura.Turn
	err = db.write(ctx, opts, func(tx *Tx) error {
		s, err := tx.session(sessionID)
		if err != nil {
			return err
		}
		if s.OpenTurnID != nil {
			return kura.Errorf(kura.EConflict, "turn %s is already open on this session", *s.OpenTurnID).WithDetail("turn_id", *s.OpenTurnID)
		}
		instr.Project = s.Project
		refs, err := db.prepareRefs(in.Context, "context", s.Project)
		if err != nil {
			return err
		}
		instrRec, err := tx.InsertRecord(instr)
		if err != nil {
			return err
		}
		ctxRecs, err := tx.resolve(refs)
		if err != nil {
			return err
		}
		recordIDs := []string{instrRec.ID}
		for _, r := range ctxRecs {
			recordIDs = append(recordIDs, r.ID)
		}
		var bundleID any
		if bundle != nil {
			if err := tx.storeBundle(bundle, stored); err != nil {
				return err
			}
			bundleID = bundle.BundleID
			for _, p := range memRecs {
				p.Project = s.Project
				r, err := tx.InsertRecord(p)
				if err != nil {
					return err
				}
				recordIDs = append(recordIDs, r.ID)
			}
		}
		var parents []string
		if s.HeadLedgerID != nil {
			parents = []string{*s.HeadLedgerID}
			prev, err := tx.deliverables(*s.HeadLedgerID)
			if err != nil {
				return err
			}
			recordIDs = append(recordIDs, prev...)
		}
		var number int
		if err := tx.QueryRow("UPDATE sessions SET turn_count = turn_count + 1 WHERE id = ? RETURNING turn_count", s.ID).Scan(&number); err != nil {
			return err
		}
		l, err := tx.InsertLedger(&kura.LedgerInput{Label: fmt.Sprintf("%s-turn-%d-ctx", s.Name, number), ParentIDs: parents, RecordIDs: recordIDs}, s.Project)
		if err != nil {
			return err
		}
		id := uuid.Must(uuid.NewV7()).String()
		headHash, err := tx.moveHead(s.ID, s.Project, s.HeadLedgerID, l.ID, "turn "+id+" opened")
		if err != nil {
			return err
		}
		var dispatch any
		if in.Dispatch != "" {
			dispatch = in.Dispatch
		}
		now := tx.Now()
		if _, err := tx.Exec("INSERT INTO turns(id, session_id, number, state, context_ledger_id, context_bundle_id, dispatch, deadline_at, opened_at) VALUES(?,?,?,?,?,?,?,?,?)",
			id, s.ID, number, kura.TurnOpen, l.ID, bundleID, dispatch, kura.FormatTime(now.Add(deadline)), kura.FormatTime(now)); err != nil {
			return err
		}
		if err := tx.AddEvent(kura.EventTurnOpened, s.Project, map[string]string{"turn_id": id, "session_id": s.ID, "context_ledger_id": l.ID}, l.Hash); err != nil {
			return err
		}
		if in.Dispatch != "" {
			if err := tx.AddCommand(s.Project, in.Dispatch, kura.EventDispatch, map[string]string{"turn_id": id, "context_ledger_id": l.ID, "target": in.Dispatch}, l.Hash); err != nil {
				return err
			}
		}
		if out, err = tx.turn(id); err != nil {
			return err
		}
		out.HeadHash = &headHash
		return tx.KeepAnswer(true, out)
	})
	return out, err
}

// deliverables returns the task.deliverable records of a ledger, in order.
func (tx *Tx) deliverables(ledgerID string) ([]string, error) {
	// CROSS JOIN fixes the join order: walk this ledger's positions, then
	// look each record up. Left to itself, SQLite 3.54 starts from the
	// records_type index and walks every deliverable in the database.
	rows, err := tx.Query(qDeliverables, ledgerID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// openTurn loads a turn that must be open (409 otherwise).
func (tx *Tx) openTurn(id string) (*kura.Turn, error) {
	t, err := tx.turn(id)
	if err != nil {
		return nil, err
	}
	if t.State != kura.TurnOpen {
		return nil, kura.Errorf(kura.EConflict, "turn %s is %s, not open", id, t.State).WithDetail("state", t.State)
	}
	return t, nil
}

// openTurnForWrite loads a turn that must be open and fenced by epoch: a
// claimed turn takes writes only with its current epoch, from its worker
// (kura.CheckLeaseHolder).
func (tx *Tx) openTurnForWrite(id string, epoch *int64, w kura.Writer) (*kura.Turn, *kura.Session, error) {
	t, err := tx.openTurn(id)
	if err != nil {
		return nil, nil, err
	}
	if err := kura.CheckLeaseHolder(t, w); err != nil {
		return nil, nil, err
	}
	if err := checkEpoch(t, epoch); err != nil {
		return nil, nil, err
	}
	s, err := tx.session(t.SessionID)
	if err != nil {
		return nil, nil, err
	}
	return t, s, nil
}

func checkEpoch(t *kura.Turn, epoch *int64) error {
	switch {
	case t.Epoch == 0 && (epoch == nil || *epoch == 0):
		return nil
	case epoch != nil && *epoch == t.Epoch:
		return nil
	case epoch == nil:
		return kura.Errorf(kura.EConflict, "turn %s is claimed (epoch %d): writes must carry its epoch", t.ID, t.Epoch).WithDetail("epoch", t.Epoch)
	}
	return kura.Errorf(kura.EConflict, "stale epoch %d: turn %s is at epoch %d", *epoch, t.ID, t.Epoch).WithDetail("epoch", t.Epoch)
}

// ClaimTurn gives a worker the turn for lease seconds and bumps its epoch;
// a turn whose lease has not expired cannot be claimed.
func (db *DB) ClaimTurn(ctx context.Context, id string, in *kura.TurnClaim, opts ...kura.WriteOption) (*kura.Lease, error) {
	if !kura.ValidID(id) {
		return nil, kura.Invalid("id", "%q is not a lowercase UUID", id)
	}
	if !kura.ValidAuthorID(in.Worker) {
		return nil, kura.Invalid("worker", "worker must be an identity like agent:hashi")
	}
	lease, err := kura.LeaseDuration(in.LeaseSeconds)
	if err != nil {
		return nil, err
	}
	var out *kura.Lease
	err = db.write(ctx, opts, func(tx *Tx) error {
		t, err := tx.openTurn(id)
		if err != nil {
			return err
		}
		now := tx.Now()
		if t.LeaseExpiresAt != nil && *t.LeaseExpiresAt > kura.FormatTime(now) {
			e := kura.Errorf(kura.EConflict, "turn %s is claimed by %s until %s", id, deref(t.Worker), *t.LeaseExpiresAt)
			e.Details = map[string]any{"worker": t.Worker, "lease_expires_at": t.LeaseExpiresAt, "epoch": t.Epoch}
			return e
		}
		out = &kura.Lease{TurnID: id, Epoch: t.Epoch + 1, Worker: in.Worker, LeaseExpiresAt: kura.FormatTime(now.Add(lease))}
		if _, err := tx.Exec("UPDATE turns SET epoch = ?, worker = ?, lease_expires_at = ? WHERE id = ?", out.Epoch, out.Worker, out.LeaseExpiresAt, id); err != nil {
			return err
		}
		s, err := tx.session(t.SessionID)
		if err != nil {
			return err
		}
		if err := tx.AddEvent(kura.EventTurnClaimed, s.Project, map[string]string{"turn_id": id, "session_id": s.ID}, objectDigest(out)); err != nil {
			return err
		}
		return tx.KeepAnswer(false, out)
	})
	return out, err
}

// RenewTurn extends the lease of the current claim.
func (db *DB) RenewTurn(ctx context.Context, id string, in *kura.TurnRenew, opts ...kura.WriteOption) (*kura.Lease, error) {
	if !kura.ValidID(id) {
		return nil, kura.Invalid("id", "%q is not a lowercase UUID", id)
	}
	lease, err := kura.LeaseDuration(in.LeaseSeconds)
	if err != nil {
		return nil, err
	}
	var out *kura.Lease
	err = db.write(ctx, opts, func(tx *Tx) error {
		t, err := tx.openTurn(id)
		if err != nil {
			return err
		}
		if t.Epoch == 0 {
			return kura.Errorf(kura.EConflict, "turn %s is not claimed", id)
		}
		if err := kura.CheckLeaseHolder(t, in.Writer); err != nil {
			return err
		}
		if err := checkEpoch(t, &in.Epoch); err != nil {
			return err
		}
		out = &kura.Lease{TurnID: id, Epoch: t.Epoch, Worker: deref(t.Worker), LeaseExpiresAt: kura.FormatTime(tx.Now().Add(lease))}
		if _, err := tx.Exec("UPDATE turns SET lease_expires_at = ? WHERE id = ?", out.LeaseExpiresAt, id); err != nil {
			return err
		}
		return tx.KeepAnswer(false, out)
	})
	return out, err
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// AppendTurn appends records to an open turn's output, in order. A turn's
// output holds at most one task.deliverable.
func (db *DB) AppendTurn(ctx context.Context, id string, in *kura.TurnAppend, opts ...kura.WriteOption) (*kura.TurnAppendResult, error) {
	if !kura.ValidID(id) {
		return nil, kura.Invalid("id", "%q is not a lowercase UUID", id)
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	// Project is set inside the transaction, once the session is known.
	refs, err := db.prepareRefs(in.Records, "records", db.cfg.DefaultProject)
	if err != nil {
		return nil, err
	}
	var out *kura.TurnAppendResult
	err = db.write(ctx, opts, func(tx *Tx) error {
		t, s, err := tx.openTurnForWrite(id, in.Epoch, in.Writer)
		if err != nil {
			return err
		}
		for _, r := range refs {
			if r.rec != nil {
				r.rec.Project = s.Project
			}
		}
		recs, err := tx.resolve(refs)
		if err != nil {
			return err
		}
		types, err := tx.outputTypes(id)
		if err != nil {
			return err
		}
		have := types[kura.RecordTaskDeliverable]
		for _, r := range recs {
			if r.Type == kura.RecordTaskDeliverable {
				have++
			}
		}
		if have > 1 {
			return kura.Errorf(kura.EConflict, "a turn's output holds exactly one task.deliverable")
		}
		base := len(t.OutputRecordIDs)
		out = &kura.TurnAppendResult{TurnID: id, OutputRecordIDs: t.OutputRecordIDs, Records: recs}
		for i := range recs {
			if _, err := tx.Exec(qInsertOutput, id, base+i, recs[i].ID); err != nil {
				return err
			}
			out.OutputRecordIDs = append(out.OutputRecordIDs, recs[i].ID)
		}
		return tx.KeepAnswer(false, out)
	})
	return out, err
}

// CloseTurn seals a turn's output ledger (parent = the context ledger),
// adds a task.deliverable recording the status when the output has none,
// moves the head to the output, and queues its memory.fact/memory.decision
// records for extraction; one transaction, one turn.complete event.
func (db *DB) CloseTurn(ctx context.Context, id string, in *kura.TurnClose, opts ...kura.WriteOption) (*kura.Turn, error) {
	if !kura.ValidID(id) {
		return nil, kura.Invalid("id", "%q is not a lowercase UUID", id)
	}
	switch in.Status {
	case kura.TurnComplete, kura.TurnFailed:
	case "":
		in.Status = kura.TurnComplete
	default:
		return nil, kura.Invalid("status", "status must be complete or failed")
	}
	var out *kura.Turn
	err := db.write(ctx, opts, func(tx *Tx) error {
		var err error
		out, err = tx.closeTurn(id, in.Epoch, in.Status, "", in.Closer, in.MayWriteScope)
		if err != nil {
			return err
		}
		return tx.KeepAnswer(false, out)
	})
	return out, err
}

// kuradIdentity is who kurad's own writes are by (timeouts, upgrades).
const kuradIdentity = "sys:kurad"

// closeTurn seals turn id as status. by writes the extracted nodes; when
// it may not write the session's scope (mayExtract false) nothing is
// extracted, and the answer's extraction_skipped names what was left.
func (tx *Tx) closeTurn(id string, epoch *int64, status, why string, by kura.Writer, mayExtract bool) (*kura.Turn, error) {
	t, s, err := tx.openTurnForWrite(id, epoch, by)
	if err != nil {
		return nil, err
	}
	output := t.OutputRecordIDs
	types, err := tx.outputTypes(id)
	if err != nil {
		return nil, err
	}
	hasDeliverable := types[kura.RecordTaskDeliverable] > 0
	var extract [][2]string
	if types[kura.RecordMemoryFact]+types[kura.RecordMemoryDecision] > 0 {
		rows, err := tx.Query(qOutputExtract, id)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var rid, typ string
			if err := rows.Scan(&rid, &typ); err != nil {
				rows.Close()
				return nil, err
			}
			kind, _ := kura.ExtractedKind(typ) // qOutputExtract selects only these types
			extract = append(extract, [2]string{rid, kind})
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	if !hasDeliverable {
		if why == "" {
			why = "closed without a deliverable"
		}
		content, _ := json.Marshal(map[string]string{"status": status, "turn_id": id, "reason": why})
		p, err := tx.db.PrepareRecord(&kura.RecordInput{Type: kura.RecordTaskDeliverable, Content: content, AuthorID: kuradIdentity}, "")
		if err != nil {
			return nil, err
		}
		p.Project = s.Project
		r, err := tx.InsertRecord(p)
		if err != nil {
			return nil, err
		}
		if _, err := tx.Exec(qInsertOutput, id, len(output), r.ID); err != nil {
			return nil, err
		}
		output = append(output, r.ID)
	}
	l, err := tx.InsertLedger(&kura.LedgerInput{Label: fmt.Sprintf("%s-turn-%d-out", s.Name, t.Number), ParentIDs: []string{t.ContextLedgerID}, RecordIDs: output}, s.Project)
	if err != nil {
		return nil, err
	}
	headHash, err := tx.moveHead(s.ID, s.Project, s.HeadLedgerID, l.ID, "turn "+id+" "+status)
	if err != nil {
		return nil, err
	}
	now := tx.NowString()
	if _, err := tx.Exec("UPDATE turns SET state = ?, output_ledger_id = ?, closed_at = ?, lease_expires_at = NULL WHERE id = ?", status, l.ID, now, id); err != nil {
		return nil, err
	}
	var skipped *kura.ExtractionSkipped
	if !mayExtract && len(extract) > 0 {
		skipped = &kura.ExtractionSkipped{Scope: s.Scope, Records: make([]string, len(extract)),
			Reason: by.Identity + " may not write scope " + s.Scope + ": its close extracts no memory"}
		for i, e := range extract {
			skipped.Records[i] = e[0]
		}
		extract = nil
	}
	extracted, err := tx.extractTurnMemory(id, s.Scope, extract, by.Identity)
	if err != nil {
		return nil, err
	}
	// status tells a subscriber how the turn ended (complete, failed or
	// timeout) without fetching it: a failure is what a watcher acts on.
	if err := tx.AddEvent(kura.EventTurnComplete, s.Project, map[string]string{"turn_id": id, "session_id": s.ID, "output_ledger_id": l.ID,
		"head_hash": headHash, "status": status}, headHash); err != nil {
		return nil, err
	}
	t, err = tx.turn(id)
	if err != nil {
		return nil, err
	}
	t.HeadHash = &headHash
	t.Extracted = extracted
	t.ExtractionSkipped = skipped
	return t, nil
}

// CloseExpiredTurns closes every open turn past its deadline as timeout.
// It returns how many it closed.
func (db *DB) CloseExpiredTurns(ctx context.Context) (int, error) {
	now := kura.FormatTime(db.now())
	rows, err := db.rdb.QueryContext(ctx, "SELECT id FROM turns WHERE state = ? AND deadline_at <= ? ORDER BY deadline_at LIMIT 100", kura.TurnOpen, now)
	if err != nil {
		return 0, mapErr(err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, mapErr(err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	closed := 0
	for _, id := range ids {
		// A timeout is a write like any other: held with them.
		err := db.write(ctx, nil, func(tx *Tx) error {
			t, err := tx.turn(id)
			if err != nil {
				return err
			}
			if t.State != kura.TurnOpen || t.DeadlineAt > tx.NowString() {
				return nil // closed or extended meanwhile
			}
			e := t.Epoch
			// Every memory record of the output was appended by a writer
			// of the scope (the API refuses others), so kurad extracts.
			_, err = tx.closeTurn(id, &e, kura.TurnTimeout, "deadline "+t.DeadlineAt+" passed", kura.Writer{Identity: kuradIdentity, Admin: true}, true)
			return err
		})
		if err != nil {
			return closed, err
		}
		closed++
	}
	return closed, nil
}

// turnMemory compiles a session's scope for a turn and prepares its use_now
// items as records for the context ledger: memory.decision for decisions,
// memory.fact for everything else, written by kurad itself. The bundle is
// the receipt tying what the agent saw to the turn it acts in.
func (db *DB) turnMemory(ctx context.Context, sessionID string, m *kura.MemoryRequest) (*admission.Bundle, []*PreparedRecord, error) {
	s, err := db.GetSession(ctx, sessionID)
	if err != nil {
		return nil, nil, err
	}
	req := &admission.Request{Query: m.Query, BudgetBytes: m.BudgetBytes, MaxPerBucket: m.MaxPerBucket, MaxTrace: m.MaxTrace}
	if err := req.Check("memory."); err != nil {
		return nil, nil, err
	}
	b, err := db.compile(ctx, s.Scope, req)
	if err != nil {
		return nil, nil, err
	}
	b.BundleID = uuid.Must(uuid.NewV7()).String()
	var recs []*PreparedRecord
	for _, it := range b.Buckets.UseNow {
		typ := kura.RecordMemoryFact
		if strings.HasPrefix(it.Ref, "decision:") {
			typ = kura.RecordMemoryDecision
		}
		content, err := json.Marshal(it)
		if err != nil {
			return nil, nil, err
		}
		// The scope marks the record as memory of that scope: readers who
		// do not hold it get it withheld (docs/security.md).
		p, err := db.PrepareRecord(&kura.RecordInput{Type: typ, Content: content, AuthorID: kuradIdentity,
			Metadata: map[string]string{"bundle_id": b.BundleID, kura.PackedScopeKey: s.Scope}}, "memory.")
		if err != nil {
			return nil, nil, err
		}
		recs = append(recs, p)
	}
	return b, recs, nil
}
