package kura

// Idempotency is a write's Idempotency-Key as the API resolved it: the
// store keeps the write's answer under it in the write's own transaction.
type Idempotency struct {
	// Identity is the caller the key belongs to: keys of different
	// identities never meet.
	Identity    string
	Key         string
	Fingerprint string
	// Answer is the API's answer to the value the write produced (created:
	// a new resource): the status and the exact bytes it sends, decided
	// once, in the API, for the first answer and every replay alike.
	Answer func(v any, created bool) (status int, body []byte)
}

// WriteOptions is what a write carries besides its input.
type WriteOptions struct {
	// Idempotency, when set, makes the write keep its answer for a retry
	// with the same key (nil: a write without Idempotency-Key).
	Idempotency *Idempotency
}

// WriteOption sets a WriteOptions field.
type WriteOption func(*WriteOptions)

// KeepAnswer has the write keep its answer under idem (nil: no key).
func KeepAnswer(idem *Idempotency) WriteOption {
	return func(o *WriteOptions) { o.Idempotency = idem }
}

// ApplyWriteOptions folds opts into one WriteOptions.
func ApplyWriteOptions(opts []WriteOption) WriteOptions {
	var o WriteOptions
	for _, f := range opts {
		if f != nil {
			f(&o)
		}
	}
	return o
}

// StoredAnswer is the first answer to an idempotent write.
type StoredAnswer struct {
	Fingerprint string
	Status      int
	Body        []byte
}
