package daemon_test

import (
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/daemon"
)

// TestConfig_InflightBodyBytes: the request body budget is an eighth of the
// Go soft memory limit unless set, never below two bodies at the body
// limit; a set one must hold at least one body.
func TestConfig_InflightBodyBytes(t *testing.T) {
	t.Parallel()
	old := debug.SetMemoryLimit(256 << 20)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })
	c, _, err := daemon.LoadConfig(nil, env(nil), devNull(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.InflightBodyBytes(); got != 32<<20 || c.MaxInflightBodyWait != 5*time.Second {
		t.Errorf("default under a 256 MiB limit: got %d bytes, wait %s; want 32 MiB and 5s", got, c.MaxInflightBodyWait)
	}
	debug.SetMemoryLimit(16 << 20)
	if got := c.InflightBodyBytes(); got != 8<<20 {
		t.Errorf("default under a 16 MiB limit: got %d, want two bodies of 4 MiB", got)
	}
	c, _, err = daemon.LoadConfig([]string{"--max-inflight-body-bytes", "10485760", "--max-inflight-body-wait", "250ms"}, env(nil), devNull(t))
	if err != nil || c.InflightBodyBytes() != 10<<20 || c.MaxInflightBodyWait != 250*time.Millisecond {
		t.Errorf("set by flags: got %d, %s, %v", c.InflightBodyBytes(), c.MaxInflightBodyWait, err)
	}
	c, _, err = daemon.LoadConfig(nil, env(map[string]string{"KURA_MAX_INFLIGHT_BODY_BYTES": "8388608"}), devNull(t))
	if err != nil || c.InflightBodyBytes() != 8<<20 {
		t.Errorf("set by the environment: got %d, %v", c.InflightBodyBytes(), err)
	}
	for _, args := range [][]string{
		{"--max-inflight-body-bytes", "1024"}, // below one body at the 4 MiB limit
		{"--max-inflight-body-bytes", "-1"},
		{"--max-inflight-body-bytes", "lots"},
		{"--max-inflight-body-wait", "-1s"},
		{"--max-inflight-body-wait", "2h"},
	} {
		if _, _, err := daemon.LoadConfig(args, env(nil), devNull(t)); err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(args[0], "--")) {
			t.Errorf("%v: got %v, want a refusal naming %s", args, err, args[0])
		}
	}
}
