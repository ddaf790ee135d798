package store

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/google/uuid"
	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/kurahash"
)

// CreateLedger stores a ledger over existing records and parents.
func (db *DB) CreateLedger(ctx context.Context, in *kura.LedgerInput, opts ...kura.WriteOption) (*kura.Ledger, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	var out *kura.Ledger
	err := db.write(ctx, opts, func(tx *Tx) error {
		var err error
		if out, err = tx.InsertLedger(in, db.cfg.DefaultProject); err != nil {
			return err
		}
		return tx.KeepAnswer(true, out)
	})
	return out, err
}

const (
	qLedgerHash         = "SELECT hash FROM ledgers WHERE id = ?"
	qRecordSeal         = "SELECT seal FROM records WHERE id = ?"
	qInsertLedger       = "INSERT INTO ledgers(id, hash, root_hash, label, record_count, created_at, signature) VALUES(?,?,?,?,?,?,?)"
	qInsertParent       = "INSERT INTO ledger_parents(ledger_id, pos, parent_id) VALUES(?,?,?)"
	qInsertLedgerRecord = "INSERT INTO ledger_records(ledger_id, pos, record_id, leaf) VALUES(?,?,?,?)"
)

// InsertLedger writes a ledger in tx: it looks up every record seal and
// parent hash (400 naming the missing ones), computes the Merkle root and
// ledger hash, signs the hash and appends a ledger.written event.
func (tx *Tx) InsertLedger(in *kura.LedgerInput, project string) (*kura.Ledger, error) {
	var missingRecords, missingParents []string
	parentHashes := make([]string, len(in.ParentIDs))
	for i, pid := range in.ParentIDs {
		if err := tx.QueryRow(qLedgerHash, pid).Scan(&parentHashes[i]); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				missingParents = append(missingParents, pid)
				continue
			}
			return nil, err
		}
	}
	leaves := make([][32]byte, len(in.RecordIDs))
	seals := make([]string, len(in.RecordIDs))
	seen := make(map[string]int, len(in.RecordIDs))
	for i, rid := range in.RecordIDs {
		if j, ok := seen[rid]; ok { // a record may appear more than once
			seals[i], leaves[i] = seals[j], leaves[j]
			continue
		}
		seen[rid] = i
		if err := tx.QueryRow(qRecordSeal, rid).Scan(&seals[i]); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				missingRecords = append(missingRecords, rid)
				continue
			}
			return nil, err
		}
		b, err := kurahash.DecodeHash(seals[i])
		if err != nil {
			return nil, err
		}
		leaves[i] = b
	}
	if len(missingRecords)+len(missingParents) > 0 {
		e := kura.Errorf(kura.EInvalid, "%d record(s) and %d parent ledger(s) do not exist", len(missingRecords), len(missingParents))
		missing := append(append([]string{}, missingRecords...), missingParents...)
		e.Details = map[string]any{"missing": missing, "missing_records": nonNil(missingRecords), "missing_parents": nonNil(missingParents)}
		return nil, e
	}
	root := kurahash.MerkleRoot(leaves)
	l := &kura.Ledger{
		ID:           uuid.Must(uuid.NewV7()).String(),
		RootHash:     hex.EncodeToString(root[:]),
		Label:        in.Label,
		ParentIDs:    nonNil(in.ParentIDs),
		ParentHashes: nonNil(parentHashes),
		RecordIDs:    nonNil(in.RecordIDs),
		RecordCount:  len(in.RecordIDs),
		CreatedAt:    tx.NowString(),
	}
	l.Hash = kurahash.LedgerHash(l.RootHash, parentHashes, l.Label, l.CreatedAt)
	l.Signature = hex.EncodeToString(ed25519.Sign(tx.db.signer, kurahash.LedgerSigningMessage(l.Hash)))
	if _, err := tx.Exec(qInsertLedger,
		l.ID, l.Hash, l.RootHash, l.Label, l.RecordCount, l.CreatedAt, l.Signature); err != nil {
		return nil, err
	}
	for i, pid := range in.ParentIDs {
		if _, err := tx.Exec(qInsertParent, l.ID, i, pid); err != nil {
			return nil, err
		}
	}
	for i, rid := range in.RecordIDs {
		if _, err := tx.Exec(qInsertLedgerRecord, l.ID, i, rid, seals[i]); err != nil {
			return nil, err
		}
	}
	if err := tx.AddEvent(kura.EventLedgerWritten, project, map[string]string{"ledger_id": l.ID}, l.Hash); err != nil {
		return nil, err
	}
	return l, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// GetLedger reads a ledger with its parents and (when withRecords) its
// record ids in order.
func (db *DB) GetLedger(ctx context.Context, id string, withRecords bool) (*kura.Ledger, error) {
	if !kura.ValidID(id) {
		return nil, kura.Invalid("id", "%q is not a lowercase UUID", id)
	}
	l, err := db.ledgerRow(ctx, id)
	if err != nil {
		return nil, err
	}
	if withRecords {
		rows, err := db.rdb.QueryContext(ctx, "SELECT record_id FROM ledger_records WHERE ledger_id = ? ORDER BY pos", id)
		if err != nil {
			return nil, mapErr(err)
		}
		defer rows.Close()
		l.RecordIDs = make([]string, 0, l.RecordCount)
		for rows.Next() {
			var rid string
			if err := rows.Scan(&rid); err != nil {
				return nil, mapErr(err)
			}
			l.RecordIDs = append(l.RecordIDs, rid)
		}
		if err := rows.Err(); err != nil {
			return nil, mapErr(err)
		}
	}
	return l, nil
}

func (db *DB) ledgerRow(ctx context.Context, id string) (*kura.Ledger, error) {
	var l kura.Ledger
	err := db.rdb.QueryRowContext(ctx, "SELECT id, hash, root_hash, label, record_count, created_at, signature FROM ledgers WHERE id = ?", id).
		Scan(&l.ID, &l.Hash, &l.RootHash, &l.Label, &l.RecordCount, &l.CreatedAt, &l.Signature)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, kura.Errorf(kura.ENotFound, "ledger %s not found", id)
	}
	if err != nil {
		return nil, mapErr(err)
	}
	// A parent that is gone (only a damaged database lacks one) has hash "":
	// verification then names it.
	rows, err := db.rdb.QueryContext(ctx, "SELECT lp.parent_id, coalesce(p.hash, '') FROM ledger_parents lp LEFT JOIN ledgers p ON p.id = lp.parent_id WHERE lp.ledger_id = ? ORDER BY lp.pos", id)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	l.ParentIDs, l.ParentHashes = []string{}, []string{}
	for rows.Next() {
		var p, h string
		if err := rows.Scan(&p, &h); err != nil {
			return nil, mapErr(err)
		}
		l.ParentIDs = append(l.ParentIDs, p)
		l.ParentHashes = append(l.ParentHashes, h)
	}
	return &l, mapErr(rows.Err())
}

// recordJSONSQL has SQLite assemble a record's JSON in one column, the
// same bytes kura.Record.AppendJSON writes (a test holds the two together).
// Hydrating thousands of records is then one column fetch per row instead
// of eleven; content and metadata are stored as canonical JSON and copied
// as they are. concat joins the pieces
// in one pass, where a chain of || copies the growing prefix at each step.
// isWithheld is an SQL condition on r: a record it holds for is written
// withheld, with content null.
//
// The strings are put between quotes as they are, not through
// json_quote: every record a page writes out is first checked
// (recordChecker.verifies), which passes only strings without a quote, a
// backslash or a control character, the values kurad wrote; any other is
// read again and written by kura.Record.AppendJSON. Quoting six strings a
// record cost about as much as checking its hashes does.
func recordJSONSQL(isWithheld string) string {
	return `concat('{"id":"', r.id, '","hash":"', r.hash,
 '","content_hash":"', r.content_hash, '","seal":"', r.seal,
 '","type":"', r.type, '","content":', CASE WHEN ` + isWithheld + ` THEN 'null' ELSE coalesce(r.content, 'null') END,
 ',"author_id":"', r.author_id, '","metadata":', r.metadata,
 ',"created_at":"', r.created_at, '"',
 CASE WHEN r.redacted <> 0 THEN ',"redacted":true' ELSE '' END,
 CASE WHEN ` + isWithheld + ` THEN ',"withheld":true}' ELSE '}' END)`
}

// The hydrate queries: ?1 ledger, ?2 and ?3 the positions, ?4 the scopes
// the reader holds (the scoped query only). Each row is a position and a
// record's JSON.
var (
	qHydrate       = hydrateSQL("1 = 0")
	qHydrateScoped = hydrateSQL(withheld("?4"))
)

// With each record's JSON come the byte lengths of the content and
// metadata it holds, so that checking its hashes (recordChecker.verifies)
// finds them in the JSON without scanning the content for its end.
func hydrateSQL(isWithheld string) string {
	return "SELECT lr.pos, " + recordJSONSQL(isWithheld) + ", CASE WHEN " + isWithheld + " THEN 4 ELSE coalesce(octet_length(r.content), 4) END, octet_length(r.metadata)" +
		" FROM ledger_records lr JOIN records r ON r.id = lr.record_id WHERE lr.ledger_id = ?1 AND lr.pos BETWEEN ?2 AND ?3 ORDER BY lr.pos"
}

// HydrateLedger writes a page of a ledger's records in order, after
// position after (-1 for the start), to w as JSON objects joined by commas.
// scopes are the scopes the reader holds (nil: all): memory kurad packed
// from any other scope is written withheld, its content null.
// Before writing anything it calls start with the position to continue
// after (-1 on the last page), so the caller can answer an unknown ledger
// with an error and otherwise open its answer.
//
// Positions are dense (0..record_count-1; verify reports gaps), so a page
// is the window of positions after+1 .. after+limit. A large window is
// read as two halves on two read connections at once, and the first half
// is written piece by piece as it is read: hydrate is Kura's bulk read, one
// SQLite query only uses one core, and the client can read while kurad
// works. No read transaction stays open while a piece is written
// (hydrateRange), so a slow client holds no snapshot.
func (db *DB) HydrateLedger(ctx context.Context, id string, after, limit int, scopes []string, w io.Writer, start func(next int) error) error {
	l, err := db.ledgerRow(ctx, id)
	if err != nil {
		return err
	}
	lo, hi := after+1, after+limit // inclusive window
	if hi > l.RecordCount-1 {
		hi = l.RecordCount - 1
	}
	next := -1
	if hi < l.RecordCount-1 {
		next = hi
	}
	if err := start(next); err != nil {
		return err
	}
	if lo > hi {
		return nil
	}
	if hi-lo+1 < 256 || db.cfg.ReadPool < 2 {
		_, err := db.hydrateRange(ctx, id, lo, hi, scopes, w, 0)
		return err
	}
	mid := lo + (hi-lo+1)/2
	var second bytes.Buffer
	var err2 error
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err2 = db.hydrateRange(ctx, id, mid, hi, scopes, &second, math.MaxInt)
	}()
	n, err := db.hydrateRange(ctx, id, lo, mid-1, scopes, w, 0)
	<-done
	if err != nil {
		return err
	}
	if err2 != nil {
		return err2
	}
	if n > 0 && second.Len() > 0 {
		if _, err := w.Write([]byte{','}); err != nil {
			return err
		}
	}
	_, err = w.Write(second.Bytes())
	return err
}

// LedgerRecords is HydrateLedger decoded, for Go callers.
func (db *DB) LedgerRecords(ctx context.Context, id string, after, limit int) ([]kura.Record, int, error) {
	var buf bytes.Buffer
	next := -1
	buf.WriteByte('[')
	if err := db.HydrateLedger(ctx, id, after, limit, nil, &buf, func(n int) error { next = n; return nil }); err != nil {
		return nil, -1, err
	}
	buf.WriteByte(']')
	var out []kura.Record
	if err := json.Unmarshal(buf.Bytes(), &out); err != nil {
		return nil, -1, fmt.Errorf("decode stored records: %w", err)
	}
	return out, next, nil
}

// hydrateRange writes the records at positions lo..hi to w, joined by
// commas, in pieces of about flushAt bytes (everything at the end when
// flushAt is huge). Rows are scanned through a reused RawBytes, so a row
// costs no allocation of ours. It returns how many records it wrote.
//
// Each piece is read on a snapshot of its own, and the query is closed
// before the piece is written: w is often a client's connection, and a
// client that stops reading would otherwise hold a read transaction open
// for as long as it likes, keeping the WAL from being checkpointed and
// truncated (redacted content would stay in it, and the WAL would grow).
// Records never change but for redaction, so a page read in pieces is the
// page read at once, with a record redacted meanwhile shown redacted.
func (db *DB) hydrateRange(ctx context.Context, id string, lo, hi int, scopes []string, w io.Writer, flushAt int) (int, error) {
	if flushAt <= 0 {
		flushAt = 64 << 10
	}
	buf := make([]byte, 0, min(flushAt, (hi-lo+1)*512)+1024)
	n := 0
	for pos := lo; pos <= hi; {
		var err error
		var read int
		buf, read, pos, err = db.hydrateChunk(ctx, id, pos, hi, scopes, buf, n, flushAt)
		if err != nil {
			return n, err
		}
		if read == 0 {
			break // positions are dense; verify reports a ledger that is not
		}
		n += read
		if _, err := w.Write(buf); err != nil {
			return n, err
		}
		buf = buf[:0]
	}
	return n, nil
}

// hydrateChunk appends the records from position pos on (up to hi) to buf
// until it holds flushAt bytes, on one read transaction that ends before
// it returns. before is how many records were written already (a comma
// goes before each but the first). It returns the buffer, how many records
// it appended and the position to go on from.
func (db *DB) hydrateChunk(ctx context.Context, id string, pos, hi int, scopes []string, buf []byte, before, flushAt int) ([]byte, int, int, error) {
	q, args := qHydrate, []any{id, pos, hi}
	if scopes != nil {
		q, args = qHydrateScoped, append(args, projectsJSON(scopes))
	}
	rows, err := db.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return buf, 0, pos, mapErr(err)
	}
	defer rows.Close()
	read := 0
	var at, contentLen, mdLen int
	var js sql.RawBytes
	var ck recordChecker
	recheck := -1
	for len(buf) < flushAt && rows.Next() {
		if err := rows.Scan(&at, &js, &contentLen, &mdLen); err != nil {
			return buf, read, pos, mapErr(err)
		}
		if !ck.verifies(js, contentLen, mdLen) {
			// Read on its own once this query is closed: a page never
			// holds two read connections.
			recheck = at
			break
		}
		if before+read > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, js...)
		read++
		pos = at + 1
	}
	if err := rows.Err(); err != nil {
		return buf, read, pos, mapErr(err)
	}
	rows.Close()
	if recheck >= 0 {
		r, err := db.ledgerRecordAt(ctx, id, recheck, scopes)
		if err != nil {
			return buf, read, pos, err
		}
		if before+read > 0 {
			buf = append(buf, ',')
		}
		buf = r.AppendJSON(buf)
		read++
		pos = recheck + 1
	}
	return buf, read, pos, nil
}

// ledgerRecordAt reads the record at position pos of a ledger as a page
// serves it (withheld from a reader without its packed scope), with its
// stored hashes checked (scanRecord).
func (db *DB) ledgerRecordAt(ctx context.Context, ledgerID string, pos int, scopes []string) (*kura.Record, error) {
	isWithheld := "1 = 0"
	args := []any{ledgerID, pos}
	if scopes != nil {
		isWithheld, args = withheld("?3"), append(args, projectsJSON(scopes))
	}
	var r kura.Record
	var content, md []byte
	var redacted int
	err := db.rdb.QueryRowContext(ctx, "SELECT r.id, r.hash, r.content_hash, r.seal, r.type, r.content, r.author_id, r.metadata, r.created_at, r.redacted, "+
		isWithheld+" FROM ledger_records lr JOIN records r ON r.id = lr.record_id WHERE lr.ledger_id = ?1 AND lr.pos = ?2", args...).
		Scan(&r.ID, &r.Hash, &r.ContentHash, &r.Seal, &r.Type, &content, &r.AuthorID, &md, &r.CreatedAt, &redacted, &r.Withheld)
	if err != nil {
		return nil, mapErr(err)
	}
	if err := fillRecord(&r, content, md, redacted); err != nil {
		return nil, err
	}
	checkRecord(&r, content, r.MetadataJSON)
	if r.Withheld {
		r.Content = []byte("null")
	}
	return &r, nil
}

// VerifyLedger recomputes every record's content hash, hash and seal from
// its stored content, metadata and time, then the Merkle root, the ledger
// hash and the signature, and names everything that does not match.
func (db *DB) VerifyLedger(ctx context.Context, id string) (*kura.Verification, error) {
	if !kura.ValidID(id) {
		return nil, kura.Invalid("id", "%q is not a lowercase UUID", id)
	}
	l, err := db.ledgerRow(ctx, id)
	if err != nil {
		return nil, err
	}
	v := &kura.Verification{LedgerID: id, Hash: l.Hash, RootHash: l.RootHash, Mismatches: []kura.Mismatch{}}
	// Parent hashes in order; a parent that vanished is itself a finding.
	parentHashes := make([]string, 0, len(l.ParentIDs))
	for _, pid := range l.ParentIDs {
		var h string
		err := db.rdb.QueryRowContext(ctx, "SELECT hash FROM ledgers WHERE id = ?", pid).Scan(&h)
		if errors.Is(err, sql.ErrNoRows) {
			v.Mismatches = append(v.Mismatches, kura.Mismatch{Field: "parent", Stored: pid, Computed: "missing"})
			continue
		}
		if err != nil {
			return nil, mapErr(err)
		}
		parentHashes = append(parentHashes, h)
	}
	rows, err := db.rdb.QueryContext(ctx, "SELECT lr.pos, lr.record_id, lr.leaf, r.id, r.hash, r.content_hash, r.seal, r.type, r.content, r.author_id, r.metadata, r.created_at, r.redacted FROM ledger_records lr LEFT JOIN records r ON r.id = lr.record_id WHERE lr.ledger_id = ? ORDER BY lr.pos", id)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	leaves := make([][32]byte, 0, l.RecordCount)
	i := 0
	for rows.Next() {
		var (
			pos                                               int
			recordID, leaf                                    string
			rid, hash, contentHash, seal, typ, author, md, at sql.NullString
			content                                           sql.NullString
			redacted                                          sql.NullInt64
		)
		if err := rows.Scan(&pos, &recordID, &leaf, &rid, &hash, &contentHash, &seal, &typ, &content, &author, &md, &at, &redacted); err != nil {
			return nil, mapErr(err)
		}
		p := i
		mm := func(field, stored, computed string) {
			v.Mismatches = append(v.Mismatches, kura.Mismatch{RecordID: recordID, Position: &p, Field: field, Stored: stored, Computed: computed})
		}
		if pos != i {
			mm("position", itoa(pos), itoa(i))
		}
		i++
		if !rid.Valid {
			mm("record", recordID, "missing")
			leaves = append(leaves, [32]byte{})
			continue
		}
		v.RecordsChecked++
		ch := contentHash.String
		if redacted.Int64 != 0 {
			v.Redacted = append(v.Redacted, recordID)
		} else {
			computed, _, err := kurahash.ContentHash([]byte(content.String))
			if err != nil {
				computed = "invalid content: " + err.Error()
			}
			if computed != contentHash.String {
				mm("content_hash", contentHash.String, computed)
			}
			ch = computed
		}
		h := kurahash.RecordHash(typ.String, ch, author.String)
		if h != hash.String {
			mm("hash", hash.String, h)
		}
		mdc, err := kurahash.Canonical([]byte(md.String))
		if err != nil {
			mdc = []byte(md.String)
		}
		s := kurahash.Seal(h, mdc, at.String)
		if s != seal.String {
			mm("seal", seal.String, s)
		}
		if leaf != s {
			mm("leaf", leaf, s)
		}
		b, _ := kurahash.DecodeHash(s)
		leaves = append(leaves, b)
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(err)
	}
	if len(leaves) != l.RecordCount {
		v.Mismatches = append(v.Mismatches, kura.Mismatch{Field: "record_count", Stored: itoa(l.RecordCount), Computed: itoa(len(leaves))})
	}
	root := kurahash.MerkleRoot(leaves)
	v.ComputedRootHash = hex.EncodeToString(root[:])
	if v.ComputedRootHash != l.RootHash {
		v.Mismatches = append(v.Mismatches, kura.Mismatch{Field: "root_hash", Stored: l.RootHash, Computed: v.ComputedRootHash})
	}
	v.ComputedHash = kurahash.LedgerHash(v.ComputedRootHash, parentHashes, l.Label, l.CreatedAt)
	if v.ComputedHash != l.Hash {
		v.Mismatches = append(v.Mismatches, kura.Mismatch{Field: "ledger_hash", Stored: l.Hash, Computed: v.ComputedHash})
	}
	// A label stored before kurad refused control characters: the hash
	// matches, but proves one reading of several (kurahash), so the
	// ledger is not verified here either, as no client would verify it.
	if field, problem := kurahash.LedgerFramingProblem(parentHashes, l.Label, l.CreatedAt); field != "" {
		stored := map[string]string{"label": l.Label, "created_at": l.CreatedAt, "parent_hashes": strings.Join(parentHashes, ",")}[field]
		v.Mismatches = append(v.Mismatches, kura.Mismatch{Field: field, Stored: stored, Computed: problem})
	}
	sig, err := hex.DecodeString(l.Signature)
	v.SignatureOK = err == nil && ed25519.Verify(db.pub, kurahash.LedgerSigningMessage(l.Hash), sig)
	if !v.SignatureOK {
		v.Mismatches = append(v.Mismatches, kura.Mismatch{Field: "signature", Stored: l.Signature, Computed: "does not verify against " + hex.EncodeToString(db.pub)})
	}
	v.OK = len(v.Mismatches) == 0
	return v, nil
}

func (db *DB) recordIDs(ctx context.Context, id string) ([]string, error) {
	l, err := db.GetLedger(ctx, id, true)
	if err != nil {
		return nil, err
	}
	return l.RecordIDs, nil
}

// Diff compares the record sets of ledgers a and b.
func (db *DB) Diff(ctx context.Context, a, b string) (*kura.Diff, error) {
	ra, err := db.recordIDs(ctx, a)
	if err != nil {
		return nil, err
	}
	rb, err := db.recordIDs(ctx, b)
	if err != nil {
		return nil, err
	}
	inA := make(map[string]bool, len(ra))
	for _, id := range ra {
		inA[id] = true
	}
	inB := make(map[string]bool, len(rb))
	for _, id := range rb {
		inB[id] = true
	}
	d := &kura.Diff{Added: []string{}, Removed: []string{}}
	seen := map[string]bool{}
	for _, id := range rb {
		if !inA[id] && !seen[id] {
			d.Added = append(d.Added, id)
		}
		seen[id] = true
	}
	seen = map[string]bool{}
	for _, id := range ra {
		if seen[id] {
			continue
		}
		seen[id] = true
		if inB[id] {
			d.Common++
		} else {
			d.Removed = append(d.Removed, id)
		}
	}
	return d, nil
}

// Proof returns the inclusion proof of the first occurrence of recordID in
// the ledger, over the seals stored now.
func (db *DB) Proof(ctx context.Context, ledgerID, recordID string) (*kura.Proof, error) {
	if !kura.ValidID(recordID) {
		return nil, kura.Invalid("record_id", "%q is not a lowercase UUID", recordID)
	}
	l, err := db.GetLedger(ctx, ledgerID, false)
	if err != nil {
		return nil, err
	}
	rows, err := db.rdb.QueryContext(ctx, "SELECT lr.record_id, r.seal FROM ledger_records lr JOIN records r ON r.id = lr.record_id WHERE lr.ledger_id = ? ORDER BY lr.pos", ledgerID)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	var leaves [][32]byte
	index := -1
	var seal string
	for rows.Next() {
		var rid, s string
		if err := rows.Scan(&rid, &s); err != nil {
			return nil, mapErr(err)
		}
		if rid == recordID && index < 0 {
			index, seal = len(leaves), s
		}
		b, _ := kurahash.DecodeHash(s)
		leaves = append(leaves, b)
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(err)
	}
	if index < 0 {
		return nil, kura.Errorf(kura.ENotFound, "record %s is not in ledger %s", recordID, ledgerID)
	}
	path, err := kurahash.AuditPath(leaves, index)
	if err != nil {
		return nil, err
	}
	p := &kura.Proof{LedgerID: ledgerID, RecordID: recordID, Seal: seal, LeafIndex: index, TreeSize: len(leaves), RootHash: l.RootHash, AuditPath: make([]string, len(path))}
	for i, h := range path {
		p.AuditPath[i] = hex.EncodeToString(h[:])
	}
	return p, nil
}
