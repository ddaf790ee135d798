package ui_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kura-memory/kura/internal/kuradtest"
)

// seedLedger writes n records and a ledger of them; it returns the
// ledger's id and the record ids in order.
func seedLedger(t *testing.T, base, label string, n int, parents ...string) (string, []string) {
	t.Helper()
	var ids []string
	for i := 0; i < n; i++ {
		r := postJSON(t, base, "/v1/records", fmt.Sprintf(`{"type":"memory.fact","content":{"fact":"%s %d"},"author_id":"agent:bmo","metadata":{"project_id":"hashi"}}`, label, i), http.StatusCreated)
		ids = append(ids, r["id"].(string))
	}
	body := fmt.Sprintf(`{"label":%q,"parent_ids":[%s],"record_ids":["%s"]}`, label, quoteJoin(parents), strings.Join(ids, `","`))
	l := postJSON(t, base, "/v1/ledgers", body, http.StatusCreated)
	return l["id"].(string), ids
}

func quoteJoin(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = `"` + s + `"`
	}
	return strings.Join(q, ",")
}

// prove runs the page's proof check of a record with parts of the proof
// replaced (override is a JS object literal) and returns {ok, reason}.
func prove(p *page, recordID, override string) (bool, string) {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[map[string]any](`kuraProve("`+recordID+`", `+override+`)`, chromedp.EvalAwaitPromise))
	if err != nil {
		p.t.Fatalf("kuraProve: %v", err)
	}
	ok, _ := v["ok"].(bool)
	reason, _ := v["reason"].(string)
	return ok, reason
}

// TestConsole_Ledger: the ledger view lists the records in ledger order,
// its Verify button answers ok, every record's inclusion proof (a tree of
// five: left, right and carried-up nodes) checks in the browser, and a
// doctored proof is reported as failing.
func TestConsole_Ledger(t *testing.T) {
	t.Parallel()
	base := kuradtest.Start(t)
	parent, _ := seedLedger(t, base, "parent", 1)
	id, recs := seedLedger(t, base, "five", 5, parent)
	p := openConsole(t, base, "/ledgers/"+id)
	p.waitFor(`document.querySelectorAll("#ledger-records tbody tr").length === 5`)

	links := eval[[]string](p, `[...document.querySelectorAll("#ledger-records tbody tr a[href^='#/records/']")].map(a => a.getAttribute("href"))`)
	for i, r := range recs {
		if i >= len(links) || !strings.HasPrefix(links[i], "#/records/"+r) {
			t.Fatalf("row %d links %v, want record %s", i, links, r)
		}
	}
	if got := p.text("#ledger-records tbody tr:nth-child(3)"); !contains(got, "five 2") || !contains(got, "agent:bmo") {
		t.Fatalf("third row %q", got)
	}
	if href := eval[string](p, `document.querySelector("main dl a[href^='#/ledgers/']").getAttribute("href")`); href != "#/ledgers/"+parent {
		t.Fatalf("parent link %q", href)
	}

	p.do(chromedp.Click(chromedp.CSS("#verify-ledger")))
	p.waitFor(`document.querySelector('main [data-kura-verify="ok"]') !== null`)

	// One at a time: each answer changes the layout under the next button.
	for i := range recs {
		row := fmt.Sprintf("#ledger-records tbody tr:nth-child(%d)", i+1)
		p.do(chromedp.Click(chromedp.CSS(row + " .prove")))
		p.waitFor(`document.querySelector("` + row + ` [data-kura-proof]") !== null`)
	}
	p.waitFor(`document.querySelectorAll('[data-kura-proof="ok"]').length === 5`)
	if got := p.text("#ledger-records tbody tr:nth-child(5) .proof"); !contains(got, "Tree size") || !contains(got, "5") || !contains(got, "included") {
		t.Fatalf("proof panel %q", got)
	}

	if ok, why := prove(p, recs[1], "{}"); !ok {
		t.Fatalf("the page's check of an untouched proof fails: %s", why)
	}
	for _, c := range []struct{ name, override, why string }{
		{"wrong sibling", `{audit_path: ["00".repeat(32), "11".repeat(32), "22".repeat(32)]}`, "not to the ledger's root"},
		{"path too short", `{audit_path: []}`, "too short"},
		{"other leaf", `{leaf_index: 0}`, "not to the ledger's root"},
		{"leaf outside", `{leaf_index: 9}`, "not inside"},
		{"other tree", `{tree_size: 4}`, "the ledger holds 5"},
	} {
		if ok, why := prove(p, recs[1], c.override); ok || !contains(why, c.why) {
			t.Errorf("%s: ok=%v %q, want a failure saying %q", c.name, ok, why, c.why)
		}
	}
}

// TestConsole_LedgerDiff: the diff against another ledger lists what was
// added and removed, and the count in common.
func TestConsole_LedgerDiff(t *testing.T) {
	t.Parallel()
	base := kuradtest.Start(t)
	a, ra := seedLedger(t, base, "a", 2)
	r := postJSON(t, base, "/v1/records", `{"type":"agent.thought","content":"only in b","author_id":"agent:bmo"}`, http.StatusCreated)
	b := postJSON(t, base, "/v1/ledgers", fmt.Sprintf(`{"label":"b","parent_ids":[],"record_ids":["%s","%s"]}`, ra[0], r["id"]), http.StatusCreated)["id"].(string)

	p := openConsole(t, base, "/ledgers/"+a)
	p.waitFor(`document.querySelectorAll("#ledger-records tbody tr").length === 2`)
	p.do(chromedp.SetValue(chromedp.CSS("main input[name=other]"), b), chromedp.Click(chromedp.CSS("main form button[type=submit]")))
	p.waitFor(`document.querySelector(".diff-added li") !== null`)
	added, removed := p.text(".diff-added"), p.text(".diff-removed")
	if !contains(added, r["id"].(string)) || !contains(added, "(1)") || contains(added, ra[0]) {
		t.Fatalf("added: %q", added)
	}
	if !contains(removed, ra[1]) || !contains(removed, "(1)") {
		t.Fatalf("removed: %q", removed)
	}
	if !contains(p.text("main"), "1 record(s) in common") {
		t.Fatalf("common count missing")
	}
}
