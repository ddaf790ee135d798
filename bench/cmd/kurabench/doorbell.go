package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/nats-io/nats.go"
)

// The doorbell phases subscribe to kurad's embedded NATS server over TCP,
// as any other process on the host would, and hold what arrives against
// what the bench wrote.
const (
	doorbellRate      = 1000 // writes/s of the latency phase (the load)
	doorbellP99Target = 2.0  // ms, commit → delivery p99 at doorbellRate
	// doorbellWriters bounds the requests in flight: a request stalled on a
	// slow commit holds one writer while the others keep the schedule, so
	// the load stays open-loop for stalls up to ~32 ms at 1,000/s.
	doorbellWriters = 32
	doorbellSubject = kura.SubjectRoot + ".>"
	// floorSubject lies outside oclaw.v1 so the floor's messages never
	// reach the doorbell subscription and count as stray events.
	floorSubject = "kurabench.floor."
	// floorPayload is about a record.written pointer's size, so the floor
	// moves as many bytes per message as the doorbell does.
	floorPayload = 140
	// deliveryWait bounds the wait for the last events after a window; an
	// event not there by then counts as missing.
	deliveryWait = 10 * time.Second
	// drainWait bounds the wait for outbox lag 0 after the load: far above
	// the 1 s target, so a slow drain is measured, not cut off.
	drainWait      = 30 * time.Second
	lagSampleEvery = 50 * time.Millisecond
	drainTargetMs  = 1000.0 // last ack → outbox lag 0
	lagTargetSecs  = 2.0    // max sampled lag ≤ this many seconds of ingest
	maxEventsSeen  = 10_000_000
)

// DoorbellRun is what a doorbell run saw on its subscriber.
type DoorbellRun struct {
	Delivery DeliveryCheck    `json:"delivery"`
	Latency  *DoorbellLatency `json:"latency,omitempty"`
	Outbox   *OutboxLoad      `json:"outbox,omitempty"`
}

// DeliveryCheck holds the events received against the events committed
// (seqs after the one /v1/info reported when the subscriber joined, up to
// last_event_seq at the end): each should arrive exactly once, in seq order.
type DeliveryCheck struct {
	FirstSeq       int64   `json:"first_seq"`
	LastSeq        int64   `json:"last_seq"`
	Received       int     `json:"received"`
	Missing        int     `json:"missing"`
	Duplicates     int     `json:"duplicates"`
	SeqRegressions int     `json:"seq_regressions"` // a seq not above the one received before it
	Stray          int     `json:"stray"`           // seqs outside first..last: events the bench did not cause
	Malformed      int     `json:"malformed"`       // not a pointer payload, or the subject does not match its type and project
	Dropped        int     `json:"dropped"`         // nats.go slow-consumer drops on the subscription
	WaitMs         float64 `json:"wait_ms"`         // after the window, until the last event arrived (or the bound passed)
	FirstProblem   string  `json:"first_problem,omitempty"`
}

// DoorbellLatency is the latency run's pacing and the writes matched.
type DoorbellLatency struct {
	TargetRate         float64 `json:"target_rate_per_s"`
	WriteRate          float64 `json:"write_rate_per_s"`
	Writes             int     `json:"writes"`
	MissingRecords     int     `json:"missing_records"`      // timed writes whose record_id never arrived
	DeliveredBeforeAck float64 `json:"delivered_before_ack"` // fraction of writes whose event beat the HTTP answer
	SendLateP99ms      float64 `json:"send_late_p99_ms"`     // request sent after its scheduled time: the open loop held while small
	SendLateMaxMs      float64 `json:"send_late_max_ms"`
	FloorMessages      int     `json:"floor_messages"`
	FloorLost          int     `json:"floor_lost"`
}

// OutboxLoad is the publisher's side of the throughput run.
type OutboxLoad struct {
	IngestRowsPerSec   float64 `json:"ingest_rows_per_s"`
	IngestEventsPerSec float64 `json:"ingest_events_per_s"`     // events committed (last_event_seq) per second of the window
	EventsPerSec       float64 `json:"subscriber_events_per_s"` // events the subscriber received within the window
	LagSamples         int     `json:"lag_samples"`
	LagMax             int64   `json:"lag_max"`
	LagP99             int64   `json:"lag_p99"`
	LagAtLastAck       int64   `json:"lag_at_last_ack"` // the first /v1/info after the last answer
	LagAllowed         float64 `json:"lag_allowed"`
	DrainMs            float64 `json:"drain_ms"`              // last ack → /v1/info outbox.lag 0
	SubscriberCatchUp  float64 `json:"subscriber_catchup_ms"` // last ack → the subscriber holds every event
	Drained            bool    `json:"drained"`
}

// kuradInfo reads GET /v1/info and insists on the doorbell being there.
func (b *bench) kuradInfo(ctx context.Context, k *kuradProc) (*kura.Info, error) {
	st, rb, err := b.do(ctx, http.MethodGet, k.base+"/v1/info", nil)
	if err != nil {
		return nil, fmt.Errorf("GET /v1/info: %w", err)
	}
	if st != http.StatusOK {
		return nil, httpError("GET /v1/info", st, rb)
	}
	var info kura.Info
	if err := json.Unmarshal(rb, &info); err != nil {
		return nil, fmt.Errorf("GET /v1/info answer: %w: %.300s", err, rb)
	}
	if info.NATS.Addr == "" {
		return nil, fmt.Errorf("GET /v1/info has no nats.addr: %.300s", rb)
	}
	if info.Outbox == nil {
		return nil, fmt.Errorf("GET /v1/info has no outbox: this kurad has no doorbell (older than f3f7ea6?): %.300s", rb)
	}
	return &info, nil
}

// outboxCounters scrapes the doorbell's counters (kura_outbox_*_total) from
// /metrics, to show next to the writer's in server_counters.
func (b *bench) outboxCounters(ctx context.Context, k *kuradProc) map[string]float64 {
	out := map[string]float64{}
	st, body, err := b.do(ctx, http.MethodGet, k.base+"/metrics", nil)
	if err != nil || st != http.StatusOK {
		return out
	}
	for _, line := range strings.Split(string(body), "\n") {
		name, val, ok := strings.Cut(line, " ")
		if !ok || !strings.HasPrefix(name, "kura_outbox_") || !strings.HasSuffix(name, "_total") {
			continue
		}
		if v, err := strconv.ParseFloat(val, 64); err == nil {
			out[name] = v
		}
	}
	return out
}

// doorbellLatencyPhase: one kurad, a subscriber on every doorbell subject,
// the NATS floor, then single-record writes paced at doorbellRate.
func (b *bench) doorbellLatencyPhase(ctx context.Context) (*PhaseResult, error) {
	res := &PhaseResult{
		Title:     fmt.Sprintf("POST /v1/records paced at %s/s, subscriber on %s", thousands(doorbellRate), doorbellSubject),
		Metric:    "ms",
		LatencyOf: "commit → subscriber delivery, as delivery − HTTP answer clamped at 0 (delivery − send and answer − send in the doorbell section)",
		DataDir:   "one fresh kurad and data dir (holding only the warm-up's records)",
		Params: map[string]any{
			"rate_per_s":      doorbellRate,
			"writers":         doorbellWriters,
			"run_seconds":     b.cfg.doorbellDur.Seconds(),
			"warmup_seconds":  b.cfg.warmup.Seconds(),
			"floor_seconds":   b.cfg.floorDur.Seconds(),
			"subject":         doorbellSubject,
			"match":           "record_id of the POST answer = record_id of the record.written pointer",
			"floor":           fmt.Sprintf("plain %d-byte publishes on %s* from a second connection to the same server, same pacing, received by the doorbell subscriber's connection", floorPayload, floorSubject),
			"delivery_wait_s": deliveryWait.Seconds(),
		},
	}
	k, err := b.startKurad(ctx, "doorbell-latency")
	if err != nil {
		return res, err
	}
	defer b.stopKurad(k, res)
	info, err := b.kuradInfo(ctx, k)
	if err != nil {
		return res, err
	}
	res.Params["nats_addr"] = info.NATS.Addr
	sub, err := subscribeDoorbell(info.NATS.Addr, info.LastEventSeq, true)
	if err != nil {
		return res, err
	}
	defer sub.close()

	// The floor goes first, on an idle kurad: what NATS alone costs here.
	floor, floorLost, err := b.natsFloor(ctx, info.NATS.Addr, sub, b.cfg.floorDur)
	if err != nil {
		return res, err
	}
	b.logf("NATS floor: p50 %.3f ms p99 %.3f ms over %d messages, %d lost", percentile(floor, 0.5), percentile(floor, 0.99), len(floor), floorLost)

	// Warm-up: connections opened, kurad and the publisher settled, and
	// every warm-up event delivered so no backlog leaks into the window.
	if w, _ := b.pacedWrites(ctx, k, "dw", b.cfg.warmup); w.errs > 0 {
		if err := k.alive(); err != nil {
			return res, err
		}
		return res, fmt.Errorf("warm-up: %d writes failed; first: %s", w.errs, w.firstErr)
	}
	if mid, err := b.kuradInfo(ctx, k); err != nil {
		return res, err
	} else if _, ok, _ := sub.waitFor(ctx, mid.LastEventSeq, deliveryWait); !ok {
		c := sub.check(mid.LastEventSeq, deliveryWait)
		return res, fmt.Errorf("warm-up: %w", c.err())
	}

	counters0 := b.serverCounters(ctx, k)
	outbox0 := b.outboxCounters(ctx, k)
	dials0 := b.dials.Load()
	cpu := startCPU(k.pid())
	w, elapsed := b.pacedWrites(ctx, k, "dt", b.cfg.doorbellDur)
	c := cpu.stop()
	dials := b.dials.Load() - dials0
	if err := k.alive(); err != nil {
		return res, err
	}
	end, err := b.kuradInfo(ctx, k)
	if err != nil {
		return res, err
	}
	waited, _, _ := sub.waitFor(ctx, end.LastEventSeq, deliveryWait)
	check := sub.check(end.LastEventSeq, waited)

	var dAck, dSend, aSend, late []time.Duration
	lat := &DoorbellLatency{TargetRate: doorbellRate, FloorMessages: len(floor) + floorLost, FloorLost: floorLost}
	before := 0
	sub.mu.Lock()
	for _, x := range w.writes {
		if x.id == "" {
			continue
		}
		lat.Writes++
		late = append(late, x.send.Sub(x.sched))
		aSend = append(aSend, x.ack.Sub(x.send))
		d := sub.byRecord[x.id]
		if d == nil {
			lat.MissingRecords++
			continue
		}
		da := d.at.Sub(x.ack)
		if da < 0 {
			before++
		}
		dAck = append(dAck, max(da, 0))
		dSend = append(dSend, d.at.Sub(x.send))
	}
	sub.mu.Unlock()
	if lat.Writes > 0 {
		lat.DeliveredBeforeAck = round(float64(before) / float64(lat.Writes))
	}
	lat.WriteRate = round(float64(lat.Writes) / elapsed.Seconds())
	lat.SendLateP99ms = round(percentile(late, 0.99))
	lat.SendLateMaxMs = round(percentile(late, 1))
	op := func(ds []time.Duration) OpLatency {
		return OpLatency{N: len(ds), P50ms: round(percentile(ds, 0.50)), P99ms: round(percentile(ds, 0.99))}
	}
	counters := counterDelta(counters0, b.serverCounters(ctx, k))
	for name, v := range counterDelta(outbox0, b.outboxCounters(ctx, k)) {
		if counters == nil {
			counters = map[string]float64{}
		}
		counters[name] = v
	}
	r := Run{
		ServerCounters: counters,
		Rows:           lat.Writes, Requests: len(w.writes), Errors: w.errs, Seconds: round(elapsed.Seconds()),
		RowsPerSec: lat.WriteRate,
		P50ms:      round(percentile(dAck, 0.50)), P99ms: round(percentile(dAck, 0.99)),
		Ops: map[string]OpLatency{
			"delivery_minus_ack":  op(dAck),
			"delivery_minus_send": op(dSend),
			"ack_minus_send":      op(aSend),
			"nats_floor":          op(floor),
		},
		CPU: c, ConnsOpened: &dials, Statuses: w.statuses, FirstError: w.firstErr,
		Doorbell: &DoorbellRun{Delivery: check, Latency: lat},
	}
	res.Runs = append(res.Runs, r)
	res.Median, res.P50ms, res.P99ms = r.P50ms, r.P50ms, r.P99ms
	res.Ops = r.Ops
	res.CPU = medianCPU(res.Runs)
	b.logf("%d writes at %.0f/s: delivery−ack p50 %.3f p99 %.3f ms (%.0f%% before the answer), delivery−send p50 %.3f p99 %.3f, ack−send p50 %.3f p99 %.3f; send late p99 %.3f max %.3f ms",
		lat.Writes, lat.WriteRate, r.P50ms, r.P99ms, lat.DeliveredBeforeAck*100, r.Ops["delivery_minus_send"].P50ms, r.Ops["delivery_minus_send"].P99ms,
		r.Ops["ack_minus_send"].P50ms, r.Ops["ack_minus_send"].P99ms, lat.SendLateP99ms, lat.SendLateMaxMs)
	b.logf("events seq %d..%d: received %d, missing %d, duplicates %d, out of order %d, waited %.1f ms for the last",
		check.FirstSeq, check.LastSeq, check.Received, check.Missing, check.Duplicates, check.SeqRegressions, check.WaitMs)

	res.Notes = append(res.Notes, check.notes()...)
	if lat.WriteRate < 0.95*doorbellRate {
		res.Notes = append(res.Notes, fmt.Sprintf("achieved %.0f writes/s, below 95%% of the %d/s asked for (send late p99 %.2f ms): the figures are for a lighter load", lat.WriteRate, doorbellRate, lat.SendLateP99ms))
	}
	if floorLost > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("NATS floor: %d of %d plain publishes never arrived", floorLost, lat.FloorMessages))
	}
	if dials > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("the timed window opened %d TCP connections: more requests were in flight at once than during the warm-up", dials))
	}
	if err := check.err(); err != nil {
		return res, err
	}
	if lat.MissingRecords > 0 {
		return res, fmt.Errorf("doorbell: %d of %d records written have no record.written event on %s", lat.MissingRecords, lat.Writes, doorbellSubject)
	}
	return res, res.runErrors()
}

// pacedWrite is one write of the open loop.
type pacedWrite struct {
	sched, send, ack time.Time
	id               string // empty when the write failed
}

type pacedTally struct {
	writes   []pacedWrite
	errs     int
	statuses map[int]int
	firstErr string
}

// pacedWrites posts one unique record every 1/doorbellRate for d, each at
// its scheduled time whatever the answers before it took (open loop), from
// doorbellWriters goroutines. It returns every write and the wall time until
// the last answer.
func (b *bench) pacedWrites(ctx context.Context, k *kuradProc, tag string, d time.Duration) (*pacedTally, time.Duration) {
	url := k.base + "/v1/records"
	n := int(d.Seconds() * doorbellRate)
	interval := time.Second / doorbellRate
	t := &pacedTally{writes: make([]pacedWrite, n), statuses: map[int]int{}}
	var mu sync.Mutex
	var next, errs atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range doorbellWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The error bound counts all writes, not a streak: a paced
			// loop never waits on answers, so a dead kurad would otherwise
			// cost the whole window's worth of failed requests.
			for ctx.Err() == nil && errs.Load() < maxConsecutiveErrors {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				body := b.appendRecordInput(make([]byte, 0, 192), tag, i)
				sched := start.Add(time.Duration(i) * interval)
				if wait := time.Until(sched); wait > 0 {
					time.Sleep(wait)
				}
				x := &t.writes[i]
				x.sched, x.send = sched, time.Now()
				st, rb, err := b.post(ctx, url, body, true)
				x.ack = time.Now()
				var rec struct {
					ID           string `json:"id"`
					Deduplicated bool   `json:"deduplicated"`
				}
				if err == nil && st == http.StatusCreated && json.Unmarshal(rb, &rec) == nil && kura.ValidID(rec.ID) && !rec.Deduplicated {
					x.id = rec.ID
				} else {
					errs.Add(1)
				}
				mu.Lock()
				if err == nil {
					t.statuses[st]++
				}
				if x.id == "" && t.firstErr == "" {
					switch {
					case err != nil:
						t.firstErr = err.Error()
					case st != http.StatusCreated:
						t.firstErr = httpError("POST /v1/records", st, rb).Error()
					default:
						t.firstErr = fmt.Sprintf("POST /v1/records: 201 without a fresh record id: %.300s", rb)
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	t.errs = int(errs.Load())
	// Writes never sent (interrupted, or the error bound hit) are not writes.
	sent := t.writes[:0]
	for _, x := range t.writes {
		if !x.send.IsZero() {
			sent = append(sent, x)
		}
	}
	t.writes = sent
	return t, elapsed
}

// natsFloor publishes small messages at doorbellRate for d from a second
// connection and times their arrival on the subscriber's connection: the
// least a doorbell delivery can cost on this machine and server.
func (b *bench) natsFloor(ctx context.Context, addr string, sub *doorbellSub, d time.Duration) ([]time.Duration, int, error) {
	n := int(d.Seconds() * doorbellRate)
	interval := time.Second / doorbellRate
	subject := floorSubject + b.nonce
	recv := make([]time.Time, n)
	var mu sync.Mutex
	got := 0
	fs, err := sub.nc.Subscribe(subject, func(m *nats.Msg) {
		at := time.Now()
		if len(m.Data) < 8 {
			return
		}
		i := binary.BigEndian.Uint64(m.Data)
		mu.Lock()
		if i < uint64(n) && recv[i].IsZero() {
			recv[i] = at
			got++
		}
		mu.Unlock()
	})
	if err != nil {
		return nil, 0, fmt.Errorf("NATS floor: subscribe: %w", err)
	}
	defer fs.Unsubscribe()
	if err := sub.nc.FlushTimeout(5 * time.Second); err != nil {
		return nil, 0, fmt.Errorf("NATS floor: flush: %w", err)
	}
	var pubErr atomic.Value
	pub, err := natsConnect(addr, "kurabench-floor", func(s string) { pubErr.CompareAndSwap(nil, s) })
	if err != nil {
		return nil, 0, err
	}
	defer pub.Close()
	sent := make([]time.Time, n)
	payload := make([]byte, floorPayload)
	start := time.Now()
	for i := 0; i < n && ctx.Err() == nil; i++ {
		if wait := time.Until(start.Add(time.Duration(i) * interval)); wait > 0 {
			time.Sleep(wait)
		}
		binary.BigEndian.PutUint64(payload, uint64(i))
		sent[i] = time.Now()
		if err := pub.Publish(subject, payload); err != nil {
			return nil, 0, fmt.Errorf("NATS floor: publish %d: %w", i, err)
		}
	}
	if err := pub.FlushTimeout(5 * time.Second); err != nil {
		return nil, 0, fmt.Errorf("NATS floor: flush: %w", err)
	}
	for deadline := time.Now().Add(deliveryWait); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(time.Millisecond) {
		mu.Lock()
		all := got == n
		mu.Unlock()
		if all {
			break
		}
	}
	if e := pubErr.Load(); e != nil {
		return nil, 0, fmt.Errorf("NATS floor: %s", e)
	}
	mu.Lock()
	defer mu.Unlock()
	lat := make([]time.Duration, 0, n)
	for i := range n {
		if !recv[i].IsZero() && !sent[i].IsZero() {
			lat = append(lat, recv[i].Sub(sent[i]))
		}
	}
	return lat, n - len(lat), nil
}

// doorbellThroughputPhase: batch_1000's load on a fresh kurad with a
// subscriber counting every event, outbox lag sampled throughout, then the
// drain timed.
func (b *bench) doorbellThroughputPhase(ctx context.Context) (*PhaseResult, error) {
	const perReq = kura.MaxBatchRecords
	res := &PhaseResult{
		Title:     fmt.Sprintf("POST /v1/records/batch ×%d, %d clients, subscriber on %s", perReq, b.cfg.batchCli, doorbellSubject),
		Metric:    "events/s",
		LatencyOf: "request (1,000 records); outbox lag and drain in the doorbell section",
		DataDir:   "one fresh kurad and data dir (holding only the 1,000 warm-up records)",
		Params: map[string]any{
			"clients":            b.cfg.batchCli,
			"records_per_req":    perReq,
			"requests":           b.cfg.outboxReqs,
			"lag_sample_ms":      ms(lagSampleEvery),
			"subject":            doorbellSubject,
			"drain":              "last batch answer read → first GET /v1/info with outbox.lag 0, polled every 1 ms",
			"pass":               fmt.Sprintf("drain ≤ %.0f ms and max sampled lag ≤ %.0f × the events committed in one second of the window", drainTargetMs, lagTargetSecs),
			"subscriber_events":  "messages received on the subscriber between the first request and the last answer, per second of that window",
			"delivery_wait_s":    deliveryWait.Seconds(),
			"drain_wait_seconds": drainWait.Seconds(),
		},
	}
	k, err := b.startKurad(ctx, "doorbell-throughput")
	if err != nil {
		return res, err
	}
	defer b.stopKurad(k, res)
	info, err := b.kuradInfo(ctx, k)
	if err != nil {
		return res, err
	}
	sub, err := subscribeDoorbell(info.NATS.Addr, info.LastEventSeq, false)
	if err != nil {
		return res, err
	}
	defer sub.close()
	// One untimed request checks the answer and warms kurad up; its events
	// must be delivered before the window so the count starts clean.
	if _, err := b.ingestBatch(ctx, k, "ow", perReq, 1); err != nil {
		return res, err
	}
	mid, err := b.kuradInfo(ctx, k)
	if err != nil {
		return res, err
	}
	if _, ok, _ := sub.waitFor(ctx, mid.LastEventSeq, deliveryWait); !ok {
		c := sub.check(mid.LastEventSeq, deliveryWait)
		return res, fmt.Errorf("warm-up: %w", c.err())
	}
	bodies := make([][]byte, b.cfg.outboxReqs)
	for i := range bodies {
		bodies[i] = b.batchBody("o", i*perReq, perReq)
	}

	counters0 := b.serverCounters(ctx, k)
	outbox0 := b.outboxCounters(ctx, k)
	recv0 := sub.receivedCount()
	stop := make(chan struct{})
	var lags []int64
	var lagErr error
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		tick := time.NewTicker(lagSampleEvery)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			i, err := b.kuradInfo(ctx, k)
			if err != nil {
				if lagErr == nil {
					lagErr = err
				}
				continue
			}
			lags = append(lags, i.Outbox.Lag)
		}
	}()
	cpu := startCPU(k.pid())
	t, elapsed := b.batchWindow(ctx, k, bodies)
	lastAck := time.Now()
	recvAtAck := sub.receivedCount()
	c := cpu.stop()
	close(stop)
	sampler.Wait()

	load := &OutboxLoad{LagSamples: len(lags), LagAtLastAck: -1}
	var end *kura.Info
	for first := true; ctx.Err() == nil; first = false {
		i, err := b.kuradInfo(ctx, k)
		if err != nil {
			return res, err
		}
		if first {
			load.LagAtLastAck = i.Outbox.Lag
		}
		if i.Outbox.Lag == 0 && i.Outbox.PublishedSeq >= i.LastEventSeq {
			load.DrainMs, load.Drained, end = round(ms(time.Since(lastAck))), true, i
			break
		}
		if time.Since(lastAck) > drainWait {
			load.DrainMs, end = round(ms(time.Since(lastAck))), i
			break
		}
		time.Sleep(time.Millisecond)
	}
	if end == nil {
		return res, ctx.Err()
	}
	waited, caughtUp, lastAt := sub.waitFor(ctx, end.LastEventSeq, deliveryWait)
	if caughtUp {
		// The last event can beat the last answer; that is no wait at all.
		load.SubscriberCatchUp = round(ms(max(lastAt.Sub(lastAck), 0)))
	} else {
		load.SubscriberCatchUp = round(ms(time.Since(lastAck)))
	}
	check := sub.check(end.LastEventSeq, waited)

	rows := t.ok * perReq
	load.IngestRowsPerSec = round(float64(rows) / elapsed.Seconds())
	load.IngestEventsPerSec = round(float64(end.LastEventSeq-mid.LastEventSeq) / elapsed.Seconds())
	load.EventsPerSec = round(float64(recvAtAck-recv0) / elapsed.Seconds())
	load.LagAllowed = round(lagTargetSecs * load.IngestEventsPerSec)
	if len(lags) > 0 {
		load.LagMax = percentileInt(lags, 1)
		load.LagP99 = percentileInt(lags, 0.99)
	}
	counters := counterDelta(counters0, b.serverCounters(ctx, k))
	for name, v := range counterDelta(outbox0, b.outboxCounters(ctx, k)) {
		if counters == nil {
			counters = map[string]float64{}
		}
		counters[name] = v
	}
	r := Run{
		ServerCounters: counters,
		Rows:           rows, Requests: len(t.lat), Errors: t.errs, Seconds: round(elapsed.Seconds()),
		RowsPerSec: load.IngestRowsPerSec,
		P50ms:      round(percentile(t.lat, 0.50)), P99ms: round(percentile(t.lat, 0.99)),
		CPU: c, Statuses: t.statuses, FirstError: t.firstErr,
		Doorbell: &DoorbellRun{Delivery: check, Outbox: load},
	}
	res.Runs = append(res.Runs, r)
	res.Median, res.P50ms, res.P99ms = load.EventsPerSec, r.P50ms, r.P99ms
	res.CPU = medianCPU(res.Runs)
	b.logf("ingest %.0f rows/s, subscriber %.0f events/s; lag max %d p99 %d over %d samples (allowed %.0f), %d at the last answer; drain %.1f ms, subscriber caught up %.1f ms",
		load.IngestRowsPerSec, load.EventsPerSec, load.LagMax, load.LagP99, load.LagSamples, load.LagAllowed, load.LagAtLastAck, load.DrainMs, load.SubscriberCatchUp)
	b.logf("lag samples: %v", lags)
	b.logf("events seq %d..%d: received %d, missing %d, duplicates %d, out of order %d",
		check.FirstSeq, check.LastSeq, check.Received, check.Missing, check.Duplicates, check.SeqRegressions)

	res.Notes = append(res.Notes, check.notes()...)
	if lagErr != nil {
		res.Notes = append(res.Notes, "some lag samples failed: "+lagErr.Error())
	}
	if !load.Drained {
		res.Notes = append(res.Notes, fmt.Sprintf("outbox lag still %d after %s", end.Outbox.Lag, drainWait))
	}
	if err := check.err(); err != nil {
		return res, err
	}
	return res, res.runErrors()
}

// judgeOutbox sets the publisher's keep-up targets: it drained within
// drainTargetMs of the last answer and its lag never exceeded lagTargetSecs
// of ingest.
func judgeOutbox(b *bench) {
	r := b.result("doorbell_throughput")
	if r == nil || r.Error != "" || len(r.Runs) == 0 || r.Runs[0].Doorbell == nil || r.Runs[0].Doorbell.Outbox == nil {
		return
	}
	o := r.Runs[0].Doorbell.Outbox
	r.Targets = append(r.Targets,
		Target{
			Short: fmt.Sprintf("drain≤%.0fms", drainTargetMs),
			Text:  fmt.Sprintf("drain (last answer → outbox lag 0) ≤ %.0f ms", drainTargetMs),
			Op:    "<=", Want: drainTargetMs, Got: o.DrainMs, Pass: o.Drained && o.DrainMs <= drainTargetMs,
		},
		Target{
			Short: fmt.Sprintf("lag≤%.0fs", lagTargetSecs),
			Text:  fmt.Sprintf("max sampled outbox lag ≤ %.0f s of ingest (%s events)", lagTargetSecs, thousands(o.LagAllowed)),
			Op:    "<=", Want: o.LagAllowed, Got: float64(o.LagMax), Pass: float64(o.LagMax) <= o.LagAllowed,
		})
}

// printDoorbell shows how to read the doorbell phases: where a write's time
// goes, how the NATS floor compares, and whether every event arrived once.
func printDoorbell(w io.Writer, rep *Report) {
	var lines []string
	for _, r := range rep.Phases {
		if len(r.Runs) == 0 || r.Runs[0].Doorbell == nil {
			continue
		}
		d := r.Runs[0].Doorbell
		c := d.Delivery
		delivered := fmt.Sprintf("events %s..%s: missing %d, duplicate %d, out of order %d",
			thousands(float64(c.FirstSeq)), thousands(float64(c.LastSeq)), c.Missing, c.Duplicates, c.SeqRegressions)
		if l := d.Latency; l != nil {
			o := r.Ops
			lines = append(lines,
				fmt.Sprintf("  %s\t%s writes at %s/s (asked %s/s; sent late p99 %.2f, max %.2f)\t%s", r.Name, thousands(float64(l.Writes)), thousands(l.WriteRate), thousands(l.TargetRate), l.SendLateP99ms, l.SendLateMaxMs, delivered),
				fmt.Sprintf("  \tdelivery − answer  %.3f / %.3f\t%.0f%% of events arrived before the HTTP answer (counted as 0)", o["delivery_minus_ack"].P50ms, o["delivery_minus_ack"].P99ms, l.DeliveredBeforeAck*100),
				fmt.Sprintf("  \tdelivery − send    %.3f / %.3f\tupper bound of commit → delivery", o["delivery_minus_send"].P50ms, o["delivery_minus_send"].P99ms),
				fmt.Sprintf("  \tanswer − send      %.3f / %.3f\tthe write itself (group commit, fsync, HTTP)", o["ack_minus_send"].P50ms, o["ack_minus_send"].P99ms),
				fmt.Sprintf("  \tNATS floor         %.3f / %.3f\tplain publish → receive over TCP, same server and pacing (%d lost)", o["nats_floor"].P50ms, o["nats_floor"].P99ms, l.FloorLost))
		}
		if o := d.Outbox; o != nil {
			drained := "drained"
			if !o.Drained {
				drained = "NOT drained"
			}
			lines = append(lines,
				fmt.Sprintf("  %s\tingest %s rows/s, subscriber %s events/s\t%s", r.Name, thousands(o.IngestRowsPerSec), thousands(o.EventsPerSec), delivered),
				fmt.Sprintf("  \toutbox lag max %s, p99 %s (%d samples every %s; allowed %s); %s at the first poll after the last answer\t%s %.1f ms after the last answer, subscriber complete after %.1f ms",
					thousands(float64(o.LagMax)), thousands(float64(o.LagP99)), o.LagSamples, lagSampleEvery, thousands(o.LagAllowed), thousands(float64(o.LagAtLastAck)), drained, o.DrainMs, o.SubscriberCatchUp))
		}
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintln(w, "\ndoorbell (ms p50 / p99; send = before the request, answer = HTTP answer read, delivery = the subscriber's callback)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, l := range lines {
		fmt.Fprintln(tw, l)
	}
	tw.Flush()
}

// percentileInt is percentile's nearest rank for counts.
func percentileInt(xs []int64, q float64) int64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]int64(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	k := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(k, 0), len(s)-1)]
}
