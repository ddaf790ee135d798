package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/kuradtest"
)

// tsClientDir holds the TypeScript client: package.json and its lock are
// committed, node_modules is installed from the lock by the test.
const tsClientDir = "testdata/ts-client"

// TestMCP_TypeScriptSDK runs testdata/ts-client/client.mjs, which uses the
// official MCP TypeScript SDK as the MCP Inspector does, against a real
// kurad's /mcp: it checks every input schema (as TestMCP_InputSchemas
// does, from the same expectations), calls turn_open, turn_append,
// turn_close, memory_put (a node, then a new version resending only its
// summary and a new confidence) and kb_put with arguments typed from the
// schema the way the Inspector's form types what a person enters (every
// required field filled in), and reads a
// node resource whose URI holds a literal colon. The test then checks over
// HTTP that every write happened.
//
// It needs node and npm (skipped, saying so, without them); the SDK is
// installed with npm ci from the committed lock when node_modules is
// missing or holds another version.
func TestMCP_TypeScriptSDK(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the MCP TypeScript SDK client is not run (install Node.js 18 or later and npm)")
	}
	npmInstall(t)

	base := kuradtest.Start(t)
	api := httpAPI{t, base}
	info := api.json("GET", "/v1/info", "")
	sess := api.json("POST", "/v1/sessions", `{"project":"hashi","name":"inspector"}`)

	var names []string
	for n := range enumArgs {
		names = append(names, n)
	}
	slices.Sort(names)
	expect := map[string]any{"enum_args": names}
	vocab := map[string]any{"vocab:record_types": info["record_types"], "vocab:node_kinds": info["node_kinds"]}
	toolsWant := map[string]any{}
	for name, w := range schemaWant {
		enums := map[string]any{}
		for path, v := range w.enums {
			if s, ok := v.(string); ok {
				v = vocab[s]
			}
			enums[path] = v
		}
		toolsWant[name] = map[string]any{"required": w.required, "enums": enums}
	}
	expect["tools"] = toolsWant
	b, err := json.Marshal(expect)
	if err != nil {
		t.Fatal(err)
	}
	expectFile := filepath.Join(t.TempDir(), "expect.json")
	if err := os.WriteFile(expectFile, b, 0o600); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "client.mjs", base+"/mcp", expectFile, sess["id"].(string))
	cmd.Dir = tsClientDir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the TypeScript SDK client failed (%v):\n%s", err, stderr.String())
	}
	var wrote struct {
		TurnID   string `json:"turn_id"`
		Resource string `json:"resource"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &wrote); err != nil || wrote.TurnID == "" || wrote.Resource != "fact:x" {
		t.Fatalf("the client says %q (%v), want the turn it wrote and the resource it read", stdout.String(), err)
	}

	// What the client wrote, as the HTTP API reads it.
	turn := api.json("GET", "/v1/turns/"+wrote.TurnID, "")
	if turn["state"] != "failed" || turn["session_id"] != sess["id"] {
		t.Errorf("turn: got %v, want failed in session %v", turn, sess["id"])
	}
	if ids, _ := turn["output_record_ids"].([]any); len(ids) != 2 { // the appended fact and the deliverable close added
		t.Errorf("turn output: got %v, want the appended record and the deliverable", turn["output_record_ids"])
	}
	n := api.json("GET", "/v1/scopes/hashi/memory/nodes/fact:x", "")
	if n["version"] != 2.0 || n["confidence"] != 0.95 || n["title"] != "build" || n["lifecycle"] != "active" || n["source_type"] != "told_by_agent" {
		t.Errorf("node fact:x: got %v", n)
	}
	entries := api.json("GET", "/v1/kb/docs/entries", "")["entries"].([]any)
	if len(entries) != 2 {
		t.Fatalf("kb docs: got %v, want the two entries", entries)
	}
	for _, e := range entries {
		e := e.(map[string]any)
		if e["identifier"] == "no keys" && (e["keys"] == nil || len(e["keys"].([]any)) != 0) {
			t.Errorf("kb entry put without keys: got keys %v, want []", e["keys"])
		}
	}
}

// npmInstall installs the client's dependencies from the committed lock
// unless node_modules already holds the locked SDK version.
func npmInstall(t *testing.T) {
	t.Helper()
	lock, err := os.ReadFile(filepath.Join(tsClientDir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	var l struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(lock, &l); err != nil {
		t.Fatalf("package-lock.json: %v", err)
	}
	const sdk = "node_modules/@modelcontextprotocol/sdk"
	want := l.Packages[sdk].Version
	if want == "" {
		t.Fatalf("package-lock.json does not lock %s", sdk)
	}
	var have struct {
		Version string `json:"version"`
	}
	if b, err := os.ReadFile(filepath.Join(tsClientDir, sdk, "package.json")); err == nil && json.Unmarshal(b, &have) == nil && have.Version == want {
		return
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not installed: the MCP TypeScript SDK cannot be installed, so its client is not run")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = tsClientDir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", tsClientDir, err, out)
	}
	t.Logf("npm ci installed the MCP TypeScript SDK %s in %v", want, time.Since(start).Round(time.Millisecond))
}
