package api_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/nats-io/nats.go"
)

// TestEvents_TurnCompleteSaysHowTheTurnEnded: a turn.complete pointer
// carries the turn's status, complete, failed or timeout, on NATS and in
// the feed, so a subscriber tells a failure without fetching the turn. The
// longest project name keeps it under 512 bytes. The timeout is kurad's own
// close at the deadline, reached by moving the store's clock.
func TestEvents_TurnCompleteSaysHowTheTurnEnded(t *testing.T) {
	clk := &kuradtest.Clock{}
	d := kuradtest.StartMain(t, kuradtest.Options{Clock: clk})
	c := &apiClient{tb: t, base: d.BaseURL()}
	project := "p" + strings.Repeat("x", 63) // the longest slug
	nc, err := nats.Connect("nats://" + d.NATSAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	live := make(chan *nats.Msg, 10)
	if _, err := nc.ChanSubscribe("oclaw.v1."+project+".evt.turn.complete", live); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}

	s := decode[kura.Session](t, c.mustPost("/v1/sessions", `{"project":"`+project+`","name":"ends"}`, 201))
	open := func(body string) string {
		t.Helper()
		return decode[kura.Turn](t, c.mustPost("/v1/sessions/"+s.ID+"/turns", body, 201)).ID
	}
	type want struct{ turn, status string }
	var wants []want
	for _, status := range []string{kura.TurnComplete, kura.TurnFailed} {
		id := open(`{"instruction":{"content":"go","author_id":"user:oles"}}`)
		c.mustPost("/v1/turns/"+id+"/close", `{"status":"`+status+`"}`, 200)
		wants = append(wants, want{id, status})
	}
	id := open(`{"instruction":{"content":"hurry","author_id":"user:oles"},"deadline_seconds":60}`)
	clk.Advance(61 * time.Second)
	if _, err := d.Store().CloseExpiredTurns(t.Context()); err != nil {
		t.Fatal(err)
	}
	wants = append(wants, want{id, kura.TurnTimeout})
	if tr := decode[kura.Turn](t, c.mustGet("/v1/turns/"+id)); tr.State != kura.TurnTimeout {
		t.Fatalf("turn past its deadline: state %s, want timeout", tr.State)
	}

	check := func(how string, i int, raw []byte) {
		t.Helper()
		var p map[string]any
		if err := json.Unmarshal(raw, &p); err != nil {
			t.Fatalf("%s: %q: %v", how, raw, err)
		}
		if p["type"] != "turn.complete" || p["turn_id"] != wants[i].turn || p["status"] != wants[i].status {
			t.Errorf("%s %d: got %s, want turn.complete of %s with status %s", how, i, raw, wants[i].turn, wants[i].status)
		}
		if len(raw) >= 512 {
			t.Errorf("%s %d: %d bytes, want under 512: %s", how, i, len(raw), raw)
		}
	}
	for i := range wants {
		select {
		case m := <-live:
			check("NATS", i, m.Data)
		case <-time.After(10 * time.Second):
			t.Fatalf("NATS: turn.complete %d never arrived", i)
		}
	}
	st, _, raw := c.get("/v1/events?type=turn.complete&project=" + project)
	if st != 200 {
		t.Fatalf("feed: %d %s", st, raw)
	}
	var feed struct{ Events []json.RawMessage }
	if err := json.Unmarshal(raw, &feed); err != nil {
		t.Fatal(err)
	}
	if len(feed.Events) != len(wants) {
		t.Fatalf("feed: %d turn.complete events, want %d: %s", len(feed.Events), len(wants), raw)
	}
	for i, e := range feed.Events {
		check("feed", i, e)
	}
}
