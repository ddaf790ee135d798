package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/kura-memory/kura/internal/admission"
	"github.com/kura-memory/kura/internal/keys"
	"github.com/kura-memory/kura/internal/pgtest"
)

// The PostgreSQL phases (issue 23): the same workloads as single_record,
// batch_1000 and context_10k with kurad keeping its data in PostgreSQL
// (--database-url), beside the SQLite figures of the same run.
//
//	pg_single_record  single_record's clients against one kurad on PostgreSQL
//	pg_batch_1000     batch_1000's load against one kurad on PostgreSQL
//	pg_two_kurads     single_record's clients split over two kurads sharing
//	                  one database (and a signing key and a NATS cluster)
//	pg_one_host       pg_single_record with kurad held to a CPU budget, as
//	                  on a host of its own (cgroup.go)
//	pg_two_hosts      pg_two_kurads with each kurad held to that budget
//	pg_latency        compile and lexical search on 10,000 nodes, on SQLite
//	                  and on PostgreSQL, the same data and requests
//
// The server is the Debian package's PostgreSQL run by internal/pgtest in
// the temp dir, durable (fsync and synchronous_commit on, as kurad's SQLite
// runs synchronous=FULL), started by the first of these phases and stopped
// when the bench ends. Every run's kurad gets a database of its own.
const (
	pgSingleShare = 0.50 // pg_single_record rows/s ≥ 50% of single_record's
	pgTwoFactor   = 1.50 // pg_two_hosts rows/s ≥ 1.5 × pg_one_host's
)

// pgPhases are the phases that need PostgreSQL, in run order.
var pgPhases = []string{"pg_single_record", "pg_batch_1000", "pg_two_kurads", "pg_one_host", "pg_two_hosts", "pg_latency"}

// pgServer is the bench's PostgreSQL.
type pgServer struct {
	srv        *pgtest.Server
	postmaster int               // its pid, for the CPU share
	settings   map[string]string // version and the durability settings, for the report
	dbs        int
}

// postgres starts the server on first use; later calls return it (or the
// error of the first start).
func (b *bench) postgres(ctx context.Context) (*pgServer, error) {
	if b.pg != nil || b.pgErr != nil {
		return b.pg, b.pgErr
	}
	b.pg, b.pgErr = startPostgres(ctx)
	return b.pg, b.pgErr
}

func startPostgres(ctx context.Context) (*pgServer, error) {
	fmt.Fprintln(os.Stderr, "== starting PostgreSQL (durable: fsync and synchronous_commit on)")
	srv, err := pgtest.Start(true)
	if err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	s := &pgServer{srv: srv, settings: map[string]string{}}
	u, err := s.createDB(ctx, "probe")
	if err != nil {
		srv.Stop()
		return nil, err
	}
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		srv.Stop()
		return nil, fmt.Errorf("connect to postgres: %w", err)
	}
	defer c.Close(context.Background())
	// The backend serving this connection is a child of the postmaster.
	var backend int
	if err := c.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		srv.Stop()
		return nil, fmt.Errorf("postgres backend pid: %w", err)
	}
	if f := procStat(backend); len(f) > 1 {
		s.postmaster, _ = strconv.Atoi(f[1])
	}
	for _, name := range []string{"server_version", "fsync", "synchronous_commit", "full_page_writes", "wal_sync_method", "shared_buffers", "max_connections"} {
		var v string
		if err := c.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v); err == nil {
			s.settings[name] = v
		}
	}
	if s.settings["fsync"] != "on" || s.settings["synchronous_commit"] != "on" {
		srv.Stop()
		return nil, fmt.Errorf("postgres is not durable (fsync %q, synchronous_commit %q): its figures would not compare with SQLite's synchronous=FULL", s.settings["fsync"], s.settings["synchronous_commit"])
	}
	return s, nil
}

// createDB makes an empty database named after what will use it.
func (s *pgServer) createDB(ctx context.Context, name string) (string, error) {
	s.dbs++
	db := "kurabench_" + strings.NewReplacer("-", "_", ".", "_").Replace(name) + "_" + strconv.Itoa(s.dbs)
	u, err := s.srv.CreateDB(ctx, db)
	if err != nil {
		return "", fmt.Errorf("create database %s: %w", db, err)
	}
	return u, nil
}

// stopPostgres stops the server if a phase started it.
func (b *bench) stopPostgres() {
	if b.pg != nil {
		b.pg.srv.Stop()
		b.pg = nil
	}
}

// pgDatabaseBytes is pg_database_size of the database at u.
func pgDatabaseBytes(ctx context.Context, u string) (int64, error) {
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		return 0, err
	}
	defer c.Close(context.Background())
	var n int64
	err = c.QueryRow(ctx, "SELECT pg_database_size(current_database())").Scan(&n)
	return n, err
}

// backend is where a run's kurads keep their data: one kurad on a fresh
// SQLite data dir, or kurads instances sharing a fresh PostgreSQL database.
type backend struct {
	pg     bool
	kurads int
	// host holds each kurad to the CPU budget of -host-cpus (a cgroup
	// quota), as a host of its own would.
	host bool
}

var (
	sqliteBackend = backend{kurads: 1}
	pgOne         = backend{pg: true, kurads: 1}
	pgTwo         = backend{pg: true, kurads: 2}
	pgOneHost     = backend{pg: true, kurads: 1, host: true}
	pgTwoHosts    = backend{pg: true, kurads: 2, host: true}
)

func (be backend) title(cpus float64) string {
	held := ""
	if be.host {
		held = fmt.Sprintf(", each held to %.2f CPUs (a host of its own)", cpus)
		if be.kurads == 1 {
			held = fmt.Sprintf(" held to %.2f CPUs (a host of its own)", cpus)
		}
	}
	switch {
	case !be.pg:
		return ""
	case be.kurads == 1:
		return ", one kurad on PostgreSQL" + held
	}
	return fmt.Sprintf(", %d kurads sharing one PostgreSQL database (clients split evenly)%s", be.kurads, held)
}

func (be backend) dataDir(holding string) string {
	switch {
	case !be.pg:
		return "fresh kurad and data dir per run (" + holding + ")"
	case be.kurads == 1:
		return "fresh kurad, data dir and PostgreSQL database per run (" + holding + ")"
	}
	return fmt.Sprintf("%d fresh kurads (a data dir each) on one fresh PostgreSQL database per run, one signing key, their NATS servers clustered (%s)", be.kurads, holding)
}

// params records the store in the phase's params.
func (be backend) params(res *PhaseResult, cpus float64) {
	if be.pg {
		res.Params["store"] = "postgresql"
		res.Params["kurads"] = be.kurads
	}
	if be.host {
		res.Params["kurad_cpus"] = cpus
		res.Params["cpu_quota_period_ms"] = round(ms(quotaPeriod(cpus)))
	}
}

// fleet is the kurads of one run.
type fleet struct {
	kurads []*kuradProc
	pg     int // postmaster pid (0 on SQLite)
}

// periods adds up the quota periods of the kurads held to a CPU budget
// (cgroup.go): how many they ran in, and in how many they spent it.
func (f *fleet) periods() (ran, throttled int64) {
	for _, k := range f.kurads {
		if k.cpu != nil {
			r, t := k.cpu.periods()
			ran += r
			throttled += t
		}
	}
	return ran, throttled
}

// meter measures the bench, every kurad and PostgreSQL.
func (f *fleet) meter() *cpuMeter {
	pids := make([]int, len(f.kurads))
	for i, k := range f.kurads {
		pids[i] = k.pid()
	}
	return startCPUOf(f.pg, pids...)
}

func (f *fleet) alive() error {
	for _, k := range f.kurads {
		if err := k.alive(); err != nil {
			return err
		}
	}
	return nil
}

func (b *bench) stopFleet(f *fleet, res *PhaseResult) {
	for _, k := range f.kurads {
		b.stopKurad(k, res)
	}
}

// fleetCounters adds up the kurads' writer and store counters.
func (b *bench) fleetCounters(ctx context.Context, f *fleet) map[string]float64 {
	sum := map[string]float64{}
	for _, k := range f.kurads {
		for n, v := range b.serverCounters(ctx, k) {
			sum[n] += v
		}
	}
	return sum
}

// startBackend starts the kurads of one run, named after it.
func (b *bench) startBackend(ctx context.Context, be backend, name string) (*fleet, error) {
	if !be.pg {
		k, err := b.startKurad(ctx, name)
		if err != nil {
			return nil, err
		}
		return &fleet{kurads: []*kuradProc{k}}, nil
	}
	s, err := b.postgres(ctx)
	if err != nil {
		return nil, err
	}
	u, err := s.createDB(ctx, name)
	if err != nil {
		return nil, err
	}
	// One key for every kurad on the database: they sign the same log.
	key := filepath.Join(b.tmp, fmt.Sprintf("pg%d-%s.key", be.kurads, name))
	_ = os.Remove(key)
	if _, err := keys.LoadOrCreate(key); err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	env := []string{"KURA_DATABASE_URL=" + u, "KURA_KEY_FILE=" + key}
	if be.kurads > 1 {
		env = append(env, "KURA_NATS_CLUSTER_ADDR=127.0.0.1:0")
	}
	f := &fleet{pg: s.postmaster}
	for i := range be.kurads {
		dir := filepath.Join(b.tmp, fmt.Sprintf("data-pg%d-%s-%c", be.kurads, name, 'a'+i))
		if err := os.RemoveAll(dir); err != nil {
			b.stopFleet(f, &PhaseResult{})
			return nil, err
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			b.stopFleet(f, &PhaseResult{})
			return nil, err
		}
		k, err := b.startKuradEnv(ctx, dir, dir+".log", env, b.kuradArgs...)
		if err != nil {
			b.stopFleet(f, &PhaseResult{})
			return nil, err
		}
		k.pg = s.postmaster
		f.kurads = append(f.kurads, k)
		if be.host {
			cg, err := b.cgroups()
			if err == nil {
				k.cpu, err = cg.child(fmt.Sprintf("kurabench-%d-%s-%c", os.Getpid(), name, 'a'+i), b.cfg.hostCPUs)
			}
			if err == nil {
				err = k.cpu.add(k.pid())
			}
			if err != nil {
				b.stopFleet(f, &PhaseResult{})
				return nil, fmt.Errorf("hold kurad to %v CPUs: %w", b.cfg.hostCPUs, err)
			}
		}
		// The next kurads join the first one's NATS server, as a
		// deployment of several kurads does.
		if i == 0 && be.kurads > 1 {
			addr, err := b.natsClusterAddr(ctx, k)
			if err != nil {
				b.stopFleet(f, &PhaseResult{})
				return nil, err
			}
			env = append(env, "KURA_NATS_ROUTES=nats-route://"+addr)
		}
	}
	return f, nil
}

// cgroups finds the cgroup hierarchy the host phases make budgets in.
func (b *bench) cgroups() (*cgroupCPU, error) {
	if !b.cgSet {
		b.cg, b.cgErr = findCgroupCPU()
		b.cgSet = true
	}
	return b.cg, b.cgErr
}

// hostPhase is singlePhase with each kurad held to -host-cpus, or a skip
// with a note where the bench cannot make cgroups (not root, no cpu
// controller, a read-only mount).
func (b *bench) hostPhase(ctx context.Context, be backend) (*PhaseResult, error) {
	if _, err := b.cgroups(); err != nil {
		return &PhaseResult{Title: "skipped", Metric: "-", DataDir: "-", Params: map[string]any{"skipped": true},
			Notes: []string{"skipped: cannot hold kurad to a CPU budget here (" + err.Error() + "); it needs a writable cgroup with the cpu controller, as root; nothing was measured"}}, nil
	}
	return b.singlePhase(ctx, be)
}

// natsClusterAddr is /v1/info nats.cluster.addr.
func (b *bench) natsClusterAddr(ctx context.Context, k *kuradProc) (string, error) {
	st, body, err := b.do(ctx, http.MethodGet, k.base+"/v1/info", nil)
	if err != nil || st != http.StatusOK {
		return "", fmt.Errorf("GET /v1/info: status %d: %v", st, err)
	}
	var info struct {
		NATS struct {
			Cluster struct{ Addr string } `json:"cluster"`
		} `json:"nats"`
	}
	if err := json.Unmarshal(body, &info); err != nil || info.NATS.Cluster.Addr == "" {
		return "", fmt.Errorf("GET /v1/info: no nats.cluster.addr (%v): %s", err, body)
	}
	return info.NATS.Cluster.Addr, nil
}

// pgPhase runs a phase on PostgreSQL, or skips it with a note when
// PostgreSQL is not installed; the server's settings go in its params.
func (b *bench) pgPhase(ctx context.Context, run func() (*PhaseResult, error)) (*PhaseResult, error) {
	if !pgtest.Available() {
		return &PhaseResult{Title: "skipped", Metric: "-", DataDir: "-", Params: map[string]any{"skipped": true},
			Notes: []string{"skipped: PostgreSQL is not installed (no initdb/pg_ctl on PATH or in /usr/lib/postgresql/*/bin; apt-get install postgresql); nothing was measured"}}, nil
	}
	if _, err := b.postgres(ctx); err != nil {
		return nil, err
	}
	res, err := run()
	if res != nil {
		if res.Params == nil {
			res.Params = map[string]any{}
		}
		res.Params["postgres"] = b.pg.settings
	}
	return res, err
}

// pgLatencyPhase times compile and lexical search on the same 10,000
// nodes on SQLite and on PostgreSQL: each built through the store (as
// context_10k builds its scope), each served by one kurad, the same
// requests in the same order, one at a time.
func (b *bench) pgLatencyPhase(ctx context.Context) (*PhaseResult, error) {
	c := ctxSize{name: "pg_latency", nodes: b.cfg.ctxSmallN, rels: b.cfg.ctxSmallN / 2, reqs: 2 * b.cfg.ctxSmallK}
	searches := b.cfg.memSearchN / 3
	res := &PhaseResult{
		Title: fmt.Sprintf("POST /v1/scopes/{scope}/context/compile (and /preview), GET .../memory/search?mode=lexical&q=, %s nodes and %s relations, SQLite and PostgreSQL",
			thousands(float64(c.nodes)), thousands(float64(c.rels))),
		Metric:    "ms",
		LatencyOf: "one compile, preview or search request, one client (per store under ops; median and p50/p99 over PostgreSQL's compiles and searches)",
		DataDir:   "a fresh data dir (SQLite) and a fresh database (PostgreSQL), each built through the store, then one kurad on each",
		Params: map[string]any{
			"nodes": c.nodes, "relations": c.rels, "compiles": c.reqs, "previews": c.reqs, "searches": searches,
			"compile_request": fmt.Sprintf(`{"query": 1-2 vocabulary words, "budget_bytes": %d}`, contextBudget),
			"search_request":  "q = 1-3 distinct vocabulary words, mode=lexical, default limit 100",
		},
	}
	var pgLat []time.Duration
	var pgCPU []*CPU
	var phaseErr error
	for _, be := range []backend{sqliteBackend, pgOne} {
		store := "sqlite"
		if be.pg {
			store = "pg"
		}
		lat, cpus, err := b.latencyOn(ctx, res, c, searches, be, store)
		if be.pg {
			pgLat, pgCPU = lat, cpus
		}
		if err != nil {
			phaseErr = errors.Join(phaseErr, err)
			// A failed compile leaves the searches measured; anything
			// else ends the phase.
			if len(lat) == 0 {
				break
			}
		}
	}
	res.summarizeOps(pgLat, sumCPU(pgCPU...))
	for _, op := range pgLatencyOps {
		s, p := res.Ops[op+"_sqlite"], res.Ops[op+"_pg"]
		if s.P50ms > 0 && s.P99ms > 0 {
			res.Params[op+"_p50_ratio_pg_to_sqlite"] = round(p.P50ms / s.P50ms)
			res.Params[op+"_p99_ratio_pg_to_sqlite"] = round(p.P99ms / s.P99ms)
		}
	}
	return res, errors.Join(phaseErr, res.runErrors())
}

// latencyOn builds the scope on be, starts a kurad on it and times the
// compiles and searches, appending runs labelled <op>_<store>. It returns
// the timed latencies and the CPU of its loops.
func (b *bench) latencyOn(ctx context.Context, res *PhaseResult, c ctxSize, searches int, be backend, store string) ([]time.Duration, []*CPU, error) {
	dir := filepath.Join(b.tmp, "data-pg-latency-"+store)
	if err := os.RemoveAll(dir); err != nil {
		return nil, nil, err
	}
	var env []string
	dbURL := ""
	pm := 0
	if be.pg {
		s, err := b.postgres(ctx)
		if err != nil {
			return nil, nil, err
		}
		if dbURL, err = s.createDB(ctx, "latency"); err != nil {
			return nil, nil, err
		}
		env, pm = []string{"KURA_DATABASE_URL=" + dbURL}, s.postmaster
	}
	build, err := b.buildContext(ctx, dir, dbURL, c)
	res.Params["build_"+store] = build
	if err != nil {
		return nil, nil, fmt.Errorf("build on %s: %w", store, err)
	}
	k, err := b.startKuradEnv(ctx, dir, dir+".log", env, b.kuradArgs...)
	if err != nil {
		return nil, nil, err
	}
	k.pg = pm
	defer b.stopKurad(k, res)

	// The same seeds on both stores: the same requests in the same order.
	r := rand.New(rand.NewPCG(53, uint64(c.nodes)))
	base := k.base + "/v1/scopes/" + contextScope + "/context/"
	searchURL := func(q string) string {
		return k.base + "/v1/scopes/" + contextScope + "/memory/search?mode=lexical&q=" + url.QueryEscape(q)
	}
	body := func() []byte {
		b, _ := json.Marshal(admission.Request{Query: distinctWords(r, 1+r.IntN(2)), BudgetBytes: contextBudget})
		return b
	}
	// Untimed: one compile checked in full, then a warm-up of previews and
	// searches. A compile that fails is the phase's error, but the searches
	// (and previews, the same read without the stored bundle) are still
	// measured.
	var compileErr error
	st, rb, err := b.do(ctx, http.MethodPost, base+"compile", body())
	switch {
	case err != nil:
		compileErr = fmt.Errorf("first compile on %s: %w", store, err)
	case st != http.StatusOK:
		compileErr = httpError("POST context/compile (first, on "+store+")", st, rb)
	default:
		if _, err := checkBundle(rb, true, c.nodes); err != nil {
			compileErr = fmt.Errorf("first compile on %s: %w", store, err)
		}
	}
	if compileErr != nil {
		compileErr = fmt.Errorf("%w\nkurad log tail (%s):\n%s", compileErr, k.logPath, tail(k.logPath, 600))
	}
	warm := max(10, c.reqs/10)
	if l, err := b.latencyLoop(ctx, k, warm, func(i int) (string, string, []byte) {
		if i%2 == 0 {
			return http.MethodPost, base + "preview", body()
		}
		return http.MethodGet, searchURL(distinctWords(r, 1+i%3)), nil
	}, nil); warmErr(l, err) != nil {
		return nil, nil, fmt.Errorf("%s warm-up: %w", store, warmErr(l, err))
	}
	bodies := make([][]byte, c.reqs)
	for i := range bodies {
		bodies[i] = body()
	}
	qs := make([]string, searches)
	for i := range qs {
		qs[i] = distinctWords(r, 1+i%3)
	}
	var all []time.Duration
	var cpus []*CPU
	for _, op := range pgLatencyOps {
		var l *loop
		var err error
		switch op {
		case "compile", "preview":
			if op == "compile" && compileErr != nil {
				continue
			}
			l, err = b.latencyLoop(ctx, k, len(bodies), func(i int) (string, string, []byte) {
				return http.MethodPost, base + op, bodies[i]
			}, func(_ int, rb []byte) error {
				_, err := checkBundle(rb, op == "compile", c.nodes)
				return err
			})
		default:
			l, err = b.latencyLoop(ctx, k, len(qs), func(i int) (string, string, []byte) {
				return http.MethodGet, searchURL(qs[i]), nil
			}, func(i int, rb []byte) error {
				_, err := checkSearch(rb, qs[i], ":c")
				return err
			})
		}
		if l != nil {
			run := l.run(op + "_" + store)
			res.Runs = append(res.Runs, run)
			if op != "preview" {
				all = append(all, l.lat...)
			}
			cpus = append(cpus, l.cpu)
			b.logf("%s on %s: %d requests p50 %.2f ms p99 %.2f ms errors %d%s", op, store, len(l.lat), run.P50ms, run.P99ms, l.errs, cpuLine(l.cpu))
		}
		if err != nil {
			return all, cpus, fmt.Errorf("%s on %s: %w", op, store, err)
		}
	}
	return all, cpus, compileErr
}

// pgLatencyOps are what pg_latency times on each store.
var pgLatencyOps = []string{"compile", "preview", "search"}

// cpuLine is a run's CPU shares for -v progress lines.
func cpuLine(c *CPU) string {
	if c == nil {
		return ""
	}
	s := fmt.Sprintf("; cpu bench %s kurad %s", pct(c.BenchShare), pct(c.KuradShare))
	if c.PostgresSeconds > 0 {
		s += " postgres " + pct(c.PostgresShare)
	}
	return s + " other " + pct(c.OtherShare)
}

// judgePG sets the PostgreSQL targets: single-record ingest against
// SQLite's in the same run, two kurads against one; batch ingest and the
// latencies are reported as ratios without a target.
func judgePG(b *bench, relative func(name, ref string, share float64)) {
	measured := func(name string) bool { r := b.result(name); return r != nil && len(r.Runs) > 0 }
	if measured("pg_single_record") {
		relative("pg_single_record", "single_record", pgSingleShare)
	}
	if measured("pg_two_hosts") {
		relative("pg_two_hosts", "pg_one_host", pgTwoFactor)
	}
	if r, one := b.result("pg_two_kurads"), b.result("pg_single_record"); r != nil && r.Error == "" && len(r.Runs) > 0 {
		if one != nil && one.Error == "" && one.Median > 0 {
			r.Params["ratio_to_pg_single_record"] = round(r.Median / one.Median)
		} else {
			r.Notes = append(r.Notes, "no ratio to pg_single_record: it did not run in this invocation")
		}
	}
	if r, base := b.result("pg_batch_1000"), b.result("batch_1000"); r != nil && r.Error == "" && len(r.Runs) > 0 {
		if base != nil && base.Error == "" && base.Median > 0 {
			r.Params["ratio_to_batch_1000"] = round(r.Median / base.Median)
		} else {
			r.Notes = append(r.Notes, "no ratio to batch_1000: it did not run in this invocation")
		}
	}
}

// printPG lists the PostgreSQL phases beside their SQLite references.
func printPG(w io.Writer, rep *Report) {
	byName := map[string]*PhaseResult{}
	for _, r := range rep.Phases {
		byName[r.Name] = r
	}
	var lines []string
	var settings map[string]string
	ratio := func(r *PhaseResult, ref string) string {
		if base := byName[ref]; base != nil && base.Error == "" && base.Median > 0 {
			return fmt.Sprintf(" = %.2f × %s (%s rows/s)", r.Median/base.Median, ref, thousands(base.Median))
		}
		return " (" + ref + " not run)"
	}
	cpu := func(c CPU) string {
		return fmt.Sprintf("cpu bench %s, kurad %s, postgres %s, other %s", pct(c.BenchShare), pct(c.KuradShare), pct(c.PostgresShare), pct(c.OtherShare))
	}
	for _, name := range pgPhases {
		r := byName[name]
		if r == nil || len(r.Runs) == 0 {
			continue
		}
		if s, ok := r.Params["postgres"].(map[string]string); ok {
			settings = s
		}
		switch name {
		case "pg_single_record", "pg_batch_1000":
			ref := strings.TrimPrefix(name, "pg_")
			lines = append(lines, fmt.Sprintf("  %s\t%s rows/s%s\tp50 %.2f / p99 %.2f ms\t%s%s", name, thousands(r.Median), ratio(r, ref), r.P50ms, r.P99ms, cpu(r.CPU), writeLock(r)))
		case "pg_two_kurads":
			lines = append(lines, fmt.Sprintf("  %s\t%s rows/s%s\tp50 %.2f / p99 %.2f ms\t%s%s", name, thousands(r.Median), ratio(r, "pg_single_record"), r.P50ms, r.P99ms, cpu(r.CPU), writeLock(r)))
		case "pg_one_host":
			lines = append(lines, fmt.Sprintf("  %s\t%s rows/s%s\tp50 %.2f / p99 %.2f ms\t%s%s%s", name, thousands(r.Median), ratio(r, "pg_single_record"), r.P50ms, r.P99ms, cpu(r.CPU), writeLock(r), budget(r)))
		case "pg_two_hosts":
			lines = append(lines, fmt.Sprintf("  %s\t%s rows/s%s\tp50 %.2f / p99 %.2f ms\t%s%s%s", name, thousands(r.Median), ratio(r, "pg_one_host"), r.P50ms, r.P99ms, cpu(r.CPU), writeLock(r), budget(r)))
		case "pg_latency":
			for _, op := range pgLatencyOps {
				s, p := r.Ops[op+"_sqlite"], r.Ops[op+"_pg"]
				line := fmt.Sprintf("  %s\t%s p50 / p99 ms: sqlite %.2f / %.2f, postgres %.2f / %.2f", name, op, s.P50ms, s.P99ms, p.P50ms, p.P99ms)
				if s.P99ms > 0 {
					line += fmt.Sprintf(" (p99 × %.2f)", p.P99ms/s.P99ms)
				}
				lines = append(lines, line+"\t\t"+cpu(r.CPU))
			}
		}
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintln(w, "\npostgresql (the same workloads as the SQLite phases named; cpu = share of the whole machine)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, l := range lines {
		fmt.Fprintln(tw, l)
	}
	tw.Flush()
	if settings != nil {
		fmt.Fprintf(w, "  server: PostgreSQL %s, fsync=%s, synchronous_commit=%s, full_page_writes=%s, wal_sync_method=%s, shared_buffers=%s\n",
			settings["server_version"], settings["fsync"], settings["synchronous_commit"], settings["full_page_writes"], settings["wal_sync_method"], settings["shared_buffers"])
	}
}

// budget says what the kurads held to a CPU budget were given and in how
// many of the quota's periods they spent all of it (median over the runs):
// a kurad that spends its budget is held by it, as a host's kurad by its
// cores.
func budget(r *PhaseResult) string {
	var spent []float64
	for _, run := range r.Runs {
		spent = append(spent, run.CPUThrottled)
	}
	if len(spent) == 0 {
		return ""
	}
	return fmt.Sprintf("; each kurad held to %v CPUs, spent in %s of its %v ms periods", r.Params["kurad_cpus"], pct(median(spent)), r.Params["cpu_quota_period_ms"])
}

// writeLock says how busy the write lock the kurads share was in r's runs
// (medians over the runs, from the kurads' metrics): the share of the
// timed window some kurad held it, how long a transaction held it, and
// the writes a transaction carried. Empty when the kurads did not report it.
func writeLock(r *PhaseResult) string {
	var busy, hold, batch []float64
	for _, run := range r.Runs {
		c := run.ServerCounters
		tx := c["kura_writer_transactions_total"]
		held, ok := c["kura_writer_lock_hold_duration_seconds_sum"]
		if !ok || tx <= 0 || run.Seconds <= 0 {
			continue
		}
		busy = append(busy, held/run.Seconds)
		hold = append(hold, held/tx*1000)
		batch = append(batch, c["kura_writer_jobs_total"]/tx)
	}
	if len(busy) == 0 {
		return ""
	}
	return fmt.Sprintf("; write lock held %s of the time, %.2f ms a transaction of %.1f writes", pct(median(busy)), median(hold), median(batch))
}
