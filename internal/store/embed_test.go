package store_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/embed"
	"github.com/kura-memory/kura/internal/embed/embedtest"
	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/sqlitetest"
	"github.com/kura-memory/kura/internal/store"
	"github.com/kura-memory/kura/internal/testwait"
)

const testDims = 64

// embedStore is a store with an embedder and its running worker.
type embedStore struct {
	*store.DB
	path    string
	raw     *sql.DB
	closeFn func() // closes the worker, then the store
}

// openEmbedStore opens the store at path (a new one when path is empty)
// embedding with model at srv, and starts its worker with short retries.
func openEmbedStore(t *testing.T, srv *embedtest.Server, path, model string, key ed25519.PrivateKey, opts ...func(*store.EmbedWorkerConfig)) *embedStore {
	t.Helper()
	if path == "" {
		path = sqlitetest.File(t)
	}
	if key == nil {
		_, key, _ = ed25519.GenerateKey(rand.Reader)
	}
	c, err := embed.New(embed.Config{URL: srv.URL, Model: model, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	db := store.New(store.Config{Path: path, Signer: key, Embedder: c})
	if err := db.Open(context.Background()); err != nil {
		t.Fatalf("open store: %v", err)
	}
	wc := store.EmbedWorkerConfig{Batch: 4, RetryMin: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond}
	for _, o := range opts {
		o(&wc)
	}
	w := store.NewEmbedWorker(db, wc)
	if err := w.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			w.Close(context.Background())
			db.Close(context.Background())
		}
	})
	es := &embedStore{DB: db, path: path, raw: rawDB(t, path)}
	// Close is what a restart does: worker first, then the store.
	es.closeFn = func() {
		closed = true
		if err := w.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return es
}

// storedVector is a node's row in node_vectors.
type storedVector struct {
	model   string
	dims    int
	version int
	vec     []float32
}

func (s *embedStore) vector(t *testing.T, scope, ref string) (storedVector, bool) {
	t.Helper()
	kind, id, _ := strings.Cut(ref, ":")
	var v storedVector
	var raw []byte
	err := s.raw.QueryRow(`SELECT v.model, v.dims, v.version, v.vec FROM node_vectors v JOIN nodes n ON n.nid = v.nid
		JOIN scopes s ON s.sid = n.sid WHERE s.name = ? AND n.kind = ? AND n.id = ?`, scope, kind, id).Scan(&v.model, &v.dims, &v.version, &raw)
	if err == sql.ErrNoRows {
		return v, false
	}
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+4 <= len(raw); i += 4 {
		v.vec = append(v.vec, math.Float32frombits(binary.LittleEndian.Uint32(raw[i:])))
	}
	return v, true
}

// waitVector waits until ref has a vector of model for node version.
func (s *embedStore) waitVector(t *testing.T, scope, ref, model string, version int) storedVector {
	t.Helper()
	var got storedVector
	testwait.For(t, testwait.Default, ref+" embedded with "+model, func() bool {
		v, ok := s.vector(t, scope, ref)
		got = v
		return ok && v.model == model && v.version == version
	})
	return got
}

func putNode(t *testing.T, db *store.DB, scope, kind, id, title, summary string) *kura.Node {
	t.Helper()
	n, _, err := db.PutNode(context.Background(), scope, &kura.NodeInput{Writer: root, Kind: kind, ID: id, Title: &title, Summary: &summary})
	if err != nil {
		t.Fatalf("put %s:%s: %v", kind, id, err)
	}
	return n
}

func TestEmbed_VectorAfterCommit(t *testing.T) {
	t.Parallel()
	srv := embedtest.Start(t, testDims)
	db := openEmbedStore(t, srv, "", "m1", nil)
	putNode(t, db.DB, "acme", "fact", "car", "Car maintenance", "service the car every spring")
	v := db.waitVector(t, "acme", "fact:car", "m1", 1)
	if v.dims != testDims || len(v.vec) != testDims {
		t.Fatalf("stored %d dims, %d floats; want %d", v.dims, len(v.vec), testDims)
	}
	if want := embedtest.Vector("m1", "Car maintenance\nservice the car every spring", testDims); !slices.Equal(v.vec, want) {
		t.Fatalf("stored vector is not the embedding of the node's title and summary")
	}
	// The worker counts a batch just after committing its vectors: the
	// count may trail the vector by a moment.
	var info *kura.EmbedderInfo
	if !testwait.Until(testwait.Default, func() bool {
		info = db.EmbedderInfo()
		return info != nil && info.Model == "m1" && info.Dims == testDims && info.State == "ok" && info.Embedded >= 1
	}) {
		t.Fatalf("info %+v; want model m1, %d dims, state ok, embedded >= 1", info, testDims)
	}
}

func TestEmbed_OnlyChangedTextIsEmbeddedAgain(t *testing.T) {
	t.Parallel()
	srv := embedtest.Start(t, testDims)
	db := openEmbedStore(t, srv, "", "m1", nil)
	putNode(t, db.DB, "acme", "fact", "f1", "Dogs", "walk the dog at noon")
	db.waitVector(t, "acme", "fact:f1", "m1", 1)
	text := "Dogs\nwalk the dog at noon"

	// A new version with the same text (only the confidence moves) keeps
	// its vector: the embedder is not asked again.
	conf := 0.9
	if _, _, err := db.PutNode(t.Context(), "acme", &kura.NodeInput{Writer: root, Kind: "fact", ID: "f1", Confidence: &conf}); err != nil {
		t.Fatal(err)
	}
	db.waitVector(t, "acme", "fact:f1", "m1", 2)
	if n := srv.Count(text); n != 1 {
		t.Fatalf("unchanged text embedded %d times, want 1", n)
	}
	// A new summary is embedded.
	putNode(t, db.DB, "acme", "fact", "f1", "Dogs", "walk the dog at six")
	v := db.waitVector(t, "acme", "fact:f1", "m1", 3)
	if want := embedtest.Vector("m1", "Dogs\nwalk the dog at six", testDims); !slices.Equal(v.vec, want) {
		t.Fatal("the vector is not the new text's")
	}
	if n := srv.Count("Dogs\nwalk the dog at six"); n != 1 {
		t.Fatalf("changed text embedded %d times, want 1", n)
	}
}

func TestEmbed_WriteSucceedsWithEmbedderDown(t *testing.T) {
	t.Parallel()
	srv := embedtest.Start(t, testDims)
	srv.SetDown(true)
	db := openEmbedStore(t, srv, "", "m1", nil)
	testwait.For(t, testwait.Default, "the worker to find the embedder failing", func() bool {
		i := db.EmbedderInfo()
		return i.State == "failing" && i.LastError != ""
	})
	putNode(t, db.DB, "acme", "fact", "down", "Billing", "invoices go out on the first")
	testwait.For(t, testwait.Default, "the node counted as pending", func() bool { return db.EmbedderInfo().Pending >= 1 })
	if _, ok := db.vector(t, "acme", "fact:down"); ok {
		t.Fatal("a vector was stored while the embedder was down")
	}
	if i := db.EmbedderInfo(); !strings.Contains(i.LastError, "503") || i.Errors < 1 {
		t.Fatalf("info %+v; want the 503 in last_error and errors counted", i)
	}
	srv.SetDown(false)
	db.waitVector(t, "acme", "fact:down", "m1", 1)
	testwait.For(t, testwait.Default, "state ok and nothing pending", func() bool {
		i := db.EmbedderInfo()
		return i.State == "ok" && i.Pending == 0
	})
}

// TestEmbed_FailingUntilTheEmbedderAnswers: with nothing to embed, the
// worker still asks a failing embedder again (with backoff), so the state
// turns ok only once it really answers.
func TestEmbed_FailingUntilTheEmbedderAnswers(t *testing.T) {
	t.Parallel()
	srv := embedtest.Start(t, testDims)
	srv.SetDown(true)
	db := openEmbedStore(t, srv, "", "m1", nil)
	testwait.For(t, testwait.Default, "three failed attempts", func() bool {
		i := db.EmbedderInfo()
		return i.Errors >= 3 && i.State == "failing"
	})
	srv.SetDown(false)
	testwait.For(t, testwait.Default, "state ok", func() bool { return db.EmbedderInfo().State == "ok" })
}

// TestEmbed_RefusedTextDoesNotHoldOthersBack: an embedder that refuses
// one text (as llama.cpp answers 500 to a text longer than it takes) gets
// the others of the batch alone; the refused node waits for a new text.
func TestEmbed_RefusedTextDoesNotHoldOthersBack(t *testing.T) {
	t.Parallel()
	srv := embedtest.Start(t, testDims)
	srv.SetRefuse(func(text string) bool { return strings.Contains(text, "poison") })
	// Looks over every node come often: each would send the refused text
	// again if the worker did not keep it out.
	db := openEmbedStore(t, srv, "", "m1", nil, func(c *store.EmbedWorkerConfig) { c.Sweep = 5 * time.Millisecond })
	var ins []kura.NodeInput
	for _, s := range []string{"alpha one", "beta two", "poison pill", "gamma three", "delta four", "epsilon five"} {
		ins = append(ins, kura.NodeInput{Kind: "fact", ID: strings.Fields(s)[0], Summary: &s})
	}
	if _, err := db.PutNodes(t.Context(), "acme", ins); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"alpha", "beta", "gamma", "delta", "epsilon"} {
		db.waitVector(t, "acme", "fact:"+id, "m1", 1)
	}
	testwait.For(t, testwait.Default, "the refusal counted", func() bool {
		i := db.EmbedderInfo()
		return i.Refused == 1 && i.Pending == 1 && i.State == "ok"
	})
	if _, ok := db.vector(t, "acme", "fact:poison"); ok {
		t.Fatal("a vector for the refused text")
	}
	// The embedder quoted the text; what others read does not.
	if i := db.EmbedderInfo(); strings.Contains(i.LastError, "poison") || !strings.Contains(i.LastError, "HTTP 500") {
		t.Fatalf("last_error %q: want the status and not the node's text", i.LastError)
	}
	// Refused once: later looks leave it be until its text changes.
	before := srv.Count("poison pill")
	for _, id := range []string{"kappa", "lambda", "mu"} {
		putNode(t, db.DB, "acme", "fact", id, "", id+" six")
		db.waitVector(t, "acme", "fact:"+id, "m1", 1)
	}
	if n := srv.Count("poison pill"); n != before {
		t.Fatalf("the refused text was sent again (%d times, %d before)", n, before)
	}
	putNode(t, db.DB, "acme", "fact", "poison", "", "antidote taken")
	db.waitVector(t, "acme", "fact:poison", "m1", 2)
	testwait.For(t, testwait.Default, "nothing pending", func() bool { return db.EmbedderInfo().Pending == 0 })
}

func TestEmbed_ModelChangeReembeds(t *testing.T) {
	t.Parallel()
	srv := embedtest.Start(t, testDims)
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	path := sqlitetest.File(t)
	db := openEmbedStore(t, srv, path, "m1", key)
	putNode(t, db.DB, "acme", "fact", "a", "Car", "the car needs new tyres")
	putNode(t, db.DB, "acme", "fact", "b", "Doctor", "see the doctor on friday")
	db.waitVector(t, "acme", "fact:a", "m1", 1)
	db.waitVector(t, "acme", "fact:b", "m1", 1)
	db.closeFn()

	db2 := openEmbedStore(t, srv, path, "m2", key)
	// Until a node is embedded again it is no semantic hit: m1's vectors
	// never rank an m2 query.
	ans, err := db2.SearchMemory(t.Context(), "acme", kura.SearchQuery{Q: "automobile", Mode: kura.SearchSemantic, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range ans.Results {
		for _, why := range r.Reasons {
			if why.Code == "semantic_match" && !strings.HasSuffix(why.Detail, " m2") {
				t.Fatalf("a semantic hit of another model: %+v", why)
			}
		}
	}
	for _, ref := range []string{"fact:a", "fact:b"} {
		v := db2.waitVector(t, "acme", ref, "m2", 1)
		if v.dims != testDims {
			t.Fatalf("%s: %d dims", ref, v.dims)
		}
	}
	ans, err = db2.SearchMemory(t.Context(), "acme", kura.SearchQuery{Q: "automobile", Mode: kura.SearchSemantic, Limit: 1})
	if err != nil || len(ans.Results) != 1 || ans.Results[0].Ref != "fact:a" || ans.Results[0].Reasons[0].Detail[len(ans.Results[0].Reasons[0].Detail)-3:] != " m2" {
		t.Fatalf("semantic search after the re-embedding: %+v, %v", ans, err)
	}
}

// searchRefs runs a search and returns the refs and the reasons by ref.
func memorySearchRefs(t *testing.T, db *store.DB, scope string, q kura.SearchQuery) ([]string, map[string][]kura.SearchReason, []string) {
	t.Helper()
	ans, err := db.SearchMemory(t.Context(), scope, q)
	if err != nil {
		t.Fatalf("search %+v: %v", q, err)
	}
	var refs []string
	why := map[string][]kura.SearchReason{}
	for _, r := range ans.Results {
		refs = append(refs, r.Ref)
		why[r.Ref] = r.Reasons
	}
	return refs, why, ans.Warnings
}

func hasReason(rs []kura.SearchReason, code string) (kura.SearchReason, bool) {
	for _, r := range rs {
		if r.Code == code {
			return r, true
		}
	}
	return kura.SearchReason{}, false
}

// seedMeaning writes nodes of which one (fact:car) is about what the query
// "automobile servicing" means without sharing a word with it.
func seedMeaning(t *testing.T, db *embedStore) {
	t.Helper()
	putNode(t, db.DB, "acme", "fact", "car", "Car maintenance", "the car gets its maintenance in spring")
	putNode(t, db.DB, "acme", "fact", "dog", "Dog walking", "walk the dog before the standup")
	putNode(t, db.DB, "acme", "decision", "billing", "Billing day", "billing runs on the first of the month")
	putNode(t, db.DB, "acme", "fact", "garage", "Automobile garage", "the garage by the station opens at eight")
	for _, ref := range []string{"fact:car", "fact:dog", "decision:billing", "fact:garage"} {
		db.waitVector(t, "acme", ref, "m1", 1)
	}
}

func TestSearchMemory_Hybrid(t *testing.T) {
	t.Parallel()
	srv := embedtest.Start(t, testDims)
	db := openEmbedStore(t, srv, "", "m1", nil)
	seedMeaning(t, db)

	// By words, "automobile servicing" finds only the garage.
	refs, _, warns := memorySearchRefs(t, db.DB, "acme", kura.SearchQuery{Q: "automobile servicing", Mode: kura.SearchLexical, Limit: 10})
	if !slices.Equal(refs, []string{"fact:garage"}) || len(warns) != 0 {
		t.Fatalf("lexical: %v %v; want only fact:garage", refs, warns)
	}
	// Hybrid is the default with an embedder, and finds the car node by
	// meaning; the garage, found both ways, comes first.
	refs, why, warns := memorySearchRefs(t, db.DB, "acme", kura.SearchQuery{Q: "automobile servicing", Limit: 10})
	if len(warns) != 0 || len(refs) < 2 || refs[0] != "fact:garage" || !slices.Contains(refs, "fact:car") {
		t.Fatalf("hybrid: %v %v; want fact:garage first and fact:car among the results", refs, warns)
	}
	sm, ok := hasReason(why["fact:car"], "semantic_match")
	if !ok || !strings.HasSuffix(sm.Detail, " m1") || len(why["fact:car"]) != 1 {
		t.Fatalf("fact:car reasons %+v; want one semantic_match naming m1", why["fact:car"])
	}
	if _, ok := hasReason(why["fact:garage"], "title_match"); !ok {
		t.Fatalf("fact:garage reasons %+v; want its title_match kept", why["fact:garage"])
	}
	if _, ok := hasReason(why["fact:garage"], "semantic_match"); !ok {
		t.Fatalf("fact:garage reasons %+v; want a semantic_match too", why["fact:garage"])
	}
	// The car node is the nearest by meaning.
	refs, why, _ = memorySearchRefs(t, db.DB, "acme", kura.SearchQuery{Q: "automobile servicing", Mode: kura.SearchSemantic, Limit: 1})
	if !slices.Equal(refs, []string{"fact:car"}) {
		t.Fatalf("semantic: %v; want fact:car", refs)
	}
	// The detail is the cosine with three decimals.
	sm, _ = hasReason(why["fact:car"], "semantic_match")
	if c, _, _ := strings.Cut(sm.Detail, " "); len(c) != 5 || c[1] != '.' {
		t.Fatalf("semantic_match detail %q; want <cosine, 3 decimals> <model>", sm.Detail)
	}
	// Filters hold in the semantic list too, with their reasons.
	refs, why, _ = memorySearchRefs(t, db.DB, "acme", kura.SearchQuery{Q: "automobile servicing", Kind: "decision", Limit: 10})
	if !slices.Equal(refs, []string{"decision:billing"}) {
		t.Fatalf("hybrid with kind=decision: %v", refs)
	}
	if rs := why["decision:billing"]; len(rs) != 2 || rs[0].Code != "semantic_match" || rs[1] != (kura.SearchReason{Code: "kind_filter", Detail: "decision"}) {
		t.Fatalf("reasons %+v; want semantic_match then kind_filter", rs)
	}
	// No words: the filters alone select, as lexical search does.
	refs, _, warns = memorySearchRefs(t, db.DB, "acme", kura.SearchQuery{Kind: "decision", Limit: 10})
	if !slices.Equal(refs, []string{"decision:billing"}) || len(warns) != 0 {
		t.Fatalf("no q: %v %v", refs, warns)
	}
}

func TestSearchMemory_EmbedderDownAtQuery(t *testing.T) {
	t.Parallel()
	srv := embedtest.Start(t, testDims)
	db := openEmbedStore(t, srv, "", "m1", nil)
	seedMeaning(t, db)
	srv.SetDown(true)
	for _, mode := range []string{"", kura.SearchHybrid, kura.SearchSemantic} {
		refs, why, warns := memorySearchRefs(t, db.DB, "acme", kura.SearchQuery{Q: "automobile servicing", Mode: mode, Limit: 10})
		if !slices.Equal(refs, []string{"fact:garage"}) {
			t.Errorf("mode %q with the embedder down: %v; want the lexical answer", mode, refs)
		}
		if _, ok := hasReason(why["fact:garage"], "semantic_match"); ok {
			t.Errorf("mode %q: a semantic_match without an embedder", mode)
		}
		if len(warns) != 1 || !strings.Contains(warns[0], "embedder did not answer") || !strings.Contains(warns[0], "by words only") {
			t.Errorf("mode %q: warnings %q", mode, warns)
		}
	}
	// A write goes on meanwhile.
	putNode(t, db.DB, "acme", "fact", "later", "Puppy", "the puppy needs a walk")
}

// TestSearchMemory_ScopeBound: the nearest node by meaning in another
// scope is never a hit.
func TestSearchMemory_ScopeBound(t *testing.T) {
	t.Parallel()
	srv := embedtest.Start(t, testDims)
	db := openEmbedStore(t, srv, "", "m1", nil)
	putNode(t, db.DB, "alpha", "fact", "a", "Dog walking", "walk the dog at noon")
	putNode(t, db.DB, "beta", "fact", "b", "Car maintenance", "car maintenance every spring")
	db.waitVector(t, "alpha", "fact:a", "m1", 1)
	db.waitVector(t, "beta", "fact:b", "m1", 1)
	for _, mode := range []string{kura.SearchSemantic, kura.SearchHybrid} {
		refs, _, _ := memorySearchRefs(t, db.DB, "alpha", kura.SearchQuery{Q: "automobile servicing", Mode: mode, Limit: 10})
		if !slices.Equal(refs, []string{"fact:a"}) {
			t.Errorf("%s in alpha: %v; want only alpha's node", mode, refs)
		}
	}
	if refs, _, _ := memorySearchRefs(t, db.DB, "gamma", kura.SearchQuery{Q: "automobile servicing", Limit: 10}); len(refs) != 0 {
		t.Errorf("a scope never written: %v", refs)
	}
}

// TestSearchMemory_WarningsSayNotWhere: an embedder that cannot be
// reached is named in neither the search's warning nor /v1/info's
// last_error, which every reader sees: its address is the operator's.
func TestSearchMemory_WarningsSayNotWhere(t *testing.T) {
	t.Parallel()
	srv := embedtest.Start(t, testDims)
	db := openEmbedStore(t, srv, "", "m1", nil)
	seedMeaning(t, db)
	srv.Close() // now nothing listens there
	_, _, warns := memorySearchRefs(t, db.DB, "acme", kura.SearchQuery{Q: "automobile servicing", Limit: 10})
	host := strings.TrimPrefix(srv.URL, "http://")
	if len(warns) != 1 || strings.Contains(warns[0], host) || !strings.Contains(warns[0], "unreachable") {
		t.Fatalf("warnings %q: want one saying unreachable, without %s", warns, host)
	}
	if i := db.EmbedderInfo(); strings.Contains(i.LastError, host) || i.LastError == "" {
		t.Fatalf("last_error %q: want it without %s", i.LastError, host)
	}
}

func TestSearchMemory_NoEmbedder(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	title, summary := "Car maintenance", "service the car"
	if _, _, err := db.PutNode(t.Context(), "acme", &kura.NodeInput{Writer: root, Kind: "fact", ID: "car", Title: &title, Summary: &summary}); err != nil {
		t.Fatal(err)
	}
	if db.EmbedderInfo() != nil {
		t.Fatal("embedder info without an embedder")
	}
	// The default is lexical, exactly as SearchNodes answers.
	want, err := db.SearchNodes(t.Context(), "acme", kura.SearchQuery{Q: "car", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	ans, err := db.SearchMemory(t.Context(), "acme", kura.SearchQuery{Q: "car", Limit: 10})
	if err != nil || len(ans.Warnings) != 0 || len(ans.Results) != len(want) || ans.Results[0].Score != want[0].Score {
		t.Fatalf("default mode without an embedder: %+v, %v; want %+v", ans, err, want)
	}
	for _, mode := range []string{kura.SearchHybrid, kura.SearchSemantic} {
		ans, err := db.SearchMemory(t.Context(), "acme", kura.SearchQuery{Q: "car", Mode: mode, Limit: 10})
		if err != nil || len(ans.Results) != 1 || len(ans.Warnings) != 1 || !strings.Contains(ans.Warnings[0], "none is configured") {
			t.Fatalf("mode %s without an embedder: %+v, %v; want the lexical answer and a warning", mode, ans, err)
		}
	}
	if _, err := db.SearchMemory(t.Context(), "acme", kura.SearchQuery{Q: "car", Mode: "fuzzy"}); !kura.IsCode(err, kura.EInvalid) {
		t.Fatalf("mode fuzzy: %v; want invalid_argument", err)
	}
}
