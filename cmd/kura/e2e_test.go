package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/kuradtest"
	_ "modernc.org/sqlite" // the tamper test edits the database file directly
)

// These tests run the CLI in-process against a real kurad started on port 0
// with a temporary data directory.

// putJSON runs a put with --json and returns the record it printed.
func putJSON(t *testing.T, url string, stdin string, args ...string) client.Record {
	t.Helper()
	out, errOut, code := runKura(t, url, strings.NewReader(stdin), append([]string{"put"}, append(args, "--json")...)...)
	if code != exitOK {
		t.Fatalf("kura put %q: exit %d, stderr %q", args, code, errOut)
	}
	var r client.Record
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("kura put --json printed %q: %v", out, err)
	}
	// --json indents, content included; the stored content is compact.
	var buf bytes.Buffer
	if err := json.Compact(&buf, r.Content); err != nil {
		t.Fatal(err)
	}
	r.Content = buf.Bytes()
	return r
}

func TestE2E_Put(t *testing.T) {
	t.Parallel()
	url := kuradtest.Start(t)

	tests := []struct {
		name        string
		stdin       string
		args        []string
		wantType    string
		wantContent string
		wantMeta    map[string]string
	}{
		{"FlagsJSON", "", []string{"--type", "agent.thought", "--author", "agent:bmo", "--content", `{"text":"hi", "n": 1.0}`}, "agent.thought", `{"n":1,"text":"hi"}`, nil},
		{"FlagsText", "", []string{"--content", "hello world", "--type=agent.thought", "--author=agent:bmo"}, "agent.thought", `"hello world"`, nil},
		{"Meta", "", []string{"--type", "memory.fact", "--author", "agent:bmo", "--content", "1", "--meta", "project_id=hashi", "--meta", "trace_id=t-1"}, "memory.fact", `1`, map[string]string{"project_id": "hashi", "trace_id": "t-1"}},
		{"StdinObject", `{"type":"task.instruction","content":"Summarise","author_id":"user:oles","metadata":{"k":"v"}}`, []string{"-"}, "task.instruction", `"Summarise"`, map[string]string{"k": "v"}},
		{"StdinObjectFlagsOverride", `{"type":"task.instruction","content":"x","author_id":"user:oles"}`, []string{"--stdin", "--type", "sys.context", "--meta", "a=b"}, "sys.context", `"x"`, map[string]string{"a": "b"}},
		{"StdinContentText", "plain text\n", []string{"-", "--type", "sys.context", "--author", "sys:test"}, "sys.context", `"plain text"`, nil},
		{"StdinContentJSON", `{"tool_name":"github","arguments":{},"status":"pending"}`, []string{"--stdin", "--type", "tool.call", "--author", "tool:gh"}, "tool.call", `{"arguments":{},"status":"pending","tool_name":"github"}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := putJSON(t, url, tt.stdin, tt.args...)
			if r.Type != tt.wantType || string(r.Content) != tt.wantContent {
				t.Errorf("got %s %s, want %s %s", r.Type, r.Content, tt.wantType, tt.wantContent)
			}
			for k, v := range tt.wantMeta {
				if r.Metadata[k] != v {
					t.Errorf("got metadata %v, want %s=%s", r.Metadata, k, v)
				}
			}
			if err := client.VerifyRecord(&r); err != nil {
				t.Error(err)
			}
		})
	}

	t.Run("HumanAndDeduplicated", func(t *testing.T) {
		args := []string{"put", "--type", "agent.plan", "--author", "agent:bmo", "--content", `{"step":1}`}
		out, errOut, code := runKura(t, url, nil, args...)
		if code != exitOK || !strings.HasPrefix(out, "created record ") {
			t.Fatalf("got exit %d, stdout %q, stderr %q, want a created record", code, out, errOut)
		}
		id := strings.TrimSpace(strings.TrimPrefix(out, "created record "))
		out, _, code = runKura(t, url, nil, args...)
		if code != exitOK || out != "existing record "+id+" (deduplicated)\n" {
			t.Errorf("got exit %d, stdout %q, want the existing record %s", code, out, id)
		}
	})

	t.Run("Batch", func(t *testing.T) {
		in := `[{"type":"memory.fact","content":1,"author_id":"agent:b"},{"type":"memory.fact","content":2,"author_id":"agent:b"}]`
		out, errOut, code := runKura(t, url, strings.NewReader(in), "--json", "put", "-")
		if code != exitOK {
			t.Fatalf("got exit %d, stderr %q", code, errOut)
		}
		var page struct{ Records []client.Record }
		if err := json.Unmarshal([]byte(out), &page); err != nil {
			t.Fatal(err)
		}
		if len(page.Records) != 2 || strings.TrimSpace(string(page.Records[0].Content)) != "1" || strings.TrimSpace(string(page.Records[1].Content)) != "2" {
			t.Errorf("got %s, want records 1 and 2 in order", out)
		}
	})

	t.Run("ServerError", func(t *testing.T) {
		_, errOut, code := runKura(t, url, nil, "put", "--type", "no.such", "--author", "agent:bmo", "--content", "1")
		if code != exitFail || !strings.HasPrefix(errOut, "kura: invalid_argument: ") {
			t.Errorf("got exit %d, stderr %q, want 1 and the server's invalid_argument", code, errOut)
		}
	})

	t.Run("StdinUnknownField", func(t *testing.T) {
		_, errOut, code := runKura(t, url, strings.NewReader(`{"type":"sys.context","content":1,"author":"sys:x"}`), "put", "-")
		if code != exitUsage || !strings.Contains(errOut, `unknown field "author"`) {
			t.Errorf("got exit %d, stderr %q, want a usage error naming the field", code, errOut)
		}
	})
}

func TestE2E_Show(t *testing.T) {
	t.Parallel()
	url := kuradtest.Start(t)
	r := putJSON(t, url, "", "--type", "agent.thought", "--author", "agent:bmo", "--content", `{"text":"REST feels clean"}`, "--meta", "project_id=hashi")

	t.Run("Human", func(t *testing.T) {
		out, errOut, code := runKura(t, url, nil, "show", r.ID)
		if code != exitOK {
			t.Fatalf("got exit %d, stderr %q", code, errOut)
		}
		for _, want := range []string{r.ID, r.Hash, r.Seal, "agent:bmo", "meta project_id", `"text": "REST feels clean"`} {
			if !strings.Contains(out, want) {
				t.Errorf("got %q, want it to contain %q", out, want)
			}
		}
	})

	for name, args := range map[string][]string{
		"JSONAfter":  {"show", r.ID, "--json"},
		"JSONBefore": {"--json", "show", r.ID},
		"ByHash":     {"show", "--json", r.Hash},
		"Ref":        {"show", "record:" + r.ID, "--json"},
	} {
		t.Run(name, func(t *testing.T) {
			out, errOut, code := runKura(t, url, nil, args...)
			if code != exitOK {
				t.Fatalf("got exit %d, stderr %q", code, errOut)
			}
			var got client.Record
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("printed %q: %v", out, err)
			}
			if got.ID != r.ID || got.Seal != r.Seal {
				t.Errorf("got %+v, want %+v", got, r)
			}
		})
	}

	t.Run("NotFound", func(t *testing.T) {
		_, errOut, code := runKura(t, url, nil, "show", "0193a000-0000-7000-8000-000000000000")
		if code != exitFail || !strings.HasPrefix(errOut, "kura: not_found: ") {
			t.Errorf("got exit %d, stderr %q, want 1 and not_found", code, errOut)
		}
	})
}

func TestE2E_Ledger(t *testing.T) {
	t.Parallel()
	d := kuradtest.StartMain(t, kuradtest.Options{})
	url := d.BaseURL()
	c := client.New(url)
	ctx := t.Context()
	a := putJSON(t, url, "", "--type", "task.instruction", "--author", "user:oles", "--content", "Summarise")
	b := putJSON(t, url, "", "--type", "agent.thought", "--author", "agent:bmo", "--content", `{"text":"REST feels clean"}`)
	e := putJSON(t, url, "", "--type", "task.deliverable", "--author", "agent:bmo", "--content", `{"summary":"done"}`)
	base, err := c.CreateLedger(ctx, client.LedgerInput{Label: "ctx", RecordIDs: []string{a.ID, b.ID}})
	if err != nil {
		t.Fatal(err)
	}
	out1, err := c.CreateLedger(ctx, client.LedgerInput{Label: "out", ParentIDs: []string{base.ID}, RecordIDs: []string{b.ID, e.ID}})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("Show", func(t *testing.T) {
		out, errOut, code := runKura(t, url, nil, "ledger", out1.ID)
		if code != exitOK {
			t.Fatalf("got exit %d, stderr %q", code, errOut)
		}
		for _, want := range []string{out1.Hash, out1.RootHash, base.ID, "  0  " + b.ID, "  1  " + e.ID} {
			if !strings.Contains(out, want) {
				t.Errorf("got %q, want it to contain %q", out, want)
			}
		}
	})

	t.Run("Records", func(t *testing.T) {
		out, errOut, code := runKura(t, url, nil, "ledger", "--records", "ledger:"+out1.ID)
		if code != exitOK {
			t.Fatalf("got exit %d, stderr %q", code, errOut)
		}
		for _, want := range []string{"agent.thought", `{"text":"REST feels clean"}`, "task.deliverable", `{"summary":"done"}`} {
			if !strings.Contains(out, want) {
				t.Errorf("got %q, want it to contain %q", out, want)
			}
		}
		out, _, code = runKura(t, url, nil, "ledger", out1.ID, "--records", "--json")
		var got struct {
			Ledger  client.Ledger
			Records []client.Record
		}
		if err := json.Unmarshal([]byte(out), &got); code != exitOK || err != nil {
			t.Fatalf("got exit %d, %q: %v", code, out, err)
		}
		if got.Ledger.Hash != out1.Hash || len(got.Records) != 2 || got.Records[1].ID != e.ID {
			t.Errorf("got %+v, want the ledger and its two records", got)
		}
	})

	t.Run("VerifyOK", func(t *testing.T) {
		for _, args := range [][]string{{"verify", out1.ID}, {"verify", out1.ID, "--local"}} {
			out, errOut, code := runKura(t, url, nil, args...)
			if code != exitOK || !strings.HasPrefix(out, "OK ledger "+out1.ID) {
				t.Errorf("%q: got exit %d, stdout %q, stderr %q, want OK", args, code, out, errOut)
			}
		}
		for _, args := range [][]string{{"verify", out1.ID, "--json"}, {"--json", "verify", out1.ID}, {"--json", "verify", "--local", out1.ID}} {
			out, errOut, code := runKura(t, url, nil, args...)
			var v client.Verification
			if err := json.Unmarshal([]byte(out), &v); code != exitOK || err != nil || !v.OK || v.RecordsChecked != 2 {
				t.Errorf("%q: got exit %d, stdout %q, stderr %q, want ok JSON", args, code, out, errOut)
			}
		}
	})

	t.Run("Diff", func(t *testing.T) {
		out, errOut, code := runKura(t, url, nil, "diff", base.ID, out1.ID)
		if code != exitOK {
			t.Fatalf("got exit %d, stderr %q", code, errOut)
		}
		if !strings.Contains(out, "+ "+e.ID) || !strings.Contains(out, "- "+a.ID) || !strings.Contains(out, "1 in common") {
			t.Errorf("got %q, want +%s -%s and 1 in common", out, e.ID, a.ID)
		}
		out, _, code = runKura(t, url, nil, "diff", "--json", base.ID, out1.ID)
		var df client.Diff
		if err := json.Unmarshal([]byte(out), &df); code != exitOK || err != nil || df.Common != 1 {
			t.Errorf("got exit %d, %q, want the diff as JSON", code, out)
		}
	})

	t.Run("Info", func(t *testing.T) {
		out, errOut, code := runKura(t, url, nil, "info")
		if code != exitOK || !strings.Contains(out, "schema version") || !strings.Contains(out, "ed25519:") {
			t.Errorf("got exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		out, _, code = runKura(t, url, nil, "info", "--json")
		var info client.Info
		if err := json.Unmarshal([]byte(out), &info); code != exitOK || err != nil || info.Version == "" {
			t.Errorf("got exit %d, %q, want info as JSON", code, out)
		}
	})

	// Last: it breaks the database on purpose.
	t.Run("VerifyTampered", func(t *testing.T) {
		db := d.RawDB(t)
		if _, err := db.Exec(`UPDATE records SET content = '{"summary":"not done"}' WHERE id = ?`, e.ID); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"verify", out1.ID}, {"verify", "--local", out1.ID}} {
			out, errOut, code := runKura(t, url, nil, args...)
			if code != exitFail || !strings.HasPrefix(out, "FAILED ledger "+out1.ID) || !strings.Contains(out, "record "+e.ID) {
				t.Errorf("%q: got exit %d, stdout %q, stderr %q, want FAILED naming record %s", args, code, out, errOut, e.ID)
			}
		}
		out, _, code := runKura(t, url, nil, "verify", out1.ID, "--json")
		var v client.Verification
		if err := json.Unmarshal([]byte(out), &v); code != exitFail || err != nil || v.OK || len(v.Mismatches) == 0 {
			t.Errorf("got exit %d, %q, want a failed verification as JSON", code, out)
		}
		// The base ledger does not hold the changed record.
		if _, _, code := runKura(t, url, nil, "verify", base.ID); code != exitOK {
			t.Errorf("untouched ledger: got exit %d, want 0", code)
		}
	})
}

func TestE2E_Health(t *testing.T) {
	t.Parallel()
	url := kuradtest.Start(t)
	for _, args := range [][]string{{"health"}, {"health", "--ready"}} {
		if _, errOut, code := runKura(t, url, strings.NewReader(""), args...); code != exitOK {
			t.Errorf("kura %v: exit %d, stderr %q", args, code, errOut)
		}
	}
	// Nothing listens on port 1: health must fail.
	if _, _, code := runKura(t, "http://127.0.0.1:1", strings.NewReader(""), "health"); code == exitOK {
		t.Errorf("kura health against nothing: exit 0, want failure")
	}
}
