package client

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/kura-memory/kura/kurahash"
)

// The helpers below recompute what kurad hands out with the hash definitions
// of kurahash, so that a caller can check records and ledgers without
// trusting the server (or the disk behind it). Trust comes from a hash or a
// public key the caller already holds: a ledger that verifies proves its
// records only if its Hash is one the caller expected.

// VerificationError lists what a local verification found wrong.
type VerificationError struct {
	// What names what was checked, e.g. "record 0193..." or "ledger 0193...".
	What       string
	Mismatches []Mismatch
}

// Error summarizes the mismatches on one line.
func (e *VerificationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "verify %s: %d mismatch", e.What, len(e.Mismatches))
	if len(e.Mismatches) != 1 {
		b.WriteString("es")
	}
	for i, m := range e.Mismatches {
		if i == 3 {
			fmt.Fprintf(&b, "; and %d more", len(e.Mismatches)-i)
			break
		}
		b.WriteString("; ")
		if m.RecordID != "" {
			b.WriteString("record " + m.RecordID + " ")
		}
		if m.Position != nil {
			fmt.Fprintf(&b, "at %d ", *m.Position)
		}
		fmt.Fprintf(&b, "%s: stored %q, computed %q", m.Field, m.Stored, m.Computed)
	}
	return b.String()
}

// isNullContent reports whether raw is what a redacted or withheld record
// carries.
func isNullContent(raw []byte) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// checkRecord recomputes r's content_hash (unless redacted or withheld), hash and seal
// and returns the seal it computed with the mismatches. Each value is
// computed from the primary data (content, type, author, metadata, time),
// never from the stored value one step below it, so a changed content shows
// up at every level it breaks; where a value cannot be computed (the
// content hash of a record redacted, or withheld from this reader), the
// stored one is carried up.
func checkRecord(r *Record, pos *int) (seal string, ms []Mismatch) {
	add := func(field, stored, computed string) {
		ms = append(ms, Mismatch{RecordID: r.ID, Position: pos, Field: field, Stored: stored, Computed: computed})
	}
	contentHash := r.ContentHash
	if !((r.Redacted || r.Withheld) && isNullContent(r.Content)) {
		ch, _, err := kurahash.ContentHash(r.Content)
		switch {
		case err != nil:
			add("content_hash", r.ContentHash, "none: content is not valid JSON: "+err.Error())
		case ch != r.ContentHash:
			add("content_hash", r.ContentHash, ch)
			contentHash = ch
		}
	}
	hash := kurahash.RecordHash(r.Type, contentHash, r.AuthorID)
	if hash != r.Hash {
		add("hash", r.Hash, hash)
	}
	seal = kurahash.Seal(hash, kurahash.MetadataJSON(r.Metadata), r.CreatedAt)
	if seal != r.Seal {
		add("seal", r.Seal, seal)
	}
	return seal, ms
}

// VerifyRecord recomputes r's content_hash, hash and seal and returns a
// *VerificationError when any differs from what r says. A redacted record
// (Redacted set, content null) keeps only its content_hash, which is then
// taken as given: hash and seal are still checked against it. A withheld
// one (Withheld set, content null: kurad's packed memory of a scope the
// reader does not hold) is checked the same way.
func VerifyRecord(r *Record) error {
	if r == nil {
		return errors.New("verify record: nil record")
	}
	if _, ms := checkRecord(r, nil); len(ms) > 0 {
		return &VerificationError{What: "record " + r.ID, Mismatches: ms}
	}
	return nil
}

// CheckLedgerHashes recomputes a ledger from its records and its parents'
// hashes and answers in the shape of the server's verify: every record (as
// VerifyRecord), the record ids and their order, the Merkle root over the
// recomputed seals and the ledger hash. records must be the ledger's
// records in ledger order (duplicates included); parentHashes the hashes of
// l.ParentIDs, in that order. The signature is not checked here (see
// VerifyLedgerSignature), so SignatureOK is left false. l must not be nil.
func CheckLedgerHashes(l *Ledger, records []Record, parentHashes []string) *Verification {
	v := &Verification{LedgerID: l.ID, Hash: l.Hash, RootHash: l.RootHash, RecordsChecked: len(records), Mismatches: []Mismatch{}}
	add := func(field, stored, computed string) {
		v.Mismatches = append(v.Mismatches, Mismatch{Field: field, Stored: stored, Computed: computed})
	}
	if l.RecordCount != len(records) {
		add("record_count", fmt.Sprint(l.RecordCount), fmt.Sprint(len(records)))
	}
	// RecordIDs is omitted from the JSON of an empty ledger, so only a
	// non-empty list can be compared entry by entry. The ids are not part
	// of any hash: this catches records handed out for the wrong ledger.
	if len(l.RecordIDs) > 0 {
		if len(l.RecordIDs) != len(records) {
			add("record_ids", fmt.Sprintf("%d ids", len(l.RecordIDs)), fmt.Sprintf("%d records", len(records)))
		} else {
			for i := range records {
				if records[i].ID != l.RecordIDs[i] {
					pos := i
					v.Mismatches = append(v.Mismatches, Mismatch{RecordID: records[i].ID, Position: &pos, Field: "record_id", Stored: l.RecordIDs[i], Computed: records[i].ID})
				}
			}
		}
	}
	leaves := make([][32]byte, len(records))
	for i := range records {
		pos := i
		seal, ms := checkRecord(&records[i], &pos)
		v.Mismatches = append(v.Mismatches, ms...)
		leaves[i], _ = kurahash.DecodeHash(seal) // a computed seal is always a digest
		if records[i].Redacted {
			v.Redacted = append(v.Redacted, records[i].ID)
		}
		if records[i].Withheld {
			v.Withheld = append(v.Withheld, records[i].ID)
		}
	}
	root := kurahash.MerkleRoot(leaves)
	v.ComputedRootHash = hex.EncodeToString(root[:])
	if v.ComputedRootHash != l.RootHash {
		add("root_hash", l.RootHash, v.ComputedRootHash)
	}
	if len(parentHashes) != len(l.ParentIDs) {
		add("parent_ids", fmt.Sprintf("%d parents", len(l.ParentIDs)), fmt.Sprintf("%d parent hashes given", len(parentHashes)))
	}
	v.ComputedHash = kurahash.LedgerHash(v.ComputedRootHash, parentHashes, l.Label, l.CreatedAt)
	if v.ComputedHash != l.Hash {
		add("ledger_hash", l.Hash, v.ComputedHash)
	}
	// A hash that matches proves nothing when its fields can be read
	// another way (a newline in the label): not verified, as kurad and
	// the Python and TypeScript clients have it.
	if field, problem := kurahash.LedgerFramingProblem(parentHashes, l.Label, l.CreatedAt); field != "" {
		stored := map[string]string{"label": l.Label, "created_at": l.CreatedAt, "parent_hashes": strings.Join(parentHashes, ",")}[field]
		add(field, stored, problem)
	}
	v.OK = len(v.Mismatches) == 0
	return v
}

// VerifyLedgerHashes is CheckLedgerHashes returning a *VerificationError
// when anything differs, and nil when the ledger is consistent.
func VerifyLedgerHashes(l *Ledger, records []Record, parentHashes []string) error {
	if l == nil {
		return errors.New("verify ledger: nil ledger")
	}
	if v := CheckLedgerHashes(l, records, parentHashes); !v.OK {
		return &VerificationError{What: "ledger " + l.ID, Mismatches: v.Mismatches}
	}
	return nil
}

// VerifyLedgerSignature checks l.Signature, the hex Ed25519 signature of the
// ledger hash, against publicKey as /v1/info publishes it ("ed25519:<hex>").
// It proves the ledger hash was signed by the key's holder; pair it with
// VerifyLedgerHashes to prove the ledger's contents.
func VerifyLedgerSignature(l *Ledger, publicKey string) error {
	if l == nil {
		return errors.New("verify ledger signature: nil ledger")
	}
	pk, err := parsePublicKey(publicKey)
	if err != nil {
		return fmt.Errorf("verify ledger signature: %w", err)
	}
	if l.Signature == "" {
		return fmt.Errorf("verify ledger signature: ledger %s is not signed", l.ID)
	}
	sig, err := hex.DecodeString(l.Signature)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return fmt.Errorf("verify ledger signature: ledger %s: signature is not %d hex bytes", l.ID, ed25519.SignatureSize)
	}
	if !ed25519.Verify(pk, kurahash.LedgerSigningMessage(l.Hash), sig) {
		return &VerificationError{What: "ledger " + l.ID, Mismatches: []Mismatch{{Field: "signature", Stored: l.Signature, Computed: "does not verify"}}}
	}
	return nil
}

// parsePublicKey decodes a public key as /v1/info publishes it.
func parsePublicKey(publicKey string) (ed25519.PublicKey, error) {
	pk, err := hex.DecodeString(strings.TrimPrefix(publicKey, "ed25519:"))
	if err != nil || !strings.HasPrefix(publicKey, "ed25519:") || len(pk) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("public key %q is not ed25519:<64 hex digits>", publicKey)
	}
	return pk, nil
}

// VerifyHeadSignature checks the signature of one head move of a session,
// the hex Ed25519 signature kurad makes over
// kurahash.HeadSigningMessage(sessionID, e.Seq, e.HeadHash), against
// publicKey as /v1/info publishes it ("ed25519:<hex>"). It proves that the
// key's holder moved the head to a ledger with that hash.
func VerifyHeadSignature(sessionID string, e *ReflogEntry, publicKey string) error {
	if e == nil {
		return errors.New("verify head signature: nil reflog entry")
	}
	pk, err := parsePublicKey(publicKey)
	if err != nil {
		return fmt.Errorf("verify head signature: %w", err)
	}
	what := fmt.Sprintf("head move %d of session %s", e.Seq, sessionID)
	if e.Signature == "" {
		return fmt.Errorf("verify head signature: %s is not signed", what)
	}
	sig, err := hex.DecodeString(e.Signature)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return fmt.Errorf("verify head signature: %s: signature is not %d hex bytes", what, ed25519.SignatureSize)
	}
	if !ed25519.Verify(pk, kurahash.HeadSigningMessage(sessionID, e.Seq, e.HeadHash), sig) {
		return &VerificationError{What: what, Mismatches: []Mismatch{{Field: "signature", Stored: e.Signature, Computed: "does not verify"}}}
	}
	return nil
}

// VerifyProof checks that p proves the record with the given seal (one the
// caller verified, e.g. with VerifyRecord) is at p.LeafIndex in a tree of
// p.TreeSize leaves whose root is p.RootHash. Compare p.RootHash with a
// ledger's root_hash the caller trusts.
func VerifyProof(p *Proof, seal string) error {
	if p == nil {
		return errors.New("verify proof: nil proof")
	}
	leaf, err := kurahash.DecodeHash(seal)
	if err != nil {
		return fmt.Errorf("verify proof: seal: %w", err)
	}
	root, err := kurahash.DecodeHash(p.RootHash)
	if err != nil {
		return fmt.Errorf("verify proof: root_hash: %w", err)
	}
	path := make([][32]byte, len(p.AuditPath))
	for i, h := range p.AuditPath {
		if path[i], err = kurahash.DecodeHash(h); err != nil {
			return fmt.Errorf("verify proof: audit_path[%d]: %w", i, err)
		}
	}
	if !kurahash.VerifyInclusion(leaf, p.LeafIndex, p.TreeSize, path, root) {
		return &VerificationError{What: "proof of record " + p.RecordID, Mismatches: []Mismatch{{RecordID: p.RecordID, Field: "audit_path", Stored: p.RootHash, Computed: "does not lead to root_hash"}}}
	}
	return nil
}

// VerifyLedgerLocally fetches a ledger, all its records and its parents'
// hashes and recomputes them here with CheckLedgerHashes; when publicKey
// ("ed25519:<hex>", as /v1/info publishes it) is not empty the ledger must
// also carry a valid signature by that key. It returns an error only when
// fetching fails: a ledger that does not verify is a Verification with OK
// false, as from the server. The caller should compare the Verification's
// Hash with a ledger hash it trusts: without that comparison a server could
// hand out a consistent forgery.
func (c *Client) VerifyLedgerLocally(ctx context.Context, id, publicKey string) (*Verification, error) {
	l, err := c.GetLedger(ctx, id)
	if err != nil {
		return nil, err
	}
	recs, err := c.AllLedgerRecords(ctx, id)
	if err != nil {
		return nil, err
	}
	parents := make([]string, len(l.ParentIDs))
	for i, pid := range l.ParentIDs {
		p, err := c.GetLedger(ctx, pid)
		if err != nil {
			return nil, err
		}
		parents[i] = p.Hash
	}
	v := CheckLedgerHashes(l, recs, parents)
	if publicKey != "" {
		err := VerifyLedgerSignature(l, publicKey)
		v.SignatureOK = err == nil
		if err != nil {
			why := "does not verify"
			var ve *VerificationError
			if !errors.As(err, &ve) {
				why = strings.TrimPrefix(err.Error(), "verify ledger signature: ")
			}
			v.OK = false
			v.Mismatches = append(v.Mismatches, Mismatch{Field: "signature", Stored: l.Signature, Computed: why})
		}
	}
	return v, nil
}
