package api

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/kura-memory/kura/internal/kura"
	"golang.org/x/sync/semaphore"
)

// bodyBudget bounds the bytes of request bodies all requests hold at once.
// The body limit bounds one request; many concurrent large ones would still
// push kurad far past its soft memory limit (a body is read, sometimes
// copied for an idempotency fingerprint, and decoded).
// So a request reserves what its body may hold before anything reads it,
// and gives it back when it has been answered.
type bodyBudget struct {
	sem     *semaphore.Weighted
	size    int64
	wait    time.Duration
	held    atomic.Int64 // bytes reserved by requests being served
	waiting atomic.Int64 // requests waiting for room
	refused atomic.Int64 // requests answered 503 for want of room
}

func newBodyBudget(size int64, wait time.Duration) *bodyBudget {
	if size <= 0 {
		return nil
	}
	return &bodyBudget{sem: semaphore.NewWeighted(size), size: size, wait: wait}
}

// acquire reserves n bytes, waiting up to b.wait for room; false when
// there was none in time (or the client went away).
func (b *bodyBudget) acquire(ctx context.Context, n int64) bool {
	if !b.sem.TryAcquire(n) {
		b.waiting.Add(1)
		ctx, cancel := context.WithTimeout(ctx, b.wait)
		err := b.sem.Acquire(ctx, n)
		cancel()
		b.waiting.Add(-1)
		if err != nil {
			b.refused.Add(1)
			return false
		}
	}
	b.held.Add(n)
	return true
}

func (b *bodyBudget) release(n int64) {
	b.held.Add(-n)
	b.sem.Release(n)
}

// innerKey marks a request made in-process by an MCP tool call: the MCP
// request carrying it holds a reservation for its whole body already.
type innerKey struct{}

// reservation is what a request's body may hold: its declared length, or
// the route's body limit when the length is not declared (chunked), capped
// at that limit (a longer body is refused once the limit is read) and at
// the budget itself.
func (s *Server) reservation(r *http.Request) int64 {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return 0
	}
	limit := s.cfg.MaxBodyBytes
	if r.URL.Path == "/mcp" {
		limit = mcpBodyLimit(s.cfg.MaxBodyBytes)
	}
	n := limit
	if r.ContentLength > 0 {
		n = min(r.ContentLength, limit)
	}
	return min(n, s.bodies.size)
}

// reserveBody makes a request with a body reserve it in the budget before
// anything reads it (an idempotency fingerprint, the one decoding), to hold
// until the request is answered: the caller defers release. authenticate calls it
// once the caller is known, so that requests refused 401 or 429 never
// reserve anything and a client without a token cannot spend the budget.
// Without room in time it answers 503 unavailable with Retry-After, the
// body unread, and reports false.
func (s *Server) reserveBody(w http.ResponseWriter, r *http.Request) (release func(), ok bool) {
	if s.bodies == nil || r.Context().Value(innerKey{}) != nil {
		return func() {}, true
	}
	n := s.reservation(r)
	if n == 0 {
		return func() {}, true
	}
	if !s.bodies.acquire(r.Context(), n) {
		if r.Context().Err() == nil { // else the client is gone: nobody reads an answer
			s.writeError(w, r, kura.Errorf(kura.EUnavailable, "kurad is holding as many request bodies as its memory allows (%d bytes); retry shortly", s.bodies.size).
				WithDetail("retry_after_seconds", 1))
		}
		return nil, false
	}
	return func() { s.bodies.release(n) }, true
}
