package client

import "github.com/kura-memory/kura/internal/kura"

// The domain types live in internal/kura, which programs outside this module
// cannot import; these aliases let them name what the client returns.
type (
	// Record is an immutable, content-addressed entry.
	Record = kura.Record
	// RecordInput is what a caller sends to create a record.
	RecordInput = kura.RecordInput
	// Ledger is an immutable ordered list of record references with a Merkle root.
	Ledger = kura.Ledger
	// LedgerInput is what a caller sends to create a ledger.
	LedgerInput = kura.LedgerInput
	// Verification is the server's answer to a ledger verify.
	Verification = kura.Verification
	// Mismatch is one thing a verification found wrong.
	Mismatch = kura.Mismatch
	// Diff compares the record sets of two ledgers.
	Diff = kura.Diff
	// Proof is an RFC 6962 inclusion proof of a record in a ledger.
	Proof = kura.Proof
	// Session is a named chain of ledgers with a moving head, like a branch.
	Session = kura.Session
	// SessionInput is what a caller sends to create (or fork) a session.
	SessionInput = kura.SessionInput
	// ReflogEntry is one move of a session head.
	ReflogEntry = kura.ReflogEntry
	// HeadMove is a compare-and-swap of a session head.
	HeadMove = kura.HeadMove
	// SessionVerification is the answer of a session verify.
	SessionVerification = kura.SessionVerification
	// LogHeadCheck is what a session verify found in the log for the
	// session's head.
	LogHeadCheck = kura.LogHeadCheck
	// SessionIssue is one thing a session verify found wrong.
	SessionIssue = kura.SessionIssue
	// Turn is one agent step on a session: a context ledger in, an output
	// ledger out.
	Turn = kura.Turn
	// RecordRef is a record in a turn request: a new record or an existing
	// one by RecordID.
	RecordRef = kura.RecordRef
	// TurnOpenInput opens a turn.
	TurnOpenInput = kura.TurnOpenInput
	// MemoryRequest asks turn open to compile memory into the context.
	MemoryRequest = kura.MemoryRequest
	// TurnClaim claims a turn for a worker.
	TurnClaim = kura.TurnClaim
	// TurnRenew extends a claim.
	TurnRenew = kura.TurnRenew
	// Lease is the answer to claim and renew.
	Lease = kura.Lease
	// TurnAppend appends records to a turn's output.
	TurnAppend = kura.TurnAppend
	// TurnClose closes a turn.
	TurnClose = kura.TurnClose
	// TurnAppendResult is the answer to an append: the records appended by
	// the call, in order, and every output record id of the turn so far.
	TurnAppendResult = kura.TurnAppendResult
	// ImportInput carries complete exported objects for Import.
	ImportInput = kura.ImportInput
	// ImportResult counts what an import created and what it skipped.
	ImportResult = kura.ImportResult
	// Info is the answer of GET /v1/info.
	Info = kura.Info
	// OutboxInfo is Info's view of the doorbell: the newest seq published
	// on NATS and how many committed events still wait to be.
	OutboxInfo = kura.OutboxInfo
	// Error is what every non-2xx answer is decoded into.
	Error = kura.Error
)

// Turn states.
const (
	TurnOpen     = kura.TurnOpen
	TurnComplete = kura.TurnComplete
	TurnFailed   = kura.TurnFailed
	TurnTimeout  = kura.TurnTimeout
)

// Error codes a *Error can carry (the error table of the API contract),
// re-exported so that callers outside this module can compare them.
const (
	EInvalid     = kura.EInvalid
	EUnauth      = kura.EUnauth
	EDenied      = kura.EDenied
	ENotFound    = kura.ENotFound
	EConflict    = kura.EConflict
	ETooLarge    = kura.ETooLarge
	EMediaType   = kura.EMediaType
	ERateLimited = kura.ERateLimited
	EUnavailable = kura.EUnavailable
	EStorageFull = kura.EStorageFull
	EInternal    = kura.EInternal
)

// ErrorCode returns the Kura code carried by err, or EInternal when it
// carries none (a transport failure, for instance).
func ErrorCode(err error) string { return kura.ErrorCode(err) }

// IsCode reports whether err carries the given Kura code.
func IsCode(err error, code string) bool { return kura.IsCode(err, code) }
