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
	// Info is the answer of GET /v1/info.
	Info = kura.Info
	// Error is what every non-2xx answer is decoded into.
	Error = kura.Error
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
