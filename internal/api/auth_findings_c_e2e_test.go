package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/nats-io/nats.go"
)

// hostCall sends one request to base with the given Host header (and
// token, when set): what a browser sends after a DNS rebinding.
func hostCall(t *testing.T, base, host, tok, method, path, body string) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequestWithContext(ctx, method, base+path, rd)
	req.Host = host
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s (Host %s): %v", method, path, host, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func infoState(t *testing.T, base string) string {
	t.Helper()
	code, b := hostCall(t, base, "", "", "GET", "/v1/info", "")
	if code != 200 {
		t.Fatalf("info: %d %s", code, b)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	out, _ := json.Marshal([]any{m["last_event_seq"], m["counts"]})
	return string(out)
}

// TestAuthC_TokenlessRefusesForeignHost: a page on evil.example whose name
// rebinds to 127.0.0.1 sends Host: evil.example. Tokenless, kurad answers
// only loopback names; every route (health checks and /mcp included) refuses
// any other Host with 403 permission_denied and changes nothing.
func TestAuthC_TokenlessRefusesForeignHost(t *testing.T) {
	d := kuradtest.StartMain(t, kuradtest.Options{})
	base := d.BaseURL()
	_, port, _ := net.SplitHostPort(d.HTTPAddr())
	routes := []struct{ method, path, body string }{
		{"GET", "/healthz", ""},
		{"GET", "/readyz", ""},
		{"GET", "/v1/info", ""},
		{"GET", "/v1/events?limit=1", ""},
		{"GET", "/v1/events/stream", ""},
		{"GET", "/v1/no-such-route", ""},
		{"POST", "/v1/records", `{"type":"agent.thought","content":"rebound","author_id":"agent:x"}`},
		{"POST", "/v1/sessions", `{"project":"p","name":"rebound"}`},
		{"POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
	}
	for _, host := range []string{
		"evil.example", "evil.example:" + port, "EVIL.example:" + port,
		"localhost.evil.example:" + port, "127.0.0.1.nip.io:" + port, "localhost.:" + port,
		"0.0.0.0:" + port, "10.0.0.1:" + port, "[fe80::1]:" + port, "127.1:" + port,
	} {
		for _, rt := range routes {
			before := infoState(t, base)
			code, b := hostCall(t, base, host, "", rt.method, rt.path, rt.body)
			if code != 403 || !bytes.Contains(b, []byte(`"code":"permission_denied"`)) {
				t.Errorf("%s %s with Host %s: %d %s, want 403 permission_denied", rt.method, rt.path, host, code, b)
			}
			if after := infoState(t, base); after != before {
				t.Errorf("%s %s with Host %s changed the database: %s -> %s", rt.method, rt.path, host, before, after)
			}
		}
	}

	// A request with no Host at all (HTTP/1.0) names no loopback host either.
	conn, err := net.Dial("tcp", d.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(conn, "GET /v1/info HTTP/1.0\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	conn.Close()
	if resp.StatusCode != 403 || !bytes.Contains(b, []byte(`"permission_denied"`)) {
		t.Errorf("GET /v1/info without a Host: %d %s, want 403", resp.StatusCode, b)
	}

	for _, host := range []string{
		"127.0.0.1:" + port, "127.0.0.1", "localhost:" + port, "localhost", "LocalHost:" + port,
		"[::1]:" + port, "[::1]", "127.4.5.6:" + port,
	} {
		for _, rt := range []struct{ method, path, body string }{
			{"GET", "/healthz", ""},
			{"GET", "/v1/info", ""},
			{"POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
			{"POST", "/v1/records", `{"type":"agent.thought","content":"local ` + host + `","author_id":"agent:x"}`},
		} {
			if code, b := hostCall(t, base, host, "", rt.method, rt.path, rt.body); code >= 300 {
				t.Errorf("%s %s with Host %s: %d %s, want it served", rt.method, rt.path, host, code, b)
			}
		}
	}
}

// TestAuthC_TokensDoNotCheckHost: with tokens the Host is not checked (a
// rebinding page holds no token), so kurad works behind a reverse proxy
// that passes its public name; without a token the answer is still 401.
func TestAuthC_TokensDoNotCheckHost(t *testing.T) {
	e := startAuthKurad(t, nil)
	for _, rt := range []struct{ method, path, body string }{
		{"GET", "/healthz", ""},
		{"GET", "/v1/info", ""},
		{"POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
	} {
		if code, b := hostCall(t, e.base, "kura.example.com", tRA, rt.method, rt.path, rt.body); code != 200 {
			t.Errorf("%s %s with Host kura.example.com and a token: %d %s, want 200", rt.method, rt.path, code, b)
		}
	}
	if code, b := hostCall(t, e.base, "kura.example.com", "", "GET", "/v1/info", ""); code != 401 {
		t.Errorf("GET /v1/info with Host kura.example.com, no token: %d %s, want 401", code, b)
	}
}

// feedEvents returns the events a token sees in the feed.
func (e *authEnv) feedEvents(tok, query string) []map[string]any {
	e.t.Helper()
	var page struct {
		Events []map[string]any `json:"events"`
	}
	code, b := e.do(tok, "GET", "/v1/events?limit=1000&"+query, "")
	if code != 200 {
		e.t.Fatalf("events as %s: %d %s", tok, code, b)
	}
	json.Unmarshal(b, &page)
	return page.Events
}

// eventFor finds the event of typ naming ref=id in the unrestricted feed.
func (e *authEnv) eventFor(typ, ref, id string) map[string]any {
	e.t.Helper()
	for _, ev := range e.feedEvents(tRoot, "type="+typ) {
		if ev[ref] == id {
			return ev
		}
	}
	e.t.Fatalf("no %s event with %s %s", typ, ref, id)
	return nil
}

// subscribe collects the subjects published under oclaw.v1.>.
func subscribe(t *testing.T, d *kuradtest.Daemon) chan *nats.Msg {
	t.Helper()
	nc, err := nats.Connect("nats://" + d.NATSAddr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	ch := make(chan *nats.Msg, 1000)
	if _, err := nc.ChanSubscribe("oclaw.v1.>", ch); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return ch
}

// subjectOf waits for the NATS message of the event with ref=id.
func subjectOf(t *testing.T, ch chan *nats.Msg, ref, id string) string {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case m := <-ch:
			var p map[string]any
			json.Unmarshal(m.Data, &p)
			if p[ref] == id {
				return m.Subject
			}
		case <-timeout:
			t.Fatalf("no NATS message for %s %s", ref, id)
			return ""
		}
	}
}

// TestAuthC_RecordProjectIDBound: metadata.project_id routes a record's
// event (feed and NATS subject) to that project, so a token may name only a
// project it holds. Records written inside a turn take the session's
// project whatever their metadata says.
func TestAuthC_RecordProjectIDBound(t *testing.T) {
	e := startAuthKurad(t, nil)
	msgs := subscribe(t, e.d)
	rec := func(content, pid string) string {
		return `{"type":"agent.thought","content":"` + content + `","author_id":"agent:a","metadata":{"project_id":"` + pid + `"}}`
	}
	for _, c := range []struct{ name, path, body string }{
		{"one", "/v1/records", rec("into beta", "beta")},
		{"batch", "/v1/records/batch", `{"records":[` + rec("fine", "alpha") + `,` + rec("into beta 2", "beta") + `]}`},
		{"unheld project", "/v1/records", rec("into nowhere", "nowhere")},
	} {
		before := e.state()
		code, b := e.do(tWA, "POST", c.path, c.body)
		if code != 403 || !bytes.Contains(b, []byte(`"permission_denied"`)) || !bytes.Contains(b, []byte("project_id")) {
			t.Errorf("%s: writer of alpha naming another project_id: %d %s, want 403 naming project_id", c.name, code, b)
		}
		if after := e.state(); after != before {
			t.Errorf("%s: refused but changed the database: %s -> %s", c.name, before, after)
		}
	}
	for _, beta := range e.feedEvents(tRoot, "project=beta&type=record.written") {
		t.Errorf("beta's feed holds a record event: %v", beta)
	}

	own := e.must(tWA, "POST", "/v1/records", rec("into alpha", "alpha"))["id"].(string)
	if ev := e.eventFor("record.written", "record_id", own); ev["project"] != "alpha" {
		t.Errorf("record with project_id alpha: event project %v, want alpha", ev["project"])
	}
	if s := subjectOf(t, msgs, "record_id", own); s != "oclaw.v1.alpha.evt.record.written" {
		t.Errorf("record with project_id alpha: subject %s", s)
	}
	rootRec := e.must(tRoot, "POST", "/v1/records", `{"type":"agent.thought","content":"root","author_id":"user:root","metadata":{"project_id":"beta"}}`)["id"].(string)
	if ev := e.eventFor("record.written", "record_id", rootRec); ev["project"] != "beta" {
		t.Errorf("projects * naming beta: event project %v, want beta", ev["project"])
	}

	// Inside a turn the session's project wins: naming beta there reaches
	// nothing of beta's.
	sid := e.must(tWA, "POST", "/v1/sessions", `{"project":"alpha","name":"pid"}`)["id"].(string)
	tid := e.must(tWA, "POST", "/v1/sessions/"+sid+"/turns", `{"instruction":{"type":"task.instruction","content":"go","author_id":"agent:a","metadata":{"project_id":"beta"}}}`)["id"].(string)
	out := e.must(tWA, "POST", "/v1/turns/"+tid+"/records", `{"records":[`+rec("in the turn", "beta")+`]}`)
	inTurn := out["records"].([]any)[0].(map[string]any)["id"].(string)
	if ev := e.eventFor("record.written", "record_id", inTurn); ev["project"] != "alpha" {
		t.Errorf("turn record naming project_id beta: event project %v, want the session's alpha", ev["project"])
	}
	if s := subjectOf(t, msgs, "record_id", inTurn); s != "oclaw.v1.alpha.evt.record.written" {
		t.Errorf("turn record naming project_id beta: subject %s", s)
	}
	for _, beta := range e.feedEvents(tRoot, "project=beta&type=record.written") {
		if beta["record_id"] != rootRec {
			t.Errorf("beta's feed holds a record event of alpha's writer: %v", beta)
		}
	}
}

// TestAuthC_IdempotencyKeyPerIdentity: an Idempotency-Key belongs to the
// identity that sent it. Another identity reusing it writes afresh (no 409
// telling it the key exists, no replay of someone else's answer), and the
// owner's retry still replays its own answer.
func TestAuthC_IdempotencyKeyPerIdentity(t *testing.T) {
	e := startAuthKurad(t, nil)
	send := func(tok, key, body string) (int, http.Header, []byte) {
		req, _ := http.NewRequest("POST", e.base+"/v1/records", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, b
	}
	bodyA := `{"type":"agent.thought","content":"from a","author_id":"agent:a"}`
	bodyB := `{"type":"agent.thought","content":"from a2","author_id":"agent:a2"}`
	codeA, _, firstA := send(tWA, "shared-key", bodyA)
	if codeA != 201 {
		t.Fatalf("a: %d %s", codeA, firstA)
	}
	before := e.state()
	codeB, hB, gotB := send(tWA2, "shared-key", bodyB)
	if codeB != 201 || hB.Get("Idempotent-Replayed") != "" || !bytes.Contains(gotB, []byte(`"agent:a2"`)) {
		t.Errorf("a2 reusing a's key with its own body: %d replayed=%q %s, want a fresh 201 write", codeB, hB.Get("Idempotent-Replayed"), gotB)
	}
	if e.state() == before {
		t.Errorf("a2's write with a's key wrote nothing")
	}
	// The admin may send a's very body: still its own write, not a's answer.
	codeR, hR, gotR := send(tRoot, "shared-key", bodyA)
	if hR.Get("Idempotent-Replayed") != "" || codeR >= 300 || !bytes.Contains(gotR, []byte(`"deduplicated":true`)) {
		t.Errorf("root reusing a's key and body: %d replayed=%q %s, want its own (deduplicated) answer", codeR, hR.Get("Idempotent-Replayed"), gotR)
	}
	// Each identity's retry replays its own first answer.
	for _, c := range []struct {
		tok, body string
		want      []byte
	}{{tWA, bodyA, firstA}, {tWA2, bodyB, gotB}} {
		code, h, got := send(c.tok, "shared-key", c.body)
		if code != 201 || h.Get("Idempotent-Replayed") != "true" || !bytes.Equal(got, c.want) {
			t.Errorf("retry as %s: %d replayed=%q %s, want the first answer %s", c.tok, code, h.Get("Idempotent-Replayed"), got, c.want)
		}
	}
	// The key still guards its owner: another body under it is 409.
	if code, _, got := send(tWA, "shared-key", `{"type":"agent.thought","content":"other","author_id":"agent:a"}`); code != 409 {
		t.Errorf("a reusing its key with another body: %d %s, want 409", code, got)
	}
}
