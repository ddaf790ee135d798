package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/testwait"
)

// Tokens these tests add to startAuthKurad's file: a writer of project
// alpha that does not hold scope alpha, and a reader of every project
// limited to scope beta.
const (
	tWP = "tok-writer-p" // agent:p writer gamma alpha
	tRS = "tok-reader-s" // agent:s reader beta *
)

// decodeAs decodes b into a T or fails the test.
func decodeAs[T any](t *testing.T, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decode %T: %v: %s", v, err, b)
	}
	return v
}

// refused sends a call that must be 403 permission_denied and change
// nothing.
func (e *authEnv) refused(name, tok, method, path, body string) {
	e.t.Helper()
	before := e.state()
	code, got := e.do(tok, method, path, body)
	if code != http.StatusForbidden || !bytes.Contains(got, []byte(`"permission_denied"`)) {
		e.t.Errorf("%s: %d %s, want 403 permission_denied", name, code, got)
	}
	if after := e.state(); after != before {
		e.t.Errorf("%s was refused but changed the database: %s -> %s", name, before, after)
	}
}

// mcpTool calls an MCP tool over POST /mcp with tok and returns its text
// and whether it is a tool error.
func (e *authEnv) mcpTool(tok, tool string, args map[string]any) (string, bool) {
	e.t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args}})
	req, _ := http.NewRequest("POST", e.base+"/mcp", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("mcp %s: %v", tool, err)
	}
	defer resp.Body.Close()
	var rpc struct {
		Result struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
		Error any `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&rpc); err != nil || rpc.Error != nil || len(rpc.Result.Content) == 0 {
		e.t.Fatalf("mcp %s: %d %v %+v", tool, resp.StatusCode, err, rpc)
	}
	return rpc.Result.Content[0].Text, rpc.Result.IsError
}

type nodeAnswer struct {
	Ref       string  `json:"ref"`
	Summary   string  `json:"summary"`
	Lifecycle string  `json:"lifecycle"`
	Authority string  `json:"authority"`
	Owner     *string `json:"owner"`
	Version   int     `json:"version"`
	UpdatedAt string  `json:"updated_at"`
	WrittenBy *string `json:"written_by"`
}

func (e *authEnv) node(tok, scope, ref, query string) nodeAnswer {
	e.t.Helper()
	_, b := e.do(tok, "GET", "/v1/scopes/"+scope+"/memory/nodes/"+ref+query, "")
	return decodeAs[nodeAnswer](e.t, b)
}

func writtenBy(n nodeAnswer) string {
	if n.WrittenBy == nil {
		return "<none>"
	}
	return *n.WrittenBy
}

// TestAuthA_OwnedNodeRewrite: a writer of the scope who is not a node's
// owner may not re-put, batch re-put, revise or transition it: 403 and
// nothing written. The owner and admins may; a writer's new node is its
// own, and MCP's memory_put follows.
func TestAuthA_OwnedNodeRewrite(t *testing.T) {
	t.Parallel()
	e := startAuthKurad(t, nil)
	mem := "/v1/scopes/alpha/memory/nodes"
	e.must(tWA, "POST", mem, `{"kind":"fact","id":"own","title":"t","summary":"by a","owner":"agent:a","lifecycle":"active","authority":"verified"}`)

	e.refused("re-put of another's node", tWA2, "POST", mem, `{"kind":"fact","id":"own","summary":"by a2"}`)
	e.refused("batch holding another's node", tWA2, "POST", mem+"/batch", `{"nodes":[{"kind":"fact","id":"fresh","summary":"new"},{"kind":"fact","id":"own","summary":"by a2"}]}`)
	e.refused("revise of another's node", tWA2, "POST", mem+"/fact:own/revise", `{"id":"own2","summary":"by a2"}`)
	e.refused("transition of another's node", tWA2, "POST", mem+"/fact:own/transition", `{"lifecycle":"suppressed","reason":"mine now"}`)
	if code, b := e.do(tRoot, "GET", mem+"/fact:fresh", ""); code != 404 {
		t.Errorf("the refused batch wrote its other node: %d %s", code, b)
	}
	if n := e.node(tRoot, "alpha", "fact:own", ""); n.Version != 1 || n.Summary != "by a" || n.Lifecycle != "active" {
		t.Errorf("after the refusals: %+v, want version 1 as a wrote it", n)
	}

	// The owner and an admin write it; the owner stays.
	if n := decodeAs[nodeAnswer](t, mustBytes(e, tWA, "POST", mem, `{"kind":"fact","id":"own","summary":"by a again"}`)); n.Version != 2 {
		t.Errorf("owner's re-put: %+v, want version 2", n)
	}
	if n := decodeAs[nodeAnswer](t, mustBytes(e, tRoot, "POST", mem+"/fact:own/transition", `{"lifecycle":"contested","reason":"review"}`)); n.Version != 3 || n.Owner == nil || *n.Owner != "agent:a" {
		t.Errorf("admin's transition: %+v, want version 3 still owned by agent:a", n)
	}

	// A writer's node written without an owner is its own: it writes it
	// again, another writer may not.
	if n := decodeAs[nodeAnswer](t, mustBytes(e, tWA2, "POST", mem, `{"kind":"fact","id":"free","summary":"by a2"}`)); n.Owner == nil || *n.Owner != "agent:a2" {
		t.Errorf("a writer's new node: %+v, want owned by agent:a2", n)
	}
	e.refused("re-put of another writer's new node", tWA, "POST", mem, `{"kind":"fact","id":"free","summary":"by a"}`)
	e.must(tWA2, "POST", mem+"/fact:free/transition", `{"lifecycle":"active","reason":"checked"}`)

	// MCP's memory_put is the same route: the owner writes, another is refused.
	if text, isErr := e.mcpTool(tWA, "memory_put", map[string]any{"scope": "alpha", "kind": "fact", "id": "own", "summary": "by a through mcp"}); isErr {
		t.Errorf("memory_put by the owner: %s", text)
	}
	before := e.state()
	if text, isErr := e.mcpTool(tWA2, "memory_put", map[string]any{"scope": "alpha", "kind": "fact", "id": "own", "summary": "by a2 through mcp"}); !isErr || !strings.Contains(text, "permission_denied") {
		t.Errorf("memory_put by another writer: %s, want permission_denied", text)
	}
	if after := e.state(); after != before {
		t.Errorf("the refused memory_put changed the database: %s -> %s", before, after)
	}
}

// useNow is the refs and summaries of a scope's use_now bucket, as a
// reader's context preview shows them.
func (e *authEnv) useNow(scope string) map[string]string {
	e.t.Helper()
	b := decodeAs[struct {
		Buckets struct {
			UseNow []struct{ Ref, Summary string } `json:"use_now"`
		}
	}](e.t, mustBytes(e, tRA, "POST", "/v1/scopes/"+scope+"/context/preview", `{}`))
	out := map[string]string{}
	for _, it := range b.Buckets.UseNow {
		out[it.Ref] = it.Summary
	}
	return out
}

// TestAuthA_OwnerlessNodeRewrite: a node without an owner is written
// again only by an admin. A writer of the scope may not re-put, batch
// re-put, revise or transition an admin's ownerless node that is active
// and verified (which would put its words into use_now under that
// authority): 403, nothing written, the admin's text still what use_now
// holds. A writer's own new node is its own (owner = the writer) and keeps
// the authority it asserted; an admin may hand an ownerless node to a
// writer by naming it owner.
func TestAuthA_OwnerlessNodeRewrite(t *testing.T) {
	t.Parallel()
	e := startAuthKurad(t, nil)
	mem := "/v1/scopes/alpha/memory/nodes"
	if n := decodeAs[nodeAnswer](t, mustBytes(e, tRoot, "POST", mem, `{"kind":"fact","id":"nowner","summary":"by admin","lifecycle":"active","authority":"verified"}`)); n.Owner != nil {
		t.Fatalf("admin's node without owner: %+v, want no owner", n)
	}
	if got := e.useNow("alpha"); got["fact:nowner"] != "by admin" {
		t.Fatalf("use_now %v, want fact:nowner by admin", got)
	}

	e.refused("re-put of an ownerless node", tWA2, "POST", mem, `{"kind":"fact","id":"nowner","summary":"by a2"}`)
	e.refused("re-put claiming an ownerless node", tWA2, "POST", mem, `{"kind":"fact","id":"nowner","summary":"by a2","owner":"agent:a2"}`)
	e.refused("batch holding an ownerless node", tWA2, "POST", mem+"/batch", `{"nodes":[{"kind":"fact","id":"fresh","summary":"new"},{"kind":"fact","id":"nowner","summary":"by a2"}]}`)
	e.refused("revise of an ownerless node", tWA2, "POST", mem+"/fact:nowner/revise", `{"id":"nowner2","summary":"by a2"}`)
	e.refused("transition of an ownerless node", tWA2, "POST", mem+"/fact:nowner/transition", `{"lifecycle":"active","authority":"verified","reason":"mine now"}`)
	if text, isErr := e.mcpTool(tWA2, "memory_put", map[string]any{"scope": "alpha", "kind": "fact", "id": "nowner", "summary": "by a2 through mcp"}); !isErr || !strings.Contains(text, "permission_denied") {
		t.Errorf("memory_put of an ownerless node: %s, want permission_denied", text)
	}
	if n := e.node(tRoot, "alpha", "fact:nowner", ""); n.Version != 1 || n.Summary != "by admin" || n.Owner != nil || writtenBy(n) != "user:root" {
		t.Errorf("after the refusals: %+v, want version 1 as the admin wrote it", n)
	}
	if got := e.useNow("alpha"); got["fact:nowner"] != "by admin" || len(got) != 1 {
		t.Errorf("use_now %v, want only fact:nowner by admin", got)
	}

	// A writer's own new node keeps the authority it asserted: it is its
	// owner's word, signed by written_by, as an owned node's always was.
	n := decodeAs[nodeAnswer](t, mustBytes(e, tWA2, "POST", mem, `{"kind":"fact","id":"mine","summary":"by a2","lifecycle":"active","authority":"verified"}`))
	if n.Owner == nil || *n.Owner != "agent:a2" || n.Authority != "verified" || writtenBy(n) != "agent:a2" {
		t.Errorf("a writer's new node: %+v, want owned by agent:a2, verified", n)
	}
	if got := e.useNow("alpha"); got["fact:mine"] != "by a2" {
		t.Errorf("use_now %v, want fact:mine by a2", got)
	}
	// owner "" does not give it away: a non-admin's node keeps an owner.
	if n := decodeAs[nodeAnswer](t, mustBytes(e, tWA2, "POST", mem, `{"kind":"fact","id":"mine","summary":"by a2 again","owner":""}`)); n.Owner == nil || *n.Owner != "agent:a2" {
		t.Errorf("owner cleared by a writer: %+v, want still agent:a2", n)
	}
	e.refused("re-put of another writer's node", tWA, "POST", mem, `{"kind":"fact","id":"mine","summary":"by a"}`)

	// An admin still writes the ownerless node, and may hand it over.
	e.must(tRoot, "POST", mem, `{"kind":"fact","id":"nowner","summary":"by admin again"}`)
	e.must(tRoot, "POST", mem, `{"kind":"fact","id":"nowner","owner":"agent:a2"}`)
	if n := decodeAs[nodeAnswer](t, mustBytes(e, tWA2, "POST", mem, `{"kind":"fact","id":"nowner","summary":"by a2, its owner now"}`)); n.Version != 4 || n.Authority != "verified" {
		t.Errorf("the new owner's re-put: %+v, want version 4", n)
	}
}

func mustBytes(e *authEnv, tok, method, path, body string) []byte {
	e.t.Helper()
	code, b := e.do(tok, method, path, body)
	if code >= 300 {
		e.t.Fatalf("%s %s: %d %s", method, path, code, b)
	}
	return b
}

// TestAuthA_WrittenBy: every node version says who wrote it, in node
// answers, history and as_of reads, through put, transition, revise (and
// its retirement of the old node) and extraction at turn close, where the
// closer writes (kurad itself for a timeout).
func TestAuthA_WrittenBy(t *testing.T) {
	t.Parallel()
	e := startAuthKurad(t, nil)
	mem := "/v1/scopes/alpha/memory/nodes"
	v1 := decodeAs[nodeAnswer](t, mustBytes(e, tWA, "POST", mem, `{"kind":"fact","id":"w","summary":"one"}`))
	v2 := decodeAs[nodeAnswer](t, mustBytes(e, tRoot, "POST", mem, `{"kind":"fact","id":"w","summary":"two","owner":"agent:a2"}`))
	v3 := decodeAs[nodeAnswer](t, mustBytes(e, tWA2, "POST", mem+"/fact:w/transition", `{"lifecycle":"active","reason":"ok"}`))
	for i, c := range []struct {
		n    nodeAnswer
		want string
	}{{v1, "agent:a"}, {v2, "user:root"}, {v3, "agent:a2"}} {
		if got := writtenBy(c.n); got != c.want {
			t.Errorf("answer %d: written_by %s, want %s", i+1, got, c.want)
		}
	}
	if got := writtenBy(e.node(tRA, "alpha", "fact:w", "")); got != "agent:a2" {
		t.Errorf("current version: written_by %s, want agent:a2", got)
	}
	if got := writtenBy(e.node(tRA, "alpha", "fact:w", "?as_of="+v1.UpdatedAt)); got != "agent:a" {
		t.Errorf("as_of the first version: written_by %s, want agent:a", got)
	}
	hist := decodeAs[struct{ Versions []nodeAnswer }](t, mustBytes(e, tRA, "GET", mem+"/fact:w/history", ""))
	var by []string
	for _, v := range hist.Versions {
		by = append(by, writtenBy(v))
	}
	if want := []string{"agent:a", "user:root", "agent:a2"}; !slices.Equal(by, want) {
		t.Errorf("history written_by %v, want %v", by, want)
	}
	list := decodeAs[struct{ Nodes []nodeAnswer }](t, mustBytes(e, tRA, "GET", mem, ""))
	if len(list.Nodes) != 1 || writtenBy(list.Nodes[0]) != "agent:a2" {
		t.Errorf("listing: %+v, want fact:w written by agent:a2", list.Nodes)
	}

	// A revise: the new node and the old one's retirement are the reviser's.
	rev := decodeAs[struct{ Node, Superseded nodeAnswer }](t, mustBytes(e, tWA2, "POST", mem+"/fact:w/revise", `{"id":"w2","summary":"three"}`))
	if writtenBy(rev.Node) != "agent:a2" || writtenBy(rev.Superseded) != "agent:a2" || rev.Superseded.Lifecycle != "retired" {
		t.Errorf("revise: node %+v superseded %+v, want both written by agent:a2", rev.Node, rev.Superseded)
	}

	// Extraction: the record's author owns the node, the closer wrote it.
	sid := e.must(tWA, "POST", "/v1/sessions", `{"project":"alpha","name":"s"}`)["id"].(string)
	tid := e.must(tWA, "POST", "/v1/sessions/"+sid+"/turns", `{"instruction":{"content":"go","author_id":"agent:a"}}`)["id"].(string)
	app := e.must(tWA, "POST", "/v1/turns/"+tid+"/records", `{"records":[{"type":"memory.fact","content":"the sky is blue","author_id":"agent:a"}]}`)
	rid := app["output_record_ids"].([]any)[0].(string)
	closed := e.must(tWA2, "POST", "/v1/turns/"+tid+"/close", `{"status":"complete"}`)
	if ex, _ := closed["extracted"].([]any); len(ex) != 1 || ex[0] != "fact:"+rid {
		t.Fatalf("close: extracted %v, want fact:%s", closed["extracted"], rid)
	}
	if n := e.node(tRA, "alpha", "fact:"+rid, ""); n.Owner == nil || *n.Owner != "agent:a" || writtenBy(n) != "agent:a2" {
		t.Errorf("extracted node: %+v, want owner agent:a written by agent:a2", n)
	}

	// A timeout is closed by kurad itself.
	tid = e.must(tWA, "POST", "/v1/sessions/"+sid+"/turns", `{"instruction":{"content":"hurry","author_id":"agent:a"},"deadline_seconds":1}`)["id"].(string)
	app = e.must(tWA, "POST", "/v1/turns/"+tid+"/records", `{"records":[{"type":"memory.decision","content":"ship it","author_id":"agent:a"}]}`)
	rid = app["output_record_ids"].([]any)[0].(string)
	state := ""
	testwait.Until(15*time.Second, func() bool {
		state = e.must(tRA, "GET", "/v1/turns/"+tid, "")["state"].(string)
		return state != "open"
	})
	if state != "timeout" {
		t.Fatalf("turn after its deadline: %s, want timeout", state)
	}
	if n := e.node(tRA, "alpha", "decision:"+rid, ""); writtenBy(n) != "sys:kurad" {
		t.Errorf("node extracted at a timeout: %+v, want written by sys:kurad", n)
	}
}

// TestAuthA_ExtractionNeedsScope: a writer of the session's project without
// its scope may not append memory records (they would be extracted into
// the scope), and its close extracts nothing and says what it skipped.
func TestAuthA_ExtractionNeedsScope(t *testing.T) {
	t.Parallel()
	e := startAuthKurad(t, nil)
	sid := e.must(tWA, "POST", "/v1/sessions", `{"project":"alpha","name":"s"}`)["id"].(string)
	tid := e.must(tWA, "POST", "/v1/sessions/"+sid+"/turns", `{"instruction":{"content":"go","author_id":"agent:a"}}`)["id"].(string)
	own := e.must(tWP, "POST", "/v1/records", `{"type":"memory.decision","content":"p decides","author_id":"agent:p"}`)["id"].(string)

	path := "/v1/turns/" + tid + "/records"
	e.refused("a new memory.fact", tWP, "POST", path, `{"records":[{"type":"agent.thought","content":"hm","author_id":"agent:p"},{"type":"memory.fact","content":"p says","author_id":"agent:p"}]}`)
	e.refused("an existing memory.decision by id", tWP, "POST", path, `{"records":[{"record_id":"`+own+`"}]}`)
	_, b := e.do(tWP, "POST", path, `{"records":[{"type":"memory.fact","content":"p says","author_id":"agent:p"}]}`)
	if !bytes.Contains(b, []byte("extracted into scope alpha")) {
		t.Errorf("refusal %s, want it to name the scope the records would go to", b)
	}
	e.must(tWP, "POST", path, `{"records":[{"type":"agent.thought","content":"p thinks","author_id":"agent:p"}]}`)

	// a, who holds the scope, appends a fact; p closes.
	app := e.must(tWA, "POST", path, `{"records":[{"type":"memory.fact","content":"a says","author_id":"agent:a"}]}`)
	ids := app["output_record_ids"].([]any)
	fact := ids[len(ids)-1].(string)
	closed := mustBytes(e, tWP, "POST", "/v1/turns/"+tid+"/close", `{"status":"complete"}`)
	var c struct {
		State             string   `json:"state"`
		OutputLedgerID    string   `json:"output_ledger_id"`
		Extracted         []string `json:"extracted"`
		ExtractionSkipped *struct {
			Scope   string   `json:"scope"`
			Records []string `json:"records"`
			Reason  string   `json:"reason"`
		} `json:"extraction_skipped"`
	}
	json.Unmarshal(closed, &c)
	if c.State != "complete" || c.Extracted == nil || len(c.Extracted) != 0 {
		t.Errorf("close by p: %s, want complete with extracted []", closed)
	}
	if s := c.ExtractionSkipped; s == nil || s.Scope != "alpha" || !slices.Equal(s.Records, []string{fact}) || s.Reason == "" {
		t.Errorf("close by p: extraction_skipped %s, want scope alpha and record %s with a reason", closed, fact)
	}
	if head := e.must(tWA, "GET", "/v1/sessions/"+sid, "")["head_ledger_id"]; head != c.OutputLedgerID {
		t.Errorf("head %v, want the output ledger %s", head, c.OutputLedgerID)
	}
	if code, b := e.do(tRoot, "GET", "/v1/scopes/alpha/memory/nodes/fact:"+fact, ""); code != 404 {
		t.Errorf("the skipped fact became a node: %d %s", code, b)
	}

	// A closer holding the scope extracts, and nothing says skipped.
	tid = e.must(tWA, "POST", "/v1/sessions/"+sid+"/turns", `{"instruction":{"content":"again","author_id":"agent:a"}}`)["id"].(string)
	e.must(tWA, "POST", "/v1/turns/"+tid+"/records", `{"records":[{"type":"memory.fact","content":"a says again","author_id":"agent:a"}]}`)
	closed = mustBytes(e, tWA, "POST", "/v1/turns/"+tid+"/close", `{"status":"complete"}`)
	if bytes.Contains(closed, []byte("extraction_skipped")) || !bytes.Contains(closed, []byte(`"extracted":["fact:`)) {
		t.Errorf("close by a: %s, want one extracted fact and no extraction_skipped", closed)
	}
}

type recordAnswer struct {
	ID          string            `json:"id"`
	Hash        string            `json:"hash"`
	ContentHash string            `json:"content_hash"`
	Type        string            `json:"type"`
	Content     json.RawMessage   `json:"content"`
	AuthorID    string            `json:"author_id"`
	Metadata    map[string]string `json:"metadata"`
	Withheld    bool              `json:"withheld"`
}

// packAlpha writes a trusted fact in scope alpha, opens a turn of an
// alpha session with memory and returns the context ledger and the
// record kurad packed the fact into.
func (e *authEnv) packAlpha(secret string) (lid string, packed recordAnswer) {
	e.t.Helper()
	e.must(tRoot, "POST", "/v1/scopes/alpha/memory/nodes", `{"kind":"fact","id":"secret","title":"launch","summary":"`+secret+`","lifecycle":"active","authority":"trusted"}`)
	sid := e.must(tWA, "POST", "/v1/sessions", `{"project":"alpha","name":"packed"}`)["id"].(string)
	lid = e.must(tWA, "POST", "/v1/sessions/"+sid+"/turns", `{"instruction":{"content":"go","author_id":"agent:a"},"memory":{}}`)["context_ledger_id"].(string)
	page := decodeAs[struct{ Records []recordAnswer }](e.t, mustBytes(e, tRoot, "GET", "/v1/ledgers/"+lid+"/records", ""))
	for _, r := range page.Records {
		if r.Type == "memory.fact" {
			packed = r
		}
	}
	if packed.ID == "" || !bytes.Contains(packed.Content, []byte(secret)) {
		e.t.Fatalf("context ledger %s: no packed fact in %+v", lid, page.Records)
	}
	return lid, packed
}

// TestAuthA_PackedMemoryWithheld: memory kurad packs into a context ledger
// is marked with its scope, and callers without that scope get it neither
// by id, by hash nor in listings, and see it withheld (content null, hashes
// kept, still verifiable) in the ledger.
func TestAuthA_PackedMemoryWithheld(t *testing.T) {
	t.Parallel()
	e := startAuthKurad(t, nil)
	const secret = "the launch code is 0000"
	lid, packed := e.packAlpha(secret)
	if packed.AuthorID != "sys:kurad" || packed.Metadata["scope"] != "alpha" || packed.Metadata["bundle_id"] == "" {
		t.Errorf("packed record: %+v, want sys:kurad with metadata scope alpha and bundle_id", packed)
	}
	// A record anyone else marks with a scope is no packing: it stays readable.
	open := e.must(tWA, "GET", "/v1/turns?state=open", "")["turns"].([]any)[0].(map[string]any)["id"].(string)
	forged := e.must(tWA, "POST", "/v1/turns/"+open+"/records",
		`{"records":[{"type":"agent.thought","content":"a's forged marker","author_id":"agent:a","metadata":{"scope":"alpha","bundle_id":"x"}}]}`)["output_record_ids"].([]any)[0].(string)

	none := "0190aaaa-0000-7000-8000-000000000000"
	for _, who := range []struct{ name, tok string }{{"p (project alpha, not scope alpha)", tWP}, {"s (every project, scope beta)", tRS}} {
		code, got := e.do(who.tok, "GET", "/v1/records/"+packed.ID, "")
		ncode, want := e.do(who.tok, "GET", "/v1/records/"+none, "")
		if code != 404 || ncode != 404 || !bytes.Equal(bytes.ReplaceAll(got, []byte(packed.ID), []byte(none)), want) {
			t.Errorf("%s: GET the packed record: %d %s\nwhile a missing one gets %d %s", who.name, code, got, ncode, want)
		}
		if code, got := e.do(who.tok, "GET", "/v1/records/by-hash/"+packed.Hash, ""); code != 404 {
			t.Errorf("%s: GET the packed record by hash: %d %s", who.name, code, got)
		}
		page := mustBytes(e, who.tok, "GET", "/v1/ledgers/"+lid+"/records", "")
		if bytes.Contains(page, []byte("launch code")) {
			t.Errorf("%s: the ledger shows the packed memory: %s", who.name, page)
		}
		var w *recordAnswer
		for _, r := range decodeAs[struct{ Records []recordAnswer }](t, page).Records {
			if r.ID == packed.ID {
				w = &r
			}
		}
		if w == nil || !w.Withheld || string(w.Content) != "null" || w.ContentHash != packed.ContentHash || w.Metadata["scope"] != "alpha" {
			t.Errorf("%s: packed record in the ledger: %+v, want content null, withheld, hashes and metadata kept", who.name, w)
		}
		// A client verifies the ledger from what it was given.
		var l client.Ledger
		json.Unmarshal(mustBytes(e, who.tok, "GET", "/v1/ledgers/"+lid, ""), &l)
		var recs struct{ Records []client.Record }
		json.Unmarshal(page, &recs)
		var parents []string
		for _, pid := range l.ParentIDs {
			parents = append(parents, e.must(who.tok, "GET", "/v1/ledgers/"+pid, "")["hash"].(string))
		}
		v := client.CheckLedgerHashes(&l, recs.Records, parents)
		if vb, _ := json.Marshal(v); !v.OK || !bytes.Contains(vb, []byte(`"withheld":["`+packed.ID)) {
			t.Errorf("%s: local verification of the ledger: %+v, want ok with %s withheld", who.name, v, packed.ID)
		}
	}
	// s lists every project's records but not alpha's packed memory.
	list := mustBytes(e, tRS, "GET", "/v1/records?author_id=sys:kurad", "")
	if bytes.Contains(list, []byte(packed.ID)) {
		t.Errorf("s lists the packed record: %s", list)
	}
	if all := mustBytes(e, tRoot, "GET", "/v1/records?author_id=sys:kurad", ""); !bytes.Contains(all, []byte(packed.ID)) {
		t.Errorf("root does not list the packed record: %s", all)
	}
	// Holders of the scope read it in full.
	for _, tok := range []string{tWA, tRA, tRoot} {
		if b := mustBytes(e, tok, "GET", "/v1/ledgers/"+lid+"/records", ""); !bytes.Contains(b, []byte(secret)) || bytes.Contains(b, []byte(`"withheld"`)) {
			t.Errorf("%s reads the ledger as %s, want the packed memory in full", tok, b)
		}
		mustBytes(e, tok, "GET", "/v1/records/"+packed.ID, "")
	}
	// p reads the record with a forged marker in full.
	if b := mustBytes(e, tWP, "GET", "/v1/records/"+forged, ""); !bytes.Contains(b, []byte("forged marker")) {
		t.Errorf("p reads a's record with a scope in its metadata as %s, want it in full", b)
	}
}

// TestAuthA_ProvenanceWithheld: lineage lists records the caller may not
// read without their text, in trace, evidence, raw-sources and MCP's
// get_belief_evidence.
func TestAuthA_ProvenanceWithheld(t *testing.T) {
	t.Parallel()
	e := startAuthKurad(t, nil)
	const private = "a's private note"
	x := e.must(tWA, "POST", "/v1/records", `{"type":"agent.thought","content":"`+private+`","author_id":"agent:a"}`)["id"].(string)
	e.must(tWA, "POST", "/v1/scopes/alpha/memory/nodes", `{"kind":"fact","id":"ev","summary":"from a's note","derived_from":["record:`+x+`"]}`)
	prov := "/v1/scopes/alpha/provenance/fact:ev"

	check := func(who, tok string, withheld bool) {
		t.Helper()
		for _, p := range []string{prov, prov + "/evidence", prov + "/raw-sources"} {
			b := mustBytes(e, tok, "GET", p, "")
			if got := bytes.Contains(b, []byte(private)); got == withheld {
				t.Errorf("%s: GET %s shows the text: %v (%s)", who, p, got, b)
			}
			if got := bytes.Contains(b, []byte(`"withheld":true`)); got != withheld {
				t.Errorf("%s: GET %s withheld: %v, want %v (%s)", who, p, got, withheld, b)
			}
			if !bytes.Contains(b, []byte(x)) {
				t.Errorf("%s: GET %s does not list record %s: %s", who, p, x, b)
			}
		}
	}
	check("a, its author", tWA, false)
	check("root", tRoot, false)
	check("a2, who may not read it", tWA2, true)
	check("the reader of alpha", tRA, true)

	text, isErr := e.mcpTool(tWA2, "get_belief_evidence", map[string]any{"scope": "alpha", "ref": "fact:ev"})
	if isErr || strings.Contains(text, private) || !strings.Contains(text, `"withheld":true`) {
		t.Errorf("get_belief_evidence as a2: %s, want the record withheld", text)
	}

	// Memory packed from alpha, cited by a node of beta, is withheld from
	// a reader of beta without alpha.
	_, packed := e.packAlpha("the launch code is 0000")
	e.must(tRoot, "POST", "/v1/scopes/beta/memory/nodes", `{"kind":"fact","id":"cites","summary":"cites alpha","derived_from":["record:`+packed.ID+`"]}`)
	b := mustBytes(e, tRS, "GET", "/v1/scopes/beta/provenance/fact:cites/raw-sources", "")
	var rs struct {
		RawSources []struct {
			ID       string `json:"id"`
			Text     string `json:"text"`
			Withheld bool   `json:"withheld"`
		} `json:"raw_sources"`
	}
	json.Unmarshal(b, &rs)
	if len(rs.RawSources) != 1 || rs.RawSources[0].ID != packed.ID || !rs.RawSources[0].Withheld || strings.Contains(string(b), "launch code") {
		t.Errorf("beta reader's raw sources: %s, want %s withheld", b, packed.ID)
	}
	if b := mustBytes(e, tRoot, "GET", "/v1/scopes/beta/provenance/fact:cites/raw-sources", ""); !bytes.Contains(b, []byte("launch code")) {
		t.Errorf("root's raw sources: %s, want the text", b)
	}
}
