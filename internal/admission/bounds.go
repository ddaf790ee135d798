package admission

import "github.com/kura-memory/kura/internal/kura"

// The bounds of one answer. Every part of a bundle has a default, used
// when the request leaves it out, and a maximum a request may ask for:
// without them one preview of a scope of large nodes answered every
// summary of the scope (65 MB for 4,000 nodes of 16 KiB) and held all of
// it, several times over, while it did.
const (
	// DefaultBudgetBytes is the budget of a request whose budget_bytes is 0
	// or left out: the items' JSON, about 250,000 tokens.
	DefaultBudgetBytes = 1 << 20
	// MaxBudgetBytes is the largest budget_bytes a request may ask for.
	MaxBudgetBytes = 16 << 20
	// DefaultMaxPerBucket is the items a bucket keeps when max_per_bucket
	// is left out (or null).
	DefaultMaxPerBucket = 1000
	// MaxPerBucketCap is the largest max_per_bucket a request may ask for.
	MaxPerBucketCap = 100_000
	// DefaultMaxTrace is how many nodes the trace lists when max_trace is
	// left out, and MaxTraceCap the most it may list: every node of a
	// scope of up to 100,000 nodes, each explained once.
	DefaultMaxTrace = 100_000
	MaxTraceCap     = 100_000
	// MaxTraceBytes bounds the JSON of the trace, whatever max_trace asks:
	// a query's reasons and target files make an entry up to tens of
	// kilobytes, so a count alone bounds nothing.
	MaxTraceBytes = 32 << 20
	// MaxQueryBytes bounds a request's query.
	MaxQueryBytes = 1024
)

// MaxAnswerBytes bounds a whole bundle's JSON: the items (MaxBudgetBytes),
// the trace (MaxTraceBytes), and the rest (ids, digest, the buckets'
// brackets and commas, omitted counts, warnings), which is well under a
// mebibyte.
const MaxAnswerBytes = MaxBudgetBytes + MaxTraceBytes + 1<<20

// Limits are the bounds one compile runs with: the request's own, or the
// defaults where it left them out.
type Limits struct {
	BudgetBytes  int // bytes of items kept, > 0
	MaxPerBucket int // items kept per bucket
	MaxTrace     int // trace entries listed
}

// Limits returns the bounds r compiles with. r is assumed to have passed
// Check.
func (r *Request) Limits() Limits {
	l := Limits{BudgetBytes: r.BudgetBytes, MaxPerBucket: DefaultMaxPerBucket, MaxTrace: DefaultMaxTrace}
	if l.BudgetBytes == 0 {
		l.BudgetBytes = DefaultBudgetBytes
	}
	if r.MaxPerBucket != nil {
		l.MaxPerBucket = *r.MaxPerBucket
	}
	if r.MaxTrace != nil {
		l.MaxTrace = *r.MaxTrace
	}
	return l
}

// Check refuses a request whose bounds are out of range, naming the field
// (after prefix: "memory." for the memory of a turn). What it checks
// needs nothing from a store; the node kinds and as_of the store checks.
func (r *Request) Check(prefix string) error {
	return CheckBounds(prefix, r.BudgetBytes, r.MaxPerBucket, r.MaxTrace)
}

// CheckBounds checks the bounds a compile request or a turn's memory asks.
func CheckBounds(prefix string, budget int, perBucket, trace *int) error {
	if budget < 0 || budget > MaxBudgetBytes {
		return kura.Invalid(prefix+"budget_bytes", "budget_bytes must be 0 (the default, %d) to %d", DefaultBudgetBytes, MaxBudgetBytes)
	}
	if perBucket != nil && (*perBucket < 0 || *perBucket > MaxPerBucketCap) {
		return kura.Invalid(prefix+"max_per_bucket", "max_per_bucket must be 0 (keep none) to %d; leave it out for the default, %d", MaxPerBucketCap, DefaultMaxPerBucket)
	}
	if trace != nil && (*trace < 0 || *trace > MaxTraceCap) {
		return kura.Invalid(prefix+"max_trace", "max_trace must be 0 (list none) to %d; leave it out for the default, %d", MaxTraceCap, DefaultMaxTrace)
	}
	return nil
}
