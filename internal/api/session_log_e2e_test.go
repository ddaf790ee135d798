package api_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/kura"
)

// TestSession_VerifyCatchesATailCutAgainstTheLog cuts a session's last
// two ledgers off consistently in the database (their records, parent
// and reflog rows deleted, the head rewound): every hash and signature
// left verifies, so only the log's session.head leaves, which still name
// the cut ledgers, can tell. Session verify must fail on its own, with no
// state kept by a client; and once the events of those head moves are
// deleted too, the hole they leave in the feed must be named.
func TestSession_VerifyCatchesATailCutAgainstTheLog(t *testing.T) {
	t.Parallel()
	c, d := newDaemon(t)
	s := decode[kura.Session](t, c.mustPost("/v1/sessions", `{"project":"hashi","name":"cut"}`, 201))
	var ledgers []kura.Ledger
	var records []string
	for i := range 3 {
		r := decode[kura.Record](t, c.mustPost("/v1/records", fmt.Sprintf(`{"type":"agent.thought","content":{"step":%d},"author_id":"agent:bmo"}`, i), 201))
		records = append(records, r.ID)
		parents := "[]"
		expected := "null"
		if i > 0 {
			parents = `["` + ledgers[i-1].ID + `"]`
			expected = `"` + ledgers[i-1].ID + `"`
		}
		l := decode[kura.Ledger](t, c.mustPost("/v1/ledgers", `{"label":"step","parent_ids":`+parents+`,"record_ids":["`+r.ID+`"]}`, 201))
		ledgers = append(ledgers, l)
		c.mustPost("/v1/sessions/"+s.ID+"/head", `{"ledger_id":"`+l.ID+`","expected_head":`+expected+`}`, 200)
	}
	verify := func() kura.SessionVerification {
		t.Helper()
		return decode[kura.SessionVerification](t, c.mustGet("/v1/sessions/"+s.ID+"/verify"))
	}
	v := verify()
	if !v.OK || v.LogHead == nil || !v.LogHead.Checked || v.LogHead.LedgerID != ledgers[2].ID || v.LogHead.HeadHash != ledgers[2].Hash {
		t.Fatalf("untouched session: verify %+v (log head %+v), want ok with the log naming ledger %s", v, v.LogHead, ledgers[2].ID)
	}
	headSeq := v.LogHead.Seq

	raw := d.RawDB(t)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := raw.Exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("UPDATE sessions SET head_ledger_id = ? WHERE id = ?", ledgers[0].ID, s.ID)
	for _, i := range []int{2, 1} {
		exec("DELETE FROM session_reflog WHERE session_id = ? AND to_ledger_id = ?", s.ID, ledgers[i].ID)
		exec("DELETE FROM ledger_parents WHERE ledger_id = ?", ledgers[i].ID)
		exec("DELETE FROM ledger_records WHERE ledger_id = ?", ledgers[i].ID)
		exec("DELETE FROM ledgers WHERE id = ?", ledgers[i].ID)
		exec("DELETE FROM records WHERE id = ?", records[i])
	}
	// What the cut left is a consistent history: its ledger and its one
	// signed head move verify.
	if st, _, _ := c.get("/v1/ledgers/" + ledgers[2].ID); st != 404 {
		t.Fatalf("GET the cut ledger: %d, want 404", st)
	}
	if lv := decode[kura.Verification](t, c.mustGet("/v1/ledgers/"+ledgers[0].ID+"/verify")); !lv.OK {
		t.Fatalf("the ledger left: %+v", lv)
	}
	v = verify()
	if v.OK || !hasProblem(v, "log_head", "seq "+fmt.Sprint(headSeq)+") is to ledger "+ledgers[2].ID) {
		t.Fatalf("after the cut: verify %+v, want a log_head problem naming the cut head %s", v, ledgers[2].ID)
	}
	for _, p := range v.Problems {
		if p.Field != "log_head" {
			t.Errorf("after the cut: problem %+v; only the log should tell", p)
		}
	}

	// The events of the two cut head moves deleted as well: the newest
	// move the feed still holds is to the head left, but the log holds
	// leaves the feed no longer has after it.
	exec("DELETE FROM events WHERE type = 'session.head' AND (refs LIKE ? OR refs LIKE ?)", "%"+ledgers[1].ID+"%", "%"+ledgers[2].ID+"%")
	v = verify()
	if v.OK || !hasProblem(v, "log_head", "are missing from the feed (deleted, not compacted)") {
		t.Fatalf("after deleting the head moves' events: verify %+v, want the hole named", v)
	}
}

// TestSession_VerifyLogHeadFollowsHonestMoves: a head moved back through
// the API, and a session that never moved, verify; the log's newest head
// move is the one the session shows.
func TestSession_VerifyLogHeadFollowsHonestMoves(t *testing.T) {
	t.Parallel()
	c, _ := newDaemon(t)
	s := decode[kura.Session](t, c.mustPost("/v1/sessions", `{"project":"hashi","name":"back"}`, 201))
	v := decode[kura.SessionVerification](t, c.mustGet("/v1/sessions/"+s.ID+"/verify"))
	if !v.OK || v.LogHead == nil || !v.LogHead.Checked || v.LogHead.Seq != 0 {
		t.Fatalf("a session with no head: %+v (log head %+v)", v, v.LogHead)
	}
	r := decode[kura.Record](t, c.mustPost("/v1/records", `{"type":"agent.thought","content":"a","author_id":"agent:bmo"}`, 201))
	a := decode[kura.Ledger](t, c.mustPost("/v1/ledgers", `{"label":"a","parent_ids":[],"record_ids":["`+r.ID+`"]}`, 201))
	b := decode[kura.Ledger](t, c.mustPost("/v1/ledgers", `{"label":"b","parent_ids":["`+a.ID+`"],"record_ids":["`+r.ID+`"]}`, 201))
	c.mustPost("/v1/sessions/"+s.ID+"/head", `{"ledger_id":"`+a.ID+`","expected_head":null}`, 200)
	c.mustPost("/v1/sessions/"+s.ID+"/head", `{"ledger_id":"`+b.ID+`","expected_head":"`+a.ID+`"}`, 200)
	c.mustPost("/v1/sessions/"+s.ID+"/head", `{"ledger_id":"`+a.ID+`","expected_head":"`+b.ID+`","reason":"undo"}`, 200)
	v = decode[kura.SessionVerification](t, c.mustGet("/v1/sessions/"+s.ID+"/verify"))
	if !v.OK || v.LogHead == nil || v.LogHead.LedgerID != a.ID || v.LogHead.HeadHash != a.Hash {
		t.Fatalf("a head moved back through the API: %+v (log head %+v), want ok naming %s", v, v.LogHead, a.ID)
	}
}

func hasProblem(v kura.SessionVerification, field, detail string) bool {
	for _, p := range v.Problems {
		if p.Field == field && strings.Contains(p.Detail, detail) {
			return true
		}
	}
	return false
}
