package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The log phases of issue 20:
//
//	log_overhead    single_record and batch_1000 runs with the Merkle log off
//	                and on, interleaved on fresh kurads: the ratio on/off
//	log_checkpoint  GET /v1/log/checkpoint while 1,000 records/s are written
//	log_witness     a kura witness following a kurad written at 1,000
//	                records/s: how far its cosigned tree lags the log
const (
	logOverheadShare   = 0.90 // throughput with the log on ≥ 90% of off
	checkpointP99      = 2.0  // ms
	witnessRate        = 1000 // writes/s the witness must follow
	witnessLagTargetS  = 2.0  // seconds of writes the cosigned tree may lag (p99)
	witnessCatchUpMs   = 2000 // after the last write, the witness cosigns it within
	checkpointFetches  = 5000
	witnessRunDuration = 20 * time.Second
)

// logOverheadPhase alternates log-off and log-on runs of the single-record
// and batch measurements, so drift of the machine hits both alike.
func (b *bench) logOverheadPhase(ctx context.Context) (*PhaseResult, error) {
	res := &PhaseResult{
		Title:   "write throughput, Merkle log on vs off (single_record and batch_1000 runs, interleaved)",
		Metric:  "on/off",
		DataDir: "fresh kurad and data dir per run; off = kurad --log=off",
		Params:  map[string]any{"clients": b.cfg.clients, "batch_clients": b.cfg.batchCli, "runs_each": b.cfg.runs},
	}
	defer func() { b.kuradArgs = nil }()
	for run := range b.cfg.runs {
		for _, mode := range []string{"off", "on"} {
			b.kuradArgs = []string{"--log=" + mode}
			r, err := b.singleRun(ctx, 100+run*2+len(mode), res, sqliteBackend)
			if err != nil {
				return res, err
			}
			r.Op = "single_" + mode
			res.Runs = append(res.Runs, r)
			r, err = b.batchRun(ctx, 100+run*2+len(mode), res, sqliteBackend)
			if err != nil {
				return res, err
			}
			r.Op = "batch_" + mode
			res.Runs = append(res.Runs, r)
		}
	}
	b.kuradArgs = nil
	med := func(op string) float64 {
		var xs []float64
		for _, r := range res.Runs {
			if r.Op == op {
				xs = append(xs, r.RowsPerSec)
			}
		}
		return round(median(xs))
	}
	for _, op := range []string{"single_off", "single_on", "batch_off", "batch_on"} {
		res.Params[op+"_rows_per_s"] = med(op)
	}
	single := round(med("single_on") / med("single_off"))
	batch := round(med("batch_on") / med("batch_off"))
	res.Params["single_ratio"], res.Params["batch_ratio"] = single, batch
	res.Median = min(single, batch)
	b.logf("log on/off: single %.0f/%.0f rows/s (%.3f), batch %.0f/%.0f rows/s (%.3f)",
		med("single_on"), med("single_off"), single, med("batch_on"), med("batch_off"), batch)
	return res, res.runErrors()
}

// paced writes records at rate/s from a few clients until stop closes,
// counting what was written; it returns when every client is done.
func (b *bench) paced(ctx context.Context, k *kuradProc, tag string, rate int, stop <-chan struct{}, written *atomic.Int64, failed *atomic.Int64) {
	const clients = 16
	var wg sync.WaitGroup
	interval := time.Duration(clients) * time.Second / time.Duration(rate)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(interval)
			defer t.Stop()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-ctx.Done():
					return
				case <-t.C:
				}
				body := b.appendRecordInput(nil, fmt.Sprintf("%s-%d", tag, c), i)
				st, _, err := b.post(ctx, k.base+"/v1/records", body, false)
				if err != nil || st != http.StatusCreated {
					failed.Add(1)
					continue
				}
				written.Add(1)
			}
		}()
	}
	wg.Wait()
}

// logCheckpointPhase times checkpoint fetches while the log grows.
func (b *bench) logCheckpointPhase(ctx context.Context) (*PhaseResult, error) {
	res := &PhaseResult{
		Title:     fmt.Sprintf("GET /v1/log/checkpoint, one keep-alive client, while %d records/s are written", witnessRate),
		Metric:    "fetches/s",
		LatencyOf: "request",
		DataDir:   "fresh kurad",
		Params:    map[string]any{"fetches": checkpointFetches, "write_rate": witnessRate},
	}
	k, err := b.startKurad(ctx, "log-checkpoint")
	if err != nil {
		return res, err
	}
	defer b.stopKurad(k, res)
	stop := make(chan struct{})
	var written, failed atomic.Int64
	done := make(chan struct{})
	go func() { b.paced(ctx, k, "cp", witnessRate, stop, &written, &failed); close(done) }()
	lat := make([]time.Duration, 0, checkpointFetches)
	errs := 0
	first := ""
	sizes := map[string]bool{}
	start := time.Now()
	for i := 0; i < checkpointFetches && ctx.Err() == nil; i++ {
		t0 := time.Now()
		resp, err := b.client.Get(k.base + "/v1/log/checkpoint")
		if err != nil {
			errs++
			if first == "" {
				first = err.Error()
			}
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		el := time.Since(t0)
		if resp.StatusCode != 200 {
			errs++
			if first == "" {
				first = httpError("GET /v1/log/checkpoint", resp.StatusCode, body).Error()
			}
			continue
		}
		lat = append(lat, el)
		if lines := strings.SplitN(string(body), "\n", 3); len(lines) == 3 {
			sizes[lines[1]] = true
		}
	}
	elapsed := time.Since(start)
	close(stop)
	<-done
	res.Runs = append(res.Runs, Run{Requests: len(lat), Errors: errs + int(failed.Load()), FirstError: first, Seconds: round(elapsed.Seconds()),
		RowsPerSec: round(float64(len(lat)) / elapsed.Seconds()), P50ms: round(percentile(lat, 0.5)), P99ms: round(percentile(lat, 0.99))})
	res.Median, res.P50ms, res.P99ms = res.Runs[0].RowsPerSec, res.Runs[0].P50ms, res.Runs[0].P99ms
	res.Params["distinct_tree_sizes_seen"] = len(sizes)
	res.Params["records_written"] = written.Load()
	b.logf("checkpoint fetch p50 %.3f ms p99 %.3f ms over %d fetches, %d tree sizes seen, %d records written", res.P50ms, res.P99ms, len(lat), len(sizes), written.Load())
	return res, res.runErrors()
}

// prepareKura builds ./cmd/kura (the witness) once.
func (b *bench) prepareKura(ctx context.Context) (string, error) {
	if b.kura != "" {
		return b.kura, nil
	}
	bin := filepath.Join(b.tmp, "kura")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/kura")
	cmd.Dir = b.root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/kura: %w\n%s", err, out)
	}
	b.kura = bin
	return bin, nil
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// cosignedSize asks the witness for the size it cosigned of origin; -1
// while it has none.
func (b *bench) cosignedSize(ctx context.Context, witness, origin string) int64 {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, witness+"/v1/witness/checkpoint?origin="+origin, nil)
	resp, err := b.client.Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	lines := strings.SplitN(string(body), "\n", 3)
	if resp.StatusCode != 200 || len(lines) < 3 {
		return -1
	}
	n, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// logWitnessPhase runs a witness beside kurad, writes at witnessRate for
// witnessRunDuration, samples every 100 ms how many leaves the witness's
// cosigned tree lags the log, and times its catch-up after the last write.
func (b *bench) logWitnessPhase(ctx context.Context) (*PhaseResult, error) {
	res := &PhaseResult{
		Title:   fmt.Sprintf("kura witness following kurad at %d writes/s", witnessRate),
		Metric:  "lag s (p99)",
		DataDir: "fresh kurad; witness state in a temp dir, polling every 100 ms and woken by NATS",
		Params:  map[string]any{"write_rate": witnessRate, "seconds": witnessRunDuration.Seconds()},
	}
	kuraBin, err := b.prepareKura(ctx)
	if err != nil {
		return res, err
	}
	k, err := b.startKurad(ctx, "log-witness")
	if err != nil {
		return res, err
	}
	defer b.stopKurad(k, res)
	var info struct {
		Origin string `json:"log_origin"`
	}
	if resp, err := b.client.Get(k.base + "/v1/info"); err == nil {
		json.NewDecoder(resp.Body).Decode(&info)
		resp.Body.Close()
	}
	addr, err := freeAddr()
	if err != nil {
		return res, err
	}
	state := filepath.Join(b.tmp, "witness-state")
	os.RemoveAll(state)
	logf, err := os.Create(state + ".log")
	if err != nil {
		return res, err
	}
	defer logf.Close()
	w := exec.CommandContext(ctx, kuraBin, "witness", "--state", state, "--listen", addr, "--log", k.base,
		"--poll", "100ms", "--nats", "nats://"+k.nats)
	w.Stdout, w.Stderr = logf, logf
	if err := w.Start(); err != nil {
		return res, fmt.Errorf("start kura witness: %w", err)
	}
	defer func() { w.Process.Signal(os.Interrupt); w.Wait() }()
	witness := "http://" + addr
	// One write, then wait for the witness to cosign it: it is up.
	b.post(ctx, k.base+"/v1/records", b.appendRecordInput(nil, "wup", 0), false)
	up := time.Now().Add(30 * time.Second)
	for b.cosignedSize(ctx, witness, info.Origin) < 1 {
		if time.Now().After(up) || ctx.Err() != nil {
			return res, fmt.Errorf("the witness cosigned nothing within 30 s (log %s)", state+".log")
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop := make(chan struct{})
	var written, failed atomic.Int64
	done := make(chan struct{})
	start := time.Now()
	go func() { b.paced(ctx, k, "wit", witnessRate, stop, &written, &failed); close(done) }()
	var lags []float64 // seconds of writes behind
	var lagDur []time.Duration
	tick := time.NewTicker(100 * time.Millisecond)
	for time.Since(start) < witnessRunDuration && ctx.Err() == nil {
		<-tick.C
		logSize := int64(1) + written.Load()
		cos := b.cosignedSize(ctx, witness, info.Origin)
		if cos < 0 {
			continue
		}
		behind := float64(max(0, logSize-cos)) / witnessRate
		lags = append(lags, behind)
		lagDur = append(lagDur, time.Duration(behind*float64(time.Second)))
	}
	tick.Stop()
	close(stop)
	<-done
	elapsed := time.Since(start)
	final := 1 + written.Load()
	catch := time.Now()
	caught := false
	for time.Since(catch) < 30*time.Second && ctx.Err() == nil {
		if b.cosignedSize(ctx, witness, info.Origin) >= final {
			caught = true
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	catchMs := float64(time.Since(catch).Milliseconds())
	rate := float64(written.Load()) / elapsed.Seconds()
	p99 := percentile(lagDur, 0.99) / 1000
	res.Runs = append(res.Runs, Run{Rows: int(written.Load()), Errors: int(failed.Load()), Seconds: round(elapsed.Seconds()), RowsPerSec: round(rate)})
	res.Median = round(p99)
	res.Params["write_rate_achieved"] = round(rate)
	res.Params["lag_samples"] = len(lags)
	res.Params["lag_p50_s"] = round(percentile(lagDur, 0.5) / 1000)
	res.Params["lag_max_s"] = round(maxOf(lags))
	res.Params["catch_up_ms"] = catchMs
	res.Params["caught_up"] = caught
	b.logf("witness: %.0f writes/s for %.0f s, lag p50 %.3f s p99 %.3f s, caught up %v in %.0f ms", rate, elapsed.Seconds(), percentile(lagDur, 0.5)/1000, p99, caught, catchMs)
	return res, res.runErrors()
}

func maxOf(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// judgeLog sets the log phases' targets.
func judgeLog(b *bench) {
	if r := b.result("log_overhead"); r != nil && r.Error == "" && r.Params != nil {
		for _, op := range []string{"single", "batch"} {
			ratio, _ := r.Params[op+"_ratio"].(float64)
			r.Targets = append(r.Targets, Target{Short: fmt.Sprintf("%s ≥%.0f%%", op, logOverheadShare*100),
				Text: fmt.Sprintf("%s rows/s with the log on ≥ %.0f%% of off", op, logOverheadShare*100),
				Op:   ">=", Want: logOverheadShare, Got: ratio, Ratio: ratio, Pass: ratio >= logOverheadShare, Unit: "fraction"})
		}
	}
	if r := b.result("log_checkpoint"); r != nil && r.Error == "" {
		r.Targets = append(r.Targets, Target{Short: "p99≤2ms", Text: "checkpoint fetch p99 ≤ 2 ms",
			Op: "<=", Want: checkpointP99, Got: r.P99ms, Pass: r.P99ms <= checkpointP99})
	}
	if r := b.result("log_witness"); r != nil && r.Error == "" && r.Params != nil {
		rate, _ := r.Params["write_rate_achieved"].(float64)
		caught, _ := r.Params["caught_up"].(bool)
		catchMs, _ := r.Params["catch_up_ms"].(float64)
		r.Targets = append(r.Targets,
			Target{Short: "≥950 w/s", Text: fmt.Sprintf("writes/s driven ≥ 95%% of %d", witnessRate), Op: ">=", Want: 0.95 * witnessRate, Got: rate, Pass: rate >= 0.95*witnessRate},
			Target{Short: "lag p99≤2s", Text: "cosigned tree lags the log by ≤ 2 s of writes (p99 of 100 ms samples)", Op: "<=", Want: witnessLagTargetS, Got: r.Median, Pass: r.Median <= witnessLagTargetS},
			Target{Short: "catch-up≤2s", Text: "after the last write the witness cosigns it within 2 s", Op: "<=", Want: witnessCatchUpMs, Got: catchMs, Pass: caught && catchMs <= witnessCatchUpMs})
	}
}
