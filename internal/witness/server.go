package witness

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func (w *Witness) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/witness/checkpoint", w.handleCheckpoint)
	mux.HandleFunc("GET /v1/witness/checkpoints", w.handleCheckpoints)
	mux.HandleFunc("GET /v1/witness/info", w.handleInfo)
	mux.HandleFunc("GET /healthz", func(rw http.ResponseWriter, _ *http.Request) {
		writeJSON(rw, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(w.metrics.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/", func(rw http.ResponseWriter, r *http.Request) {
		writeError(rw, http.StatusNotFound, "not_found", "no such path: "+r.URL.Path)
	})
	// Everything the witness serves is read-only: any other method gets
	// kurad's error body, not the mux's plain-text 405.
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			rw.Header().Set("Allow", "GET, HEAD")
			writeError(rw, http.StatusMethodNotAllowed, "method_not_allowed", r.Method+" is not served; the witness only answers GET")
			return
		}
		mux.ServeHTTP(rw, r)
	})
}

func (w *Witness) handleCheckpoint(rw http.ResponseWriter, r *http.Request) {
	origin := r.URL.Query().Get("origin")
	if origin == "" {
		writeError(rw, http.StatusBadRequest, "invalid_argument", "origin is required")
		return
	}
	st, ok := w.checkpoint(origin)
	if !ok {
		writeError(rw, http.StatusNotFound, "not_found", "this witness has cosigned nothing for origin "+origin)
		return
	}
	rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
	rw.Header().Set("Cache-Control", "no-store")
	rw.Write([]byte(st.Checkpoint))
}

type checkpointsBody struct {
	Witness     string           `json:"witness"`
	VKey        string           `json:"vkey"`
	Checkpoints []checkpointItem `json:"checkpoints"`
}

type checkpointItem struct {
	Origin     string `json:"origin"`
	Size       uint64 `json:"size"`
	Checkpoint string `json:"checkpoint"`
}

func (w *Witness) handleCheckpoints(rw http.ResponseWriter, _ *http.Request) {
	body := checkpointsBody{Witness: w.name, VKey: w.vkey, Checkpoints: []checkpointItem{}}
	w.mu.RLock()
	for _, st := range w.states {
		body.Checkpoints = append(body.Checkpoints, checkpointItem{Origin: st.Origin, Size: st.Size, Checkpoint: st.Checkpoint})
	}
	w.mu.RUnlock()
	slices.SortFunc(body.Checkpoints, func(a, b checkpointItem) int { return strings.Compare(a.Origin, b.Origin) })
	writeJSON(rw, http.StatusOK, body)
}

func (w *Witness) handleInfo(rw http.ResponseWriter, _ *http.Request) {
	writeJSON(rw, http.StatusOK, map[string]string{"name": w.name, "vkey": w.vkey})
}

func writeJSON(rw http.ResponseWriter, status int, v any) {
	rw.Header().Set("Content-Type", "application/json")
	rw.Header().Set("Cache-Control", "no-store")
	rw.WriteHeader(status)
	json.NewEncoder(rw).Encode(v)
}

// writeError answers with kurad's error body, so one client reads both.
func writeError(rw http.ResponseWriter, status int, code, msg string) {
	writeJSON(rw, status, map[string]any{"error": map[string]any{"code": code, "message": msg, "details": map[string]any{}}})
}

// Handler is the witness's HTTP API, for serving it elsewhere than Run does
// (tests mount it on their own listener).
func (w *Witness) Handler() http.Handler { return w.handler() }
