package store

import (
	"context"
	"crypto/ed25519"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/kurahash"
)

// MaxImportItems bounds one import request.
const MaxImportItems = 20000

// Import loads exported records, ledgers and sessions with their original
// ids and times, in one transaction. Every hash is recomputed from the
// given fields and must match: an import reproduces the exporter's hashes
// or writes nothing. Ledgers are signed with this kurad's key; things
// already present with the same hash are skipped.
//
// Records authored sys: are kurad's own (a deliverable written at turn
// close, memory packed into a context ledger), for every caller: one is
// imported only when a ledger of the same import holds it and that ledger's
// exported signature verifies under this kurad's key or a retired key it
// trusts (Config.RetiredKeys). The signature covers the ledger hash, which
// commits to every record's seal, so it shows this kurad wrote the record,
// its content and its time. Otherwise the import is refused (403, the
// record named) and writes nothing.
func (db *DB) Import(ctx context.Context, in *kura.ImportInput, opts ...kura.WriteOption) (*kura.ImportResult, error) {
	if n := len(in.Records) + len(in.Ledgers) + len(in.Sessions); n == 0 || n > MaxImportItems {
		return nil, kura.Invalid("", "an import holds 1..%d items, got %d", MaxImportItems, n)
	}
	recs := make([]*PreparedRecord, len(in.Records))
	for i := range in.Records {
		p, err := db.checkImportedRecord(&in.Records[i], fmt.Sprintf("records[%d].", i))
		if err != nil {
			return nil, err
		}
		recs[i] = p
	}
	for i := range in.Ledgers {
		l := &in.Ledgers[i]
		f := fmt.Sprintf("ledgers[%d].", i)
		if !kura.ValidID(l.ID) {
			return nil, kura.Invalid(f+"id", "%q is not a lowercase UUID", l.ID)
		}
		if err := checkTime(l.CreatedAt, f+"created_at"); err != nil {
			return nil, err
		}
		li := kura.LedgerInput{Label: l.Label, ParentIDs: l.ParentIDs, RecordIDs: l.RecordIDs}
		if err := li.Validate(); err != nil {
			return nil, err
		}
	}
	for i := range in.Sessions {
		s := &in.Sessions[i]
		f := fmt.Sprintf("sessions[%d].", i)
		si := kura.SessionInput{Project: s.Project, Name: s.Name, Scope: s.Scope}
		if err := si.Validate(); err != nil || !kura.ValidID(s.ID) || s.Scope == "" {
			return nil, kura.Invalid(f+"id", "sessions[%d] needs an id, project, name and scope", i)
		}
		if s.HeadLedgerID != nil && !kura.ValidID(*s.HeadLedgerID) {
			return nil, kura.Invalid(f+"head_ledger_id", "%q is not a lowercase UUID", *s.HeadLedgerID)
		}
	}
	vouchers, err := db.sysVouchers(in)
	if err != nil {
		return nil, err
	}
	out := &kura.ImportResult{}
	err = db.write(ctx, opts, func(tx *Tx) error {
		*out = kura.ImportResult{}
		var newSys []int // sys: records this import writes
		for i, p := range recs {
			r := &in.Records[i]
			var hash string
			err := tx.QueryRow("SELECT hash FROM records WHERE id = ?", r.ID).Scan(&hash)
			if err == nil {
				if hash != r.Hash {
					return kura.Errorf(kura.EConflict, "record %s exists with another hash", r.ID)
				}
				out.Skipped++
				continue
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			var content any = string(p.Content)
			redacted := 0
			if r.Redacted {
				content, redacted = nil, 1
			}
			res, err := tx.Exec("INSERT INTO records(id, hash, content_hash, seal, type, content, author_id, metadata, created_at, redacted) VALUES(?,?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING",
				r.ID, r.Hash, r.ContentHash, r.Seal, r.Type, content, r.AuthorID, string(p.MetadataJSON), r.CreatedAt, redacted)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return kura.Errorf(kura.EConflict, "record %s: a record with the same hash exists under another id", r.ID)
			}
			if err := tx.AddEvent(kura.EventRecordWritten, p.Project, map[string]string{"record_id": r.ID}, r.Seal); err != nil {
				return err
			}
			if isSysAuthor(r.AuthorID) {
				newSys = append(newSys, i)
			}
			out.Records++
		}
		for i := range in.Ledgers {
			done, err := tx.importLedger(&in.Ledgers[i], fmt.Sprintf("ledgers[%d].", i))
			if err != nil {
				return err
			}
			if done {
				out.Ledgers++
			} else {
				out.Skipped++
			}
		}
		// Checked against what the ledgers hold now, not against the
		// record ids sent: a ledger already here is skipped by its hash,
		// and the ids sent with it prove nothing.
		for _, i := range newSys {
			if err := tx.checkVouched(&in.Records[i], i, vouchers[in.Records[i].ID]); err != nil {
				return err
			}
		}
		for i := range in.Sessions {
			done, err := tx.importSession(&in.Sessions[i])
			if err != nil {
				return err
			}
			if done {
				out.Sessions++
			} else {
				out.Skipped++
			}
		}
		return tx.KeepAnswer(false, out)
	})
	return out, err
}

// isSysAuthor tells kurad's own identities.
func isSysAuthor(author string) bool { return strings.HasPrefix(author, "sys:") }

// sysVouchers maps each sys: record of the import to the ledgers of the
// import that list it and carry a signature verifying under this kurad's
// key or a retired one. A sys: record no such ledger lists is refused here,
// before anything is written; the transaction then checks that the
// ledgers really hold it (checkVouched).
func (db *DB) sysVouchers(in *kura.ImportInput) (map[string][]string, error) {
	var sys map[string][]string
	for i := range in.Records {
		if isSysAuthor(in.Records[i].AuthorID) {
			if sys == nil {
				sys = map[string][]string{}
			}
			sys[in.Records[i].ID] = nil
		}
	}
	if sys == nil {
		return nil, nil
	}
	for i := range in.Ledgers {
		l := &in.Ledgers[i]
		listed := false
		for _, rid := range l.RecordIDs {
			if _, ok := sys[rid]; ok {
				listed = true
				break
			}
		}
		if !listed || !db.signedByUs(l.Hash, l.Signature) {
			continue
		}
		for _, rid := range l.RecordIDs {
			if v, ok := sys[rid]; ok && !slices.Contains(v, l.ID) {
				sys[rid] = append(v, l.ID)
			}
		}
	}
	for i := range in.Records {
		r := &in.Records[i]
		if isSysAuthor(r.AuthorID) && len(sys[r.ID]) == 0 {
			return nil, errUnvouched(r, i)
		}
	}
	return sys, nil
}

// signedByUs reports whether sig (hex) is a ledger signature over hash by
// this kurad's key or one of its retired keys.
func (db *DB) signedByUs(hash, sig string) bool {
	b, err := hex.DecodeString(sig)
	if err != nil || len(b) != ed25519.SignatureSize {
		return false
	}
	msg := kurahash.LedgerSigningMessage(hash)
	if ed25519.Verify(db.pub, msg, b) {
		return true
	}
	for _, k := range db.cfg.RetiredKeys {
		if ed25519.Verify(k, msg, b) {
			return true
		}
	}
	return false
}

// checkVouched makes sure one of ledgers (signed by this kurad, verified
// by its hash in this transaction) holds record r.
func (tx *Tx) checkVouched(r *kura.Record, i int, ledgers []string) error {
	for _, lid := range ledgers {
		var one int
		err := tx.QueryRow("SELECT 1 FROM ledger_records WHERE ledger_id = ? AND record_id = ? LIMIT 1", lid, r.ID).Scan(&one)
		if err == nil {
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
	}
	return errUnvouched(r, i)
}

func errUnvouched(r *kura.Record, i int) error {
	return kura.Errorf(kura.EDenied, "records[%d]: record %s is authored %s; sys: records are kurad's own and are imported only inside a ledger of the same import that this kurad signed (its key, or a retired key it trusts)", i, r.ID, r.AuthorID).
		WithDetail("field", fmt.Sprintf("records[%d].author_id", i)).WithDetail("record_id", r.ID)
}

func checkTime(s, field string) error {
	t, err := kura.ParseTime(s)
	if err != nil || kura.FormatTime(t) != s {
		return kura.Invalid(field, "%q is not a time in the form 2026-11-21T09:00:00.000000000Z", s)
	}
	return nil
}

// checkImportedRecord recomputes an exported record's hashes.
func (db *DB) checkImportedRecord(r *kura.Record, f string) (*PreparedRecord, error) {
	if !kura.ValidID(r.ID) {
		return nil, kura.Invalid(f+"id", "%q is not a lowercase UUID", r.ID)
	}
	if err := checkTime(r.CreatedAt, f+"created_at"); err != nil {
		return nil, err
	}
	in := kura.RecordInput{Type: r.Type, Content: r.Content, AuthorID: r.AuthorID, Metadata: r.Meta()}
	var p *PreparedRecord
	if r.Redacted {
		// No content is left to check (a redacted tool.call has no
		// tool_name): the envelope is, and the hashes follow from the
		// content_hash the record kept.
		if err := in.ValidateEnvelope(db.cfg.Vocabulary, f); err != nil {
			return nil, err
		}
		if !kura.ValidHash(r.ContentHash) {
			return nil, kura.Invalid(f+"content_hash", "record %s: content_hash %q is not a lowercase hex SHA-256", r.ID, r.ContentHash)
		}
		p = &PreparedRecord{Type: r.Type, ContentHash: r.ContentHash, Hash: kurahash.RecordHash(r.Type, r.ContentHash, r.AuthorID),
			AuthorID: r.AuthorID, Metadata: in.Metadata, MetadataJSON: kurahash.MetadataJSON(in.Metadata), Project: db.cfg.DefaultProject}
		p.MetadataHash = kurahash.SumHex(p.MetadataJSON)
		if pid := in.Metadata["project_id"]; kura.ValidSlug(pid) {
			p.Project = pid
		}
	} else {
		var err error
		if p, err = db.PrepareRecord(&in, f); err != nil {
			return nil, err
		}
	}
	mismatch := func(field, stored, computed string) error {
		return kura.Invalid(f+field, "record %s: %s %s does not match the recomputed %s", r.ID, field, stored, computed)
	}
	if p.ContentHash != r.ContentHash {
		return nil, mismatch("content_hash", r.ContentHash, p.ContentHash)
	}
	if p.Hash != r.Hash {
		return nil, mismatch("hash", r.Hash, p.Hash)
	}
	if seal := kurahash.SealWithMetadataHash(p.Hash, p.MetadataHash, r.CreatedAt); seal != r.Seal {
		return nil, mismatch("seal", r.Seal, seal)
	}
	return p, nil
}

func (tx *Tx) importLedger(l *kura.Ledger, f string) (bool, error) {
	var hash string
	err := tx.QueryRow(qLedgerHash, l.ID).Scan(&hash)
	if err == nil {
		if hash != l.Hash {
			return false, kura.Errorf(kura.EConflict, "ledger %s exists with another hash", l.ID)
		}
		return false, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return false, err
	}
	var missing []string
	parentHashes := make([]string, len(l.ParentIDs))
	for i, pid := range l.ParentIDs {
		if err := tx.QueryRow(qLedgerHash, pid).Scan(&parentHashes[i]); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				missing = append(missing, pid)
				continue
			}
			return false, err
		}
	}
	leaves := make([][32]byte, len(l.RecordIDs))
	seals := make([]string, len(l.RecordIDs))
	for i, rid := range l.RecordIDs {
		if err := tx.QueryRow(qRecordSeal, rid).Scan(&seals[i]); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				missing = append(missing, rid)
				continue
			}
			return false, err
		}
		leaves[i], _ = kurahash.DecodeHash(seals[i])
	}
	if len(missing) > 0 {
		return false, kura.Errorf(kura.EInvalid, "ledger %s refers to %d ledger(s) or record(s) not imported yet", l.ID, len(missing)).WithDetail("missing", missing)
	}
	root := kurahash.MerkleRoot(leaves)
	if got := hex.EncodeToString(root[:]); got != l.RootHash {
		return false, kura.Invalid(f+"root_hash", "ledger %s: root_hash %s does not match the recomputed %s", l.ID, l.RootHash, got)
	}
	if got := kurahash.LedgerHash(l.RootHash, parentHashes, l.Label, l.CreatedAt); got != l.Hash {
		return false, kura.Invalid(f+"hash", "ledger %s: hash %s does not match the recomputed %s", l.ID, l.Hash, got)
	}
	sig := hex.EncodeToString(ed25519.Sign(tx.db.signer, kurahash.LedgerSigningMessage(l.Hash)))
	if _, err := tx.Exec(qInsertLedger, l.ID, l.Hash, l.RootHash, l.Label, len(l.RecordIDs), l.CreatedAt, sig); err != nil {
		return false, err
	}
	for i, pid := range l.ParentIDs {
		if _, err := tx.Exec(qInsertParent, l.ID, i, pid); err != nil {
			return false, err
		}
	}
	for i, rid := range l.RecordIDs {
		if _, err := tx.Exec(qInsertLedgerRecord, l.ID, i, rid, seals[i]); err != nil {
			return false, err
		}
	}
	return true, tx.AddEvent(kura.EventLedgerWritten, tx.db.cfg.DefaultProject, map[string]string{"ledger_id": l.ID}, l.Hash)
}

func (tx *Tx) importSession(s *kura.Session) (bool, error) {
	var exists string
	err := tx.QueryRow("SELECT id FROM sessions WHERE id = ? OR (project = ? AND name = ?)", s.ID, s.Project, s.Name).Scan(&exists)
	if err == nil {
		if exists == s.ID {
			return false, nil
		}
		return false, kura.Errorf(kura.EConflict, "session %s/%s exists with another id", s.Project, s.Name)
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return false, err
	}
	now := tx.NowString()
	if _, err := tx.Exec("INSERT INTO sessions(id, project, name, scope, created_at, updated_at) VALUES(?,?,?,?,?,?)", s.ID, s.Project, s.Name, s.Scope, s.CreatedAt, now); err != nil {
		return false, err
	}
	if err := tx.AddEvent(kura.EventSessionCreated, s.Project, map[string]string{"session_id": s.ID}, objectDigest(s)); err != nil {
		return false, err
	}
	if s.HeadLedgerID != nil {
		hash, err := tx.moveHead(s.ID, s.Project, nil, *s.HeadLedgerID, "imported")
		if err != nil {
			return false, err
		}
		if s.HeadHash != nil && *s.HeadHash != hash {
			return false, kura.Invalid("head_hash", "session %s: head_hash %s is not the hash of ledger %s", s.ID, *s.HeadHash, *s.HeadLedgerID)
		}
	}
	return true, nil
}
