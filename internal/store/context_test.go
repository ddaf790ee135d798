package store_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gowebpki/jcs"
	"github.com/kura-memory/kura/internal/admission"
	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/store"
)

// clock is a settable time source for as_of tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

func openWithClock(tb testing.TB, c *clock) *store.DB {
	tb.Helper()
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	db := store.New(store.Config{Path: filepath.Join(tb.TempDir(), "kura.db"), Signer: key, Now: c.now})
	if err := db.Open(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close(context.Background()) })
	return db
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
	db := MustOpenStore(t)
	ctx := context.Background()
	mustNode(t, db, "s", kura.NodeInput{Kind: "fact", ID: "f1", Summary: ptr("token=abc"), Lifecycle: ptr("active"), Authority: ptr("trusted")})
	mustNode(t, db, "s", kura.NodeInput{Kind: "belief", ID: "b1", Summary: ptr("maybe")})
	before, seq := rowCounts(t, db), db.LastEventSeq()
	prev, err := db.PreviewContext(ctx, "s", &admission.Request{Query: "maybe"})
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
	c := &clock{t: time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)}
	db := openWithClock(t, c)
	ctx := context.Background()
	mustNode(t, db, "s", kura.NodeInput{Kind: "fact", ID: "f1", Summary: ptr("old truth"), Lifecycle: ptr("active"), Authority: ptr("trusted")})
	mustNode(t, db, "s", kura.NodeInput{Kind: "fact", ID: "f2", Summary: ptr("other"), Lifecycle: ptr("active"), Authority: ptr("verified")})
	yesterday := kura.FormatTime(c.now().Add(time.Hour))

	c.set(time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC))
	if _, err := db.TransitionNode(ctx, "s", "fact:f1", &kura.Transition{Lifecycle: "suppressed", Reason: "wrong"}); err != nil {
		t.Fatal(err)
	}
	mustNode(t, db, "s", kura.NodeInput{Kind: "fact", ID: "f3", Summary: ptr("new"), Lifecycle: ptr("active"), Authority: ptr("trusted")})
	if _, err := db.CreateRelation(ctx, "s", &kura.RelationInput{Kind: "invalidates", From: "fact:f3", To: "fact:f2", Confidence: ptr(0.9)}); err != nil {
		t.Fatal(err)
	}

	now, _ := db.PreviewContext(ctx, "s", &admission.Request{})
	var today bundle
	json.Unmarshal(now, &today)
	if got := refsIn(t, today.Buckets["use_now"]); strings.Join(got, ",") != "fact:f3" {
		t.Errorf("today use_now %v", got)
	}
	if len(today.Warnings) != 0 {
		t.Errorf("today warnings %v", today.Warnings)
	}
	old, err := db.PreviewContext(ctx, "s", &admission.Request{AsOf: yesterday})
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
	db := MustOpenStore(t)
	for _, tc := range []struct {
		req   admission.Request
		field string
	}{
		{admission.Request{Kinds: []string{"vibe"}}, "kinds"},
		{admission.Request{MaxPerBucket: -1}, "max_per_bucket"},
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
