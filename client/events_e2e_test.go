package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/kura-memory/kura/internal/testwait"
	"github.com/nats-io/nats.go"
)

// putN writes n small records in one batch, in project (metadata
// project_id; "" for the default project), and returns them in order.
func putN(t *testing.T, c *client.Client, ctx context.Context, project string, n int) []client.Record {
	t.Helper()
	rs, err := putBatch(c, ctx, project, n)
	if err != nil {
		t.Fatalf("put records: %v", err)
	}
	return rs
}

// putBatch is putN for goroutines other than the test's.
func putBatch(c *client.Client, ctx context.Context, project string, n int) ([]client.Record, error) {
	in := make([]client.RecordInput, n)
	for i := range in {
		in[i] = client.RecordInput{Type: "agent.thought", AuthorID: "agent:ev",
			Content: json.RawMessage(fmt.Sprintf(`{"n":%d,"t":"%d"}`, i, time.Now().UnixNano()))}
		if project != "" {
			in[i].Metadata = map[string]string{"project_id": project}
		}
	}
	return c.PutRecords(ctx, in)
}

// allEvents pages through the feed from q.After until it is caught up.
func allEvents(t *testing.T, c *client.Client, ctx context.Context, q client.EventQuery) []client.Event {
	t.Helper()
	var out []client.Event
	for range 1000 {
		p, err := c.Events(ctx, q)
		if err != nil {
			t.Fatalf("events after %d: %v", q.After, err)
		}
		if q.Limit > 0 && len(p.Events) > q.Limit {
			t.Fatalf("got %d events, want at most the limit %d", len(p.Events), q.Limit)
		}
		out = append(out, p.Events...)
		if p.NextAfter >= p.LastSeq {
			return out
		}
		if p.NextAfter <= q.After {
			t.Fatalf("next_after %d does not move past after=%d (last_seq %d)", p.NextAfter, q.After, p.LastSeq)
		}
		q.After = p.NextAfter
	}
	t.Fatal("the feed never caught up")
	return nil
}

func seqs(es []client.Event) []int64 {
	out := make([]int64, len(es))
	for i, e := range es {
		out[i] = e.Seq
	}
	return out
}

func TestE2E_EventsPaging(t *testing.T) {
	t.Parallel()
	c, ctx := newClient(t)
	rs := putN(t, c, ctx, "", 25)

	es := allEvents(t, c, ctx, client.EventQuery{Limit: 10})
	for i, e := range es {
		if e.Seq != int64(i+1) {
			t.Fatalf("got seqs %v, want 1..%d without gaps or repeats", seqs(es), len(es))
		}
	}
	var ids []string
	for _, e := range es {
		if e.Type == "record.written" {
			ids = append(ids, e.Refs["record_id"])
		}
	}
	var want []string
	for _, r := range rs {
		want = append(want, r.ID)
	}
	if !slices.Equal(ids, want) {
		t.Errorf("got record ids %v, want %v in write order", ids, want)
	}

	e := es[0]
	if e.Project != "default" || e.Type != "record.written" {
		t.Errorf("got %+v, want a record.written event of project default", e)
	}
	if _, err := time.Parse(time.RFC3339Nano, e.At); err != nil {
		t.Errorf("at %q: %v", e.At, err)
	}
	for _, k := range []string{"seq", "type", "project", "at"} {
		if _, ok := e.Refs[k]; ok {
			t.Errorf("got %q in Refs %v, want only ids there", k, e.Refs)
		}
	}
	var raw map[string]any
	if err := json.Unmarshal(e.Raw, &raw); err != nil || raw["record_id"] != e.Refs["record_id"] || raw["seq"] != float64(e.Seq) {
		t.Errorf("got Raw %s (%v), want the pointer of event %d", e.Raw, err, e.Seq)
	}

	t.Run("PastTheEnd", func(t *testing.T) {
		last := es[len(es)-1].Seq
		p, err := c.Events(ctx, client.EventQuery{After: last + 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Events) != 0 || p.LastSeq != last {
			t.Errorf("got %d events, last_seq %d, want none and %d", len(p.Events), p.LastSeq, last)
		}
	})
}

func TestE2E_EventsFilter(t *testing.T) {
	t.Parallel()
	c, ctx := newClient(t)
	putN(t, c, ctx, "alpha", 4)
	putN(t, c, ctx, "beta", 3)
	s, err := c.CreateSession(ctx, client.SessionInput{Project: "alpha", Name: "filters"})
	if err != nil {
		t.Fatal(err)
	}
	putN(t, c, ctx, "alpha", 2)
	if _, err := c.CreateLedger(ctx, client.LedgerInput{Label: "filters"}); err != nil {
		t.Fatal(err)
	}
	all := allEvents(t, c, ctx, client.EventQuery{})

	tests := []struct {
		name    string
		types   []string
		project string
	}{
		{"Type", []string{"record.written"}, ""},
		{"Project", nil, "alpha"},
		{"TwoTypes", []string{"ledger.written", "session.created"}, ""},
		{"TypeAndProject", []string{"record.written"}, "beta"},
		{"NoMatch", []string{"turn.complete"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want []int64
			for _, e := range all {
				if (tt.types == nil || slices.Contains(tt.types, e.Type)) && (tt.project == "" || e.Project == tt.project) {
					want = append(want, e.Seq)
				}
			}
			// A small page makes the filter and next_after meet often.
			got := allEvents(t, c, ctx, client.EventQuery{Limit: 3, Types: tt.types, Project: tt.project})
			if !slices.Equal(seqs(got), want) {
				t.Errorf("got seqs %v, want %v", seqs(got), want)
			}
		})
	}

	t.Run("SessionRefs", func(t *testing.T) {
		got := allEvents(t, c, ctx, client.EventQuery{Types: []string{"session.created"}})
		if len(got) != 1 || got[0].Refs["session_id"] != s.ID || got[0].Project != "alpha" {
			t.Errorf("got %+v, want one session.created of %s in alpha", got, s.ID)
		}
	})

	t.Run("BadType", func(t *testing.T) {
		_, err := c.Events(ctx, client.EventQuery{Types: []string{"record.written", "no.such"}})
		e := wantCode(t, err, client.EInvalid)
		if e.Details["field"] != "type" {
			t.Errorf("got details %v, want the type field named", e.Details)
		}
		err = c.StreamEvents(ctx, client.EventQuery{Types: []string{"no.such"}}, func(client.Event) error {
			t.Error("got an event from a refused stream")
			return nil
		})
		wantCode(t, err, client.EInvalid)
	})
}

func TestE2E_EventsLongPoll(t *testing.T) {
	t.Parallel()
	url := kuradtest.Start(t)
	c, ctx := client.New(url), t.Context()
	putN(t, c, ctx, "", 1)
	p, err := c.Events(ctx, client.EventQuery{})
	if err != nil {
		t.Fatal(err)
	}
	last := p.LastSeq

	t.Run("WakesOnWrite", func(t *testing.T) {
		var r []client.Record
		var perr error
		done := make(chan struct{})
		time.AfterFunc(200*time.Millisecond, func() { defer close(done); r, perr = putBatch(c, ctx, "", 1) })
		start := time.Now()
		p, err := c.Events(ctx, client.EventQuery{After: last, Wait: 5 * time.Second})
		took := time.Since(start)
		<-done
		if err != nil || perr != nil {
			t.Fatal(err, perr)
		}
		if len(p.Events) != 1 || p.Events[0].Refs["record_id"] != r[0].ID {
			t.Fatalf("got %+v, want the record written during the poll", p.Events)
		}
		if took > 3*time.Second {
			t.Errorf("the poll took %s, want it to answer soon after the write", took)
		}
		last = p.NextAfter
	})

	t.Run("FilterSkipsOtherWrites", func(t *testing.T) {
		done := make(chan struct{})
		time.AfterFunc(100*time.Millisecond, func() {
			defer close(done)
			if _, err := putBatch(c, ctx, "", 2); err != nil { // wakes the poll, matches nothing
				t.Error(err)
			}
			if _, err := c.CreateSession(ctx, client.SessionInput{Project: "default", Name: "poll"}); err != nil {
				t.Error(err)
			}
		})
		p, err := c.Events(ctx, client.EventQuery{After: last, Types: []string{"session.created"}, Wait: 5 * time.Second})
		<-done
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Events) != 1 || p.Events[0].Type != "session.created" || p.NextAfter != p.Events[0].Seq {
			t.Fatalf("got %+v (next_after %d), want the session.created event alone", p.Events, p.NextAfter)
		}
		last = p.NextAfter
	})

	t.Run("TimesOut", func(t *testing.T) {
		start := time.Now()
		p, err := c.Events(ctx, client.EventQuery{After: last, Wait: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Events) != 0 || p.NextAfter != last || time.Since(start) < 250*time.Millisecond {
			t.Errorf("got %d events, next_after %d after %s, want an empty page at %d after the wait", len(p.Events), p.NextAfter, time.Since(start), last)
		}
	})

	t.Run("OutlivesHTTPTimeout", func(t *testing.T) {
		short := client.New(url, client.WithHTTPClient(&http.Client{Timeout: 200 * time.Millisecond}))
		p, err := short.Events(ctx, client.EventQuery{After: last, Wait: 600 * time.Millisecond})
		if err != nil || len(p.Events) != 0 {
			t.Fatalf("got %v, %v, want an empty page: the wait stretches the client's timeout", p, err)
		}
	})

	t.Run("BoundedByContext", func(t *testing.T) {
		cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := c.Events(cctx, client.EventQuery{After: last, Wait: 30 * time.Second})
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
			t.Errorf("got %v after %s, want the context's deadline", err, time.Since(start))
		}
	})
}

var errStop = errors.New("stop")

// stream runs StreamEvents in the background and hands over its events;
// the returned channel yields StreamEvents' result.
func stream(ctx context.Context, c *client.Client, q client.EventQuery, stopAt int) (<-chan client.Event, <-chan error) {
	events, done := make(chan client.Event, 100), make(chan error, 1)
	go func() {
		n := 0
		done <- c.StreamEvents(ctx, q, func(e client.Event) error {
			events <- e
			if n++; n == stopAt {
				return errStop
			}
			return nil
		})
	}()
	return events, done
}

func receive(t *testing.T, events <-chan client.Event, n int) []client.Event {
	t.Helper()
	var out []client.Event
	timeout := time.After(10 * time.Second)
	for len(out) < n {
		select {
		case e := <-events:
			out = append(out, e)
		case <-timeout:
			t.Fatalf("got %d events, want %d", len(out), n)
		}
	}
	return out
}

func TestE2E_StreamEvents(t *testing.T) {
	t.Parallel()
	url := kuradtest.Start(t)
	c, ctx := client.New(url), t.Context()
	before := putN(t, c, ctx, "", 3)
	rec := client.EventQuery{Types: []string{"record.written"}}

	t.Run("ExistingThenNewThenStop", func(t *testing.T) {
		events, done := stream(ctx, c, rec, 5)
		got := receive(t, events, 3)
		after := putN(t, c, ctx, "", 2)
		got = append(got, receive(t, events, 2)...)
		select {
		case err := <-done:
			if !errors.Is(err, errStop) {
				t.Errorf("got %v, want fn's error back", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the stream did not end when fn returned an error")
		}
		for i, r := range append(before, after...) {
			if got[i].Refs["record_id"] != r.ID || (i > 0 && got[i].Seq <= got[i-1].Seq) {
				t.Fatalf("got %+v, want the records' events in seq order", got)
			}
		}
		rec.After = got[2].Seq // the resume point for the next subtest
	})

	t.Run("Resume", func(t *testing.T) {
		events, done := stream(ctx, c, rec, 2)
		got := receive(t, events, 2)
		if err := <-done; !errors.Is(err, errStop) {
			t.Errorf("got %v, want fn's error", err)
		}
		if got[0].Seq <= rec.After || got[1].Seq <= got[0].Seq {
			t.Errorf("got seqs %v, want the two after %d", seqs(got), rec.After)
		}
	})

	t.Run("CancelAndHTTPTimeout", func(t *testing.T) {
		// A client timeout shorter than the stream's idle time must not
		// end it: only ctx does.
		short := client.New(url, client.WithHTTPClient(&http.Client{Timeout: 100 * time.Millisecond}))
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		p, err := c.Events(ctx, client.EventQuery{})
		if err != nil {
			t.Fatal(err)
		}
		opened := time.Now()
		events, done := stream(cctx, short, client.EventQuery{After: p.LastSeq}, 0)
		// The stream stays open, idle, for three client timeouts: checked
		// at every poll, not once at the end.
		testwait.For(t, 10*time.Second, "three client timeouts with the stream open", func() bool {
			select {
			case err := <-done:
				t.Fatalf("the stream ended after %s: %v", time.Since(opened), err)
			default:
			}
			return time.Since(opened) > 300*time.Millisecond
		})
		r := putN(t, c, ctx, "", 1)
		if got := receive(t, events, 1); got[0].Refs["record_id"] != r[0].ID {
			t.Errorf("got %+v, want the new record's event", got[0])
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
	})
}

func TestE2E_StreamEventsServerShutdown(t *testing.T) {
	t.Parallel()
	d := kuradtest.StartMain(t, kuradtest.Options{})
	c := client.New(d.BaseURL())
	putN(t, c, t.Context(), "", 1)
	events, done := stream(t.Context(), c, client.EventQuery{}, 0)
	receive(t, events, 1)
	closed := make(chan error, 1)
	go func() { closed <- d.Close(context.Background()) }()
	select {
	case err := <-done:
		if !errors.Is(err, client.ErrStreamEnded) {
			t.Errorf("got %v, want ErrStreamEnded", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream outlived the server")
	}
	if err := <-closed; err != nil {
		t.Errorf("close: %v", err)
	}
}

// TestE2E_EventsNATS checks the doorbell against the feed: the payload on
// NATS is the feed's pointer, byte for byte, and /v1/info reports the
// outbox caught up.
func TestE2E_EventsNATS(t *testing.T) {
	t.Parallel()
	c, ctx := newClient(t)
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect("nats://" + info.NATS.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync("oclaw.v1.hashi.evt.record.written")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	putN(t, c, ctx, "other", 1)
	r := putN(t, c, ctx, "hashi", 1)
	msg, err := sub.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var live client.Event
	if err := json.Unmarshal(msg.Data, &live); err != nil {
		t.Fatal(err)
	}
	feed := allEvents(t, c, ctx, client.EventQuery{Project: "hashi"})
	if len(feed) != 1 || live.Refs["record_id"] != r[0].ID || string(feed[0].Raw) != string(live.Raw) {
		t.Errorf("got %s on NATS and %v in the feed, want the same pointer of record %s", msg.Data, feed, r[0].ID)
	}

	var st *client.Info
	if !testwait.Until(10*time.Second, func() bool {
		var err error
		if st, err = c.Info(ctx); err != nil {
			t.Fatal(err)
		}
		return st.Outbox != nil && st.Outbox.Lag == 0 && st.Outbox.PublishedSeq == st.LastEventSeq
	}) {
		t.Fatalf("got outbox %+v at last seq %d, want it caught up", st.Outbox, st.LastEventSeq)
	}
}

// FuzzEvent_UnmarshalJSON feeds arbitrary pointers to the Event decoder: it
// must not panic, must refuse an event without a positive seq, and what it
// accepts must survive a round trip through its fields.
func FuzzEvent_UnmarshalJSON(f *testing.F) {
	for _, s := range []string{
		`{"seq":1,"type":"record.written","project":"default","at":"2026-11-21T09:00:00.123456789Z","record_id":"x"}`,
		`{"seq":2,"type":"dispatch","project":"p","at":"","turn_id":"t","context_ledger_id":"l","n":3,"o":{"a":1}}`,
		`{"seq":0}`, `{"seq":-1}`, `{"seq":1.5}`, `{"seq":"1"}`, `{"type":"x"}`, `{"seq":1,"type":2}`,
		`null`, `[]`, `{}`, ``, `{"seq":9223372036854775807}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var e client.Event
		if err := json.Unmarshal(b, &e); err != nil {
			return
		}
		if e.Seq <= 0 {
			t.Fatalf("accepted seq %d from %s", e.Seq, b)
		}
		e.Raw = nil // re-encode from the fields
		out, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var back client.Event
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("re-encoded %s does not decode: %v", out, err)
		}
		if back.Seq != e.Seq || back.Type != e.Type || back.Project != e.Project || back.At != e.At || len(back.Refs) != len(e.Refs) {
			t.Fatalf("got %+v back, want %+v", back, e)
		}
	})
}
