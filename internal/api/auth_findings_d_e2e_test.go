package api_test

import (
	"strings"
	"testing"
)

// tWD is a writer of projects beta and default (startAuthKurad's file):
// it holds the default project, though not as its first.
const tWD = "tok-writer-default" // agent:d writer alpha beta,default

// TestAuthD_RecordWithoutProjectRingsInTokensProject: a record written
// outside a turn without metadata.project_id by a token that does not hold
// the default project rings in the token's first project (feed and NATS
// subject), never in the default project's; its metadata stays as sent (it
// is sealed). Tokens with projects * or holding the default project ring
// in the default project as before, and turn records in their session's.
func TestAuthD_RecordWithoutProjectRingsInTokensProject(t *testing.T) {
	t.Parallel()
	e := startAuthKurad(t, nil)
	msgs := subscribe(t, e.d)
	rec := func(author, content, metadata string) string {
		return `{"type":"agent.thought","content":"` + content + `","author_id":"` + author + `"` + metadata + `}`
	}
	one := e.must(tWA, "POST", "/v1/records", rec("agent:a", "no project", ""))
	batch := e.must(tWA, "POST", "/v1/records/batch", `{"records":[`+rec("agent:a", "batch 1", "")+`,`+rec("agent:a", "batch 2", `,"metadata":{"k":"v"}`)+`]}`)
	ids := []string{one["id"].(string)}
	for _, r := range batch["records"].([]any) {
		ids = append(ids, r.(map[string]any)["id"].(string))
	}
	for _, id := range ids {
		if ev := e.eventFor("record.written", "record_id", id); ev["project"] != "alpha" {
			t.Errorf("record %s of a writer of alpha without project_id: event project %v, want alpha", id, ev["project"])
		}
		if s := msgs.subject("record_id", id); s != "oclaw.v1.alpha.evt.record.written" {
			t.Errorf("record %s of a writer of alpha without project_id: subject %s, want oclaw.v1.alpha.evt.record.written", id, s)
		}
	}
	if md, _ := one["metadata"].(map[string]any); len(md) != 0 {
		t.Errorf("the record's metadata: %v, want it as sent (none)", md)
	}
	for _, ev := range e.feedEvents(tRoot, "project=default&type=record.written") {
		t.Errorf("the default project's feed holds a record event of a writer of alpha: %v", ev)
	}
	// The writer's own project's readers see it.
	seen := map[any]bool{}
	for _, ev := range e.feedEvents(tRA, "type=record.written") {
		seen[ev["record_id"]] = true
	}
	for _, id := range ids {
		if !seen[id] {
			t.Errorf("alpha's reader does not see record %s's event", id)
		}
	}

	// Projects * and a token holding the default project: the default
	// project, as before.
	for _, c := range []struct{ tok, author string }{{tRoot, "user:root"}, {tWD, "agent:d"}} {
		id := e.must(c.tok, "POST", "/v1/records", rec(c.author, "by "+c.author, ""))["id"].(string)
		if ev := e.eventFor("record.written", "record_id", id); ev["project"] != "default" {
			t.Errorf("%s without project_id: event project %v, want default", c.author, ev["project"])
		}
		if s := msgs.subject("record_id", id); s != "oclaw.v1.default.evt.record.written" {
			t.Errorf("%s without project_id: subject %s", c.author, s)
		}
	}

	// Inside a turn: the session's project, with or without project_id.
	sid := e.must(tWA, "POST", "/v1/sessions", `{"project":"alpha","name":"np"}`)["id"].(string)
	tid := e.must(tWA, "POST", "/v1/sessions/"+sid+"/turns", `{"instruction":{"type":"task.instruction","content":"go","author_id":"agent:a"}}`)["id"].(string)
	out := e.must(tWA, "POST", "/v1/turns/"+tid+"/records", `{"records":[`+rec("agent:a", "in the turn", "")+`]}`)
	inTurn := out["records"].([]any)[0].(map[string]any)["id"].(string)
	if s := msgs.subject("record_id", inTurn); !strings.HasPrefix(s, "oclaw.v1.alpha.") {
		t.Errorf("turn record: subject %s, want the session's project alpha", s)
	}
}
