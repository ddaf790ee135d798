package ui_test

import (
	"net/http"
	"testing"

	"github.com/kura-memory/kura/internal/kuradtest"
)

// TestConsole_RecordShowsHash (acceptance): the record view shows the
// record's hash as text, with its type, author, content_hash, seal,
// metadata and content, and the hashes recomputed in the browser match.
func TestConsole_RecordShowsHash(t *testing.T) {
	t.Parallel()
	base := kuradtest.Start(t)
	r := postJSON(t, base, "/v1/records", `{"type":"agent.thought","content":{"text":"REST feels clean","n":1.5},
		"author_id":"agent:bmo","metadata":{"project_id":"hashi","trace_id":"t-1"}}`, http.StatusCreated)
	p := openConsole(t, base, "/records/"+r["id"].(string))
	p.waitFor(`document.querySelector("[data-kura-record-check]") !== null`)
	page := p.text("main")
	for _, want := range []string{r["hash"].(string), r["content_hash"].(string), r["seal"].(string), "agent.thought", "agent:bmo", "trace_id", "t-1", "REST feels clean"} {
		if !contains(page, want) {
			t.Errorf("record view lacks %q", want)
		}
	}
	if got := p.text(`[data-field="hash"]`); got != r["hash"] {
		t.Fatalf("hash shown %q, want %q", got, r["hash"])
	}
	if got := eval[string](p, `document.querySelector("[data-kura-record-check]").dataset.kuraRecordCheck`); got != "ok" {
		t.Fatalf("browser recomputation: %q (%s)", got, p.text("main"))
	}
}

// TestConsole_RecordRedacted: a redacted record says so, shows no
// content, keeps its hashes, and still checks (content_hash as stored).
func TestConsole_RecordRedacted(t *testing.T) {
	t.Parallel()
	base := kuradtest.Start(t)
	r := postJSON(t, base, "/v1/records", `{"type":"memory.fact","content":{"key":"sk-leaked-secret"},"author_id":"agent:bmo"}`, http.StatusCreated)
	postJSON(t, base, "/v1/records/"+r["id"].(string)+"/redact", `{"reason":"leaked an API key"}`, http.StatusOK)
	p := openConsole(t, base, "/records/"+r["id"].(string))
	p.waitFor(`document.querySelector("[data-kura-record-check]") !== null`)
	page := p.text("main")
	if !contains(page, "redacted") || contains(page, "sk-leaked-secret") || !contains(page, r["hash"].(string)) {
		t.Fatalf("redacted record view: %q", page)
	}
	if got := eval[string](p, `document.querySelector("[data-kura-record-check]").dataset.kuraRecordCheck`); got != "ok" {
		t.Fatalf("browser recomputation of a redacted record: %q", got)
	}
}
