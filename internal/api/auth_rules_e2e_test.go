package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/daemon"
)

// TestAuth_AuthorBindingAndVisibility: forged authors, sys: authors, head
// moves by someone else, and what listings show a project-limited caller.
func TestAuth_AuthorBindingAndVisibility(t *testing.T) {
	e := startAuthKurad(t, nil)
	fx := e.seed()
	refused := []struct {
		name, tok, method, path, body string
		code                          int
	}{
		{"forged record author", tWA, "POST", "/v1/records", `{"type":"agent.thought","content":1,"author_id":"agent:b"}`, 403},
		{"sys author, even for admin", tRoot, "POST", "/v1/records", `{"type":"agent.thought","content":1,"author_id":"sys:kurad"}`, 403},
		{"forged batch author", tWA, "POST", "/v1/records/batch", `{"records":[{"type":"agent.thought","content":1,"author_id":"agent:a"},{"type":"agent.thought","content":2,"author_id":"user:root"}]}`, 403},
		{"forged feedback author", tWA, "POST", "/v1/scopes/alpha/memory/feedback", `{"ref":"fact:n1","outcome":"positive","author_id":"agent:a2"}`, 403},
		{"forged node owner", tWA, "POST", "/v1/scopes/alpha/memory/nodes", `{"kind":"fact","id":"f","title":"t","summary":"s","owner":"agent:a2"}`, 403},
		{"forged owner in a batch", tWA, "POST", "/v1/scopes/alpha/memory/nodes/batch", `{"nodes":[{"kind":"fact","id":"g","title":"t","summary":"s","owner":"sys:x"}]}`, 403},
		{"forged instruction author", tWA, "POST", "/v1/sessions/" + fx.in["sid"] + "/turns", `{"instruction":{"type":"task.instruction","content":1,"author_id":"agent:b"}}`, 403},
		{"forged append author", tWA, "POST", "/v1/turns/" + fx.in["tid"] + "/records", `{"records":[{"type":"agent.thought","content":1,"author_id":"user:root"}]}`, 403},
		{"another's record into a turn", tWA, "POST", "/v1/turns/" + fx.in["tid"] + "/records", `{"records":[{"record_id":"` + fx.out["rid"] + `"}]}`, 400},
		{"another's record as derived_from", tWA, "POST", "/v1/scopes/alpha/memory/nodes", `{"kind":"fact","id":"h","title":"t","summary":"s","derived_from":["record:` + fx.out["rid"] + `"]}`, 400},
		{"head moved by another writer", tWA2, "POST", "/v1/sessions/" + fx.in["sid"] + "/head", `{"ledger_id":"` + fx.in["lid"] + `","expected_head":null}`, 403},
		{"head moved to another's ledger", tWA, "POST", "/v1/sessions/" + fx.in["sid"] + "/head", `{"ledger_id":"` + fx.out["lid"] + `","expected_head":null}`, 400},
		{"fork from another's ledger", tWA, "POST", "/v1/sessions", `{"project":"alpha","name":"fork","from_ledger_id":"` + fx.out["lid"] + `"}`, 400},
		{"a reader writing", tRA, "POST", "/v1/records", `{"type":"agent.thought","content":1,"author_id":"agent:r"}`, 403},
	}
	for _, c := range refused {
		before := e.state()
		code, body := e.do(c.tok, c.method, c.path, c.body)
		if code != c.code {
			t.Errorf("%s: %d %s, want %d", c.name, code, body, c.code)
		}
		if after := e.state(); after != before {
			t.Errorf("%s changed the database: %s -> %s", c.name, before, after)
		}
	}
	// The two 400s read exactly as for records and ledgers that do not exist.
	_, a := e.do(tWA, "POST", "/v1/turns/"+fx.in["tid"]+"/records", `{"records":[{"record_id":"`+fx.out["rid"]+`"}]}`)
	_, b := e.do(tWA, "POST", "/v1/turns/"+fx.in["tid"]+"/records", `{"records":[{"record_id":"`+fx.none["rid"]+`"}]}`)
	if strings.ReplaceAll(string(a), fx.out["rid"], fx.none["rid"]) != string(b) {
		t.Errorf("another's record: %s\nmissing record: %s", a, b)
	}

	// An admin may write under any non-sys identity; the creator moves its
	// session's head.
	e.must(tRoot, "POST", "/v1/records", `{"type":"agent.thought","content":"root","author_id":"agent:a2"}`)
	e.must(tWA, "POST", "/v1/turns/"+fx.in["tid"]+"/close", `{"status":"complete"}`)
	e.must(tWA, "POST", "/v1/sessions/"+fx.in["sid"]+"/head", `{"ledger_id":"`+fx.in["lid"]+`","expected_head":"`+e.must(tWA, "GET", "/v1/sessions/"+fx.in["sid"], "")["head_ledger_id"].(string)+`"}`)
	if by := e.must(tRA, "GET", "/v1/sessions/"+fx.in["sid"], "")["created_by"]; by != "agent:a" {
		t.Errorf("created_by %v", by)
	}

	// A record a writes alone stays readable by a; root's is not.
	own := e.must(tWA, "POST", "/v1/records", `{"type":"agent.thought","content":"mine","author_id":"agent:a"}`)["id"].(string)
	e.must(tWA, "GET", "/v1/records/"+own, "")
	rootRec := e.must(tRoot, "POST", "/v1/records", `{"type":"agent.thought","content":"root's","author_id":"user:root"}`)["id"].(string)
	if code, _ := e.do(tWA, "GET", "/v1/records/"+rootRec, ""); code != 404 {
		t.Errorf("root's record read by a: %d", code)
	}
	// Listings carry only alpha.
	var sess struct{ Sessions []struct{ Project string } }
	_, b = e.do(tRA, "GET", "/v1/sessions", "")
	json.Unmarshal(b, &sess)
	if len(sess.Sessions) != 1 || sess.Sessions[0].Project != "alpha" {
		t.Errorf("sessions for a: %s", b)
	}
	var turns struct {
		Turns []struct {
			SessionID string `json:"session_id"`
		}
	}
	_, b = e.do(tRA, "GET", "/v1/turns", "")
	json.Unmarshal(b, &turns)
	if len(turns.Turns) != 1 || turns.Turns[0].SessionID != fx.in["sid"] {
		t.Errorf("turns for a: %s", b)
	}
	var recs struct {
		Records []struct {
			AuthorID string `json:"author_id"`
		}
	}
	_, b = e.do(tRA, "GET", "/v1/records", "")
	json.Unmarshal(b, &recs)
	for _, r := range recs.Records {
		if r.AuthorID != "agent:r" {
			t.Errorf("records for r hold %s", r.AuthorID)
		}
	}
	var ev struct {
		Events []struct {
			Project, Type string
		}
		NextAfter int64 `json:"next_after"`
		LastSeq   int64 `json:"last_seq"`
	}
	_, b = e.do(tRA, "GET", "/v1/events?limit=1000", "")
	json.Unmarshal(b, &ev)
	if len(ev.Events) == 0 || ev.NextAfter != ev.LastSeq {
		t.Errorf("events for a: %s", b)
	}
	for _, x := range ev.Events {
		if x.Project != "alpha" {
			t.Errorf("a sees a %s event of %s", x.Type, x.Project)
		}
	}
	_, all := e.do(tRoot, "GET", "/v1/events?limit=1000", "")
	if !strings.Contains(string(all), `"project":"beta"`) {
		t.Errorf("root misses beta events: %s", all)
	}
}

// TestAuth_RateLimit: past its burst a token identity gets 429 with
// Retry-After, and another identity is not held back by it.
func TestAuth_RateLimit(t *testing.T) {
	e := startAuthKurad(t, func(c *daemon.Config) { c.RateLimit, c.RateBurst = 0.5, 3 })
	codes := []int{}
	var last []byte
	for range 4 {
		code, b := e.do(tWA, "GET", "/v1/info", "")
		codes = append(codes, code)
		last = b
	}
	if codes[0] != 200 || codes[2] != 200 || codes[3] != 429 || !strings.Contains(string(last), `"rate_limited"`) {
		t.Fatalf("codes %v, last %s", codes, last)
	}
	if code, _ := e.do(tWB, "GET", "/v1/info", ""); code != 200 {
		t.Fatalf("another identity: %d", code)
	}
}
