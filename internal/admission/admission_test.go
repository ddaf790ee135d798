package admission_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/admission"
	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/recall"
)

// target is the ref of the node Decide is asked about in the rule tables.
const target = "belief:t"

// t0 is the updated_at every node gets unless a test says otherwise.
const t0 = "2026-11-21T09:00:00.000000000Z"

// newNode returns a node of kind:id with the given lifecycle and
// authority and everything else set to ordinary values.
func newNode(kind, id, lifecycle, authority string) kura.Node {
	return kura.Node{
		Ref: kind + ":" + id, Scope: "s", Kind: kind, ID: id,
		Title: "title of " + id, Summary: "summary of " + id,
		Lifecycle: lifecycle, Authority: authority, Confidence: 0.5,
		SourceType: "unknown", Version: 1, CreatedAt: t0, UpdatedAt: t0,
	}
}

// rel returns a relation kind from → to at confidence c created at the
// given second of 2026-11-21T09:00.
func rel(id, kind, from, to string, c float64, sec int) kura.Relation {
	return kura.Relation{
		ID: id, Scope: "s", Kind: kind, From: from, To: to, Confidence: c,
		CreatedAt: fmt.Sprintf("2026-11-21T09:00:%02d.000000000Z", sec),
	}
}

func in(r ...kura.Relation) []kura.Relation { return r }

// justBelow is the largest float64 below x: the sharpest "just below a
// threshold" there is.
func justBelow(x float64) float64 { return math.Nextafter(x, 0) }

var blockingKinds = []string{"supersedes", "contradicts", "invalidates"}

func TestDecide_Rules(t *testing.T) {
	t.Parallel()
	type want struct{ bucket, reason, relationID string }
	for _, tt := range []struct {
		name      string
		lifecycle string
		authority string
		incoming  []kura.Relation
		want      want
	}{
		// Rule 1 alone (on a node that would otherwise be use_now).
		{"Rule1/supersedes", "active", "trusted", in(rel("r1", "supersedes", "belief:new", target, 0.9, 1)),
			want{admission.DoNotUse, admission.ReasonBlockedByRelation, "r1"}},
		{"Rule1/contradicts", "active", "trusted", in(rel("r1", "contradicts", "belief:x", target, 0.9, 1)),
			want{admission.DoNotUse, admission.ReasonBlockedByRelation, "r1"}},
		{"Rule1/invalidates", "active", "trusted", in(rel("r1", "invalidates", "fact:x", target, 0.9, 1)),
			want{admission.DoNotUse, admission.ReasonBlockedByRelation, "r1"}},

		// Rule 2 alone.
		{"Rule2/archived", "archived", "trusted", nil,
			want{admission.Rehydrate, admission.ReasonPayloadRequired, ""}},
		{"Rule2/rehydrate_required", "rehydrate_required", "verified", nil,
			want{admission.Rehydrate, admission.ReasonPayloadRequired, ""}},
		{"Rule2/requires_payload", "active", "trusted", in(rel("p1", "requires_payload", "note:x", target, 0.9, 1)),
			want{admission.Rehydrate, admission.ReasonRequiresPayload, "p1"}},
		{"Rule2/ArchivedWithRequiresPayload", "archived", "advisory", in(rel("p1", "requires_payload", "note:x", target, 0.9, 1)),
			want{admission.Rehydrate, admission.ReasonRequiresPayload, "p1"}},
		{"Rule2/ArchivedWithWeakRequiresPayload", "archived", "advisory", in(rel("p1", "requires_payload", "note:x", target, 0.3, 1)),
			want{admission.Rehydrate, admission.ReasonPayloadRequired, ""}},

		// Rule 3 alone.
		{"Rule3/suppressed", "suppressed", "trusted", nil,
			want{admission.DoNotUse, admission.ReasonLifecycleBlocks, ""}},
		{"Rule3/retired", "retired", "verified", nil,
			want{admission.DoNotUse, admission.ReasonLifecycleBlocks, ""}},
		{"Rule3/blocked", "blocked", "trusted", nil,
			want{admission.DoNotUse, admission.ReasonLifecycleBlocks, ""}},
		{"Rule3/ActiveRejected", "active", "rejected", nil,
			want{admission.DoNotUse, admission.ReasonLifecycleBlocks, ""}},
		{"Rule3/CandidateRejected", "candidate", "rejected", nil,
			want{admission.DoNotUse, admission.ReasonLifecycleBlocks, ""}},

		// Rule 4 alone.
		{"Rule4/ActiveTrusted", "active", "trusted", nil,
			want{admission.UseNow, admission.ReasonAuthoritative, ""}},
		{"Rule4/ActiveVerified", "active", "verified", nil,
			want{admission.UseNow, admission.ReasonAuthoritative, ""}},

		// Rule 5.
		{"Rule5/ActiveAdvisory", "active", "advisory", nil,
			want{admission.InspectBeforeUse, admission.ReasonInsufficient, ""}},
		{"Rule5/ActiveUnknown", "active", "unknown", nil,
			want{admission.InspectBeforeUse, admission.ReasonInsufficient, ""}},
		{"Rule5/CandidateTrusted", "candidate", "trusted", nil,
			want{admission.InspectBeforeUse, admission.ReasonInsufficient, ""}},
		{"Rule5/CandidateVerified", "candidate", "verified", nil,
			want{admission.InspectBeforeUse, admission.ReasonInsufficient, ""}},
		{"Rule5/ContestedVerified", "contested", "verified", nil,
			want{admission.InspectBeforeUse, admission.ReasonInsufficient, ""}},
		{"Rule5/ContestedTrusted", "contested", "trusted", nil,
			want{admission.InspectBeforeUse, admission.ReasonInsufficient, ""}},

		// Precedence: the first rule that matches decides.
		{"Precedence/1Beats4/ActiveTrustedContradicted", "active", "trusted", in(rel("c1", "contradicts", "belief:x", target, 0.65, 1)),
			want{admission.DoNotUse, admission.ReasonBlockedByRelation, "c1"}},
		{"Precedence/1Beats2/ArchivedSuperseded", "archived", "trusted", in(rel("s1", "supersedes", "belief:x", target, 0.7, 1)),
			want{admission.DoNotUse, admission.ReasonBlockedByRelation, "s1"}},
		{"Precedence/1Beats2/RequiresPayloadAndInvalidates", "active", "trusted", in(
			rel("p1", "requires_payload", "note:x", target, 1, 1),
			rel("i1", "invalidates", "note:y", target, 0.65, 2)),
			want{admission.DoNotUse, admission.ReasonBlockedByRelation, "i1"}},
		{"Precedence/1Beats3/RetiredSuperseded", "retired", "trusted", in(rel("s1", "supersedes", "belief:x", target, 0.8, 1)),
			want{admission.DoNotUse, admission.ReasonBlockedByRelation, "s1"}},
		{"Precedence/1Beats3/RejectedContradicted", "active", "rejected", in(rel("c1", "contradicts", "belief:x", target, 0.8, 1)),
			want{admission.DoNotUse, admission.ReasonBlockedByRelation, "c1"}},
		{"Precedence/1Beats5/CandidateInvalidated", "candidate", "advisory", in(rel("i1", "invalidates", "belief:x", target, 0.8, 1)),
			want{admission.DoNotUse, admission.ReasonBlockedByRelation, "i1"}},
		{"Precedence/2Beats3/RetiredRequiresPayload", "retired", "trusted", in(rel("p1", "requires_payload", "note:x", target, 0.55, 1)),
			want{admission.Rehydrate, admission.ReasonRequiresPayload, "p1"}},
		{"Precedence/2Beats3/RejectedRequiresPayload", "active", "rejected", in(rel("p1", "requires_payload", "note:x", target, 0.55, 1)),
			want{admission.Rehydrate, admission.ReasonRequiresPayload, "p1"}},
		{"Precedence/2Beats3/ArchivedRejected", "archived", "rejected", nil,
			want{admission.Rehydrate, admission.ReasonPayloadRequired, ""}},
		{"Precedence/2Beats4/ActiveTrustedRequiresPayload", "active", "verified", in(rel("p1", "requires_payload", "note:x", target, 0.55, 1)),
			want{admission.Rehydrate, admission.ReasonRequiresPayload, "p1"}},
		{"Precedence/2Beats5/CandidateRequiresPayload", "candidate", "unknown", in(rel("p1", "requires_payload", "note:x", target, 0.6, 1)),
			want{admission.Rehydrate, admission.ReasonRequiresPayload, "p1"}},
		{"Precedence/3Beats4/RetiredVerified", "retired", "verified", nil,
			want{admission.DoNotUse, admission.ReasonLifecycleBlocks, ""}},
		{"Precedence/3Beats5/SuppressedAdvisory", "suppressed", "advisory", nil,
			want{admission.DoNotUse, admission.ReasonLifecycleBlocks, ""}},
		{"Precedence/4Beats5", "active", "verified", nil,
			want{admission.UseNow, admission.ReasonAuthoritative, ""}},

		// Relations below their threshold, or of the wrong kind for a rule.
		{"Weak/BlockingBelowBothThresholds", "active", "trusted", in(
			rel("s1", "supersedes", "belief:x", target, 0.5, 1),
			rel("c1", "contradicts", "belief:x", target, 0.5, 2),
			rel("i1", "invalidates", "belief:x", target, 0.5, 3)),
			want{admission.UseNow, admission.ReasonAuthoritative, ""}},
		{"Weak/BlockingAbovePayloadThresholdIsNotRequiresPayload", "active", "trusted", in(
			rel("c1", "contradicts", "belief:x", target, 0.6, 1)),
			want{admission.UseNow, admission.ReasonAuthoritative, ""}},
		{"Weak/RequiresPayloadAtOneDoesNotBlock", "active", "trusted", in(
			rel("p1", "requires_payload", "note:x", target, 1, 1)),
			want{admission.Rehydrate, admission.ReasonRequiresPayload, "p1"}},
		{"Weak/WeakBlockerThenRequiresPayload", "active", "trusted", in(
			rel("c1", "contradicts", "belief:x", target, 0.64, 1),
			rel("p1", "requires_payload", "note:x", target, 0.55, 2)),
			want{admission.Rehydrate, admission.ReasonRequiresPayload, "p1"}},
		{"Weak/WeakBlockerOnRetiredNode", "retired", "trusted", in(
			rel("c1", "contradicts", "belief:x", target, 0.64, 1)),
			want{admission.DoNotUse, admission.ReasonLifecycleBlocks, ""}},
		{"Weak/WeakBlockerOnCandidate", "candidate", "trusted", in(
			rel("c1", "contradicts", "belief:x", target, 0.64, 1)),
			want{admission.InspectBeforeUse, admission.ReasonInsufficient, ""}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode("belief", "t", tt.lifecycle, tt.authority)
			d := admission.Decide(&n, tt.incoming)
			got := want{d.Bucket, d.Reason, d.RelationID}
			if got != tt.want {
				t.Fatalf("got %+v, want %+v (detail %q)", got, tt.want, d.Detail)
			}
			if d.Detail == "" {
				t.Fatalf("got empty detail, want an explanation")
			}
		})
	}
}

// TestDecide_Thresholds walks every rule-1 kind and requires_payload across
// its threshold: at it, just below it (by one ulp and by 1e-7), and well
// below. The node is active+trusted, so a relation that does not decide
// leaves it in use_now.
func TestDecide_Thresholds(t *testing.T) {
	t.Parallel()
	type tc struct {
		conf   float64
		decide bool
	}
	cases := map[string][]tc{
		"supersedes":       {{1, true}, {0.9, true}, {0.65, true}, {justBelow(0.65), false}, {0.6499999, false}, {0.64, false}, {0.55, false}, {0, false}},
		"contradicts":      {{1, true}, {0.9, true}, {0.65, true}, {justBelow(0.65), false}, {0.6499999, false}, {0.64, false}, {0.55, false}, {0, false}},
		"invalidates":      {{1, true}, {0.9, true}, {0.65, true}, {justBelow(0.65), false}, {0.6499999, false}, {0.64, false}, {0.55, false}, {0, false}},
		"requires_payload": {{1, true}, {0.65, true}, {0.56, true}, {0.55, true}, {justBelow(0.55), false}, {0.5499999, false}, {0.54, false}, {0, false}},
	}
	if got, want := admission.BlockThreshold, 0.65; got != want {
		t.Fatalf("BlockThreshold: got %v, want %v", got, want)
	}
	if got, want := admission.PayloadThreshold, 0.55; got != want {
		t.Fatalf("PayloadThreshold: got %v, want %v", got, want)
	}
	for _, kind := range []string{"supersedes", "contradicts", "invalidates", "requires_payload"} {
		for _, c := range cases[kind] {
			t.Run(fmt.Sprintf("%s/%v", kind, c.conf), func(t *testing.T) {
				n := newNode("belief", "t", "active", "trusted")
				d := admission.Decide(&n, in(rel("r", kind, "belief:x", target, c.conf, 1)))
				var wantBucket, wantReason, wantID string
				switch {
				case !c.decide:
					wantBucket, wantReason = admission.UseNow, admission.ReasonAuthoritative
				case kind == "requires_payload":
					wantBucket, wantReason, wantID = admission.Rehydrate, admission.ReasonRequiresPayload, "r"
				default:
					wantBucket, wantReason, wantID = admission.DoNotUse, admission.ReasonBlockedByRelation, "r"
				}
				if d.Bucket != wantBucket || d.Reason != wantReason || d.RelationID != wantID {
					t.Fatalf("got %s/%s/%q, want %s/%s/%q", d.Bucket, d.Reason, d.RelationID, wantBucket, wantReason, wantID)
				}
				if c.decide && !strings.Contains(d.Detail, kind) {
					t.Fatalf("detail %q does not name the relation kind %s", d.Detail, kind)
				}
			})
		}
	}
}

// TestDecide_RelationID checks which relation a decision cites: the first
// qualifying one by created_at, then id — whatever order they come in and
// whichever rule-1 kind it is; relations below the threshold are never
// cited even when older.
func TestDecide_RelationID(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		incoming []kura.Relation
		want     string
	}{
		{"EarliestCreatedAt", in(
			rel("a", "supersedes", "belief:x", target, 0.9, 5),
			rel("b", "supersedes", "belief:y", target, 0.9, 2),
			rel("c", "supersedes", "belief:z", target, 0.9, 9)), "b"},
		{"AcrossKinds", in(
			rel("a", "supersedes", "belief:x", target, 0.9, 5),
			rel("b", "invalidates", "belief:y", target, 0.7, 3),
			rel("c", "contradicts", "belief:z", target, 0.65, 4)), "b"},
		{"TieOnCreatedAtThenID", in(
			rel("r9", "contradicts", "belief:x", target, 0.9, 1),
			rel("r10", "contradicts", "belief:y", target, 0.9, 1),
			rel("r2", "supersedes", "belief:z", target, 0.9, 1)), "r10"},
		{"TieIDByteOrder", in(
			rel("a", "contradicts", "belief:x", target, 0.9, 1),
			rel("B", "contradicts", "belief:y", target, 0.9, 1)), "B"},
		{"OlderWeakIgnored", in(
			rel("old", "supersedes", "belief:x", target, 0.64, 0),
			rel("new", "supersedes", "belief:y", target, 0.65, 30)), "new"},
		{"OlderRequiresPayloadIgnoredByRule1", in(
			rel("p", "requires_payload", "note:x", target, 1, 0),
			rel("s", "supersedes", "belief:y", target, 0.65, 30)), "s"},
		{"OlderSupportsIgnored", in(
			rel("sup", "supports", "belief:x", target, 1, 0),
			rel("s", "supersedes", "belief:y", target, 0.65, 30)), "s"},
		{"FractionalCreatedAt", in(
			kura.Relation{ID: "late", Kind: "contradicts", From: "belief:x", To: target, Confidence: 1, CreatedAt: "2026-11-21T09:00:00.000000002Z"},
			kura.Relation{ID: "early", Kind: "contradicts", From: "belief:y", To: target, Confidence: 1, CreatedAt: "2026-11-21T09:00:00.000000001Z"}), "early"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, order := range [][]kura.Relation{tt.incoming, reversed(tt.incoming)} {
				n := newNode("belief", "t", "active", "trusted")
				d := admission.Decide(&n, order)
				if d.Bucket != admission.DoNotUse || d.RelationID != tt.want {
					t.Fatalf("got %s relation_id %q, want do_not_use relation_id %q", d.Bucket, d.RelationID, tt.want)
				}
			}
		})
	}

	t.Run("RequiresPayload", func(t *testing.T) {
		rels := in(
			rel("p3", "requires_payload", "note:x", target, 0.9, 4),
			rel("p2", "requires_payload", "note:y", target, 0.55, 2),
			rel("p1", "requires_payload", "note:z", target, 0.54, 1),
			rel("p0", "requires_payload", "note:w", target, 0.9, 2))
		for _, order := range [][]kura.Relation{rels, reversed(rels)} {
			n := newNode("belief", "t", "active", "trusted")
			d := admission.Decide(&n, order)
			if d.Bucket != admission.Rehydrate || d.RelationID != "p0" {
				t.Fatalf("got %s relation_id %q, want rehydrate relation_id %q", d.Bucket, d.RelationID, "p0")
			}
		}
	})
}

func reversed(rs []kura.Relation) []kura.Relation {
	out := slices.Clone(rs)
	slices.Reverse(out)
	return out
}

// expectNoRelations is rules 2 to 5 written out independently of the
// package, for the exhaustive lifecycle × authority matrix.
func expectNoRelations(lifecycle, authority string) (bucket, reason string) {
	switch {
	case lifecycle == "archived" || lifecycle == "rehydrate_required":
		return admission.Rehydrate, admission.ReasonPayloadRequired
	case lifecycle == "suppressed" || lifecycle == "retired" || lifecycle == "blocked" || authority == "rejected":
		return admission.DoNotUse, admission.ReasonLifecycleBlocks
	case lifecycle == "active" && (authority == "trusted" || authority == "verified"):
		return admission.UseNow, admission.ReasonAuthoritative
	}
	return admission.InspectBeforeUse, admission.ReasonInsufficient
}

// TestDecide_Invariants: node confidence, kind and supports/derived_from
// relations (at any confidence, from any source) never change a bucket,
// over every lifecycle × authority pair; a blocking relation always wins.
func TestDecide_Invariants(t *testing.T) {
	t.Parallel()
	neutral := in(
		rel("sup", "supports", "belief:x", target, 1, 0),
		rel("der", "derived_from", "belief:y", target, 1, 0),
		rel("sup0", "supports", "belief:z", target, 0, 1),
		rel("der0", "derived_from", "record:w", target, 0.99, 1))
	for _, lc := range kura.Lifecycles {
		for _, auth := range kura.Authorities {
			wantBucket, wantReason := expectNoRelations(lc, auth)
			t.Run(lc+"/"+auth, func(t *testing.T) {
				for _, kind := range kura.NodeKinds {
					for _, c := range []float64{0, 0.5, 1} {
						for _, rels := range [][]kura.Relation{nil, neutral} {
							n := newNode(kind, "t", lc, auth)
							n.Confidence = c
							d := admission.Decide(&n, rels)
							if d.Bucket != wantBucket || d.Reason != wantReason || d.RelationID != "" {
								t.Fatalf("kind %s confidence %v relations %d: got %s/%s/%q, want %s/%s",
									kind, c, len(rels), d.Bucket, d.Reason, d.RelationID, wantBucket, wantReason)
							}
						}
					}
					n := newNode(kind, "t", lc, auth)
					d := admission.Decide(&n, append(slices.Clone(neutral), rel("b", "invalidates", "belief:q", target, 0.65, 9)))
					if d.Bucket != admission.DoNotUse || d.Reason != admission.ReasonBlockedByRelation || d.RelationID != "b" {
						t.Fatalf("kind %s with invalidates 0.65: got %s/%s/%q, want do_not_use/blocked_by_relation/b", kind, d.Bucket, d.Reason, d.RelationID)
					}
				}
			})
		}
	}
}

// TestDecide_Pure: Decide does not modify the node or the relations.
func TestDecide_Pure(t *testing.T) {
	t.Parallel()
	n := newNode("belief", "t", "active", "trusted")
	rels := in(rel("b", "contradicts", "belief:q", target, 0.9, 2), rel("a", "contradicts", "belief:r", target, 0.9, 1))
	n0, rels0 := n, slices.Clone(rels)
	admission.Decide(&n, rels)
	if !reflect.DeepEqual(n, n0) || !reflect.DeepEqual(rels, rels0) {
		t.Fatalf("Decide modified its input")
	}
}

// compile runs Compile, with the ranking rankFor gives its query, and
// fails on any structural defect of the result that holds for every
// compile.
func compile(t testing.TB, nodes []kura.Node, rels []kura.Relation, req admission.Request) *admission.Result {
	t.Helper()
	res := admission.Compile(nodes, rels, &req, rankFor(nodes, req.Query))
	checkShape(t, res)
	return res
}

// rankFor ranks nodes for query the way the store hands a ranking to
// Compile: BM25 over the nodes' title and summary (the store's engine and
// its fields are tested in the store), each match with a title_match or
// summary_match reason; nil for a query without words.
func rankFor(nodes []kura.Node, query string) admission.Ranking {
	words := recall.QueryTerms(query)
	if len(words) == 0 {
		return nil
	}
	phrases := make([][]string, len(words))
	for i, w := range words {
		phrases[i] = recall.Phrase(w)
	}
	docs := make([]recall.Doc, len(nodes))
	for i, n := range nodes {
		docs[i] = recall.Doc{recall.Tokens(n.Title), recall.Tokens(n.Summary)}
	}
	rank := admission.Ranking{}
	for i, s := range recall.BM25(docs, phrases, []float64{3, 1}) {
		if s == 0 {
			continue
		}
		var why []kura.SearchReason
		for _, r := range recall.Explain([]recall.Field{{Code: "title_match", Text: nodes[i].Title}, {Code: "summary_match", Text: nodes[i].Summary}}, words) {
			why = append(why, kura.SearchReason{Code: r.Code, Detail: r.Detail})
		}
		rank[nodes[i].Ref] = admission.Match{Score: s, Why: why}
	}
	return rank
}

func checkShape(t testing.TB, res *admission.Result) {
	t.Helper()
	for _, b := range admission.BucketOrder {
		if bucket(res, b) == nil {
			t.Fatalf("bucket %s is nil, want an empty list (JSON [])", b)
		}
		if _, ok := res.Omitted[b]; !ok {
			t.Fatalf("omitted has no %s key", b)
		}
	}
	if len(res.Omitted) != 4 {
		t.Fatalf("omitted: got %v, want exactly the four buckets", res.Omitted)
	}
	if res.Trace == nil || res.Warnings == nil {
		t.Fatalf("trace or warnings is nil, want an empty list")
	}
	sum := 0
	for _, b := range admission.BucketOrder {
		for _, it := range bucket(res, b) {
			sum += admission.ItemSize(&it)
		}
	}
	if res.Bytes != sum {
		t.Fatalf("bytes: got %d, want %d (the sum of ItemSize of kept items)", res.Bytes, sum)
	}
	// Every item is backed by a trace entry naming its bucket, unless the
	// trace was cut short (max_trace): then it lists a prefix of the order.
	traced := map[string]string{}
	for _, te := range res.Trace {
		traced[te.Ref] = te.Bucket
	}
	for _, b := range admission.BucketOrder {
		for _, it := range bucket(res, b) {
			if traced[it.Ref] != b && (res.TraceOmitted == 0 || traced[it.Ref] != "") {
				t.Fatalf("item %s in %s but trace says %q", it.Ref, b, traced[it.Ref])
			}
		}
	}
}

func bucket(res *admission.Result, name string) []admission.Item {
	switch name {
	case admission.UseNow:
		return res.Buckets.UseNow
	case admission.InspectBeforeUse:
		return res.Buckets.InspectBeforeUse
	case admission.Rehydrate:
		return res.Buckets.Rehydrate
	case admission.DoNotUse:
		return res.Buckets.DoNotUse
	}
	panic("unknown bucket " + name)
}

func refs(items []admission.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Ref
	}
	return out
}

func traceRefs(res *admission.Result) []string {
	out := make([]string, len(res.Trace))
	for i, te := range res.Trace {
		out[i] = te.Ref
	}
	return out
}

func traceOf(t testing.TB, res *admission.Result, ref string) admission.TraceEntry {
	t.Helper()
	for _, te := range res.Trace {
		if te.Ref == ref {
			return te
		}
	}
	t.Fatalf("no trace entry for %s", ref)
	return admission.TraceEntry{}
}

func at(sec int) string { return fmt.Sprintf("2026-11-21T09:00:%02d.000000000Z", sec) }

func TestCompile_Order(t *testing.T) {
	t.Parallel()
	t.Run("NoQuery", func(t *testing.T) {
		// Same updated_at for the ids whose byte order differs from the
		// natural one: "B" < "a" and "n10" < "n9".
		mk := func(id string, sec int) kura.Node {
			n := newNode("note", id, "active", "trusted")
			n.UpdatedAt = at(sec)
			return n
		}
		nodes := []kura.Node{mk("a", 10), mk("n9", 10), mk("B", 10), mk("n10", 10), mk("old", 1), mk("new", 30), mk("Z", 20)}
		want := []string{"note:new", "note:Z", "note:B", "note:a", "note:n10", "note:n9", "note:old"}
		res := compile(t, nodes, nil, admission.Request{})
		if got := traceRefs(res); !slices.Equal(got, want) {
			t.Fatalf("trace: got %v, want %v", got, want)
		}
		if got := refs(res.Buckets.UseNow); !slices.Equal(got, want) {
			t.Fatalf("use_now: got %v, want %v", got, want)
		}
		for _, te := range res.Trace {
			if te.Score != nil || te.Why != nil {
				t.Fatalf("%s: got score %v why %v without a query, want neither", te.Ref, te.Score, te.Why)
			}
		}
	})

	t.Run("InputOrderIrrelevant", func(t *testing.T) {
		r := rand.New(rand.NewPCG(1, 2))
		var nodes []kura.Node
		seen := map[string]bool{}
		for i := range 40 {
			n := newNode(kura.NodeKinds[r.IntN(3)], fmt.Sprintf("n%d", r.IntN(12)), kura.Lifecycles[r.IntN(len(kura.Lifecycles))], kura.Authorities[r.IntN(len(kura.Authorities))])
			if seen[n.Ref] {
				continue
			}
			seen[n.Ref] = true
			n.UpdatedAt = at(r.IntN(5))
			n.Title = fmt.Sprintf("t%d", i)
			nodes = append(nodes, n)
		}
		want := compile(t, nodes, nil, admission.Request{Query: "t1 t2"})
		for range 10 {
			shuffled := slices.Clone(nodes)
			r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			got := compile(t, shuffled, nil, admission.Request{Query: "t1 t2"})
			if !reflect.DeepEqual(traceRefs(got), traceRefs(want)) {
				t.Fatalf("order depends on the input order:\n got %v\nwant %v", traceRefs(got), traceRefs(want))
			}
		}
	})

	t.Run("SameIDDifferentKinds", func(t *testing.T) {
		a, b := newNode("note", "x", "active", "trusted"), newNode("belief", "x", "active", "trusted")
		for _, nodes := range [][]kura.Node{{a, b}, {b, a}} {
			res := compile(t, nodes, nil, admission.Request{})
			if got, want := traceRefs(res), []string{"belief:x", "note:x"}; !slices.Equal(got, want) {
				t.Fatalf("got %v, want %v (a stable order)", got, want)
			}
		}
	})

	t.Run("Query", func(t *testing.T) {
		mk := func(id, title, summary string, sec int) kura.Node {
			n := newNode("note", id, "active", "trusted")
			n.Title, n.Summary, n.UpdatedAt = title, summary, at(sec)
			return n
		}
		nodes := []kura.Node{
			mk("none-new", "unrelated", "nothing here", 50),   // score 0, newest
			mk("sum", "other", "the cache is warm", 10),       // summary: 3
			mk("title", "cache policy", "nothing", 1),         // title: 8, oldest
			mk("both", "cache eviction", "eviction cache", 5), // title 8+8, summary 3+3 = 22
			mk("n9", "cache", "", 20),                         // title: 8
			mk("n10", "cache", "", 20),                        // title: 8, same time: n10 < n9
			mk("B", "cache", "", 20),                          // "B" < "n10"
			mk("none-old", "unrelated", "nothing here", 0),    // score 0, oldest
		}
		res := compile(t, nodes, nil, admission.Request{Query: "Cache EVICTION"})
		want := []string{"note:both", "note:B", "note:n10", "note:n9", "note:title", "note:sum", "note:none-new", "note:none-old"}
		if got := traceRefs(res); !slices.Equal(got, want) {
			t.Fatalf("trace: got %v, want %v", got, want)
		}
		if got := refs(res.Buckets.UseNow); !slices.Equal(got, want) {
			t.Fatalf("use_now: got %v, want %v", got, want)
		}
		scores := map[string]float64{}
		for _, te := range res.Trace {
			if te.Score == nil {
				t.Fatalf("%s: no score with a query", te.Ref)
			}
			scores[te.Ref] = *te.Score
		}
		// The ranking's scores, as handed in; equal scores keep the order
		// without a query; a node the ranking does not name scores 0.
		rank := rankFor(nodes, "Cache EVICTION")
		for _, te := range res.Trace {
			if want := recall.RoundScore(rank[te.Ref].Score); scores[te.Ref] != want {
				t.Fatalf("%s: got score %v, want %v", te.Ref, scores[te.Ref], want)
			}
		}
		if !(scores["note:both"] > scores["note:B"] && scores["note:B"] == scores["note:n9"] && scores["note:n9"] > scores["note:title"] &&
			scores["note:title"] > scores["note:sum"] && scores["note:sum"] > 0 && scores["note:none-new"] == 0) {
			t.Fatalf("scores %v", scores)
		}
	})

	// A node the ranking names comes before the ones it does not, even at
	// a score that shows as 0 (a word in most nodes weighs next to
	// nothing): it matched.
	t.Run("MatchAtZero", func(t *testing.T) {
		a, b := newNode("note", "a", "active", "trusted"), newNode("note", "b", "active", "trusted")
		a.UpdatedAt, b.UpdatedAt = at(2), at(1)
		res := admission.Compile([]kura.Node{a, b}, nil, &admission.Request{Query: "x"}, admission.Ranking{"note:b": {Score: 0}})
		if got := traceRefs(res); !slices.Equal(got, []string{"note:b", "note:a"}) {
			t.Fatalf("trace: got %v, want the match first", got)
		}
	})

	t.Run("QueryDoesNotChangeBuckets", func(t *testing.T) {
		nodes := mixedNodes()
		rels := in(rel("c", "contradicts", "note:x", "note:use2", 0.9, 1))
		plain := compile(t, nodes, rels, admission.Request{})
		queried := compile(t, nodes, rels, admission.Request{Query: "alpha beta", TargetFiles: []string{"a.go"}})
		for _, te := range plain.Trace {
			q := traceOf(t, queried, te.Ref)
			if q.Bucket != te.Bucket || q.Reason != te.Reason || q.RelationID != te.RelationID {
				t.Fatalf("%s: query moved it from %s/%s to %s/%s", te.Ref, te.Bucket, te.Reason, q.Bucket, q.Reason)
			}
		}
	})
}

// mixedNodes is one node per bucket and then some, all distinct in time.
func mixedNodes() []kura.Node {
	var out []kura.Node
	for i, s := range []struct{ id, lc, auth string }{
		{"use1", "active", "trusted"}, {"use2", "active", "verified"}, {"use3", "active", "trusted"},
		{"insp1", "candidate", "trusted"}, {"insp2", "active", "advisory"},
		{"reh1", "archived", "trusted"}, {"reh2", "rehydrate_required", "unknown"},
		{"dnu1", "retired", "trusted"}, {"dnu2", "active", "rejected"}, {"dnu3", "blocked", "verified"},
	} {
		n := newNode("note", s.id, s.lc, s.auth)
		n.UpdatedAt = at(59 - i)
		n.Title = "alpha " + s.id
		n.Summary = "beta summary of " + s.id
		n.TargetFiles = []string{"a.go"}
		out = append(out, n)
	}
	return out
}

func TestCompile_Buckets(t *testing.T) {
	t.Parallel()
	res := compile(t, mixedNodes(), nil, admission.Request{})
	for b, want := range map[string][]string{
		admission.UseNow:           {"note:use1", "note:use2", "note:use3"},
		admission.InspectBeforeUse: {"note:insp1", "note:insp2"},
		admission.Rehydrate:        {"note:reh1", "note:reh2"},
		admission.DoNotUse:         {"note:dnu1", "note:dnu2", "note:dnu3"},
	} {
		if got := refs(bucket(res, b)); !slices.Equal(got, want) {
			t.Fatalf("%s: got %v, want %v", b, got, want)
		}
	}
	if len(res.Trace) != 10 || len(res.Warnings) != 0 || res.Redactions != 0 {
		t.Fatalf("got %d trace entries, warnings %v, redactions %d; want 10, none, 0", len(res.Trace), res.Warnings, res.Redactions)
	}
	// Items carry the node's fields as they are.
	payload := "blob:sha256:abc"
	n := newNode("fact", "f", "archived", "verified")
	n.Confidence, n.PayloadRef = 0.25, &payload
	res = compile(t, []kura.Node{n}, nil, admission.Request{})
	want := admission.Item{Ref: "fact:f", Title: "title of f", Summary: "summary of f", Confidence: 0.25,
		Lifecycle: "archived", Authority: "verified", PayloadRef: &payload}
	if len(res.Buckets.Rehydrate) != 1 || !reflect.DeepEqual(res.Buckets.Rehydrate[0], want) {
		t.Fatalf("rehydrate: got %+v, want [%+v]", res.Buckets.Rehydrate, want)
	}
	te := res.Trace[0]
	if te.Bucket != admission.Rehydrate || te.Reason != admission.ReasonPayloadRequired || te.RelationID != "" || te.Detail == "" {
		t.Fatalf("trace: got %+v, want rehydrate/payload_required with a detail", te)
	}
}

func TestCompile_Relations(t *testing.T) {
	t.Parallel()
	t.Run("OnlyIncomingApply", func(t *testing.T) {
		a, b := newNode("belief", "a", "active", "trusted"), newNode("belief", "b", "active", "trusted")
		// Relations from a, to nodes that are not in the set, and to a
		// ref that only differs in kind: none points at a.
		rels := in(
			rel("out", "contradicts", "belief:a", "belief:b", 1, 1),
			rel("else", "supersedes", "belief:x", "belief:gone", 1, 2),
			rel("kind", "invalidates", "belief:x", "note:a", 1, 3),
			rel("id", "requires_payload", "belief:x", "belief:A", 1, 4))
		res := compile(t, []kura.Node{a, b}, rels, admission.Request{})
		if te := traceOf(t, res, "belief:a"); te.Bucket != admission.UseNow || te.RelationID != "" {
			t.Fatalf("belief:a: got %s relation %q, want use_now with no relation", te.Bucket, te.RelationID)
		}
		if te := traceOf(t, res, "belief:b"); te.Bucket != admission.DoNotUse || te.RelationID != "out" {
			t.Fatalf("belief:b: got %s relation %q, want do_not_use relation out", te.Bucket, te.RelationID)
		}
	})

	t.Run("SourceStateIrrelevant", func(t *testing.T) {
		// The source is retired, rejected, or not in the node set at all:
		// the relation decides just the same.
		src := newNode("belief", "src", "retired", "rejected")
		tgt := newNode("belief", "tgt", "active", "trusted")
		rels := in(rel("r", "supersedes", "belief:src", "belief:tgt", 0.65, 1))
		for _, nodes := range [][]kura.Node{{src, tgt}, {tgt}} {
			res := compile(t, nodes, rels, admission.Request{})
			te := traceOf(t, res, "belief:tgt")
			if te.Bucket != admission.DoNotUse || te.Reason != admission.ReasonBlockedByRelation || te.RelationID != "r" {
				t.Fatalf("got %s/%s/%q, want do_not_use/blocked_by_relation/r", te.Bucket, te.Reason, te.RelationID)
			}
		}
		// A blocked source does not pass "blocking" on through supports.
		res := compile(t, []kura.Node{src, tgt}, in(rel("s", "supports", "belief:src", "belief:tgt", 1, 1)), admission.Request{})
		if te := traceOf(t, res, "belief:tgt"); te.Bucket != admission.UseNow {
			t.Fatalf("got %s, want use_now", te.Bucket)
		}
	})

	t.Run("TraceCitesRelation", func(t *testing.T) {
		n := newNode("belief", "t", "active", "trusted")
		rels := in(
			rel("late", "contradicts", "belief:x", target, 0.9, 9),
			rel("early", "contradicts", "belief:y", target, 0.65, 3),
			rel("weak", "contradicts", "belief:z", target, 0.5, 0))
		res := compile(t, []kura.Node{n}, rels, admission.Request{})
		te := res.Trace[0]
		if te.RelationID != "early" || !strings.Contains(te.Detail, "belief:y") || !strings.Contains(te.Detail, "0.65") {
			t.Fatalf("got relation %q detail %q, want relation early naming belief:y at 0.65", te.RelationID, te.Detail)
		}
	})
}

func TestCompile_Kinds(t *testing.T) {
	t.Parallel()
	note := newNode("note", "n", "active", "trusted")
	belief := newNode("belief", "b", "active", "trusted")
	fact := newNode("fact", "f", "archived", "trusted")
	fact.UpdatedAt = "2026-11-21T08:00:00.000000000Z" // older than the others
	// The excluded note still blocks the belief and asks for the fact's payload.
	rels := in(
		rel("r1", "supersedes", "note:n", "belief:b", 0.9, 1),
		rel("r2", "requires_payload", "note:n", "fact:f", 0.9, 2),
		rel("r3", "contradicts", "belief:b", "note:n", 0.9, 3))
	res := compile(t, []kura.Node{note, belief, fact}, rels, admission.Request{Kinds: []string{"belief", "fact"}})
	if got, want := traceRefs(res), []string{"belief:b", "fact:f"}; !slices.Equal(got, want) {
		t.Fatalf("trace: got %v, want %v", got, want)
	}
	if te := traceOf(t, res, "belief:b"); te.Bucket != admission.DoNotUse || te.RelationID != "r1" {
		t.Fatalf("belief:b: got %s relation %q, want do_not_use relation r1", te.Bucket, te.RelationID)
	}
	if te := traceOf(t, res, "fact:f"); te.Bucket != admission.Rehydrate || te.Reason != admission.ReasonRequiresPayload || te.RelationID != "r2" {
		t.Fatalf("fact:f: got %s/%s/%q, want rehydrate/relation_requires_payload/r2", te.Bucket, te.Reason, te.RelationID)
	}
	for _, b := range admission.BucketOrder {
		for _, it := range bucket(res, b) {
			if it.Ref == "note:n" {
				t.Fatalf("excluded note:n is in %s", b)
			}
		}
	}
	// Excluded nodes are not "omitted": omitted counts cuts, not filters.
	for b, n := range res.Omitted {
		if n != 0 {
			t.Fatalf("omitted[%s] = %d, want 0", b, n)
		}
	}
	// Every kind of the vocabulary, one at a time.
	var all []kura.Node
	for _, k := range kura.NodeKinds {
		all = append(all, newNode(k, "x", "active", "trusted"))
	}
	for _, k := range kura.NodeKinds {
		res := compile(t, all, nil, admission.Request{Kinds: []string{k}})
		if got := traceRefs(res); !slices.Equal(got, []string{k + ":x"}) {
			t.Fatalf("kinds [%s]: got %v", k, got)
		}
	}
	// No kinds (nil or empty) means every kind.
	for _, kinds := range [][]string{nil, {}} {
		if res := compile(t, all, nil, admission.Request{Kinds: kinds}); len(res.Trace) != len(all) {
			t.Fatalf("kinds %v: got %d nodes, want %d", kinds, len(res.Trace), len(all))
		}
	}
	// A kind nothing has: empty result.
	if res := compile(t, all, nil, admission.Request{Kinds: []string{"nope"}}); len(res.Trace) != 0 || res.Bytes != 0 {
		t.Fatalf("got %d trace entries and %d bytes, want none", len(res.Trace), res.Bytes)
	}
}

func TestCompile_MaxPerBucket(t *testing.T) {
	t.Parallel()
	nodes := mixedNodes() // use_now 3, inspect 2, rehydrate 2, do_not_use 3
	for _, tt := range []struct {
		max     *int // nil: no limit
		kept    map[string][]string
		omitted map[string]int
	}{
		{nil, map[string][]string{
			admission.UseNow: {"note:use1", "note:use2", "note:use3"}, admission.InspectBeforeUse: {"note:insp1", "note:insp2"},
			admission.Rehydrate: {"note:reh1", "note:reh2"}, admission.DoNotUse: {"note:dnu1", "note:dnu2", "note:dnu3"}},
			map[string]int{admission.UseNow: 0, admission.InspectBeforeUse: 0, admission.Rehydrate: 0, admission.DoNotUse: 0}},
		// 0 keeps none: every item is cut and counted.
		{new(0), map[string][]string{},
			map[string]int{admission.UseNow: 3, admission.InspectBeforeUse: 2, admission.Rehydrate: 2, admission.DoNotUse: 3}},
		{new(1), map[string][]string{
			admission.UseNow: {"note:use1"}, admission.InspectBeforeUse: {"note:insp1"},
			admission.Rehydrate: {"note:reh1"}, admission.DoNotUse: {"note:dnu1"}},
			map[string]int{admission.UseNow: 2, admission.InspectBeforeUse: 1, admission.Rehydrate: 1, admission.DoNotUse: 2}},
		{new(2), map[string][]string{
			admission.UseNow: {"note:use1", "note:use2"}, admission.InspectBeforeUse: {"note:insp1", "note:insp2"},
			admission.Rehydrate: {"note:reh1", "note:reh2"}, admission.DoNotUse: {"note:dnu1", "note:dnu2"}},
			map[string]int{admission.UseNow: 1, admission.InspectBeforeUse: 0, admission.Rehydrate: 0, admission.DoNotUse: 1}},
		{new(3), map[string][]string{
			admission.UseNow: {"note:use1", "note:use2", "note:use3"}, admission.InspectBeforeUse: {"note:insp1", "note:insp2"},
			admission.Rehydrate: {"note:reh1", "note:reh2"}, admission.DoNotUse: {"note:dnu1", "note:dnu2", "note:dnu3"}},
			map[string]int{admission.UseNow: 0, admission.InspectBeforeUse: 0, admission.Rehydrate: 0, admission.DoNotUse: 0}},
		{new(1000), map[string][]string{
			admission.UseNow: {"note:use1", "note:use2", "note:use3"}, admission.InspectBeforeUse: {"note:insp1", "note:insp2"},
			admission.Rehydrate: {"note:reh1", "note:reh2"}, admission.DoNotUse: {"note:dnu1", "note:dnu2", "note:dnu3"}},
			map[string]int{admission.UseNow: 0, admission.InspectBeforeUse: 0, admission.Rehydrate: 0, admission.DoNotUse: 0}},
	} {
		name := "nil"
		if tt.max != nil {
			name = fmt.Sprint(*tt.max)
		}
		t.Run(name, func(t *testing.T) {
			res := compile(t, nodes, nil, admission.Request{MaxPerBucket: tt.max})
			for _, b := range admission.BucketOrder {
				if got := refs(bucket(res, b)); !slices.Equal(got, tt.kept[b]) {
					t.Fatalf("%s: got %v, want %v", b, got, tt.kept[b])
				}
			}
			if !reflect.DeepEqual(res.Omitted, tt.omitted) {
				t.Fatalf("omitted: got %v, want %v", res.Omitted, tt.omitted)
			}
			// The trace lists every node, in order, whatever was cut.
			want := make([]string, len(nodes))
			for i, n := range nodes {
				want[i] = n.Ref
			}
			if got := traceRefs(res); !slices.Equal(got, want) {
				t.Fatalf("trace: got %v, want %v", got, want)
			}
		})
	}

	t.Run("KeepsTheBestByQuery", func(t *testing.T) {
		nodes := mixedNodes()
		nodes[2].Title = "gamma gamma" // use3: the only query hit, oldest of use_now
		res := compile(t, nodes, nil, admission.Request{Query: "gamma", MaxPerBucket: new(1)})
		if got := refs(res.Buckets.UseNow); !slices.Equal(got, []string{"note:use3"}) {
			t.Fatalf("use_now: got %v, want [note:use3]", got)
		}
		if len(res.Trace) != len(nodes) || res.Trace[0].Ref != "note:use3" {
			t.Fatalf("trace: got %v, want every node with note:use3 first", traceRefs(res))
		}
	})
}

func sumSizes(items []admission.Item) int {
	n := 0
	for i := range items {
		n += admission.ItemSize(&items[i])
	}
	return n
}

// flat is the items of every bucket in BucketOrder: the order a budget
// spends bytes in.
func flat(res *admission.Result) []admission.Item {
	out := []admission.Item{}
	for _, b := range admission.BucketOrder {
		out = append(out, bucket(res, b)...)
	}
	return out
}

func TestCompile_Budget(t *testing.T) {
	t.Parallel()
	nodes := mixedNodes()
	full := compile(t, nodes, nil, admission.Request{})
	all := flat(full)
	total := sumSizes(all)
	first := admission.ItemSize(&all[0])

	t.Run("ZeroIsUnlimited", func(t *testing.T) {
		res := compile(t, nodes, nil, admission.Request{BudgetBytes: 0})
		if res.Bytes != total || len(flat(res)) != len(all) || len(res.Warnings) != 0 {
			t.Fatalf("got %d bytes, %d items, warnings %v; want %d bytes, %d items, none", res.Bytes, len(flat(res)), res.Warnings, total, len(all))
		}
	})

	t.Run("ItemSizeIsJSON", func(t *testing.T) {
		for i := range all {
			b, err := json.Marshal(all[i])
			if err != nil {
				t.Fatal(err)
			}
			if got := admission.ItemSize(&all[i]); got != len(b) {
				t.Fatalf("ItemSize: got %d, want %d", got, len(b))
			}
		}
	})

	for _, tt := range []struct {
		name     string
		budget   int
		kept     int // items kept, a prefix of all
		warning  bool
		bytesMax int
	}{
		{"SmallerThanFirst", first - 1, 0, true, 0},
		{"One", 1, 0, true, 0},
		{"ExactlyFirst", first, 1, true, first},
		{"FirstPlusOne", first + 1, 1, true, first + 1},
		{"AllButOneByte", total - 1, len(all) - 1, true, total - 1},
		{"Exact", total, len(all), false, total},
		{"More", total + 1000, len(all), false, total},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := compile(t, nodes, nil, admission.Request{BudgetBytes: tt.budget})
			got := flat(res)
			if !reflect.DeepEqual(got, all[:tt.kept]) {
				t.Fatalf("kept: got %v, want %v", refs(got), refs(all[:tt.kept]))
			}
			if res.Bytes > tt.budget || res.Bytes > tt.bytesMax {
				t.Fatalf("bytes: got %d, want ≤ %d (budget %d)", res.Bytes, tt.bytesMax, tt.budget)
			}
			if gotWarn := len(res.Warnings) > 0; gotWarn != tt.warning {
				t.Fatalf("warnings: got %v, want a budget warning: %v", res.Warnings, tt.warning)
			}
			if tt.warning && !strings.Contains(res.Warnings[0], fmt.Sprint(tt.budget)) {
				t.Fatalf("warning %q does not name the budget %d", res.Warnings[0], tt.budget)
			}
			omitted := 0
			for _, b := range admission.BucketOrder {
				if want := len(bucket(full, b)) - len(bucket(res, b)); res.Omitted[b] != want {
					t.Fatalf("omitted[%s]: got %d, want %d", b, res.Omitted[b], want)
				}
				omitted += res.Omitted[b]
			}
			if omitted != len(all)-tt.kept {
				t.Fatalf("omitted: got %d in all, want %d", omitted, len(all)-tt.kept)
			}
			if len(res.Trace) != len(nodes) {
				t.Fatalf("trace: got %d entries, want %d", len(res.Trace), len(nodes))
			}
		})
	}

	t.Run("StopsAtFirstMisfit", func(t *testing.T) {
		// A big item early in the order ends the filling even though smaller
		// ones later would still fit: what is kept is a prefix.
		nodes := mixedNodes()
		nodes[3].Summary = strings.Repeat("x", 4000) // insp1, first of inspect_before_use
		full := compile(t, nodes, nil, admission.Request{})
		useNow := sumSizes(full.Buckets.UseNow)
		res := compile(t, nodes, nil, admission.Request{BudgetBytes: useNow + 1000})
		if got := refs(flat(res)); !slices.Equal(got, refs(full.Buckets.UseNow)) {
			t.Fatalf("kept: got %v, want only use_now %v", got, refs(full.Buckets.UseNow))
		}
		want := map[string]int{admission.UseNow: 0, admission.InspectBeforeUse: 2, admission.Rehydrate: 2, admission.DoNotUse: 3}
		if !reflect.DeepEqual(res.Omitted, want) {
			t.Fatalf("omitted: got %v, want %v", res.Omitted, want)
		}
	})

	t.Run("AfterMaxPerBucket", func(t *testing.T) {
		// Omitted adds both cuts: max_per_bucket first, then the budget.
		perBucket := compile(t, nodes, nil, admission.Request{MaxPerBucket: new(2)})
		useNow := sumSizes(perBucket.Buckets.UseNow)
		res := compile(t, nodes, nil, admission.Request{MaxPerBucket: new(2), BudgetBytes: useNow})
		want := map[string]int{admission.UseNow: 1, admission.InspectBeforeUse: 2, admission.Rehydrate: 2, admission.DoNotUse: 3}
		if !reflect.DeepEqual(res.Omitted, want) || res.Bytes != useNow {
			t.Fatalf("got omitted %v bytes %d, want %v and %d", res.Omitted, res.Bytes, want, useNow)
		}
	})

	t.Run("CountsRedactedSize", func(t *testing.T) {
		// The budget pays for what is served: the redacted text.
		n := newNode("note", "k", "active", "trusted")
		n.Summary = "password=" + strings.Repeat("s", 500)
		redacted := compile(t, []kura.Node{n}, nil, admission.Request{})
		size := admission.ItemSize(&redacted.Buckets.UseNow[0])
		if size > 200 {
			t.Fatalf("redacted item is %d bytes, want the secret gone", size)
		}
		res := compile(t, []kura.Node{n}, nil, admission.Request{BudgetBytes: size})
		if len(res.Buckets.UseNow) != 1 || res.Bytes != size {
			t.Fatalf("got %d items, %d bytes; want the redacted item (%d bytes) to fit", len(res.Buckets.UseNow), res.Bytes, size)
		}
	})
}

// TestCompile_BudgetProperty: over random node sets, relations, queries
// and budgets, a budgeted compile keeps a prefix (in BucketOrder) of the
// unbudgeted one, never spends more than the budget, counts exactly the
// bytes it keeps, and omits exactly what it cut; the trace never changes.
func TestCompile_BudgetProperty(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(20261121, 7))
	words := []string{"cache", "deploy", "token", "budget", "alpha", "beta", "ünïcode", "日本", `"quoted"`, `<tag>`, "\n", "password=x"}
	text := func(max int) string {
		var b strings.Builder
		for range r.IntN(max) {
			b.WriteString(words[r.IntN(len(words))])
			b.WriteByte(' ')
		}
		return b.String()
	}
	for iter := range 200 {
		var nodes []kura.Node
		for i := range r.IntN(40) {
			n := newNode(kura.NodeKinds[r.IntN(len(kura.NodeKinds))], fmt.Sprintf("n%d", i),
				kura.Lifecycles[r.IntN(len(kura.Lifecycles))], kura.Authorities[r.IntN(len(kura.Authorities))])
			n.Title, n.Summary, n.UpdatedAt, n.Confidence = text(5), text(60), at(r.IntN(10)), r.Float64()
			if r.IntN(3) == 0 {
				p := "payload:" + n.ID
				n.PayloadRef = &p
			}
			nodes = append(nodes, n)
		}
		var rels []kura.Relation
		for i := range r.IntN(30) {
			if len(nodes) == 0 {
				break
			}
			rels = append(rels, rel(fmt.Sprintf("r%d", i), kura.RelationKind[r.IntN(len(kura.RelationKind))],
				nodes[r.IntN(len(nodes))].Ref, nodes[r.IntN(len(nodes))].Ref, r.Float64(), r.IntN(60)))
		}
		var base admission.Request
		// Mostly no limit (nil), sometimes 0 (keep none), else 1 to 12.
		if m := r.IntN(4) * r.IntN(5); m > 0 || r.IntN(4) == 0 {
			base.MaxPerBucket = &m
		}
		if iter%4 != 0 {
			// Redaction is tested elsewhere and dominates the run time
			// under -race; every fourth round keeps it on.
			off := false
			base.Redact = &off
		}
		if r.IntN(2) == 0 {
			base.Query = text(3)
		}
		full := compile(t, nodes, rels, base)
		all := flat(full)
		total := sumSizes(all)
		var budgets []int
		budgets = append(budgets, 1, total, total+1, r.IntN(total+2)+1)
		if len(all) > 0 {
			budgets = append(budgets, total-1, admission.ItemSize(&all[0]), admission.ItemSize(&all[0])-1)
		}
		for _, budget := range budgets {
			if budget <= 0 {
				continue
			}
			req := base
			req.BudgetBytes = budget
			res := compile(t, nodes, rels, req)
			kept := flat(res)
			if res.Bytes > budget {
				t.Fatalf("iter %d budget %d: got %d bytes", iter, budget, res.Bytes)
			}
			if res.Bytes != sumSizes(kept) {
				t.Fatalf("iter %d budget %d: bytes %d, kept items sum to %d", iter, budget, res.Bytes, sumSizes(kept))
			}
			if !reflect.DeepEqual(kept, all[:len(kept)]) {
				t.Fatalf("iter %d budget %d: kept %v is not a prefix of %v", iter, budget, refs(kept), refs(all))
			}
			// Maximal: the next item would not have fitted.
			if len(kept) < len(all) && res.Bytes+admission.ItemSize(&all[len(kept)]) <= budget {
				t.Fatalf("iter %d budget %d: stopped at %d bytes though the next item (%d bytes) fits", iter, budget, res.Bytes, admission.ItemSize(&all[len(kept)]))
			}
			for _, b := range admission.BucketOrder {
				if want := full.Omitted[b] + len(bucket(full, b)) - len(bucket(res, b)); res.Omitted[b] != want {
					t.Fatalf("iter %d budget %d: omitted[%s] got %d, want %d", iter, budget, b, res.Omitted[b], want)
				}
			}
			if (len(kept) < len(all)) != (len(res.Warnings) == 1) {
				t.Fatalf("iter %d budget %d: kept %d of %d, warnings %v", iter, budget, len(kept), len(all), res.Warnings)
			}
			if !reflect.DeepEqual(res.Trace, full.Trace) {
				t.Fatalf("iter %d budget %d: the budget changed the trace", iter, budget)
			}
		}
	}
}

func TestCompile_Why(t *testing.T) {
	t.Parallel()
	hit := newNode("note", "deploy-cache", "active", "trusted")
	hit.Title = "Cache warmup"
	hit.Summary = "warm the cache before deploy"
	hit.TargetFiles = []string{"api/cache.go", "cmd/main.go"}
	miss := newNode("note", "other", "active", "advisory")
	miss.Title, miss.Summary = "nothing", "unrelated"
	miss.TargetFiles = []string{"README.md"}
	nodes := []kura.Node{miss, hit}

	// The ranking's reasons come first, then the target files the request
	// named; the ranking's own slice is left as it was.
	why := []kura.SearchReason{{Code: "title_match", Detail: "cache"}, {Code: "id_match", Detail: "cache, deploy"}}
	rank := admission.Ranking{"note:deploy-cache": {Score: 2.5, Why: why}}
	req := admission.Request{Query: "cache deploy", TargetFiles: []string{"api/cache.go", "other.go"}}
	res := admission.Compile(nodes, nil, &req, rank)
	te := traceOf(t, res, "note:deploy-cache")
	if te.Score == nil || *te.Score != 2.5 {
		t.Fatalf("score: got %v, want 2.5", te.Score)
	}
	want := []kura.SearchReason{
		{Code: "title_match", Detail: "cache"},
		{Code: "id_match", Detail: "cache, deploy"},
		{Code: "target_file_match", Detail: "api/cache.go"},
	}
	if !reflect.DeepEqual(te.Why, want) {
		t.Fatalf("why: got %+v, want %+v", te.Why, want)
	}
	if len(rank["note:deploy-cache"].Why) != 2 || cap(why) != 2 {
		t.Fatalf("Compile wrote into the ranking: %+v", rank)
	}
	m := traceOf(t, res, "note:other")
	if m.Score == nil || *m.Score != 0 || m.Why != nil {
		t.Fatalf("miss: got score %v why %v, want 0 and none", m.Score, m.Why)
	}
	if res.Trace[0].Ref != "note:deploy-cache" {
		t.Fatalf("trace: got %v, want the hit first", traceRefs(res))
	}

	// Target files alone explain but do not score or reorder.
	res = compile(t, nodes, nil, admission.Request{TargetFiles: []string{"cmd/main.go"}})
	te = traceOf(t, res, "note:deploy-cache")
	if te.Score != nil || !reflect.DeepEqual(te.Why, []kura.SearchReason{{Code: "target_file_match", Detail: "cmd/main.go"}}) {
		t.Fatalf("target files only: got score %v why %+v", te.Score, te.Why)
	}

	// A query of punctuation has no words: no score, the plain order.
	res = compile(t, nodes, nil, admission.Request{Query: " ?! "})
	for _, te := range res.Trace {
		if te.Score != nil {
			t.Fatalf("%s: got a score for a query with no words", te.Ref)
		}
	}

	// In JSON, score and why appear only when they explain something.
	b, err := json.Marshal(compile(t, nodes, nil, admission.Request{}).Trace)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); strings.Contains(s, `"score"`) || strings.Contains(s, `"why"`) || strings.Contains(s, `"relation_id"`) {
		t.Fatalf("trace without query: got %s, want no score, why or relation_id", s)
	}
}

func TestCompile_Redaction(t *testing.T) {
	t.Parallel()
	n := newNode("note", "s", "active", "trusted")
	n.Title = "db password=hunter2"
	n.Summary = "connect with postgres://app:s3cret@db:5432/prod and key AKIAIOSFODNN7EXAMPLE"
	clean := newNode("note", "c", "active", "advisory")
	clean.Title, clean.Summary = "the token budget is 500", "password policy requires 12 chars"
	nodes := []kura.Node{n, clean}

	check := func(t *testing.T, res *admission.Result, wantTitle, wantSummary string, wantCount int) {
		t.Helper()
		it := res.Buckets.UseNow[0]
		if it.Title != wantTitle || it.Summary != wantSummary || res.Redactions != wantCount {
			t.Fatalf("got %q / %q / %d, want %q / %q / %d", it.Title, it.Summary, res.Redactions, wantTitle, wantSummary, wantCount)
		}
		c := res.Buckets.InspectBeforeUse[0]
		if c.Title != clean.Title || c.Summary != clean.Summary {
			t.Fatalf("ordinary text changed: got %q / %q", c.Title, c.Summary)
		}
	}
	on := true
	off := false
	t.Run("DefaultOn", func(t *testing.T) {
		check(t, compile(t, nodes, nil, admission.Request{}),
			"db password=[REDACTED]", "connect with [REDACTED] and key [REDACTED]", 3)
	})
	t.Run("ExplicitOn", func(t *testing.T) {
		check(t, compile(t, nodes, nil, admission.Request{Redact: &on}),
			"db password=[REDACTED]", "connect with [REDACTED] and key [REDACTED]", 3)
	})
	t.Run("Off", func(t *testing.T) {
		check(t, compile(t, nodes, nil, admission.Request{Redact: &off}), n.Title, n.Summary, 0)
	})
	t.Run("InputUntouched", func(t *testing.T) {
		if nodes[0].Title != "db password=hunter2" {
			t.Fatalf("Compile redacted the caller's node: %q", nodes[0].Title)
		}
	})
	t.Run("TraceUntouched", func(t *testing.T) {
		// The trace names refs and relations, never node text.
		b, _ := json.Marshal(compile(t, nodes, nil, admission.Request{}).Trace)
		if strings.Contains(string(b), "hunter2") || strings.Contains(string(b), "s3cret") {
			t.Fatalf("trace leaks a secret: %s", b)
		}
	})
}

// TestCompile_ResultJSON checks the wire shape Compile hands to the store:
// the fields API.md names, empty lists as [], and no digest, bundle id,
// scope or as_of — the store adds those.
func TestCompile_ResultJSON(t *testing.T) {
	t.Parallel()
	for _, nodes := range [][]kura.Node{nil, mixedNodes()} {
		res := compile(t, nodes, nil, admission.Request{})
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range m {
				if !yield(k) {
					return
				}
			}
		})
		if want := []string{"buckets", "bytes", "omitted", "redactions", "trace", "trace_omitted", "warnings"}; !slices.Equal(keys, want) {
			t.Fatalf("keys: got %v, want %v", keys, want)
		}
		var buckets map[string]json.RawMessage
		if err := json.Unmarshal(m["buckets"], &buckets); err != nil {
			t.Fatal(err)
		}
		for _, name := range admission.BucketOrder {
			raw, ok := buckets[name]
			if !ok || string(raw) == "null" {
				t.Fatalf("buckets.%s: got %s, want a list", name, raw)
			}
		}
		if len(nodes) == 0 && (string(m["trace"]) != "[]" || string(m["warnings"]) != "[]") {
			t.Fatalf("empty compile: trace %s warnings %s, want [] and []", m["trace"], m["warnings"])
		}
	}
	// Items: payload_ref only when set.
	it := admission.Item{Ref: "note:x"}
	b, _ := json.Marshal(it)
	if want := `{"ref":"note:x","title":"","summary":"","confidence":0,"lifecycle":"","authority":""}`; string(b) != want {
		t.Fatalf("item: got %s, want %s", b, want)
	}
}

// TestCompile_Pure: Compile does not modify its inputs and gives the same
// answer twice.
func TestCompile_Pure(t *testing.T) {
	t.Parallel()
	nodes := mixedNodes()
	nodes[0].Summary = "api_key=abcdef"
	rels := in(rel("b", "contradicts", "note:use1", "note:use2", 0.9, 2), rel("a", "requires_payload", "note:use1", "note:insp1", 0.9, 1))
	nodes0, rels0 := slices.Clone(nodes), slices.Clone(rels)
	req := admission.Request{Query: "alpha", Kinds: []string{"note"}, MaxPerBucket: new(2), BudgetBytes: 900}
	a := compile(t, nodes, rels, req)
	b := compile(t, nodes, rels, req)
	if !reflect.DeepEqual(nodes, nodes0) || !reflect.DeepEqual(rels, rels0) {
		t.Fatalf("Compile modified its input")
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("two compiles of the same input differ")
	}
}

// TestDecidingRelations holds the store's pre-filter to Decide: every
// relation kind and confidence that DecidingRelations leaves out leaves
// the decision as if the relation were not there, and every kind it names
// decides at its threshold.
func TestDecidingRelations(t *testing.T) {
	kinds, minConf := admission.DecidingRelations()
	if minConf != min(admission.BlockThreshold, admission.PayloadThreshold) {
		t.Errorf("got min confidence %v, want %v", minConf, min(admission.BlockThreshold, admission.PayloadThreshold))
	}
	for _, k := range kinds {
		if !slices.Contains(kura.RelationKind, k) {
			t.Errorf("deciding kind %q is not a relation kind", k)
		}
	}
	n := newNode("belief", "t", "active", "trusted")
	alone := admission.Decide(&n, nil)
	tests := []struct {
		kind       string
		confidence float64
		decides    bool
	}{
		{"supersedes", admission.BlockThreshold, true},
		{"contradicts", admission.BlockThreshold, true},
		{"invalidates", admission.BlockThreshold, true},
		{"requires_payload", admission.PayloadThreshold, true},
		{"supersedes", admission.BlockThreshold - 0.01, false},
		{"requires_payload", minConf - 0.01, false},
		{"supports", 1, false},
		{"derived_from", 1, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%v", tt.kind, tt.confidence), func(t *testing.T) {
			rel := kura.Relation{ID: "r1", Kind: tt.kind, From: "belief:f", To: target, Confidence: tt.confidence, CreatedAt: t0}
			got := admission.Decide(&n, []kura.Relation{rel})
			if decided := got.RelationID == "r1"; decided != tt.decides {
				t.Errorf("got decided %v (%+v), want %v", decided, got, tt.decides)
			}
			if !tt.decides && got != alone {
				t.Errorf("got %+v, want %+v as without the relation", got, alone)
			}
			filtered := slices.Contains(kinds, tt.kind) && tt.confidence >= minConf
			if tt.decides && !filtered {
				t.Errorf("a deciding relation is filtered out by DecidingRelations")
			}
		})
	}
}
