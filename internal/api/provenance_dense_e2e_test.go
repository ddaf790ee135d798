package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/provenance"
)

// denseLineage writes n notes into scope in two batch requests, each
// derived from the (up to) kura.MaxDerivedFrom notes before it: the
// densest lineage a writer can make, n·256 edges for 300 notes in two
// requests.
func denseLineage(c *apiClient, scope string, n int) {
	c.tb.Helper()
	half := n / 2
	for part := range 2 {
		var nodes []string
		for i := part * half; i < (part+1)*half; i++ {
			var from []string
			for j := max(0, i-kura.MaxDerivedFrom); j < i; j++ {
				from = append(from, fmt.Sprintf(`"note:n%d"`, j))
			}
			nodes = append(nodes, fmt.Sprintf(`{"kind":"note","id":"n%d","summary":"note %d","derived_from":[%s]}`,
				i, i, strings.Join(from, ",")))
		}
		c.mustPost("/v1/scopes/"+scope+"/memory/nodes/batch", `{"nodes":[`+strings.Join(nodes, ",")+`]}`, 201)
	}
}

// processCPU is the CPU time this process (the test and its in-process
// kurad) has used.
func processCPU(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// countItems counts the items of a lineage tree.
func countItems(ls []kura.Lineage) int {
	n := len(ls)
	for _, l := range ls {
		n += countItems(l.Sources) + countItems(l.Derived)
	}
	return n
}

// TestProvenance_DenseGraphTraceIsBounded: a writer's dense lineage (300
// notes, two requests) cannot make one trace cost seconds, nor four of
// them stop other reads. A trace walks each vertex once within a budget of
// edges and says truncated past it; provenance walks take at most half of
// the read pool, so /v1/info keeps answering while they run. Before, the
// walk expanded a vertex once per parent path: ~6 s of CPU for this trace
// (built without the race detector), and four concurrent ones held every
// read connection for as long.
func TestProvenance_DenseGraphTraceIsBounded(t *testing.T) {
	// Not parallel: it times requests against each other.
	c, _ := newDaemon(t)
	denseLineage(c, "dense", 300)
	trace := "/v1/scopes/dense/provenance/note:n299?depth=10"

	t.Run("OneTrace", func(t *testing.T) {
		cpu, start := processCPU(t), time.Now()
		tr := decode[kura.Trace](t, c.mustGet(trace))
		cpu, took := processCPU(t)-cpu, time.Since(start)
		// ~40 ms of kurad's CPU without the race detector, some hundreds
		// with it; the walk it replaced took ~6 s without. CPU rather than
		// time: the test binary runs beside others.
		if cpu > 3*time.Second || took > 30*time.Second {
			t.Errorf("the trace took %v of CPU in %v, want well under 3 s", cpu, took)
		}
		t.Logf("one trace: %v of CPU in %v", cpu, took)
		if !tr.Truncated || tr.Backward == nil {
			t.Fatalf("got truncated %v, backward %v; want a truncated backward tree", tr.Truncated, tr.Backward != nil)
		}
		// The tree is depth first: the first sources' own lineage fills
		// the cap of items before the root's list is done.
		src := tr.Backward.Sources
		seen := map[string]bool{}
		for _, s := range src {
			var i int
			if _, err := fmt.Sscanf(s.Ref, "note:n%d", &i); err != nil || i < 299-kura.MaxDerivedFrom || i > 298 || s.Depth != 1 || seen[s.Ref] {
				t.Fatalf("direct source %s at depth %d: want each of n43..n298 once, at depth 1", s.Ref, s.Depth)
			}
			seen[s.Ref] = true
		}
		if n := countItems(src); n == 0 || n > provenance.MaxTraceItems {
			t.Errorf("got %d items, want 1 to %d", n, provenance.MaxTraceItems)
		}
	})

	t.Run("CheapReadsAnswerMeanwhile", func(t *testing.T) {
		ctx, stop := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		var traced sync.Map
		for i := range 4 {
			wg.Go(func() {
				for n := 0; ctx.Err() == nil; n++ {
					req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.base+trace, nil)
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					traced.Store(i, n+1)
				}
			})
		}
		var took []time.Duration
		for range 40 {
			start := time.Now()
			c.mustGet("/v1/info")
			took = append(took, time.Since(start))
		}
		stop()
		wg.Wait()
		slices.Sort(took)
		// Without room kept in the pool, /v1/info waited for a trace to
		// finish: seconds each.
		if worst := took[len(took)-1]; worst > time.Second {
			t.Errorf("/v1/info took up to %v while 4 traces ran (median %v), want under 1 s", worst, took[len(took)/2])
		}
		done := 0
		traced.Range(func(_, n any) bool { done += n.(int); return true })
		t.Logf("/v1/info median %v, worst %v, while 4 clients traced %d times", took[len(took)/2], took[len(took)-1], done)
	})

	t.Run("GivenUpTracesLetGo", func(t *testing.T) {
		// Clients that give up at once: each request's walk, or its wait
		// for a slot, ends with it. The slots are handed out in turn, so
		// the trace sent after them runs after what is left of them: all
		// of it costs a small multiple of one trace, not nine traces.
		one := processCPU(t)
		c.mustGet(trace)
		one = processCPU(t) - one
		cpu := processCPU(t)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
				defer cancel()
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.base+trace, nil)
				if resp, err := http.DefaultClient.Do(req); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		}
		wg.Wait()
		var tr kura.Trace
		if err := json.Unmarshal(c.mustGet(trace), &tr); err != nil || !tr.Truncated {
			t.Fatalf("trace after the given-up ones: %v, truncated %v", err, tr.Truncated)
		}
		cpu = processCPU(t) - cpu
		if cpu > 4*one {
			t.Errorf("8 given-up traces and a whole one took %v of CPU, one alone %v: want under 4 times one", cpu, one)
		}
		t.Logf("8 given-up traces and a whole one: %v of CPU; one alone %v", cpu, one)
	})
}
