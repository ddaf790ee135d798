package kura

import (
	"encoding/json"
	"slices"
)

// Defaults of a new node: what a node is until its writer says otherwise.
const (
	DefaultLifecycle  = "candidate"
	DefaultAuthority  = "unknown"
	DefaultConfidence = 0.5
	DefaultSourceType = "direct_experience"
)

// MergeNode is the rule for what a write makes of a node: a new node (old
// nil) takes in over the defaults and needs a summary; a new version takes
// in over old, field by field, where a nil field keeps the old value and
// an empty payload_ref or owner clears it; a non-admin writer's node
// without an owner becomes the writer's. The result has the next
// version, updated at now, written by in.Writer. lineage reports whether
// derived_from changed (and so the lineage edges must be rewritten);
// derived_from is deduplicated, and a node may not derive from itself.
// field prefixes the field names in errors (for batches). Whether the
// writer may rewrite old at all is CheckNodeRewrite's question.
func MergeNode(old *Node, in *NodeInput, scope, now, field string) (n Node, lineage bool, err error) {
	if old != nil {
		n = *old
	} else {
		if in.Summary == nil {
			return Node{}, false, Invalid(field+"summary", "summary is required for a new node")
		}
		n = Node{Ref: in.Kind + ":" + in.ID, Scope: scope, Kind: in.Kind, ID: in.ID,
			Lifecycle: DefaultLifecycle, Authority: DefaultAuthority, Confidence: DefaultConfidence, SourceType: DefaultSourceType,
			TargetFiles: []string{}, DerivedFrom: []string{}, Metadata: json.RawMessage("{}"), CreatedAt: now}
	}
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&n.Title, in.Title)
	set(&n.Summary, in.Summary)
	set(&n.Lifecycle, in.Lifecycle)
	set(&n.Authority, in.Authority)
	set(&n.SourceType, in.SourceType)
	if in.Confidence != nil {
		n.Confidence = *in.Confidence
	}
	if in.TargetFiles != nil {
		n.TargetFiles = in.TargetFiles
	}
	if in.PayloadRef != nil {
		n.PayloadRef = in.PayloadRef
		if *in.PayloadRef == "" {
			n.PayloadRef = nil
		}
	}
	if in.Owner != nil {
		n.Owner = in.Owner
		if *in.Owner == "" {
			n.Owner = nil
		}
	}
	if n.Owner == nil && !in.Writer.Admin && in.Writer.Identity != "" {
		// A non-admin's node is its own: CheckNodeRewrite lets only admins
		// write a node without an owner, so one left without would be
		// out of its writer's reach from the next version on.
		by := in.Writer.Identity
		n.Owner = &by
	}
	if in.Metadata != nil {
		n.Metadata = in.Metadata
	}
	lineage = old == nil && len(in.DerivedFrom) > 0
	if in.DerivedFrom != nil && (old == nil || !slices.Equal(in.DerivedFrom, old.DerivedFrom)) {
		n.DerivedFrom = Dedupe(in.DerivedFrom)
		lineage = true
	}
	n.Version++
	n.UpdatedAt = now
	n.WrittenBy = in.Writer.Identity
	if lineage && slices.Contains(n.DerivedFrom, n.Ref) {
		return Node{}, false, Invalid(field+"derived_from", "%s cannot be derived from itself", n.Ref)
	}
	return n, lineage, nil
}

// ConfidenceReason is what the confidence history says of a change: the
// writer's reason, else whether the node was created or updated.
func ConfidenceReason(reason string, created bool) string {
	switch {
	case reason != "":
		return reason
	case created:
		return "created"
	default:
		return "updated"
	}
}

// Dedupe returns s without repeats, first occurrences in order.
func Dedupe(s []string) []string {
	out := make([]string, 0, len(s))
	for _, v := range s {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}
