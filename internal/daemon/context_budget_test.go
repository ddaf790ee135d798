package daemon_test

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/daemon"
)

// TestConfig_InflightContextBytes: the context budget in flight is a
// sixteenth of the Go soft memory limit unless set, never below the
// largest budget_bytes (16 MiB); a set one is 1 MiB to 1 TiB. Not
// parallel: it sets the process's soft limit, as
// TestConfig_InflightBodyBytes does, and must not run beside it.
func TestConfig_InflightContextBytes(t *testing.T) {
	old := debug.SetMemoryLimit(1 << 30)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })
	c, _, err := daemon.LoadConfig(nil, env(nil), devNull(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.InflightContextBytes(); got != 64<<20 {
		t.Errorf("default under a 1 GiB limit: got %d, want 64 MiB", got)
	}
	debug.SetMemoryLimit(256 << 20)
	if got := c.InflightContextBytes(); got != 16<<20 {
		t.Errorf("default under a 256 MiB limit: got %d, want 16 MiB", got)
	}
	debug.SetMemoryLimit(64 << 20)
	if got := c.InflightContextBytes(); got != 16<<20 {
		t.Errorf("default under a 64 MiB limit: got %d, want 16 MiB (one request at the largest budget)", got)
	}
	c, _, err = daemon.LoadConfig([]string{"--max-inflight-context-bytes", "2097152"}, env(nil), devNull(t))
	if err != nil || c.InflightContextBytes() != 2<<20 {
		t.Errorf("set by a flag: got %d, %v", c.InflightContextBytes(), err)
	}
	c, _, err = daemon.LoadConfig(nil, env(map[string]string{"KURA_MAX_INFLIGHT_CONTEXT_BYTES": "33554432"}), devNull(t))
	if err != nil || c.InflightContextBytes() != 32<<20 {
		t.Errorf("set by the environment: got %d, %v", c.InflightContextBytes(), err)
	}
	for _, args := range [][]string{
		{"--max-inflight-context-bytes", "1048575"},
		{"--max-inflight-context-bytes", "-1"},
		{"--max-inflight-context-bytes", "2199023255552"},
		{"--max-inflight-context-bytes", "lots"},
	} {
		if _, _, err := daemon.LoadConfig(args, env(nil), devNull(t)); err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(args[0], "--")) {
			t.Errorf("%v: got %v, want a refusal naming %s", args, err, args[0])
		}
	}
}
