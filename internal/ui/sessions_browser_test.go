package ui_test

import (
	"database/sql"
	"fmt"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	_ "modernc.org/sqlite"

	"github.com/kura-memory/kura/internal/kuradtest"
)

// chain is a session seeded through the API: its id and every turn's
// ledgers and output records, oldest first.
type chain struct {
	session string
	ctx     []string // context ledger ids
	out     []string // output ledger ids
	outRecs [][]string
}

// seedSession creates project/name with n turns, each opened with a
// context record, claimed, appended to and closed, as an agent would.
func seedSession(t *testing.T, base, token, project, name string, n int) chain {
	t.Helper()
	s := call(t, http.MethodPost, base, "/v1/sessions", fmt.Sprintf(`{"project":%q,"name":%q}`, project, name), token, http.StatusCreated)
	c := chain{session: s["id"].(string)}
	for i := 1; i <= n; i++ {
		turn := call(t, http.MethodPost, base, "/v1/sessions/"+c.session+"/turns", fmt.Sprintf(
			`{"instruction":{"content":"step %d: plan the API","author_id":"user:oles"},
			  "context":[{"type":"sys.context","content":{"repo":"kura","step":%d},"author_id":"agent:bmo"}]}`, i, i), token, http.StatusCreated)
		tid := turn["id"].(string)
		c.ctx = append(c.ctx, turn["context_ledger_id"].(string))
		call(t, http.MethodPost, base, "/v1/turns/"+tid+"/claim", `{"worker":"agent:bmo","lease_seconds":60}`, token, http.StatusOK)
		call(t, http.MethodPost, base, "/v1/turns/"+tid+"/records", fmt.Sprintf(
			`{"epoch":1,"records":[{"type":"agent.thought","content":{"text":"REST feels clean, step %d"},"author_id":"agent:bmo"},
			  {"type":"task.deliverable","content":{"summary":"plan %d done"},"author_id":"agent:bmo"}]}`, i, i), token, http.StatusOK)
		closed := call(t, http.MethodPost, base, "/v1/turns/"+tid+"/close", `{"epoch":1,"status":"complete"}`, token, http.StatusOK)
		c.out = append(c.out, closed["output_ledger_id"].(string))
		var recs []string
		for _, r := range closed["output_record_ids"].([]any) {
			recs = append(recs, r.(string))
		}
		c.outRecs = append(c.outRecs, recs)
	}
	return c
}

// chainIDs is the set of ledger ids GET /v1/sessions/{id}/log lists.
func chainIDs(t *testing.T, base, token, session string) []string {
	t.Helper()
	var ids []string
	cursor := ""
	for {
		page := call(t, http.MethodGet, base, "/v1/sessions/"+session+"/log?limit=2&cursor="+cursor, "", token, http.StatusOK)
		for _, l := range page["ledgers"].([]any) {
			ids = append(ids, l.(map[string]any)["id"].(string))
		}
		next, _ := page["next_cursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	sort.Strings(ids)
	return ids
}

// shownLedgers is the sorted set of data-kura-ledger values on the page.
func shownLedgers(p *page) []string {
	ids := eval[[]string](p, `[...document.querySelectorAll("[data-kura-ledger]")].map(e => e.dataset.kuraLedger)`)
	sort.Strings(ids)
	return ids
}

// TestConsole_SessionChainVerified (acceptance): a session of two turns
// shows its project/name, every ledger of its chain as a data-kura-ledger
// element (the same set as the API's session log), grouped by turn with
// the head moves, and data-kura-verify="ok".
func TestConsole_SessionChainVerified(t *testing.T) {
	t.Parallel()
	base := kuradtest.Start(t)
	c := seedSession(t, base, "", "hashi", "morning", 2)
	want := chainIDs(t, base, "", c.session)
	if len(want) != 4 {
		t.Fatalf("session log lists %d ledgers, want 4 (two turns)", len(want))
	}

	p := openConsole(t, base, "/sessions/"+c.session)
	p.waitFor(`document.querySelector("[data-kura-verify]") && document.querySelector("[data-kura-verify]").dataset.kuraVerify !== "pending" && document.querySelectorAll("[data-kura-ledger]").length > 0`)
	if got := p.text("main h1"); got != "hashi/morning" {
		t.Fatalf("heading = %q, want hashi/morning", got)
	}
	if got := eval[string](p, `document.querySelector("[data-kura-verify]").dataset.kuraVerify`); got != "ok" {
		t.Fatalf("data-kura-verify = %q, want ok; page: %s", got, p.text("main"))
	}
	if got := shownLedgers(p); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("ledgers shown %v, want the chain %v", got, want)
	}
	// Oldest first, each turn's context ledger then its output ledger,
	// each a link to its ledger view.
	order := eval[[]string](p, `[...document.querySelectorAll("[data-kura-ledger]")].map(e => e.dataset.kuraLedger)`)
	wantOrder := []string{c.ctx[0], c.out[0], c.ctx[1], c.out[1]}
	if strings.Join(order, ",") != strings.Join(wantOrder, ",") {
		t.Fatalf("timeline order %v, want %v", order, wantOrder)
	}
	turns := eval[[]string](p, `[...document.querySelectorAll(".timeline > li h3")].map(e => e.textContent)`)
	if len(turns) != 2 || !contains(turns[0], "Turn 1") || !contains(turns[1], "Turn 2") {
		t.Fatalf("turn headings %q", turns)
	}
	for _, id := range wantOrder {
		href := eval[string](p, `document.querySelector('[data-kura-ledger="`+id+`"] a').getAttribute("href")`)
		if href != "#/ledgers/"+id {
			t.Fatalf("ledger %s links to %q", id, href)
		}
	}
	// Four head moves (open, close, twice), each on the ledger it moved to.
	if n := eval[int](p, `document.querySelectorAll(".moves li").length`); n != 4 {
		t.Fatalf("%d head moves shown, want 4", n)
	}
	out1 := p.text(`[data-kura-ledger="` + c.out[0] + `"]`)
	if !contains(out1, "morning-turn-1-out") || !contains(out1, "2 records") || !contains(out1, "complete") || !contains(out1, "signed") {
		t.Fatalf("output ledger of turn 1 reads %q", out1)
	}
	if href := eval[string](p, `document.querySelector('a[href^="#/memory/"]').getAttribute("href")`); href != "#/memory/hashi" {
		t.Fatalf("scope link %q", href)
	}
}

// tamper edits a record's content in the kurad's database file, as an
// attacker with the file would, and checks the API now reports a problem.
func tamper(t *testing.T, d *kuradtest.Daemon, recordID string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(d.Config.DataDir, "kura.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.Exec(`UPDATE records SET content = ? WHERE id = ?`, `{"text":"forged"}`, recordID)
	if err != nil {
		t.Fatalf("tamper: %v", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("tamper changed %d rows", n)
	}
}

// TestConsole_SessionTamperedFails (acceptance): after a record on the
// chain is edited in the database file, the API's session verify reports
// it and a fresh load of the session view shows data-kura-verify="failed",
// with the problem and the ledger it concerns.
func TestConsole_SessionTamperedFails(t *testing.T) {
	t.Parallel()
	d := kuradtest.StartMain(t, kuradtest.Options{})
	base := d.BaseURL()
	c := seedSession(t, base, "", "hashi", "evening", 2)
	p := openConsole(t, base, "/sessions/"+c.session)
	p.waitFor(`document.querySelector('[data-kura-verify="ok"]') !== null`)

	tamper(t, d, c.outRecs[1][0])
	v := call(t, http.MethodGet, base, "/v1/sessions/"+c.session+"/verify", "", "", http.StatusOK)
	if v["ok"] != false || len(v["problems"].([]any)) == 0 {
		t.Fatalf("API verify after tampering: %v", v)
	}

	p.navigate("/sessions")
	p.navigate("/sessions/" + c.session)
	p.waitFor(`document.querySelector("[data-kura-verify]") && document.querySelector("[data-kura-verify]").dataset.kuraVerify !== "pending" && document.querySelectorAll("[data-kura-ledger]").length === 4`)
	if got := eval[string](p, `document.querySelector("[data-kura-verify]").dataset.kuraVerify`); got != "failed" {
		t.Fatalf("data-kura-verify = %q after tampering, want failed", got)
	}
	problems := p.text("main .problems")
	if !contains(problems, "ledger") || !contains(problems, c.out[1]) {
		t.Fatalf("problems shown %q, want the ledger %s named", problems, c.out[1])
	}
	if !contains(p.text(`[data-kura-ledger="`+c.out[1]+`"]`), "does not verify") {
		t.Fatalf("the tampered ledger is not marked")
	}
	if contains(p.text(`[data-kura-ledger="`+c.ctx[0]+`"]`), "does not verify") {
		t.Fatalf("an untouched ledger is marked")
	}
}

// TestConsole_SessionsListByProject: the list filters by project and pages.
func TestConsole_SessionsListByProject(t *testing.T) {
	t.Parallel()
	base := kuradtest.Start(t)
	for _, s := range []string{"hashi/a", "hashi/b", "other/c"} {
		pn := strings.SplitN(s, "/", 2)
		postJSON(t, base, "/v1/sessions", fmt.Sprintf(`{"project":%q,"name":%q}`, pn[0], pn[1]), http.StatusCreated)
	}
	p := openConsole(t, base, "/sessions")
	p.waitFor(`document.querySelectorAll("main table tbody tr").length === 3`)
	p.do(chromedp.SetValue(chromedp.CSS(`main input[name=project]`), "hashi"), chromedp.Click(chromedp.CSS(`main form button[type=submit]`)))
	p.waitFor(`location.hash === "#/sessions?project=hashi" && document.querySelectorAll("main table tbody tr").length === 2`)
	if got := p.text("main table tbody"); contains(got, "other/c") || !contains(got, "hashi/a") {
		t.Fatalf("filtered list %q", got)
	}
}

// TestConsole_SessionOnPhone: at a 390-px-wide viewport the session view
// (long hashes, ids and labels included) does not scroll sideways.
func TestConsole_SessionOnPhone(t *testing.T) {
	t.Parallel()
	base := kuradtest.Start(t)
	c := seedSession(t, base, "", "hashi", "a-rather-long-session-name-for-a-phone-screen", 2)
	p := openConsole(t, base, "/sessions")
	p.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	p.navigate("/sessions/" + c.session)
	p.waitFor(`document.querySelector('[data-kura-verify="ok"]') !== null && document.querySelectorAll("[data-kura-ledger]").length === 4`)
	if w := eval[int](p, `innerWidth`); w != 390 {
		t.Fatalf("viewport %d wide, want 390", w)
	}
	if sw, w := eval[int](p, `document.documentElement.scrollWidth`), eval[int](p, `innerWidth`); sw > w {
		t.Fatalf("the page is %d px wide in a %d px viewport", sw, w)
	}
}
