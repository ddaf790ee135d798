package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"

	"github.com/kura-memory/kura/internal/auth"
	"github.com/kura-memory/kura/internal/kura"
)

// IdempotencyStore is what the Idempotency-Key handling needs from the
// store: the answers it keeps.
type IdempotencyStore interface {
	LookupIdempotency(ctx context.Context, identity, key string) (*kura.StoredAnswer, error)
}

// MaxIdempotencyKey is the longest Idempotency-Key accepted (API.md).
const MaxIdempotencyKey = 128

// render is the one encoder of write answers: what a handler sends and what
// the store keeps for a retry are the same bytes.
func render(v any) []byte {
	switch x := v.(type) {
	case *kura.Record:
		return append(x.AppendJSON(make([]byte, 0, 320+len(x.Content))), '\n')
	case []kura.Record: // a batch answer
		b := []byte(`{"records":[`)
		for i := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = x[i].AppendJSON(b)
		}
		return append(b, ']', '}', '\n')
	case json.RawMessage:
		// A compiled bundle (up to 48 MiB), which kurad encoded itself as
		// json.Marshal would: compacted and escaped already, so it is not
		// copied and scanned again. The newline goes into its spare
		// capacity when it has some; the handler and the stored answer
		// both write the same byte there.
		return append(x, '\n')
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // our own answer types always encode
	}
	return append(b, '\n')
}

// idempotent wraps a write route: a request carrying Idempotency-Key whose
// answer is stored gets that answer again and writes nothing; otherwise the
// key rides along to the store, which keeps the answer in the same
// transaction as the write. A key belongs to the caller's identity: the
// same key from another identity is another key.
// The stored answer is the one rule decides (the route's answer rule), so
// the first answer and every replay are the same bytes. recheck (nil: none)
// is the route's body check, run on the raw body before a stored answer is
// given out (bodyRoute): a caller whose rights shrank since gets the
// refusal, not the answer.
func (s *Server) idempotent(rule answerRule, recheck func(r *http.Request, body []byte) error, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		if key == "" {
			h(w, r)
			return
		}
		if len(key) > MaxIdempotencyKey {
			s.writeError(w, r, kura.Invalid("Idempotency-Key", "Idempotency-Key is at most %d characters", MaxIdempotencyKey))
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
		if err != nil {
			s.writeError(w, r, s.jsonError(err))
			return
		}
		// The query string is part of what a request asks (a DELETE names
		// its target there), so one key reused with another query is refused.
		sum := sha256.Sum256([]byte(r.Method + " " + r.URL.Path + "?" + r.URL.RawQuery + "\n" + string(body)))
		fp := hex.EncodeToString(sum[:])
		identity := auth.FromContext(r.Context()).Identity
		before := func() error {
			if recheck == nil {
				return nil
			}
			return recheck(r, body)
		}
		if s.replay(w, r, identity, key, fp, before) {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		ctx := context.WithValue(r.Context(), idemKey{}, &kura.Idempotency{Identity: identity, Key: key, Fingerprint: fp, Answer: rule})
		h(w, r.WithContext(ctx))
	}
}

type idemKey struct{}

// idempotencyOf is the request's resolved Idempotency-Key, or nil.
func idempotencyOf(r *http.Request) *kura.Idempotency {
	idem, _ := r.Context().Value(idemKey{}).(*kura.Idempotency)
	return idem
}

// keep is the write option that keeps the request's answer (if it carries
// an Idempotency-Key).
func keep(r *http.Request) kura.WriteOption { return kura.KeepAnswer(idempotencyOf(r)) }

// replay answers from a stored answer; it reports whether it answered.
// before runs first when there is one: the access check of the request's
// body.
func (s *Server) replay(w http.ResponseWriter, r *http.Request, identity, key, fp string, before func() error) bool {
	a, err := s.store.LookupIdempotency(r.Context(), identity, key)
	if err != nil {
		s.writeError(w, r, err)
		return true
	}
	if a == nil {
		return false
	}
	if err := before(); err != nil {
		s.writeError(w, r, err)
		return true
	}
	if a.Fingerprint != fp {
		s.writeError(w, r, kura.Errorf(kura.EConflict, "this Idempotency-Key was used for a different request").WithDetail("field", "Idempotency-Key"))
		return true
	}
	w.Header().Set("Idempotent-Replayed", "true")
	writeBody(w, a.Status, a.Body)
	return true
}

// replayAfterRace answers a write that lost the race for its key to a
// concurrent request with the same key: the winner's answer is stored now.
func (s *Server) replayAfterRace(w http.ResponseWriter, r *http.Request) bool {
	idem := idempotencyOf(r)
	if idem == nil {
		return false
	}
	a, err := s.store.LookupIdempotency(r.Context(), idem.Identity, idem.Key)
	if err != nil || a == nil {
		return false
	}
	if idem.Fingerprint != a.Fingerprint {
		s.writeJSON(w, http.StatusConflict, map[string]any{"error": kura.Errorf(kura.EConflict, "this Idempotency-Key was used for a different request").WithDetail("field", "Idempotency-Key")})
		return true
	}
	w.Header().Set("Idempotent-Replayed", "true")
	writeBody(w, a.Status, a.Body)
	return true
}
