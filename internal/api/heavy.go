package api

import (
	"net/http"
	"runtime"
)

// heavySlots keeps a processor free for cheap requests. A route whose cost
// grows with the data it walks (heavy in its declaration: the provenance
// reads, context preview and compile) runs its whole
// handler, answer encoding included, in one of fewer slots than the Go
// scheduler has processors: however many such requests arrive at once, the
// reads that answer in microseconds (/v1/info, a record, a node) find a
// processor instead of waiting behind them for their time slices. (The
// store keeps room in its read pool the same way: heavyread.go.) A request
// waits for a slot as long as its context allows, and one given up leaves
// the queue.
type heavySlots chan struct{}

// newHeavySlots makes n slots; n ≤ 0 is one fewer than GOMAXPROCS, at
// least one.
func newHeavySlots(n int) heavySlots {
	if n <= 0 {
		n = max(1, runtime.GOMAXPROCS(0)-1)
	}
	return make(heavySlots, n)
}

// inHeavySlot runs h in a slot.
func (s *Server) inHeavySlot(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case s.heavy <- struct{}{}:
		case <-r.Context().Done():
			s.writeError(w, r, r.Context().Err())
			return
		}
		defer func() { <-s.heavy }()
		h(w, r)
	}
}
