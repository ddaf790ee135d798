// The doorbell phases' subscriber: one NATS connection that records every
// event's arrival, and the delivery check over what it received.

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/nats-io/nats.go"
)

// doorbellSub is one NATS connection subscribed to every doorbell subject.
// With byRecord set it also keeps each record.written's first arrival.
type doorbellSub struct {
	nc  *nats.Conn
	sub *nats.Subscription

	mu          sync.Mutex
	base        int64 // last_event_seq when the subscription started
	counts      map[int64]int32
	contig      int64 // every seq in base+1..contig has arrived
	contigAt    time.Time
	last        int64
	received    int
	regressions int
	malformed   int
	problem     string
	byRecord    map[string]*delivery
}

type delivery struct {
	at  time.Time
	seq int64
	n   int
}

// natsConnect dials kurad's NATS server. No reconnect: a dropped connection
// would lose events silently, and the check must see that as missing.
func natsConnect(addr, name string, onErr func(string)) (*nats.Conn, error) {
	if err := loopbackOnly(addr); err != nil {
		return nil, fmt.Errorf("nats addr: %w", err)
	}
	nc, err := nats.Connect("nats://"+addr, nats.Name(name), nats.Timeout(5*time.Second), nats.NoReconnect(),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { onErr("nats: " + err.Error()) }),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			if err != nil && !nc.IsClosed() {
				onErr("nats disconnected: " + err.Error())
			}
		}))
	if err != nil {
		return nil, fmt.Errorf("connect to kurad's NATS at %s: %w", addr, err)
	}
	return nc, nil
}

func subscribeDoorbell(addr string, base int64, matchRecords bool) (*doorbellSub, error) {
	s := &doorbellSub{base: base, contig: base, last: base, counts: map[int64]int32{}}
	if matchRecords {
		s.byRecord = map[string]*delivery{}
	}
	nc, err := natsConnect(addr, "kurabench-doorbell", s.fail)
	if err != nil {
		return nil, err
	}
	s.nc = nc
	if s.sub, err = nc.Subscribe(doorbellSubject, s.onEvent); err != nil {
		nc.Close()
		return nil, fmt.Errorf("subscribe %s: %w", doorbellSubject, err)
	}
	// The flush round trip proves the server registered the interest, so no
	// write after this returns can miss the subscriber.
	if err := nc.FlushTimeout(5 * time.Second); err != nil {
		nc.Close()
		return nil, fmt.Errorf("subscribe %s: flush: %w", doorbellSubject, err)
	}
	return s, nil
}

func (s *doorbellSub) close() { s.nc.Close() }

func (s *doorbellSub) fail(why string) {
	s.mu.Lock()
	if s.problem == "" {
		s.problem = why
	}
	s.mu.Unlock()
}

// onEvent runs on nats.go's delivery goroutine; the clock is read first so
// decoding is not part of the delivery time.
func (s *doorbellSub) onEvent(m *nats.Msg) {
	at := time.Now()
	if m.Subject == kura.CheckpointSubject {
		return // the log's checkpoints share the root; they are not events
	}
	var p struct {
		Seq      int64  `json:"seq"`
		Type     string `json:"type"`
		Project  string `json:"project"`
		At       string `json:"at"`
		RecordID string `json:"record_id"`
	}
	err := json.Unmarshal(m.Data, &p)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.received++
	bad := ""
	switch {
	case err != nil:
		bad = "not JSON: " + err.Error()
	case p.Seq <= 0 || p.Seq > s.base+maxEventsSeen || p.Type == "" || p.At == "":
		bad = "no seq, type or at"
	case m.Subject != kura.EventSubject(p.Project, p.Type):
		bad = "subject does not match the payload's project and type"
	case p.Type == kura.EventRecordWritten && !kura.ValidID(p.RecordID):
		bad = "record.written without a record_id"
	}
	if bad != "" {
		s.malformed++
		if s.problem == "" {
			s.problem = fmt.Sprintf("malformed event on %s (%s): %.200s", m.Subject, bad, m.Data)
		}
		return
	}
	if p.Seq <= s.last {
		s.regressions++
		if s.problem == "" {
			s.problem = fmt.Sprintf("seq %d arrived after seq %d", p.Seq, s.last)
		}
	} else {
		s.last = p.Seq
	}
	s.counts[p.Seq]++
	for s.counts[s.contig+1] > 0 {
		s.contig++
		s.contigAt = at
	}
	if s.byRecord != nil && p.RecordID != "" {
		if d := s.byRecord[p.RecordID]; d != nil {
			d.n++
		} else {
			s.byRecord[p.RecordID] = &delivery{at: at, seq: p.Seq, n: 1}
		}
	}
}

func (s *doorbellSub) receivedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.received
}

// waitFor waits until every seq up to upto has arrived, at most bound; it
// returns how long it waited, whether they all came, and when the event
// completing them arrived.
func (s *doorbellSub) waitFor(ctx context.Context, upto int64, bound time.Duration) (time.Duration, bool, time.Time) {
	t0 := time.Now()
	for {
		s.mu.Lock()
		done, at := s.contig >= upto, s.contigAt
		s.mu.Unlock()
		if done {
			return time.Since(t0), true, at
		}
		if time.Since(t0) > bound || ctx.Err() != nil {
			return time.Since(t0), false, time.Time{}
		}
		time.Sleep(time.Millisecond)
	}
}

// check counts, for seqs base+1..last, what did not arrive, what arrived
// more than once and what arrived that the bench did not cause.
func (s *doorbellSub) check(last int64, waited time.Duration) DeliveryCheck {
	dropped, _ := s.sub.Dropped()
	s.mu.Lock()
	defer s.mu.Unlock()
	c := DeliveryCheck{FirstSeq: s.base + 1, LastSeq: last, Received: s.received, SeqRegressions: s.regressions,
		Malformed: s.malformed, Dropped: dropped, WaitMs: round(ms(waited)), FirstProblem: s.problem}
	for seq := s.base + 1; seq <= last; seq++ {
		if s.counts[seq] == 0 {
			c.Missing++
			if c.FirstProblem == "" {
				c.FirstProblem = fmt.Sprintf("event seq %d never arrived", seq)
			}
		}
	}
	for seq, n := range s.counts {
		if seq <= s.base || seq > last {
			c.Stray += int(n)
			continue
		}
		c.Duplicates += int(n) - 1
	}
	return c
}

// err is the part of a check that makes the phase fail: an event lost or
// unreadable means the doorbell did not deliver what was committed.
func (c *DeliveryCheck) err() error {
	if c.Missing == 0 && c.Malformed == 0 {
		return nil
	}
	return fmt.Errorf("doorbell: %d of %d committed events (seq %d..%d) did not arrive within %s of the last write, %d malformed; first: %s",
		c.Missing, c.LastSeq-c.FirstSeq+1, c.FirstSeq, c.LastSeq, deliveryWait, c.Malformed, c.FirstProblem)
}

// notes reports what a clean run should never show but the issue does not
// make a failure: at-least-once allows duplicates after a crash, not here.
func (c *DeliveryCheck) notes() []string {
	var n []string
	if c.Duplicates > 0 {
		n = append(n, fmt.Sprintf("doorbell: %d events arrived more than once without a restart", c.Duplicates))
	}
	if c.SeqRegressions > 0 {
		n = append(n, fmt.Sprintf("doorbell: %d events arrived out of seq order; first: %s", c.SeqRegressions, c.FirstProblem))
	}
	if c.Stray > 0 {
		n = append(n, fmt.Sprintf("doorbell: %d events with seqs outside %d..%d (not caused by the bench)", c.Stray, c.FirstSeq, c.LastSeq))
	}
	if c.Dropped > 0 {
		n = append(n, fmt.Sprintf("doorbell: the bench's subscriber dropped %d messages (nats.go slow consumer): the load generator, not kurad", c.Dropped))
	}
	return n
}
