package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/recall"
	"github.com/kura-memory/kura/internal/store"
)

func ptr[T any](v T) *T { return &v }

// root writes these tests' nodes: they are about the store, not about who
// may write a node (TestMemory_OwnedNodeRewrite is).
var root = kura.Writer{Identity: "user:root", Admin: true}

// mustNode writes a node, as root unless in names its writer.
func mustNode(tb testing.TB, db *store.DB, scope string, in kura.NodeInput) *kura.Node {
	tb.Helper()
	if in.Writer == (kura.Writer{}) {
		in.Writer = root
	}
	n, _, err := db.PutNode(context.Background(), scope, &in)
	if err != nil {
		tb.Fatalf("put %s:%s: %v", in.Kind, in.ID, err)
	}
	return n
}

func wantCode(tb testing.TB, err error, code string) {
	tb.Helper()
	if !kura.IsCode(err, code) {
		tb.Fatalf("error %v, want %s", err, code)
	}
}

func TestMemory_VersionsAsOfAndConfidenceHistory(t *testing.T) {
	t.Parallel()
	db, clk := mustOpenClocked(t)
	ctx := context.Background()
	n1, created, err := db.PutNode(ctx, "hashi", &kura.NodeInput{Writer: root, Kind: "belief", ID: "rest", Title: ptr("REST"), Summary: ptr("use REST"), Confidence: ptr(0.6)})
	if err != nil || !created || n1.Version != 1 || n1.Lifecycle != "candidate" || n1.Authority != "unknown" || n1.SourceType != "direct_experience" {
		t.Fatalf("create: %+v %v %v", n1, created, err)
	}
	clk.advance(2 * time.Millisecond) // each version its own updated_at
	n2, created, err := db.PutNode(ctx, "hashi", &kura.NodeInput{Writer: root, Kind: "belief", ID: "rest", Confidence: ptr(0.8), Reason: "two more episodes"})
	if err != nil || created || n2.Version != 2 || n2.Summary != "use REST" || n2.Title != "REST" || n2.CreatedAt != n1.CreatedAt {
		t.Fatalf("update keeps omitted fields: %+v %v %v", n2, created, err)
	}
	clk.advance(2 * time.Millisecond) // each version its own updated_at
	n3 := mustNode(t, db, "hashi", kura.NodeInput{Kind: "belief", ID: "rest", Summary: ptr("use REST, mostly")})

	for _, tc := range []struct {
		at      string
		version int
	}{{n1.UpdatedAt, 1}, {n2.UpdatedAt, 2}, {n3.UpdatedAt, 3}, {"2999-01-01T00:00:00.000000000Z", 3}} {
		got, err := db.GetNode(ctx, "hashi", "belief:rest", tc.at)
		if err != nil || got.Version != tc.version {
			t.Errorf("as_of %s: %+v %v, want version %d", tc.at, got, err, tc.version)
		}
	}
	_, err = db.GetNode(ctx, "hashi", "belief:rest", "2000-01-01T00:00:00.000000000Z")
	wantCode(t, err, kura.ENotFound)

	h, err := db.NodeHistory(ctx, "hashi", "belief:rest")
	if err != nil || len(h.Versions) != 3 {
		t.Fatalf("history: %+v %v", h, err)
	}
	var v2 kura.Node
	json.Unmarshal(h.Versions[1], &v2)
	if v2.Confidence != 0.8 || v2.Version != 2 {
		t.Errorf("version 2 in history: %+v", v2)
	}
	ch := h.ConfidenceHistory
	if len(ch) != 2 || ch[0].Old != nil || ch[0].New != 0.6 || *ch[1].Old != 0.6 || ch[1].New != 0.8 || ch[1].Reason != "two more episodes" {
		t.Errorf("confidence history: %+v", ch)
	}
}

func TestMemory_BadInputWritesNothing(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	mustNode(t, db, "hashi", kura.NodeInput{Kind: "episode", ID: "e1", Summary: ptr("x")})
	before := db.LastEventSeq()
	cases := []struct {
		name  string
		in    kura.NodeInput
		field string
	}{
		{"confidence above 1", kura.NodeInput{Kind: "belief", Summary: ptr("x"), Confidence: ptr(1.01)}, "confidence"},
		{"confidence below 0", kura.NodeInput{Kind: "belief", Summary: ptr("x"), Confidence: ptr(-0.1)}, "confidence"},
		{"unknown kind", kura.NodeInput{Kind: "vibe", Summary: ptr("x")}, "kind"},
		{"unknown lifecycle", kura.NodeInput{Kind: "belief", Summary: ptr("x"), Lifecycle: ptr("deleted")}, "lifecycle"},
		{"unknown authority", kura.NodeInput{Kind: "belief", Summary: ptr("x"), Authority: ptr("god")}, "authority"},
		{"unknown source type", kura.NodeInput{Kind: "belief", Summary: ptr("x"), SourceType: ptr("dream")}, "source_type"},
		{"bad id", kura.NodeInput{Kind: "belief", ID: "-x", Summary: ptr("x")}, "id"},
		{"no summary", kura.NodeInput{Kind: "belief", ID: "new"}, "summary"},
		{"missing parent", kura.NodeInput{Kind: "belief", Summary: ptr("x"), DerivedFrom: []string{"episode:nope"}}, "derived_from"},
		{"missing record", kura.NodeInput{Kind: "belief", Summary: ptr("x"), DerivedFrom: []string{"record:01a1fe24-4887-7db0-bfc2-a2e6dad831be"}}, "derived_from"},
		{"bad ref", kura.NodeInput{Kind: "belief", Summary: ptr("x"), DerivedFrom: []string{"episode"}}, "derived_from"},
		{"self", kura.NodeInput{Kind: "episode", ID: "e1", DerivedFrom: []string{"episode:e1"}}, "derived_from"},
		{"metadata not an object", kura.NodeInput{Kind: "belief", Summary: ptr("x"), Metadata: json.RawMessage(`[1]`)}, "metadata"},
		{"owner not an identity", kura.NodeInput{Kind: "belief", Summary: ptr("x"), Owner: ptr("bmo")}, "owner"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Writer = root
			_, _, err := db.PutNode(ctx, "hashi", &tc.in)
			var ke *kura.Error
			if !errors.As(err, &ke) || ke.Code != kura.EInvalid || ke.Details["field"] != tc.field {
				t.Fatalf("got %v, want invalid_argument on %s", err, tc.field)
			}
		})
	}
	if db.LastEventSeq() != before {
		t.Errorf("refused writes appended events")
	}
	n, _ := db.GetNode(ctx, "hashi", "episode:e1", "")
	if n.Version != 1 {
		t.Errorf("refused writes changed the node: %+v", n)
	}
}

// A revise that fails after any of its steps leaves nothing behind.
func TestMemory_ReviseIsAtomic(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	mustNode(t, db, "hashi", kura.NodeInput{Kind: "belief", ID: "old", Summary: ptr("v1"), Lifecycle: ptr("active"), Confidence: ptr(0.9)})
	for _, step := range []string{"node", "relation"} {
		before := db.LastEventSeq()
		db.SetReviseFault(func(s string) error {
			if s == step {
				return errors.New("disk on fire")
			}
			return nil
		})
		_, err := db.ReviseNode(ctx, "hashi", "belief:old", &kura.NodeInput{Writer: root, ID: "new", Summary: ptr("v2")})
		db.SetReviseFault(nil)
		if err == nil {
			t.Fatalf("fault after %s: revise succeeded", step)
		}
		if db.LastEventSeq() != before {
			t.Errorf("fault after %s: events appended", step)
		}
		if _, err := db.GetNode(ctx, "hashi", "belief:new", ""); !kura.IsCode(err, kura.ENotFound) {
			t.Errorf("fault after %s: new node exists (%v)", step, err)
		}
		old, _ := db.GetNode(ctx, "hashi", "belief:old", "")
		if old.Lifecycle != "active" || old.Version != 1 {
			t.Errorf("fault after %s: old node changed: %+v", step, old)
		}
		rels, _, _ := db.ListRelations(ctx, "hashi", "", "", "", 100)
		if len(rels) != 0 {
			t.Errorf("fault after %s: relations %+v", step, rels)
		}
	}
	rev, err := db.ReviseNode(ctx, "hashi", "belief:old", &kura.NodeInput{Writer: root, ID: "new", Summary: ptr("v2")})
	if err != nil {
		t.Fatal(err)
	}
	if rev.Node.Ref != "belief:new" || rev.Node.SourceType != "revision" || !slices.Equal(rev.Node.DerivedFrom, []string{"belief:old"}) ||
		rev.Node.Confidence != 0.9 || rev.Node.Lifecycle != "active" {
		t.Errorf("new node: %+v", rev.Node)
	}
	if rev.Superseded.Lifecycle != "retired" || rev.Relation.Kind != "supersedes" || rev.Relation.From != "belief:new" || rev.Relation.To != "belief:old" || rev.Relation.Confidence != 1 {
		t.Errorf("revision: %+v %+v", rev.Superseded, rev.Relation)
	}
	_, err = db.ReviseNode(ctx, "hashi", "belief:old", &kura.NodeInput{Writer: root, Summary: ptr("v3")})
	wantCode(t, err, kura.EConflict)
}

func TestMemory_ScopesNeverMeet(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	for _, scope := range []string{"alpha", "beta"} {
		mustNode(t, db, scope, kura.NodeInput{Kind: "fact", ID: "same", Summary: ptr("secret of " + scope)})
	}
	mustNode(t, db, "alpha", kura.NodeInput{Kind: "fact", ID: "only-alpha", Summary: ptr("alpha thing")})
	_, err := db.CreateRelation(ctx, "beta", &kura.RelationInput{Kind: "supports", From: "fact:same", To: "fact:only-alpha"})
	wantCode(t, err, kura.EInvalid)
	_, _, err = db.PutNode(ctx, "beta", &kura.NodeInput{Writer: root, Kind: "belief", Summary: ptr("x"), DerivedFrom: []string{"fact:only-alpha"}})
	wantCode(t, err, kura.EInvalid)
	res, err := db.SearchNodes(ctx, "beta", kura.SearchQuery{Q: "secret alpha thing", Limit: 10})
	if err != nil || len(res) != 1 || res[0].Node.Summary != "secret of beta" {
		t.Fatalf("search in beta: %+v %v", res, err)
	}
	if _, err := db.GetNode(ctx, "beta", "fact:only-alpha", ""); !kura.IsCode(err, kura.ENotFound) {
		t.Errorf("beta reads alpha's node: %v", err)
	}
	if _, err := db.GetNode(ctx, "gamma", "fact:same", ""); !kura.IsCode(err, kura.ENotFound) {
		t.Errorf("unknown scope: %v", err)
	}
	if _, err := db.CreateFeedback(ctx, "beta", &kura.FeedbackInput{Ref: "fact:only-alpha", Outcome: "positive", AuthorID: "agent:bmo"}); !kura.IsCode(err, kura.ENotFound) {
		t.Errorf("feedback across scopes: %v", err)
	}
}

func TestMemory_SearchScoresAndExplains(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	mustNode(t, db, "s", kura.NodeInput{Kind: "belief", ID: "b1", Title: ptr("Payments retry"), Summary: ptr("retry with backoff"), Lifecycle: ptr("active")})
	mustNode(t, db, "s", kura.NodeInput{Kind: "fact", ID: "f1", Title: ptr("Queue"), Summary: ptr("payments go through a queue"), TargetFiles: []string{"svc/payments.go"}})
	mustNode(t, db, "s", kura.NodeInput{Kind: "fact", ID: "f2", Summary: ptr("unrelated"), Metadata: json.RawMessage(`{"team":"payments","n":3}`)})
	for i := range 6 { // so that "payments" is a rare word
		mustNode(t, db, "s", kura.NodeInput{Kind: "note", ID: fmt.Sprintf("other%d", i), Summary: ptr("something else entirely")})
	}
	res, err := db.SearchNodes(ctx, "s", kura.SearchQuery{Q: "Payments!", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res {
		got = append(got, r.Ref)
	}
	// b1 has the word in its title (weight 3), f1 in its summary (1) and
	// a target file (2) but is longer, f2 only in its metadata (0.5).
	if want := []string{"belief:b1", "fact:f1", "fact:f2"}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	if !(res[0].Score > res[1].Score && res[1].Score > res[2].Score && res[2].Score > 0) {
		t.Errorf("scores not strictly decreasing: %v %v %v", res[0].Score, res[1].Score, res[2].Score)
	}
	for i, want := range [][]kura.SearchReason{
		{{Code: "title_match", Detail: "payments"}},
		{{Code: "target_file_match", Detail: "payments"}, {Code: "summary_match", Detail: "payments"}},
		{{Code: "metadata_match", Detail: "payments"}},
	} {
		if !slices.Equal(res[i].Reasons, want) {
			t.Errorf("reasons of %s: got %+v, want %+v", res[i].Ref, res[i].Reasons, want)
		}
	}
	res, _ = db.SearchNodes(ctx, "s", kura.SearchQuery{Q: "payments", Kind: "fact", TargetFile: "svc/payments.go", MinConfidence: ptr(0.5), Limit: 10})
	if len(res) != 1 || res[0].Ref != "fact:f1" {
		t.Fatalf("filtered: %+v", res)
	}
	codes := []string{}
	for _, r := range res[0].Reasons {
		codes = append(codes, r.Code)
	}
	if want := []string{"target_file_match", "summary_match", "kind_filter", "target_file_filter", "min_confidence_filter"}; !slices.Equal(codes, want) {
		t.Errorf("reason codes %v, want %v", codes, want)
	}
	res, _ = db.SearchNodes(ctx, "s", kura.SearchQuery{Lifecycle: "active", Limit: 10})
	if len(res) != 1 || res[0].Ref != "belief:b1" || res[0].Reasons[0].Code != "lifecycle_filter" || res[0].Score != 0 {
		t.Errorf("filter only: %+v", res)
	}
	// An update moves the node's words in the index.
	mustNode(t, db, "s", kura.NodeInput{Kind: "belief", ID: "b1", Title: ptr("Retries")})
	res, _ = db.SearchNodes(ctx, "s", kura.SearchQuery{Q: "payments", Kind: "belief", Limit: 10})
	if len(res) != 0 {
		t.Errorf("stale index after update: %+v", res)
	}
	before := db.LastEventSeq()
	db.SearchNodes(ctx, "s", kura.SearchQuery{Q: "retry", Limit: 10})
	if db.LastEventSeq() != before {
		t.Error("search wrote an event")
	}
}

// Equal scores come out oldest first, whatever the refs: ties are broken
// by creation (nid), and a cut at the limit keeps the oldest.
func TestMemory_SearchTiesByCreation(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	for _, ref := range []string{"fact:zz", "belief:mm", "fact:aa", "belief:bb"} {
		kind, id, _ := strings.Cut(ref, ":")
		mustNode(t, db, "s", kura.NodeInput{Kind: kind, ID: id, Title: ptr("same words"), Summary: ptr("other text")})
	}
	mustNode(t, db, "s", kura.NodeInput{Kind: "note", ID: "best", Title: ptr("same"), Summary: ptr("same")})
	for i := range 6 {
		mustNode(t, db, "s", kura.NodeInput{Kind: "note", ID: fmt.Sprintf("x%d", i), Summary: ptr("filler")})
	}
	for _, c := range []struct {
		q    kura.SearchQuery
		want []string
	}{
		{kura.SearchQuery{Q: "same", Limit: 10}, []string{"note:best", "fact:zz", "belief:mm", "fact:aa", "belief:bb"}},
		{kura.SearchQuery{Q: "same", Limit: 3}, []string{"note:best", "fact:zz", "belief:mm"}},
		{kura.SearchQuery{Q: "same", Kind: "belief", Limit: 1}, []string{"belief:mm"}},
	} {
		res, err := db.SearchNodes(ctx, "s", c.q)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for i, r := range res {
			got = append(got, r.Ref)
			if i > 1 && r.Score != res[1].Score {
				t.Errorf("%+v: %s scores %v, %s %v: want a tie", c.q, r.Ref, r.Score, res[1].Ref, res[1].Score)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%+v: got %v, want %v", c.q, got, c.want)
		}
	}
}

// The index ranks exactly as BM25 over every node of the scope (computed
// here, from the nodes' text, by recall.BM25) ranks, for random nodes,
// updates and queries: the same nodes, the same order, the same scores.
func TestMemory_SearchMatchesBruteForce(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 11))
	vocab := strings.Fields("rest api payments payment queue retry retries backoff cache go file svc users login token rate limit déjà vu 東京 a1 b2 the of")
	text := func(n int) string {
		w := make([]string, n)
		for i := range w {
			w[i] = vocab[rng.IntN(len(vocab))]
		}
		return strings.Join(w, []string{" ", "-", ", ", "/"}[rng.IntN(4)])
	}
	kinds := []string{"fact", "belief", "episode"}
	var batch []kura.NodeInput
	for i := range 120 {
		in := kura.NodeInput{Kind: kinds[rng.IntN(3)], ID: fmt.Sprintf("n%d", i), Title: ptr(text(rng.IntN(3))), Summary: ptr(text(rng.IntN(6))),
			Confidence: ptr(float64(rng.IntN(11)) / 10)}
		if rng.IntN(3) == 0 {
			in.TargetFiles = []string{text(2) + ".go"}
		}
		if rng.IntN(4) == 0 {
			in.Metadata = json.RawMessage(fmt.Sprintf(`{"tag":%q,"x":[%q, 1.5, true]}`, text(1), text(1)))
		}
		if rng.IntN(5) == 0 {
			in.Owner = ptr("agent:" + []string{"bmo", "finn", "jake"}[rng.IntN(3)])
		}
		batch = append(batch, in)
	}
	if _, err := db.PutNodes(ctx, "p", batch); err != nil {
		t.Fatal(err)
	}
	for range 40 { // updates move words between fields
		i := rng.IntN(len(batch))
		mustNode(t, db, "p", kura.NodeInput{Kind: batch[i].Kind, ID: batch[i].ID, Title: ptr(text(2)), Writer: kura.Writer{Admin: true}})
	}
	all, _, err := db.ListNodes(ctx, "p", kura.NodeFilter{Limit: 1000})
	if err != nil || len(all) != 120 {
		t.Fatal(len(all), err)
	}
	docs := make([]recall.Doc, len(all))
	for i := range all {
		for _, f := range store.SearchFields(&all[i]) {
			docs[i] = append(docs[i], recall.Tokens(f.Text))
		}
	}
	for i := range 120 {
		// Half the queries cut the list short, so ties and filters meet
		// the limit: a filter must apply before the cut, not after.
		q := kura.SearchQuery{Q: text(1 + rng.IntN(3)), Limit: 1000}
		if i%2 == 1 {
			q.Limit = 1 + rng.IntN(8)
		}
		if rng.IntN(3) == 0 {
			q.Kind = kinds[rng.IntN(3)]
		}
		if rng.IntN(3) == 0 {
			q.MinConfidence = ptr(0.5)
		}
		got, err := db.SearchNodes(ctx, "p", q)
		if err != nil {
			t.Fatal(err)
		}
		type hit struct {
			ref   string
			score float64
		}
		var want []hit
		words := store.QueryWords(q.Q)
		phrases := make([][]string, len(words))
		for i, w := range words {
			phrases[i] = recall.Phrase(w)
		}
		scores := recall.BM25(docs, phrases, store.SearchWeights())
		order := make([]int, 0, len(all))
		for i := range all {
			n := &all[i]
			if scores[i] > 0 && (q.Kind == "" || n.Kind == q.Kind) && (q.MinConfidence == nil || n.Confidence >= *q.MinConfidence) {
				order = append(order, i)
			}
		}
		// all is in creation order (ListNodes lists by nid), and ties go
		// to the older node: a stable sort by score alone is the order.
		sort.SliceStable(order, func(a, b int) bool { return scores[order[a]] > scores[order[b]] })
		for _, i := range order[:min(len(order), q.Limit)] {
			want = append(want, hit{all[i].Ref, recall.RoundScore(scores[i])})
		}
		var gotHits []hit
		for _, r := range got {
			gotHits = append(gotHits, hit{r.Ref, r.Score})
		}
		if fmt.Sprint(gotHits) != fmt.Sprint(want) {
			t.Fatalf("query %+v:\n got %v\nwant %v", q, gotHits, want)
		}
	}
}

func TestMemory_TurnCloseExtractsMemoryRecords(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	s, err := db.CreateSession(ctx, &kura.SessionInput{Project: "hashi", Name: "m", Scope: "team"})
	if err != nil {
		t.Fatal(err)
	}
	instr := kura.RecordInput{Type: "task.instruction", AuthorID: "user:oles", Content: json.RawMessage(`"decide"`)}
	turn, err := db.OpenTurn(ctx, s.ID, &kura.TurnOpenInput{Instruction: &instr}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.AppendTurn(ctx, turn.ID, &kura.TurnAppend{Records: []kura.RecordRef{
		{RecordInput: kura.RecordInput{Type: "memory.fact", AuthorID: "agent:bmo", Content: json.RawMessage(`"payments retry three times"`)}},
		{RecordInput: kura.RecordInput{Type: "agent.thought", AuthorID: "agent:bmo", Content: json.RawMessage(`"hmm"`)}},
		{RecordInput: kura.RecordInput{Type: "memory.decision", AuthorID: "agent:bmo", Content: json.RawMessage(`{"title":"Queue","text":"use a queue"}`)}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	closed, err := db.CloseTurn(ctx, turn.ID, &kura.TurnClose{Status: "complete", Closer: kura.Writer{Identity: "agent:closer"}, MayWriteScope: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(closed.Extracted) != 2 || !strings.HasPrefix(closed.Extracted[0], "fact:") || !strings.HasPrefix(closed.Extracted[1], "decision:") || closed.ExtractionSkipped != nil {
		t.Fatalf("extracted %v, skipped %+v", closed.Extracted, closed.ExtractionSkipped)
	}
	f, err := db.GetNode(ctx, "team", closed.Extracted[0], "")
	if err != nil {
		t.Fatal(err)
	}
	rid := strings.TrimPrefix(closed.Extracted[0], "fact:")
	if f.Lifecycle != "candidate" || f.SourceType != "promote" || f.Summary != "payments retry three times" ||
		!slices.Equal(f.DerivedFrom, []string{"record:" + rid}) || f.Owner == nil || *f.Owner != "agent:bmo" || f.WrittenBy != "agent:closer" {
		t.Errorf("fact node: %+v", f)
	}
	d, _ := db.GetNode(ctx, "team", closed.Extracted[1], "")
	if d.Title != "Queue" || d.Summary != "use a queue" {
		t.Errorf("decision node: %+v", d)
	}
	again, err := db.GetTurn(ctx, turn.ID)
	if err != nil || !slices.Equal(again.Extracted, closed.Extracted) {
		t.Errorf("turn read back: %v %v", again.Extracted, err)
	}
}

// Derived walks the lineage level by level and hands a deep, narrow rest
// to a recursive CTE; either way it lists what a brute-force walk over
// derived_from lists, at the same depths, each node once, even where the
// CTE meets again nodes the levels already reached by a shorter path.
func TestProvenance_DerivedMatchesBruteForce(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	rec := mustRecords(t, db, 1)[0]
	rng := rand.New(rand.NewPCG(3, 5))
	children := map[string][]string{}
	var ins []kura.NodeInput
	add := func(ref string, from ...string) {
		kind, id, _ := strings.Cut(ref, ":")
		ins = append(ins, kura.NodeInput{Kind: kind, ID: id, Summary: ptr(ref), DerivedFrom: from})
		for _, p := range from {
			children[p] = append(children[p], ref)
		}
	}
	// A chain 30 deep: past the first levels, every level is one node.
	chain := func(i int) string { return fmt.Sprintf("note:c%d", i) }
	add(chain(0), "record:"+rec.ID)
	for i := 1; i < 30; i++ {
		add(chain(i), chain(i-1))
	}
	// Wide levels near the top, diamonds among them.
	var early []string
	for j := range 150 {
		ref := fmt.Sprintf("%s:x%d", []string{"fact", "belief", "episode"}[j%3], j)
		from := []string{chain(rng.IntN(4))}
		if len(early) > 0 && rng.IntN(2) == 0 {
			from = append(from, early[rng.IntN(len(early))])
		}
		add(ref, from...)
		early = append(early, ref)
	}
	// Nodes near the top that the end of the chain derives into too.
	for j := range 20 {
		ref := fmt.Sprintf("decision:y%d", j)
		add(ref, chain(18+rng.IntN(12)), early[rng.IntN(len(early))])
		add(fmt.Sprintf("goal:z%d", j), ref)
	}
	if _, err := db.PutNodes(ctx, "deep", ins); err != nil {
		t.Fatal(err)
	}
	all, _, err := db.ListNodes(ctx, "deep", kura.NodeFilter{Limit: 1000})
	if err != nil || len(all) != len(ins) {
		t.Fatal(len(all), err)
	}
	created := map[string]string{}
	for _, n := range all {
		created[n.Ref] = n.CreatedAt
	}
	depth := map[string]int{"record:" + rec.ID: 0}
	for level := []string{"record:" + rec.ID}; len(level) > 0; {
		var next []string
		for _, v := range level {
			for _, c := range children[v] {
				if _, ok := depth[c]; !ok {
					depth[c] = depth[v] + 1
					next = append(next, c)
				}
			}
		}
		level = next
	}
	var want []string
	for _, n := range all {
		want = append(want, n.Ref)
	}
	slices.SortFunc(want, func(a, b string) int {
		ka, ia, _ := strings.Cut(a, ":")
		kb, ib, _ := strings.Cut(b, ":")
		if c := depth[a] - depth[b]; c != 0 {
			return c
		}
		if c := strings.Compare(created[a], created[b]); c != 0 {
			return c
		}
		if c := strings.Compare(ka, kb); c != 0 {
			return c
		}
		return strings.Compare(ia, ib)
	})
	for i, ref := range want {
		want[i] = fmt.Sprintf("%s@%d", ref, depth[ref])
	}
	d, err := db.Derived(ctx, "deep", "record:"+rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range d.Derived {
		got = append(got, fmt.Sprintf("%s@%d", it.Ref, it.Depth))
	}
	if d.Count != len(want) || !slices.Equal(got, want) {
		t.Errorf("derived of the record:\n got %v\nwant %v", got, want)
	}
}

// The owner rule is the store's, checked in the write transaction: every
// way of writing a new version of an owned node refuses a writer that is
// neither its owner nor an admin and writes nothing; each version keeps
// who wrote it.
func TestMemory_OwnedNodeRewrite(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	a := kura.Writer{Identity: "agent:a"}
	b := kura.Writer{Identity: "agent:b"}
	admin := kura.Writer{Identity: "user:root", Admin: true}
	if _, _, err := db.PutNode(ctx, "s", &kura.NodeInput{Kind: "fact", ID: "f", Summary: ptr("by a"), Owner: ptr("agent:a"), Writer: a}); err != nil {
		t.Fatal(err)
	}
	writes := []struct {
		name string
		call func(w kura.Writer) error
	}{
		{"put", func(w kura.Writer) error {
			_, _, err := db.PutNode(ctx, "s", &kura.NodeInput{Kind: "fact", ID: "f", Summary: ptr("by " + w.Identity), Writer: w})
			return err
		}},
		{"batch", func(w kura.Writer) error {
			_, err := db.PutNodes(ctx, "s", []kura.NodeInput{{Kind: "fact", ID: "new-" + strings.ReplaceAll(w.Identity, ":", "-"), Summary: ptr("new"), Writer: w}, {Kind: "fact", ID: "f", Summary: ptr("batch"), Writer: w}})
			return err
		}},
		{"transition", func(w kura.Writer) error {
			_, err := db.TransitionNode(ctx, "s", "fact:f", &kura.Transition{Lifecycle: "contested", Reason: "r", Writer: w})
			return err
		}},
	}
	for _, wr := range writes {
		seq := db.LastEventSeq()
		if err := wr.call(b); !kura.IsCode(err, kura.EDenied) {
			t.Errorf("%s by another identity: got %v, want permission_denied", wr.name, err)
		}
		if db.LastEventSeq() != seq {
			t.Errorf("%s by another identity wrote events", wr.name)
		}
		if err := wr.call(a); err != nil {
			t.Errorf("%s by the owner: %v", wr.name, err)
		}
		if err := wr.call(admin); err != nil {
			t.Errorf("%s by an admin: %v", wr.name, err)
		}
	}
	if _, err := db.GetNode(ctx, "s", "fact:new-agent-b", ""); err == nil {
		t.Errorf("the refused batch wrote its new node")
	}
	seq := db.LastEventSeq()
	if _, err := db.ReviseNode(ctx, "s", "fact:f", &kura.NodeInput{ID: "f2", Summary: ptr("by b"), Writer: b}); !kura.IsCode(err, kura.EDenied) || db.LastEventSeq() != seq {
		t.Errorf("revise by another identity: got %v, want permission_denied and nothing written", err)
	}
	rev, err := db.ReviseNode(ctx, "s", "fact:f", &kura.NodeInput{ID: "f2", Summary: ptr("by a"), Writer: a})
	if err != nil || rev.Node.WrittenBy != "agent:a" || rev.Superseded.WrittenBy != "agent:a" || *rev.Node.Owner != "agent:a" {
		t.Fatalf("revise by the owner: %+v %v", rev, err)
	}
	h, err := db.NodeHistory(ctx, "s", "fact:f")
	if err != nil {
		t.Fatal(err)
	}
	var by []string
	for _, v := range h.Versions {
		var n kura.Node
		json.Unmarshal(v, &n)
		by = append(by, n.WrittenBy)
	}
	want := []string{"agent:a", "agent:a", "user:root", "agent:a", "user:root", "agent:a", "user:root", "agent:a"}
	if !slices.Equal(by, want) {
		t.Errorf("history written_by %v, want %v", by, want)
	}
}

// A node without an owner is rewritten only by admins, however it is
// written; a non-admin's new node is its own.
func TestMemory_OwnerlessNodeRewrite(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	b := kura.Writer{Identity: "agent:b"}
	mustNode(t, db, "s", kura.NodeInput{Kind: "fact", ID: "f", Summary: ptr("by root"), Lifecycle: ptr("active"), Authority: ptr("verified")})
	for name, call := range map[string]func() error{
		"put": func() error {
			_, _, err := db.PutNode(ctx, "s", &kura.NodeInput{Kind: "fact", ID: "f", Summary: ptr("by b"), Writer: b})
			return err
		},
		"put naming itself owner": func() error {
			_, _, err := db.PutNode(ctx, "s", &kura.NodeInput{Kind: "fact", ID: "f", Owner: ptr("agent:b"), Writer: b})
			return err
		},
		"batch": func() error {
			_, err := db.PutNodes(ctx, "s", []kura.NodeInput{{Kind: "fact", ID: "g", Summary: ptr("new"), Writer: b}, {Kind: "fact", ID: "f", Summary: ptr("by b"), Writer: b}})
			return err
		},
		"transition": func() error {
			_, err := db.TransitionNode(ctx, "s", "fact:f", &kura.Transition{Lifecycle: "active", Reason: "r", Writer: b})
			return err
		},
		"revise": func() error {
			_, err := db.ReviseNode(ctx, "s", "fact:f", &kura.NodeInput{ID: "f2", Summary: ptr("by b"), Writer: b})
			return err
		},
	} {
		seq := db.LastEventSeq()
		if err := call(); !kura.IsCode(err, kura.EDenied) || db.LastEventSeq() != seq {
			t.Errorf("%s by a writer: got %v, want permission_denied and nothing written", name, err)
		}
	}
	if n, _ := db.GetNode(ctx, "s", "fact:f", ""); n.Version != 1 || n.Summary != "by root" || n.Owner != nil {
		t.Errorf("after the refusals: %+v, want version 1 as root wrote it", n)
	}
	n, _, err := db.PutNode(ctx, "s", &kura.NodeInput{Kind: "fact", ID: "mine", Summary: ptr("by b"), Authority: ptr("verified"), Writer: b})
	if err != nil || n.Owner == nil || *n.Owner != "agent:b" || n.Authority != "verified" {
		t.Fatalf("a writer's new node: %+v %v, want owned by agent:b, verified", n, err)
	}
	if _, err := db.TransitionNode(ctx, "s", "fact:mine", &kura.Transition{Lifecycle: "active", Reason: "r", Writer: b}); err != nil {
		t.Errorf("its writer's transition: %v", err)
	}
}

// A close by a caller that may not write the session's scope seals the
// turn and extracts nothing, and says what it left.
func TestMemory_TurnCloseWithoutScopeExtractsNothing(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	s, err := db.CreateSession(ctx, &kura.SessionInput{Project: "hashi", Name: "m", Scope: "team"})
	if err != nil {
		t.Fatal(err)
	}
	turn, err := db.OpenTurn(ctx, s.ID, &kura.TurnOpenInput{Instruction: &kura.RecordInput{Type: "task.instruction", AuthorID: "user:oles", Content: json.RawMessage(`"go"`)}}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	app, err := db.AppendTurn(ctx, turn.ID, &kura.TurnAppend{Records: []kura.RecordRef{
		{RecordInput: kura.RecordInput{Type: "memory.fact", AuthorID: "agent:bmo", Content: json.RawMessage(`"a fact"`)}},
		{RecordInput: kura.RecordInput{Type: "agent.thought", AuthorID: "agent:bmo", Content: json.RawMessage(`"hmm"`)}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	closed, err := db.CloseTurn(ctx, turn.ID, &kura.TurnClose{Status: "complete", Closer: kura.Writer{Identity: "agent:p"}})
	if err != nil {
		t.Fatal(err)
	}
	sk := closed.ExtractionSkipped
	if closed.State != kura.TurnComplete || len(closed.Extracted) != 0 || sk == nil || sk.Scope != "team" || !slices.Equal(sk.Records, []string{app.Records[0].ID}) {
		t.Fatalf("close: state %s extracted %v skipped %+v", closed.State, closed.Extracted, sk)
	}
	if nodes, _, err := db.ListNodes(ctx, "team", kura.NodeFilter{Limit: 10}); err != nil || len(nodes) != 0 {
		t.Errorf("nodes after the close: %v %v", nodes, err)
	}
}
