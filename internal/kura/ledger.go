package kura

import "unicode"

// Ledger is an immutable ordered list of record references with a Merkle
// root, chained to its parents like a Git commit.
type Ledger struct {
	ID        string   `json:"id"`
	Hash      string   `json:"hash"`
	RootHash  string   `json:"root_hash"`
	Label     string   `json:"label"`
	ParentIDs []string `json:"parent_ids"`
	// ParentHashes are the parents' hashes in order, as the ledger hash
	// commits to them, so a client recomputes the hash from this ledger
	// alone (a wrong one cannot pass: the hash is signed).
	ParentHashes []string `json:"parent_hashes"`
	// RecordIDs is [] for a ledger of no records; nil (left out of the
	// JSON) only where a listing leaves record ids out on purpose (the
	// session log: read the ledger for them).
	RecordIDs   []string `json:"record_ids,omitzero"`
	RecordCount int      `json:"record_count"`
	CreatedAt   string   `json:"created_at"`
	Signature   string   `json:"signature"`
}

// LedgerInput is what a caller sends to create a ledger.
type LedgerInput struct {
	Label     string   `json:"label"`
	ParentIDs []string `json:"parent_ids"`
	RecordIDs []string `json:"record_ids"`
}

// MaxLabelLen bounds a ledger label.
const MaxLabelLen = 256

// Validate checks the shape of a ledger input; existence is the store's job.
func (in *LedgerInput) Validate() error {
	if len(in.Label) > MaxLabelLen {
		return Invalid("label", "label is at most %d bytes", MaxLabelLen)
	}
	// The ledger hash frames the label with newlines (kurahash.LedgerHash):
	// a newline in it would let the signed hash be read with another
	// label and created_at, so no verifier accepts one. Other controls
	// (ESC, CR, C1) only ever served to mislead whoever reads the label.
	for i, r := range in.Label {
		if unicode.IsControl(r) {
			return Invalid("label", "label must not hold control characters (U+%04X at byte %d): the ledger hash frames the label with newlines", r, i).
				WithDetail("offset", i)
		}
	}
	for i, id := range in.ParentIDs {
		if !ValidID(id) {
			return Invalid("parent_ids", "parent_ids[%d] %q is not a lowercase UUID", i, id)
		}
	}
	seen := map[string]bool{}
	for _, id := range in.ParentIDs {
		if seen[id] {
			return Invalid("parent_ids", "parent %s is listed twice", id)
		}
		seen[id] = true
	}
	for i, id := range in.RecordIDs {
		if !ValidID(id) {
			return Invalid("record_ids", "record_ids[%d] %q is not a lowercase UUID", i, id)
		}
	}
	return nil
}

// Mismatch is one thing verification found wrong. Position is the index in
// the ledger when the problem is tied to one (-1 otherwise).
type Mismatch struct {
	RecordID string `json:"record_id,omitempty"`
	Position *int   `json:"position,omitempty"`
	Field    string `json:"field"`
	Stored   string `json:"stored"`
	Computed string `json:"computed"`
}

// Verification is the answer of a ledger verify. Withheld lists the
// withheld records a client met when it verified what it was given
// (client.CheckLedgerHashes); kurad's own verify reads every record and
// never sets it.
type Verification struct {
	OK               bool       `json:"ok"`
	LedgerID         string     `json:"ledger_id"`
	Hash             string     `json:"hash"`
	ComputedHash     string     `json:"computed_hash"`
	RootHash         string     `json:"root_hash"`
	ComputedRootHash string     `json:"computed_root_hash"`
	RecordsChecked   int        `json:"records_checked"`
	SignatureOK      bool       `json:"signature_ok"`
	Redacted         []string   `json:"redacted,omitempty"`
	Withheld         []string   `json:"withheld,omitempty"`
	Mismatches       []Mismatch `json:"mismatches"`
}

// Diff compares the record sets of two ledgers.
type Diff struct {
	Added   []string `json:"added"`
	Removed []string `json:"removed"`
	Common  int      `json:"common"`
}

// Proof is an RFC 6962 inclusion proof of a record in a ledger.
type Proof struct {
	LedgerID  string   `json:"ledger_id"`
	RecordID  string   `json:"record_id"`
	Seal      string   `json:"seal"`
	LeafIndex int      `json:"leaf_index"`
	TreeSize  int      `json:"tree_size"`
	RootHash  string   `json:"root_hash"`
	AuditPath []string `json:"audit_path"`
}
