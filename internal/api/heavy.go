package api

import (
	"net/http"
	"runtime"
	"sync"
)

// heavySlots keeps a processor free for cheap requests. A route whose cost
// grows with the data it walks (heavy in its declaration: the provenance
// reads, context preview and compile) does its work, answer encoding
// included, in one of fewer slots than the Go scheduler has processors:
// however many such requests arrive at once, the reads that answer in
// microseconds (/v1/info, a record, a node) find a processor instead of
// waiting behind them for their time slices. (The store keeps room in its
// read pool the same way: heavyread.go.) A request waits for a slot as long
// as its context allows, and one given up leaves the queue.
type heavySlots chan struct{}

// newHeavySlots makes n slots; n ≤ 0 is one fewer than GOMAXPROCS, at
// least one.
func newHeavySlots(n int) heavySlots {
	if n <= 0 {
		n = max(1, runtime.GOMAXPROCS(0)-1)
	}
	return make(heavySlots, n)
}

// inHeavySlot runs h in a slot, until h starts its answer: the slot bounds
// the work, not the network. A client that reads its answer slowly (or
// never) holds its connection, never a slot the next heavy request needs.
func (s *Server) inHeavySlot(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case s.heavy <- struct{}{}:
		case <-r.Context().Done():
			s.writeError(w, r, r.Context().Err())
			return
		}
		hw := &heavyWriter{ResponseWriter: w, release: func() { <-s.heavy }}
		defer hw.done()
		h(hw, r)
	}
}

// heavyWriter gives the slot back at the answer's first byte (or its
// header), or when the handler returns without one.
type heavyWriter struct {
	http.ResponseWriter
	release func()
	once    sync.Once
}

func (w *heavyWriter) done() { w.once.Do(w.release) }

func (w *heavyWriter) WriteHeader(status int) {
	w.done()
	w.ResponseWriter.WriteHeader(status)
}

func (w *heavyWriter) Write(b []byte) (int, error) {
	w.done()
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (deadlines,
// flushes).
func (w *heavyWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
