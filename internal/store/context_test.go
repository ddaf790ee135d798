package store_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gowebpki/jcs"
	"github.com/kura-memory/kura/internal/admission"
	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/sqlitetest"
	"github.com/kura-memory/kura/internal/store"
)

func openWithClock(tb testing.TB, c *clock) *store.DB {
	tb.Helper()
	return openAt(tb, sqlitetest.File(tb), nil, c)
}

// previewJSON is a preview's answer as the API writes it.
func previewJSON(ctx context.Context, db *store.DB, scope string, req *admission.Request) (json.RawMessage, error) {
	b, err := db.PreviewContext(ctx, scope, req)
	if err != nil {
		return nil, err
	}
	return admission.Encode(b)
}

type bundle struct {
	BundleID string                     `json:"bundle_id"`
	Digest   string                     `json:"digest"`
	AsOf     string                     `json:"as_of"`
	Buckets  map[string]json.RawMessage `json:"buckets"`
	Trace    []admission.TraceEntry     `json:"trace"`
	Warnings []string                   `json:"warnings"`
}

func refsIn(tb testing.TB, raw json.RawMessage) []string {
	var items []admission.Item
	if err := json.Unmarshal(raw, &items); err != nil {
		tb.Fatal(err)
	}
	out := []string{}
	for _, it := range items {
		out = append(out, it.Ref)
	}
	return out
}

func rowCounts(tb testing.TB, db *store.DB) string {
	tb.Helper()
	raw := rawDB(tb, db.Path())
	var out []string
	for _, t := range []string{"events", "context_bundles", "nodes", "node_versions", "relations", "records", "idempotency"} {
		var n int
		if err := raw.QueryRow("SELECT count(*) FROM " + t).Scan(&n); err != nil {
			tb.Fatal(err)
		}
		out = append(out, t+"="+itoa(n))
	}
	return strings.Join(out, " ")
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestContext_PreviewWritesNothingCompileWritesOneBundle(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	mustNode(t, db, "s", kura.NodeInput{Kind: "fact", ID: "f1", Summary: ptr("token=abc"), Lifecycle: ptr("active"), Authority: ptr("trusted")})
	mustNode(t, db, "s", kura.NodeInput{Kind: "belief", ID: "b1", Summary: ptr("maybe")})
	before, seq := rowCounts(t, db), db.LastEventSeq()
	prev, err := previewJSON(ctx, db, "s", &admission.Request{Query: "maybe"})
	if err != nil {
		t.Fatal(err)
	}
	if after := rowCounts(t, db); after != before || db.LastEventSeq() != seq {
		t.Fatalf("preview wrote: %s → %s", before, after)
	}
	body, err := db.CompileContext(ctx, "s", &admission.Request{Query: "maybe"})
	if err != nil {
		t.Fatal(err)
	}
	if db.LastEventSeq() != seq+1 {
		t.Errorf("compile appended %d events, want 1", db.LastEventSeq()-seq)
	}
	var b bundle
	json.Unmarshal(body, &b)
	stored, err := db.GetBundle(ctx, "s", b.BundleID)
	if err != nil || string(stored) != string(body) {
		t.Fatalf("stored bundle differs:\n%s\n%s (%v)", stored, body, err)
	}
	if _, err := db.GetBundle(ctx, "other", b.BundleID); !kura.IsCode(err, kura.ENotFound) {
		t.Errorf("bundle read through another scope: %v", err)
	}
	// A client recomputes the digest from the buckets alone.
	var whole map[string]json.RawMessage
	json.Unmarshal(body, &whole)
	canon, err := jcs.Transform(whole["buckets"])
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(canon)
	if b.Digest != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Errorf("digest %s is not the SHA-256 of the JCS of buckets", b.Digest)
	}
	var pb bundle
	json.Unmarshal(prev, &pb)
	if pb.Digest != b.Digest || pb.BundleID != "" {
		t.Errorf("preview digest %s, compile %s; preview bundle id %q", pb.Digest, b.Digest, pb.BundleID)
	}
	if got := refsIn(t, b.Buckets["use_now"]); len(got) != 1 || got[0] != "fact:f1" {
		t.Errorf("use_now %v", got)
	}
	if !strings.Contains(string(b.Buckets["use_now"]), "token=[REDACTED]") {
		t.Errorf("not redacted: %s", b.Buckets["use_now"])
	}
}

// as_of yesterday sees yesterday's nodes and relations, not today's
// transitions, and says how stale that is.
func TestContext_AsOfYesterday(t *testing.T) {
	t.Parallel()
	c := &clock{pinned: time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)}
	db := openWithClock(t, c)
	ctx := context.Background()
	mustNode(t, db, "s", kura.NodeInput{Kind: "fact", ID: "f1", Summary: ptr("old truth"), Lifecycle: ptr("active"), Authority: ptr("trusted")})
	mustNode(t, db, "s", kura.NodeInput{Kind: "fact", ID: "f2", Summary: ptr("other"), Lifecycle: ptr("active"), Authority: ptr("verified")})
	yesterday := kura.FormatTime(c.now().Add(time.Hour))

	c.set(time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC))
	if _, err := db.TransitionNode(ctx, "s", "fact:f1", &kura.Transition{Writer: root, Lifecycle: "suppressed", Reason: "wrong"}); err != nil {
		t.Fatal(err)
	}
	mustNode(t, db, "s", kura.NodeInput{Kind: "fact", ID: "f3", Summary: ptr("new"), Lifecycle: ptr("active"), Authority: ptr("trusted")})
	if _, err := db.CreateRelation(ctx, "s", &kura.RelationInput{Kind: "invalidates", From: "fact:f3", To: "fact:f2", Confidence: ptr(0.9)}); err != nil {
		t.Fatal(err)
	}

	now, _ := previewJSON(ctx, db, "s", &admission.Request{})
	var today bundle
	json.Unmarshal(now, &today)
	if got := refsIn(t, today.Buckets["use_now"]); strings.Join(got, ",") != "fact:f3" {
		t.Errorf("today use_now %v", got)
	}
	if len(today.Warnings) != 0 {
		t.Errorf("today warnings %v", today.Warnings)
	}
	old, err := previewJSON(ctx, db, "s", &admission.Request{AsOf: yesterday})
	if err != nil {
		t.Fatal(err)
	}
	var y bundle
	json.Unmarshal(old, &y)
	// Both were written at the same instant: the id decides.
	if got := refsIn(t, y.Buckets["use_now"]); strings.Join(got, ",") != "fact:f1,fact:f2" {
		t.Errorf("yesterday use_now %v", got)
	}
	if len(y.Trace) != 2 || y.AsOf != yesterday {
		t.Errorf("yesterday trace %+v as_of %s", y.Trace, y.AsOf)
	}
	if len(y.Warnings) != 1 || !strings.HasPrefix(y.Warnings[0], "stale: memory as of "+yesterday+" is 23h0m0s old") {
		t.Errorf("warnings %v", y.Warnings)
	}
}

func TestContext_BadRequests(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	for _, tc := range []struct {
		req   admission.Request
		field string
	}{
		{admission.Request{Kinds: []string{"vibe"}}, "kinds"},
		{admission.Request{MaxPerBucket: new(-1)}, "max_per_bucket"},
		{admission.Request{BudgetBytes: -5}, "budget_bytes"},
		{admission.Request{AsOf: "yesterday"}, "as_of"},
		{admission.Request{Query: strings.Repeat("q", 1025)}, "query"},
	} {
		_, err := db.CompileContext(context.Background(), "s", &tc.req)
		var ke *kura.Error
		if !errors.As(err, &ke) || ke.Code != kura.EInvalid || ke.Details["field"] != tc.field {
			t.Errorf("%+v: %v, want invalid %s", tc.req, err, tc.field)
		}
	}
	if db.LastEventSeq() != 0 {
		t.Error("refused compiles wrote events")
	}
}

// Opening a turn with memory compiles the session's scope, packs use_now
// into the context ledger and names the bundle on the turn.
func TestContext_TurnOpenWithMemory(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	mustNode(t, db, "team", kura.NodeInput{Kind: "decision", ID: "d1", Title: ptr("Queue"), Summary: ptr("use a queue"), Lifecycle: ptr("active"), Authority: ptr("verified")})
	mustNode(t, db, "team", kura.NodeInput{Kind: "fact", ID: "f1", Summary: ptr("retry 3x"), Lifecycle: ptr("active"), Authority: ptr("trusted")})
	mustNode(t, db, "team", kura.NodeInput{Kind: "belief", ID: "b1", Summary: ptr("unsure")})
	s, err := db.CreateSession(ctx, &kura.SessionInput{Project: "hashi", Name: "m", Scope: "team"})
	if err != nil {
		t.Fatal(err)
	}
	instr := kura.RecordInput{Type: "task.instruction", AuthorID: "user:oles", Content: json.RawMessage(`"go"`)}
	turn, err := db.OpenTurn(ctx, s.ID, &kura.TurnOpenInput{Instruction: &instr, Memory: &kura.MemoryRequest{Query: "queue"}}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if turn.ContextBundleID == nil {
		t.Fatal("no bundle on the turn")
	}
	body, err := db.GetBundle(ctx, "team", *turn.ContextBundleID)
	if err != nil {
		t.Fatal(err)
	}
	var b bundle
	json.Unmarshal(body, &b)
	if got := refsIn(t, b.Buckets["use_now"]); strings.Join(got, ",") != "decision:d1,fact:f1" {
		t.Fatalf("use_now %v (query ranks the queue decision first)", got)
	}
	l, err := db.GetLedger(ctx, turn.ContextLedgerID, true)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, id := range l.RecordIDs {
		r, err := db.GetRecord(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, r.Type)
		if strings.HasPrefix(r.Type, "memory.") {
			var it admission.Item
			json.Unmarshal(r.Content, &it)
			if r.AuthorID != "sys:kurad" || r.Meta()["bundle_id"] != *turn.ContextBundleID || it.Ref == "" {
				t.Errorf("memory record %+v", r)
			}
		}
	}
	if strings.Join(types, ",") != "task.instruction,memory.decision,memory.fact" {
		t.Errorf("context ledger types %v", types)
	}
}

// A compile keeps its scope's read for the next one; every kind of change
// to the scope's nodes and relations must make the next compile read
// afresh. Each step compiles twice (the second from the kept read), makes
// one change, compiles from the store's choice, and must equal a compile
// that cannot use a kept read.
func TestContext_KeptScopeReadFollowsEveryChange(t *testing.T) {
	t.Parallel()
	// A still clock: as_of (now) is in every answer.
	db := openWithClock(t, &clock{pinned: time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)})
	ctx := context.Background()
	req := func() *admission.Request { return &admission.Request{Query: "deploy"} }
	preview := func() string {
		t.Helper()
		b, err := previewJSON(ctx, db, "s", req())
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	mustNode(t, db, "s", kura.NodeInput{Kind: "fact", ID: "f1", Summary: ptr("deploy on fridays"), Lifecycle: ptr("active"), Authority: ptr("trusted")})
	mustNode(t, db, "s", kura.NodeInput{Kind: "fact", ID: "f2", Summary: ptr("deploy with care"), Lifecycle: ptr("active"), Authority: ptr("verified")})
	mustNode(t, db, "other", kura.NodeInput{Kind: "fact", ID: "o1", Summary: ptr("deploy elsewhere")})
	changes := []struct {
		name string
		do   func() error
	}{
		{"new node", func() error {
			_, _, err := db.PutNode(ctx, "s", &kura.NodeInput{Writer: root, Kind: "belief", ID: "b1", Summary: ptr("deploy maybe")})
			return err
		}},
		{"transition", func() error {
			_, err := db.TransitionNode(ctx, "s", "fact:f2", &kura.Transition{Writer: root, Lifecycle: "suppressed", Reason: "stale"})
			return err
		}},
		{"revision", func() error {
			_, err := db.ReviseNode(ctx, "s", "fact:f1", &kura.NodeInput{Writer: root, Kind: "fact", ID: "f1b", Summary: ptr("deploy on mondays"), Lifecycle: ptr("active"), Authority: ptr("trusted")})
			return err
		}},
		{"blocking relation", func() error {
			_, err := db.CreateRelation(ctx, "s", &kura.RelationInput{Kind: "contradicts", From: "belief:b1", To: "fact:f1b", Confidence: ptr(0.9)})
			return err
		}},
		{"confidence only", func() error {
			_, _, err := db.PutNode(ctx, "s", &kura.NodeInput{Writer: root, Kind: "belief", ID: "b1", Summary: ptr("deploy maybe"), Confidence: ptr(0.25)})
			return err
		}},
		{"upsert of the same node", func() error {
			_, _, err := db.PutNode(ctx, "s", &kura.NodeInput{Writer: root, Kind: "belief", ID: "b1", Summary: ptr("deploy surely"), Lifecycle: ptr("active"), Authority: ptr("trusted")})
			return err
		}},
	}
	for _, c := range changes {
		before := preview()
		hits := db.ScopeCacheHits()
		if again := preview(); again != before || db.ScopeCacheHits() != hits+1 {
			t.Fatalf("before %s: a second compile of an unchanged scope was not answered from the kept read (hits %d → %d) or differs", c.name, hits, db.ScopeCacheHits())
		}
		// A change to another scope keeps this scope's read. (The ranking
		// is computed afresh: one index serves every scope, and how rare a
		// word is counts all of them.)
		if _, _, err := db.PutNode(ctx, "other", &kura.NodeInput{Writer: root, Kind: "fact", ID: "o1", Summary: ptr("deploy " + c.name)}); err != nil {
			t.Fatal(err)
		}
		kept := preview()
		if db.ScopeCacheHits() != hits+2 {
			t.Fatalf("before %s: a change to another scope dropped this scope's kept read", c.name)
		}
		db.ResetScopeCache()
		if before = preview(); kept != before {
			t.Fatalf("before %s: the kept read answered unlike a fresh one:\n got %s\nwant %s", c.name, kept, before)
		}
		if err := c.do(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := preview()
		db.ResetScopeCache()
		if want := preview(); got != want {
			t.Fatalf("after %s, the compile answered from a stale read:\n got %s\nwant %s", c.name, got, want)
		}
		if got == before {
			t.Fatalf("%s changed nothing the compile shows; the step proves nothing", c.name)
		}
	}
}

// A large bundle is kept gzipped and still comes back byte for byte.
func TestContext_LargeBundleKeptPackedReturnsSameBytes(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	var ins []kura.NodeInput
	for i := range 600 {
		ins = append(ins, kura.NodeInput{Kind: "fact", ID: "f" + itoa(i), Summary: ptr("deploy note " + itoa(i)), Lifecycle: ptr("active"), Authority: ptr("trusted")})
	}
	if _, err := db.PutNodes(ctx, "s", ins); err != nil {
		t.Fatal(err)
	}
	body, err := db.CompileContext(ctx, "s", &admission.Request{Query: "deploy"})
	if err != nil {
		t.Fatal(err)
	}
	if len(body) < 64<<10 {
		t.Fatalf("the bundle is %d bytes; the test needs one above the packing threshold", len(body))
	}
	var b bundle
	json.Unmarshal(body, &b)
	got, err := db.GetBundle(ctx, "s", b.BundleID)
	if err != nil || string(got) != string(body) {
		t.Fatalf("stored bundle differs (%d vs %d bytes, %v)", len(got), len(body), err)
	}
	var stored []byte
	if err := rawDB(t, db.Path()).QueryRow("SELECT body FROM context_bundles WHERE id = ?", b.BundleID).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if len(stored) < 2 || stored[0] != 0x1f || stored[1] != 0x8b || len(stored) > len(body)/4 {
		t.Errorf("kept %d bytes for a %d-byte bundle, starting %q; want a gzip stream", len(stored), len(body), stored[:min(8, len(stored))])
	}
}
