package main_test

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestREADME_Walkthrough runs the README's curl walkthrough, as written,
// against a real kurad: the first thing a newcomer tries must work.
func TestREADME_Walkthrough(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is needed for the README walkthrough (.ci/run installs it)")
	}
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	begin := strings.Index(s, "<!-- walkthrough:begin -->")
	end := strings.Index(s, "<!-- walkthrough:end -->")
	if begin < 0 || end < begin {
		t.Fatal("README has no walkthrough markers")
	}
	block := s[begin:end]
	block = block[strings.Index(block, "```sh")+len("```sh") : strings.LastIndex(block, "```")]
	const addr = "KURA=http://127.0.0.1:7700"
	if !strings.Contains(block, addr) {
		t.Fatalf("walkthrough does not start from %s", addr)
	}
	p := startKurad(t, t.TempDir())
	script := "set -eu\n" + strings.Replace(block, addr, "KURA="+p.Base, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "bash", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("walkthrough failed: %v\n%s", err, out)
	}
	for _, want := range []string{
		`"status":"ready"`,
		`"deduplicated":true`,
		`"label":"morning"`,
		`"next_cursor"`,
		`"ok":true`,
		`"audit_path"`,
		`"code":"invalid_argument"`,
		`"public_key":"ed25519:`,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("walkthrough output lacks %s:\n%s", want, out)
		}
	}
}

// TestREADME_Samples checks what the README says around the walkthrough
// against a real kurad: the note beside the refused agent.dream (the
// setting it names adds the type, and /v1/info lists the vocabulary as
// record_types), and the sample turn.complete event (a real one's fields,
// status included).
func TestREADME_Samples(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)

	refused := regexp.MustCompile(`-d '(\{"type":"agent\.dream"[^']*\})'`).FindStringSubmatchIndex(readme)
	if refused == nil {
		t.Fatal("README refuses no agent.dream record")
	}
	note := readme[max(0, refused[0]-500):refused[0]]
	note = note[strings.LastIndex(note, "\n\n")+1:] // the comment above the curl
	for _, want := range []string{"KURA_RECORD_TYPES", "--record-types", "/v1/info", "record_types"} {
		if !strings.Contains(note, want) {
			t.Errorf("the README's note on the refused type %q does not name %s", note, want)
		}
	}
	help, _ := exec.Command(kuradBin, "--help").CombinedOutput()
	if !regexp.MustCompile(`-record-types string\s+.*\(env KURA_RECORD_TYPES\)`).Match(help) {
		t.Errorf("kurad --help has no -record-types flag read from KURA_RECORD_TYPES:\n%s", help)
	}

	sample := regexp.MustCompile("```json\n(\\{[^\n]*\"type\":\"turn\\.complete\"\\})\n```").FindStringSubmatch(readme)
	if sample == nil {
		t.Fatal("README shows no turn.complete event")
	}
	var want map[string]any
	if err := json.Unmarshal([]byte(sample[1]), &want); err != nil {
		t.Fatalf("the README's turn.complete event: %v", err)
	}

	p := startKuradEnv(t, t.TempDir(), []string{"KURA_RECORD_TYPES=agent.dream"})
	call := func(method, path, body string, wantCode int) map[string]any {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, p.Base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != wantCode {
			t.Fatalf("%s %s: got %d %s, want %d", method, path, resp.StatusCode, b, wantCode)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
		return m
	}

	call("POST", "/v1/records", readme[refused[2]:refused[3]], http.StatusCreated)
	types, _ := call("GET", "/v1/info", "", http.StatusOK)["record_types"].([]any)
	if !slices.Contains(types, any("agent.dream")) || !slices.Contains(types, any("task.instruction")) {
		t.Errorf("/v1/info record_types %v, want the built-in types and agent.dream", types)
	}

	s := call("POST", "/v1/sessions", `{"project":"hashi","name":"morning"}`, http.StatusCreated)
	tr := call("POST", "/v1/sessions/"+s["id"].(string)+"/turns",
		`{"instruction":{"content":"Summarise the morning session","author_id":"user:oles"}}`, http.StatusCreated)
	tid := tr["id"].(string)
	call("POST", "/v1/turns/"+tid+"/claim", `{"worker":"agent:bmo","lease_seconds":60}`, http.StatusOK)
	call("POST", "/v1/turns/"+tid+"/close", `{"epoch":1,"status":"complete"}`, http.StatusOK)
	evs, _ := call("GET", "/v1/events?after=0&type=turn.complete", "", http.StatusOK)["events"].([]any)
	if len(evs) != 1 {
		t.Fatalf("got turn.complete events %v, want one", evs)
	}
	got := evs[0].(map[string]any)
	if !slices.Equal(slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want))) || got["status"] != want["status"] {
		t.Errorf("a turn.complete event is %v; the README shows %v", got, want)
	}
}
