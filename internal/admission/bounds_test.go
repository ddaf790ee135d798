package admission_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/admission"
	"github.com/kura-memory/kura/internal/kura"
)

func intp(n int) *int { return &n }

func TestRequest_Check(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		req    admission.Request
		prefix string
		field  string // "" = accepted
	}{
		{"Empty", admission.Request{}, "", ""},
		{"Maxima", admission.Request{BudgetBytes: admission.MaxBudgetBytes, MaxPerBucket: intp(admission.MaxPerBucketCap), MaxTrace: intp(admission.MaxTraceCap)}, "", ""},
		{"Zeros", admission.Request{MaxPerBucket: intp(0), MaxTrace: intp(0)}, "", ""},
		{"BudgetNegative", admission.Request{BudgetBytes: -1}, "", "budget_bytes"},
		{"BudgetOver", admission.Request{BudgetBytes: admission.MaxBudgetBytes + 1}, "", "budget_bytes"},
		{"PerBucketNegative", admission.Request{MaxPerBucket: intp(-1)}, "", "max_per_bucket"},
		{"PerBucketOver", admission.Request{MaxPerBucket: intp(admission.MaxPerBucketCap + 1)}, "", "max_per_bucket"},
		{"TraceNegative", admission.Request{MaxTrace: intp(-1)}, "", "max_trace"},
		{"TraceOver", admission.Request{MaxTrace: intp(admission.MaxTraceCap + 1)}, "", "max_trace"},
		{"TurnMemoryField", admission.Request{MaxTrace: intp(admission.MaxTraceCap + 1)}, "memory.", "memory.max_trace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.req.Check(tc.prefix)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("got %v, want accepted", err)
				}
				return
			}
			var ke *kura.Error
			if !errors.As(err, &ke) || ke.Code != kura.EInvalid || ke.Details["field"] != tc.field {
				t.Fatalf("got %v, want invalid_argument naming %s", err, tc.field)
			}
		})
	}
}

func TestRequest_Limits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		req  admission.Request
		want admission.Limits
	}{
		{admission.Request{}, admission.Limits{BudgetBytes: admission.DefaultBudgetBytes, MaxPerBucket: admission.DefaultMaxPerBucket, MaxTrace: admission.DefaultMaxTrace}},
		{admission.Request{BudgetBytes: 7, MaxPerBucket: intp(0), MaxTrace: intp(3)}, admission.Limits{BudgetBytes: 7, MaxPerBucket: 0, MaxTrace: 3}},
	} {
		if got := tc.req.Limits(); got != tc.want {
			t.Errorf("%+v: got %+v, want %+v", tc.req, got, tc.want)
		}
	}
}

// bigNodes are n use_now nodes with summaries of size bytes.
func bigNodes(n, size int) []kura.Node {
	out := make([]kura.Node, n)
	for i := range out {
		out[i] = newNode("fact", fmt.Sprintf("n%05d", i), "active", "trusted")
		out[i].UpdatedAt = fmt.Sprintf("2026-11-21T09:%02d:%02d.000000000Z", i/60%60, i%60)
		out[i].Summary = strings.Repeat("x", size)
	}
	return out
}

// TestCompile_DefaultBounds: a request that names no bound is bounded
// all the same: at most DefaultMaxPerBucket items a bucket, and at most
// DefaultBudgetBytes of items, each cut counted in omitted.
func TestCompile_DefaultBounds(t *testing.T) {
	t.Parallel()
	t.Run("PerBucket", func(t *testing.T) {
		res := compile(t, bigNodes(admission.DefaultMaxPerBucket+7, 10), nil, admission.Request{})
		if got := len(res.Buckets.UseNow); got != admission.DefaultMaxPerBucket || res.Omitted[admission.UseNow] != 7 {
			t.Fatalf("got %d kept, %d omitted; want %d and 7", got, res.Omitted[admission.UseNow], admission.DefaultMaxPerBucket)
		}
		if len(res.Trace) != admission.DefaultMaxPerBucket+7 || res.TraceOmitted != 0 {
			t.Fatalf("trace: got %d entries, %d omitted; want every node", len(res.Trace), res.TraceOmitted)
		}
	})
	t.Run("Budget", func(t *testing.T) {
		nodes := bigNodes(100, kura.MaxSummary)
		res := compile(t, nodes, nil, admission.Request{})
		kept := len(res.Buckets.UseNow)
		if res.Bytes > admission.DefaultBudgetBytes || kept == 0 || kept+res.Omitted[admission.UseNow] != len(nodes) {
			t.Fatalf("got %d bytes in %d items, %d omitted; want at most %d bytes", res.Bytes, kept, res.Omitted[admission.UseNow], admission.DefaultBudgetBytes)
		}
		next := admission.Item{Ref: nodes[kept].Ref, Title: nodes[kept].Title, Summary: nodes[kept].Summary, Confidence: 0.5, Lifecycle: "active", Authority: "trusted"}
		if res.Bytes+admission.ItemSize(&next) <= admission.DefaultBudgetBytes {
			t.Fatalf("stopped at %d bytes although the next item (%d bytes) fits", res.Bytes, admission.ItemSize(&next))
		}
		if want := fmt.Sprintf("budget: %d bytes reached; see omitted", admission.DefaultBudgetBytes); !slices.Contains(res.Warnings, want) {
			t.Fatalf("warnings %q, want %q", res.Warnings, want)
		}
	})
}

// TestCompile_MaxTrace: the trace lists the first max_trace nodes of the
// order, counts the rest in trace_omitted and says so in a warning; the
// buckets do not change.
func TestCompile_MaxTrace(t *testing.T) {
	t.Parallel()
	nodes := mixedNodes()
	all := compile(t, nodes, nil, admission.Request{Query: "alpha use2"})
	for _, max := range []int{0, 1, 4, len(nodes), len(nodes) + 5} {
		t.Run(fmt.Sprint(max), func(t *testing.T) {
			res := compile(t, nodes, nil, admission.Request{Query: "alpha use2", MaxTrace: intp(max)})
			n := min(max, len(nodes))
			if got, want := traceRefs(res), traceRefs(all)[:n]; !slices.Equal(got, want) {
				t.Fatalf("trace %v, want the first %d of %v", got, n, traceRefs(all))
			}
			if res.TraceOmitted != len(nodes)-n {
				t.Fatalf("trace_omitted %d, want %d", res.TraceOmitted, len(nodes)-n)
			}
			warned := slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.HasPrefix(w, "trace: ") })
			if warned != (n < len(nodes)) {
				t.Fatalf("warnings %q with %d nodes left out", res.Warnings, len(nodes)-n)
			}
			if !equalJSON(t, res.Buckets, all.Buckets) {
				t.Fatalf("max_trace changed the buckets")
			}
		})
	}
}

// TestCompile_TraceBytes: the trace holds the longest prefix of the order
// whose JSON fits the byte bound, whatever max_trace allows.
func TestCompile_TraceBytes(t *testing.T) {
	t.Parallel()
	nodes := mixedNodes()
	req := admission.Request{Query: "alpha beta", TargetFiles: []string{"a.go"}}
	whole := admission.Compile(nodes, nil, &req, rankFor(nodes, req.Query))
	full, _ := json.Marshal(whole.Trace)
	for _, limit := range []int{2, 100, 700, len(full) - 1, len(full)} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			res := admission.CompileTraceWithin(nodes, nil, &req, rankFor(nodes, req.Query), limit)
			got, _ := json.Marshal(res.Trace)
			n := len(res.Trace)
			if len(got) > limit || res.TraceOmitted != len(nodes)-n {
				t.Fatalf("trace of %d bytes, %d entries, %d omitted; want at most %d bytes", len(got), n, res.TraceOmitted, limit)
			}
			if n < len(nodes) {
				if longer, _ := json.Marshal(whole.Trace[:n+1]); len(longer) <= limit {
					t.Fatalf("stopped at %d entries although %d fit in %d bytes", n, n+1, limit)
				}
			}
			if !slices.Equal(traceRefs(res), traceRefs(whole)[:n]) {
				t.Fatalf("trace %v is not a prefix of %v", traceRefs(res), traceRefs(whole))
			}
		})
	}
}

func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	return bytes.Equal(x, y)
}

// randScope makes nodes with every decision and strings of every
// encoding path, and relations among them.
func randScope(r *rand.Rand) ([]kura.Node, []kura.Relation) {
	nodes := make([]kura.Node, r.IntN(40))
	for i := range nodes {
		n := newNode([]string{"fact", "note", "belief"}[r.IntN(3)], fmt.Sprintf("n%d", i),
			kura.Lifecycles[r.IntN(len(kura.Lifecycles))], kura.Authorities[r.IntN(len(kura.Authorities))])
		n.UpdatedAt = at(r.IntN(60))
		n.Title = "alpha " + randString(r)
		n.Summary = strings.Repeat("beta "+randString(r), r.IntN(30))
		if r.IntN(3) == 0 {
			n.TargetFiles = []string{"a.go", randString(r)}
		}
		if r.IntN(4) == 0 {
			p := randString(r)
			n.PayloadRef = &p
		}
		nodes[i] = n
	}
	var rels []kura.Relation
	for i := range r.IntN(len(nodes) + 1) {
		if len(nodes) < 2 {
			break
		}
		kinds := []string{"supersedes", "contradicts", "requires_payload", "supports"}
		rels = append(rels, rel(fmt.Sprintf("r%d", i), kinds[r.IntN(len(kinds))], nodes[r.IntN(len(nodes))].Ref, nodes[r.IntN(len(nodes))].Ref, r.Float64(), r.IntN(60)))
	}
	return nodes, rels
}

func randRequest(r *rand.Rand) admission.Request {
	req := admission.Request{BudgetBytes: []int{0, 0, 1, 300, 2000}[r.IntN(5)]}
	if r.IntN(2) == 0 {
		req.Query = []string{"alpha", "beta", "alpha beta", "nothing"}[r.IntN(4)]
	}
	if r.IntN(3) == 0 {
		req.TargetFiles = []string{"a.go"}
	}
	if r.IntN(3) == 0 {
		req.MaxPerBucket = intp(r.IntN(4))
	}
	if r.IntN(3) == 0 {
		req.MaxTrace = intp(r.IntN(12))
	}
	if r.IntN(4) == 0 {
		req.Kinds = []string{"note"}
	}
	if r.IntN(4) == 0 {
		req.Redact = new(bool)
	}
	return req
}

// TestCompile_PlannedTraceEncodesAsWhole: a compile over a scope kept
// without summaries (Texts reads them), its trace written from its plan
// by Encode and by WriteBundle, is byte for byte the bundle Compile makes
// over the whole nodes, for random scopes, requests and trace bounds.
func TestCompile_PlannedTraceEncodesAsWhole(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 8))
	for i := range 1500 {
		nodes, rels := randScope(r)
		req := randRequest(r)
		limit := []int{admission.MaxTraceBytes, 2, 500, 3000}[r.IntN(4)]
		rank := rankFor(nodes, req.Query)
		whole := admission.CompileTraceWithin(nodes, rels, &req, rank, limit)

		texts := map[string]string{}
		bare := slices.Clone(nodes)
		for j := range bare {
			texts[bare[j].Ref], bare[j].Summary = bare[j].Summary, ""
		}
		asked := 0
		lazy, err := admission.CompileLazy(admission.Prepare(bare, rels), &req, rank, func(ns []*kura.Node) ([]string, error) {
			out := make([]string, len(ns))
			for k, n := range ns {
				out[k] = texts[n.Ref]
			}
			asked += len(ns)
			return out, nil
		}, limit)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(&plainBundle{Scope: "s", Result: *whole})
		got, err := admission.Encode(&admission.Bundle{Scope: "s", Result: *lazy})
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("case %d (%+v): Encode of the planned trace differs (%v)\n got %s\nwant %s", i, req, err, got, want)
		}
		var w bytes.Buffer
		if err := admission.WriteBundle(&w, &admission.Bundle{Scope: "s", Result: *lazy}); err != nil || !bytes.Equal(w.Bytes(), want) {
			t.Fatalf("case %d: WriteBundle differs (%v)\n got %s\nwant %s", i, err, w.Bytes(), want)
		}
		if m, _ := json.Marshal(&admission.Bundle{Scope: "s", Result: *lazy}); !bytes.Equal(m, want) {
			t.Fatalf("case %d: json.Marshal of the bundle differs\n got %s\nwant %s", i, m, want)
		}
		kept := 0
		for _, b := range admission.BucketOrder {
			kept += len(bucket(lazy, b))
		}
		// Summaries are read a batch at a time (16, then what the rest of
		// the budget holds): at most the items kept, the one that did not
		// fit and the rest of its batch.
		if asked > 2*(kept+1)+16 {
			t.Fatalf("case %d: %d summaries read for %d items kept", i, asked, kept)
		}
	}
}

// TestCompile_TextsError: a failure to read summaries is the compile's.
func TestCompile_TextsError(t *testing.T) {
	t.Parallel()
	boom := errors.New("read failed")
	_, err := admission.Prepare(mixedNodes(), nil).Compile(&admission.Request{}, nil, func([]*kura.Node) ([]string, error) { return nil, boom })
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want %v", err, boom)
	}
}

// TestWriteBundle_Streams: WriteBundle hands a large answer to its writer
// in pieces of about 256 KiB, never the whole trace at once.
func TestWriteBundle_Streams(t *testing.T) {
	t.Parallel()
	nodes := bigNodes(20000, 10)
	res, err := admission.Prepare(nodes, nil).Compile(&admission.Request{MaxPerBucket: intp(1)}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var w pieces
	if err := admission.WriteBundle(&w, &admission.Bundle{Result: *res}); err != nil {
		t.Fatal(err)
	}
	if w.total < 2_000_000 || w.n < 7 || w.largest > 260<<10 {
		t.Fatalf("%d bytes written in %d pieces, the largest %d bytes; want over 2 MB in pieces of about 256 KiB", w.total, w.n, w.largest)
	}
}

type pieces struct{ total, largest, n int }

func (p *pieces) Write(b []byte) (int, error) {
	p.total += len(b)
	p.largest = max(p.largest, len(b))
	p.n++
	return len(b), nil
}

// FuzzRequestCheck: whatever a request body holds, Check either refuses
// it as invalid_argument naming one of the bounds, or accepts it and its
// Limits are within the maxima, with the defaults where it named none.
func FuzzRequestCheck(f *testing.F) {
	for _, s := range []string{`{}`, `{"budget_bytes":0}`, `{"budget_bytes":16777216}`, `{"budget_bytes":16777217}`,
		`{"max_per_bucket":null}`, `{"max_per_bucket":0}`, `{"max_per_bucket":100001}`, `{"max_trace":0}`,
		`{"max_trace":100000}`, `{"max_trace":-1}`, `{"max_trace":1e9}`, `{"budget_bytes":-5,"max_trace":3}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req admission.Request
		if json.Unmarshal(body, &req) != nil {
			return
		}
		err := req.Check("")
		if err != nil {
			var ke *kura.Error
			if !errors.As(err, &ke) || ke.Code != kura.EInvalid || !slices.Contains([]any{"budget_bytes", "max_per_bucket", "max_trace"}, ke.Details["field"]) {
				t.Fatalf("%s: got %v, want invalid_argument naming a bound", body, err)
			}
			return
		}
		l := req.Limits()
		if l.BudgetBytes < 1 || l.BudgetBytes > admission.MaxBudgetBytes || l.MaxPerBucket < 0 || l.MaxPerBucket > admission.MaxPerBucketCap ||
			l.MaxTrace < 0 || l.MaxTrace > admission.MaxTraceCap {
			t.Fatalf("%s: accepted with limits %+v out of range", body, l)
		}
		want := admission.Limits{BudgetBytes: req.BudgetBytes, MaxPerBucket: admission.DefaultMaxPerBucket, MaxTrace: admission.DefaultMaxTrace}
		if want.BudgetBytes == 0 {
			want.BudgetBytes = admission.DefaultBudgetBytes
		}
		if req.MaxPerBucket != nil {
			want.MaxPerBucket = *req.MaxPerBucket
		}
		if req.MaxTrace != nil {
			want.MaxTrace = *req.MaxTrace
		}
		if l != want {
			t.Fatalf("%s: limits %+v, want %+v", body, l, want)
		}
	})
}
