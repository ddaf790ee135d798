// Command kurabench measures kurad against a raw SQLite baseline in one run
// and writes the figures to bench/results.json.
//
// It is a program, not a `go test` benchmark, because it needs a real kurad
// process on its own data directory, several timed phases whose results feed
// each other (ingest is judged as a share of the raw SQLite rate measured in
// the same run), and the CPU time of both processes: on a 2-core machine the
// load generator competes with kurad, so a figure without its CPU share
// would flatter or wrong the server.
//
// Phases (in order):
//
//	raw_batch_100, raw_batch_1000  the same rows straight into SQLite, same driver and pragmas
//	single_record                  POST /v1/records from 64 keep-alive clients
//	batch_1000                     POST /v1/records/batch, 1,000 records a request
//	hydrate_10k                    GET /v1/ledgers/{id}/records, every page of a 10,000-record ledger
//	verify_100k                    GET /v1/ledgers/{id}/verify of a 100,000-record ledger
//	turns                          8 sessions looping open → append 10 records → close
//	doorbell_latency               commit → NATS subscriber delivery at 1,000 paced writes/s, and the NATS floor
//	doorbell_throughput            the outbox publisher under batch_1000's load: lag, drain, events/s delivered
//	memory_ingest                  POST /v1/scopes/{scope}/memory/nodes/batch, 1,000 nodes a request
//	memory_trace                   GET .../provenance/{ref}?depth=3 on a 1,000,000-node, 2,000,000-edge graph
//	memory_derived                 GET .../provenance/record:{id}/derived, a record with 10,000 descendants
//	trace_dense                    a depth-10 trace of one writer's densest lineage; /v1/info while 4 clients trace it
//	memory_search                  GET .../memory/search?q= over a 100,000-node scope
//	context_10k, context_100k      POST .../context/preview and /compile on 10,000 and 100,000 nodes
//	kb_upsert                      PUT /v1/kb/{kb}/entries/batch, 1,000 entries a request (a tenth replacing)
//	kb_query                       identifier, key and lookup queries on a 100,000-entry knowledge base
//	recall_memory                  memory search recall@1/5/10 on the bench's conversation set, beside Okapi BM25 (recall.go)
//	recall_kb                      knowledge-base lookup (and search) hit@1/5 on natural questions, beside Okapi BM25
//	search_lexical_100k            lexical memory search on 100,000 dialog turns, natural questions (speed.go)
//	log_overhead                   single_record and batch_1000 with the Merkle log off and on, interleaved (logbench.go)
//	log_checkpoint                 GET /v1/log/checkpoint while 1,000 records/s are written
//	log_witness                    a kura witness following kurad at 1,000 writes/s: lag and catch-up
//	search_hybrid_100k             hybrid search on the same, with a stand-in embedder (embedder.go), query embedding excluded
//	resources                      binary size, start-to-ready, idle RSS and RSS under batch_1000's load (resources.go)
//	pg_single_record               single_record against one kurad on PostgreSQL (pg.go), beside single_record
//	pg_batch_1000                  batch_1000 against one kurad on PostgreSQL
//	pg_two_kurads                  single_record's clients split over two kurads sharing one database
//	pg_one_host                    pg_single_record with kurad held to a host's CPU budget (a cgroup quota)
//	pg_two_hosts                   pg_two_kurads with each kurad held to that budget
//	pg_recall_memory, pg_recall_kb recall_memory and recall_kb against one kurad on PostgreSQL
//	pg_latency                     compile and lexical search on 10,000 nodes, SQLite and PostgreSQL
//
// Every kurad phase starts its own kurad on a fresh data directory, so no
// phase measures a database grown by an earlier one. The memory and context
// phases fill their data dir through the store in this process first (the
// three memory read phases share one, built once per run), then measure a
// real kurad started on it. Later issues add phases by appending to the
// phases list.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// config holds the flags and the sizes they imply.
type config struct {
	quick     bool
	out       string
	kuradBin  string
	only      string
	keep      bool
	strict    bool
	verbose   bool
	runs      int // timed runs per phase (hydrate and verify use their own counts)
	rawRows   int // rows per raw baseline run
	singleDur time.Duration
	warmup    time.Duration
	clients   int // single-record clients
	batchCli  int // batch clients
	batchReqs int // batch requests per run
	hydrateN  int // records in the hydrate ledger
	hydrateK  int // timed full hydrates
	verifyN   int // records in the verify ledger
	verifyK   int // timed verifies

	turnSessions int           // concurrent sessions (one worker each) in the turns phase
	turnDur      time.Duration // timed window per turns run

	doorbellDur time.Duration // timed window of paced writes in doorbell_latency
	floorDur    time.Duration // paced plain NATS publishes measuring the floor
	outboxReqs  int           // batch requests in doorbell_throughput

	memIngestReqs  int // node batches (1,000 nodes) per memory_ingest run
	memNodes       int // nodes of the lineage graph (memory_trace, memory_derived)
	memDescendants int // of those, nodes derived from the one record
	memSearchNodes int // nodes of the search scope
	memTraceN      int // timed traces per direction
	memDerivedK    int // timed derived requests
	memSearchN     int // timed searches
	ctxSmallN      int // nodes of context_10k (relations: half as many)
	ctxSmallK      int // timed previews, and compiles, in context_10k
	ctxBigN        int // nodes of context_100k
	ctxBigK        int // timed previews, and compiles, in context_100k

	reqTimeout time.Duration // per HTTP request

	// embedderURL, when set, is a real OpenAI-compatible embeddings
	// endpoint recall_memory also asks through (mode=hybrid).
	embedderURL   string
	embedderModel string

	// hostCPUs is the CPU budget of each kurad in pg_one_host and
	// pg_two_hosts, in CPUs.
	hostCPUs float64
}

func parseFlags(args []string) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("kurabench", flag.ContinueOnError)
	fs.BoolVar(&c.quick, "quick", false, "much smaller counts (under a minute), for smoke tests; targets are scaled and only indicative")
	fs.StringVar(&c.out, "out", "", "where to write the JSON results (default: bench/results.json in the module; with -quick, a file in the temp dir)")
	fs.StringVar(&c.kuradBin, "kurad", "", "kurad binary to run (default: go build ./cmd/kurad into a temp dir)")
	fs.StringVar(&c.only, "phases", "", "comma-separated phase names to run (default: all)")
	fs.BoolVar(&c.keep, "keep", false, "keep the temp dir (data dirs, kurad logs) instead of removing it")
	fs.BoolVar(&c.strict, "strict", false, "exit 2 when a target is missed (phase errors always exit 1)")
	fs.BoolVar(&c.verbose, "v", false, "print progress of every run")
	fs.IntVar(&c.batchCli, "batch-clients", 2, "concurrent clients in the batch phase")
	fs.StringVar(&c.embedderURL, "embedder-url", "", "an OpenAI-compatible /v1/embeddings endpoint (Ollama, llama.cpp, vLLM, OpenAI): recall_memory also measures mode=hybrid with it (KURA_EMBEDDER_TOKEN is passed on)")
	fs.StringVar(&c.embedderModel, "embedder-model", "", "the model kurad asks -embedder-url for (KURA_EMBEDDER_MODEL; empty: kurad's default)")
	fs.Float64Var(&c.hostCPUs, "host-cpus", 0.3, "CPU budget of each kurad in pg_one_host and pg_two_hosts, in CPUs (0.1-1): the cores of the host each would have")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if c.batchCli < 1 || c.batchCli > 16 {
		return nil, fmt.Errorf("-batch-clients must be 1..16, got %d", c.batchCli)
	}
	if c.hostCPUs < 0.1 || c.hostCPUs > 1 {
		return nil, fmt.Errorf("-host-cpus must be 0.1..1, got %v", c.hostCPUs)
	}
	c.clients = 64
	c.turnSessions = 8
	// The request bound is for a hung server: the slowest request, a
	// 100,000-record verify or ledger create, should take seconds.
	c.reqTimeout = 2 * time.Minute
	if c.quick {
		c.reqTimeout = 30 * time.Second
		c.runs, c.rawRows = 2, 5_000
		c.singleDur, c.warmup = 2*time.Second, 500*time.Millisecond
		c.batchReqs = 5
		c.hydrateN, c.hydrateK = 10_000, 3
		c.verifyN, c.verifyK = 20_000, 2
		c.turnDur = 2 * time.Second
		c.doorbellDur, c.floorDur = 2*time.Second, time.Second
		c.outboxReqs = 20
		c.memIngestReqs = 5
		c.memNodes, c.memDescendants, c.memSearchNodes = 20_000, 2_000, 10_000
		c.memTraceN, c.memDerivedK, c.memSearchN = 200, 3, 300
		c.ctxSmallN, c.ctxSmallK = 10_000, 20
		c.ctxBigN, c.ctxBigK = 20_000, 5
	} else {
		c.runs, c.rawRows = 3, 50_000
		c.singleDur, c.warmup = 10*time.Second, 2*time.Second
		c.batchReqs = 50
		c.hydrateN, c.hydrateK = 10_000, 10
		c.verifyN, c.verifyK = 100_000, 5
		c.turnDur = 10 * time.Second
		c.doorbellDur, c.floorDur = 10*time.Second, 5*time.Second
		// Four times batch_1000's run: ~150 lag samples at ~26,000 rows/s, so
		// "sustained" means seconds of ingest, not one burst.
		c.outboxReqs = 200
		c.memIngestReqs = 50
		c.memNodes, c.memDescendants, c.memSearchNodes = 1_000_000, 10_000, 100_000
		c.memTraceN, c.memDerivedK, c.memSearchN = 2_000, 10, 3_000
		c.ctxSmallN, c.ctxSmallK = 10_000, 100
		c.ctxBigN, c.ctxBigK = 100_000, 10
	}
	return c, nil
}

// bench is the state shared by the phases of one run.
type bench struct {
	cfg      *config
	root     string // module root: migrations and ./cmd/kurad are found from here
	tmp      string // every data dir, database and log of this run lives under it
	kurad    string // kurad binary
	kuradSrc string // where that binary came from, for the report
	client   *http.Client
	dials    atomic.Int64 // TCP connections the client opened
	// nonce makes every record content of this run unique, so kurad never
	// deduplicates a bench write even against a reused data dir.
	nonce   string
	results []*PhaseResult
	info    map[string]any // kurad's /v1/info from the first start
	// selected are the phases asked for with -phases (empty: all).
	selected map[string]bool
	// mem is the data dir the memory read phases share (memdata.go).
	mem *memData
	// speed is the data dir the search speed phases share (speed.go).
	speed *speedData
	// kuradArgs are appended to every kurad start (log_overhead turns the
	// log off with them for its baseline runs).
	kuradArgs []string
	// kura is the kura binary (the witness), built on first use.
	kura string
	// pg is the PostgreSQL server of the pg_* phases (pg.go), started by
	// the first of them and stopped when the run ends.
	pg    *pgServer
	pgErr error
	// cg is where the pg_*_host phases make their kurads' CPU budgets
	// (cgroup.go), found on first use.
	cg    *cgroupCPU
	cgErr error
	cgSet bool
}

// phase is one measured thing. run returns its result; an error means the
// phase could not be measured (the result may still carry partial runs).
type phase struct {
	name string
	run  func(ctx context.Context, b *bench) (*PhaseResult, error)
}

// phases run in this order; raw baselines come first because the ingest
// targets are ratios to them.
var phases = []phase{
	{"raw_batch_100", func(ctx context.Context, b *bench) (*PhaseResult, error) { return b.rawPhase(ctx, 100) }},
	{"raw_batch_1000", func(ctx context.Context, b *bench) (*PhaseResult, error) { return b.rawPhase(ctx, 1000) }},
	{"single_record", func(ctx context.Context, b *bench) (*PhaseResult, error) { return b.singlePhase(ctx, sqliteBackend) }},
	{"batch_1000", func(ctx context.Context, b *bench) (*PhaseResult, error) { return b.batchPhase(ctx, sqliteBackend) }},
	{"hydrate_10k", func(ctx context.Context, b *bench) (*PhaseResult, error) { return b.hydratePhase(ctx) }},
	{"verify_100k", func(ctx context.Context, b *bench) (*PhaseResult, error) { return b.verifyPhase(ctx) }},
	{"turns", func(ctx context.Context, b *bench) (*PhaseResult, error) { return b.turnsPhase(ctx) }},
	{"doorbell_latency", func(ctx context.Context, b *bench) (*PhaseResult, error) { return b.doorbellLatencyPhase(ctx) }},
	{"doorbell_throughput", func(ctx context.Context, b *bench) (*PhaseResult, error) { return b.doorbellThroughputPhase(ctx) }},
	{"memory_ingest", func(ctx context.Context, b *bench) (*PhaseResult, error) { return b.memIngestPhase(ctx) }},
	{"memory_trace", func(ctx context.Context, b *bench) (*PhaseResult, error) { return b.memTracePhase(ctx) }},
	{"memory_derived", func(ctx context.Context, b *bench) (*PhaseResult, error) { return b.memDerivedPhase(ctx) }},
	{"trace_dense", func(ctx context.Context, b *bench) (*PhaseResult, error) { return b.traceDensePhase(ctx) }},
	{"memory_search", func(ctx context.Context, b *bench) (*PhaseResult, error) { return b.memSearchPhase(ctx) }},
	{"context_10k", func(ctx context.Context, b *bench) (*PhaseResult, error) {
		return b.contextPhase(ctx, b.contextSize("context_10k"))
	}},
	{"context_100k", func(ctx context.Context, b *bench) (*PhaseResult, error) {
		return b.contextPhase(ctx, b.contextSize("context_100k"))
	}},
	{"kb_upsert", func(ctx context.Context, b *bench) (*PhaseResult, error) { return b.kbUpsertPhase(ctx) }},
	{"kb_query", func(ctx context.Context, b *bench) (*PhaseResult, error) { return b.kbQueryPhase(ctx) }},
	{"recall_memory", func(ctx context.Context, b *bench) (*PhaseResult, error) {
		return b.recallMemoryPhase(ctx, sqliteBackend)
	}},
	{"recall_kb", func(ctx context.Context, b *bench) (*PhaseResult, error) { return b.recallKBPhase(ctx, sqliteBackend) }},
	{"search_lexical_100k", func(ctx context.Context, b *bench) (*PhaseResult, error) { return b.searchLexicalPhase(ctx) }},
	{"search_hybrid_100k", func(ctx context.Context, b *bench) (*PhaseResult, error) { return b.searchHybridPhase(ctx) }},
	{"log_overhead", func(ctx context.Context, b *bench) (*PhaseResult, error) { return b.logOverheadPhase(ctx) }},
	{"log_checkpoint", func(ctx context.Context, b *bench) (*PhaseResult, error) { return b.logCheckpointPhase(ctx) }},
	{"log_witness", func(ctx context.Context, b *bench) (*PhaseResult, error) { return b.logWitnessPhase(ctx) }},
	{"resources", func(ctx context.Context, b *bench) (*PhaseResult, error) { return b.resourcesPhase(ctx) }},
	{"pg_single_record", func(ctx context.Context, b *bench) (*PhaseResult, error) {
		return b.pgPhase(ctx, func() (*PhaseResult, error) { return b.singlePhase(ctx, pgOne) })
	}},
	{"pg_batch_1000", func(ctx context.Context, b *bench) (*PhaseResult, error) {
		return b.pgPhase(ctx, func() (*PhaseResult, error) { return b.batchPhase(ctx, pgOne) })
	}},
	{"pg_two_kurads", func(ctx context.Context, b *bench) (*PhaseResult, error) {
		return b.pgPhase(ctx, func() (*PhaseResult, error) { return b.singlePhase(ctx, pgTwo) })
	}},
	{"pg_one_host", func(ctx context.Context, b *bench) (*PhaseResult, error) {
		return b.pgPhase(ctx, func() (*PhaseResult, error) { return b.hostPhase(ctx, pgOneHost) })
	}},
	{"pg_two_hosts", func(ctx context.Context, b *bench) (*PhaseResult, error) {
		return b.pgPhase(ctx, func() (*PhaseResult, error) { return b.hostPhase(ctx, pgTwoHosts) })
	}},
	{"pg_recall_memory", func(ctx context.Context, b *bench) (*PhaseResult, error) {
		return b.pgPhase(ctx, func() (*PhaseResult, error) { return b.recallMemoryPhase(ctx, pgOne) })
	}},
	{"pg_recall_kb", func(ctx context.Context, b *bench) (*PhaseResult, error) {
		return b.pgPhase(ctx, func() (*PhaseResult, error) { return b.recallKBPhase(ctx, pgOne) })
	}},
	{"pg_latency", func(ctx context.Context, b *bench) (*PhaseResult, error) {
		return b.pgPhase(ctx, func() (*PhaseResult, error) { return b.pgLatencyPhase(ctx) })
	}},
}

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "kurabench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, cfg))
}

func run(ctx context.Context, cfg *config) int {
	root, err := moduleRoot(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kurabench:", err)
		return 1
	}
	tmp, err := os.MkdirTemp("", "kurabench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "kurabench:", err)
		return 1
	}
	if cfg.out == "" {
		cfg.out = filepath.Join(root, "bench", "results.json")
		// A smoke test must not overwrite the figures of the last full run.
		if cfg.quick {
			cfg.out = filepath.Join(os.TempDir(), "kurabench-results-quick.json")
		}
	}
	if cfg.keep {
		fmt.Printf("temp dir (kept): %s\n", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	nonce := make([]byte, 6)
	_, _ = rand.Read(nonce)
	b := &bench{cfg: cfg, root: root, tmp: tmp, nonce: hex.EncodeToString(nonce)}
	b.client = newHTTPClient(cfg.reqTimeout, &b.dials)
	defer b.client.CloseIdleConnections()
	// Also on an error or an interrupt: the server is a process of its own.
	defer b.stopPostgres()

	selected := map[string]bool{}
	for _, n := range strings.Split(cfg.only, ",") {
		if n = strings.TrimSpace(n); n != "" {
			selected[n] = true
		}
	}
	for n := range selected {
		if !hasPhase(n) {
			fmt.Fprintf(os.Stderr, "kurabench: unknown phase %q (have %s)\n", n, phaseNames())
			return 2
		}
	}
	b.selected = selected
	b.kuradSrc = cfg.kuradBin
	if b.kuradSrc == "" {
		b.kuradSrc = "go build ./cmd/kurad at " + gitDescribe(ctx, root)
	}
	needKurad := false
	for _, p := range phases {
		if (len(selected) == 0 || selected[p.name]) && !strings.HasPrefix(p.name, "raw_") {
			needKurad = true
		}
	}
	if needKurad {
		if b.kurad, err = b.prepareKurad(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "kurabench:", err)
			return 1
		}
	}

	started := time.Now()
	load0 := loadavg()
	failed := false
	for _, p := range phases {
		if len(selected) > 0 && !selected[p.name] {
			continue
		}
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintf(os.Stderr, "== %s\n", p.name)
		t0 := time.Now()
		res, err := p.run(ctx, b)
		if res == nil {
			res = &PhaseResult{Name: p.name}
		}
		res.Name = p.name
		res.Seconds = round(time.Since(t0).Seconds())
		if err != nil {
			res.Error = err.Error()
			failed = true
			fmt.Fprintf(os.Stderr, "   %s failed: %v\n", p.name, err)
		}
		b.results = append(b.results, res)
	}
	judge(b)
	rep := b.report(started)
	rep.LoadAvg = [2]string{load0, loadavg()}
	printTable(os.Stdout, rep)
	if ctx.Err() != nil {
		// An interrupted run measured only part of what it claims; keep
		// the previous results file.
		fmt.Fprintln(os.Stderr, "kurabench: interrupted; results not written")
		return 1
	}
	if err := writeJSON(filepath.Clean(cfg.out), rep); err != nil {
		fmt.Fprintln(os.Stderr, "kurabench:", err)
		return 1
	}
	fmt.Printf("\nwrote %s\n", cfg.out)
	switch {
	case failed:
		return 1
	case cfg.strict && !rep.Pass:
		return 2
	}
	return 0
}

func hasPhase(n string) bool {
	for _, p := range phases {
		if p.name == n {
			return true
		}
	}
	return false
}

func phaseNames() string {
	var ns []string
	for _, p := range phases {
		ns = append(ns, p.name)
	}
	return strings.Join(ns, ",")
}

// result returns the result of an earlier phase of this run, or nil.
func (b *bench) result(name string) *PhaseResult {
	for _, r := range b.results {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// logf prints progress to stderr (stdout is the table).
func (b *bench) logf(format string, args ...any) {
	if b.cfg.verbose {
		fmt.Fprintf(os.Stderr, "   "+format+"\n", args...)
	}
}

// newHTTPClient returns the one client every phase shares. One Transport
// with room for every single-record client keeps all 64 connections alive
// between requests; without it Go keeps only 2 idle connections per host and
// the benchmark would measure TCP handshakes. Compression is off because
// kurad is measured, not gzip.
func newHTTPClient(timeout time.Duration, dials *atomic.Int64) *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		// Counting dials shows whether keep-alive held: after the warm-up a
		// run should open no connection at all.
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return d.DialContext(ctx, network, addr)
		},
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}
	return &http.Client{Transport: tr, Timeout: timeout}
}

func (b *bench) report(started time.Time) *Report {
	rep := &Report{
		Timestamp:  started.UTC().Format(time.RFC3339),
		Duration:   round(time.Since(started).Seconds()),
		GoVersion:  runtime.Version(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		NumCPU:     runtime.NumCPU(),
		OS:         runtime.GOOS,
		Arch:       runtime.GOARCH,
		Quick:      b.cfg.quick,
		Kurad:      b.kuradSrc,
		KuradInfo:  b.info,
		Phases:     b.results,
		Pass:       true,
	}
	if b.cfg.quick {
		rep.Notes = append(rep.Notes, "quick run: sizes reduced and size-dependent targets scaled linearly; pass/fail is only indicative")
	}
	for _, r := range b.results {
		if r.Error != "" || (r.Pass != nil && !*r.Pass) {
			rep.Pass = false
		}
		// Past a tenth of the machine, other work has measurably taken
		// cores from kurad or the baseline; the figures are not comparable
		// with a quiet run.
		if r.CPU.OtherShare > 0.10 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s: other processes used %.0f%% of the machine during the timed part; its figures are skewed (rerun on a quiet machine)", r.Name, r.CPU.OtherShare*100))
		}
	}
	return rep
}

// loadavg returns the 1, 5 and 15 minute load averages from /proc/loadavg.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// gitDescribe names the source tree measured ("6c656db-dirty"), so a
// results file says which code its figures belong to.
func gitDescribe(ctx context.Context, root string) string {
	cmd := exec.CommandContext(ctx, "git", "describe", "--always", "--dirty")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "unknown commit"
	}
	return strings.TrimSpace(string(out))
}
