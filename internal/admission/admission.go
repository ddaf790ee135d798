// Package admission decides which memory may enter an agent's next turn.
// The five rules of API.md ("Admission rules") are pure functions of a node
// and the relations pointing at it; Compile applies them to a scope, orders
// and bounds the buckets, redacts, and explains every decision in a trace.
// Nothing here reads a clock or a database: the store hands in the nodes
// and relations as of the instant asked for.
package admission

import (
	"slices"
	"strconv"

	"github.com/kura-memory/kura/internal/kura"
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

// Request is what a caller asks of a compile. Its bounds (Limits) have
// defaults and maximums (bounds.go).
type Request struct {
	Query       string   `json:"query"`
	TargetFiles []string `json:"target_files"`
	Kinds       []string `json:"kinds"`
	// MaxPerBucket keeps the first N items of each bucket: nil is the
	// default (DefaultMaxPerBucket), 0 keeps none (the trace still
	// decides every node, and omitted counts them).
	MaxPerBucket *int `json:"max_per_bucket,omitempty"`
	// BudgetBytes keeps items while their JSON fits: 0 is the default
	// (DefaultBudgetBytes).
	BudgetBytes int `json:"budget_bytes"`
	// MaxTrace lists the first N nodes of the order in the trace: nil is
	// the default (DefaultMaxTrace), 0 lists none (trace_omitted counts
	// them).
	MaxTrace *int   `json:"max_trace,omitempty"`
	AsOf     string `json:"as_of"`
	Redact   *bool  `json:"redact"`
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

// Bundle is the answer of preview and compile.
type Bundle struct {
	BundleID string `json:"bundle_id,omitempty"`
	Digest   string `json:"digest"`
	Scope    string `json:"scope"`
	AsOf     string `json:"as_of"`
	Result
}
