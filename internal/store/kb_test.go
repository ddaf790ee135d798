package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/kb"
	"github.com/kura-memory/kura/internal/kb/kbtest"
	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/store"
)

func mustKB(tb testing.TB, db *store.DB, name string, in kura.KBEntryInput) *kura.KBEntry {
	tb.Helper()
	e, _, err := db.PutKBEntry(context.Background(), name, &in)
	if err != nil {
		tb.Fatalf("put %q: %v", in.Identifier, err)
	}
	return e
}

// queryAll follows every page of q and returns the entries and the count
// the first page reported.
func queryAll(tb testing.TB, db *store.DB, name string, q kura.KBQuery) ([]kura.KBEntry, int) {
	tb.Helper()
	var all []kura.KBEntry
	count := -1
	for range 10_000 {
		p, err := db.QueryKB(context.Background(), name, q)
		if err != nil {
			tb.Fatalf("query %+v: %v", q, err)
		}
		if count < 0 {
			count = p.Count
		} else if p.Count != count {
			tb.Fatalf("query %+v: count changed between pages: %d then %d", q, count, p.Count)
		}
		all = append(all, p.Entries...)
		if p.NextCursor == "" {
			return all, count
		}
		if q.After, err = strconv.ParseInt(p.NextCursor, 10, 64); err != nil {
			tb.Fatalf("cursor %q: %v", p.NextCursor, err)
		}
	}
	tb.Fatal("paging did not end")
	return nil, 0
}

func idents(es []kura.KBEntry) []string {
	out := []string{}
	for _, e := range es {
		out = append(out, e.Identifier)
	}
	return out
}

func specIdents(idx []int) []string {
	out := []string{}
	for _, i := range idx {
		out = append(out, kbtest.Entries[i].Identifier)
	}
	return out
}

func TestKB_SpecExamples(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	for _, in := range kbtest.Entries {
		e, created, err := db.PutKBEntry(ctx, "knowledge", &in)
		if err != nil || !created || e.Version != 1 || !kura.ValidID(e.ID) || e.Scope != "" || !slices.Equal(e.Keys, in.Keys) || e.Value != in.Value {
			t.Fatalf("insert %q: got %+v, created %v, %v", in.Identifier, e, created, err)
		}
	}
	for _, ex := range kbtest.Examples {
		t.Run(ex.Name, func(t *testing.T) {
			got, n := queryAll(t, db, "knowledge", ex.Query)
			if !slices.Equal(idents(got), specIdents(ex.Want)) || n != len(ex.Want) {
				t.Errorf("got %q (count %d), want %q", idents(got), n, specIdents(ex.Want))
			}
			for i, e := range got {
				w := kbtest.Entries[ex.Want[i]]
				if e.Value != w.Value || !slices.Equal(e.Keys, w.Keys) {
					t.Errorf("entry %q: got keys %q value %q, want them as inserted", e.Identifier, e.Keys, e.Value)
				}
			}
		})
	}

	uni := kbtest.Uniswap.Identifier
	t.Run("update", func(t *testing.T) {
		v := kbtest.UpdatedValue
		e, err := db.UpdateKBEntry(ctx, "knowledge", &kura.KBPatch{Identifier: uni, Value: &v})
		if err != nil || e.Value != v || e.Version != 2 || !slices.Equal(e.Keys, kbtest.Uniswap.Keys) {
			t.Fatalf("got %+v, %v", e, err)
		}
		// Exact, case-sensitive identifier: another case is not found.
		_, err = db.UpdateKBEntry(ctx, "knowledge", &kura.KBPatch{Identifier: strings.ToLower(uni), Value: &v})
		wantCode(t, err, kura.ENotFound)
		got, _ := queryAll(t, db, "knowledge", kura.KBQuery{Key: ptr("Uniswap")})
		if len(got) != 1 || got[0].Value != v {
			t.Errorf("read back: %+v", got)
		}
	})
	t.Run("update_keys", func(t *testing.T) {
		e, err := db.UpdateKBEntry(ctx, "knowledge", &kura.KBPatch{Identifier: uni, Keys: kbtest.UpdatedKeys})
		if err != nil || !slices.Equal(e.Keys, kbtest.UpdatedKeys) || e.Value != kbtest.UpdatedValue || e.Version != 3 {
			t.Fatalf("got %+v, %v", e, err)
		}
		for _, tc := range []struct {
			key  string
			want []int
		}{{"AMM", []int{0}}, {"amm", []int{0}}, {"Dex contracts", nil}, {"Dex", []int{0}}, {"Lending", []int{1}}} {
			if got, _ := queryAll(t, db, "knowledge", kura.KBQuery{Key: &tc.key}); !slices.Equal(idents(got), specIdents(tc.want)) {
				t.Errorf("from_key(%q): got %q", tc.key, idents(got))
			}
		}
	})
	t.Run("len and identifiers", func(t *testing.T) {
		st, err := db.KBStats(ctx, "knowledge", "", 0, 0)
		if err != nil || st.Count != 2 || !slices.Equal(st.Identifiers, specIdents([]int{0, 1})) {
			t.Fatalf("got %+v, %v", st, err)
		}
		all, n := queryAll(t, db, "knowledge", kura.KBQuery{})
		if n != 2 || !slices.Equal(idents(all), specIdents([]int{0, 1})) {
			t.Errorf("entries: got %q (%d)", idents(all), n)
		}
	})
	t.Run("delete", func(t *testing.T) {
		n, err := db.DeleteKBEntry(ctx, "knowledge", "", uni)
		if err != nil || n != 1 {
			t.Fatalf("got %d, %v", n, err)
		}
		_, err = db.DeleteKBEntry(ctx, "knowledge", "", uni)
		wantCode(t, err, kura.ENotFound)
		st, _ := db.KBStats(ctx, "knowledge", "", 0, 0)
		if st.Count != 1 || !slices.Equal(st.Identifiers, specIdents([]int{1})) {
			t.Errorf("after delete: %+v", st)
		}
		for _, q := range []kura.KBQuery{{Identifier: ptr("uniswap")}, {Key: ptr("AMM")}, {AnyKeys: []string{"Dex"}}} {
			if got, n := queryAll(t, db, "knowledge", q); len(got) != 0 || n != 0 {
				t.Errorf("%+v after delete: got %q", q, idents(got))
			}
		}
	})
	t.Run("clear", func(t *testing.T) {
		n, err := db.ClearKB(ctx, "knowledge", "")
		if err != nil || n != 1 {
			t.Fatalf("got %d, %v", n, err)
		}
		st, _ := db.KBStats(ctx, "knowledge", "", 0, 0)
		if st.Count != 0 || len(st.Identifiers) != 0 {
			t.Errorf("after clear: %+v", st)
		}
		if n, err := db.ClearKB(ctx, "knowledge", ""); err != nil || n != 0 {
			t.Errorf("clear again: %d, %v", n, err)
		}
	})
}

func TestKB_ScopesNeverLeak(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	mustKB(t, db, "shared", kura.KBEntryInput{Scope: "defi", Identifier: "Uniswap pools", Keys: []string{"Uniswap", "DEX"}, Value: "Pool: 0x123..."})
	mustKB(t, db, "shared", kura.KBEntryInput{Scope: "nft", Identifier: "OpenSea collections", Keys: []string{"OpenSea", "NFT"}, Value: "Top collections: ..."})
	// The same identifier in three scopes and another knowledge base: four
	// entries.
	for _, s := range []string{"", "defi", "nft"} {
		mustKB(t, db, "shared", kura.KBEntryInput{Scope: s, Identifier: "common", Keys: []string{"Uniswap"}, Value: "in " + s})
	}
	mustKB(t, db, "other", kura.KBEntryInput{Scope: "defi", Identifier: "common", Keys: []string{"Uniswap"}, Value: "other kb"})

	check := func(name, scope string, q kura.KBQuery, want ...string) {
		t.Helper()
		q.Scope = scope
		got, _ := queryAll(t, db, name, q)
		if !slices.Equal(idents(got), append([]string{}, want...)) {
			t.Errorf("%s/%q %+v: got %q, want %q", name, scope, q, idents(got), want)
		}
		for _, e := range got {
			if e.Scope != scope {
				t.Errorf("%s/%q: entry of scope %q", name, scope, e.Scope)
			}
		}
	}
	check("shared", "defi", kura.KBQuery{Key: ptr("Uniswap")}, "Uniswap pools", "common")
	check("shared", "nft", kura.KBQuery{Key: ptr("Uniswap")}, "common")
	check("shared", "nft", kura.KBQuery{Identifier: ptr("uniswap")})
	check("shared", "", kura.KBQuery{}, "common")
	check("shared", "never", kura.KBQuery{})
	check("other", "defi", kura.KBQuery{}, "common")

	if _, err := db.DeleteKBEntry(ctx, "shared", "nft", "Uniswap pools"); !kura.IsCode(err, kura.ENotFound) {
		t.Errorf("delete across scopes: %v", err)
	}
	if _, err := db.KBHistory(ctx, "shared", "nft", "Uniswap pools", 0, 0); !kura.IsCode(err, kura.ENotFound) {
		t.Errorf("history across scopes: %v", err)
	}
	// Clearing one scope leaves the others, and other knowledge bases, alone.
	if n, err := db.ClearKB(ctx, "shared", "defi"); err != nil || n != 2 {
		t.Fatalf("clear defi: %d, %v", n, err)
	}
	check("shared", "defi", kura.KBQuery{})
	check("shared", "nft", kura.KBQuery{}, "OpenSea collections", "common")
	check("shared", "", kura.KBQuery{}, "common")
	check("other", "defi", kura.KBQuery{Identifier: ptr("common")}, "common")
	for _, s := range []string{"nft", ""} {
		if st, _ := db.KBStats(ctx, "shared", s, 0, 0); st.Count != len(st.Identifiers) || st.Count == 0 {
			t.Errorf("stats of %q after clearing defi: %+v", s, st)
		}
	}
}

func TestKB_LimitsAtTheirBoundaries(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	keys := func(n int, k string) []string { return slices.Repeat([]string{k}, n) }
	cases := []struct {
		name  string
		in    kura.KBEntryInput
		field string // "" when accepted
	}{
		{"identifier 512 ASCII", kura.KBEntryInput{Identifier: strings.Repeat("a", 512)}, ""},
		{"identifier 513 ASCII", kura.KBEntryInput{Identifier: strings.Repeat("a", 513)}, "identifier"},
		{"identifier 512 é (1024 bytes)", kura.KBEntryInput{Identifier: strings.Repeat("é", 512)}, ""},
		{"identifier 513 é", kura.KBEntryInput{Identifier: strings.Repeat("é", 513)}, "identifier"},
		{"identifier 512 東 (1536 bytes)", kura.KBEntryInput{Identifier: strings.Repeat("東", 512)}, ""},
		{"identifier 513 東", kura.KBEntryInput{Identifier: strings.Repeat("東", 513)}, "identifier"},
		{"identifier 512 emoji (2048 bytes)", kura.KBEntryInput{Identifier: strings.Repeat("🚀", 512)}, ""},
		{"identifier empty", kura.KBEntryInput{Identifier: ""}, "identifier"},
		{"identifier not UTF-8", kura.KBEntryInput{Identifier: "a\xffb"}, "identifier"},
		{"32 keys", kura.KBEntryInput{Identifier: "k32", Keys: keys(32, "k")}, ""},
		{"33 keys", kura.KBEntryInput{Identifier: "k33", Keys: keys(33, "k")}, "keys"},
		{"key 128 東", kura.KBEntryInput{Identifier: "key128", Keys: []string{strings.Repeat("東", 128)}}, ""},
		{"key 129 東", kura.KBEntryInput{Identifier: "key129", Keys: []string{strings.Repeat("東", 129)}}, "keys"},
		{"key 128 é", kura.KBEntryInput{Identifier: "key128e", Keys: []string{"x", strings.Repeat("é", 128)}}, ""},
		{"key 129 é", kura.KBEntryInput{Identifier: "key129e", Keys: []string{"x", strings.Repeat("é", 129)}}, "keys"},
		{"key empty", kura.KBEntryInput{Identifier: "keyempty", Keys: []string{"a", ""}}, "keys"},
		{"key not UTF-8", kura.KBEntryInput{Identifier: "keybad", Keys: []string{"\xc3"}}, "keys"},
		{"no keys", kura.KBEntryInput{Identifier: "nokeys"}, ""},
		{"value 65536 東", kura.KBEntryInput{Identifier: "v65536", Value: strings.Repeat("東", 65536)}, ""},
		{"value 65537 東", kura.KBEntryInput{Identifier: "v65537", Value: strings.Repeat("東", 65537)}, "value"},
		{"value 65536 ASCII", kura.KBEntryInput{Identifier: "v65536a", Value: strings.Repeat("v", 65536)}, ""},
		{"value 65537 ASCII", kura.KBEntryInput{Identifier: "v65537a", Value: strings.Repeat("v", 65537)}, "value"},
		{"value empty", kura.KBEntryInput{Identifier: "vempty"}, ""},
		{"value not UTF-8", kura.KBEntryInput{Identifier: "vbad", Value: "\xe6\x9d"}, "value"},
		{"value with NUL", kura.KBEntryInput{Identifier: "nul\x00inside", Keys: []string{"a\x00b"}, Value: "x\x00y"}, ""},
		{"scope not a slug", kura.KBEntryInput{Scope: "Defi", Identifier: "s"}, "scope"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := db.LastEventSeq()
			e, _, err := db.PutKBEntry(ctx, "limits", &tc.in)
			if tc.field != "" {
				var ke *kura.Error
				if !errors.As(err, &ke) || ke.Code != kura.EInvalid || ke.Details["field"] != tc.field {
					t.Fatalf("got %v, want invalid_argument on %s", err, tc.field)
				}
				if db.LastEventSeq() != before {
					t.Error("a refused entry appended an event")
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			// Stored and read back exactly, multi-byte and NUL included.
			got, _ := queryAll(t, db, "limits", kura.KBQuery{ExactIdentifier: &tc.in.Identifier})
			if len(got) != 1 || got[0].Identifier != tc.in.Identifier || got[0].Value != tc.in.Value || !slices.Equal(got[0].Keys, e.Keys) ||
				len(got[0].Keys) != len(tc.in.Keys) {
				t.Errorf("read back differs from what was written")
			}
		})
	}
	// The same limits hold for a patch.
	long := strings.Repeat("東", 65537)
	_, err := db.UpdateKBEntry(ctx, "limits", &kura.KBPatch{Identifier: "vempty", Value: &long})
	wantCode(t, err, kura.EInvalid)
	_, err = db.UpdateKBEntry(ctx, "limits", &kura.KBPatch{Identifier: "vempty", Keys: keys(33, "k")})
	wantCode(t, err, kura.EInvalid)
	_, err = db.UpdateKBEntry(ctx, "limits", &kura.KBPatch{Identifier: "vempty"})
	wantCode(t, err, kura.EInvalid)
	_, _, err = db.PutKBEntry(ctx, "Not-A-Slug", &kura.KBEntryInput{Identifier: "x"})
	wantCode(t, err, kura.EInvalid)
	// A batch is all or nothing: one bad entry and none is written.
	before := db.LastEventSeq()
	_, err = db.PutKBEntries(ctx, "limits", []kura.KBEntryInput{{Identifier: "ok1"}, {Identifier: strings.Repeat("é", 513)}})
	var ke *kura.Error
	if !errors.As(err, &ke) || ke.Details["field"] != "entries[1].identifier" || db.LastEventSeq() != before {
		t.Errorf("bad batch: %v", err)
	}
	if _, err := db.PutKBEntries(ctx, "limits", make([]kura.KBEntryInput, kura.MaxKBBatch+1)); !kura.IsCode(err, kura.EInvalid) {
		t.Errorf("oversized batch: %v", err)
	}
}

func TestKB_HistoryVersionsAndEvents(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	start := db.LastEventSeq()
	a := mustKB(t, db, "h", kura.KBEntryInput{Scope: "s", Identifier: "Alpha", Keys: []string{"k1"}, Value: "v1"})
	b := mustKB(t, db, "h", kura.KBEntryInput{Scope: "s", Identifier: "Beta", Value: "b"})
	a2 := mustKB(t, db, "h", kura.KBEntryInput{Scope: "s", Identifier: "Alpha", Keys: []string{"k2"}, Value: "v2"})
	if a2.ID != a.ID || a2.Version != 2 || a2.CreatedAt != a.CreatedAt {
		t.Fatalf("replace: got %+v, want the same id and created_at, version 2", a2)
	}
	// A replace keeps its position: Alpha is still first.
	if st, _ := db.KBStats(ctx, "h", "s", 0, 0); !slices.Equal(st.Identifiers, []string{"Alpha", "Beta"}) {
		t.Errorf("order after replace: %q", st.Identifiers)
	}
	v3 := "v3"
	db.UpdateKBEntry(ctx, "h", &kura.KBPatch{Scope: "s", Identifier: "Alpha", Value: &v3})
	db.UpdateKBEntry(ctx, "h", &kura.KBPatch{Scope: "s", Identifier: "Alpha", Keys: []string{}})
	db.DeleteKBEntry(ctx, "h", "s", "Alpha")
	a3 := mustKB(t, db, "h", kura.KBEntryInput{Scope: "s", Identifier: "Alpha", Value: "again"})
	if a3.ID == a.ID || a3.Version != 6 {
		t.Fatalf("re-insert: got %+v, want a new id and version 6 (versions count on across a delete)", a3)
	}
	if st, _ := db.KBStats(ctx, "h", "s", 0, 0); !slices.Equal(st.Identifiers, []string{"Beta", "Alpha"}) {
		t.Errorf("order after re-insert: %q, want the re-inserted entry last", st.Identifiers)
	}
	db.ClearKB(ctx, "h", "s")

	h, err := db.KBHistory(ctx, "h", "s", "Alpha", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		v          int
		op, id     string
		keys       string
		value      string
		tombstoned bool
	}
	var got []row
	for _, v := range h.Versions {
		r := row{v: v.Version, op: v.Op, id: v.ID, keys: strings.Join(v.Keys, ","), tombstoned: v.Keys == nil && v.Value == nil}
		if v.Value != nil {
			r.value = *v.Value
		}
		if v.At == "" {
			t.Errorf("version %d without a time", v.Version)
		}
		got = append(got, r)
	}
	want := []row{
		{1, "put", a.ID, "k1", "v1", false},
		{2, "put", a.ID, "k2", "v2", false},
		{3, "update", a.ID, "k2", "v3", false},
		{4, "update_keys", a.ID, "", "v3", false},
		{5, "delete", a.ID, "", "", true},
		{6, "put", a3.ID, "", "again", false},
		{7, "clear", a3.ID, "", "", true},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("history:\n got %v\nwant %v", got, want)
	}
	// Pages of history.
	p1, _ := db.KBHistory(ctx, "h", "s", "Alpha", 0, 3)
	p2, _ := db.KBHistory(ctx, "h", "s", "Alpha", 3, 3)
	p3, _ := db.KBHistory(ctx, "h", "s", "Alpha", 6, 3)
	if len(p1.Versions) != 3 || p1.NextCursor != "3" || len(p2.Versions) != 3 || p2.NextCursor != "6" || len(p3.Versions) != 1 || p3.NextCursor != "" {
		t.Errorf("history pages: %+v / %+v / %+v", p1, p2, p3)
	}
	for _, tc := range []struct{ scope, ident string }{{"s", "alpha"}, {"", "Alpha"}, {"t", "Alpha"}} {
		if _, err := db.KBHistory(ctx, "h", tc.scope, tc.ident, 0, 0); !kura.IsCode(err, kura.ENotFound) {
			t.Errorf("history of %q in %q: %v, want not_found", tc.ident, tc.scope, err)
		}
	}

	// One kb.changed event per entry changed: 2 puts, 1 replace, 2
	// patches, 1 delete, 1 re-insert, and the clear removed Beta and Alpha.
	// Each carries the KB scope as its project.
	page, err := db.ListEvents(ctx, kura.EventFilter{After: start, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range page.Events {
		if e.Type != "kb.changed" || e.Project != "s" || e.Refs["kb"] != "h" || e.Subject != "oclaw.v1.s.evt.kb.changed" {
			t.Errorf("event %+v", e)
		}
		ids = append(ids, e.Refs["entry_id"])
	}
	wantIDs := []string{a.ID, b.ID, a.ID, a.ID, a.ID, a.ID, a3.ID, b.ID, a3.ID}
	if !slices.Equal(ids, wantIDs) {
		t.Errorf("event entry ids:\n got %v\nwant %v", ids, wantIDs)
	}
	// Reads and refused writes append nothing.
	before := db.LastEventSeq()
	db.QueryKB(ctx, "h", kura.KBQuery{Scope: "s"})
	db.KBStats(ctx, "h", "s", 0, 0)
	db.DeleteKBEntry(ctx, "h", "s", "ghost")
	db.UpdateKBEntry(ctx, "h", &kura.KBPatch{Scope: "s", Identifier: "ghost", Value: &v3})
	if db.LastEventSeq() != before {
		t.Error("reads or refused writes appended events")
	}
}

func TestKB_BatchUpsert(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	mustKB(t, db, "b", kura.KBEntryInput{Identifier: "one", Value: "old"})
	res, err := db.PutKBEntries(ctx, "b", []kura.KBEntryInput{
		{Identifier: "one", Value: "new"}, {Identifier: "two", Keys: []string{"K"}}, {Scope: "x", Identifier: "one"}, {Identifier: "two", Value: "twice"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Created != 2 || res.Replaced != 2 || len(res.Entries) != 4 || res.Entries[3].Version != 2 || res.Entries[3].ID != res.Entries[1].ID ||
		res.Entries[2].Scope != "x" || res.Entries[0].Version != 2 {
		t.Errorf("batch: %+v", res)
	}
	got, _ := queryAll(t, db, "b", kura.KBQuery{})
	if !slices.Equal(idents(got), []string{"one", "two"}) || got[1].Value != "twice" || len(got[1].Keys) != 0 {
		t.Errorf("after batch: %+v", got)
	}
}

// The indexed answers equal a brute-force scan of the same content (the
// reference kb.Base), for random upserts, patches, deletes and clears in
// two scopes and random queries of every form and combination, paged.
//
// Both plans are checked: the SQL walk of the rarest posting, and the
// intersection of in-memory postings (kbcache.go), which here serves every
// counted query and must follow each change through the generations.
func TestKB_MatchesBruteForce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		cacheMin int
	}{{"sql", 1 << 30}, {"cached", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := MustOpenStore(t)
			db.SetKBCacheMin(tc.cacheMin)
			testKBMatchesBruteForce(t, db, tc.name == "sql")
			if hits := db.KBCacheHits(); (tc.cacheMin == 1) != (hits > 0) {
				t.Fatalf("%d answers from cached postings", hits)
			}
		})
	}
}

// checkDrift compares the indexes with what the entries imply after every
// round. Only the SQL plan's run does: both runs make the same writes from
// the same seed, and the cached plan only reads (kbcache.go), so the other
// run's indexes are the same ones; the check was a third of its time.
func testKBMatchesBruteForce(t *testing.T, db *store.DB, checkDrift bool) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 5))
	w := kbtest.Workload{R: rng}
	var ref kb.Base
	scopes := []string{"", "alt"}
	idents := map[string][]string{} // identifiers ever used, per scope
	pick := func(scope string) string {
		if l := idents[scope]; len(l) > 0 && rng.IntN(3) > 0 {
			return l[rng.IntN(len(l))]
		}
		id := w.Identifier()
		idents[scope] = append(idents[scope], id)
		return id
	}
	check := func(round int) {
		t.Helper()
		for range 30 {
			q := w.Query()
			q.Scope = scopes[rng.IntN(2)]
			q.Limit = 1 + rng.IntN(7)
			want := ref.Scope(q.Scope).Query(&q)
			got, n := queryAll(t, db, "p", q)
			if n != len(want) || len(got) != len(want) {
				t.Fatalf("round %d, query %s: got %d entries (count %d), want %d\n got %q\nwant %q", round, describe(q), len(got), n, len(want), idents2(got), idents2(want))
			}
			for i := range want {
				if got[i].Identifier != want[i].Identifier || got[i].Value != want[i].Value || !slices.Equal(got[i].Keys, want[i].Keys) {
					t.Fatalf("round %d, query %s: entry %d is %+v, want %+v", round, describe(q), i, got[i], want[i])
				}
			}
		}
		for _, s := range scopes {
			st, err := db.KBStats(ctx, "p", s, 0, 1000)
			if err != nil || st.Count != ref.Scope(s).Len() || !slices.Equal(st.Identifiers, ref.Scope(s).Identifiers()) {
				t.Fatalf("round %d, stats of %q: got %d %q, want %d %q", round, s, st.Count, st.Identifiers, ref.Scope(s).Len(), ref.Scope(s).Identifiers())
			}
		}
	}
	for round := range 12 {
		var batch []kura.KBEntryInput
		for range 20 + rng.IntN(30) {
			in := kura.KBEntryInput{Scope: scopes[rng.IntN(2)], Keys: w.Keys(4), Value: w.Value()}
			in.Identifier = pick(in.Scope)
			batch = append(batch, in)
		}
		if _, err := db.PutKBEntries(ctx, "p", batch); err != nil {
			t.Fatal(err)
		}
		for _, in := range batch {
			ref.Scope(in.Scope).Insert(in.Identifier, in.Keys, in.Value)
		}
		for range 25 {
			s := scopes[rng.IntN(2)]
			id := pick(s)
			l := ref.Scope(s)
			switch rng.IntN(5) {
			case 0:
				in := kura.KBEntryInput{Scope: s, Identifier: id, Keys: w.Keys(4), Value: w.Value()}
				if _, created, err := db.PutKBEntry(ctx, "p", &in); err != nil || created != l.Insert(id, in.Keys, in.Value) {
					t.Fatalf("put %q: created %v, %v", id, created, err)
				}
			case 1:
				v := w.Value()
				_, err := db.UpdateKBEntry(ctx, "p", &kura.KBPatch{Scope: s, Identifier: id, Value: &v})
				if found := l.Update(id, v); found != (err == nil) {
					t.Fatalf("update %q: %v, reference found %v", id, err, found)
				}
			case 2:
				k := w.Keys(4)
				_, err := db.UpdateKBEntry(ctx, "p", &kura.KBPatch{Scope: s, Identifier: id, Keys: nonNil(k)})
				if found := l.UpdateKeys(id, k); found != (err == nil) {
					t.Fatalf("update_keys %q: %v, reference found %v", id, err, found)
				}
			case 3:
				_, err := db.DeleteKBEntry(ctx, "p", s, id)
				if found := l.Delete(id); found != (err == nil) {
					t.Fatalf("delete %q: %v, reference found %v", id, err, found)
				}
			case 4:
				if rng.IntN(6) == 0 {
					n, err := db.ClearKB(ctx, "p", s)
					if want := l.Clear(); err != nil || n != want {
						t.Fatalf("clear %q: %d, %v, want %d", s, n, err, want)
					}
				}
			}
		}
		check(round)
		if !checkDrift {
			continue
		}
		if drift, err := db.KBIndexDrift(); err != nil || len(drift) > 0 {
			t.Fatalf("round %d: the indexes are not what the entries imply (%v):\n%s", round, err, strings.Join(drift, "\n"))
		}
	}
	// The spec's examples hold in a base that also holds random entries
	// around them.
	for _, in := range kbtest.Entries {
		in.Scope = "alt"
		mustKB(t, db, "p", in)
		ref.Scope("alt").Insert(in.Identifier, in.Keys, in.Value)
	}
	for _, ex := range kbtest.Examples {
		q := ex.Query
		q.Scope = "alt"
		got, _ := queryAll(t, db, "p", q)
		if want := ref.Scope("alt").Query(&q); !slices.Equal(idents2(got), idents2(want)) {
			t.Errorf("%s among random entries: got %q, want %q", ex.Name, idents2(got), idents2(want))
		}
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func idents2(es []kura.KBEntry) []string { return idents(es) }

func describe(q kura.KBQuery) string {
	var parts []string
	if q.Identifier != nil {
		parts = append(parts, fmt.Sprintf("identifier=%q", *q.Identifier))
	}
	if q.Key != nil {
		parts = append(parts, fmt.Sprintf("key=%q", *q.Key))
	}
	if q.AnyKeys != nil {
		parts = append(parts, fmt.Sprintf("any=%q", q.AnyKeys))
	}
	if q.AllKeys != nil {
		parts = append(parts, fmt.Sprintf("all=%q", q.AllKeys))
	}
	return fmt.Sprintf("scope=%q %s limit=%d", q.Scope, strings.Join(parts, " "), q.Limit)
}

func TestKB_Lookup(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	for _, in := range kbtest.Entries {
		mustKB(t, db, "knowledge", in)
	}
	var ref kb.Space
	for _, in := range kbtest.Entries {
		ref.Insert(in.Identifier, in.Keys, in.Value)
	}
	lookup := func(name, q string, limit int, mode string) *kura.KBLookupResult {
		t.Helper()
		res, err := db.LookupKB(ctx, name, kura.KBLookup{Q: q, Limit: limit, Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	// The strict matches are the spec's tool bridge, in both modes; in
	// the strict mode they are all there is.
	for _, q := range []string{"Uniswap", "contract addresses", "AAVE Ethereum", "Solana", "Dex contracts", "money market contracts", "?!", "lending"} {
		for _, mode := range []string{kura.KBLookupStrict, ""} {
			res := lookup("knowledge", q, 100, mode)
			want := ref.Lookup(q)
			if !slices.Equal(idents(res.Strict), idents(want)) || res.Count != len(want) {
				t.Errorf("lookup %q (mode %q): got %q (%d), want %q", q, mode, idents(res.Strict), res.Count, idents(want))
			}
			if mode == kura.KBLookupStrict && len(res.Ranked) != 0 {
				t.Errorf("strict lookup %q ranked %d entries", q, len(res.Ranked))
			}
		}
	}
	res := lookup("knowledge", "ethereum", 1, "")
	if len(res.Strict) != 1 || res.Count != 2 || len(res.Ranked) != 0 {
		t.Errorf("limited lookup: %d entries, count %d, %d ranked", len(res.Strict), res.Count, len(res.Ranked))
	}
	if res := lookup("nothing", "x", 10, ""); res.Count != 0 || len(res.Ranked) != 0 {
		t.Errorf("unknown kb: %+v", res)
	}
	if _, err := db.LookupKB(ctx, "knowledge", kura.KBLookup{Q: "x", Mode: "fuzzy"}); kura.ErrorCode(err) != kura.EInvalid {
		t.Errorf("mode fuzzy: %v, want invalid_argument", err)
	}
}

// A query searches the postings of its conditions, never every entry:
// SQLite's plan for each query form holds no full scan of a table, and
// every search of kb_terms is a MATCH restricted to the scope's rowids.
func TestKB_QueriesUseTheIndexes(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	var batch []kura.KBEntryInput
	for i := range 300 {
		batch = append(batch, kura.KBEntryInput{Identifier: fmt.Sprintf("common words shared entry %d", i), Keys: []string{"Common", fmt.Sprintf("k%d", i)}})
	}
	batch = append(batch, kura.KBEntryInput{Identifier: "common words shared rare", Keys: []string{"Common", "Rare"}})
	if _, err := db.PutKBEntries(ctx, "big", batch); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		q     kura.KBQuery
		count int
	}{
		{kura.KBQuery{Identifier: ptr("shared Rare common words")}, 1},
		{kura.KBQuery{Identifier: ptr("common"), Key: ptr("rare")}, 1},
		{kura.KBQuery{AllKeys: []string{"common", "RARE"}}, 1},
		{kura.KBQuery{AnyKeys: []string{"rare", "k17"}, Identifier: ptr("entry")}, 1},
		{kura.KBQuery{AnyKeys: []string{"rare", "k17"}}, 2},
		{kura.KBQuery{ExactIdentifier: ptr("common words shared rare"), Key: ptr("common")}, 1},
		{kura.KBQuery{Key: ptr("common"), After: 100}, 301},
		{kura.KBQuery{After: 100}, 301},
	} {
		page, err := db.QueryKB(ctx, "big", tc.q)
		if err != nil || page.Count != tc.count {
			t.Fatalf("%s: got %+v, %v, want count %d", describe(tc.q), page, err, tc.count)
		}
		plans, err := db.KBQueryPlans("big", tc.q)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range plans {
			// FTS5 answers a MATCH ("M" in its index string) within the
			// scope's rowid range ("<" and ">") from its postings.
			if strings.HasPrefix(p, "SCAN ") && !(strings.HasPrefix(p, "SCAN kb_terms VIRTUAL TABLE INDEX ") && strings.Contains(p, ":M") && strings.Contains(p, "<") && strings.Contains(p, ">")) {
				t.Errorf("%s: plan scans a table: %q", describe(tc.q), plans)
			}
		}
	}
}

// With the default threshold, a counted query over large postings is
// answered by the SQL plan while its postings are read in the background,
// then from the copies; a write moves the generation, so the next answer
// sees it (from SQL again) and never a stale copy.
func TestKB_CachedPostingsFollowWrites(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	var batch []kura.KBEntryInput
	for i := range 300 {
		batch = append(batch, kura.KBEntryInput{Identifier: fmt.Sprintf("Alpha beta %d", i), Keys: []string{"Team", "Ops", fmt.Sprintf("t%d", i%3)}, Value: "v"})
	}
	if _, err := db.PutKBEntries(ctx, "c", batch); err != nil {
		t.Fatal(err)
	}
	words, keys := "alpha BETA", []string{"team", "OPS"}
	ask := func(want int) {
		t.Helper()
		for _, q := range []kura.KBQuery{{Identifier: &words}, {AllKeys: keys}} {
			p, err := db.QueryKB(ctx, "c", q)
			if err != nil || p.Count != want {
				t.Fatalf("%s: count %d, %v; want %d", describe(q), p.Count, err, want)
			}
		}
	}
	ask(300)
	db.WaitKBLoads()
	if db.KBCacheHits() != 0 {
		t.Fatalf("%d postings from memory before any was read", db.KBCacheHits())
	}
	ask(300)
	if hits := db.KBCacheHits(); hits != 4 {
		t.Fatalf("%d postings from memory, want 4 (two words, two keys)", hits)
	}
	mustKB(t, db, "c", kura.KBEntryInput{Identifier: "Alpha beta gamma", Keys: []string{"team"}, Value: "v"})
	p, err := db.QueryKB(ctx, "c", kura.KBQuery{Identifier: &words})
	if err != nil || p.Count != 301 {
		t.Fatalf("after a write: count %d, %v; want 301", p.Count, err)
	}
	if hits := db.KBCacheHits(); hits != 4 {
		t.Fatalf("a copy of the old generation answered after a write (%d hits)", hits)
	}
}

// TestKB_EventScopeMigration: kb.changed events appended before they
// carried their scope (they took the default project) get their scope and
// subject from the migration, deleted and cleared entries included; other
// events keep theirs.
func TestKB_EventScopeMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "kura.db")
	db := mustOpenAt(t, path, nil)
	want := map[string]string{ // entry id -> project after the migration
		mustKB(t, db, "h", kura.KBEntryInput{Scope: "s", Identifier: "a", Value: "v"}).ID: "s",
		mustKB(t, db, "h", kura.KBEntryInput{Identifier: "b", Value: "v"}).ID:             "default",
		mustKB(t, db, "g", kura.KBEntryInput{Scope: "t", Identifier: "c", Value: "v"}).ID: "t",
	}
	if _, err := db.DeleteKBEntry(ctx, "h", "s", "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ClearKB(ctx, "g", "t"); err != nil {
		t.Fatal(err)
	}
	rec, err := db.CreateRecord(ctx, &kura.RecordInput{Type: "agent.thought", Content: []byte(`"x"`), AuthorID: "agent:bmo"})
	if err != nil {
		t.Fatal(err)
	}
	db.Close(ctx)

	// What an older kurad wrote: every kb.changed under the default project.
	raw := rawDB(t, path)
	if _, err := raw.Exec(`UPDATE events SET project = 'dflt', subject = 'oclaw.v1.dflt.evt.kb.changed' WHERE type = 'kb.changed'`); err != nil {
		t.Fatal(err)
	}
	migration, err := os.ReadFile("migrations/0011_kb_event_scope.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(string(migration)); err != nil {
		t.Fatalf("migration: %v", err)
	}
	raw.Close()

	db = mustOpenAt(t, path, nil)
	page, err := db.ListEvents(ctx, kura.EventFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	kbEvents := 0
	for _, e := range page.Events {
		switch e.Type {
		case "kb.changed":
			kbEvents++
			p := want[e.Refs["entry_id"]]
			if e.Project != p || e.Subject != "oclaw.v1."+p+".evt.kb.changed" {
				t.Errorf("event %d of entry %s: project %s subject %s, want %s", e.Seq, e.Refs["entry_id"], e.Project, e.Subject, p)
			}
		case "record.written":
			if e.Refs["record_id"] != rec.ID || e.Project != "default" {
				t.Errorf("record event changed: %+v", e)
			}
		}
	}
	if kbEvents != 5 {
		t.Errorf("got %d kb.changed events, want 5 (3 puts, a delete, a clear)", kbEvents)
	}
}

// TestKB_FTSMigration: a database written before the FTS5 indexes (its
// entries indexed by the word and key tables the migration retires) opens
// with every entry in both new indexes, answers the strict queries exactly
// as before, and keeps taking writes.
func TestKB_FTSMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "kura.db")
	raw := rawDB(t, path)
	names, err := filepath.Glob("migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	before := slices.IndexFunc(names, func(n string) bool { return strings.HasSuffix(n, "_kb_fts.sql") })
	if before < 0 {
		t.Fatal("no kb_fts migration")
	}
	for _, n := range names[:before] {
		body, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := raw.Exec(string(body)); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
	}
	// What the older kurad wrote for the spec's entries in the default
	// scope and three entries in another, whose keys fold (Kelvin sign,
	// final sigma) and repeat.
	type old struct {
		scope      string
		identifier string
		keys       []string
		value      string
	}
	olds := []old{
		{"", kbtest.Uniswap.Identifier, kbtest.Uniswap.Keys, kbtest.Uniswap.Value},
		{"", kbtest.AAVE.Identifier, kbtest.AAVE.Keys, kbtest.AAVE.Value},
		{"alt", "ΟΔΟΣ Kelvin \u212a units", []string{"\u212a", "ΟΔΟΣ"}, "kelvin road"},
		{"alt", "οδος naïve café", []string{"k", "οδος", "Dex"}, "greek road"},
		{"alt", "Router addresses", nil, "Router: 0x456456456"},
	}
	stmts := []string{
		"INSERT INTO kb_spaces(sp, kb, scope, entries) VALUES (1, 'knowledge', '', 2), (2, 'knowledge', 'alt', 3)",
	}
	df := map[string]int{}
	for i, o := range olds {
		sp, eid := 1, i+1
		if o.scope == "alt" {
			sp = 2
		}
		keys := o.keys
		if keys == nil {
			keys = []string{}
		}
		stmts = append(stmts, fmt.Sprintf("INSERT INTO kb_entries(eid, sp, id, identifier, keys, value, version, created_at, updated_at) VALUES (%d, %d, '%s', %s, %s, %s, 1, '2026-11-21T09:00:00.000000000Z', '2026-11-21T09:00:00.000000000Z')",
			eid, sp, fmt.Sprintf("0193a000-0000-7000-8000-%012d", eid), sqlText(o.identifier), sqlText(mustJSON(t, keys)), sqlText(o.value)))
		words := kb.Words(o.identifier)
		stmts = append(stmts, fmt.Sprintf("INSERT INTO kb_entry_words(eid, words) VALUES (%d, %s)", eid, sqlText("\x1f"+strings.Join(words, "\x1f")+"\x1f")))
		for _, w := range words {
			stmts = append(stmts, fmt.Sprintf("INSERT INTO kb_words(sp, word, eid, sig, sig2) VALUES (%d, %s, %d, 0, 0)", sp, sqlText(w), eid))
			df[fmt.Sprintf("%d,0,%s", sp, sqlText(w))]++
		}
		for _, k := range kb.FoldKeys(keys) {
			stmts = append(stmts, fmt.Sprintf("INSERT INTO kb_keys(sp, key, eid, sig, sig2) VALUES (%d, %s, %d, 0, 0)", sp, sqlText(k), eid))
			df[fmt.Sprintf("%d,1,%s", sp, sqlText(k))]++
		}
	}
	for k, n := range df {
		stmts = append(stmts, fmt.Sprintf("INSERT INTO kb_df(sp, kind, term, n) VALUES (%s, %d)", k, n))
	}
	stmts = append(stmts, fmt.Sprintf("PRAGMA user_version = %d", before))
	for _, s := range stmts {
		if _, err := raw.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	raw.Close()

	db := mustOpenAt(t, path, nil)
	if drift, err := db.KBIndexDrift(); err != nil || len(drift) > 0 {
		t.Fatalf("after the migration the indexes are not what the entries imply (%v):\n%s", err, strings.Join(drift, "\n"))
	}
	for _, ex := range kbtest.Examples {
		got, n := queryAll(t, db, "knowledge", ex.Query)
		if want := specIdents(ex.Want); !slices.Equal(idents(got), want) || n != len(want) {
			t.Errorf("%s after the migration: got %q (count %d), want %q", ex.Name, idents(got), n, want)
		}
	}
	for _, tc := range []struct {
		q    kura.KBQuery
		want []string
	}{
		{kura.KBQuery{Scope: "alt", Key: ptr("K")}, []string{olds[2].identifier, olds[3].identifier}},
		{kura.KBQuery{Scope: "alt", Identifier: ptr("οδοσ kelvin")}, []string{olds[2].identifier}},
		{kura.KBQuery{Scope: "alt", AllKeys: []string{"ΟΔΟΣ", "dex"}}, []string{olds[3].identifier}},
		{kura.KBQuery{Scope: "alt", Identifier: ptr("address")}, []string{}},
	} {
		if got, _ := queryAll(t, db, "knowledge", tc.q); !slices.Equal(idents(got), tc.want) {
			t.Errorf("%s after the migration: got %q, want %q", describe(tc.q), idents(got), tc.want)
		}
	}
	// Writes go on: a new entry comes after the old ones, a patch and a
	// delete of an old one reach both indexes.
	mustKB(t, db, "knowledge", kura.KBEntryInput{Scope: "alt", Identifier: "Kelvin again", Keys: []string{"K"}})
	if _, err := db.UpdateKBEntry(ctx, "knowledge", &kura.KBPatch{Scope: "alt", Identifier: olds[2].identifier, Keys: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.DeleteKBEntry(ctx, "knowledge", "alt", olds[3].identifier); err != nil {
		t.Fatal(err)
	}
	if got, _ := queryAll(t, db, "knowledge", kura.KBQuery{Scope: "alt", Key: ptr("k")}); !slices.Equal(idents(got), []string{"Kelvin again"}) {
		t.Errorf("key k after writes: got %q", idents(got))
	}
	if drift, err := db.KBIndexDrift(); err != nil || len(drift) > 0 {
		t.Fatalf("after writes (%v):\n%s", err, strings.Join(drift, "\n"))
	}
}

func sqlText(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func mustJSON(tb testing.TB, v any) string {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// TestKB_StrictQueriesStayExact: where SQLite's own tokenizer would cut
// or fold differently from the spec's rules (kb.Words, kb.Fold), the
// strict queries still answer as the rules say, because kb_terms holds the
// rules' words and keys as opaque tokens: "x²" is the word x (² is no
// digit), İ is not I, accents and stems never match, final sigma and the
// Kelvin sign fold.
func TestKB_StrictQueriesStayExact(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	var ref kb.Space
	for _, in := range []kura.KBEntryInput{
		{Identifier: "x² units", Keys: []string{"Ⅻ"}},
		{Identifier: "İstanbul office", Keys: []string{"İ"}},
		{Identifier: "déjà vu", Keys: []string{"Déjà"}},
		{Identifier: "Uniswap contract addresses", Keys: []string{"Addresses"}},
		{Identifier: "ΟΔΟΣ \u212a", Keys: []string{"οδος"}},
	} {
		mustKB(t, db, "x", in)
		ref.Insert(in.Identifier, in.Keys, in.Value)
	}
	for _, q := range []kura.KBQuery{
		{Identifier: ptr("x")}, {Identifier: ptr("x²")}, {Identifier: ptr("2")}, {Key: ptr("ⅻ")}, {Key: ptr("XII")},
		{Identifier: ptr("istanbul")}, {Identifier: ptr("İSTANBUL")}, {Key: ptr("i")}, {Key: ptr("İ")},
		{Identifier: ptr("deja")}, {Identifier: ptr("DÉJÀ")}, {Key: ptr("deja")},
		{Identifier: ptr("address")}, {Identifier: ptr("addresses")}, {Key: ptr("address")},
		{Identifier: ptr("οδοσ k")}, {Identifier: ptr("ὀδος")}, {Key: ptr("ΟΔΟΣ")},
	} {
		got, n := queryAll(t, db, "x", q)
		if want := ref.Query(&q); !slices.Equal(idents(got), idents(want)) || n != len(want) {
			t.Errorf("%s: got %q (%d), want %q", describe(q), idents(got), n, idents(want))
		}
	}
}
