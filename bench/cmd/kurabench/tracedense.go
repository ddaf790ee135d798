package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kura-memory/kura/internal/kura"
)

// The trace_dense phase: what one writer's densest lineage costs the others
// (issue 38, H1). denseNotes notes go in through two batch requests, each
// derived from the kura.MaxDerivedFrom notes before it; a depth-10 trace of
// the last one walks every edge of the graph unless the walk is bounded.
const (
	denseNotes      = 300
	denseDepth      = 10
	denseTraces     = 30   // timed traces, one at a time
	denseInfos      = 3000 // /v1/info requests in each of the two windows
	denseTracers    = 4    // concurrent tracing clients in the second window
	denseCPUTarget  = 50.0 // ms of kurad's CPU for one trace
	denseInfoFactor = 2.0  // /v1/info p99 under the traces ≤ this × alone (or denseInfoFloor ms)
	denseInfoFloor  = 5.0
)

func (b *bench) traceDensePhase(ctx context.Context) (*PhaseResult, error) {
	res := &PhaseResult{
		Title: fmt.Sprintf("GET .../provenance/{ref}?depth=%d on one writer's densest lineage (%d notes, each derived from the %d before it); /v1/info while %d clients trace",
			denseDepth, denseNotes, kura.MaxDerivedFrom, denseTracers),
		Metric:    "ms",
		LatencyOf: "one request, one client: the trace (op trace), /v1/info alone (op info) and while the tracing clients run (op info_under_traces)",
		DataDir:   "fresh kurad data dir, the notes written through the API in two batch requests",
		Params:    map[string]any{"notes": denseNotes, "depth": denseDepth, "traces": denseTraces, "infos": denseInfos, "tracers": denseTracers},
	}
	k, err := b.startKurad(ctx, "tracedense")
	if err != nil {
		return res, err
	}
	defer b.stopKurad(k, res)
	edges := 0
	for part := range 2 {
		var sb strings.Builder
		sb.WriteString(`{"nodes":[`)
		for i := part * denseNotes / 2; i < (part+1)*denseNotes/2; i++ {
			if i > part*denseNotes/2 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, `{"kind":"note","id":"n%d","summary":"note %d","derived_from":[`, i, i)
			for j := max(0, i-kura.MaxDerivedFrom); j < i; j++ {
				if j > max(0, i-kura.MaxDerivedFrom) {
					sb.WriteByte(',')
				}
				fmt.Fprintf(&sb, `"note:n%d"`, j)
				edges++
			}
			sb.WriteString("]}")
		}
		sb.WriteString("]}")
		if st, rb, err := b.post(ctx, k.base+"/v1/scopes/dense/memory/nodes/batch", []byte(sb.String()), false); err != nil || st != http.StatusCreated {
			return res, fmt.Errorf("dense lineage: %v", cmpErr(err, httpError("POST nodes/batch", st, rb)))
		}
	}
	res.Params["edges"] = edges
	traceURL := fmt.Sprintf("%s/v1/scopes/dense/provenance/note:n%d?depth=%d", k.base, denseNotes-1, denseDepth)
	infoURL := k.base + "/v1/info"
	get := func(u string) func(int) (string, string, []byte) {
		return func(int) (string, string, []byte) { return http.MethodGet, u, nil }
	}
	checkTrace := func(_ int, body []byte) error {
		var t kura.Trace
		if err := json.Unmarshal(body, &t); err != nil {
			return err
		}
		if t.Backward == nil || len(t.Backward.Sources) == 0 {
			return fmt.Errorf("no sources in the trace of n%d", denseNotes-1)
		}
		return nil
	}
	if l, err := b.latencyLoop(ctx, k, 5, get(traceURL), checkTrace); warmErr(l, err) != nil {
		return res, fmt.Errorf("warm-up traces: %w", warmErr(l, err))
	}
	var all []time.Duration
	l, err := b.latencyLoop(ctx, k, denseTraces, get(traceURL), checkTrace)
	if l != nil {
		res.Runs = append(res.Runs, l.run("trace"))
		all = append(all, l.lat...)
		res.Params["kurad_cpu_ms_per_trace"] = round(l.cpu.KuradSeconds * 1000 / float64(max(1, len(l.lat))))
		res.Params["answer_bytes"] = medianInt(l.sizes)
	}
	if err != nil {
		return res, err
	}
	if l, err = b.latencyLoop(ctx, k, denseInfos, get(infoURL), nil); l != nil {
		res.Runs = append(res.Runs, l.run("info"))
	}
	if err != nil {
		return res, err
	}
	// The second window: the tracing clients loop until the window ends.
	tctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var traced atomic.Int64
	for range denseTracers {
		wg.Go(func() {
			for tctx.Err() == nil {
				if st, _, err := b.do(tctx, http.MethodGet, traceURL, nil); err == nil && st == http.StatusOK {
					traced.Add(1)
				}
			}
		})
	}
	l, err = b.latencyLoop(ctx, k, denseInfos, get(infoURL), nil)
	stop()
	wg.Wait()
	if l != nil {
		res.Runs = append(res.Runs, l.run("info_under_traces"))
		res.Params["traces_during_info_window"] = traced.Load()
		res.Params["info_window_s"] = round(l.elapsed.Seconds())
	}
	res.summarizeOps(all, nil)
	if err != nil {
		return res, err
	}
	return res, res.runErrors()
}

// cmpErr is err, or else alt.
func cmpErr(err, alt error) error {
	if err != nil {
		return err
	}
	return alt
}

// judgeTraceDense: one trace within denseCPUTarget ms of kurad's CPU, and
// /v1/info's p99 while the tracing clients run within denseInfoFactor
// times its p99 alone (or denseInfoFloor ms, below which two cores shared
// by five busy clients cannot promise a ratio).
func judgeTraceDense(b *bench) {
	r := b.result("trace_dense")
	if r == nil || r.Error != "" {
		return
	}
	if cpu, ok := r.Params["kurad_cpu_ms_per_trace"].(float64); ok {
		w := strconv.FormatFloat(denseCPUTarget, 'f', -1, 64)
		r.Targets = append(r.Targets, Target{Short: "cpu≤" + w + "ms", Text: "kurad CPU per dense trace ≤ " + w + " ms",
			Op: "<=", Want: denseCPUTarget, Got: cpu, Pass: cpu <= denseCPUTarget})
	}
	alone, ok1 := r.Ops["info"]
	busy, ok2 := r.Ops["info_under_traces"]
	if ok1 && ok2 {
		want := round(max(denseInfoFactor*alone.P99ms, denseInfoFloor))
		w := strconv.FormatFloat(want, 'f', -1, 64)
		r.Targets = append(r.Targets, Target{Short: "info p99≤" + w + "ms",
			Text: fmt.Sprintf("/v1/info p99 while %d clients trace ≤ max(%g × alone, %g ms) = %s ms", denseTracers, denseInfoFactor, denseInfoFloor, w),
			Op:   "<=", Want: want, Got: busy.P99ms, Pass: busy.P99ms <= want})
	}
}
