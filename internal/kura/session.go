package kura

// Session is a named chain of ledgers with a moving head, like a branch.
// HeadLedgerID and HeadHash are null until the first head move.
type Session struct {
	ID           string  `json:"id"`
	Project      string  `json:"project"`
	Name         string  `json:"name"`
	Scope        string  `json:"scope"`
	HeadLedgerID *string `json:"head_ledger_id"`
	HeadHash     *string `json:"head_hash"`
	CreatedAt    string  `json:"created_at"`
	UpdatedAt    string  `json:"updated_at"`
	OpenTurnID   *string `json:"open_turn_id,omitempty"`
	// CreatedBy is the identity that created the session (null for
	// sessions older than schema 6 or imported); with admins, it may move
	// the head by hand.
	CreatedBy *string `json:"created_by"`
}

// SessionInput creates a session; FromLedgerID forks from a ledger.
type SessionInput struct {
	Project string `json:"project"`
	Name    string `json:"name"`
	Scope   string `json:"scope"`
	// CreatedBy is the identity creating the session, set by the API from
	// the caller's token (never read from the body).
	CreatedBy    string `json:"-"`
	FromLedgerID string `json:"from_ledger_id"`
}

// Validate checks slugs and ids.
func (in *SessionInput) Validate() error {
	if !ValidSlug(in.Project) {
		return Invalid("project", "project must match ^[a-z0-9][a-z0-9_-]{0,63}$")
	}
	if !ValidSlug(in.Name) {
		return Invalid("name", "name must match ^[a-z0-9][a-z0-9_-]{0,63}$")
	}
	if in.Scope != "" && !ValidSlug(in.Scope) {
		return Invalid("scope", "scope must match ^[a-z0-9][a-z0-9_-]{0,63}$")
	}
	if in.FromLedgerID != "" && !ValidID(in.FromLedgerID) {
		return Invalid("from_ledger_id", "%q is not a lowercase UUID", in.FromLedgerID)
	}
	return nil
}

// ReflogEntry is one head move. From is null for the first move. Signature
// is kurad's Ed25519 signature over "kura-head-v1\n" + session id + "\n" +
// seq + "\n" + head hash.
type ReflogEntry struct {
	Seq       int64   `json:"seq"`
	From      *string `json:"from"`
	To        string  `json:"to"`
	HeadHash  string  `json:"head_hash"`
	Reason    string  `json:"reason"`
	At        string  `json:"at"`
	Signature string  `json:"signature"`
}

// HeadMove is a compare-and-swap of a session head.
type HeadMove struct {
	LedgerID     string  `json:"ledger_id"`
	ExpectedHead *string `json:"expected_head"`
	Reason       string  `json:"reason,omitempty"`
}

// Turn states.
const (
	TurnOpen     = "open"
	TurnComplete = "complete"
	TurnFailed   = "failed"
	TurnTimeout  = "timeout"
)

// Turn is one agent step on a session: a read-only context ledger in, a
// write-only output ledger out.
type Turn struct {
	ID              string   `json:"id"`
	SessionID       string   `json:"session_id"`
	Number          int      `json:"number"`
	State           string   `json:"state"`
	ContextLedgerID string   `json:"context_ledger_id"`
	ContextBundleID *string  `json:"context_bundle_id,omitempty"`
	OutputLedgerID  *string  `json:"output_ledger_id"`
	OutputRecordIDs []string `json:"output_record_ids"`
	Epoch           int64    `json:"epoch"`
	Worker          *string  `json:"worker"`
	LeaseExpiresAt  *string  `json:"lease_expires_at"`
	Dispatch        *string  `json:"dispatch,omitempty"`
	DeadlineAt      string   `json:"deadline_at"`
	OpenedAt        string   `json:"opened_at"`
	ClosedAt        *string  `json:"closed_at"`
	HeadHash        *string  `json:"head_hash,omitempty"`
	// Extracted lists the memory nodes made from the output's memory.fact
	// and memory.decision records at close (null while the turn is open).
	Extracted []string `json:"extracted"`
	// ExtractionSkipped, in a close answer only, says which memory records
	// were not extracted because the closer may not write the scope.
	ExtractionSkipped *ExtractionSkipped `json:"extraction_skipped,omitempty"`
}

// ExtractionSkipped is what a close left unextracted, and why.
type ExtractionSkipped struct {
	Scope   string   `json:"scope"`
	Records []string `json:"records"`
	Reason  string   `json:"reason"`
}

// RecordRef is a record in a turn request: either a new record (type,
// content, author_id, metadata) or an existing one by record_id.
type RecordRef struct {
	RecordInput
	RecordID string `json:"record_id,omitempty"`
}

// TurnOpenInput opens a turn.
type TurnOpenInput struct {
	Instruction     *RecordInput   `json:"instruction"`
	Context         []RecordRef    `json:"context"`
	Memory          *MemoryRequest `json:"memory"`
	Dispatch        string         `json:"dispatch"`
	DeadlineSeconds int            `json:"deadline_seconds"`
}

// MemoryRequest asks turn open to compile the session's scope into the
// context (the admission issue builds it).
type MemoryRequest struct {
	Query       string `json:"query"`
	BudgetBytes int    `json:"budget_bytes"`
	// MaxPerBucket keeps the first N items of each bucket (only use_now
	// is packed): nil is the default (1000), 0 keeps none.
	MaxPerBucket *int `json:"max_per_bucket,omitempty"`
	// MaxTrace lists the first N nodes in the stored bundle's trace: nil
	// is the default (100,000), 0 lists none.
	MaxTrace *int `json:"max_trace,omitempty"`
}

// TurnClaim claims a turn for a worker.
type TurnClaim struct {
	Worker       string `json:"worker"`
	LeaseSeconds int    `json:"lease_seconds"`
}

// TurnRenew extends a claim.
type TurnRenew struct {
	Epoch        int64 `json:"epoch"`
	LeaseSeconds int   `json:"lease_seconds"`
	// Writer is who renews: the API sets it from the caller's token.
	Writer Writer `json:"-"`
}

// Lease is the answer to claim and renew.
type Lease struct {
	TurnID         string `json:"turn_id"`
	Epoch          int64  `json:"epoch"`
	Worker         string `json:"worker"`
	LeaseExpiresAt string `json:"lease_expires_at"`
}

// TurnAppend appends records to a turn's output.
type TurnAppend struct {
	Epoch   *int64      `json:"epoch"`
	Records []RecordRef `json:"records"`
	// Writer is who appends: the API sets it from the caller's token.
	Writer Writer `json:"-"`
}

// TurnClose closes a turn.
type TurnClose struct {
	Epoch  *int64 `json:"epoch"`
	Status string `json:"status"`
	// Closer is who closes: the nodes extracted at close are its writes.
	Closer Writer `json:"-"`
	// MayWriteScope is set by the API when the closer may write the
	// session's scope. Without it the close extracts nothing: the memory
	// records of the output would become nodes of a scope the closer
	// cannot write.
	MayWriteScope bool `json:"-"`
}

// SessionVerification is the answer of a session verify.
type SessionVerification struct {
	OK               bool    `json:"ok"`
	SessionID        string  `json:"session_id"`
	HeadLedgerID     *string `json:"head_ledger_id"`
	HeadHash         *string `json:"head_hash"`
	LedgersChecked   int     `json:"ledgers_checked"`
	RecordsChecked   int     `json:"records_checked"`
	HeadMovesChecked int     `json:"head_moves_checked"`
	// Redacted lists the redacted records met on the chain: their content
	// is gone by an admin's decision, which is not a mismatch.
	Redacted            []string `json:"redacted,omitempty"`
	ExpectHeadHash      string   `json:"expect_head_hash,omitempty"`
	ExpectHeadHashFound *bool    `json:"expect_head_hash_found,omitempty"`
	// LogHead is the session's head as the log has it: the newest
	// session.head leaf of the session, which a history cut short
	// consistently (ledgers, reflog and head rewound together) no longer
	// matches.
	LogHead  *LogHeadCheck   `json:"log_head,omitempty"`
	Problems []SessionIssue  `json:"problems"`
	Ledgers  []*Verification `json:"ledgers,omitempty"`
}

// LogHeadCheck is what a session verify found in the log for the
// session's head.
type LogHeadCheck struct {
	// Checked is false when the log could not say (Reason tells why).
	Checked bool `json:"checked"`
	// Seq is the newest session.head event of the session (0: none), and
	// LedgerID and HeadHash the head it names.
	Seq      int64  `json:"seq,omitempty"`
	LedgerID string `json:"ledger_id,omitempty"`
	HeadHash string `json:"head_hash,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// SessionIssue is one thing a session verify found wrong.
type SessionIssue struct {
	LedgerID string `json:"ledger_id,omitempty"`
	Field    string `json:"field"`
	Detail   string `json:"detail"`
}

// ImportInput is an export loaded back: full records, ledgers (parents
// before children) and sessions, with their original ids and times.
type ImportInput struct {
	Records  []Record  `json:"records"`
	Ledgers  []Ledger  `json:"ledgers"`
	Sessions []Session `json:"sessions"`
}

// ImportResult counts what an import wrote and what it found present.
type ImportResult struct {
	Records  int `json:"records"`
	Ledgers  int `json:"ledgers"`
	Sessions int `json:"sessions"`
	Skipped  int `json:"skipped"`
}

// CheckLeaseHolder is the rule for writing a claimed turn (append, renew,
// close): the epoch fences out a worker that lost its lease, and the claim
// belongs to its worker, so another identity holding the epoch (anyone of
// the project can read it) may not write in the worker's name. Admins, and
// kurad closing a turn past its deadline, may.
func CheckLeaseHolder(t *Turn, w Writer) error {
	if t.Epoch == 0 || t.Worker == nil || w.Admin || *t.Worker == w.Identity {
		return nil
	}
	return Errorf(EDenied, "turn %s is claimed by %s: only its worker (or an admin) writes it", t.ID, *t.Worker).
		WithDetail("worker", *t.Worker)
}

// TurnAppendResult answers an append to a turn's output.
type TurnAppendResult struct {
	TurnID          string   `json:"turn_id"`
	Records         []Record `json:"records"`
	OutputRecordIDs []string `json:"output_record_ids"`
}
