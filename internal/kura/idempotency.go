package kura

import "context"

// Idempotency carries a write's Idempotency-Key from the API into the
// store's transaction, where the first answer is kept with the write.
type Idempotency struct {
	// Identity is the caller the key belongs to: keys of different
	// identities never meet.
	Identity    string
	Key         string
	Fingerprint string
	// Render produces the exact bytes the API answers with for a value.
	Render func(v any) []byte
}

type idemKey struct{}

// WithIdempotency returns ctx carrying idem for the next write.
func WithIdempotency(ctx context.Context, idem *Idempotency) context.Context {
	return context.WithValue(ctx, idemKey{}, idem)
}

// IdempotencyFrom returns the Idempotency ctx carries, or nil.
func IdempotencyFrom(ctx context.Context) *Idempotency {
	idem, _ := ctx.Value(idemKey{}).(*Idempotency)
	return idem
}

// StoredAnswer is the first answer to an idempotent write.
type StoredAnswer struct {
	Fingerprint string
	Status      int
	Body        []byte
}

// TurnAppendResult answers an append to a turn's output.
type TurnAppendResult struct {
	TurnID          string   `json:"turn_id"`
	Records         []Record `json:"records"`
	OutputRecordIDs []string `json:"output_record_ids"`
}
