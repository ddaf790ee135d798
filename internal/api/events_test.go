package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"github.com/kura-memory/kura/internal/testwait"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/nats-io/nats.go"
)

type pointer struct {
	Seq      int64  `json:"seq"`
	Type     string `json:"type"`
	Project  string `json:"project"`
	At       string `json:"at"`
	RecordID string `json:"record_id"`
	LedgerID string `json:"ledger_id"`
}

type eventPage struct {
	Events    []pointer `json:"events"`
	NextAfter int64     `json:"next_after"`
	LastSeq   int64     `json:"last_seq"`
}

func (c *apiClient) events(query string) eventPage {
	c.tb.Helper()
	st, _, raw := c.get("/v1/events?" + query)
	if st != 200 {
		c.tb.Fatalf("GET /v1/events?%s: %d %s", query, st, raw)
	}
	var p eventPage
	if err := json.Unmarshal(raw, &p); err != nil {
		c.tb.Fatal(err)
	}
	return p
}

// writeBatches writes n records in batches of 1,000 and returns their ids
// in write order.
func (c *apiClient) writeBatches(n int, tag string) []string {
	c.tb.Helper()
	var ids []string
	for len(ids) < n {
		var b strings.Builder
		b.WriteString(`{"records":[`)
		for i := 0; i < min(1000, n-len(ids)); i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"type":"agent.thought","content":{"n":%d,"tag":%q},"author_id":"agent:bmo"}`, len(ids)+i, tag)
		}
		b.WriteString(`]}`)
		st, m, raw := c.post("/v1/records/batch", b.String())
		if st != 201 {
			c.tb.Fatalf("batch: %d %s", st, raw[:min(len(raw), 300)])
		}
		for _, r := range m["records"].([]any) {
			ids = append(ids, r.(map[string]any)["id"].(string))
		}
	}
	return ids
}

// A NATS subscriber sees the first writes, dies, misses 10,000 records and
// catches up from its last seq: all of them, once each, in order, through
// both the paged feed and the stream.
func TestEvents_CatchUpAfterSubscriberDies(t *testing.T) {
	t.Parallel()
	d := kuradtest.StartMain(t, kuradtest.Options{})
	c := &apiClient{tb: t, base: d.BaseURL()}
	nc, err := nats.Connect("nats://" + d.NATSAddr())
	if err != nil {
		t.Fatal(err)
	}
	live := make(chan *nats.Msg, 100)
	if _, err := nc.ChanSubscribe("oclaw.v1.>", live); err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	first := c.writeBatches(5, "before")
	var last int64
	for i := 0; i < len(first); {
		select {
		case m := <-live:
			if strings.HasPrefix(m.Subject, "oclaw.v1._log.") {
				continue // the log's checkpoints (the one of the start may come late): no event
			}
			var p pointer
			json.Unmarshal(m.Data, &p)
			if p.RecordID != first[i] {
				t.Fatalf("live event %d points at %s, want %s", i, p.RecordID, first[i])
			}
			last = p.Seq
			i++
		case <-time.After(10 * time.Second):
			t.Fatalf("live event %d never arrived", i)
		}
	}
	nc.Close() // the subscriber dies

	const missed = 10000
	ids := c.writeBatches(missed, "missed")

	check := func(how string, got []pointer) {
		t.Helper()
		if len(got) != missed {
			t.Fatalf("%s: %d events, want %d", how, len(got), missed)
		}
		for i, e := range got {
			if e.Seq != last+1+int64(i) || e.Type != "record.written" || e.RecordID != ids[i] {
				t.Fatalf("%s: event %d is %+v, want seq %d for record %s", how, i, e, last+1+int64(i), ids[i])
			}
		}
	}

	var feed []pointer
	after := last
	for range 100 {
		p := c.events("limit=1000&after=" + strconv.FormatInt(after, 10))
		feed = append(feed, p.Events...)
		after = p.NextAfter
		if len(p.Events) == 0 {
			break
		}
	}
	check("feed", feed)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stream := readStream(t, ctx, c.base+"/v1/events/stream?after="+strconv.FormatInt(last, 10), "", missed)
	check("stream", stream)
}

// readStream reads n events from an SSE stream and closes it.
func readStream(t *testing.T, ctx context.Context, url, lastEventID string, n int) []pointer {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var out []pointer
	var id, typ string
	sc := bufio.NewScanner(resp.Body)
	for len(out) < n && sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			id = line[4:]
		case strings.HasPrefix(line, "event: "):
			typ = line[7:]
		case strings.HasPrefix(line, "data: "):
			var p pointer
			if err := json.Unmarshal([]byte(line[6:]), &p); err != nil {
				t.Fatalf("data line %q: %v", line, err)
			}
			if strconv.FormatInt(p.Seq, 10) != id || p.Type != typ {
				t.Fatalf("frame id %s event %s does not match data %s", id, typ, line)
			}
			out = append(out, p)
		}
	}
	if len(out) < n {
		t.Fatalf("stream ended after %d events (%v)", len(out), sc.Err())
	}
	return out
}

func TestEvents_FiltersAndPaging(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	c.writeBatches(3, "a")
	st, m, _ := c.post("/v1/records", `{"type":"agent.thought","content":"hashi","author_id":"agent:bmo","metadata":{"project_id":"hashi"}}`)
	if st != 201 {
		t.Fatal(st, m)
	}
	st, m, _ = c.post("/v1/ledgers", fmt.Sprintf(`{"label":"l","record_ids":[%q]}`, m["id"]))
	if st != 201 {
		t.Fatal(st, m)
	}
	all := c.events("")
	if len(all.Events) != 5 || all.LastSeq != 5 || all.NextAfter != 5 {
		t.Fatalf("all: %+v", all)
	}
	cases := []struct {
		query string
		seqs  []int64
		next  int64
	}{
		{"after=2", []int64{3, 4, 5}, 5},
		{"after=0&limit=2", []int64{1, 2}, 2},
		{"after=2&limit=2", []int64{3, 4}, 4},
		{"type=ledger.written", []int64{5}, 5},
		{"type=ledger.written,record.written&after=3", []int64{4, 5}, 5},
		{"type=ledger.written&type=record.written&limit=1&after=3", []int64{4}, 4},
		{"project=hashi", []int64{4}, 5},
		{"project=nowhere", nil, 5},
		{"after=5", nil, 5},
		{"after=99", nil, 99},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			p := c.events(tc.query)
			var got []int64
			for _, e := range p.Events {
				got = append(got, e.Seq)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.seqs) || p.NextAfter != tc.next {
				t.Errorf("seqs %v next %d, want %v next %d", got, p.NextAfter, tc.seqs, tc.next)
			}
		})
	}
}

func TestEvents_BadInput(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	cases := []struct{ path, field string }{
		{"/v1/events?after=-1", "after"},
		{"/v1/events?after=x", "after"},
		{"/v1/events?limit=0", "limit"},
		{"/v1/events?limit=1001", "limit"},
		{"/v1/events?type=record.deleted", "type"},
		{"/v1/events?project=No+Such", "project"},
		{"/v1/events?wait=soon", "wait"},
		{"/v1/events?wait=-1s", "wait"},
		{"/v1/events/stream?type=bogus", "type"},
		{"/v1/events/stream?after=1.5", "after"},
	}
	for _, tc := range cases {
		st, m, raw := c.get(tc.path)
		e, _ := m["error"].(map[string]any)
		details, _ := e["details"].(map[string]any)
		if st != 400 || e["code"] != "invalid_argument" || details["field"] != tc.field {
			t.Errorf("%s: %d %s, want 400 naming %s", tc.path, st, raw, tc.field)
		}
	}
	req, _ := http.NewRequest("GET", c.base+"/v1/events/stream", nil)
	req.Header.Set("Last-Event-ID", "nope")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("bad Last-Event-ID: %d", resp.StatusCode)
	}
}

func TestEvents_LongPoll(t *testing.T) {
	c := newClient(t)
	c.writeBatches(1, "a")

	start := time.Now()
	p := c.events("after=1&wait=300ms")
	if len(p.Events) != 0 || time.Since(start) < 250*time.Millisecond {
		t.Errorf("empty poll answered %+v after %s", p, time.Since(start))
	}

	// A poll waiting for ledgers is not woken into an answer by records.
	type answer struct {
		p   eventPage
		err error
	}
	done := make(chan answer, 1)
	go func() {
		resp, err := http.Get(c.base + "/v1/events?after=1&type=ledger.written&wait=20s")
		if err != nil {
			done <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		var p eventPage
		done <- answer{p, json.NewDecoder(resp.Body).Decode(&p)}
	}()
	// The poll must be waiting when the records commit, so that it is their
	// commit that wakes it.
	testwait.For(t, 10*time.Second, "the poll waiting", func() bool {
		return strings.Contains(c.metricsText(), "kura_events_polls_waiting 1")
	})
	ids := c.writeBatches(2, "b")
	select {
	case a := <-done:
		t.Fatalf("poll for ledgers answered on records: %+v %v", a.p, a.err)
	case <-time.After(200 * time.Millisecond):
	}
	st, _, raw := c.post("/v1/ledgers", fmt.Sprintf(`{"label":"l","record_ids":[%q]}`, ids[0]))
	if st != 201 {
		t.Fatal(st, string(raw))
	}
	select {
	case a := <-done:
		if a.err != nil || len(a.p.Events) != 1 || a.p.Events[0].Type != "ledger.written" || a.p.Events[0].Seq != 4 {
			t.Fatalf("poll answered %+v %v", a.p, a.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("long poll not woken by the commit")
	}
}

func TestEvents_StreamResumesFromLastEventID(t *testing.T) {
	c := newClient(t)
	c.writeBatches(4, "a")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got := readStream(t, ctx, c.base+"/v1/events/stream", "2", 2)
	if got[0].Seq != 3 || got[1].Seq != 4 {
		t.Fatalf("resumed at %+v", got)
	}
	// Live: events written while the stream is open arrive on it. The
	// stream's first byte comes after kurad has started serving it.
	var wg sync.WaitGroup
	open := make(chan struct{})
	wg.Go(func() {
		select {
		case <-open:
			c.writeBatches(3, "b")
		case <-ctx.Done():
		}
	})
	var once sync.Once
	traced := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotFirstResponseByte: func() { once.Do(func() { close(open) }) }})
	got = readStream(t, traced, c.base+"/v1/events/stream?after=4&type=record.written", "", 3)
	wg.Wait()
	if got[0].Seq != 5 || got[2].Seq != 7 {
		t.Fatalf("live events %+v", got)
	}
}

// Graceful shutdown ends long polls and streams instead of waiting for
// them.
func TestEvents_ShutdownEndsWaitingClients(t *testing.T) {
	d := kuradtest.StartMain(t, kuradtest.Options{})
	base := d.BaseURL()
	var wg sync.WaitGroup
	// Each client signals once kurad has its request: the stream answers
	// with its first byte at once; the long poll answers nothing until the
	// end, so its request written on the connection is the sign (a server
	// shutting down waits for a new connection's request).
	sent := make(chan struct{}, 2)
	for _, path := range []string{"/v1/events?wait=60s", "/v1/events/stream"} {
		wg.Go(func() {
			var once sync.Once
			signal := func() { once.Do(func() { sent <- struct{}{} }) }
			trace := &httptrace.ClientTrace{GotFirstResponseByte: signal}
			if strings.Contains(path, "wait=") {
				trace = &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { signal() }}
			}
			req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", base+path, nil)
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				bufio.NewReader(resp.Body).WriteTo(discard{})
				resp.Body.Close()
			}
		})
	}
	for range 2 {
		select {
		case <-sent:
		case <-time.After(10 * time.Second):
			t.Fatal("the waiting clients never reached kurad")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if err := d.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("shutdown took %s with waiting clients", took)
	}
	wg.Wait()
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// Every committed mutation appends exactly one event row naming what it
// changed; a no-op (a deduplicated record) and a refused request append
// none. A turn close changes several things (an output ledger, the head,
// the turn) and says so once for each.
func TestEvents_OneRowPerMutation(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	var after int64
	step := func(name string, want []string, do func()) {
		t.Helper()
		do()
		p := c.events("limit=1000&after=" + strconv.FormatInt(after, 10))
		var got []string
		for _, e := range p.Events {
			got = append(got, e.Type)
			if e.Seq != after+1 {
				t.Errorf("%s: seq %d follows %d", name, e.Seq, after)
			}
			after = e.Seq
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: events %v, want %v", name, got, want)
		}
	}
	var id string
	rec := `{"type":"agent.thought","content":"once","author_id":"agent:bmo"}`
	step("record", []string{"record.written"}, func() { _, m, _ := c.post("/v1/records", rec); id = m["id"].(string) })
	step("duplicate record", nil, func() { c.post("/v1/records", rec) })
	step("refused record", nil, func() { c.post("/v1/records", `{"type":"nope","content":1,"author_id":"agent:bmo"}`) })
	step("batch", []string{"record.written", "record.written"}, func() { c.writeBatches(2, "b") })
	var ledger string
	step("ledger", []string{"ledger.written"}, func() {
		_, m, _ := c.post("/v1/ledgers", fmt.Sprintf(`{"label":"l","record_ids":[%q]}`, id))
		ledger = m["id"].(string)
	})
	var session string
	step("session", []string{"session.created"}, func() {
		_, m, _ := c.post("/v1/sessions", `{"project":"hashi","name":"events"}`)
		session = m["id"].(string)
	})
	step("head move", []string{"session.head"}, func() {
		c.post("/v1/sessions/"+session+"/head", `{"ledger_id":"`+ledger+`","expected_head":null}`)
	})
	var turn string
	step("turn open with dispatch", []string{"record.written", "ledger.written", "session.head", "turn.opened", "dispatch"}, func() {
		_, m, _ := c.post("/v1/sessions/"+session+"/turns", `{"instruction":{"content":"go","author_id":"user:oles"},"dispatch":"summariser"}`)
		turn = m["id"].(string)
	})
	step("claim", []string{"turn.claimed"}, func() { c.post("/v1/turns/"+turn+"/claim", `{"worker":"agent:w","lease_seconds":60}`) })
	step("append", []string{"record.written"}, func() {
		c.post("/v1/turns/"+turn+"/records", `{"epoch":1,"records":[{"type":"agent.thought","content":"done","author_id":"agent:w"}]}`)
	})
	step("append to a stale epoch", nil, func() {
		c.post("/v1/turns/"+turn+"/records", `{"epoch":0,"records":[{"type":"agent.thought","content":"late","author_id":"agent:w"}]}`)
	})
	// No deliverable was appended, so kurad writes one saying so.
	step("close", []string{"record.written", "ledger.written", "session.head", "turn.complete"}, func() {
		c.post("/v1/turns/"+turn+"/close", `{"epoch":1,"status":"complete"}`)
	})
	step("close again", nil, func() { c.post("/v1/turns/"+turn+"/close", `{"epoch":1,"status":"complete"}`) })
}
