package api

import (
	"net/http"

	"github.com/kura-memory/kura/internal/admission"
	"github.com/kura-memory/kura/internal/kura"
	"github.com/prometheus/client_golang/prometheus"
)

// A compile holds its items several times over while it answers (the
// items, their JSON for the digest and its canonical form, the answer),
// up to budget_bytes each: four concurrent previews at the largest
// budget took kurad past its soft memory limit. So a preview, a compile
// and a turn opened with memory reserve their budget (the request's, or
// the default) in a budget of their own, the weighted semaphore the
// request bodies use, before the store compiles, and hold it until the
// answer is written. Without room in time the request gets 503
// unavailable with Retry-After, and nothing was compiled or written.

// reserveCompile reserves budget bytes of items (capped at the budget's
// size, so the largest request can always run alone) and returns their
// release; the caller defers it.
func (s *Server) reserveCompile(r *http.Request, req *admission.Request) (release func(), err error) {
	if s.compiles == nil {
		return func() {}, nil
	}
	n := min(max(int64(req.Limits().BudgetBytes), 1), s.compiles.size)
	if !s.compiles.acquire(r.Context(), n) {
		if err := r.Context().Err(); err != nil {
			return nil, err // the client is gone: nobody reads an answer
		}
		return nil, kura.Errorf(kura.EUnavailable, "kurad is compiling as much context as its memory allows (%d bytes of items in flight); retry shortly", s.compiles.size).
			WithDetail("retry_after_seconds", 1)
	}
	return func() { s.compiles.release(n) }, nil
}

// registerCompileMetrics exports the compile budget.
func registerCompileMetrics(reg *prometheus.Registry, b *bodyBudget) {
	if b == nil {
		return
	}
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kura_context_inflight_bytes", Help: "Bytes of items (budget_bytes) reserved by the context previews, compiles and turn memory being served."},
			func() float64 { return float64(b.held.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kura_context_inflight_limit_bytes", Help: "The budget of context items in flight (max-inflight-context-bytes)."},
			func() float64 { return float64(b.size) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kura_context_inflight_waiting", Help: "Context requests waiting for room in the context budget."},
			func() float64 { return float64(b.waiting.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "kura_context_budget_refused_total", Help: "Context requests answered 503 because the context budget had no room in time."},
			func() float64 { return float64(b.refused.Load()) }),
	)
}
