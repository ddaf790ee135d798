package main_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/testwait"
)

// procStatus reads a kB line of /proc/<pid>/status (VmRSS, VmHWM), in bytes.
func procStatus(t *testing.T, pid int, key string) int64 {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key+":"); ok {
			n, err := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n << 10
		}
	}
	t.Fatalf("no %s in /proc/%d/status", key, pid)
	return 0
}

// procCPU is the process's user and system time so far (/proc/<pid>/stat,
// in clock ticks of 10 ms).
func procCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	user, err1 := strconv.ParseInt(f[11], 10, 64)
	sys, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("/proc/%d/stat: %q", pid, s)
	}
	return time.Duration(user+sys) * 10 * time.Millisecond
}

// putLargeNodes writes n nodes of 16 KiB summaries (the most a node may
// hold) into scope, 200 a batch (3.2 MB, under the 4 MiB body limit): a
// quarter each use_now, inspect_before_use, rehydrate and do_not_use.
func putLargeNodes(t *testing.T, base, scope string, n int) {
	t.Helper()
	lifecycles := []string{`"lifecycle":"active","authority":"trusted"`, `"lifecycle":"candidate"`, `"lifecycle":"archived"`, `"lifecycle":"retired"`}
	for start := 0; start < n; start += 200 {
		var b strings.Builder
		b.WriteString(`{"nodes":[`)
		for i := start; i < min(n, start+200); i++ {
			if i > start {
				b.WriteByte(',')
			}
			summary := strings.Repeat(fmt.Sprintf("payments node %06d retry budget ", i), 16<<10/32)[:16<<10]
			fmt.Fprintf(&b, `{"kind":"fact","id":"n%06d","title":"payments node %d","summary":%q,%s}`, i, i, summary, lifecycles[i%4])
		}
		b.WriteString(`]}`)
		if st, body := postJSON(t, base+"/v1/scopes/"+scope+"/memory/nodes/batch", b.String()); st != 201 {
			t.Fatalf("nodes batch: %d %s", st, body)
		}
	}
}

func postJSON(t *testing.T, url, body string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, raw
}

var gcLine = regexp.MustCompile(`(\d+)->(\d+)->(\d+) MB`)

// liveHeap is the largest heap the garbage collector found live (MB), from
// the GODEBUG=gctrace=1 lines of a kurad's log.
func liveHeap(t *testing.T, log string) int {
	t.Helper()
	most := -1
	for _, m := range gcLine.FindAllStringSubmatch(log, -1) {
		n, _ := strconv.Atoi(m[3])
		most = max(most, n)
	}
	return most
}

// contextAnswer is what the test reads of a preview or compile answer.
type contextAnswer struct {
	BundleID     string                       `json:"bundle_id"`
	Buckets      map[string][]json.RawMessage `json:"buckets"`
	Trace        []json.RawMessage            `json:"trace"`
	Omitted      map[string]int               `json:"omitted"`
	TraceOmitted int                          `json:"trace_omitted"`
	Bytes        int                          `json:"bytes"`
	Warnings     []string                     `json:"warnings"`
}

// concurrently sends the same request n times at once and returns the
// statuses.
func concurrently(t *testing.T, url, body string, n int) []int {
	t.Helper()
	status := make([]int, n)
	var wg sync.WaitGroup
	for i := range status {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Post(url, "application/json", strings.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			status[i] = resp.StatusCode
		}()
	}
	wg.Wait()
	return status
}

// TestKurad_ContextAnswersAndMemoryBounded: a scope of 2,000 nodes of 16
// KiB summaries (32 MB of text) against the real kurad binary, with its
// production memory settings (GOGC 300, a 256 MiB soft limit). A preview
// that names no bound once answered every summary (33 MB) and held it
// several times over; four at once took kurad to 870 MiB. Now:
//   - the answer of a request without bounds keeps the default budget
//     (1 MiB of items), counts the rest in omitted and lists every node
//     in the trace; compile's stored bundle is its answer, byte for byte;
//   - four concurrent previews, at the default and at the largest
//     budget, as of now and as of a past time with a query, keep kurad's
//     peak resident memory well under its soft limit, and four compiles
//     at the largest budget under it;
//   - the items of the compiles in flight are bounded: a preview that
//     holds the largest budget (its client reads nothing) makes the next
//     one wait (5 s), then 503 with Retry-After, and it passes again once
//     the first is done.
func TestKurad_ContextAnswersAndMemoryBounded(t *testing.T) {
	t.Parallel()
	const nodes = 2000
	dir := t.TempDir()
	p := startKurad(t, dir)
	putLargeNodes(t, p.Base, "big", nodes)
	past := time.Now().UTC().Format(time.RFC3339Nano)
	// One more version of a node, so that as_of reads versions.
	if st, body := postJSON(t, p.Base+"/v1/scopes/big/memory/nodes", `{"kind":"fact","id":"n000000","summary":"revised"}`); st != 200 && st != 201 {
		t.Fatalf("revise: %d %s", st, body)
	}
	p.Stop(t)

	// A fresh process: what it holds is what the requests below made it hold.
	p = startKurad(t, dir)
	pid := p.Cmd.Process.Pid
	idle := procStatus(t, pid, "VmRSS")
	url := p.Base + "/v1/scopes/big/context/"

	t.Run("DefaultBounds", func(t *testing.T) {
		cpu := procCPU(t, pid)
		st, raw := postJSON(t, url+"preview", `{}`)
		t.Logf("preview {}: %d bytes, %s of CPU, peak RSS %d MiB (idle %d MiB)", len(raw), procCPU(t, pid)-cpu, procStatus(t, pid, "VmHWM")>>20, idle>>20)
		var a contextAnswer
		if st != 200 || json.Unmarshal(raw, &a) != nil {
			t.Fatalf("preview: %d %.200s", st, raw)
		}
		if len(raw) > 2<<20 || a.Bytes > 1<<20 {
			t.Fatalf("preview answered %d bytes, %d of items; want at most 1 MiB of items (the default budget) and 2 MiB in all", len(raw), a.Bytes)
		}
		kept := 0
		for _, b := range []string{"use_now", "inspect_before_use", "rehydrate", "do_not_use"} {
			kept += len(a.Buckets[b])
			if len(a.Buckets[b])+a.Omitted[b] != nodes/4 {
				t.Fatalf("%s: %d kept + %d omitted, want the %d nodes decided there", b, len(a.Buckets[b]), a.Omitted[b], nodes/4)
			}
		}
		if kept == 0 || len(a.Trace) != nodes || a.TraceOmitted != 0 || !strings.Contains(strings.Join(a.Warnings, "|"), "budget: 1048576 bytes reached") {
			t.Fatalf("%d items kept, trace of %d (%d omitted), warnings %q; want some items, every node traced and the budget warning", kept, len(a.Trace), a.TraceOmitted, a.Warnings)
		}
		st, compiled := postJSON(t, url+"compile", `{"max_trace":10}`)
		var c contextAnswer
		if st != 200 || json.Unmarshal(compiled, &c) != nil || len(c.Trace) != 10 || c.TraceOmitted != nodes-10 {
			t.Fatalf("compile max_trace 10: %d, trace %d, trace_omitted %d", st, len(c.Trace), c.TraceOmitted)
		}
		resp, err := http.Get(url + "bundles/" + c.BundleID)
		if err != nil {
			t.Fatal(err)
		}
		stored, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !bytes.Equal(bytes.TrimSpace(stored), bytes.TrimSpace(compiled)) {
			t.Fatalf("GET bundle: %d bytes, want the %d bytes compile answered", len(stored), len(compiled))
		}
	})

	p.Stop(t)

	// Each load in a fresh process: its peak is what that load made it
	// hold. The peak resident memory follows the collector's pacing too
	// (GOGC 300 lets garbage grow to the soft limit), so the heap the
	// collector found live (gctrace) is checked as well.
	for _, tc := range []struct {
		name, op, body string
		n              int   // requests at once
		live, rss      int64 // MB of live heap, MiB of peak resident memory allowed
	}{
		{"PreviewsAtDefaults", "preview", `{}`, 4, 32, 192},
		{"PreviewsAtLargestBudget", "preview", `{"budget_bytes":16777216,"max_per_bucket":100000}`, 4, 64, 256},
		{"PastPreviews", "preview", `{"as_of":"` + past + `"}`, 4, 32, 256},
		// Ranking memory as of a past time reads every node's text (about
		// four seconds of CPU here): one request.
		{"PastPreviewWithQuery", "preview", `{"query":"payments retry","as_of":"` + past + `"}`, 1, 32, 192},
		// Compiles hold their whole answer (it is stored before it is
		// sent), 17 MB at the largest budget: not far past the soft limit.
		{"CompilesAtLargestBudget", "compile", `{"budget_bytes":16777216,"max_per_bucket":100000}`, 4, 96, 320},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startKuradEnv(t, dir, []string{"GODEBUG=gctrace=1"})
			defer p.Stop(t)
			pid := p.Cmd.Process.Pid
			cpu := procCPU(t, pid)
			status := concurrently(t, p.Base+"/v1/scopes/big/context/"+tc.op, tc.body, tc.n)
			peak, live := procStatus(t, pid, "VmHWM"), liveHeap(t, p.Log.String())
			t.Logf("%d %ss %s: statuses %v, %s of CPU, peak RSS %d MiB, live heap at most %d MB", tc.n, tc.op, tc.body, status, procCPU(t, pid)-cpu, peak>>20, live)
			for _, st := range status {
				if st != 200 {
					t.Fatalf("statuses %v, want 200: four fit in the context budget's wait", status)
				}
			}
			// No collection at all (-1) would mean the heap never reached
			// the collector's first goal.
			if int64(live) > tc.live || peak > tc.rss<<20 {
				t.Fatalf("live heap %d MB, peak resident memory %d MiB; want at most %d MB and %d MiB (the soft limit is 256 MiB)", live, peak>>20, tc.live, tc.rss)
			}
		})
	}

	p = startKurad(t, dir)
	url = p.Base + "/v1/scopes/big/context/"
	t.Run("BudgetInFlight", func(t *testing.T) {
		gauge := func(name string) float64 {
			resp, err := http.Get(p.Base + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
			for sc.Scan() {
				if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
					f, _ := strconv.ParseFloat(v, 64)
					return f
				}
			}
			return -1
		}
		if got := gauge("kura_context_inflight_limit_bytes"); got != 16<<20 {
			t.Fatalf("kura_context_inflight_limit_bytes %v, want 16 MiB (a sixteenth of 256 MiB)", got)
		}
		// A preview at the largest budget whose client reads nothing: its
		// 17 MB answer fills the connection's buffers and it stays in
		// flight, holding the whole budget.
		conn, err := net.Dial("tcp", strings.TrimPrefix(p.Base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		body := `{"budget_bytes":16777216,"max_per_bucket":100000}`
		fmt.Fprintf(conn, "POST /v1/scopes/big/context/preview HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
			strings.TrimPrefix(p.Base, "http://"), len(body), body)
		testwait.For(t, 20*time.Second, "the held preview's reservation", func() bool { return gauge("kura_context_inflight_bytes") == 16<<20 })
		// It waits --max-inflight-body-wait (5 s) for room, then is refused.
		// (It does not wait for the held preview's heavy slot: that slot is
		// given back at the answer's first byte, not when the client has
		// read it all; when it was not, this preview waited the held one's
		// write timeout, 120 s.)
		resp, err := http.Post(url+"preview", "application/json", strings.NewReader(`{"budget_bytes":1000}`))
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(raw), `"code":"unavailable"`) {
			t.Fatalf("a preview while the budget is held: %d (Retry-After %q) %.300s, want 503 unavailable with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"), raw)
		}
		conn.Close() // the held preview ends: its client is gone
		testwait.For(t, 20*time.Second, "the reservation to be released", func() bool { return gauge("kura_context_inflight_bytes") == 0 })
		if st, raw := postJSON(t, url+"preview", `{"budget_bytes":1000}`); st != 200 {
			t.Fatalf("a preview once the budget is free: %d %.300s", st, raw)
		}
	})
}
