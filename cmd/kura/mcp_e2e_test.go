package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/kuradtest"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// buildKura builds this command (kuradtest.Build, shared): "kura mcp" is
// spawned by its client as a separate process, and tested that way.
func buildKura(t *testing.T) string {
	t.Helper()
	bin, err := kuradtest.Build("github.com/kura-memory/kura/cmd/kura")
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestE2E_MCPStdio spawns "kura mcp" with the SDK's client over its stdin
// and stdout, against a running kurad, and checks a few tools against the
// HTTP API.
func TestE2E_MCPStdio(t *testing.T) {
	t.Parallel()
	base := kuradtest.Start(t)
	bin := buildKura(t)

	cmd := exec.Command(bin, "mcp")
	cmd.Env = append(os.Environ(), "KURA_URL="+base, "KURA_TOKEN=")
	var stderr kuradtest.SyncBuffer
	cmd.Stderr = &stderr
	c := sdk.NewClient(&sdk.Implementation{Name: "kura-test", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &sdk.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connect to kura mcp: %v (stderr %q)", err, stderr.String())
	}
	defer cs.Close()

	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != 15 {
		t.Errorf("got %d tools, want 15", len(tools.Tools))
	}
	// The configurable vocabularies in the schemas are kurad's.
	resp, err := http.Get(base + "/v1/info")
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		RecordTypes []any `json:"record_types"`
		NodeKinds   []any `json:"node_kinds"`
	}
	json.NewDecoder(resp.Body).Decode(&info)
	resp.Body.Close()
	if len(info.NodeKinds) == 0 || len(info.RecordTypes) == 0 {
		t.Fatalf("/v1/info lists no vocabularies: %+v", info)
	}
	if got := enumOf(t, tools.Tools, "memory_put", "kind"); !reflect.DeepEqual(got, info.NodeKinds) {
		t.Errorf("memory_put kind enum %v, want /v1/info's node_kinds %v", got, info.NodeKinds)
	}
	if got := enumOf(t, tools.Tools, "record_put", "type"); !reflect.DeepEqual(got, info.RecordTypes) {
		t.Errorf("record_put type enum %v, want /v1/info's record_types %v", got, info.RecordTypes)
	}

	call := func(name string, args any) *sdk.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	structured := func(res *sdk.CallToolResult) map[string]any {
		t.Helper()
		if res.IsError {
			t.Fatalf("tool error: %s", mcpText(res))
		}
		b, _ := json.Marshal(res.StructuredContent)
		var m map[string]any
		json.Unmarshal(b, &m)
		return m
	}
	httpGet := func(path string) (int, []byte) {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	asMap := func(b []byte) map[string]any {
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("not JSON: %q", b)
		}
		return m
	}

	rec := structured(call("record_put", map[string]any{"type": "memory.fact", "content": "stdio works", "author_id": "agent:bmo"}))
	id, _ := rec["id"].(string)
	_, b := httpGet("/v1/records/" + id)
	if got := structured(call("record_get", map[string]any{"id": id})); !reflect.DeepEqual(got, asMap(b)) {
		t.Errorf("record_get: got %v, HTTP says %s", got, b)
	}
	node := structured(call("memory_put", map[string]any{"scope": "hashi", "kind": "fact", "id": "f1", "summary": "stdio works",
		"derived_from": []string{"record:" + id}}))
	_, b = httpGet("/v1/scopes/hashi/memory/nodes/fact:f1")
	if !reflect.DeepEqual(node, asMap(b)) {
		t.Errorf("memory_put: got %v, HTTP says %s", node, b)
	}
	_, b = httpGet("/v1/scopes/hashi/provenance/fact:f1/evidence")
	if got := structured(call("get_belief_evidence", map[string]any{"scope": "hashi", "ref": "fact:f1"})); !reflect.DeepEqual(got, asMap(b)) {
		t.Errorf("get_belief_evidence: got %v, HTTP says %s", got, b)
	}

	// An error is kurad's error body, as over HTTP.
	res := call("record_get", map[string]any{"id": "nope"})
	st, b := httpGet("/v1/records/nope")
	if !res.IsError || st != 400 || !reflect.DeepEqual(asMap([]byte(mcpText(res))), asMap(b)) {
		t.Errorf("record_get nope: got %s, HTTP %d %s", mcpText(res), st, b)
	}

	// The process ends when the client closes its stdin.
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v (stderr %q)", err, stderr.String())
	}
	if cmd.ProcessState == nil || !cmd.ProcessState.Success() {
		t.Errorf("kura mcp ended with %v, want exit 0 (stderr %q)", cmd.ProcessState, stderr.String())
	}
	if !strings.Contains(stderr.String(), "serving kurad at "+base) {
		t.Errorf("stderr %q does not say what it serves", stderr.String())
	}
}

// TestE2E_MCPStdioUnreachable: with kurad down, a tool call is an
// unavailable tool error, not a crash of the server.
func TestE2E_MCPStdioUnreachable(t *testing.T) {
	t.Parallel()
	dead := deadURL(t)
	in, inW := io.Pipe()
	outR, out := io.Pipe()
	done := make(chan int, 1)
	go func() {
		var errOut strings.Builder
		done <- run(t.Context(), []string{"mcp"}, in, out, &errOut, func(k string) string {
			if k == "KURA_URL" {
				return dead
			}
			return ""
		})
		out.Close()
	}()
	c := sdk.NewClient(&sdk.Implementation{Name: "kura-test", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Without kurad's vocabularies, kinds and record types are free strings.
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := enumOf(t, tools.Tools, "memory_put", "kind"); got != nil {
		t.Errorf("memory_put kind enum %v with kurad unreachable, want none", got)
	}
	if got := enumOf(t, tools.Tools, "memory_put", "lifecycle"); len(got) == 0 {
		t.Errorf("memory_put lifecycle has no enum")
	}
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "record_get", Arguments: map[string]any{"id": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(mcpText(res), `"code":"unavailable"`) {
		t.Errorf("got %s, want an unavailable tool error", mcpText(res))
	}
	cs.Close()
	if code := <-done; code != exitOK {
		t.Errorf("got exit %d, want 0 once the client closed stdin", code)
	}
}

func mcpText(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// enumOf is the enum of a tool's top-level argument, nil when it has none.
func enumOf(t *testing.T, tools []*sdk.Tool, tool, arg string) []any {
	t.Helper()
	for _, tl := range tools {
		if tl.Name != tool {
			continue
		}
		b, _ := json.Marshal(tl.InputSchema)
		var s struct {
			Properties map[string]struct {
				Enum []any `json:"enum"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		return s.Properties[arg].Enum
	}
	t.Fatalf("no tool %s", tool)
	return nil
}
