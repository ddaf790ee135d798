package main

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestJudgePG checks the PostgreSQL targets are judged against the figures
// of the same run, and that a skipped or unreferenced phase gets no target
// it could fail.
func TestJudgePG(t *testing.T) {
	measured := func(name string, median float64) *PhaseResult {
		return &PhaseResult{Name: name, Median: median, Runs: []Run{{RowsPerSec: median}}, Params: map[string]any{}}
	}
	skipped := &PhaseResult{Name: "pg_single_record", Params: map[string]any{"skipped": true}}
	tests := []struct {
		name    string
		results []*PhaseResult
		want    map[string][]bool // phase → pass of each target
		ratio   float64           // pg_batch_1000's ratio_to_batch_1000 (0: none)
	}{
		{"all measured, both pass", []*PhaseResult{measured("single_record", 1000), measured("batch_1000", 20000), measured("pg_single_record", 600), measured("pg_batch_1000", 10000), measured("pg_two_kurads", 540), measured("pg_one_host", 200), measured("pg_two_hosts", 300)},
			map[string][]bool{"pg_single_record": {true}, "pg_two_hosts": {true}, "pg_two_kurads": nil, "pg_one_host": nil}, 0.5},
		{"both miss", []*PhaseResult{measured("single_record", 1000), measured("pg_single_record", 400), measured("pg_one_host", 200), measured("pg_two_hosts", 299)},
			map[string][]bool{"pg_single_record": {false}, "pg_two_hosts": {false}}, 0},
		{"two hosts without one: noted, not judged", []*PhaseResult{measured("pg_two_hosts", 300)},
			map[string][]bool{"pg_two_hosts": nil}, 0},
		{"no SQLite reference: noted, not judged", []*PhaseResult{measured("pg_single_record", 400)},
			map[string][]bool{"pg_single_record": nil}, 0},
		{"skipped: no target", []*PhaseResult{measured("single_record", 1000), skipped},
			map[string][]bool{"pg_single_record": nil}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := &bench{cfg: &config{clients: 64}, results: tc.results}
			judge(b)
			for name, want := range tc.want {
				r := b.result(name)
				var got []bool
				for _, x := range r.Targets {
					got = append(got, x.Pass)
				}
				if len(got) != len(want) {
					t.Fatalf("%s: targets %+v, want passes %v", name, r.Targets, want)
				}
				for i := range want {
					if got[i] != want[i] {
						t.Errorf("%s target %d: pass %v, want %v (%+v)", name, i, got[i], want[i], r.Targets[i])
					}
				}
				if len(want) == 0 && r.Pass != nil {
					t.Errorf("%s: pass set to %v without a target", name, *r.Pass)
				}
			}
			if r, one := b.result("pg_two_kurads"), b.result("pg_single_record"); r != nil {
				got, _ := r.Params["ratio_to_pg_single_record"].(float64)
				if want := r.Median / one.Median; got != round(want) {
					t.Errorf("pg_two_kurads ratio_to_pg_single_record = %v, want %v", got, round(want))
				}
			}
			if r := b.result("pg_batch_1000"); r != nil {
				if got, _ := r.Params["ratio_to_batch_1000"].(float64); got != tc.ratio {
					t.Errorf("ratio_to_batch_1000 = %v, want %v", got, tc.ratio)
				}
			}
		})
	}
}

// TestPostgresCPU checks the server's CPU counts its children's: a child
// that burns CPU and exits between two readings shows up in the difference
// (through the parent's reaped time), as a PostgreSQL backend does.
func TestPostgresCPU(t *testing.T) {
	// This test process plays the postmaster; a busy shell loop the backend.
	before := postgresCPU(os.Getpid())
	cmd := exec.Command("sh", "-c", `i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done`)
	if err := cmd.Run(); err != nil {
		t.Skipf("no sh: %v", err)
	}
	after := postgresCPU(os.Getpid())
	child := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	// Two clock ticks of slack: /proc counts in ticks, getrusage finer.
	slack := 2 * time.Second / time.Duration(clockTicks)
	if d := after - before; child < slack || d < child-slack {
		t.Fatalf("postgresCPU grew by %v over a child that used %v of CPU; want the child's CPU counted", d, child)
	}
	if postgresCPU(0) != 0 {
		t.Fatal("postgresCPU(0) must be 0 (no server)")
	}
}

// TestWriteLock checks the write lock's figures are medians over the runs
// that reported them, and absent when none did (SQLite, an older kurad).
func TestWriteLock(t *testing.T) {
	run := func(seconds, held, tx, jobs float64) Run {
		return Run{Seconds: seconds, ServerCounters: map[string]float64{
			"kura_writer_lock_hold_duration_seconds_sum": held,
			"kura_writer_transactions_total":             tx, "kura_writer_jobs_total": jobs}}
	}
	tests := []struct {
		name string
		runs []Run
		want string
	}{
		{"three runs", []Run{run(10, 8, 4000, 64000), run(10, 6, 3000, 48000), run(10, 7, 3500, 70000)},
			"; write lock held 70% of the time, 2.00 ms a transaction of 16.0 writes"},
		{"one run without the metric", []Run{run(10, 5, 2500, 50000), {Seconds: 10, ServerCounters: map[string]float64{"kura_writer_transactions_total": 9}}},
			"; write lock held 50% of the time, 2.00 ms a transaction of 20.0 writes"},
		{"no metric", []Run{{Seconds: 10, ServerCounters: map[string]float64{"kura_writer_transactions_total": 9}}}, ""},
		{"no transaction", []Run{run(10, 0, 0, 0)}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := writeLock(&PhaseResult{Runs: tc.runs}); got != tc.want {
				t.Errorf("writeLock = %q, want %q", got, tc.want)
			}
		})
	}
}
