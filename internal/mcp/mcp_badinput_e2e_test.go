package mcp_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/kuradtest"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCP_BadInput sends /mcp what a broken or hostile client might: the
// transport refuses it before any tool runs, a call of an unknown tool is
// an error, and none of it changes the store.
func TestMCP_BadInput(t *testing.T) {
	t.Parallel()
	base := kuradtest.Start(t)
	state := func() string {
		resp, err := http.Get(base + "/v1/info")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		b, _ := json.Marshal([]any{m["last_event_seq"], m["counts"]})
		return string(b)
	}
	before := state()
	for _, tc := range []struct {
		name, ctype, body string
	}{
		{"Malformed", "application/json", `{"jsonrpc":"2.0","id":1,"method":`},
		{"NotJSON", "text/plain", `record_put please`},
		{"Oversized", "application/json", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"record_put","arguments":{"type":"agent.thought","author_id":"agent:x","content":"` + strings.Repeat("x", 9<<20) + `"}}}`},
	} {
		req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(tc.body))
		req.Header.Set("Content-Type", tc.ctype)
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode < 400 || resp.StatusCode >= 500 {
			t.Errorf("%s: %d %.200s, want a 4xx refusal", tc.name, resp.StatusCode, b)
		}
	}
	cs := connect(t, base+"/mcp", nil)
	if _, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "record_delete_all", Arguments: map[string]any{}}); err == nil {
		t.Error("an unknown tool was called without an error")
	}
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "record_put", Arguments: map[string]any{"type": "agent.thought", "author_id": "agent:x", "content": strings.Repeat("x", 5<<20)}})
	if err != nil || !res.IsError || !strings.Contains(text(res), `"too_large"`) {
		t.Errorf("a record over the body limit through a tool: %v %.200s, want the too_large tool error", err, text(res))
	}
	if after := state(); after != before {
		t.Errorf("refused MCP input changed the store: %s -> %s", before, after)
	}
}
