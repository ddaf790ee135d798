package ui_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/daemon"
	"github.com/kura-memory/kura/internal/kuradtest"
)

// checkpoint fetches GET /v1/log/checkpoint as text.
func checkpoint(t *testing.T, base string) []string {
	t.Helper()
	resp, err := http.Get(base + "/v1/log/checkpoint")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("checkpoint: %d %s", resp.StatusCode, b)
	}
	return strings.Split(string(b), "\n")
}

// TestConsole_LogCheckpoint shows the checkpoint's origin, size and root
// as GET /v1/log/checkpoint serves them, kurad's signature line, and the
// log's state with no witness configured.
func TestConsole_LogCheckpoint(t *testing.T) {
	t.Parallel()
	base := kuradtest.Start(t)
	writeRecord(t, base, "hashi", "one")
	writeRecord(t, base, "hashi", "two")
	p := openConsole(t, base, "/log")
	p.waitFor(`document.querySelector("#cp-size") !== null`)
	lines := checkpoint(t, base)
	if got := p.text("#cp-origin"); got != lines[0] {
		t.Errorf("origin shown %q, checkpoint says %q", got, lines[0])
	}
	if got := p.text("#cp-size"); got != lines[1] || got == "0" {
		t.Errorf("size shown %q, checkpoint says %q", got, lines[1])
	}
	if got := p.text("#cp-root"); got != lines[2] {
		t.Errorf("root shown %q, checkpoint says %q", got, lines[2])
	}
	if got := p.text("#cp-sigs"); !contains(got, lines[0]) || !contains(got, "kurad") {
		t.Errorf("signature lines = %q", got)
	}
	if got := p.text("#log-state"); !contains(got, "unwitnessed") || !contains(got, "No witness is configured") {
		t.Errorf("state = %q", got)
	}
}

// TestConsole_LogOff says the log is off when kurad runs without it.
func TestConsole_LogOff(t *testing.T) {
	t.Parallel()
	d := kuradtest.StartMain(t, kuradtest.Options{Configure: func(c *daemon.Config) { c.LogOff = true }})
	p := openConsole(t, d.BaseURL(), "/log")
	p.waitFor(`document.querySelector("#log-state") !== null`)
	if got := p.text("#log-state"); !contains(got, "The log is off on this kurad") {
		t.Errorf("log-off page = %q", got)
	}
}
