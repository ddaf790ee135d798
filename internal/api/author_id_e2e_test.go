package api_test

import (
	"strings"
	"testing"
)

// TestAPI_MissingAuthorIDSaysRequired: every request that writes a record
// (or feedback) without author_id is told the field is required and what an
// author id looks like, with the field named, and nothing is written.
func TestAPI_MissingAuthorIDSaysRequired(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	st, s, raw := c.post("/v1/sessions", `{"project":"hashi","name":"authors"}`)
	if st != 201 {
		t.Fatalf("create session: %d %s", st, raw)
	}
	sid := s["id"].(string)
	st, tr, raw := c.post("/v1/sessions/"+sid+"/turns", `{"instruction":{"type":"task.instruction","content":"x","author_id":"user:oles"}}`)
	if st != 201 {
		t.Fatalf("open turn: %d %s", st, raw)
	}
	tid := tr["id"].(string)
	if st, _, raw := c.post("/v1/turns/"+tid+"/claim", `{"worker":"agent:bmo","lease_seconds":60}`); st != 200 {
		t.Fatalf("claim: %d %s", st, raw)
	}
	// A second session, so that opening a turn on it is not refused for the
	// turn already open on the first.
	st, s2, raw := c.post("/v1/sessions", `{"project":"hashi","name":"authors-2"}`)
	if st != 201 {
		t.Fatalf("create session: %d %s", st, raw)
	}
	sid2 := s2["id"].(string)

	const record = `{"type":"agent.thought","content":1}`
	cases := []struct {
		name, path, body, field, who string
	}{
		{"Record", "/v1/records", record, "author_id", "who wrote the record"},
		{"RecordEmpty", "/v1/records", `{"type":"agent.thought","content":1,"author_id":""}`, "author_id", "who wrote the record"},
		{"BatchItem", "/v1/records/batch", `{"records":[{"type":"agent.thought","content":1,"author_id":"agent:bmo"},` + record + `]}`, "records[1].author_id", "who wrote the record"},
		{"TurnInstruction", "/v1/sessions/" + sid2 + "/turns", `{"instruction":{"type":"task.instruction","content":"x"}}`, "instruction.author_id", "who wrote the record"},
		{"TurnContext", "/v1/sessions/" + sid2 + "/turns", `{"instruction":{"type":"task.instruction","content":"x","author_id":"user:oles"},"context":[` + record + `]}`, "context[0].author_id", "who wrote the record"},
		{"TurnAppend", "/v1/turns/" + tid + "/records", `{"epoch":1,"records":[` + record + `]}`, "records[0].author_id", "who wrote the record"},
		{"Feedback", "/v1/scopes/hashi/memory/feedback", `{"ref":"fact:n1","outcome":"positive"}`, "author_id", "who reports the outcome"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := c.state()
			st, m, raw := c.post(tc.path, tc.body)
			if st != 400 {
				t.Fatalf("got %d %s, want 400", st, raw)
			}
			e, _ := m["error"].(map[string]any)
			d, _ := e["details"].(map[string]any)
			if d["field"] != tc.field {
				t.Errorf("got details.field %v, want %s (%s)", d["field"], tc.field, raw)
			}
			want := "author_id is required: " + tc.who + ", as kind:name with kind user, agent, tool or sys (e.g. agent:bmo)"
			if msg, _ := e["message"].(string); !strings.HasPrefix(msg, want) {
				t.Errorf("got message %q, want %q", msg, want)
			}
			if after := c.state(); after != before {
				t.Errorf("state changed: %s -> %s", before, after)
			}
		})
	}
}

// TestAPI_UnknownTypeSaysConfigurable: the 400 for a type outside the
// vocabulary lists the accepted types and names the setting that adds more.
func TestAPI_UnknownTypeSaysConfigurable(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	st, m, raw := c.post("/v1/records", `{"type":"agent.dream","content":1,"author_id":"agent:bmo"}`)
	if st != 400 {
		t.Fatalf("got %d %s, want 400", st, raw)
	}
	e, _ := m["error"].(map[string]any)
	msg, _ := e["message"].(string)
	for _, want := range []string{`unknown record type "agent.dream"`, "details.allowed", "KURA_RECORD_TYPES", "--record-types"} {
		if !strings.Contains(msg, want) {
			t.Errorf("got message %q, want it to contain %q", msg, want)
		}
	}
	d, _ := e["details"].(map[string]any)
	if allowed, _ := d["allowed"].([]any); len(allowed) == 0 {
		t.Errorf("got details %v, want the allowed types", d)
	}
}
