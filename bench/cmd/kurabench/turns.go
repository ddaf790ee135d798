package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/kura-memory/kura/internal/kura"
)

// The turn loop of the turns phase: every worker owns one session (one open
// turn per session) and repeats open → append turnRecords records in one
// request → close.
const (
	turnRecords     = 10
	turnProject     = "bench"
	instructionType = "task.instruction"
	deliverableType = "task.deliverable"
	userAuthor      = "user:bench"
	// turnsTarget is the goal on the 2-core box.
	turnsTarget = 300.0
)

// turnOps are the request kinds of a turn, plus the whole turn, in the
// order the report lists them.
var turnOps = []string{"open", "append", "close", "turn"}

// OpLatency is one request kind's latency over a run (or, on a phase, the
// median over runs of each run's percentiles).
type OpLatency struct {
	N     int     `json:"n"`
	P50ms float64 `json:"p50_ms"`
	P99ms float64 `json:"p99_ms"`
}

// turnWorker is one client and the session it owns. Only its goroutine
// writes it while a window runs.
type turnWorker struct {
	idx        int
	sessionID  string
	closed     int    // turns closed with 200 (complete or failed) over all windows
	failed     int    // of those, closed as failed after an error
	lastOutput string // output_ledger_id of the last close
}

// turnTally is what the workers of one window counted.
type turnTally struct {
	mu       sync.Mutex
	lat      map[string][]time.Duration
	turns    int // turns closed complete with every step answered as API.md says
	bySecond []int
	errs     int
	statuses map[int]int
	firstErr string
}

func (t *turnTally) add(lat map[string][]time.Duration, turns, errs int, statuses map[int]int, firstErr string, bySecond []int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, n := range bySecond {
		if i == len(t.bySecond) {
			t.bySecond = append(t.bySecond, 0)
		}
		t.bySecond[i] += n
	}
	if t.lat == nil {
		t.lat = map[string][]time.Duration{}
	}
	for op, l := range lat {
		t.lat[op] = append(t.lat[op], l...)
	}
	t.turns += turns
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

// turnsPhase: turnSessions workers, each looping open → append → close on
// its own session for a fixed duration.
func (b *bench) turnsPhase(ctx context.Context) (*PhaseResult, error) {
	n := b.cfg.turnSessions
	res := &PhaseResult{
		Title:     fmt.Sprintf("turn loop open → append %d records (one request) → close, %d sessions", turnRecords, n),
		Metric:    "turns/s",
		LatencyOf: fmt.Sprintf("POST /v1/turns/{id}/records (%d records); open, close and the whole turn under `ops`", turnRecords),
		DataDir:   "fresh kurad and data dir per run (holding only the warm-up's turns)",
		Params: map[string]any{
			"sessions":         n,
			"records_per_turn": turnRecords,
			"run_seconds":      b.cfg.turnDur.Seconds(),
			"warmup_seconds":   b.cfg.warmup.Seconds(),
			"keep_alive":       true,
			"turn":             "POST /v1/sessions/{id}/turns (instruction, context []) → POST /v1/turns/{id}/records (9 agent.thought + 1 task.deliverable) → POST /v1/turns/{id}/close complete",
		},
	}
	for run := range b.cfg.runs {
		r, err := b.turnRun(ctx, run, res)
		if r != nil {
			res.Runs = append(res.Runs, *r)
		}
		if err != nil {
			res.summarizeTurns()
			return res, err
		}
	}
	res.summarizeTurns()
	return res, res.runErrors()
}

// summarizeTurns: the median of turns/s, of the append request's
// percentiles (the phase's p50/p99), of every op's percentiles, and of the
// records/s the turns wrote.
func (r *PhaseResult) summarizeTurns() {
	if len(r.Runs) == 0 {
		return
	}
	r.summarizeThroughput()
	r.Params["median_records_per_s"] = r.Median
	r.Median = round(medianOf(r.Runs, func(x Run) float64 { return x.TurnsPerSec }))
	r.Ops = map[string]OpLatency{}
	for _, op := range turnOps {
		r.Ops[op] = OpLatency{
			N:     int(medianOf(r.Runs, func(x Run) float64 { return float64(x.Ops[op].N) })),
			P50ms: round(medianOf(r.Runs, func(x Run) float64 { return x.Ops[op].P50ms })),
			P99ms: round(medianOf(r.Runs, func(x Run) float64 { return x.Ops[op].P99ms })),
		}
	}
}

// turnRun measures one window on a kurad of its own, then checks the
// sessions it wrote (and, on the first run, the turn contract). The run's
// figures come back even when a check fails, so the report shows both.
func (b *bench) turnRun(ctx context.Context, run int, res *PhaseResult) (*Run, error) {
	k, err := b.startKurad(ctx, fmt.Sprintf("turns-%d", run))
	if err != nil {
		return nil, err
	}
	defer b.stopKurad(k, res)
	workers := make([]*turnWorker, b.cfg.turnSessions)
	for i := range workers {
		s, err := b.createSession(ctx, k, fmt.Sprintf("r%d-s%d", run, i))
		if err != nil {
			return nil, err
		}
		workers[i] = &turnWorker{idx: i, sessionID: s}
	}
	// Warm-up: open every connection, give every session a history and let
	// kurad settle before the clock runs; not recorded.
	if t, _ := b.turnWindow(ctx, k, workers, fmt.Sprintf("w%d", run), b.cfg.warmup); t.errs > 0 {
		if err := k.alive(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("warm-up: %d turn requests failed; first: %s", t.errs, t.firstErr)
	}
	if err := k.alive(); err != nil {
		return nil, err
	}
	counters0 := b.serverCounters(ctx, k)
	dials0 := b.dials.Load()
	cpu := startCPU(k.pid())
	t, elapsed := b.turnWindow(ctx, k, workers, fmt.Sprintf("t%d", run), b.cfg.turnDur)
	c := cpu.stop()
	dials := b.dials.Load() - dials0
	requests := 0
	for _, op := range turnOps[:3] {
		requests += len(t.lat[op])
	}
	r := &Run{
		ServerCounters: counterDelta(counters0, b.serverCounters(ctx, k)),
		Turns:          t.turns, Rows: t.turns * turnRecords, Requests: requests, Errors: t.errs, Seconds: round(elapsed.Seconds()),
		TurnsPerSec: round(float64(t.turns) / elapsed.Seconds()),
		RowsPerSec:  round(float64(t.turns*turnRecords) / elapsed.Seconds()),
		P50ms:       round(percentile(t.lat["append"], 0.50)), P99ms: round(percentile(t.lat["append"], 0.99)),
		Ops: map[string]OpLatency{}, TurnsBySecond: t.bySecond,
		CPU: c, ConnsOpened: &dials, Statuses: t.statuses, FirstError: t.firstErr,
	}
	for _, op := range turnOps {
		r.Ops[op] = OpLatency{N: len(t.lat[op]), P50ms: round(percentile(t.lat[op], 0.50)), P99ms: round(percentile(t.lat[op], 0.99))}
	}
	b.logf("run %d: turns completed in each second of the window: %v", run+1, t.bySecond)
	b.logf("run %d: %.0f turns/s (%d turns in %.2f s); p50/p99 ms open %.2f/%.2f append %.2f/%.2f close %.2f/%.2f; errors %d, %d connections opened",
		run+1, r.TurnsPerSec, r.Turns, elapsed.Seconds(), r.Ops["open"].P50ms, r.Ops["open"].P99ms, r.P50ms, r.P99ms, r.Ops["close"].P50ms, r.Ops["close"].P99ms, r.Errors, dials)
	if dials > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("run %d opened %d TCP connections after the warm-up: keep-alive did not hold for every client (kurad closed connections?)", run+1, dials))
	}
	// A rate that falls within one window means a turn costs more as the
	// database grows, and the median hides how fast: say so.
	if full := int(b.cfg.turnDur / time.Second); full >= 2 && len(t.bySecond) >= full {
		first, last := t.bySecond[0], t.bySecond[full-1]
		if float64(last) < 0.7*float64(first) {
			res.Notes = append(res.Notes, fmt.Sprintf("run %d: the turn rate fell from %d/s in the first second to %d/s in the last (turns_by_second %v): a turn costs more as the database grows", run+1, first, last, t.bySecond))
		}
	}
	if err := k.alive(); err != nil {
		return r, err
	}
	// Correctness, untimed: one session's chain verifies and holds two
	// ledgers per closed turn.
	t0 := time.Now()
	if err := b.checkSession(ctx, k, workers[0], res); err != nil {
		return r, err
	}
	if run == 0 {
		res.Params["check_session_ms"] = round(ms(time.Since(t0)))
		if err := b.checkTurnContract(ctx, k); err != nil {
			return r, err
		}
	}
	return r, nil
}

// turnWindow runs every worker's loop for d and returns what they counted
// and the wall time until the last one finished its turn.
func (b *bench) turnWindow(ctx context.Context, k *kuradProc, workers []*turnWorker, tag string, d time.Duration) (*turnTally, time.Duration) {
	t := &turnTally{}
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	// A hard cap as well as the deadline, so a broken server answering
	// instantly cannot make the loop run away.
	maxPerWorker := int(d.Seconds()*5_000) + 1
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			openURL := k.base + "/v1/sessions/" + w.sessionID + "/turns"
			lat := map[string][]time.Duration{}
			statuses := map[int]int{}
			var turns, errs, consecutive int
			var bySecond []int
			var firstErr string
			fail := func(what string, st int, rb []byte, err error) {
				errs++
				consecutive++
				if firstErr == "" {
					if err != nil {
						firstErr = what + ": " + err.Error()
					} else {
						firstErr = httpError(what, st, rb).Error()
					}
				}
			}
			for i := 0; i < maxPerWorker && time.Now().Before(deadline) && ctx.Err() == nil && consecutive < maxConsecutiveErrors; i++ {
				stream := fmt.Sprintf("%s-w%d-t%d", tag, w.idx, i)
				openBody := b.turnOpenBody(stream)
				appendBody := b.turnAppendBody(stream)

				t0 := time.Now()
				st, rb, err := b.post(ctx, openURL, openBody, true)
				tOpen := time.Since(t0)
				if err == nil {
					statuses[st]++
				}
				if err != nil || st != http.StatusCreated {
					fail("POST /v1/sessions/{id}/turns", st, rb, err)
					continue
				}
				var opened struct {
					ID string `json:"id"`
				}
				if json.Unmarshal(rb, &opened) != nil || !kura.ValidID(opened.ID) {
					fail("POST /v1/sessions/{id}/turns (201 without a turn id)", st, rb, nil)
					continue
				}
				turnURL := k.base + "/v1/turns/" + opened.ID

				t1 := time.Now()
				st, rb, err = b.post(ctx, turnURL+"/records", appendBody, false)
				tAppend := time.Since(t1)
				if err == nil {
					statuses[st]++
				}
				if err != nil || st != http.StatusOK {
					fail("POST /v1/turns/{id}/records", st, rb, err)
					// Close it as failed so the session can open its next
					// turn; the run reports the error either way.
					if st, _, err := b.post(ctx, turnURL+"/close", []byte(`{"status":"failed"}`), false); err == nil && st == http.StatusOK {
						w.closed++
						w.failed++
						w.lastOutput = ""
					}
					continue
				}

				t2 := time.Now()
				st, rb, err = b.post(ctx, turnURL+"/close", []byte(`{"status":"complete"}`), true)
				tClose := time.Since(t2)
				if err == nil {
					statuses[st]++
				}
				if err != nil || st != http.StatusOK {
					fail("POST /v1/turns/{id}/close", st, rb, err)
					continue
				}
				w.closed++
				var closed struct {
					ID             string `json:"id"`
					State          string `json:"state"`
					OutputLedgerID string `json:"output_ledger_id"`
				}
				if json.Unmarshal(rb, &closed) != nil || closed.ID != opened.ID || closed.State != kura.TurnComplete || !kura.ValidID(closed.OutputLedgerID) {
					w.lastOutput = ""
					fail(fmt.Sprintf("POST /v1/turns/%s/close (want 200 with this turn's id, state complete and an output_ledger_id)", opened.ID), st, rb, nil)
					continue
				}
				w.lastOutput = closed.OutputLedgerID
				consecutive = 0
				turns++
				lat["open"] = append(lat["open"], tOpen)
				lat["append"] = append(lat["append"], tAppend)
				lat["close"] = append(lat["close"], tClose)
				lat["turn"] = append(lat["turn"], time.Since(t0))
				sec := int(time.Since(start) / time.Second)
				for len(bySecond) <= sec {
					bySecond = append(bySecond, 0)
				}
				bySecond[sec]++
			}
			t.add(lat, turns, errs, statuses, firstErr, bySecond)
		}()
	}
	wg.Wait()
	return t, time.Since(start)
}

// turnOpenBody is the open request of a turn: a unique instruction, no
// extra context.
func (b *bench) turnOpenBody(stream string) []byte {
	buf := make([]byte, 0, 256)
	buf = append(buf, `{"instruction":{"type":"`+instructionType+`","content":`...)
	buf = append(buf, b.content(stream+"-instr", 0)...)
	buf = append(buf, `,"author_id":"`+userAuthor+`"},"context":[]}`...)
	return buf
}

// turnAppendBody is the append request of a turn: turnRecords unique
// records, agent.thoughts and a task.deliverable last, so kurad has no
// deliverable to add at close.
func (b *bench) turnAppendBody(stream string) []byte {
	buf := make([]byte, 0, turnRecords*200+16)
	buf = append(buf, `{"records":[`...)
	for i := range turnRecords - 1 {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = b.appendRecordInput(buf, stream, i)
	}
	buf = append(buf, `,{"type":"`+deliverableType+`","content":`...)
	buf = append(buf, b.content(stream, turnRecords-1)...)
	buf = append(buf, `,"author_id":"`+recordAuthor+`"}]}`...)
	return buf
}

// createSession creates project "bench", name as given, and checks the 201.
func (b *bench) createSession(ctx context.Context, k *kuradProc, name string) (string, error) {
	body, _ := json.Marshal(map[string]string{"project": turnProject, "name": name})
	st, rb, err := b.post(ctx, k.base+"/v1/sessions", body, true)
	if err != nil {
		return "", fmt.Errorf("POST /v1/sessions: %w", err)
	}
	if st != http.StatusCreated {
		return "", httpError("POST /v1/sessions", st, rb)
	}
	var s struct {
		ID      string `json:"id"`
		Project string `json:"project"`
		Name    string `json:"name"`
	}
	if err := json.Unmarshal(rb, &s); err != nil || !kura.ValidID(s.ID) || s.Project != turnProject || s.Name != name {
		return "", fmt.Errorf("POST /v1/sessions answer: want an id, project %q and name %q: %.300s", turnProject, name, rb)
	}
	return s.ID, nil
}

// logLedger is the part of a session log entry the check reads.
type logLedger struct {
	ID          string   `json:"id"`
	ParentIDs   []string `json:"parent_ids"`
	RecordCount *int     `json:"record_count"`
}

// checkSession verifies w's session and reads its whole log: verify must
// answer ok, and the log must hold two ledgers (output, then context) per
// closed turn, newest first, each the first parent of the one before,
// starting at the last output ledger and ending at the session's first
// context ledger. Record counts are checked when the log carries them and
// no turn was closed as failed: 10 in every output (the records appended, a
// deliverable among them), 2 in every context (instruction + the previous
// deliverable), 1 in the first.
func (b *bench) checkSession(ctx context.Context, k *kuradProc, w *turnWorker, res *PhaseResult) error {
	sess := k.base + "/v1/sessions/" + w.sessionID
	st, rb, err := b.do(ctx, http.MethodGet, sess+"/verify", nil)
	if err != nil {
		return fmt.Errorf("GET /v1/sessions/{id}/verify: %w", err)
	}
	if st != http.StatusOK {
		return httpError("GET /v1/sessions/{id}/verify", st, rb)
	}
	var v map[string]any
	if err := json.Unmarshal(rb, &v); err != nil {
		return fmt.Errorf("GET /v1/sessions/{id}/verify answer: %w: %.300s", err, rb)
	}
	if ok, _ := v["ok"].(bool); !ok {
		return fmt.Errorf("GET /v1/sessions/{id}/verify of a session with %d closed turns is not ok: %.800s", w.closed, rb)
	}
	if _, seen := res.Params["session_verify_answer"]; !seen {
		// Everything but lists, to show what was checked (counts, hashes).
		keep := map[string]any{}
		for key, val := range v {
			if _, isList := val.([]any); !isList {
				keep[key] = val
			}
		}
		res.Params["session_verify_answer"] = keep
	}

	var log []logLedger
	cursor := ""
	maxPages := 2*w.closed/1000 + 3
	for page := 0; ; page++ {
		if page == maxPages {
			return fmt.Errorf("GET /v1/sessions/{id}/log: next_cursor still set after %d pages for %d closed turns", page, w.closed)
		}
		u := sess + "/log?limit=1000"
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		st, rb, err := b.do(ctx, http.MethodGet, u, nil)
		if err != nil {
			return fmt.Errorf("GET /v1/sessions/{id}/log: %w", err)
		}
		if st != http.StatusOK {
			return httpError("GET /v1/sessions/{id}/log", st, rb)
		}
		var p struct {
			Ledgers    []logLedger `json:"ledgers"`
			NextCursor string      `json:"next_cursor"`
		}
		if err := json.Unmarshal(rb, &p); err != nil {
			return fmt.Errorf("GET /v1/sessions/{id}/log answer: %w: %.300s", err, rb)
		}
		log = append(log, p.Ledgers...)
		if p.NextCursor == "" {
			break
		}
		if len(p.Ledgers) == 0 {
			return fmt.Errorf("GET /v1/sessions/{id}/log: empty page %d with a next_cursor", page+1)
		}
		cursor = p.NextCursor
	}
	if len(log) != 2*w.closed {
		hint := ""
		if len(log) == 1000 {
			hint = " (exactly limit=1000 and no next_cursor: is the log truncated at the limit?)"
		}
		return fmt.Errorf("GET /v1/sessions/{id}/log: %d ledgers for %d closed turns, want %d (context + output per turn)%s", len(log), w.closed, 2*w.closed, hint)
	}
	if w.lastOutput != "" && log[0].ID != w.lastOutput {
		return fmt.Errorf("GET /v1/sessions/{id}/log: newest ledger is %s, want the last close's output_ledger_id %s", log[0].ID, w.lastOutput)
	}
	counted := w.failed == 0
	for i, l := range log {
		if i+1 < len(log) {
			if len(l.ParentIDs) == 0 || l.ParentIDs[0] != log[i+1].ID {
				return fmt.Errorf("GET /v1/sessions/{id}/log: ledger %d (%s) has parent_ids %v, want the next entry %s first (first-parent chain)", i, l.ID, l.ParentIDs, log[i+1].ID)
			}
		} else if len(l.ParentIDs) != 0 {
			return fmt.Errorf("GET /v1/sessions/{id}/log: oldest ledger %s has parent_ids %v; the session started empty", l.ID, l.ParentIDs)
		}
		if !counted || l.RecordCount == nil {
			continue
		}
		want := turnRecords // output
		if i%2 == 1 {
			want = 2 // context: instruction + previous deliverable
			if i == len(log)-1 {
				want = 1
			}
		}
		if *l.RecordCount != want {
			kind := "output"
			if i%2 == 1 {
				kind = "context"
			}
			return fmt.Errorf("GET /v1/sessions/{id}/log: %s ledger %d (%s) has record_count %d, want %d", kind, i, l.ID, *l.RecordCount, want)
		}
	}
	if len(log) > 0 && log[0].RecordCount == nil {
		res.Notes = append(res.Notes, "session log entries carry no record_count; record counts per ledger not checked")
	}
	return nil
}

// checkTurnContract checks, once, the parts of API.md the timed loop never
// exercises, on a session of its own: the open answer's shape, 409 for a
// second open turn, 409 for an append to a closed turn.
func (b *bench) checkTurnContract(ctx context.Context, k *kuradProc) error {
	sid, err := b.createSession(ctx, k, "contract")
	if err != nil {
		return err
	}
	openURL := k.base + "/v1/sessions/" + sid + "/turns"
	st, rb, err := b.post(ctx, openURL, b.turnOpenBody("contract-1"), true)
	if err != nil {
		return fmt.Errorf("POST /v1/sessions/{id}/turns: %w", err)
	}
	if st != http.StatusCreated {
		return httpError("POST /v1/sessions/{id}/turns", st, rb)
	}
	var opened struct {
		ID              string `json:"id"`
		SessionID       string `json:"session_id"`
		State           string `json:"state"`
		ContextLedgerID string `json:"context_ledger_id"`
		OpenedAt        string `json:"opened_at"`
	}
	if err := json.Unmarshal(rb, &opened); err != nil || !kura.ValidID(opened.ID) || opened.SessionID != sid || opened.State != kura.TurnOpen || !kura.ValidID(opened.ContextLedgerID) || opened.OpenedAt == "" {
		return fmt.Errorf("POST /v1/sessions/{id}/turns answer: want id, session_id %s, state open, context_ledger_id, opened_at: %.400s", sid, rb)
	}
	st, rb, err = b.post(ctx, openURL, b.turnOpenBody("contract-2"), true)
	if err != nil {
		return fmt.Errorf("POST /v1/sessions/{id}/turns (second open): %w", err)
	}
	if st != http.StatusConflict {
		return httpError("POST /v1/sessions/{id}/turns while a turn is open (API.md: one open turn per session, 409)", st, rb)
	}
	turnURL := k.base + "/v1/turns/" + opened.ID
	if st, rb, err = b.post(ctx, turnURL+"/records", b.turnAppendBody("contract-1"), true); err != nil || st != http.StatusOK {
		if err != nil {
			return fmt.Errorf("POST /v1/turns/{id}/records: %w", err)
		}
		return httpError("POST /v1/turns/{id}/records", st, rb)
	}
	if st, rb, err = b.post(ctx, turnURL+"/close", []byte(`{"status":"complete"}`), true); err != nil || st != http.StatusOK {
		if err != nil {
			return fmt.Errorf("POST /v1/turns/{id}/close: %w", err)
		}
		return httpError("POST /v1/turns/{id}/close", st, rb)
	}
	st, rb, err = b.post(ctx, turnURL+"/records", b.turnAppendBody("contract-3"), true)
	if err != nil {
		return fmt.Errorf("POST /v1/turns/{id}/records (closed turn): %w", err)
	}
	if st != http.StatusConflict {
		return httpError("POST /v1/turns/{id}/records to a closed turn (API.md: 409 when the turn is not open)", st, rb)
	}
	return nil
}
