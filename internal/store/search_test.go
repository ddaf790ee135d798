package store_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/kura-memory/kura/internal/admission"
	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/pgtest"
	"github.com/kura-memory/kura/internal/recall"
	"github.com/kura-memory/kura/internal/store"
)

// engineTokens tokenizes each text with SQLite's FTS5 exactly as the
// search index does (a scratch table of the same tokenizer), one token
// list per text.
func engineTokens(tb testing.TB, texts []string) [][]string {
	tb.Helper()
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, q := range []string{
		// columnsize=0: no per-row size table to write (a quarter of the
		// test under -race); the tokens are the same.
		"CREATE VIRTUAL TABLE t USING fts5(a, content='', columnsize=0, tokenize='porter unicode61 remove_diacritics 2')",
		"CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')",
	} {
		if _, err := db.Exec(q); err != nil {
			tb.Fatal(err)
		}
	}
	tx, err := db.Begin()
	if err != nil {
		tb.Fatal(err)
	}
	ins, err := tx.Prepare("INSERT INTO t(rowid, a) VALUES(?, ?)") // parsed once, not per text (about a fifth of the test under -race)
	if err != nil {
		tb.Fatal(err)
	}
	for i, s := range texts {
		if _, err := ins.Exec(i+1, s); err != nil {
			tb.Fatal(err)
		}
	}
	ins.Close()
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
	rows, err := db.Query("SELECT doc, term FROM v ORDER BY doc, offset")
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	out := make([][]string, len(texts))
	for rows.Next() {
		var d int
		var term string
		if err := rows.Scan(&d, &term); err != nil {
			tb.Fatal(err)
		}
		out[d-1] = append(out[d-1], term)
	}
	return out
}

// TestSearch_TokensAgreeWithEngine: recall.Tokens, which explains search
// results and ranks memory as of the past, tokenizes as the index does:
// English-like words through every stemming rule, random Unicode text
// (combining marks, ligatures, wide forms, emoji, scripts without case),
// and one code point at a time across Unicode.
func TestSearch_TokensAgreeWithEngine(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 5))
	var texts []string
	suffixes := strings.Fields("s es ies sses ss ed eed ing ly y ational tional enci anci izer bli abli alli entli eli ousli ization ation ator " +
		"alism iveness fulness ousness aliti iviti biliti logi icate ative alize iciti ical ful ness al ance ence er ic able ible ant " +
		"ement ment ent sion tion ion ou ism ate iti ous ive ize e ll at bl iz")
	for range 20000 {
		var b strings.Builder
		for range r.IntN(6) {
			b.WriteByte(byte('a' + r.IntN(26)))
		}
		for range 1 + r.IntN(3) {
			b.WriteString(suffixes[r.IntN(len(suffixes))])
		}
		texts = append(texts, b.String())
	}
	alphabet := []rune("abcyzABYZ019 .,-/_'éÉüÜßøÆçñŁłİıΣσςДжЖ中文字\u0300\u0301ǅ²½Ⅻﬁ Ａｂ\u00a0\u200b😀ﾟ")
	for range 2000 {
		var b strings.Builder
		for range r.IntN(40) {
			b.WriteRune(alphabet[r.IntN(len(alphabet))])
		}
		texts = append(texts, b.String())
	}
	for c := rune(1); c <= utf8.MaxRune; c++ {
		if utf8.ValidRune(c) && (c < 0x3000 || c%61 == 0) {
			texts = append(texts, "q"+string(c)+"q")
		}
	}
	want := engineTokens(t, texts)
	bad := 0
	for i, s := range texts {
		if got := recall.Tokens(s); !slices.Equal(got, want[i]) {
			if bad++; bad <= 10 {
				t.Errorf("Tokens(%q) = %q, the engine says %q", s, got, want[i])
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d texts tokenized unlike the engine", bad, len(texts))
	}
}

// TestSearch_NodeTextAgreesWithTextOf: the view the index is filled from
// (node_text) and the same derivation in Go (which ranks memory as of the
// past and finds the reasons of every search hit) give every node the
// same texts, on both engines.
func TestSearch_NodeTextAgreesWithTextOf(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			var cfg store.Config
			if engine == "postgres" {
				cfg.DatabaseURL = pgtest.URL(t)
			}
			nodeTextAgrees(t, mustOpenConfig(t, cfg))
		})
	}
}

func nodeTextAgrees(t *testing.T, db *store.DB) {
	metas := []string{`{}`, `{"team":"payments","n":3}`, `{"a":[1.5,true,false,null,"x y"],"b":{"c":100.0,"d":-7}}`,
		`{"big":1e21,"small":1.5e-7,"huge":123456789012345678901234567890,"third":0.30000000000000004}`, `{"k":"é\nü","nested":[[["deep"]]]}`,
		`{"n":[1e15,1e16,1e17,0.0001,0.00001,-0.0,3.0,9223372036854775807,9223372036854775808,2.5e-300,1.7976931348623157e308,-12.5e3]}`}
	// Numbers of every size, as a client may write them.
	r := rand.New(rand.NewPCG(5, 8))
	var nums []string
	for range 200 {
		f := (r.Float64() - 0.5) * math.Pow(10, float64(r.IntN(60)-30))
		nums = append(nums, strconv.FormatFloat(f, 'g', -1, 64), strconv.FormatFloat(f, 'e', r.IntN(20), 64), strconv.Itoa(r.IntN(1e9)))
	}
	metas = append(metas, `{"n":[`+strings.Join(nums, ",")+"]}")
	for i, m := range metas {
		in := kura.NodeInput{Kind: "fact", ID: fmt.Sprintf("f%d", i), Title: ptr("Title words"), Summary: ptr("summary text"), Metadata: json.RawMessage(m)}
		if i%2 == 1 {
			in.TargetFiles = []string{"a/b.go", "c d.md"}
			in.PayloadRef = ptr("s3://bucket/key")
			in.Owner = ptr("agent:bmo")
		}
		mustNode(t, db, "s", in)
	}
	mustNode(t, db, "s", kura.NodeInput{Kind: "note", Summary: ptr("generated id")}) // a UUID: not in ident
	nodes, _, err := db.ListNodes(context.Background(), "s", kura.NodeFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for i := range nodes {
		n := &nodes[i]
		cols, err := db.NodeText(context.Background(), "s", n.Kind, n.ID)
		if err != nil {
			t.Fatal(err)
		}
		for c, f := range store.SearchFields(n) {
			if cols[c] != f.Text {
				t.Errorf("%s %s: node_text %q, Go %q", n.Ref, f.Code, cols[c], f.Text)
			}
		}
	}
	if f := store.SearchFields(&nodes[len(nodes)-1]); f[1].Text != "note" {
		t.Errorf("a generated id is searchable: ident %q", f[1].Text)
	}
}

// searchRefs runs a search and returns the refs found, best first.
func searchRefs(tb testing.TB, db *store.DB, scope string, q kura.SearchQuery) []string {
	tb.Helper()
	if q.Limit == 0 {
		q.Limit = 100
	}
	res, err := db.SearchNodes(context.Background(), scope, q)
	if err != nil {
		tb.Fatal(err)
	}
	out := []string{}
	for _, r := range res {
		out = append(out, r.Ref)
	}
	return out
}

// fill writes n nodes of unrelated text to scope, so the words a test is
// about are rare (a word in most nodes weighs next to nothing).
func fill(tb testing.TB, db *store.DB, scope string, n int) {
	tb.Helper()
	ins := make([]kura.NodeInput, n)
	for i := range ins {
		ins[i] = kura.NodeInput{Kind: "note", ID: fmt.Sprintf("filler-%d", i), Title: ptr("filler"), Summary: ptr("nothing of note here")}
	}
	if _, err := db.PutNodes(context.Background(), scope, ins); err != nil {
		tb.Fatal(err)
	}
}

// TestSearch_Ranking: the ranking a model's question needs, one rule per
// case: each case writes its nodes (and filler) to a fresh scope and
// expects the refs in order.
func TestSearch_Ranking(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	type node struct{ ref, title, summary string }
	tests := []struct {
		name  string
		nodes []node
		q     string
		want  []string
	}{
		{"RareOutweighsCommon", []node{
			{"fact:common", "", "deploy deploy notes for the service"},
			{"fact:rare", "", "deploy uniswap router"},
			{"fact:common2", "", "deploy steps"},
			{"fact:common3", "", "deploy checklist"},
		}, "uniswap deploy", []string{"fact:rare", "fact:common", "fact:common2", "fact:common3"}},
		{"TitleOutweighsSummary", []node{
			{"fact:sum", "other things", "the cache is warm"},
			{"fact:title", "cache warming", "other things"},
		}, "cache", []string{"fact:title", "fact:sum"}},
		{"TermFrequencyCounts", []node{
			{"fact:once", "", "retry once then give up for good"},
			{"fact:thrice", "", "retry, retry and retry again later"},
		}, "retry", []string{"fact:thrice", "fact:once"}},
		{"Stemming", []node{
			{"fact:addr", "Router address", "the address of the uniswap router"},
			{"fact:other", "Other", "no such word"},
		}, "addresses", []string{"fact:addr"}},
		{"StopWordsWeighNothing", []node{
			{"fact:the", "the the the", "what is the the"},
			{"fact:router", "", "uniswap router"},
		}, "what is the uniswap router address", []string{"fact:router"}},
		{"OnlyStopWordsKeepThem", []node{
			{"fact:band", "The Who", "a band"},
			{"fact:other", "", "something"},
		}, "the who", []string{"fact:band"}},
		{"SomeWordsSuffice", []node{
			{"fact:both", "", "support group meeting"},
			{"fact:one", "", "the group went hiking"},
		}, "When did she go to the support group?", []string{"fact:both", "fact:one"}},
		{"IrregularVerbs", []node{
			{"fact:went", "", "I went to Lisbon in May"},
			{"fact:bought", "", "we bought a boat"},
			{"fact:other", "", "a trip is planned"},
		}, "where did she go?", []string{"fact:went"}},
		{"IrregularPastAsked", []node{
			{"fact:buy", "", "we plan to buy a boat"},
			{"fact:other", "", "a trip is planned"},
		}, "what has she bought", []string{"fact:buy"}},
		{"Diacritics", []node{
			{"fact:ecole", "École", "a school"},
		}, "ecole", []string{"fact:ecole"}},
		{"QuerySyntaxIsText", []node{
			{"fact:near", "NEAR and OR", "title: x*"},
		}, `near OR "title:" x* AND (`, []string{"fact:near"}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			scope := fmt.Sprintf("rank%d", i)
			for _, n := range tc.nodes {
				kind, id, _ := strings.Cut(n.ref, ":")
				mustNode(t, db, scope, kura.NodeInput{Kind: kind, ID: id, Title: ptr(n.title), Summary: ptr(n.summary)})
			}
			fill(t, db, scope, 8)
			if got := searchRefs(t, db, scope, kura.SearchQuery{Q: tc.q}); !slices.Equal(got, tc.want) {
				t.Fatalf("search %q: got %v, want %v", tc.q, got, tc.want)
			}
		})
	}
}

// TestSearch_RareWordsOutweighCommonOnes holds both engines to weighing a
// word by its rarity: a node holding a question's two rare words outranks
// twenty short ones holding its two common words twice each, ranked whole and ranked
// pruned (common words past CommonWord). PostgreSQL's ts_rank weighs every
// word alike; before it was weighted by IDF it put the target last.
func TestSearch_RareWordsOutweighCommonOnes(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{"sqlite", "postgres"} {
		for _, bounds := range []struct {
			name string
			b    store.RankBounds
		}{{"whole", store.RankBounds{}}, {"pruned", store.RankBounds{CommonWord: 5, Budget: 10, RecentCommon: 50}}} {
			t.Run(engine+"/"+bounds.name, func(t *testing.T) {
				t.Parallel()
				cfg := store.Config{RankBounds: bounds.b}
				if engine == "postgres" {
					cfg.DatabaseURL = pgtest.URL(t)
				}
				db := mustOpenConfig(t, cfg)
				ins := []kura.NodeInput{{Kind: "fact", ID: "target",
					Summary: ptr("in spring she adopted a retired greyhound from the shelter by the harbour after months of looking")}}
				for i := range 20 {
					ins = append(ins, kura.NodeInput{Kind: "note", ID: fmt.Sprintf("chat-%d", i),
						Summary: ptr(fmt.Sprintf("say weekend, say weekend %d", i))})
				}
				if _, err := db.PutNodes(context.Background(), "rare", ins); err != nil {
					t.Fatal(err)
				}
				got := searchRefs(t, db, "rare", kura.SearchQuery{Q: "what did she say about adopting a greyhound on the weekend", Limit: 5})
				if len(got) == 0 || got[0] != "fact:target" {
					t.Fatalf("search: got %v, want fact:target first", got)
				}
			})
		}
	}
}

// TestSearch_Explains: the reasons name each field a query word was found
// in and the words as the query gave them, stemmed matches included.
func TestSearch_Explains(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	mustNode(t, db, "s", kura.NodeInput{Kind: "decision", ID: "uniswap-router", Title: ptr("Router addresses"), Summary: ptr("Uniswap routes swaps"),
		TargetFiles: []string{"contracts/Router.sol"}, Owner: ptr("agent:bmo"), PayloadRef: ptr("s3://routers/v3"),
		Metadata: json.RawMessage(`{"chain":"mainnet","router":"v3"}`)})
	fill(t, db, "s", 8)
	res, err := db.SearchNodes(context.Background(), "s", kura.SearchQuery{Q: "uniswap routers address mainnet", Limit: 10})
	if err != nil || len(res) != 1 {
		t.Fatalf("got %+v %v", res, err)
	}
	want := []kura.SearchReason{
		{Code: "title_match", Detail: "routers, address"},
		{Code: "id_match", Detail: "uniswap, routers"},
		{Code: "target_file_match", Detail: "routers"},
		{Code: "summary_match", Detail: "uniswap"},
		{Code: "payload_match", Detail: "routers"},
		{Code: "metadata_match", Detail: "mainnet"}, // "router" is a key there, not a value
	}
	if !slices.Equal(res[0].Reasons, want) {
		t.Errorf("reasons:\n got %+v\nwant %+v", res[0].Reasons, want)
	}
}

// TestSearch_MisspeltWord: a query word the scope's index does not hold is
// looked up among the words it does hold, and the reasons say so; a word
// held only by a misspelt node leads to the word meant, after the exact
// hits; words of other scopes are not offered.
func TestSearch_MisspeltWord(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	mustNode(t, db, "s", kura.NodeInput{Kind: "fact", ID: "router", Title: ptr("Uniswap router"), Summary: ptr("the router address is 0x68b3")})
	mustNode(t, db, "s", kura.NodeInput{Kind: "fact", ID: "pool", Title: ptr("Liquidity pool"), Summary: ptr("pools hold reserves")})
	mustNode(t, db, "s", kura.NodeInput{Kind: "fact", ID: "typo", Title: ptr("Adress book"), Summary: ptr("a misspelt note")})
	mustNode(t, db, "s", kura.NodeInput{Kind: "fact", ID: "a1", Title: ptr("Mailing address"), Summary: ptr("where letters go")})
	mustNode(t, db, "s", kura.NodeInput{Kind: "fact", ID: "a2", Title: ptr("Home address"), Summary: ptr("where I live")})
	mustNode(t, db, "other", kura.NodeInput{Kind: "fact", ID: "x", Summary: ptr("uniswop is a word only here")})
	fill(t, db, "s", 8)

	res, err := db.SearchNodes(ctx, "s", kura.SearchQuery{Q: "what is the uniswop router address", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) == 0 || res[0].Ref != "fact:router" {
		t.Fatalf("got %v, want fact:router first", refsOf(res))
	}
	// "uniswop" is held by scope other only: here it is absent, and
	// corrected.
	if !slices.Contains(res[0].Reasons, kura.SearchReason{Code: "typo_match", Detail: "uniswop ~ uniswap"}) ||
		!slices.Contains(res[0].Reasons, kura.SearchReason{Code: "title_match", Detail: "router, uniswap"}) {
		t.Errorf("reasons of fact:router: %+v", res[0].Reasons)
	}
	for _, r := range res[1:] {
		for _, why := range r.Reasons {
			if why.Code == "typo_match" {
				t.Errorf("%s: %+v, but it holds no corrected word", r.Ref, why)
			}
		}
	}

	// "adress" is held (by the misspelt note): it is found first, then the
	// nodes of the commoner word it was near.
	res, err = db.SearchNodes(ctx, "s", kura.SearchQuery{Q: "adress", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if got := refsOf(res); !slices.Equal(got, []string{"fact:typo", "fact:a1", "fact:a2", "fact:router"}) {
		t.Fatalf("adress: got %v", got)
	}
	if !slices.Contains(res[1].Reasons, kura.SearchReason{Code: "typo_match", Detail: "adress ~ address"}) {
		t.Errorf("reasons of %s: %+v", res[1].Ref, res[1].Reasons)
	}
	// The limit reached, nothing is looked up.
	if got := searchRefs(t, db, "s", kura.SearchQuery{Q: "adress", Limit: 1}); !slices.Equal(got, []string{"fact:typo"}) {
		t.Errorf("adress, limit 1: got %v", got)
	}
	// Short words are never corrected (pool is one edit from "poo", but
	// three letters are too few to tell); nor is a word nothing is near;
	// nor is a word taken for a node kind, which every node holds.
	for _, q := range []string{"poo", "xyzzyplugh", "fakt"} {
		if got := searchRefs(t, db, "s", kura.SearchQuery{Q: q}); len(got) != 0 {
			t.Errorf("%s: got %v, want nothing", q, got)
		}
	}
	// A word written after the vocabulary was read is offered too (the
	// store is small: its copy is refreshed at once).
	mustNode(t, db, "s", kura.NodeInput{Kind: "fact", ID: "new", Title: ptr("Kubernetes cluster"), Summary: ptr("k8s")})
	if got := searchRefs(t, db, "s", kura.SearchQuery{Q: "kubernetis"}); !slices.Equal(got, []string{"fact:new"}) {
		t.Errorf("kubernetis: got %v, want fact:new", got)
	}
}

func refsOf(res []kura.SearchResult) []string {
	out := []string{}
	for _, r := range res {
		out = append(out, r.Ref)
	}
	return out
}

// TestSearch_IndexFollowsEveryWrite: every way of writing a node keeps the
// index in step within its transaction: a batch, a new version, a
// revision, a transition, a turn's extraction; and a failed batch leaves
// nothing in the index.
func TestSearch_IndexFollowsEveryWrite(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	fill(t, db, "s", 8)
	if _, err := db.PutNodes(ctx, "s", []kura.NodeInput{
		{Kind: "fact", ID: "a", Summary: ptr("alpha words")},
		{Kind: "fact", ID: "b", Summary: ptr("beta words"), DerivedFrom: []string{"fact:missing"}},
	}); err == nil {
		t.Fatal("a batch deriving from a missing node was accepted")
	}
	if got := searchRefs(t, db, "s", kura.SearchQuery{Q: "alpha"}); len(got) != 0 {
		t.Fatalf("a failed batch left %v in the index", got)
	}
	mustNode(t, db, "s", kura.NodeInput{Kind: "fact", ID: "a", Summary: ptr("alpha words")})
	mustNode(t, db, "s", kura.NodeInput{Kind: "fact", ID: "a", Summary: ptr("gamma words")})
	if got := searchRefs(t, db, "s", kura.SearchQuery{Q: "alpha"}); len(got) != 0 {
		t.Errorf("old words still found: %v", got)
	}
	if got := searchRefs(t, db, "s", kura.SearchQuery{Q: "gamma"}); !slices.Equal(got, []string{"fact:a"}) {
		t.Errorf("new words: got %v", got)
	}
	if _, err := db.TransitionNode(ctx, "s", "fact:a", &kura.Transition{Writer: root, Lifecycle: "active", Reason: "ok"}); err != nil {
		t.Fatal(err)
	}
	if got := searchRefs(t, db, "s", kura.SearchQuery{Q: "gamma", Lifecycle: "active"}); !slices.Equal(got, []string{"fact:a"}) {
		t.Errorf("after a transition: got %v", got)
	}
	if _, err := db.ReviseNode(ctx, "s", "fact:a", &kura.NodeInput{Writer: root, ID: "a2", Summary: ptr("delta words")}); err != nil {
		t.Fatal(err)
	}
	// Equal scores: the older node first.
	if got := searchRefs(t, db, "s", kura.SearchQuery{Q: "delta gamma"}); !slices.Equal(got, []string{"fact:a", "fact:a2"}) {
		t.Errorf("after a revision: got %v", got)
	}
	raw := rawDB(t, db.Path())
	var rows, nodes int
	if err := raw.QueryRow("SELECT (SELECT count(*) FROM node_fts), (SELECT count(*) FROM nodes)").Scan(&rows, &nodes); err != nil {
		t.Fatal(err)
	}
	if rows != nodes {
		t.Errorf("the index has %d rows for %d nodes", rows, nodes)
	}
	check, err := db.VerifyAll(ctx)
	if err != nil || check.Integrity != "ok" {
		t.Errorf("integrity after writes: %+v %v", check, err)
	}
}

// TestSearch_MigrationIndexesExistingNodes: a database written before the
// index existed (its nodes, their words in node_terms) gets every node
// indexed by the migration, node_terms dropped, and search finds them.
func TestSearch_MigrationIndexesExistingNodes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "kura.db")
	db := mustOpenAt(t, path, nil)
	mustNode(t, db, "s", kura.NodeInput{Kind: "fact", ID: "old", Title: ptr("Uniswap router"), Summary: ptr("written long ago"),
		TargetFiles: []string{"swap/router.go"}, Metadata: json.RawMessage(`{"chain":"mainnet"}`)})
	mustNode(t, db, "t", kura.NodeInput{Kind: "fact", ID: "elsewhere", Summary: ptr("uniswap in another scope")})
	fill(t, db, "s", 8)
	want := searchRefs(t, db, "s", kura.SearchQuery{Q: "mainnet routers"})
	db.Close(ctx)

	// As an older kurad left it: no index, no view, the old word table.
	raw := rawDB(t, path)
	for _, q := range []string{
		"DROP TRIGGER node_fts_delete",
		"DROP TABLE node_fts_vocab", "DROP TABLE node_fts", "DROP VIEW node_text",
		"CREATE TABLE node_terms (sid INTEGER NOT NULL, term TEXT NOT NULL, nid INTEGER NOT NULL, fields INTEGER NOT NULL, PRIMARY KEY (sid, term, nid)) WITHOUT ROWID",
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	names, err := filepath.Glob("migrations/*_node_fts.sql")
	if err != nil || len(names) != 1 {
		t.Fatalf("the migration: %v %v", names, err)
	}
	migration, err := os.ReadFile(names[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(string(migration)); err != nil {
		t.Fatalf("migration: %v", err)
	}
	var terms int
	if err := raw.QueryRow("SELECT count(*) FROM sqlite_schema WHERE name = 'node_terms'").Scan(&terms); err != nil || terms != 0 {
		t.Errorf("node_terms still there (%d, %v)", terms, err)
	}
	raw.Close()

	db = mustOpenAt(t, path, nil)
	if got := searchRefs(t, db, "s", kura.SearchQuery{Q: "mainnet routers"}); !slices.Equal(got, want) || len(got) != 1 {
		t.Errorf("after the migration: got %v, want %v", got, want)
	}
	if got := searchRefs(t, db, "t", kura.SearchQuery{Q: "uniswap"}); !slices.Equal(got, []string{"fact:elsewhere"}) {
		t.Errorf("scope t: got %v", got)
	}
	check, err := db.VerifyAll(ctx)
	if err != nil || check.Integrity != "ok" {
		t.Errorf("integrity after the migration: %+v %v", check, err)
	}
}

// TestSearch_CompileOrdersByRanking: a compile's query orders the trace
// and each bucket by the search ranking (score descending, ties in the
// order without a query), with the same scores and reasons search gives;
// buckets do not change; a compile as of now over an unchanged scope ranks
// as the current one does.
func TestSearch_CompileOrdersByRanking(t *testing.T) {
	t.Parallel()
	c := &clock{pinned: time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)}
	db := openWithClock(t, c)
	ctx := context.Background()
	active, trusted := ptr("active"), ptr("trusted")
	mustNode(t, db, "s", kura.NodeInput{Kind: "fact", ID: "sum", Summary: ptr("the retry policy is three times"), Lifecycle: active, Authority: trusted})
	mustNode(t, db, "s", kura.NodeInput{Kind: "fact", ID: "title", Title: ptr("Retry policy"), Summary: ptr("three times"), Lifecycle: active, Authority: trusted})
	mustNode(t, db, "s", kura.NodeInput{Kind: "fact", ID: "cand", Title: ptr("Retry budget"), Summary: ptr("unsure")})
	fill(t, db, "s", 8)
	c.set(c.now().Add(time.Hour))
	req := &admission.Request{Query: "retries"}
	body, err := previewJSON(ctx, db, "s", req)
	if err != nil {
		t.Fatal(err)
	}
	var b bundle
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatal(err)
	}
	if got := refsIn(t, b.Buckets["use_now"]); !slices.Equal(got[:2], []string{"fact:title", "fact:sum"}) {
		t.Errorf("use_now: got %v, want fact:title, fact:sum first", got)
	}
	search, err := db.SearchNodes(ctx, "s", kura.SearchQuery{Q: "retries", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var trace []string
	for i, te := range b.Trace {
		trace = append(trace, te.Ref)
		if i < len(search) {
			if te.Ref != search[i].Ref || te.Score == nil || *te.Score != search[i].Score || !slices.Equal(te.Why, search[i].Reasons) {
				t.Errorf("trace %d: %s score %v why %+v; search: %s %v %+v", i, te.Ref, te.Score, te.Why, search[i].Ref, search[i].Score, search[i].Reasons)
			}
		} else if te.Score == nil || *te.Score != 0 {
			t.Errorf("%s: score %v, want 0 (no match)", te.Ref, te.Score)
		}
	}
	// cand's title is shorter than title's: the same word weighs more.
	if !slices.Equal(trace[:3], []string{"fact:cand", "fact:title", "fact:sum"}) {
		t.Errorf("trace: got %v", trace[:3])
	}
	past, err := previewJSON(ctx, db, "s", &admission.Request{Query: "retries", AsOf: kura.FormatTime(c.now())})
	if err != nil {
		t.Fatal(err)
	}
	var p bundle
	if err := json.Unmarshal(past, &p); err != nil {
		t.Fatal(err)
	}
	for i := range b.Trace {
		x, y := b.Trace[i], p.Trace[i]
		if x.Ref != y.Ref || *x.Score != *y.Score || !slices.Equal(x.Why, y.Why) {
			t.Errorf("as of now, trace %d: %s %v %+v; current: %s %v %+v", i, y.Ref, *y.Score, y.Why, x.Ref, *x.Score, x.Why)
		}
	}
	// As of before the retry budget was retitled, it ranks by its old text.
	before := kura.FormatTime(c.now())
	c.set(c.now().Add(time.Hour))
	mustNode(t, db, "s", kura.NodeInput{Kind: "fact", ID: "cand", Title: ptr("Budget")})
	if got := searchRefs(t, db, "s", kura.SearchQuery{Q: "retries"}); !slices.Equal(got, []string{"fact:title", "fact:sum"}) {
		t.Errorf("search after the retitle: got %v", got)
	}
	past, err = previewJSON(ctx, db, "s", &admission.Request{Query: "retries", AsOf: before})
	if err != nil {
		t.Fatal(err)
	}
	p = bundle{}
	if err := json.Unmarshal(past, &p); err != nil {
		t.Fatal(err)
	}
	if p.Trace[0].Ref != "fact:cand" || p.Trace[0].Why[0] != (kura.SearchReason{Code: "title_match", Detail: "retries"}) {
		t.Errorf("as of before the retitle: trace %+v", p.Trace[:3])
	}
}

// TestSearch_BoundedRanking: a query holding a word common in the scope is
// ranked within bounds: every node holding a rarer word is ranked, with
// the exact score the whole query gives it; a node holding only common
// words is ranked only when those are too few, and then only among the
// newest; a query of common words only ranks the newest nodes holding
// them. Scores are always the exact ones (BM25 over the scope, recall.BM25).
func TestSearch_BoundedRanking(t *testing.T) {
	t.Parallel()
	db := mustOpenConfig(t, store.Config{RankBounds: store.RankBounds{CommonWord: 10, Budget: 12, RecentCommon: 6}})
	ctx := context.Background()
	var ins []kura.NodeInput
	for i := range 40 {
		summary := "common words here"
		switch {
		case i%10 == 3:
			summary = "rare and common"
		case i%10 == 7:
			summary = "only rare"
		case i%4 == 1:
			summary = "nothing at all"
		}
		ins = append(ins, kura.NodeInput{Kind: "note", ID: fmt.Sprintf("n%02d", i), Summary: ptr(summary), Title: ptr(fmt.Sprintf("title %d", i%3))})
	}
	if _, err := db.PutNodes(ctx, "s", ins); err != nil {
		t.Fatal(err)
	}
	all, _, err := db.ListNodes(ctx, "s", kura.NodeFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	docs := make([]recall.Doc, len(all))
	for i := range all {
		for _, f := range store.SearchFields(&all[i]) {
			docs[i] = append(docs[i], recall.Tokens(f.Text))
		}
	}
	exact := func(q string) map[string]float64 {
		words := store.QueryWords(q)
		phrases := make([][]string, len(words))
		for i, w := range words {
			phrases[i] = recall.Phrase(w)
		}
		out := map[string]float64{}
		for i, s := range recall.BM25(docs, phrases, store.SearchWeights()) {
			if s > 0 {
				out[all[i].Ref] = recall.RoundScore(s)
			}
		}
		return out
	}
	search := func(q string, limit int) []kura.SearchResult {
		res, err := db.SearchNodes(ctx, "s", kura.SearchQuery{Q: q, Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	check := func(q string, res []kura.SearchResult, want []string) {
		t.Helper()
		scores := exact(q)
		var got []string
		for i, r := range res {
			got = append(got, r.Ref)
			if r.Score != scores[r.Ref] {
				t.Errorf("%q: %s scores %v, the whole query gives %v", q, r.Ref, r.Score, scores[r.Ref])
			}
			if i > 0 && (r.Score > res[i-1].Score || r.Score == res[i-1].Score && r.Ref < res[i-1].Ref) {
				t.Errorf("%q: %s after %s out of order", q, r.Ref, res[i-1].Ref)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%q: got %v, want %v", q, got, want)
		}
	}
	// "common" is held by 30 nodes (common: 10 and more; in most nodes, it
	// weighs next to nothing), "rare" by 8: "only rare" is the shorter
	// text, so it ranks first.
	rare := []string{"note:n07", "note:n17", "note:n27", "note:n37", "note:n03", "note:n13", "note:n23", "note:n33"}
	check("rare common", search("rare common", 8), rare)
	// Fewer rare nodes than the limit: then the newest 6 nodes holding a
	// word are ranked as well (n39, n38, n37, n36, n35, n34; n37 holds the
	// rare word already).
	check("rare common", search("rare common", 20), append(slices.Clone(rare), "note:n34", "note:n35", "note:n36", "note:n38", "note:n39"))
	// Only common words: the newest 6 nodes holding them (n33 holds one
	// word, in a longer text).
	check("common words", search("common words", 20), []string{"note:n34", "note:n35", "note:n36", "note:n38", "note:n39", "note:n33"})
	// A filter applies to the newest nodes, not before: the work stays
	// bounded however few pass.
	res, err := db.SearchNodes(ctx, "s", kura.SearchQuery{Q: "common words", Limit: 20, Lifecycle: "candidate"})
	if err != nil || len(res) != 6 {
		t.Errorf("filtered: %v %v", refsOf(res), err)
	}
}
