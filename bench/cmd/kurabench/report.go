package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is bench/results.json.
type Report struct {
	Timestamp  string         `json:"timestamp"`
	Duration   float64        `json:"duration_s"`
	GoVersion  string         `json:"go_version"`
	GOMAXPROCS int            `json:"gomaxprocs"`
	NumCPU     int            `json:"num_cpu"`
	OS         string         `json:"os"`
	Arch       string         `json:"arch"`
	Quick      bool           `json:"quick"`
	LoadAvg    [2]string      `json:"loadavg_start_end"` // other work on the box skews every figure; this shows whether there was any
	Kurad      string         `json:"kurad,omitempty"`   // the binary given with -kurad, or the commit it was built from
	KuradInfo  map[string]any `json:"kurad_info,omitempty"`
	Pass       bool           `json:"pass"`
	Notes      []string       `json:"notes,omitempty"`
	Phases     []*PhaseResult `json:"phases"`
}

// PhaseResult is one phase's figures. Median is of Metric across runs: for
// throughput phases rows/s, and P50/P99 are the medians of each run's
// request-latency percentiles; for latency phases (hydrate, verify) each run
// is one timed operation and P50/P99 are taken over the runs.
type PhaseResult struct {
	Name      string         `json:"name"`
	Title     string         `json:"title"`
	Metric    string         `json:"metric"`
	Median    float64        `json:"median"`
	P50ms     float64        `json:"p50_ms"`
	P99ms     float64        `json:"p99_ms"`
	LatencyOf string         `json:"latency_of"`
	CPU       CPU            `json:"cpu"`
	DataDir   string         `json:"data_dir"`
	Params    map[string]any `json:"params,omitempty"`
	Runs      []Run          `json:"runs"`
	Targets   []Target       `json:"targets,omitempty"`
	Pass      *bool          `json:"pass"` // null: the phase has no target
	Notes     []string       `json:"notes,omitempty"`
	Error     string         `json:"error,omitempty"`
	Seconds   float64        `json:"phase_wall_s"` // setup included

	// Ops holds, for phases timing several request kinds (turns), each
	// kind's median over runs of the run's p50/p99.
	Ops map[string]OpLatency `json:"ops,omitempty"`

	// Resources holds the resources phase's figures (resources.go).
	Resources *Resources `json:"resources,omitempty"`

	// Recall holds a recall phase's figures (recall.go).
	Recall *RecallResult `json:"recall,omitempty"`
}

// Run is one timed run of a phase.
type Run struct {
	// Op names what the run timed, for phases timing several request
	// kinds in separate runs (memory_trace, memory_search, context_*).
	Op             string  `json:"op,omitempty"`
	Rows           int     `json:"rows,omitempty"`
	Turns          int     `json:"turns,omitempty"`
	TurnsPerSec    float64 `json:"turns_per_s,omitempty"`
	TurnsBySecond  []int   `json:"turns_by_second,omitempty"` // turns completed in each second of the window: shows a rate that drifts as sessions grow
	Requests       int     `json:"requests,omitempty"`
	Errors         int     `json:"errors"`
	Seconds        float64 `json:"seconds"`
	RowsPerSec     float64 `json:"rows_per_s,omitempty"`
	P50ms          float64 `json:"p50_ms,omitempty"`
	P99ms          float64 `json:"p99_ms,omitempty"`
	Ms             float64 `json:"ms,omitempty"`
	WallMs         float64 `json:"wall_ms,omitempty"`
	ClientDecodeMs float64 `json:"client_decode_ms,omitempty"`
	CPU            *CPU    `json:"cpu,omitempty"` // per run for throughput phases; latency phases measure CPU over all runs at once
	// CPUThrottled is the share of the quota periods in which the kurads
	// held to a CPU budget spent all of it (pg_*_host phases).
	CPUThrottled float64     `json:"cpu_throttled_share,omitempty"`
	ConnsOpened  *int64      `json:"conns_opened,omitempty"` // TCP dials during the run (keep-alive check)
	Statuses     map[int]int `json:"statuses,omitempty"`
	// Ops is each request kind's latency in this run (turns phase).
	Ops map[string]OpLatency `json:"ops,omitempty"`
	// ServerCounters are kurad's writer/store counters over the run (see
	// serverCounters); empty when kurad exports none.
	ServerCounters map[string]float64 `json:"server_counters,omitempty"`
	// Doorbell is what the doorbell phases saw on the NATS subscriber.
	Doorbell   *DoorbellRun `json:"doorbell,omitempty"`
	FirstError string       `json:"first_error,omitempty"`
}

// Target is one goal from the issue, judged on this run's figures.
type Target struct {
	Short string  `json:"short"`
	Text  string  `json:"text"`
	Op    string  `json:"op"`
	Want  float64 `json:"want"`
	Got   float64 `json:"got"`
	Ratio float64 `json:"ratio,omitempty"` // got / reference, for targets relative to a raw baseline
	Pass  bool    `json:"pass"`
	// Unit is "" for rates and milliseconds, "fraction" for recall and hit
	// rates (Ref is then the baseline's figure), "count" for counts.
	Unit string  `json:"unit,omitempty"`
	Ref  float64 `json:"ref,omitempty"`
}

func (r *PhaseResult) summarizeThroughput() {
	r.Median = round(medianOf(r.Runs, func(x Run) float64 { return x.RowsPerSec }))
	r.P50ms = round(medianOf(r.Runs, func(x Run) float64 { return x.P50ms }))
	r.P99ms = round(medianOf(r.Runs, func(x Run) float64 { return x.P99ms }))
	r.CPU = medianCPU(r.Runs)
}

func (r *PhaseResult) summarizeLatency(durs []time.Duration) {
	r.Median = round(medianOf(r.Runs, func(x Run) float64 { return x.Ms }))
	r.P50ms = round(percentile(durs, 0.50))
	r.P99ms = round(percentile(durs, 0.99))
}

// runErrors turns failed requests into the phase's error: the figures are
// kept, but a run with errors did not measure what it claims.
func (r *PhaseResult) runErrors() error {
	n, first := 0, ""
	for _, x := range r.Runs {
		n += x.Errors
		if first == "" {
			first = x.FirstError
		}
	}
	if n == 0 {
		return nil
	}
	return fmt.Errorf("%d requests failed or were deduplicated; first: %s", n, first)
}

// judge sets the targets of the issue on the phases that ran. Ingest is
// judged against the raw baseline of this same run, so machine speed cancels
// out; hydrate and verify have absolute bounds, scaled to the size actually
// run (only -quick shrinks them).
func judge(b *bench) {
	relative := func(name, ref string, share float64) {
		r, base := b.result(name), b.result(ref)
		if r == nil || r.Error != "" {
			return
		}
		if base == nil || base.Error != "" || base.Median == 0 {
			r.Notes = append(r.Notes, fmt.Sprintf("not judged against %s: it did not run in this invocation", ref))
			return
		}
		want := share * base.Median
		r.Targets = append(r.Targets, Target{
			Short: fmt.Sprintf("≥%.0f%% %s", share*100, ref),
			Text:  fmt.Sprintf("rows/s ≥ %.0f%% of %s (%s/s)", share*100, ref, thousands(want)),
			Op:    ">=", Want: round(want), Got: r.Median, Ratio: round(r.Median / base.Median),
			Pass: r.Median >= want,
		})
	}
	upper := func(name, short, what string, got, want float64) {
		r := b.result(name)
		if r == nil || r.Error != "" {
			return
		}
		w := strconv.FormatFloat(want, 'f', -1, 64)
		r.Targets = append(r.Targets, Target{
			Short: fmt.Sprintf("%s≤%sms", short, w),
			Text:  fmt.Sprintf("%s ≤ %s ms", what, w),
			Op:    "<=", Want: round(want), Got: got, Pass: got <= want,
		})
	}
	lower := func(name, short, what string, got, want float64) {
		r := b.result(name)
		if r == nil || r.Error != "" {
			return
		}
		w := thousands(want)
		r.Targets = append(r.Targets, Target{
			Short: fmt.Sprintf("%s≥%s", short, w),
			Text:  fmt.Sprintf("%s ≥ %s", what, w),
			Op:    ">=", Want: round(want), Got: got, Pass: got >= want,
		})
	}
	relative("single_record", "raw_batch_100", 0.40)
	if r := b.result("single_record"); r != nil {
		upper("single_record", "p99", fmt.Sprintf("p99 at %d clients", b.cfg.clients), r.P99ms, 25)
	}
	relative("batch_1000", "raw_batch_1000", 0.55)
	judgePG(b, relative)
	if r := b.result("hydrate_10k"); r != nil {
		upper("hydrate_10k", "", fmt.Sprintf("median full hydrate of %d", b.cfg.hydrateN), r.Median, 60*float64(b.cfg.hydrateN)/10_000)
	}
	if r := b.result("verify_100k"); r != nil {
		upper("verify_100k", "", fmt.Sprintf("median verify of %d", b.cfg.verifyN), r.Median, 1500*float64(b.cfg.verifyN)/100_000)
	}
	if r := b.result("turns"); r != nil {
		lower("turns", "", fmt.Sprintf("turns/s with %d sessions (open → append %d → close)", b.cfg.turnSessions, turnRecords), r.Median, turnsTarget)
	}
	if r := b.result("doorbell_latency"); r != nil {
		upper("doorbell_latency", "p99", fmt.Sprintf("commit → subscriber delivery p99 (delivery − HTTP answer, clamped at 0) at %s writes/s", thousands(doorbellRate)), r.P99ms, doorbellP99Target)
	}
	judgeOutbox(b)
	judgeMemory(b)
	judgeTraceDense(b)
	judgeKB(b)
	judgeResources(b)
	judgeRecall(b)
	judgeSpeed(b)
	judgeLog(b)
	for _, r := range b.results {
		if len(r.Targets) == 0 {
			continue
		}
		pass := true
		for _, t := range r.Targets {
			pass = pass && t.Pass
		}
		r.Pass = &pass
	}
}

func printTable(w io.Writer, rep *Report) {
	fmt.Fprintf(w, "\nkurabench %s  %s/%s  GOMAXPROCS=%d  cpus=%d", rep.GoVersion, rep.OS, rep.Arch, rep.GOMAXPROCS, rep.NumCPU)
	if rep.Quick {
		fmt.Fprint(w, "  (-quick: small sizes, targets only indicative)")
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "cpu = share of the whole machine over the timed part (bench = this load generator, kurad = the server(s), pg = PostgreSQL in the pg_* phases, other = every other process)")
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "phase\tmedian\t\tp50 ms\tp99 ms\truns\tcpu bench\tcpu kurad\tcpu pg\tcpu other\ttarget\tresult")
	for _, r := range rep.Phases {
		result := "-"
		if r.Pass != nil {
			result = passText(*r.Pass)
		}
		if r.Error != "" {
			result = "ERROR"
		}
		if len(r.Runs) == 0 {
			if r.Params["skipped"] == true {
				result = "skipped"
			}
			fmt.Fprintf(tw, "%s\t\t\t\t\t\t\t\t\t\t\t%s\n", r.Name, result)
			continue
		}
		median := thousands(r.Median)
		switch {
		case r.Metric == "ms":
			median = strconv.FormatFloat(r.Median, 'f', 2, 64)
		case r.Recall != nil:
			median = strconv.FormatFloat(r.Median, 'f', 3, 64)
		}
		cpuK := pct(r.CPU.KuradShare)
		if strings.HasPrefix(r.Name, "raw_") {
			cpuK = "-"
		}
		var short []string
		for _, t := range r.Targets {
			short = append(short, t.Short)
		}
		target := strings.Join(short, ", ")
		if target == "" {
			target = "-"
		}
		cpuPG := "-"
		if r.CPU.PostgresSeconds > 0 {
			cpuPG = pct(r.CPU.PostgresShare)
		}
		fmt.Fprintf(tw, "%s\t%10s\t%s\t%8.2f\t%8.2f\t%4d\t%9s\t%9s\t%6s\t%9s\t%s\t%s\n",
			r.Name, median, r.Metric, r.P50ms, r.P99ms, len(r.Runs), pct(r.CPU.BenchShare), cpuK, cpuPG, pct(r.CPU.OtherShare), target, result)
	}
	tw.Flush()

	fmt.Fprintln(w, "\ntargets")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rep.Phases {
		for _, t := range r.Targets {
			got := strconv.FormatFloat(t.Got, 'f', 2, 64)
			switch {
			case t.Unit == "fraction":
				got = fmt.Sprintf("%.3f = %.2f × baseline", t.Got, t.Ratio)
			case t.Unit == "count":
				got = thousands(t.Got)
			case t.Ratio != 0:
				got = fmt.Sprintf("%s/s = %.1f%%", thousands(t.Got), t.Ratio*100)
			}
			fmt.Fprintf(tw, "  %s\t%s\tgot %s\t%s\n", r.Name, t.Text, got, passText(t.Pass))
		}
	}
	tw.Flush()

	fmt.Fprintln(w, "\ndata and latency")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rep.Phases {
		fmt.Fprintf(tw, "  %s\t%s\t%s; latency of: %s\n", r.Name, r.Title, r.DataDir, r.LatencyOf)
	}
	tw.Flush()

	printOps(w, rep)
	printDoorbell(w, rep)
	printMemory(w, rep)
	printKB(w, rep)
	printResources(w, rep)
	printRecall(w, rep)
	printSpeed(w, rep)
	printPG(w, rep)

	for _, r := range rep.Phases {
		if r.Error != "" || len(r.Notes) > 0 {
			fmt.Fprintf(w, "\n%s (%s; %s)\n", r.Name, r.Title, r.DataDir)
			if r.Error != "" {
				fmt.Fprintf(w, "  ERROR: %s\n", indent(r.Error))
			}
			for _, n := range r.Notes {
				fmt.Fprintf(w, "  note: %s\n", indent(n))
			}
		}
	}
	if len(rep.Notes) > 0 {
		fmt.Fprintln(w, "\nnotes")
		for _, n := range rep.Notes {
			fmt.Fprintf(w, "  - %s\n", n)
		}
	}
	verdict := "PASS"
	if !rep.Pass {
		verdict = "FAIL (a target missed or a phase failed)"
	}
	fmt.Fprintf(w, "\noverall: %s\n", verdict)
}

// printOps lists the per-request latencies of phases that time several
// kinds of request (the turn loop).
func printOps(w io.Writer, rep *Report) {
	var withOps []*PhaseResult
	for _, r := range rep.Phases {
		// The doorbell's latencies are not requests; printDoorbell lists them.
		if _, ok := r.Ops["turn"]; ok {
			withOps = append(withOps, r)
		}
	}
	if len(withOps) == 0 {
		return
	}
	fmt.Fprintln(w, "\nrequest latency (median over runs of each run's p50 / p99, ms)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range withOps {
		fmt.Fprintf(tw, "  %s", r.Name)
		for _, op := range turnOps {
			if o, ok := r.Ops[op]; ok {
				fmt.Fprintf(tw, "	%s %.2f / %.2f", op, o.P50ms, o.P99ms)
			}
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

func passText(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

func pct(x float64) string { return fmt.Sprintf("%.0f%%", x*100) }

func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n    ") }

// thousands renders a rate as an integer with thin separators: 12,345.
func thousands(x float64) string {
	s := strconv.FormatInt(int64(x+0.5), 10)
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

func writeJSON(path string, rep *Report) error {
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	// Keys the bench does not write (the soak run's "soak") are kept from
	// the file it replaces.
	if old, err := os.ReadFile(path); err == nil {
		var prev, cur map[string]json.RawMessage
		if json.Unmarshal(old, &prev) == nil && json.Unmarshal(b, &cur) == nil {
			kept := false
			for k, v := range prev {
				if _, ours := cur[k]; !ours {
					cur[k], kept = v, true
				}
			}
			if kept {
				if b, err = json.MarshalIndent(cur, "", "  "); err != nil {
					return err
				}
			}
		}
	}
	// Write then rename, so an interrupted run never leaves half a file
	// where the last good results were.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
