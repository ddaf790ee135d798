package ui_test

import (
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kura-memory/kura/internal/kuradtest"
)

// knowledge writes the two entries of the API guide into knowledge base
// "knowledge" and changes Uniswap's value once (two versions).
func knowledge(t *testing.T, base string) {
	t.Helper()
	call(t, http.MethodPut, base, "/v1/kb/knowledge/entries", `{"identifier":"Uniswap contract addresses on Ethereum mainnet.","keys":["Uniswap","Contract Address","Dex"],"value":"Pool: 0x123, Router: 0x456"}`, "", http.StatusCreated)
	call(t, http.MethodPut, base, "/v1/kb/knowledge/entries", `{"identifier":"AAVE contract addresses on Ethereum mainnet.","keys":["AAVE","Lending"],"value":"Pool: 0xaaa"}`, "", http.StatusCreated)
	call(t, http.MethodPatch, base, "/v1/kb/knowledge/entries", `{"identifier":"Uniswap contract addresses on Ethereum mainnet.","value":"Pool: 0x789, Router: 0x456"}`, "", http.StatusOK)
}

// TestConsole_KBEntriesSearchLookup lists a knowledge base's entries and
// count, ranks a misspelt question with its score and reasons, and shows
// the lookup text a model would get.
func TestConsole_KBEntriesSearchLookup(t *testing.T) {
	t.Parallel()
	base := kuradtest.Start(t)
	knowledge(t, base)
	p := openConsole(t, base, "/kb/knowledge")
	p.waitFor(`document.querySelectorAll("#kb-entries table tbody tr").length === 2`)
	if got := p.text("#kb-entries tbody"); !contains(got, "Uniswap contract addresses") || !contains(got, "Pool: 0x789") || !contains(got, "Lending") {
		t.Errorf("entries = %q", got)
	}
	p.waitFor(`document.querySelector("#kb-stats strong") !== null`)
	if got := p.text("#kb-stats"); !contains(got, "2 entries") {
		t.Errorf("stats = %q", got)
	}

	p.do(chromedp.SendKeys(chromedp.CSS(`#kb-search-form input`), "uniswop router\r"))
	p.waitFor(`document.querySelectorAll("#kb-search table tbody tr").length >= 1`)
	first := eval[string](p, `document.querySelector("#kb-search tbody tr").innerText`)
	for _, w := range []string{"Uniswap contract addresses", "typo_match: uniswop ~ uniswap", "value_match: router"} {
		if !contains(first, w) {
			t.Errorf("best result = %q, lacks %q", first, w)
		}
	}
	if s := eval[string](p, `document.querySelector("#kb-search .score").textContent`); s == "" || s == "0" {
		t.Errorf("score = %q", s)
	}

	p.do(chromedp.SendKeys(chromedp.CSS(`#kb-lookup-form input`), "Uniswap\r"))
	p.waitFor(`document.querySelector("#kb-lookup pre") !== null`)
	if got := p.text("#kb-lookup pre"); !contains(got, "--- Uniswap contract addresses on Ethereum mainnet. ---") || !contains(got, "Pool: 0x789, Router: 0x456") {
		t.Errorf("lookup text = %q", got)
	}
	if got := p.text("#kb-lookup"); !contains(got, "1 strict match") {
		t.Errorf("lookup counts = %q", got)
	}
}

// TestConsole_KBEntryHistory opens an entry from the list and finds every
// version, then a deleted entry's tombstone.
func TestConsole_KBEntryHistory(t *testing.T) {
	t.Parallel()
	base := kuradtest.Start(t)
	knowledge(t, base)
	p := openConsole(t, base, "/kb/knowledge")
	p.waitFor(`document.querySelector("#kb-entries a") !== null`)
	p.do(chromedp.Click(chromedp.CSS(`#kb-entries tbody tr:first-child a`)))
	p.waitFor(`document.querySelectorAll("main table.history tbody tr").length === 2`)
	if got := p.text("#kb-entry"); !contains(got, "Current version 2") || !contains(got, "Pool: 0x789") {
		t.Errorf("entry = %q", got)
	}
	rows := eval[[]string](p, `[...document.querySelectorAll("main table.history tbody tr")].map(tr => tr.innerText)`)
	if !contains(rows[0], "put") || !contains(rows[0], "Pool: 0x123") || !contains(rows[1], "update") || !contains(rows[1], "Pool: 0x789") {
		t.Errorf("history = %q", rows)
	}

	call(t, http.MethodDelete, base, "/v1/kb/knowledge/entries?identifier=AAVE+contract+addresses+on+Ethereum+mainnet.", "", "", http.StatusOK)
	p.navigate("/kb/knowledge/entries/AAVE contract addresses on Ethereum mainnet.")
	p.waitFor(`document.querySelectorAll("main table.history tbody tr").length === 2`)
	if got := p.text("#kb-entry"); !contains(got, "deleted") {
		t.Errorf("deleted entry shows %q", got)
	}
	if got := p.text("main table.history tbody"); !contains(got, "delete") || !contains(got, "tombstone") {
		t.Errorf("history = %q", got)
	}
	p.navigate("/kb")
	p.waitFor(`document.querySelector('#recent-kbs a[href="#/kb/knowledge"]') !== null`)
}
