package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/daemon"
	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/kura-memory/kura/internal/testwait"
	_ "modernc.org/sqlite"
)

func decode[T any](t testing.TB, raw []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return v
}

func (c *apiClient) mustPost(path, body string, want int) []byte {
	c.tb.Helper()
	st, _, raw := c.post(path, body)
	if st != want {
		c.tb.Fatalf("POST %s: status %d, want %d: %s", path, st, want, raw)
	}
	return raw
}

func (c *apiClient) mustGet(path string) []byte {
	c.tb.Helper()
	st, _, raw := c.get(path)
	if st != 200 {
		c.tb.Fatalf("GET %s: status %d: %s", path, st, raw)
	}
	return raw
}

// runTurn opens, appends to and closes one turn.
func (c *apiClient) runTurn(sid string, n int) (kura.Turn, kura.Turn) {
	c.tb.Helper()
	opened := decode[kura.Turn](c.tb, c.mustPost("/v1/sessions/"+sid+"/turns",
		fmt.Sprintf(`{"instruction":{"type":"task.instruction","content":"step %d","author_id":"user:oles"},"context":[{"type":"sys.context","content":{"n":%d},"author_id":"sys:ctx"}]}`, n, n), 201))
	if opened.HeadHash == nil {
		c.tb.Fatalf("turn open answer has no head_hash: %+v", opened)
	}
	if ctxLedger := decode[kura.Ledger](c.tb, c.mustGet("/v1/ledgers/"+opened.ContextLedgerID)); ctxLedger.Hash != *opened.HeadHash {
		c.tb.Fatalf("open head_hash %s, want the context ledger's hash %s", *opened.HeadHash, ctxLedger.Hash)
	}
	c.mustPost("/v1/turns/"+opened.ID+"/records", fmt.Sprintf(`{"records":[
		{"type":"agent.thought","content":{"t":%d},"author_id":"agent:hashi"},
		{"type":"memory.fact","content":{"fact":%d},"author_id":"agent:hashi"},
		{"type":"task.deliverable","content":{"done":%d},"author_id":"agent:hashi"}]}`, n, n, n), 200)
	closed := decode[kura.Turn](c.tb, c.mustPost("/v1/turns/"+opened.ID+"/close", `{"status":"complete"}`, 200))
	return opened, closed
}

func newDaemon(t *testing.T) (*apiClient, *kuradtest.Daemon) {
	d := kuradtest.StartMain(t, kuradtest.Options{})
	return &apiClient{tb: t, base: d.BaseURL()}, d
}

func TestSession_ThreeTurnsChainAndVerify(t *testing.T) {
	t.Parallel()
	c, d := newDaemon(t)
	s := decode[kura.Session](t, c.mustPost("/v1/sessions", `{"project":"hashi","name":"morning"}`, 201))
	if s.HeadLedgerID != nil || s.Scope != "hashi" {
		t.Fatalf("new session: %+v", s)
	}
	var ctxs, outs []kura.Turn
	for n := 1; n <= 3; n++ {
		o, cl := c.runTurn(s.ID, n)
		ctxs, outs = append(ctxs, o), append(outs, cl)
		if cl.State != kura.TurnComplete || cl.OutputLedgerID == nil || cl.HeadHash == nil {
			t.Fatalf("turn %d closed as %+v", n, cl)
		}
		if len(cl.Extracted) != 1 || !strings.HasPrefix(cl.Extracted[0], "fact:") {
			t.Errorf("turn %d: extracted %v, want one fact", n, cl.Extracted)
		}
	}
	// Each context's parent is the previous output, each output's its context.
	for i := range ctxs {
		cl := decode[kura.Ledger](t, c.mustGet("/v1/ledgers/"+ctxs[i].ContextLedgerID))
		want := []string{}
		if i > 0 {
			want = []string{*outs[i-1].OutputLedgerID}
		}
		if strings.Join(cl.ParentIDs, ",") != strings.Join(want, ",") {
			t.Errorf("context %d parents: got %v, want %v", i+1, cl.ParentIDs, want)
		}
		if i > 0 { // the previous output's deliverable is carried into the context
			prevOut := decode[kura.Ledger](t, c.mustGet("/v1/ledgers/"+*outs[i-1].OutputLedgerID))
			if last := prevOut.RecordIDs[len(prevOut.RecordIDs)-1]; !contains(cl.RecordIDs, last) {
				t.Errorf("context %d does not carry the previous deliverable %s", i+1, last)
			}
		}
		ol := decode[kura.Ledger](t, c.mustGet("/v1/ledgers/"+*outs[i].OutputLedgerID))
		if strings.Join(ol.ParentIDs, ",") != ctxs[i].ContextLedgerID {
			t.Errorf("output %d parents: got %v, want [%s]", i+1, ol.ParentIDs, ctxs[i].ContextLedgerID)
		}
	}
	log := decode[struct{ Ledgers []kura.Ledger }](t, c.mustGet("/v1/sessions/"+s.ID+"/log"))
	var got []string
	for _, l := range log.Ledgers {
		got = append(got, l.ID)
	}
	want := []string{*outs[2].OutputLedgerID, ctxs[2].ContextLedgerID, *outs[1].OutputLedgerID, ctxs[1].ContextLedgerID, *outs[0].OutputLedgerID, ctxs[0].ContextLedgerID}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("log: got %v, want %v", got, want)
	}
	v := decode[kura.SessionVerification](t, c.mustGet("/v1/sessions/"+s.ID+"/verify?expect_head_hash="+*outs[2].HeadHash))
	if !v.OK || v.LedgersChecked != 6 || v.ExpectHeadHashFound == nil || !*v.ExpectHeadHashFound {
		t.Fatalf("verify: %+v", v)
	}
	rl := decode[struct{ Reflog []kura.ReflogEntry }](t, c.mustGet("/v1/sessions/"+s.ID+"/reflog"))
	if len(rl.Reflog) != 6 || rl.Reflog[0].From != nil || rl.Reflog[5].To != *outs[2].OutputLedgerID {
		t.Fatalf("reflog: %+v", rl.Reflog)
	}

	raw := d.RawDB(t)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := raw.Exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	verify := func(expect string) kura.SessionVerification {
		p := "/v1/sessions/" + s.ID + "/verify"
		if expect != "" {
			p += "?expect_head_hash=" + expect
		}
		return decode[kura.SessionVerification](t, c.mustGet(p))
	}
	names := func(v kura.SessionVerification, ledgerID, field string) bool {
		for _, p := range v.Problems {
			if (ledgerID == "" || p.LedgerID == ledgerID) && (field == "" || p.Field == field) {
				return true
			}
		}
		return false
	}

	// A record of turn 2's output edited in the file: verify names its ledger.
	ol2 := decode[kura.Ledger](t, c.mustGet("/v1/ledgers/"+*outs[1].OutputLedgerID))
	var content string
	raw.QueryRow("SELECT content FROM records WHERE id = ?", ol2.RecordIDs[0]).Scan(&content)
	exec("UPDATE records SET content = ? WHERE id = ?", `{"t":"forged"}`, ol2.RecordIDs[0])
	if v := verify(""); v.OK || !names(v, ol2.ID, "ledger") {
		t.Fatalf("edited record: verify %+v, want it to name ledger %s", v, ol2.ID)
	}
	exec("UPDATE records SET content = ? WHERE id = ?", content, ol2.RecordIDs[0])
	// A ledger row edited (its label): the ledger hash no longer matches.
	exec("UPDATE ledgers SET label = 'renamed' WHERE id = ?", ctxs[1].ContextLedgerID)
	if v := verify(""); v.OK || !names(v, ctxs[1].ContextLedgerID, "ledger") {
		t.Fatalf("edited ledger: verify %+v", v)
	}
	exec("UPDATE ledgers SET label = ? WHERE id = ?", "morning-turn-2-ctx", ctxs[1].ContextLedgerID)
	if v := verify(""); !v.OK {
		t.Fatalf("after undoing the edits: %+v", v)
	}
	// The head moved back to an older ledger in the file: the chain is
	// consistent, but the handed-out head hash is gone and the head no
	// longer matches the last signed head move.
	exec("UPDATE sessions SET head_ledger_id = ? WHERE id = ?", *outs[0].OutputLedgerID, s.ID)
	v = verify(*outs[2].HeadHash)
	if v.OK || !names(v, "", "expect_head_hash") || !names(v, "", "head") {
		t.Fatalf("head moved back: verify %+v, want expect_head_hash and head problems", v)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestTurn_TwoWorkersRace(t *testing.T) {
	t.Parallel()
	c, _ := newDaemon(t)
	s := decode[kura.Session](t, c.mustPost("/v1/sessions", `{"project":"hashi","name":"race"}`, 201))
	tr := decode[kura.Turn](t, c.mustPost("/v1/sessions/"+s.ID+"/turns", `{"instruction":{"content":"go","author_id":"user:oles"}}`, 201))
	type res struct {
		status int
		body   []byte
	}
	results := make([]res, 2)
	var wg sync.WaitGroup
	for i := range results {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			st, _, raw := c.post("/v1/turns/"+tr.ID+"/claim", fmt.Sprintf(`{"worker":"agent:w%d","lease_seconds":60}`, i))
			results[i] = res{st, raw}
		}(i)
	}
	wg.Wait()
	winner, loser := -1, -1
	for i, r := range results {
		switch r.status {
		case 200:
			winner = i
		case 409:
			loser = i
		}
	}
	if winner < 0 || loser < 0 {
		t.Fatalf("claims: %d %s / %d %s; want one 200 and one 409", results[0].status, results[0].body, results[1].status, results[1].body)
	}
	lease := decode[kura.Lease](t, results[winner].body)
	before := c.state()
	// The loser, fenced by the epoch it never got, writes nothing.
	for _, body := range []string{`{"records":[{"type":"agent.thought","content":"mine","author_id":"agent:w9"}]}`, `{"epoch":0,"records":[{"type":"agent.thought","content":"mine","author_id":"agent:w9"}]}`} {
		if st, _, raw := c.post("/v1/turns/"+tr.ID+"/records", body); st != 409 {
			t.Fatalf("loser append: %d %s, want 409", st, raw)
		}
	}
	if st, _, raw := c.post("/v1/turns/"+tr.ID+"/close", `{"epoch":0,"status":"complete"}`); st != 409 {
		t.Fatalf("loser close: %d %s, want 409", st, raw)
	}
	if after := c.state(); after != before {
		t.Fatalf("the loser's writes changed state: %s -> %s", before, after)
	}
	c.mustPost("/v1/turns/"+tr.ID+"/records", fmt.Sprintf(`{"epoch":%d,"records":[{"type":"task.deliverable","content":"won","author_id":"agent:w%d"}]}`, lease.Epoch, winner), 200)
	cl := decode[kura.Turn](t, c.mustPost("/v1/turns/"+tr.ID+"/close", fmt.Sprintf(`{"epoch":%d,"status":"complete"}`, lease.Epoch), 200))
	if len(cl.OutputRecordIDs) != 1 {
		t.Fatalf("output: %v, want just the winner's deliverable", cl.OutputRecordIDs)
	}
	// A closed turn takes nothing more.
	if st, _, _ := c.post("/v1/turns/"+tr.ID+"/records", fmt.Sprintf(`{"epoch":%d,"records":[{"type":"agent.thought","content":"late","author_id":"agent:w0"}]}`, lease.Epoch)); st != 409 {
		t.Fatalf("append to a closed turn: %d, want 409", st)
	}
}

func TestTurn_FiftyConcurrentOpens(t *testing.T) {
	t.Parallel()
	c, _ := newDaemon(t)
	s := decode[kura.Session](t, c.mustPost("/v1/sessions", `{"project":"hashi","name":"crowd"}`, 201))
	const n = 50
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			st, _, _ := c.post("/v1/sessions/"+s.ID+"/turns", fmt.Sprintf(`{"instruction":{"content":"open %d","author_id":"user:oles"}}`, i))
			statuses[i] = st
		}(i)
	}
	wg.Wait()
	created, conflicts := 0, 0
	for _, st := range statuses {
		switch st {
		case 201:
			created++
		case 409:
			conflicts++
		}
	}
	if created != 1 || conflicts != n-1 {
		t.Fatalf("opens: %d created, %d conflicts, want 1 and %d (%v)", created, conflicts, n-1, statuses)
	}
	sess := decode[kura.Session](t, c.mustGet("/v1/sessions/"+s.ID))
	turns := decode[struct{ Turns []kura.Turn }](t, c.mustGet("/v1/turns?session_id="+s.ID))
	if len(turns.Turns) != 1 || sess.HeadLedgerID == nil || *sess.HeadLedgerID != turns.Turns[0].ContextLedgerID {
		t.Fatalf("after the race: session %+v, turns %+v", sess, turns.Turns)
	}
	if v := decode[kura.SessionVerification](t, c.mustGet("/v1/sessions/"+s.ID+"/verify")); !v.OK {
		t.Fatalf("verify: %+v", v)
	}
}

func TestTurn_DeadlineClosesAsTimeout(t *testing.T) {
	t.Parallel()
	c, _ := newDaemon(t)
	s := decode[kura.Session](t, c.mustPost("/v1/sessions", `{"project":"hashi","name":"slow"}`, 201))
	tr := decode[kura.Turn](t, c.mustPost("/v1/sessions/"+s.ID+"/turns", `{"instruction":{"content":"hurry","author_id":"user:oles"},"deadline_seconds":1}`, 201))
	var got kura.Turn
	testwait.Until(15*time.Second, func() bool {
		got = decode[kura.Turn](t, c.mustGet("/v1/turns/"+tr.ID))
		return got.State != kura.TurnOpen
	})
	if got.State != kura.TurnTimeout || got.OutputLedgerID == nil || len(got.OutputRecordIDs) != 1 {
		t.Fatalf("turn after its deadline: %+v, want timeout with one deliverable", got)
	}
	rec := decode[kura.Record](t, c.mustGet("/v1/records/"+got.OutputRecordIDs[0]))
	if rec.Type != "task.deliverable" || rec.AuthorID != "sys:kurad" || !strings.Contains(string(rec.Content), `"status":"timeout"`) {
		t.Fatalf("deliverable: %+v", rec)
	}
	if sess := decode[kura.Session](t, c.mustGet("/v1/sessions/"+s.ID)); *sess.HeadLedgerID != *got.OutputLedgerID {
		t.Fatalf("head %v, want the output ledger %s", sess.HeadLedgerID, *got.OutputLedgerID)
	}
}

func TestHead_CompareAndSwap(t *testing.T) {
	t.Parallel()
	c, _ := newDaemon(t)
	s := decode[kura.Session](t, c.mustPost("/v1/sessions", `{"project":"hashi","name":"cas"}`, 201))
	r := decode[kura.Record](t, c.mustPost("/v1/records", `{"type":"agent.thought","content":1,"author_id":"agent:a"}`, 201))
	l1 := decode[kura.Ledger](t, c.mustPost("/v1/ledgers", `{"label":"a","record_ids":["`+r.ID+`"]}`, 201))
	l2 := decode[kura.Ledger](t, c.mustPost("/v1/ledgers", `{"label":"b","parent_ids":["`+l1.ID+`"],"record_ids":[]}`, 201))
	moved := decode[kura.Session](t, c.mustPost("/v1/sessions/"+s.ID+"/head", `{"ledger_id":"`+l1.ID+`","expected_head":null}`, 200))
	if *moved.HeadLedgerID != l1.ID || *moved.HeadHash != l1.Hash {
		t.Fatalf("moved: %+v", moved)
	}
	before := c.state()
	st, m, raw := c.post("/v1/sessions/"+s.ID+"/head", `{"ledger_id":"`+l2.ID+`","expected_head":null}`)
	if st != 409 {
		t.Fatalf("stale CAS: %d %s", st, raw)
	}
	if d := m["error"].(map[string]any)["details"].(map[string]any); d["actual_head"] != l1.ID {
		t.Fatalf("409 details: %v, want actual_head %s", d, l1.ID)
	}
	if c.state() != before {
		t.Fatal("a failed compare-and-swap changed state")
	}
	c.mustPost("/v1/sessions/"+s.ID+"/head", `{"ledger_id":"`+l2.ID+`","expected_head":"`+l1.ID+`"}`, 200)
	// A fork starts at the given ledger.
	f := decode[kura.Session](t, c.mustPost("/v1/sessions", `{"project":"hashi","name":"fork","from_ledger_id":"`+l1.ID+`"}`, 201))
	if f.HeadLedgerID == nil || *f.HeadLedgerID != l1.ID {
		t.Fatalf("fork: %+v", f)
	}
	if st, _, _ := c.post("/v1/sessions", `{"project":"hashi","name":"fork"}`); st != 409 {
		t.Fatalf("duplicate project/name: %d, want 409", st)
	}
}

func TestIdempotency_RetriesWriteNothing(t *testing.T) {
	t.Parallel()
	c, _ := newDaemon(t)
	do := func(path, key, body string) (int, []byte, http.Header) {
		req, _ := http.NewRequest("POST", c.base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		return resp.StatusCode, []byte(b.String()), resp.Header
	}
	s := decode[kura.Session](t, c.mustPost("/v1/sessions", `{"project":"hashi","name":"retry"}`, 201))
	calls := []struct{ path, body string }{
		{"/v1/records", `{"type":"agent.thought","content":"once","author_id":"agent:a"}`},
		{"/v1/records/batch", `{"records":[{"type":"agent.thought","content":"b1","author_id":"agent:a"},{"type":"agent.thought","content":"b2","author_id":"agent:a"}]}`},
		{"/v1/sessions", `{"project":"hashi","name":"retried"}`},
		{"/v1/sessions/" + s.ID + "/turns", `{"instruction":{"content":"once","author_id":"user:oles"}}`},
	}
	for i, call := range calls {
		key := fmt.Sprintf("key-%d", i)
		st1, b1, _ := do(call.path, key, call.body)
		if st1/100 != 2 {
			t.Fatalf("%s: %d %s", call.path, st1, b1)
		}
		before := c.state()
		st2, b2, h := do(call.path, key, call.body)
		if st2 != st1 || string(b2) != string(b1) || h.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("%s retry: %d %s, want %d %s replayed", call.path, st2, b2, st1, b1)
		}
		if c.state() != before {
			t.Fatalf("%s retry wrote something", call.path)
		}
		if st3, b3, _ := do(call.path, key, strings.Replace(call.body, "once", "other", 1)+" "); st3 != 409 {
			t.Fatalf("%s: key reused for another request: %d %s, want 409", call.path, st3, b3)
		}
	}
	tr := decode[struct{ Turns []kura.Turn }](t, c.mustGet("/v1/turns?session_id="+s.ID))
	if len(tr.Turns) != 1 {
		t.Fatalf("turns: %d, want 1", len(tr.Turns))
	}
	if st, _, _ := do("/v1/records", strings.Repeat("k", 129), `{}`); st != 400 {
		t.Fatalf("long key: %d, want 400", st)
	}
}

func TestImport_ReproducesHashes(t *testing.T) {
	t.Parallel()
	a, da := newDaemon(t)
	s := decode[kura.Session](t, a.mustPost("/v1/sessions", `{"project":"hashi","name":"export"}`, 201))
	for n := 1; n <= 2; n++ {
		a.runTurn(s.ID, n)
	}
	s = decode[kura.Session](t, a.mustGet("/v1/sessions/"+s.ID))
	log := decode[struct{ Ledgers []kura.Ledger }](t, a.mustGet("/v1/sessions/"+s.ID+"/log"))
	var in kura.ImportInput
	seen := map[string]bool{}
	for i := len(log.Ledgers) - 1; i >= 0; i-- { // parents first
		l := decode[kura.Ledger](t, a.mustGet("/v1/ledgers/"+log.Ledgers[i].ID))
		for _, rid := range l.RecordIDs {
			if !seen[rid] {
				seen[rid] = true
				in.Records = append(in.Records, decode[kura.Record](t, a.mustGet("/v1/records/"+rid)))
			}
		}
		in.Ledgers = append(in.Ledgers, l)
	}
	in.Sessions = []kura.Session{s}
	body, _ := json.Marshal(in)

	// The same signing key: the context ledgers hold sys: records, which
	// an import takes only inside ledgers this kurad signed.
	b := &apiClient{tb: t, base: kuradtest.StartMain(t, kuradtest.Options{Configure: func(c *daemon.Config) { c.KeyFile = da.Config.KeyFile }}).BaseURL()}
	// A forged hash is refused and writes nothing.
	bad := in
	bad.Records = append([]kura.Record{}, in.Records...)
	bad.Records[0].Seal = strings.Repeat("0", 64)
	badBody, _ := json.Marshal(bad)
	before := b.state()
	if st, _, raw := b.post("/v1/admin/import", string(badBody)); st != 400 {
		t.Fatalf("forged import: %d %s, want 400", st, raw)
	}
	if b.state() != before {
		t.Fatal("a refused import wrote something")
	}
	res := decode[kura.ImportResult](t, b.mustPost("/v1/admin/import", string(body), 200))
	if res.Records != len(in.Records) || res.Ledgers != len(in.Ledgers) || res.Sessions != 1 {
		t.Fatalf("import: %+v", res)
	}
	for _, r := range in.Records {
		got := decode[kura.Record](t, b.mustGet("/v1/records/"+r.ID))
		if got.Hash != r.Hash || got.ContentHash != r.ContentHash || got.Seal != r.Seal || got.CreatedAt != r.CreatedAt {
			t.Fatalf("record %s: got %+v, want %+v", r.ID, got, r)
		}
	}
	for _, l := range in.Ledgers {
		got := decode[kura.Ledger](t, b.mustGet("/v1/ledgers/"+l.ID))
		if got.Hash != l.Hash || got.RootHash != l.RootHash {
			t.Fatalf("ledger %s: got %s/%s, want %s/%s", l.ID, got.Hash, got.RootHash, l.Hash, l.RootHash)
		}
	}
	v := decode[kura.SessionVerification](t, b.mustGet("/v1/sessions/"+s.ID+"/verify?expect_head_hash="+*s.HeadHash))
	if !v.OK || v.LedgersChecked != 4 {
		t.Fatalf("imported session verify: %+v", v)
	}
	// Importing again skips everything.
	again := decode[kura.ImportResult](t, b.mustPost("/v1/admin/import", string(body), 200))
	if again.Records+again.Ledgers+again.Sessions != 0 || again.Skipped != len(in.Records)+len(in.Ledgers)+1 {
		t.Fatalf("second import: %+v", again)
	}
}

// FuzzSessionAndTurnBodies posts arbitrary bodies at the session and turn
// routes of a real kurad: always a documented status with the error body,
// never a 500.
func FuzzSessionAndTurnBodies(f *testing.F) {
	for _, s := range []string{
		`{"project":"p","name":"n"}`, `{"project":"p","name":"n","from_ledger_id":"01a1fdca-0000-7000-8000-000000000000"}`,
		`{"ledger_id":"01a1fdca-0000-7000-8000-000000000000","expected_head":null}`,
		`{"instruction":{"content":"x","author_id":"user:a"},"context":[{"record_id":"01a1fdca-0000-7000-8000-000000000000"}],"deadline_seconds":5}`,
		`{"worker":"agent:w","lease_seconds":5}`, `{"epoch":1,"records":[{"type":"task.deliverable","content":1,"author_id":"agent:w"}]}`,
		`{"status":"failed"}`, `{"epoch":-1}`, `{"instruction":null}`, `[]`,
	} {
		f.Add([]byte(s))
	}
	c := &apiClient{tb: f, base: kuradtest.Start(f)}
	_, m, _ := c.post("/v1/sessions", `{"project":"fuzz","name":"base"}`)
	sid := m["id"].(string)
	_, m, _ = c.post("/v1/sessions/"+sid+"/turns", `{"instruction":{"content":"fuzz","author_id":"user:f"},"deadline_seconds":604800}`)
	tid := m["id"].(string)
	f.Fuzz(func(t *testing.T, body []byte) {
		c.tb = t
		for _, path := range []string{"/v1/sessions", "/v1/sessions/" + sid + "/head", "/v1/sessions/" + sid + "/turns",
			"/v1/turns/" + tid + "/claim", "/v1/turns/" + tid + "/renew", "/v1/turns/" + tid + "/records", "/v1/turns/" + tid + "/close"} {
			st, m, raw := c.do("POST", path, "application/json", body)
			switch st {
			case 200, 201:
			case 400, 409, 413:
				if e, ok := m["error"].(map[string]any); !ok || e["code"] == nil || e["message"] == nil {
					t.Fatalf("%s: error body malformed: %s", path, raw)
				}
			default:
				t.Fatalf("%s: status %d for %q: %s", path, st, body, raw)
			}
		}
	})
}

func TestTurn_ListCarriesOutputs(t *testing.T) {
	t.Parallel()
	c, _ := newDaemon(t)
	s := decode[kura.Session](t, c.mustPost("/v1/sessions", `{"project":"hashi","name":"list"}`, 201))
	c.runTurn(s.ID, 1)
	open := decode[kura.Turn](t, c.mustPost("/v1/sessions/"+s.ID+"/turns", `{"instruction":{"content":"two","author_id":"user:oles"}}`, 201))
	list := decode[struct{ Turns []kura.Turn }](t, c.mustGet("/v1/turns?session_id="+s.ID))
	if len(list.Turns) != 2 || len(list.Turns[0].OutputRecordIDs) != 3 || list.Turns[1].ID != open.ID || list.Turns[1].OutputRecordIDs == nil || len(list.Turns[1].OutputRecordIDs) != 0 {
		t.Fatalf("list: %+v", list.Turns)
	}
	if open := decode[struct{ Turns []kura.Turn }](t, c.mustGet("/v1/turns?session_id="+s.ID+"&state=open")); len(open.Turns) != 1 {
		t.Fatalf("state filter: %+v", open.Turns)
	}
}

func TestSession_LogPages(t *testing.T) {
	t.Parallel()
	c, _ := newDaemon(t)
	s := decode[kura.Session](t, c.mustPost("/v1/sessions", `{"project":"hashi","name":"pages"}`, 201))
	for n := 1; n <= 4; n++ {
		c.runTurn(s.ID, n)
	}
	var got []string
	path := "/v1/sessions/" + s.ID + "/log?limit=3"
	for page := 0; page < 10; page++ {
		out := decode[struct {
			Ledgers    []kura.Ledger
			NextCursor string `json:"next_cursor"`
		}](t, c.mustGet(path))
		for _, l := range out.Ledgers {
			got = append(got, l.Label)
		}
		if out.NextCursor == "" {
			break
		}
		path = "/v1/sessions/" + s.ID + "/log?limit=3&cursor=" + out.NextCursor
	}
	want := "pages-turn-4-out,pages-turn-4-ctx,pages-turn-3-out,pages-turn-3-ctx,pages-turn-2-out,pages-turn-2-ctx,pages-turn-1-out,pages-turn-1-ctx"
	if strings.Join(got, ",") != want {
		t.Fatalf("paged log: got %v", got)
	}
}

func TestSessionTurn_BadInputWritesNothing(t *testing.T) {
	t.Parallel()
	c, _ := newDaemon(t)
	s := decode[kura.Session](t, c.mustPost("/v1/sessions", `{"project":"hashi","name":"bad"}`, 201))
	done := decode[kura.Session](t, c.mustPost("/v1/sessions", `{"project":"hashi","name":"done"}`, 201))
	_, closed := c.runTurn(done.ID, 1)
	tr := decode[kura.Turn](t, c.mustPost("/v1/sessions/"+s.ID+"/turns", `{"instruction":{"content":"go","author_id":"user:oles"}}`, 201))
	c.mustPost("/v1/turns/"+tr.ID+"/records", `{"records":[{"type":"task.deliverable","content":"first","author_id":"agent:a"}]}`, 200)
	lease := decode[kura.Lease](t, c.mustPost("/v1/turns/"+tr.ID+"/claim", `{"worker":"agent:a"}`, 200))
	ep := fmt.Sprint(lease.Epoch)
	unknown := "01a1fdca-0000-7000-8000-000000000000"
	huge := `{"epoch":` + ep + `,"records":[{"type":"agent.thought","content":"` + strings.Repeat("x", 5<<20) + `","author_id":"agent:a"}]}`
	cases := []struct {
		name, method, path, body string
		status                   int
		code, field              string
	}{
		{"session malformed", "POST", "/v1/sessions", `{"project":`, 400, "invalid_argument", ""},
		{"session bad project", "POST", "/v1/sessions", `{"project":"Hashi!","name":"x"}`, 400, "invalid_argument", "project"},
		{"session wrong type", "POST", "/v1/sessions", `{"project":"hashi","name":7}`, 400, "invalid_argument", "name"},
		{"session unknown field", "POST", "/v1/sessions", `{"project":"hashi","name":"x","owner":"me"}`, 400, "invalid_argument", "owner"},
		{"session fork from nothing", "POST", "/v1/sessions", `{"project":"hashi","name":"x","from_ledger_id":"` + unknown + `"}`, 400, "invalid_argument", "from_ledger_id"},
		{"session fork bad id", "POST", "/v1/sessions", `{"project":"hashi","name":"x","from_ledger_id":"nope"}`, 400, "invalid_argument", "from_ledger_id"},
		{"get unknown session", "GET", "/v1/sessions/" + unknown, ``, 404, "not_found", ""},
		{"get invalid session id", "GET", "/v1/sessions/xyz", ``, 400, "invalid_argument", "id"},
		{"log unknown session", "GET", "/v1/sessions/" + unknown + "/log", ``, 404, "not_found", ""},
		{"log bad limit", "GET", "/v1/sessions/" + s.ID + "/log?limit=0", ``, 400, "invalid_argument", "limit"},
		{"log bad cursor", "GET", "/v1/sessions/" + s.ID + "/log?cursor=bm9wZQ", ``, 400, "invalid_argument", "cursor"},
		{"verify bad expect hash", "GET", "/v1/sessions/" + s.ID + "/verify?expect_head_hash=abc", ``, 400, "invalid_argument", "expect_head_hash"},
		{"head unknown ledger", "POST", "/v1/sessions/" + done.ID + "/head", `{"ledger_id":"` + unknown + `","expected_head":"` + *closed.OutputLedgerID + `"}`, 400, "invalid_argument", "ledger_id"},
		{"head while a turn is open", "POST", "/v1/sessions/" + s.ID + "/head", `{"ledger_id":"` + tr.ContextLedgerID + `","expected_head":"` + tr.ContextLedgerID + `"}`, 409, "conflict", ""},
		{"head of unknown session", "POST", "/v1/sessions/" + unknown + "/head", `{"ledger_id":"` + tr.ContextLedgerID + `","expected_head":null}`, 404, "not_found", ""},
		{"open without instruction", "POST", "/v1/sessions/" + done.ID + "/turns", `{}`, 400, "invalid_argument", "instruction"},
		{"open wrong instruction type", "POST", "/v1/sessions/" + done.ID + "/turns", `{"instruction":{"type":"agent.thought","content":1,"author_id":"user:a"}}`, 400, "invalid_argument", "instruction.type"},
		{"open bad author", "POST", "/v1/sessions/" + done.ID + "/turns", `{"instruction":{"content":1,"author_id":"bot"}}`, 400, "invalid_argument", "instruction.author_id"},
		{"open unknown context record", "POST", "/v1/sessions/" + done.ID + "/turns", `{"instruction":{"content":1,"author_id":"user:a"},"context":[{"record_id":"` + unknown + `"}]}`, 400, "invalid_argument", ""},
		{"open context both forms", "POST", "/v1/sessions/" + done.ID + "/turns", `{"instruction":{"content":1,"author_id":"user:a"},"context":[{"record_id":"` + unknown + `","type":"sys.context"}]}`, 400, "invalid_argument", "context[0].record_id"},
		{"open bad deadline", "POST", "/v1/sessions/" + done.ID + "/turns", `{"instruction":{"content":1,"author_id":"user:a"},"deadline_seconds":-5}`, 400, "invalid_argument", "deadline_seconds"},
		{"open bad dispatch", "POST", "/v1/sessions/" + done.ID + "/turns", `{"instruction":{"content":1,"author_id":"user:a"},"dispatch":"a.b"}`, 400, "invalid_argument", "dispatch"},
		{"open with a negative memory budget", "POST", "/v1/sessions/" + done.ID + "/turns", `{"instruction":{"content":1,"author_id":"user:a"},"memory":{"budget_bytes":-1}}`, 400, "invalid_argument", "memory.budget_bytes"},
		{"open with an unknown memory field", "POST", "/v1/sessions/" + done.ID + "/turns", `{"instruction":{"content":1,"author_id":"user:a"},"memory":{"kinds":["fact"]}}`, 400, "invalid_argument", "kinds"},
		{"open a second turn", "POST", "/v1/sessions/" + s.ID + "/turns", `{"instruction":{"content":1,"author_id":"user:a"}}`, 409, "conflict", ""},
		{"open on unknown session", "POST", "/v1/sessions/" + unknown + "/turns", `{"instruction":{"content":1,"author_id":"user:a"}}`, 404, "not_found", ""},
		{"claim a claimed turn", "POST", "/v1/turns/" + tr.ID + "/claim", `{"worker":"agent:b"}`, 409, "conflict", ""},
		{"claim bad worker", "POST", "/v1/turns/" + tr.ID + "/claim", `{"worker":"b"}`, 400, "invalid_argument", "worker"},
		{"claim bad lease", "POST", "/v1/turns/" + tr.ID + "/claim", `{"worker":"agent:b","lease_seconds":-1}`, 400, "invalid_argument", "lease_seconds"},
		{"claim unknown turn", "POST", "/v1/turns/" + unknown + "/claim", `{"worker":"agent:b"}`, 404, "not_found", ""},
		{"renew stale epoch", "POST", "/v1/turns/" + tr.ID + "/renew", `{"epoch":99}`, 409, "conflict", ""},
		{"append second deliverable", "POST", "/v1/turns/" + tr.ID + "/records", `{"epoch":` + ep + `,"records":[{"type":"task.deliverable","content":"again","author_id":"agent:a"}]}`, 409, "conflict", ""},
		{"append nothing", "POST", "/v1/turns/" + tr.ID + "/records", `{"epoch":` + ep + `,"records":[]}`, 400, "invalid_argument", "records"},
		{"append unknown type", "POST", "/v1/turns/" + tr.ID + "/records", `{"epoch":` + ep + `,"records":[{"type":"agent.dream","content":1,"author_id":"agent:a"}]}`, 400, "invalid_argument", "records[0].type"},
		{"append oversize", "POST", "/v1/turns/" + tr.ID + "/records", huge, 413, "too_large", ""},
		{"append epoch wrong type", "POST", "/v1/turns/" + tr.ID + "/records", `{"epoch":"one","records":[]}`, 400, "invalid_argument", "epoch"},
		{"append to closed turn", "POST", "/v1/turns/" + closed.ID + "/records", `{"records":[{"type":"agent.thought","content":1,"author_id":"agent:a"}]}`, 409, "conflict", ""},
		{"close unknown status", "POST", "/v1/turns/" + tr.ID + "/close", `{"epoch":` + ep + `,"status":"done"}`, 400, "invalid_argument", "status"},
		{"close a closed turn", "POST", "/v1/turns/" + closed.ID + "/close", `{"status":"complete"}`, 409, "conflict", ""},
		{"get unknown turn", "GET", "/v1/turns/" + unknown, ``, 404, "not_found", ""},
		{"list bad state", "GET", "/v1/turns?state=sleeping", ``, 400, "invalid_argument", "state"},
		{"list bad session id", "GET", "/v1/turns?session_id=x", ``, 400, "invalid_argument", "session_id"},
		{"import nothing", "POST", "/v1/admin/import", `{}`, 400, "invalid_argument", ""},
		{"import not json", "POST", "/v1/admin/import", `records`, 400, "invalid_argument", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := c.state()
			ct := ""
			if tc.method == "POST" {
				ct = "application/json"
			}
			st, m, raw := c.do(tc.method, tc.path, ct, []byte(tc.body))
			if st != tc.status {
				t.Fatalf("status: got %d, want %d (%.300s)", st, tc.status, raw)
			}
			e, ok := m["error"].(map[string]any)
			if !ok || e["code"] != tc.code || e["message"] == "" {
				t.Fatalf("error body: got %.300s, want code %s", raw, tc.code)
			}
			if tc.field != "" {
				if d, _ := e["details"].(map[string]any); d["field"] != tc.field {
					t.Errorf("details.field: got %v, want %s (%.300s)", d["field"], tc.field, raw)
				}
			}
			if after := c.state(); after != before {
				t.Errorf("state changed: %s -> %s", before, after)
			}
		})
	}
}

// TestIdempotency_TurnWrites retries the head move, claim, renew, append,
// close and import with their keys: the first answer comes back and nothing
// is written twice.
func TestIdempotency_TurnWrites(t *testing.T) {
	t.Parallel()
	c, _ := newDaemon(t)
	post := func(path, key, body string) (int, string) {
		req, _ := http.NewRequest("POST", c.base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	twice := func(path, key, body string) string {
		t.Helper()
		st1, b1 := post(path, key, body)
		if st1/100 != 2 {
			t.Fatalf("%s: %d %s", path, st1, b1)
		}
		before := c.state()
		st2, b2 := post(path, key, body)
		if st2 != st1 || b2 != b1 {
			t.Fatalf("%s retry: %d %s, want %d %s", path, st2, b2, st1, b1)
		}
		if c.state() != before {
			t.Fatalf("%s retry wrote something", path)
		}
		return b1
	}
	s := decode[kura.Session](t, c.mustPost("/v1/sessions", `{"project":"hashi","name":"idem"}`, 201))
	r := decode[kura.Record](t, c.mustPost("/v1/records", `{"type":"agent.thought","content":"x","author_id":"agent:a"}`, 201))
	l := decode[kura.Ledger](t, []byte(twice("/v1/ledgers", "ledger", `{"label":"l","record_ids":["`+r.ID+`"]}`)))
	twice("/v1/sessions/"+s.ID+"/head", "head", `{"ledger_id":"`+l.ID+`","expected_head":null}`)
	tr := decode[kura.Turn](t, []byte(twice("/v1/sessions/"+s.ID+"/turns", "open", `{"instruction":{"content":"go","author_id":"user:oles"}}`)))
	lease := decode[kura.Lease](t, []byte(twice("/v1/turns/"+tr.ID+"/claim", "claim", `{"worker":"agent:a"}`)))
	twice("/v1/turns/"+tr.ID+"/renew", "renew", fmt.Sprintf(`{"epoch":%d,"lease_seconds":120}`, lease.Epoch))
	twice("/v1/turns/"+tr.ID+"/records", "append", fmt.Sprintf(`{"epoch":%d,"records":[{"type":"agent.thought","content":"once","author_id":"agent:a"}]}`, lease.Epoch))
	cl := decode[kura.Turn](t, []byte(twice("/v1/turns/"+tr.ID+"/close", "close", fmt.Sprintf(`{"epoch":%d,"status":"failed"}`, lease.Epoch))))
	if len(cl.OutputRecordIDs) != 2 || cl.State != kura.TurnFailed {
		t.Fatalf("closed turn: %+v, want the one append plus the system deliverable", cl)
	}
	if epoch := decode[kura.Turn](t, c.mustGet("/v1/turns/"+tr.ID)).Epoch; epoch != 1 {
		t.Fatalf("epoch after a retried claim: %d, want 1", epoch)
	}
}
