// Command kurasoak is Kura's soak run (make soak): it starts the real kurad
// on a fresh data directory on loopback, measures the most mixed load it
// takes for a few seconds, then holds 70% of that for the run's duration,
// sampling kurad's memory, latency, goroutines, file descriptors, WAL size
// and outbox lag. It fails when memory grows, the WAL is unbounded, latency
// drifts or the correct client sees a single error, and writes its figures
// under the "soak" key of bench/results.json (other keys are kept).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

type config struct {
	duration, sample, measure time.Duration
	share                     float64
	workers                   int
	out, kurad                string
	keep                      bool
}

func main() {
	var c config
	def := 10 * time.Minute
	if v := os.Getenv("SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			fmt.Fprintf(os.Stderr, "kurasoak: SOAK_DURATION %q: %v\n", v, err)
			os.Exit(2)
		}
		def = d
	}
	flag.DurationVar(&c.duration, "duration", def, "how long the sustained load runs (env SOAK_DURATION)")
	flag.DurationVar(&c.sample, "sample", 10*time.Second, "sampling interval")
	flag.DurationVar(&c.measure, "measure", 5*time.Second, "how long the maximum rate is measured first")
	flag.Float64Var(&c.share, "share", 0.7, "share of the measured maximum held during the soak")
	flag.IntVar(&c.workers, "workers", 8, "concurrent clients")
	flag.StringVar(&c.out, "out", "", "results file to merge a \"soak\" key into (default bench/results.json in the module; \"-\": none)")
	flag.StringVar(&c.kurad, "kurad", "", "kurad binary (default: build ./cmd/kurad)")
	flag.BoolVar(&c.keep, "keep", false, "keep the data directory and kurad's log")
	flag.Parse()
	if c.duration < 3*c.sample {
		fmt.Fprintf(os.Stderr, "kurasoak: a duration of %s gives fewer than 3 samples of %s\n", c.duration, c.sample)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code, err := run(ctx, c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kurasoak:", err)
	}
	os.Exit(code)
}

// sample is one window of the soak.
type sample struct {
	AtS        float64 `json:"at_s"`
	RSSKiB     int64   `json:"rss_kib"`
	P50MS      float64 `json:"p50_ms"`
	P99MS      float64 `json:"p99_ms"`
	Requests   int     `json:"requests"`
	Errors     int     `json:"errors"`
	Goroutines int64   `json:"goroutines"`
	OpenFDs    int64   `json:"open_fds"`
	WALBytes   int64   `json:"wal_bytes"`
	OutboxLag  int64   `json:"outbox_lag"`
	LastSeq    int64   `json:"last_event_seq"`
}

// Result is what goes under "soak" in bench/results.json.
type Result struct {
	Timestamp       string   `json:"timestamp"`
	DurationS       float64  `json:"duration_s"`
	MaxOpsPerS      float64  `json:"max_ops_per_s"`
	TargetOpsPerS   float64  `json:"target_ops_per_s"`
	AchievedOpsPerS float64  `json:"achieved_ops_per_s"`
	Requests        int      `json:"requests"`
	Errors          int      `json:"errors"`
	RSSFirstKiB     int64    `json:"rss_first_third_median_kib"`
	RSSLastKiB      int64    `json:"rss_last_third_median_kib"`
	RSSGrowthPct    float64  `json:"rss_growth_pct"`
	P99FirstMS      float64  `json:"p99_first_third_median_ms"`
	P99LastMS       float64  `json:"p99_last_third_median_ms"`
	WALMaxBytes     int64    `json:"wal_max_bytes"`
	OutboxLagMax    int64    `json:"outbox_lag_max"`
	GoroutinesMax   int64    `json:"goroutines_max"`
	OpenFDsMax      int64    `json:"open_fds_max"`
	Pass            bool     `json:"pass"`
	Failures        []string `json:"failures"`
	Samples         []sample `json:"samples"`
}

// Bounds the soak judges against.
const (
	rssGrowthMax = 0.10     // last third's median RSS over the first third's
	walMax       = 64 << 20 // the checkpointer keeps the WAL far below this
	p99DriftMax  = 2.0      // last third's median p99 over the first third's
	p99Slack     = 5.0      // ms added before the drift comparison (tiny p99s jitter)
)

func run(ctx context.Context, c config) (int, error) {
	root, err := moduleRoot()
	if err != nil {
		return 1, err
	}
	tmp, err := os.MkdirTemp("", "kurasoak")
	if err != nil {
		return 1, err
	}
	if c.keep {
		fmt.Fprintln(os.Stderr, "keeping", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	bin := c.kurad
	if bin == "" {
		bin = filepath.Join(tmp, "kurad")
		fmt.Fprintln(os.Stderr, "== building ./cmd/kurad")
		cmd := exec.Command("go", "build", "-o", bin, "./cmd/kurad")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return 1, fmt.Errorf("go build: %w\n%s", err, out)
		}
	}
	dataDir := filepath.Join(tmp, "data")
	logf, err := os.Create(filepath.Join(tmp, "kurad.log"))
	if err != nil {
		return 1, err
	}
	defer logf.Close()
	cmd := exec.Command(bin, "--data-dir", dataDir, "--http-addr", "127.0.0.1:0", "--nats-addr", "127.0.0.1:0", "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return 1, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
		}
	}()
	base, err := waitReady(dataDir, exited)
	if err != nil {
		return 1, err
	}
	l := &loader{base: base, hc: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 2 * c.workers}}}
	if err := l.setup(c.workers); err != nil {
		return 1, err
	}

	fmt.Fprintf(os.Stderr, "== measuring the maximum mixed rate for %s (%d clients, closed loop)\n", c.measure, c.workers)
	maxRate := l.closedLoop(ctx, c.workers, c.measure)
	if maxRate <= 0 {
		return 1, errors.New("no operation completed while measuring the maximum")
	}
	if n := l.errors.Swap(0); n > 0 {
		return 1, fmt.Errorf("%d errors while measuring the maximum: %s", n, l.firstErr.Load())
	}
	target := maxRate * c.share
	fmt.Fprintf(os.Stderr, "== max %.0f ops/s; holding %.0f ops/s (%.0f%%) for %s, a sample every %s\n", maxRate, target, c.share*100, c.duration, c.sample)

	res := &Result{Timestamp: time.Now().UTC().Format(time.RFC3339), MaxOpsPerS: maxRate, TargetOpsPerS: target}
	soakCtx, cancel := context.WithTimeout(ctx, c.duration)
	defer cancel()
	start := time.Now()
	go l.openLoop(soakCtx, c.workers*2, target)
	fmt.Printf("%7s %9s %8s %8s %8s %6s %6s %6s %10s %7s\n", "at", "rss_MiB", "p50_ms", "p99_ms", "reqs", "errs", "gor", "fds", "wal_KiB", "lag")
	t := time.NewTicker(c.sample)
	defer t.Stop()
	for soakCtx.Err() == nil {
		select {
		case <-soakCtx.Done():
		case <-t.C:
		}
		s, err := l.sampleNow(cmd.Process.Pid, dataDir)
		if err != nil {
			return 1, err
		}
		s.AtS = time.Since(start).Seconds()
		res.Samples = append(res.Samples, s)
		fmt.Printf("%6.0fs %9.1f %8.2f %8.2f %8d %6d %6d %6d %10d %7d\n", s.AtS, float64(s.RSSKiB)/1024, s.P50MS, s.P99MS, s.Requests, s.Errors, s.Goroutines, s.OpenFDs, s.WALBytes/1024, s.OutboxLag)
	}
	l.wg.Wait()
	if ctx.Err() != nil {
		return 1, errors.New("interrupted")
	}
	res.DurationS = time.Since(start).Seconds()
	judge(res)
	if res.Errors > 0 {
		res.Failures = append(res.Failures, fmt.Sprintf("the correct client saw %d errors; first: %s", res.Errors, l.firstErr.Load()))
		res.Pass = false
	}
	fmt.Printf("\nsoak %s at %.0f ops/s (max %.0f): %d requests, %d errors; RSS %.1f → %.1f MiB (%+.1f%%); p99 %.2f → %.2f ms; WAL max %.1f MiB; outbox lag max %d; goroutines max %d; fds max %d\n",
		time.Duration(res.DurationS*float64(time.Second)).Round(time.Second), res.AchievedOpsPerS, maxRate, res.Requests, res.Errors,
		float64(res.RSSFirstKiB)/1024, float64(res.RSSLastKiB)/1024, res.RSSGrowthPct, res.P99FirstMS, res.P99LastMS,
		float64(res.WALMaxBytes)/(1<<20), res.OutboxLagMax, res.GoroutinesMax, res.OpenFDsMax)
	for _, f := range res.Failures {
		fmt.Println("FAIL:", f)
	}
	if res.Pass {
		fmt.Println("PASS")
	}
	if c.out != "-" {
		out := c.out
		if out == "" {
			out = filepath.Join(root, "bench", "results.json")
		}
		if err := mergeResult(out, res); err != nil {
			return 1, err
		}
		fmt.Fprintln(os.Stderr, "wrote the soak key of", out)
	}
	if !res.Pass {
		return 1, nil
	}
	return 0, nil
}

// judge compares the first third of the samples with the last third; the
// first sample is warm-up (caches, pools and the heap filling).
func judge(r *Result) {
	s := r.Samples
	if len(s) > 3 {
		s = s[1:]
	}
	third := max(1, len(s)/3)
	first, last := s[:third], s[len(s)-third:]
	med := func(ss []sample, f func(sample) float64) float64 {
		v := make([]float64, len(ss))
		for i := range ss {
			v[i] = f(ss[i])
		}
		sort.Float64s(v)
		return v[len(v)/2]
	}
	rss := func(x sample) float64 { return float64(x.RSSKiB) }
	p99 := func(x sample) float64 { return x.P99MS }
	r.RSSFirstKiB, r.RSSLastKiB = int64(med(first, rss)), int64(med(last, rss))
	r.RSSGrowthPct = 100 * (float64(r.RSSLastKiB)/float64(r.RSSFirstKiB) - 1)
	r.P99FirstMS, r.P99LastMS = med(first, p99), med(last, p99)
	for _, x := range r.Samples {
		r.Requests += x.Requests
		r.Errors += x.Errors
		r.WALMaxBytes = max(r.WALMaxBytes, x.WALBytes)
		r.OutboxLagMax = max(r.OutboxLagMax, x.OutboxLag)
		r.GoroutinesMax = max(r.GoroutinesMax, x.Goroutines)
		r.OpenFDsMax = max(r.OpenFDsMax, x.OpenFDs)
	}
	r.AchievedOpsPerS = float64(r.Requests) / r.DurationS
	r.Failures = []string{}
	if r.RSSGrowthPct > rssGrowthMax*100 {
		r.Failures = append(r.Failures, fmt.Sprintf("RSS grew %.1f%% (limit %.0f%%)", r.RSSGrowthPct, rssGrowthMax*100))
	}
	if r.WALMaxBytes > walMax {
		r.Failures = append(r.Failures, fmt.Sprintf("the WAL reached %d bytes (limit %d)", r.WALMaxBytes, walMax))
	}
	if r.P99LastMS+p99Slack > p99DriftMax*(r.P99FirstMS+p99Slack) {
		r.Failures = append(r.Failures, fmt.Sprintf("p99 drifted from %.2f to %.2f ms", r.P99FirstMS, r.P99LastMS))
	}
	r.Pass = len(r.Failures) == 0
}

// loader is the correct client: a mix of record writes, batches, reads,
// memory node writes, event catch-up and whole turns.
type loader struct {
	base     string
	hc       *http.Client
	sessions chan string
	recent   sync.Mutex
	ids      []string
	seq      atomic.Int64

	mu       sync.Mutex
	lat      []time.Duration
	reqs     int
	errors   atomic.Int64
	firstErr atomic.Value
	wg       sync.WaitGroup
}

func (l *loader) setup(workers int) error {
	l.firstErr.Store("")
	l.sessions = make(chan string, 4*workers)
	for i := range 4 * workers {
		var s struct{ ID string }
		if err := l.do("POST", "/v1/sessions", fmt.Sprintf(`{"project":"soak","name":"s%d"}`, i), 201, &s); err != nil {
			return err
		}
		l.sessions <- s.ID
	}
	var rec struct{ ID string }
	if err := l.do("POST", "/v1/records", `{"type":"agent.thought","content":"first","author_id":"agent:soak"}`, 201, &rec); err != nil {
		return err
	}
	l.ids = append(l.ids, rec.ID)
	return nil
}

// do runs one request, timing it and counting a wrong answer as an error
// (want 0: any 2xx).
func (l *loader) do(method, path, body string, want int, out any) error {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, l.base+path, rd)
	// A write says JSON even without a body: kurad refuses any other.
	if body != "" || method != http.MethodGet {
		req.Header.Set("Content-Type", "application/json")
	}
	t0 := time.Now()
	resp, err := l.hc.Do(req)
	var raw []byte
	if err == nil {
		raw, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	d := time.Since(t0)
	l.mu.Lock()
	l.lat = append(l.lat, d)
	l.reqs++
	l.mu.Unlock()
	if err == nil && (want == 0 && resp.StatusCode/100 != 2 || want != 0 && resp.StatusCode != want) {
		err = fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	if err == nil && out != nil {
		err = json.Unmarshal(raw, out)
	}
	if err != nil {
		if l.errors.Add(1) == 1 {
			l.firstErr.Store(err.Error())
		}
	}
	return err
}

// op runs one mixed operation; a turn is three requests.
func (l *loader) op(r *rand.Rand) {
	n := l.seq.Add(1)
	switch k := r.IntN(100); {
	case k < 35:
		var rec struct{ ID string }
		if l.do("POST", "/v1/records", fmt.Sprintf(`{"type":"agent.thought","content":{"soak":%d,"r":%d},"author_id":"agent:soak"}`, n, r.Int32()), 201, &rec) == nil {
			l.recent.Lock()
			if len(l.ids) < 1000 {
				l.ids = append(l.ids, rec.ID)
			} else {
				l.ids[n%1000] = rec.ID
			}
			l.recent.Unlock()
		}
	case k < 45:
		var recs []string
		for j := range 10 {
			recs = append(recs, fmt.Sprintf(`{"type":"agent.thought","content":{"soakb":%d,"j":%d,"r":%d},"author_id":"agent:soak"}`, n, j, r.Int32()))
		}
		l.do("POST", "/v1/records/batch", `{"records":[`+strings.Join(recs, ",")+`]}`, 201, nil)
	case k < 70:
		l.recent.Lock()
		id := l.ids[r.IntN(len(l.ids))]
		l.recent.Unlock()
		l.do("GET", "/v1/records/"+id, "", 200, nil)
	case k < 80:
		l.do("POST", "/v1/scopes/soak/memory/nodes", fmt.Sprintf(`{"kind":"note","id":"n%d","summary":"soak note %d"}`, n%5000, r.Int32()), 0, nil) // 201 new, 200 a new version
	case k < 90:
		l.do("GET", fmt.Sprintf("/v1/events?after=%d&limit=100", max(0, n*3-300)), "", 200, nil)
	default:
		sid := <-l.sessions
		defer func() { l.sessions <- sid }()
		var turn struct{ ID string }
		if l.do("POST", "/v1/sessions/"+sid+"/turns", fmt.Sprintf(`{"instruction":{"type":"task.instruction","content":{"t":%d},"author_id":"user:soak"}}`, n), 201, &turn) != nil {
			return
		}
		l.do("POST", "/v1/turns/"+turn.ID+"/records", fmt.Sprintf(`{"records":[{"type":"agent.thought","content":{"tr":%d},"author_id":"agent:soak"},{"type":"task.deliverable","content":{"td":%d},"author_id":"agent:soak"}]}`, n, n), 200, nil)
		l.do("POST", "/v1/turns/"+turn.ID+"/close", `{"status":"complete"}`, 200, nil)
	}
}

// closedLoop runs workers back to back for d and returns requests/s.
func (l *loader) closedLoop(ctx context.Context, workers int, d time.Duration) float64 {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	l.take()
	var wg sync.WaitGroup
	t0 := time.Now()
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for ctx.Err() == nil {
				l.op(r)
			}
		})
	}
	wg.Wait()
	reqs, _ := l.take()
	return float64(reqs) / time.Since(t0).Seconds()
}

// openLoop starts operations at rate requests/s (a turn counts three)
// whether or not earlier ones have answered, up to workers at a time.
func (l *loader) openLoop(ctx context.Context, workers int, rate float64) {
	l.wg.Add(1)
	defer l.wg.Done()
	l.take()
	ops := make(chan struct{}, workers*4)
	for w := range workers {
		l.wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 2))
			for range ops {
				l.op(r)
			}
		})
	}
	defer close(ops)
	// An op is 1.2 requests on average (10% are turns of three).
	every := time.Duration(float64(time.Second) * 1.2 / rate)
	next := time.Now()
	for ctx.Err() == nil {
		next = next.Add(every)
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		}
		select {
		case ops <- struct{}{}:
		case <-ctx.Done():
		}
	}
}

// take returns and resets the window's request count and latencies.
func (l *loader) take() (int, []time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, lat := l.reqs, l.lat
	l.reqs, l.lat = 0, nil
	return n, lat
}

func (l *loader) sampleNow(pid int, dataDir string) (sample, error) {
	n, lat := l.take()
	s := sample{Requests: n, Errors: int(l.errors.Swap(0))}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		i := min(len(lat)-1, max(0, int(float64(len(lat))*p+0.999999)-1))
		return float64(lat[i].Microseconds()) / 1000
	}
	s.P50MS, s.P99MS = pct(0.5), pct(0.99)
	var err error
	if s.RSSKiB, err = vmRSS(pid); err != nil {
		return s, err
	}
	if st, err := os.Stat(filepath.Join(dataDir, "kura.db-wal")); err == nil {
		s.WALBytes = st.Size()
	}
	m, err := l.metrics()
	if err != nil {
		return s, err
	}
	s.Goroutines, s.OpenFDs = int64(m["go_goroutines"]), int64(m["process_open_fds"])
	var info struct {
		LastEventSeq int64 `json:"last_event_seq"`
		Outbox       struct {
			Lag int64 `json:"lag"`
		} `json:"outbox"`
	}
	resp, err := l.hc.Get(l.base + "/v1/info")
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil {
		return s, err
	}
	s.OutboxLag, s.LastSeq = info.Outbox.Lag, info.LastEventSeq
	return s, nil
}

func (l *loader) metrics() (map[string]float64, error) {
	resp, err := l.hc.Get(l.base + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && !strings.HasPrefix(f[0], "#") {
			v, _ := strconv.ParseFloat(f[1], 64)
			m[f[0]] = v
		}
	}
	return m, sc.Err()
}

// vmRSS reads the resident set of pid from /proc.
func vmRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				return strconv.ParseInt(f[0], 10, 64)
			}
		}
	}
	return 0, errors.New("no VmRSS in /proc status")
}

func waitReady(dataDir string, exited chan error) (string, error) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(filepath.Join(dataDir, "kurad.addr")); err == nil {
			var a struct{ HTTP string }
			if json.Unmarshal(b, &a) == nil && a.HTTP != "" {
				if resp, err := http.Get("http://" + a.HTTP + "/readyz"); err == nil {
					resp.Body.Close()
					if resp.StatusCode == 200 {
						return "http://" + a.HTTP, nil
					}
				}
			}
		}
		select {
		case err := <-exited:
			return "", fmt.Errorf("kurad exited during start: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	return "", errors.New("kurad not ready within 30s")
}

// mergeResult writes r under "soak" in the JSON object at path, keeping
// every other key (the bench's figures) as it was, in its place.
func mergeResult(path string, r *Result) error {
	var keys []string
	vals := map[string]json.RawMessage{}
	if b, err := os.ReadFile(path); err == nil {
		dec := json.NewDecoder(bytes.NewReader(b))
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			return fmt.Errorf("%s is not a JSON object", path)
		}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			k := tok.(string)
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			if _, dup := vals[k]; !dup {
				keys = append(keys, k)
			}
			vals[k] = v
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if _, ok := vals["soak"]; !ok {
		keys = append(keys, "soak")
	}
	vals["soak"] = b
	var out bytes.Buffer
	out.WriteString("{\n")
	for i, k := range keys {
		kb, _ := json.Marshal(k)
		out.WriteString("  ")
		out.Write(kb)
		out.WriteString(": ")
		var ind bytes.Buffer
		if err := json.Indent(&ind, vals[k], "  ", "  "); err != nil {
			return err
		}
		out.Write(ind.Bytes())
		if i < len(keys)-1 {
			out.WriteByte(',')
		}
		out.WriteByte('\n')
	}
	out.WriteString("}\n")
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, out.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := string(bytes.TrimSpace(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside the kura module: run from the repository")
	}
	return filepath.Dir(mod), nil
}
