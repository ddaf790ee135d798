package mcp_test

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/kuradtest"
)

// TestMCP_DenseTraceIsBounded: memory_trace is the trace route, so an
// agent's tool call over a writer's dense lineage (300 notes, each derived
// from the 256 before it) costs what the route's bound allows and says
// truncated; before, it cost seconds of CPU, as the route did.
func TestMCP_DenseTraceIsBounded(t *testing.T) {
	// Not parallel: it measures the process's CPU.
	base := kuradtest.Start(t)
	api := httpAPI{t, base}
	for part := range 2 {
		var nodes []string
		for i := part * 150; i < (part+1)*150; i++ {
			var from []string
			for j := max(0, i-kura.MaxDerivedFrom); j < i; j++ {
				from = append(from, fmt.Sprintf(`"note:n%d"`, j))
			}
			nodes = append(nodes, fmt.Sprintf(`{"kind":"note","id":"n%d","summary":"note %d","derived_from":[%s]}`, i, i, strings.Join(from, ",")))
		}
		api.json("POST", "/v1/scopes/dense/memory/nodes/batch", `{"nodes":[`+strings.Join(nodes, ",")+`]}`)
	}
	m := listTools(t, connect(t, base+"/mcp", nil))
	cpu := processCPU(t)
	res := m.result("memory_trace", map[string]any{"scope": "dense", "ref": "note:n299", "depth": 10})
	cpu = processCPU(t) - cpu
	if res.IsError {
		t.Fatalf("memory_trace: %s", text(res))
	}
	out := decode(t, []byte(text(res)))
	if out["truncated"] != true {
		t.Errorf("memory_trace: truncated %v, want true", out["truncated"])
	}
	// ~40 ms of kurad's CPU without the race detector; the MCP call adds
	// its own encoding of the same answer.
	if cpu > 8*time.Second {
		t.Errorf("memory_trace took %v of CPU, want well under 8 s", cpu)
	}
	t.Logf("memory_trace over the dense lineage: %v of CPU", cpu)
}

// processCPU is the CPU time this process (the test and its in-process
// kurad) has used.
func processCPU(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
