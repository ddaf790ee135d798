package kuradtest_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/kura-memory/kura/internal/testwait"
)

// A turn given an hour is closed as timeout once the clock is moved past
// it: a test makes time pass without waiting for it.
func TestClock_TurnDeadlinePassesWhenAdvanced(t *testing.T) {
	t.Parallel()
	clk := &kuradtest.Clock{}
	base := kuradtest.StartMain(t, kuradtest.Options{Clock: clk}).BaseURL()
	call := func(method, path, body string, want int) map[string]any {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode != want {
			t.Fatalf("%s %s: got %d %v (%v), want %d", method, path, resp.StatusCode, m, err, want)
		}
		return m
	}
	sid := call("POST", "/v1/sessions", `{"project":"hashi","name":"clock"}`, 201)["id"].(string)
	tid := call("POST", "/v1/sessions/"+sid+"/turns", `{"instruction":{"content":"take your time","author_id":"user:oles"},"deadline_seconds":3600}`, 201)["id"].(string)
	state := func() string { return call("GET", "/v1/turns/"+tid, "", 200)["state"].(string) }
	if got := state(); got != "open" {
		t.Fatalf("got state %q before the deadline, want open", got)
	}
	clk.Advance(time.Hour + time.Minute)
	testwait.For(t, testwait.Default, "the turn closed as timeout", func() bool { return state() == "timeout" })
}
