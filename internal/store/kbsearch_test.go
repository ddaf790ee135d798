package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/kb"
	"github.com/kura-memory/kura/internal/kb/kbtest"
	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/recall"
	"github.com/kura-memory/kura/internal/store"
)

// The entries the ranking tests ask about, and the filler that makes
// "contract", "addresses" and "runbook" common words.
var (
	v3Router = kura.KBEntryInput{Identifier: "Uniswap V3 router contract addresses", Keys: []string{"Uniswap", "Router"},
		Value: "SwapRouter02: 0x68b3465833fb72A70ecDF485E0e4C7bD8665Fc45"}
	support = kura.KBEntryInput{Identifier: "Support group meetings", Keys: []string{"Caroline"},
		Value: "Caroline went to the LGBTQ support group on 7 May 2023."}
	runbook = kura.KBEntryInput{Identifier: "Deployment runbook for the payments service", Keys: []string{"Runbook", "Payments"},
		Value: "Steps: drain the queue, deploy, verify the health checks."}
	kalovend = kura.KBEntryInput{Identifier: "Kalovend oracle feeds", Keys: []string{"Kalovend"},
		Value: "Feeds: ETH/USD 0x1, BTC/USD 0x2."}
	release = kura.KBEntryInput{Identifier: "Release notes 2023", Keys: []string{"Releases"}, Value: "Version 4 shipped in March."}
)

func rankSeed(tb testing.TB, db *store.DB) {
	tb.Helper()
	batch := []kura.KBEntryInput{kbtest.Uniswap, kbtest.AAVE, v3Router, support, runbook, kalovend, release}
	for i := range 20 {
		batch = append(batch, kura.KBEntryInput{Identifier: fmt.Sprintf("Contract addresses of token %d", i), Keys: []string{"Contract Address"},
			Value: fmt.Sprintf("Token: 0x%04x; see the runbook before changing it.", i)})
	}
	if _, err := db.PutKBEntries(context.Background(), "r", batch); err != nil {
		tb.Fatal(err)
	}
	// Another scope holds an entry every question below would find.
	mustKB(tb, db, "r", kura.KBEntryInput{Scope: "alt", Identifier: "Uniswap router Kalovend Caroline secrets", Value: "support group runbook"})
}

func search(tb testing.TB, db *store.DB, scope, q string, limit int) []kura.KBHit {
	tb.Helper()
	p, err := db.SearchKB(context.Background(), "r", kura.KBSearch{Scope: scope, Q: q, Limit: limit})
	if err != nil {
		tb.Fatalf("search %q: %v", q, err)
	}
	return p.Entries
}

func hitIdents(hs []kura.KBHit) []string {
	out := []string{}
	for _, h := range hs {
		out = append(out, h.Identifier)
	}
	return out
}

func reason(h kura.KBHit, code string) string {
	for _, r := range h.Reasons {
		if r.Code == code {
			return r.Detail
		}
	}
	return ""
}

// TestKB_Search: ranking, stemming, stop words, rare words, typos and
// explanations, question by question.
func TestKB_Search(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	rankSeed(t, db)
	tests := []struct {
		name    string
		q       string
		first   []string          // the first entries, in order
		reasons map[string]string // reasons of the first entry: code -> detail
		none    bool              // nothing at all
	}{
		{"ModelQuestion", "what is the uniswap router address", []string{v3Router.Identifier, kbtest.Uniswap.Identifier},
			map[string]string{"identifier_match": "uniswap, router, address (addresses)", "key_match": "uniswap, router"}, false},
		{"Stems", "Uniswap routers", []string{v3Router.Identifier},
			map[string]string{"identifier_match": "uniswap, routers (router)", "key_match": "uniswap, routers (Router)"}, false},
		{"RareWordsWeighMore", "kalovend contract", []string{kalovend.Identifier},
			map[string]string{"identifier_match": "kalovend", "key_match": "kalovend"}, false},
		{"NotEveryWordNeeded", "uniswap solana", []string{v3Router.Identifier, kbtest.Uniswap.Identifier}, nil, false},
		{"NaturalQuestion", "When did Caroline go to the support group?", []string{support.Identifier},
			map[string]string{"identifier_match": "support, group", "key_match": "caroline"}, false},
		{"Typo", "kalovnd feeds", []string{kalovend.Identifier},
			map[string]string{"identifier_match": "kalovend, feeds", "typo_match": "kalovnd ~ kalovend"}, false},
		{"TypoTwoEdits", "deploymnet runbok", []string{runbook.Identifier},
			map[string]string{"typo_match": "deploymnet ~ deployment"}, false},
		{"NumbersAreNotTypos", "release notes 2024", []string{release.Identifier},
			map[string]string{"identifier_match": "release, notes"}, false},
		{"ValueOnly", "swaprouter02", []string{v3Router.Identifier}, map[string]string{"value_match": "swaprouter02"}, false}, // case alone is no other form
		{"NothingRelevant", "zebra quantum", nil, nil, true},
		{"OnlyStopWordsStillSearch", "the", []string{runbook.Identifier}, map[string]string{"identifier_match": "the"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hits := search(t, db, "", tc.q, 0)
			if tc.none {
				if len(hits) != 0 {
					t.Fatalf("got %q, want nothing", hitIdents(hits))
				}
				return
			}
			if got := hitIdents(hits); len(got) < len(tc.first) || !slices.Equal(got[:len(tc.first)], tc.first) {
				t.Fatalf("got %q, want first %q", got, tc.first)
			}
			for code, want := range tc.reasons {
				if got := reason(hits[0], code); got != want {
					t.Errorf("%s: got %q, want %q (all: %+v)", code, got, want, hits[0].Reasons)
				}
			}
			for i, h := range hits {
				if i > 0 && h.Score > hits[i-1].Score {
					t.Errorf("not best first: %v after %v", h.Score, hits[i-1].Score)
				}
				if h.Score <= 0 || len(h.Reasons) == 0 || h.Scope != "" || h.ID == "" {
					t.Errorf("hit %d: %+v", i, h)
				}
				if strings.Contains(h.Identifier, "secrets") {
					t.Errorf("another scope's entry: %q", h.Identifier)
				}
			}
		})
	}
	// Stop words weigh nothing: the same question without them scores
	// the same; so does a stem's other form.
	for _, pair := range [][2]string{
		{"what is the kalovend oracle", "kalovend oracle"},
		{"addresses of uniswap", "address uniswap"},
	} {
		a, b := search(t, db, "", pair[0], 0), search(t, db, "", pair[1], 0)
		if !slices.Equal(hitIdents(a), hitIdents(b)) || a[0].Score != b[0].Score {
			t.Errorf("%q and %q rank differently: %v %v / %v %v", pair[0], pair[1], hitIdents(a), a[0].Score, hitIdents(b), b[0].Score)
		}
	}
	// The limit cuts the ranking; the other scope sees only its own.
	if hits := search(t, db, "", "contract addresses", 3); len(hits) != 3 {
		t.Errorf("limit 3: got %d", len(hits))
	}
	if hits := search(t, db, "alt", "uniswap router", 0); !slices.Equal(hitIdents(hits), []string{"Uniswap router Kalovend Caroline secrets"}) || hits[0].Scope != "alt" {
		t.Errorf("scope alt: got %+v", hits)
	}
	if hits := search(t, db, "nope", "uniswap", 0); len(hits) != 0 {
		t.Errorf("unknown scope: %q", hitIdents(hits))
	}
	if p, err := db.SearchKB(context.Background(), "unknown", kura.KBSearch{Q: "uniswap"}); err != nil || len(p.Entries) != 0 || p.Entries == nil {
		t.Errorf("unknown kb: %+v, %v", p, err)
	}
	for _, bad := range []struct{ name, scope string }{{"Bad Name", ""}, {"r", "Bad Scope"}} {
		if _, err := db.SearchKB(context.Background(), bad.name, kura.KBSearch{Scope: bad.scope, Q: "x"}); kura.ErrorCode(err) != kura.EInvalid {
			t.Errorf("kb %q scope %q: %v, want invalid_argument", bad.name, bad.scope, err)
		}
	}
}

// TestKB_LookupRanked: the strict matches come first, exactly as the
// strict mode gives them, then the best-ranked others.
func TestKB_LookupRanked(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	rankSeed(t, db)
	ctx := context.Background()
	lookup := func(q string, limit int, mode string) *kura.KBLookupResult {
		t.Helper()
		res, err := db.LookupKB(ctx, "r", kura.KBLookup{Q: q, Limit: limit, Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	tests := []struct {
		q      string
		strict []string
		ranked []string // the first ranked entries
	}{
		{"Uniswap router", []string{v3Router.Identifier}, []string{kbtest.Uniswap.Identifier}},
		{"what is the uniswap router address", nil, []string{v3Router.Identifier, kbtest.Uniswap.Identifier}},
		{"kalovnd", nil, []string{kalovend.Identifier}},
		{"Caroline", []string{support.Identifier}, nil}, // a key: the key fallback is strict
	}
	for _, tc := range tests {
		res := lookup(tc.q, 0, "")
		strict := lookup(tc.q, 0, kura.KBLookupStrict)
		if !slices.Equal(idents(res.Strict), idents(strict.Strict)) || res.Count != strict.Count || len(strict.Ranked) != 0 {
			t.Errorf("%q: strict part %q (%d), strict mode %q (%d, %d ranked)", tc.q, idents(res.Strict), res.Count, idents(strict.Strict), strict.Count, len(strict.Ranked))
		}
		if want := append([]string{}, tc.strict...); !slices.Equal(idents(res.Strict), want) {
			t.Errorf("%q: strict %q, want %q", tc.q, idents(res.Strict), want)
		}
		got := hitIdents(res.Ranked)
		if len(got) < len(tc.ranked) || !slices.Equal(got[:len(tc.ranked)], tc.ranked) {
			t.Errorf("%q: ranked %q, want first %q", tc.q, got, tc.ranked)
		}
		for _, h := range res.Ranked {
			if slices.Contains(tc.strict, h.Identifier) {
				t.Errorf("%q: %q is both strict and ranked", tc.q, h.Identifier)
			}
		}
	}
	// A page full of strict matches ranks nothing.
	if res := lookup("contract addresses", 5, ""); len(res.Strict) != 5 || res.Count != 23 || len(res.Ranked) != 0 {
		t.Errorf("full page: %d strict of %d, %d ranked", len(res.Strict), res.Count, len(res.Ranked))
	}
	// The floor: an entry holding only a common word does not follow the
	// entries holding the rare ones, though the page has room.
	res := lookup("kalovend runbook", 0, "")
	if got := hitIdents(res.Ranked); len(got) == 0 || got[0] != kalovend.Identifier || slices.Contains(got, "Contract addresses of token 3") {
		t.Errorf("kalovend runbook: ranked %q", got)
	}
	// Nothing relevant at all: nothing, in both modes.
	if res := lookup("zebra quantum", 0, ""); res.Count != 0 || len(res.Ranked) != 0 {
		t.Errorf("zebra quantum: %+v", res)
	}
}

// TestKB_SearchFollowsWrites: the ranking index changes with the entry,
// in the same transaction: put, batch replace, patch, delete, clear.
func TestKB_SearchFollowsWrites(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	find := func(q string) []string { t.Helper(); return hitIdents(search(t, db, "", q, 0)) }
	mustKB(t, db, "r", kura.KBEntryInput{Identifier: "Zephyr widget manual", Keys: []string{"Widgets"}, Value: "wombat"})
	if got := find("zephyr"); !slices.Equal(got, []string{"Zephyr widget manual"}) {
		t.Fatalf("after put: %q", got)
	}
	if _, err := db.PutKBEntries(ctx, "r", []kura.KBEntryInput{{Identifier: "Zephyr widget manual", Keys: []string{"Gadgets"}, Value: "quokka"}}); err != nil {
		t.Fatal(err)
	}
	if got, old, oldKey := find("quokka"), find("wombat"), find("widgets"); len(got) != 1 || len(old) != 0 || len(oldKey) != 1 {
		// "widgets" still finds the entry: its identifier holds "widget".
		t.Fatalf("after a replace: quokka %q, wombat %q, widgets %q", got, old, oldKey)
	}
	v := "numbat"
	if _, err := db.UpdateKBEntry(ctx, "r", &kura.KBPatch{Identifier: "Zephyr widget manual", Value: &v, Keys: []string{"Marsupials"}}); err != nil {
		t.Fatal(err)
	}
	if got, old := find("numbat marsupial"), find("quokka gadgets"); len(got) != 1 || len(old) != 0 {
		t.Fatalf("after a patch: new %q, old %q", got, old)
	}
	if h := search(t, db, "", "marsupial", 0); len(h) != 1 || reason(h[0], "key_match") != "marsupial (Marsupials)" {
		t.Fatalf("patched keys: %+v", h)
	}
	if _, err := db.DeleteKBEntry(ctx, "r", "", "Zephyr widget manual"); err != nil {
		t.Fatal(err)
	}
	if got := find("zephyr numbat"); len(got) != 0 {
		t.Fatalf("after a delete: %q", got)
	}
	mustKB(t, db, "r", kura.KBEntryInput{Identifier: "Zephyr again", Value: "v"})
	mustKB(t, db, "r", kura.KBEntryInput{Scope: "alt", Identifier: "Zephyr elsewhere", Value: "v"})
	if _, err := db.ClearKB(ctx, "r", ""); err != nil {
		t.Fatal(err)
	}
	if got, alt := find("zephyr"), hitIdents(search(t, db, "alt", "zephyr", 0)); len(got) != 0 || !slices.Equal(alt, []string{"Zephyr elsewhere"}) {
		t.Fatalf("after a clear: %q, other scope %q", got, alt)
	}
	if drift, err := db.KBIndexDrift(); err != nil || len(drift) > 0 {
		t.Fatalf("indexes (%v):\n%s", err, strings.Join(drift, "\n"))
	}
}

// TestKB_SearchBoundedPaths takes the paths a large knowledge base takes,
// with the budget and sample lowered: rare words ranked by bm25() when they
// find more entries than the page, common words re-ranking them, and
// common words finding entries alone when no rare word does.
func TestKB_SearchBoundedPaths(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	db.SetKBRankBounds(40, 30)
	var batch []kura.KBEntryInput
	for i := range 150 {
		id := fmt.Sprintf("Widget %d handbook", i)
		v := "spare parts list"
		switch {
		case i%3 == 0:
			id = fmt.Sprintf("Gizmo %d manual", i)
		case i == 100:
			id = "Widget special handbook"
		}
		if i%10 == 0 {
			v = "calibration procedure for the widget"
		}
		batch = append(batch, kura.KBEntryInput{Identifier: id, Value: v})
	}
	if _, err := db.PutKBEntries(context.Background(), "r", batch); err != nil {
		t.Fatal(err)
	}
	// "special" is rare and finds one entry; "handbook" (100 entries) is
	// common here, and only re-ranks.
	if got := hitIdents(search(t, db, "", "special handbook", 0)); len(got) == 0 || got[0] != "Widget special handbook" {
		t.Errorf("special handbook: %q", got)
	}
	// Only common words: entries holding all of them in the identifier
	// come first.
	hits := search(t, db, "", "widget handbook", 10)
	if len(hits) != 10 {
		t.Fatalf("widget handbook: %d hits", len(hits))
	}
	for _, h := range hits {
		if reason(h, "identifier_match") != "widget, handbook" {
			t.Errorf("widget handbook: %q (%+v) among the first ten", h.Identifier, h.Reasons)
		}
	}
	// A common word in the value and a rare one in the identifier.
	if got := hitIdents(search(t, db, "", "calibration gizmo 30", 0)); len(got) == 0 || got[0] != "Gizmo 30 manual" {
		t.Errorf("calibration gizmo 30: %q", got)
	}
	// More rare entries than the page: bm25() picks which to score.
	db.SetKBRankBounds(200, 30)
	if got := hitIdents(search(t, db, "", "special handbook", 5)); len(got) != 5 || got[0] != "Widget special handbook" {
		t.Errorf("special handbook, budget 200: %q", got)
	}
}

// TestKB_SearchMatchesBruteForce: when every word of a question is rare
// enough to be ranked in full, the answer is exactly BM25 computed over
// every entry of the scope by the rules of internal/kb: the same entries,
// the same scores, the same order. Random content from the KB workload
// (multi-byte words, case variants, punctuation), random questions.
func TestKB_SearchMatchesBruteForce(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(11, 13))
	w := kbtest.Workload{R: rng}
	var ref kb.Base
	for range 3 {
		var batch []kura.KBEntryInput
		for range 40 {
			in := kura.KBEntryInput{Scope: []string{"", "alt"}[rng.IntN(2)], Identifier: w.Identifier(), Keys: w.Keys(3), Value: w.Value()}
			batch = append(batch, in)
		}
		if _, err := db.PutKBEntries(ctx, "r", batch); err != nil {
			t.Fatal(err)
		}
		for _, in := range batch {
			ref.Scope(in.Scope).Insert(in.Identifier, in.Keys, in.Value)
		}
	}
	for range 60 {
		scope := []string{"", "alt"}[rng.IntN(2)]
		q := w.Text(1 + rng.IntN(3))
		limit := 1 + rng.IntN(30)
		want := bruteForce(ref.Scope(scope).Entries(), q)
		got := search(t, db, scope, q, 1000)
		if len(got) != len(want) {
			t.Fatalf("%q in %q: got %d hits %q, want %d %v", q, scope, len(got), hitIdents(got), len(want), want)
		}
		for i := range want {
			if got[i].Identifier != want[i].identifier || got[i].Score != want[i].score {
				t.Fatalf("%q in %q: hit %d is %q %v, want %q %v", q, scope, i, got[i].Identifier, got[i].Score, want[i].identifier, want[i].score)
			}
		}
		if short := search(t, db, scope, q, limit); !slices.Equal(hitIdents(short), hitIdents(got)[:min(limit, len(got))]) {
			t.Fatalf("%q limit %d: %q, want the first of %q", q, limit, hitIdents(short), hitIdents(got))
		}
	}
}

type refHit struct {
	identifier string
	score      float64
	pos        int
}

// bruteForce ranks every entry for q by kb's BM25 over every entry.
func bruteForce(entries []kura.KBEntry, q string) []refHit {
	var terms []kb.Term
	seen := map[string]bool{}
	for _, w := range recall.QueryTerms(q) {
		t := kb.NewTerm(w, w)
		if !seen[t.Form()] && t.Form() != "" {
			seen[t.Form()] = true
			terms = append(terms, t)
		}
	}
	occ := make([]kb.Occurrences, len(entries))
	n := make([]int, len(terms))
	for i := range entries {
		occ[i] = kb.Occur(&entries[i], terms)
		for j := range terms {
			if occ[i].Matched(j) {
				n[j]++
			}
		}
	}
	var hits []refHit
	length := 0
	var matched []int
	for i := range entries {
		for j := range terms {
			if occ[i].Matched(j) {
				matched = append(matched, i)
				length += occ[i].Length
				break
			}
		}
	}
	for _, i := range matched {
		s := 0.0
		for j := range terms {
			s += occ[i].TermScore(j, kb.IDF(n[j], len(entries)), float64(length)/float64(len(matched)))
		}
		hits = append(hits, refHit{entries[i].Identifier, kb.RoundScore(s), i})
	}
	slices.SortStableFunc(hits, func(a, b refHit) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return a.pos - b.pos
	})
	return hits
}

// FuzzKB_Search asks any question of a small knowledge base: the ranking
// never fails, never finds an entry without saying why, and answers best
// first; a lookup's ranked entries never repeat its strict matches.
func FuzzKB_Search(f *testing.F) {
	for _, q := range []string{"what is the uniswap router address", `"quoted" AND NEAR(a b) col:x * ^ OR NOT`,
		"uniswop", "東京タワー", "ΟΔΟΣ \u212a", "café\u0301", "\x00\xff", strings.Repeat("a", 70), strings.Repeat("word ", 40),
		"🚀 rocket", "١٢٣ 2023", "x²", "'; DROP TABLE kb_entries; --", "the the the"} {
		f.Add(q)
	}
	db := MustOpenStore(f)
	rankSeed(f, db)
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, q string) {
		hits := search(t, db, "", q, 0)
		for i, h := range hits {
			if len(h.Reasons) == 0 || h.Score <= 0 || i > 0 && h.Score > hits[i-1].Score {
				t.Fatalf("%q: hit %d %+v", q, i, h)
			}
		}
		res, err := db.LookupKB(ctx, "r", kura.KBLookup{Q: q})
		if err != nil {
			t.Fatalf("lookup %q: %v", q, err)
		}
		for _, h := range res.Ranked {
			if slices.ContainsFunc(res.Strict, func(e kura.KBEntry) bool { return e.ID == h.ID }) {
				t.Fatalf("lookup %q: %q is strict and ranked", q, h.Identifier)
			}
		}
	})
}
