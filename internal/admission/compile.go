package admission

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/kura-memory/kura/internal/kura"
)

// Result is a compile's answer without the store's parts (bundle id,
// scope, as_of, digest), which the caller adds.
//
// A Result from Scope.Compile does not hold its trace: the trace is
// written from the compile's order as the bundle is encoded (Encode,
// WriteBundle), so that a compile of a large scope never holds a second
// copy of it. Trace is what a decoded bundle, or Compile, holds.
type Result struct {
	Buckets Buckets        `json:"buckets"`
	Trace   []TraceEntry   `json:"trace"`
	Omitted map[string]int `json:"omitted"`
	// TraceOmitted counts the nodes decided but not listed in the trace
	// (past max_trace or MaxTraceBytes): the trace lists a prefix of the
	// order.
	TraceOmitted int      `json:"trace_omitted"`
	Bytes        int      `json:"bytes"`
	Redactions   int      `json:"redactions"`
	Warnings     []string `json:"warnings"`

	plan *tracePlan
}

type ranked struct {
	n     *kura.Node
	d     *Decision
	base  int // the size of its trace entry without score and why
	score float64
	shown float64 // the score as the trace shows it, once planned
	why   []kura.SearchReason
}

// Match is how a query ranks one node: its exact score (higher first;
// the trace shows it as recall.RoundScore does) and the reasons for it
// (the fields and words that matched).
type Match struct {
	Score float64
	Why   []kura.SearchReason
}

// Ranking is a query's ranking of a scope's nodes, by ref: the store's
// search engine computes it (admission ranks nothing itself). A node it
// does not name does not match. nil: the request has no query words, and
// nothing is scored.
type Ranking map[string]Match

// Texts returns the summaries of nodes, in their order. A store that
// keeps a scope without its summaries (so that neither its copy nor a
// compile holds every summary of a scope: 16 KiB a node at most) reads
// them for the few nodes a bundle may keep; Compile asks a batch at a
// time, in the order it fills buckets, and stops once the budget is
// spent. nil: the nodes hold their summaries.
type Texts func(nodes []*kura.Node) ([]string, error)

// Scope is a scope's memory made ready for compiles: its nodes in the
// order without a query (updated_at descending, then id, then kind) and
// each node's decision, which depends on nothing a request asks. Every
// compile of an unchanged scope can share one (the store keeps it), so a
// compile only ranks, fills buckets and explains. A Scope is read-only
// once prepared.
type Scope struct {
	nodes     []kura.Node
	decisions []Decision
	base      []int32 // each node's trace entry size without score and why
}

// Prepare sorts nodes (in place) into the order without a query and
// decides each against its incoming relations, found through an index by
// target: linear in nodes + relations, plus the sort.
func Prepare(nodes []kura.Node, relations []kura.Relation) *Scope {
	byTarget := make(map[string][]kura.Relation, len(relations))
	for _, r := range relations {
		byTarget[r.To] = append(byTarget[r.To], r)
	}
	slices.SortFunc(nodes, func(a, b kura.Node) int {
		if c := cmp.Compare(b.UpdatedAt, a.UpdatedAt); c != 0 {
			return c
		}
		if c := cmp.Compare(a.ID, b.ID); c != 0 {
			return c
		}
		return cmp.Compare(a.Kind, b.Kind)
	})
	sc := &Scope{nodes: nodes, decisions: make([]Decision, len(nodes)), base: make([]int32, len(nodes))}
	for i := range nodes {
		sc.decisions[i] = Decide(&nodes[i], byTarget[nodes[i].Ref])
		sc.base[i] = int32(entryBaseSize(nodes[i].Ref, &sc.decisions[i]))
	}
	return sc
}

// Len is the number of nodes in the scope.
func (sc *Scope) Len() int { return len(sc.nodes) }

// Compile decides every node and builds the buckets and the whole trace
// (within its bounds): Prepare, then Scope.Compile, over nodes that hold
// their summaries.
func Compile(nodes []kura.Node, relations []kura.Relation, req *Request, rank Ranking) *Result {
	return compileWhole(nodes, relations, req, rank, MaxTraceBytes)
}

func compileWhole(nodes []kura.Node, relations []kura.Relation, req *Request, rank Ranking, traceBytes int) *Result {
	res, _ := Prepare(slices.Clone(nodes), relations).compile(req, rank, nil, traceBytes) // without Texts nothing fails
	res.Trace = res.plan.entries()
	res.plan = nil
	return res
}

// Compile orders the scope's nodes by rank (the ranking of req's query;
// nil without one) and builds the buckets within req's limits, and the
// plan of the trace: which prefix of the order it lists. texts reads
// summaries the nodes do not hold (nil: they hold them); its error is
// Compile's.
func (sc *Scope) Compile(req *Request, rank Ranking, texts Texts) (*Result, error) {
	return sc.compile(req, rank, texts, MaxTraceBytes)
}

func (sc *Scope) compile(req *Request, rank Ranking, texts Texts, traceBytes int) (*Result, error) {
	lim := req.Limits()
	list := make([]ranked, 0, len(sc.nodes))
	var scored []ranked // with a query: the nodes it matches
	for i := range sc.nodes {
		n := &sc.nodes[i]
		if len(req.Kinds) > 0 && !slices.Contains(req.Kinds, n.Kind) {
			continue
		}
		rk := ranked{n: n, d: &sc.decisions[i], base: int(sc.base[i])}
		if m, ok := rank[n.Ref]; ok {
			// Clipped: appending a target file below copies, and never
			// writes into the ranking's own slice.
			rk.score, rk.why = m.Score, slices.Clip(m.Why)
		}
		// Target files explain relevance; they never reorder (the order
		// rules are binding) nor change a bucket.
		for _, f := range n.TargetFiles {
			if slices.Contains(req.TargetFiles, f) {
				rk.why = append(rk.why, kura.SearchReason{Code: "target_file_match", Detail: f})
			}
		}
		if _, ok := rank[n.Ref]; ok {
			scored = append(scored, rk)
		} else {
			list = append(list, rk)
		}
	}
	// Score descending, ties in the order without a query: the nodes
	// come in that order, so a stable sort of the matches, followed by
	// the rest as they are, is the whole order (scores are never
	// negative). A node the ranking names is a match even if its score
	// shows as 0 (a word in most nodes weighs next to nothing).
	slices.SortStableFunc(scored, func(a, b ranked) int { return cmp.Compare(b.score, a.score) })
	list = append(scored, list...)

	res := &Result{Omitted: map[string]int{}, Warnings: []string{}}
	res.plan = planTrace(list, rank != nil, lim.MaxTrace, traceBytes)
	res.TraceOmitted = len(list) - res.plan.n
	// Decide every node, then fill the buckets in budget order. Items
	// are only built, redacted and sized while they can still be kept: in
	// a large scope almost every node is cut, and reading, redacting or
	// encoding it would be wasted work.
	cands := map[string][]*kura.Node{}
	for _, b := range BucketOrder {
		*res.Buckets.get(b) = []Item{}
		res.Omitted[b] = 0
	}
	for i := range list {
		d := list[i].d
		if len(cands[d.Bucket]) >= lim.MaxPerBucket {
			res.Omitted[d.Bucket]++
			continue
		}
		cands[d.Bucket] = append(cands[d.Bucket], list[i].n)
	}
	if err := res.fill(req, lim.BudgetBytes, cands, texts); err != nil {
		return nil, err
	}
	if res.TraceOmitted > 0 {
		res.Warnings = append(res.Warnings, "trace: "+strconv.Itoa(res.TraceOmitted)+" nodes not listed (max_trace "+
			strconv.Itoa(lim.MaxTrace)+", at most "+strconv.Itoa(MaxTraceBytes)+" bytes); see trace_omitted")
	}
	return res, nil
}

// fill keeps candidates, in bucket order, while their items fit in
// budget; the first that does not fit ends the filling, so what is kept
// is always a prefix of the ranked order.
func (res *Result) fill(req *Request, budget int, cands map[string][]*kura.Node, texts Texts) error {
	var order []*kura.Node
	var bucketOf []string
	for _, b := range BucketOrder {
		for _, n := range cands[b] {
			order = append(order, n)
			bucketOf = append(bucketOf, b)
		}
	}
	redact := req.Redact == nil || *req.Redact
	total, full := 0, false
	// Summaries are read a batch at a time: 16 first (a small budget is
	// spent in a few items), then as many as the rest of the budget holds
	// at the items' mean size so far (up to 1024), so that what is read
	// past the last item kept is about one item, and no batch holds much
	// more than the budget.
	batch, kept := 16, 0
	var sums []string
	for start := 0; start < len(order) && !full; {
		end := min(start+batch, len(order))
		chunk := order[start:end]
		if texts != nil {
			var err error
			if sums, err = texts(chunk); err != nil {
				return err
			}
		}
		for i, n := range chunk {
			b := bucketOf[start+i]
			summary := n.Summary
			if texts != nil {
				summary = sums[i]
			}
			it := Item{Ref: n.Ref, Title: n.Title, Summary: summary, Confidence: n.Confidence,
				Lifecycle: n.Lifecycle, Authority: n.Authority, PayloadRef: n.PayloadRef}
			count := 0
			if redact {
				var c1, c2 int
				it.Title, c1 = Redact(it.Title)
				it.Summary, c2 = Redact(it.Summary)
				count = c1 + c2
			}
			size := ItemSize(&it)
			if total+size > budget {
				full = true
				// Everything from here on is cut: counted below.
				for _, b := range bucketOf[start+i:] {
					res.Omitted[b]++
				}
				break
			}
			total += size
			kept++
			// Only what the bundle holds counts: a secret in an item the
			// budget cut was never handed out.
			res.Redactions += count
			items := res.Buckets.get(b)
			*items = append(*items, it)
		}
		start = end
		if kept > 0 {
			batch = min(max((budget-total)/(total/kept)+1, 16), 1024)
		}
	}
	res.Bytes = total
	if full {
		res.Warnings = append(res.Warnings, "budget: "+strconv.Itoa(budget)+" bytes reached; see omitted")
	}
	return nil
}

// ItemSize is what an item costs against budget_bytes: the length of its
// JSON encoding, counted without writing it (an item may hold 16 KiB).
func ItemSize(it *Item) int {
	var num [32]byte
	n := len(`{"ref":,"title":,"summary":,"confidence":,"lifecycle":,"authority":}`) + stringSize(it.Ref) + stringSize(it.Title) +
		stringSize(it.Summary) + len(appendFloat(num[:0], it.Confidence)) + stringSize(it.Lifecycle) + stringSize(it.Authority)
	if it.PayloadRef != nil {
		n += len(`,"payload_ref":`) + stringSize(*it.PayloadRef)
	}
	return n
}
