// Package admission decides which memory may enter an agent's next turn.
// The five rules of API.md ("Admission rules") are pure functions of a node
// and the relations pointing at it; Compile applies them to a scope, orders
// and bounds the buckets, redacts, and explains every decision in a trace.
// Nothing here reads a clock or a database: the store hands in the nodes
// and relations as of the instant asked for.
package admission

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/recall"
	"github.com/kura-memory/kura/kurahash"
)

// Buckets, in the order budgets spend bytes on them.
const (
	UseNow           = "use_now"
	InspectBeforeUse = "inspect_before_use"
	Rehydrate        = "rehydrate"
	DoNotUse         = "do_not_use"
)

// BucketOrder is the order budget_bytes keeps items in.
var BucketOrder = []string{UseNow, InspectBeforeUse, Rehydrate, DoNotUse}

// Reasons, one per decision.
const (
	ReasonBlockedByRelation = "blocked_by_relation"
	ReasonRequiresPayload   = "relation_requires_payload"
	ReasonPayloadRequired   = "payload_required"
	ReasonLifecycleBlocks   = "lifecycle_blocks_direct_use"
	ReasonAuthoritative     = "active_authoritative_memory"
	ReasonInsufficient      = "insufficient_authority"
)

// Thresholds of rules 1 and 2: a relation at or above them decides.
const (
	BlockThreshold   = 0.65
	PayloadThreshold = 0.55
)

// The relation kinds of rules 1 and 2: a blocking relation keeps its
// target out of use, a payload relation sends it to rehydrate. No other
// kind (supports, derived_from) ever changes a bucket.
var (
	BlockingKinds = []string{"supersedes", "contradicts", "invalidates"}
	PayloadKinds  = []string{"requires_payload"}
)

// DecidingRelations names the only relations Decide can act on: their
// kinds, and the lowest confidence at which one of them decides. A store
// reads just these, so a scope's many supports never cost a compile.
func DecidingRelations() (kinds []string, minConfidence float64) {
	return slices.Concat(BlockingKinds, PayloadKinds), min(BlockThreshold, PayloadThreshold)
}

// Decision is where one node goes and why.
type Decision struct {
	Bucket     string
	Reason     string
	RelationID string // the relation that decided, for rules 1 and 2
	Detail     string
}

// firstRelation returns the earliest (created_at, then id) incoming
// relation of one of kinds at or above min, or nil.
func firstRelation(in []kura.Relation, min float64, kinds ...string) *kura.Relation {
	var best *kura.Relation
	for i := range in {
		r := &in[i]
		// Written as !(>=) so a NaN confidence never blocks.
		if !(r.Confidence >= min) || !slices.Contains(kinds, r.Kind) {
			continue
		}
		if best == nil || r.CreatedAt < best.CreatedAt || (r.CreatedAt == best.CreatedAt && r.ID < best.ID) {
			best = r
		}
	}
	return best
}

func conf(c float64) string { return strconv.FormatFloat(c, 'f', -1, 64) }

// Decide applies the rules in order; the first that matches decides.
// incoming holds the relations whose `to` is n. Nothing else about the
// node (confidence, kind) or the relations (supports, derived_from, the
// state of their source) can change the answer.
func Decide(n *kura.Node, incoming []kura.Relation) Decision {
	if r := firstRelation(incoming, BlockThreshold, BlockingKinds...); r != nil {
		return Decision{DoNotUse, ReasonBlockedByRelation, r.ID,
			r.Kind + " from " + r.From + " at confidence " + conf(r.Confidence) + " (≥ " + conf(BlockThreshold) + ")"}
	}
	payloadRel := firstRelation(incoming, PayloadThreshold, PayloadKinds...)
	if payloadRel != nil {
		return Decision{Rehydrate, ReasonRequiresPayload, payloadRel.ID,
			"requires_payload from " + payloadRel.From + " at confidence " + conf(payloadRel.Confidence) + " (≥ " + conf(PayloadThreshold) + ")"}
	}
	switch n.Lifecycle {
	case "archived", "rehydrate_required":
		return Decision{Rehydrate, ReasonPayloadRequired, "", "lifecycle " + n.Lifecycle}
	case "suppressed", "retired", "blocked":
		return Decision{DoNotUse, ReasonLifecycleBlocks, "", "lifecycle " + n.Lifecycle}
	}
	if n.Authority == "rejected" {
		return Decision{DoNotUse, ReasonLifecycleBlocks, "", "authority rejected"}
	}
	if n.Lifecycle == "active" && (n.Authority == "trusted" || n.Authority == "verified") {
		return Decision{UseNow, ReasonAuthoritative, "", "active and " + n.Authority}
	}
	return Decision{InspectBeforeUse, ReasonInsufficient, "", "lifecycle " + n.Lifecycle + ", authority " + n.Authority}
}

// Request is what a caller asks of a compile.
type Request struct {
	Query       string   `json:"query"`
	TargetFiles []string `json:"target_files"`
	Kinds       []string `json:"kinds"`
	// MaxPerBucket keeps the first N items of each bucket: nil is no
	// limit, 0 keeps none (the trace still decides every node, and
	// omitted counts them).
	MaxPerBucket *int   `json:"max_per_bucket,omitempty"`
	BudgetBytes  int    `json:"budget_bytes"`
	AsOf         string `json:"as_of"`
	Redact       *bool  `json:"redact"`
}

// Item is a node as a bucket shows it.
type Item struct {
	Ref        string  `json:"ref"`
	Title      string  `json:"title"`
	Summary    string  `json:"summary"`
	Confidence float64 `json:"confidence"`
	Lifecycle  string  `json:"lifecycle"`
	Authority  string  `json:"authority"`
	PayloadRef *string `json:"payload_ref,omitempty"`
}

// TraceEntry explains one node's decision.
type TraceEntry struct {
	Ref        string              `json:"ref"`
	Bucket     string              `json:"bucket"`
	Reason     string              `json:"reason"`
	RelationID string              `json:"relation_id,omitempty"`
	Detail     string              `json:"detail"`
	Score      *float64            `json:"score,omitempty"`
	Why        []kura.SearchReason `json:"why,omitempty"`
}

// Buckets holds the admitted items.
type Buckets struct {
	UseNow           []Item `json:"use_now"`
	InspectBeforeUse []Item `json:"inspect_before_use"`
	DoNotUse         []Item `json:"do_not_use"`
	Rehydrate        []Item `json:"rehydrate"`
}

func (b *Buckets) get(name string) *[]Item {
	switch name {
	case UseNow:
		return &b.UseNow
	case InspectBeforeUse:
		return &b.InspectBeforeUse
	case Rehydrate:
		return &b.Rehydrate
	default:
		return &b.DoNotUse
	}
}

// Result is a compile's answer without the store's parts (bundle id,
// scope, as_of, digest), which the caller adds.
type Result struct {
	Buckets    Buckets        `json:"buckets"`
	Trace      []TraceEntry   `json:"trace"`
	Omitted    map[string]int `json:"omitted"`
	Bytes      int            `json:"bytes"`
	Redactions int            `json:"redactions"`
	Warnings   []string       `json:"warnings"`
}

type ranked struct {
	n     *kura.Node
	d     *Decision
	score float64
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

// Scope is a scope's memory made ready for compiles: its nodes in the
// order without a query (updated_at descending, then id, then kind) and
// each node's decision, which depends on nothing a request asks. Every
// compile of an unchanged scope can share one (the store keeps it), so a
// compile only ranks, fills buckets and explains. A Scope is read-only
// once prepared.
type Scope struct {
	nodes     []kura.Node
	decisions []Decision
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
	sc := &Scope{nodes: nodes, decisions: make([]Decision, len(nodes))}
	for i := range nodes {
		sc.decisions[i] = Decide(&nodes[i], byTarget[nodes[i].Ref])
	}
	return sc
}

// Len is the number of nodes in the scope.
func (sc *Scope) Len() int { return len(sc.nodes) }

// Compile decides every node and builds the buckets: Prepare, then
// Scope.Compile.
func Compile(nodes []kura.Node, relations []kura.Relation, req *Request, rank Ranking) *Result {
	return Prepare(slices.Clone(nodes), relations).Compile(req, rank)
}

// Compile orders the scope's nodes by rank (the ranking of req's query;
// nil without one) and builds the buckets, the trace and the budget's cut.
func (sc *Scope) Compile(req *Request, rank Ranking) *Result {
	list := make([]ranked, 0, len(sc.nodes))
	var scored []ranked // with a query: the nodes it matches
	for i := range sc.nodes {
		n := &sc.nodes[i]
		if len(req.Kinds) > 0 && !slices.Contains(req.Kinds, n.Kind) {
			continue
		}
		rk := ranked{n: n, d: &sc.decisions[i]}
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

	res := &Result{Trace: make([]TraceEntry, 0, len(list)), Omitted: map[string]int{}, Warnings: []string{}}
	// Decide every node (the trace lists them all), then fill the buckets
	// in budget order. Items are only built, redacted and sized while they
	// can still be kept: in a large scope with a budget, almost every node
	// is cut, and redacting or encoding it would be wasted work.
	cands := map[string][]*kura.Node{}
	for _, b := range BucketOrder {
		*res.Buckets.get(b) = []Item{}
		res.Omitted[b] = 0
	}
	for i := range list {
		rk := &list[i]
		d := rk.d
		te := TraceEntry{Ref: rk.n.Ref, Bucket: d.Bucket, Reason: d.Reason, RelationID: d.RelationID, Detail: d.Detail, Why: rk.why}
		if rank != nil {
			s := recall.RoundScore(rk.score)
			te.Score = &s
		}
		res.Trace = append(res.Trace, te)
		if req.MaxPerBucket != nil && len(cands[d.Bucket]) >= *req.MaxPerBucket {
			res.Omitted[d.Bucket]++
			continue
		}
		cands[d.Bucket] = append(cands[d.Bucket], rk.n)
	}
	redact := req.Redact == nil || *req.Redact
	budget, total, full := req.BudgetBytes, 0, false
	for _, b := range BucketOrder {
		items := res.Buckets.get(b)
		for _, n := range cands[b] {
			if full {
				res.Omitted[b]++
				continue
			}
			it := Item{Ref: n.Ref, Title: n.Title, Summary: n.Summary, Confidence: n.Confidence,
				Lifecycle: n.Lifecycle, Authority: n.Authority, PayloadRef: n.PayloadRef}
			count := 0
			if redact {
				var c1, c2 int
				it.Title, c1 = Redact(it.Title)
				it.Summary, c2 = Redact(it.Summary)
				count = c1 + c2
			}
			size := ItemSize(&it)
			// The first item that does not fit ends the filling, so what is
			// kept is always a prefix of the ranked order.
			if budget > 0 && total+size > budget {
				full = true
				res.Omitted[b]++
				continue
			}
			total += size
			// Only what the bundle holds counts: a secret in an item the
			// budget cut was never handed out.
			res.Redactions += count
			*items = append(*items, it)
		}
	}
	res.Bytes = total
	if full {
		res.Warnings = append(res.Warnings, "budget: "+strconv.Itoa(budget)+" bytes reached; see omitted")
	}
	return res
}

// ItemSize is what an item costs against budget_bytes: its JSON encoding.
func ItemSize(it *Item) int {
	b, _ := json.Marshal(it)
	return len(b)
}

// Bundle is the answer of preview and compile.
type Bundle struct {
	BundleID string `json:"bundle_id,omitempty"`
	Digest   string `json:"digest"`
	Scope    string `json:"scope"`
	AsOf     string `json:"as_of"`
	Result
}

// Digest is "sha256:<hex>" of the RFC 8785 form of the buckets: what a
// client recomputes to check a bundle it was handed.
func Digest(b *Buckets) (string, error) {
	raw, err := json.Marshal(b)
	if err != nil {
		return "", err
	}
	canon, err := kurahash.Canonical(raw)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canon)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}
