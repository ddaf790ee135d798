package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/kura-memory/kura/internal/kura"
)

// maxConsecutiveErrors ends a client's loop when kurad stops answering, so a
// dead server costs one error burst, not a full run of failed requests.
const maxConsecutiveErrors = 50

// tally is what the clients of one timed window counted.
type tally struct {
	mu       sync.Mutex
	lat      []time.Duration
	ok       int // requests answered 201
	dedup    int // 200 with deduplicated: unexpected, every content is unique
	errs     int // transport errors and any other status
	statuses map[int]int
	firstErr string
}

func (t *tally) add(lat []time.Duration, ok, dedup, errs int, statuses map[int]int, firstErr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lat = append(t.lat, lat...)
	t.ok += ok
	t.dedup += dedup
	t.errs += errs
	if t.statuses == nil {
		t.statuses = map[int]int{}
	}
	for s, n := range statuses {
		t.statuses[s] += n
	}
	if t.firstErr == "" {
		t.firstErr = firstErr
	}
}

// post sends one JSON body and drains the answer so the connection goes
// back to the pool; keep the body only when asked (errors, shape checks).
func (b *bench) post(ctx context.Context, url string, body []byte, keep bool) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	if keep || resp.StatusCode/100 != 2 {
		rb, err := io.ReadAll(resp.Body)
		return resp.StatusCode, rb, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil, err
}

// singlePhase: 64 keep-alive clients, each POSTing one record at a time for
// a fixed duration, to the kurads of be (split evenly across them).
func (b *bench) singlePhase(ctx context.Context, be backend) (*PhaseResult, error) {
	res := &PhaseResult{
		Title:     fmt.Sprintf("POST /v1/records, %d clients%s", b.cfg.clients, be.title(b.cfg.hostCPUs)),
		Metric:    "rows/s",
		LatencyOf: "request",
		DataDir:   be.dataDir("holding only the warm-up's records"),
		Params: map[string]any{
			"clients":        b.cfg.clients,
			"run_seconds":    b.cfg.singleDur.Seconds(),
			"warmup_seconds": b.cfg.warmup.Seconds(),
			"keep_alive":     true,
		},
	}
	be.params(res, b.cfg.hostCPUs)
	for run := range b.cfg.runs {
		r, err := b.singleRun(ctx, run, res, be)
		if err != nil {
			return res, err
		}
		res.Runs = append(res.Runs, r)
	}
	res.summarizeThroughput()
	return res, res.runErrors()
}

// singleRun measures one window on kurads of its own: every run starts
// from an empty database, as every raw run starts from an empty file, so
// the ratio compares like with like.
func (b *bench) singleRun(ctx context.Context, run int, res *PhaseResult, be backend) (Run, error) {
	f, err := b.startBackend(ctx, be, fmt.Sprintf("single-%d", run))
	if err != nil {
		return Run{}, err
	}
	defer b.stopFleet(f, res)
	if run == 0 {
		if err := b.checkRecordShape(ctx, f.kurads); err != nil {
			return Run{}, err
		}
	}
	// Warm-up: open all 64 connections and let kurad settle before the
	// clock runs; not recorded.
	b.singleWindow(ctx, f.kurads, fmt.Sprintf("w%d", run), b.cfg.warmup)
	if err := f.alive(); err != nil {
		return Run{}, err
	}
	counters0 := b.fleetCounters(ctx, f)
	dials0 := b.dials.Load()
	cpu := f.meter()
	ran0, spent0 := f.periods()
	t, elapsed := b.singleWindow(ctx, f.kurads, fmt.Sprintf("s%d", run), b.cfg.singleDur)
	c := cpu.stop()
	ran, spent := f.periods()
	dials := b.dials.Load() - dials0
	r := Run{
		ServerCounters: counterDelta(counters0, b.fleetCounters(ctx, f)),
		Rows:           t.ok, Requests: len(t.lat), Errors: t.errs + t.dedup, Seconds: round(elapsed.Seconds()),
		RowsPerSec: round(float64(t.ok) / elapsed.Seconds()),
		P50ms:      round(percentile(t.lat, 0.50)), P99ms: round(percentile(t.lat, 0.99)),
		CPU: c, ConnsOpened: &dials, Statuses: t.statuses, FirstError: t.firstErr,
	}
	if be.host {
		if ran > ran0 {
			r.CPUThrottled = round(float64(spent-spent0) / float64(ran-ran0))
		}
	}
	if t.dedup > 0 {
		r.FirstError = fmt.Sprintf("%d answers were 200 deduplicated for unique content; %s", t.dedup, r.FirstError)
	}
	b.logf("run %d: %.0f rows/s p50 %.2f ms p99 %.2f ms errors %d, %d connections opened%s", run+1, r.RowsPerSec, r.P50ms, r.P99ms, r.Errors, dials, cpuLine(c))
	if dials > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("run %d opened %d TCP connections after the warm-up: keep-alive did not hold for every client (kurad closed connections?)", run+1, dials))
	}
	return r, nil
}

// singleWindow runs the clients for d and returns what they counted and
// the wall time until the last one finished. Client c talks to
// kurads[c % len(kurads)].
func (b *bench) singleWindow(ctx context.Context, kurads []*kuradProc, tag string, d time.Duration) (*tally, time.Duration) {
	t := &tally{}
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	// A hard cap per client as well as the deadline: even a server far
	// faster than any SQLite cannot make the loop run away.
	maxPerClient := int(d.Seconds()*20_000) + 1
	for c := range b.cfg.clients {
		wg.Add(1)
		url := kurads[c%len(kurads)].base + "/v1/records"
		go func() {
			defer wg.Done()
			stream := fmt.Sprintf("%s-c%d", tag, c)
			lat := make([]time.Duration, 0, 4096)
			statuses := map[int]int{}
			var ok, dedup, errs, consecutive int
			var firstErr string
			for i := 0; i < maxPerClient && time.Now().Before(deadline) && ctx.Err() == nil; i++ {
				body := b.appendRecordInput(make([]byte, 0, 192), stream, i)
				t0 := time.Now()
				st, rb, err := b.post(ctx, url, body, false)
				el := time.Since(t0)
				switch {
				case err != nil:
					errs++
					consecutive++
					if firstErr == "" {
						firstErr = err.Error()
					}
				case st == http.StatusCreated:
					ok++
					consecutive = 0
					lat = append(lat, el)
				case st == http.StatusOK:
					dedup++
					consecutive = 0
					lat = append(lat, el)
				default:
					errs++
					consecutive++
					if firstErr == "" {
						firstErr = httpError("POST /v1/records", st, rb).Error()
					}
				}
				if err == nil {
					statuses[st]++
				}
				if consecutive >= maxConsecutiveErrors {
					break
				}
			}
			t.add(lat, ok, dedup, errs, statuses, firstErr)
		}()
	}
	wg.Wait()
	return t, time.Since(start)
}

// checkRecordShape sends one record to the first kurad and checks the
// answer is the record API.md promises, so the timed loop can count
// statuses without decoding bodies; then the same record to every kurad
// (kurads sharing a database must each answer it as already written).
func (b *bench) checkRecordShape(ctx context.Context, kurads []*kuradProc) error {
	k := kurads[0]
	body := b.appendRecordInput(nil, "shape", 0)
	st, rb, err := b.post(ctx, k.base+"/v1/records", body, true)
	if err != nil {
		return fmt.Errorf("POST /v1/records: %w", err)
	}
	if st != http.StatusCreated {
		return httpError("POST /v1/records (first record)", st, rb)
	}
	var r kura.Record
	if err := json.Unmarshal(rb, &r); err != nil {
		return fmt.Errorf("POST /v1/records answer is not a record: %w: %s", err, rb)
	}
	if !kura.ValidID(r.ID) || !kura.ValidHash(r.Hash) || !kura.ValidHash(r.ContentHash) || !kura.ValidHash(r.Seal) || r.Type != recordType || r.AuthorID != recordAuthor || r.CreatedAt == "" {
		return fmt.Errorf("POST /v1/records answer lacks id/hash/content_hash/seal/type/author_id/created_at: %s", rb)
	}
	// Posting the same record again must deduplicate; if it did not, the
	// unique-content precaution above would be hiding a bug, so say so.
	for i, k := range kurads {
		st, rb, err = b.post(ctx, k.base+"/v1/records", body, true)
		if err != nil {
			return fmt.Errorf("POST /v1/records (repeat to kurad %d): %w", i+1, err)
		}
		var again kura.Record
		if st != http.StatusOK || json.Unmarshal(rb, &again) != nil || !again.Deduplicated || again.ID != r.ID {
			return httpError(fmt.Sprintf("POST /v1/records (same record again to kurad %d of %d; want 200 deduplicated with the first id)", i+1, len(kurads)), st, rb)
		}
	}
	return nil
}

// batchPhase: a few clients, each POSTing 1,000 records per request, to
// the one kurad of be.
func (b *bench) batchPhase(ctx context.Context, be backend) (*PhaseResult, error) {
	const perReq = kura.MaxBatchRecords
	res := &PhaseResult{
		Title:     fmt.Sprintf("POST /v1/records/batch ×%d, %d clients%s", perReq, b.cfg.batchCli, be.title(b.cfg.hostCPUs)),
		Metric:    "rows/s",
		LatencyOf: "request (1,000 records)",
		DataDir:   be.dataDir("holding only the 1,000 warm-up records"),
		Params: map[string]any{
			"clients":          b.cfg.batchCli,
			"records_per_req":  perReq,
			"requests_per_run": b.cfg.batchReqs,
		},
	}
	be.params(res, b.cfg.hostCPUs)
	for run := range b.cfg.runs {
		r, err := b.batchRun(ctx, run, res, be)
		if err != nil {
			return res, err
		}
		res.Runs = append(res.Runs, r)
	}
	res.summarizeThroughput()
	return res, res.runErrors()
}

// batchRun measures one run on a kurad of its own (see singleRun).
func (b *bench) batchRun(ctx context.Context, run int, res *PhaseResult, be backend) (Run, error) {
	const perReq = kura.MaxBatchRecords
	if be.kurads != 1 {
		return Run{}, fmt.Errorf("batch runs talk to one kurad, not %d", be.kurads)
	}
	f, err := b.startBackend(ctx, be, fmt.Sprintf("batch-%d", run))
	if err != nil {
		return Run{}, err
	}
	defer b.stopFleet(f, res)
	k := f.kurads[0]
	// One untimed request checks the answer's shape and warms kurad up.
	if _, err := b.ingestBatch(ctx, k, fmt.Sprintf("bw%d", run), perReq, 1); err != nil {
		return Run{}, err
	}
	// Bodies are built before the clock starts so the load generator's
	// share of the CPU is the HTTP work, not JSON building.
	stream := fmt.Sprintf("b%d", run)
	bodies := make([][]byte, b.cfg.batchReqs)
	for i := range bodies {
		bodies[i] = b.batchBody(stream, i*perReq, perReq)
	}
	counters0 := b.serverCounters(ctx, k)
	cpu := f.meter()
	t, elapsed := b.batchWindow(ctx, k, bodies)
	c := cpu.stop()
	r := Run{
		ServerCounters: counterDelta(counters0, b.serverCounters(ctx, k)),
		Rows:           t.ok * perReq, Requests: len(t.lat), Errors: t.errs, Seconds: round(elapsed.Seconds()),
		RowsPerSec: round(float64(t.ok*perReq) / elapsed.Seconds()),
		P50ms:      round(percentile(t.lat, 0.50)), P99ms: round(percentile(t.lat, 0.99)),
		CPU: c, Statuses: t.statuses, FirstError: t.firstErr,
	}
	b.logf("run %d: %.0f rows/s p50 %.2f ms p99 %.2f ms errors %d%s", run+1, r.RowsPerSec, r.P50ms, r.P99ms, r.Errors, cpuLine(c))
	return r, nil
}

// batchWindow sends every body once, from batchCli clients pulling from a
// shared queue.
func (b *bench) batchWindow(ctx context.Context, k *kuradProc, bodies [][]byte) (*tally, time.Duration) {
	url := k.base + "/v1/records/batch"
	queue := make(chan []byte, len(bodies))
	for _, body := range bodies {
		queue <- body
	}
	close(queue)
	t := &tally{}
	var wg sync.WaitGroup
	start := time.Now()
	for range b.cfg.batchCli {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lat []time.Duration
			statuses := map[int]int{}
			var ok, errs int
			var firstErr string
			for body := range queue {
				if ctx.Err() != nil {
					break
				}
				t0 := time.Now()
				st, rb, err := b.post(ctx, url, body, false)
				el := time.Since(t0)
				if err != nil {
					errs++
					if firstErr == "" {
						firstErr = err.Error()
					}
					continue
				}
				statuses[st]++
				if st != http.StatusCreated {
					errs++
					if firstErr == "" {
						firstErr = httpError("POST /v1/records/batch", st, rb).Error()
					}
					continue
				}
				ok++
				lat = append(lat, el)
			}
			t.add(lat, ok, 0, errs, statuses, firstErr)
		}()
	}
	wg.Wait()
	return t, time.Since(start)
}

// ingestBatch writes n records of a stream through the batch endpoint
// (clients requests in flight at most) and returns their ids in input order,
// checking every answer: 201, as many records as sent, in order.
func (b *bench) ingestBatch(ctx context.Context, k *kuradProc, stream string, n, clients int) ([]string, error) {
	const perReq = kura.MaxBatchRecords
	ids := make([]string, n)
	type job struct{ first, count int }
	jobs := make(chan job)
	errc := make(chan error, clients)
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				body := b.batchBody(stream, j.first, j.count)
				st, rb, err := b.post(ctx, k.base+"/v1/records/batch", body, true)
				if err != nil {
					errc <- fmt.Errorf("POST /v1/records/batch: %w", err)
					return
				}
				if st != http.StatusCreated {
					errc <- httpError("POST /v1/records/batch", st, rb)
					return
				}
				var out struct {
					Records []kura.Record `json:"records"`
				}
				if err := json.Unmarshal(rb, &out); err != nil {
					errc <- fmt.Errorf("POST /v1/records/batch answer: %w", err)
					return
				}
				if len(out.Records) != j.count {
					errc <- fmt.Errorf("POST /v1/records/batch: sent %d records, got %d back", j.count, len(out.Records))
					return
				}
				for i, r := range out.Records {
					var got bytes.Buffer
					_ = json.Compact(&got, r.Content)
					if !kura.ValidID(r.ID) || !bytes.Equal(got.Bytes(), b.content(stream, j.first+i)) {
						errc <- fmt.Errorf("POST /v1/records/batch: answer %d is not record %d of the request (id %q, content %s)", i, j.first+i, r.ID, r.Content)
						return
					}
					ids[j.first+i] = r.ID
				}
			}
		}()
	}
	var sendErr error
feed:
	for first := 0; first < n; first += perReq {
		select {
		case jobs <- job{first, min(perReq, n-first)}:
		case sendErr = <-errc:
			break feed
		case <-ctx.Done():
			sendErr = ctx.Err()
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	close(errc)
	if sendErr != nil {
		return nil, sendErr
	}
	for err := range errc {
		return nil, err
	}
	return ids, nil
}

// stopKurad stops k and records an unclean shutdown as a note: it is a
// server problem worth seeing, not a reason to discard the figures.
func (b *bench) stopKurad(k *kuradProc, res *PhaseResult) {
	if err := k.stop(); err != nil {
		res.Notes = append(res.Notes, "shutdown: "+err.Error()+"\nlog tail:\n"+tail(k.logPath, 1024))
	}
	if k.cpu != nil {
		if err := k.cpu.remove(); err != nil {
			res.Notes = append(res.Notes, err.Error())
		}
	}
	// A full run writes a few hundred MB of data dirs; keep only the logs.
	if !b.cfg.keep {
		_ = os.RemoveAll(k.dataDir)
	}
}
