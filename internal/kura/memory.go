package kura

import (
	"bytes"
	"encoding/json"
	"math"
	"regexp"
	"slices"
	"strings"
)

// The memory graph's vocabularies (API.md, "Memory graph and provenance").
var (
	NodeKinds = []string{"episode", "note", "belief", "value", "goal", "drive", "relationship", "fact",
		"decision", "preference", "procedure", "execution", "claim", "feedback", "trace_pointer"}
	Lifecycles   = []string{"active", "candidate", "contested", "suppressed", "archived", "retired", "blocked", "rehydrate_required"}
	Authorities  = []string{"verified", "trusted", "advisory", "unknown", "rejected"}
	SourceTypes  = []string{"direct_experience", "promote", "inference", "told_by_agent", "consolidation", "revision", "unknown"}
	RelationKind = []string{"supports", "derived_from", "supersedes", "contradicts", "invalidates", "requires_payload"}
	Outcomes     = []string{"positive", "negative", "neutral"}
)

// Limits on what one node may carry; they keep a node a pointer-sized
// memory rather than a document store.
const (
	MaxTitle       = 512
	MaxSummary     = 16 << 10
	MaxTargetFiles = 64
	MaxDerivedFrom = 256
	MaxReasons     = 32
	MaxNodeMeta    = 16 << 10
)

var nodeIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// ValidNodeID reports whether s is a client-chosen node or relation id.
func ValidNodeID(s string) bool { return nodeIDRE.MatchString(s) }

// Ref names a node ("belief:abc") or a record ("record:<uuid>").
type Ref struct {
	Kind string
	ID   string
}

func (r Ref) String() string { return r.Kind + ":" + r.ID }

// IsRecord reports whether the ref names a record.
func (r Ref) IsRecord() bool { return r.Kind == "record" }

// ParseRef parses "kind:id". kinds is the node vocabulary; "record" is
// accepted when records is true (lineage may cite records, relations not).
func ParseRef(s string, kinds []string, records bool) (Ref, bool) {
	k, id, ok := strings.Cut(s, ":")
	if !ok {
		return Ref{}, false
	}
	if k == "record" {
		return Ref{k, id}, records && ValidID(id)
	}
	return Ref{k, id}, slices.Contains(kinds, k) && ValidNodeID(id)
}

// NodeInput is the body of a node write. Pointer and nil fields were
// omitted: on an update they keep the node's current value.
type NodeInput struct {
	Kind        string          `json:"kind"`
	ID          string          `json:"id"`
	Title       *string         `json:"title"`
	Summary     *string         `json:"summary"`
	Lifecycle   *string         `json:"lifecycle"`
	Authority   *string         `json:"authority"`
	Confidence  *float64        `json:"confidence"`
	TargetFiles []string        `json:"target_files"`
	PayloadRef  *string         `json:"payload_ref"`
	Owner       *string         `json:"owner"`
	SourceType  *string         `json:"source_type"`
	DerivedFrom []string        `json:"derived_from"`
	Metadata    json.RawMessage `json:"metadata"`
	// Reason is kept in the confidence history when confidence changes.
	Reason string `json:"reason"`
	// Writer is who writes: the API sets it from the caller's token, never
	// from the body. The store checks CheckNodeRewrite against it inside
	// the write transaction and keeps it as the version's written_by.
	Writer Writer `json:"-"`
}

// Writer is the caller of a memory write: its identity and whether it may
// write nodes owned by others (admins, and the tokenless local user).
type Writer struct {
	Identity string
	Admin    bool
}

// CheckNodeRewrite is the rule for writing a new version of an existing
// node (re-put, batch put, revise, transition): only its owner or an admin
// writes it, and a node without an owner only an admin. A new version
// keeps the node's owner and authority, so letting anyone else write it
// would put their words under the owner's name, or under an authority an
// admin gave, straight into use_now. A non-admin's own new nodes are its
// own (MergeNode), so what it writes it may write again.
func CheckNodeRewrite(ref string, owner *string, w Writer) error {
	if w.Admin || (owner != nil && *owner != "" && *owner == w.Identity) {
		return nil
	}
	if owner == nil || *owner == "" {
		return Errorf(EDenied, "%s has no owner: only an admin may write it", ref).WithDetail("ref", ref)
	}
	return Errorf(EDenied, "%s is owned by %s: only its owner or an admin may write it", ref, *owner).
		WithDetail("ref", ref).WithDetail("owner", *owner)
}

// Validate checks everything that does not need the store. field prefixes
// the field names in errors (for batches).
func (in *NodeInput) Validate(kinds []string, field string) error {
	if !slices.Contains(kinds, in.Kind) {
		return Invalid(field+"kind", "unknown node kind %q", in.Kind).WithDetail("allowed", kinds)
	}
	if in.ID != "" && !ValidNodeID(in.ID) {
		return Invalid(field+"id", "node id must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
	}
	if in.Title != nil && len(*in.Title) > MaxTitle {
		return Invalid(field+"title", "title is longer than %d bytes", MaxTitle)
	}
	if in.Summary != nil && len(*in.Summary) > MaxSummary {
		return Invalid(field+"summary", "summary is longer than %d bytes", MaxSummary)
	}
	if err := oneOf(field+"lifecycle", in.Lifecycle, Lifecycles); err != nil {
		return err
	}
	if err := oneOf(field+"authority", in.Authority, Authorities); err != nil {
		return err
	}
	if err := oneOf(field+"source_type", in.SourceType, SourceTypes); err != nil {
		return err
	}
	if in.Confidence != nil {
		if err := ValidConfidence(field+"confidence", *in.Confidence); err != nil {
			return err
		}
	}
	if len(in.TargetFiles) > MaxTargetFiles {
		return Invalid(field+"target_files", "at most %d target files", MaxTargetFiles)
	}
	for i, f := range in.TargetFiles {
		if f == "" || len(f) > 1024 {
			return Invalid(field+"target_files", "target_files[%d] must be 1 to 1024 bytes", i)
		}
	}
	if in.Owner != nil && *in.Owner != "" && !ValidAuthorID(*in.Owner) {
		return Invalid(field+"owner", "owner must be an identity such as agent:bmo")
	}
	if in.PayloadRef != nil && len(*in.PayloadRef) > 1024 {
		return Invalid(field+"payload_ref", "payload_ref is longer than 1024 bytes")
	}
	if len(in.DerivedFrom) > MaxDerivedFrom {
		return Invalid(field+"derived_from", "at most %d derived_from refs", MaxDerivedFrom)
	}
	for i, s := range in.DerivedFrom {
		if _, ok := ParseRef(s, kinds, true); !ok {
			return Invalid(field+"derived_from", "derived_from[%d] %q is not a node ref (kind:id) or record:<id>", i, s)
		}
	}
	if string(in.Metadata) == "null" {
		in.Metadata = nil // optional: null is the same as leaving it out
	}
	if in.Metadata != nil {
		m, err := CompactObject(in.Metadata)
		if err != nil {
			return Invalid(field+"metadata", "metadata must be a JSON object")
		}
		if len(m) > MaxNodeMeta {
			return Invalid(field+"metadata", "metadata is larger than %d bytes", MaxNodeMeta)
		}
		in.Metadata = m
	}
	if len(in.Reason) > 1024 {
		return Invalid(field+"reason", "reason is longer than 1024 bytes")
	}
	return nil
}

// ValidConfidence refuses values outside [0, 1] (and NaN) rather than
// clamping them: a silently changed confidence is a lie in the history.
func ValidConfidence(field string, c float64) error {
	if math.IsNaN(c) || c < 0 || c > 1 {
		return Invalid(field, "confidence must be between 0 and 1")
	}
	return nil
}

func oneOf(field string, v *string, allowed []string) error {
	if v != nil && !slices.Contains(allowed, *v) {
		return Invalid(field, "unknown %s %q", field[strings.LastIndexByte(field, '.')+1:], *v).WithDetail("allowed", allowed)
	}
	return nil
}

// CompactObject returns raw compacted, or an error unless it is a JSON
// object.
func CompactObject(raw json.RawMessage) (json.RawMessage, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	if len(b) == 0 || b[0] != '{' {
		return nil, Errorf(EInvalid, "not a JSON object")
	}
	return b, nil
}

// Node is one memory node as stored and served: the current version, or
// the version an as_of read found.
type Node struct {
	Ref         string          `json:"ref"`
	Scope       string          `json:"scope"`
	Kind        string          `json:"kind"`
	ID          string          `json:"id"`
	Title       string          `json:"title"`
	Summary     string          `json:"summary"`
	Lifecycle   string          `json:"lifecycle"`
	Authority   string          `json:"authority"`
	Confidence  float64         `json:"confidence"`
	TargetFiles []string        `json:"target_files"`
	PayloadRef  *string         `json:"payload_ref"`
	Owner       *string         `json:"owner"`
	SourceType  string          `json:"source_type"`
	DerivedFrom []string        `json:"derived_from"`
	Metadata    json.RawMessage `json:"metadata"`
	Version     int             `json:"version"`
	CreatedAt   string          `json:"created_at"`
	UpdatedAt   string          `json:"updated_at"`
	// WrittenBy is the identity whose call wrote this version (sys:kurad
	// for kurad's own writes). Versions written before schema 9 do not
	// know it: the field is then left out.
	WrittenBy string `json:"written_by,omitempty"`
}

// NodeFilter selects nodes of a scope for GET .../memory/nodes.
type NodeFilter struct {
	Kind, Lifecycle, Authority, Owner string
	MinConfidence                     *float64
	UpdatedSince                      string
	After                             string // cursor: the last ref of the previous page
	Limit                             int
}

// ConfidenceChange is one entry of a node's confidence history.
type ConfidenceChange struct {
	At      string   `json:"at"`
	Old     *float64 `json:"old"`
	New     float64  `json:"new"`
	Reason  string   `json:"reason"`
	Version int      `json:"version"`
}

// NodeHistory is every version of a node, oldest first, and every
// confidence change.
type NodeHistory struct {
	Ref               string             `json:"ref"`
	Versions          []json.RawMessage  `json:"versions"`
	ConfidenceHistory []ConfidenceChange `json:"confidence_history"`
}

// Transition moves a node to another lifecycle (and optionally authority).
type Transition struct {
	Lifecycle string  `json:"lifecycle"`
	Authority *string `json:"authority"`
	Reason    string  `json:"reason"`
	// Writer is who transitions (see NodeInput.Writer).
	Writer Writer `json:"-"`
}

// Validate checks the enums and that a reason is given.
func (t *Transition) Validate() error {
	if err := oneOf("lifecycle", &t.Lifecycle, Lifecycles); err != nil {
		return err
	}
	if err := oneOf("authority", t.Authority, Authorities); err != nil {
		return err
	}
	if strings.TrimSpace(t.Reason) == "" || len(t.Reason) > 1024 {
		return Invalid("reason", "reason is required (1 to 1024 bytes)")
	}
	return nil
}

// Revision is the answer of a revise: the new node, the old one (now
// retired) and the supersedes relation between them.
type Revision struct {
	Node       *Node     `json:"node"`
	Superseded *Node     `json:"superseded"`
	Relation   *Relation `json:"relation"`
}

// RelationInput is the body of POST .../memory/relations.
type RelationInput struct {
	ID         string   `json:"id"`
	Kind       string   `json:"kind"`
	From       string   `json:"from"`
	To         string   `json:"to"`
	Confidence *float64 `json:"confidence"`
	Reasons    []string `json:"reasons"`
}

// Validate checks the relation's shape; that both ends exist in the scope
// is the store's job.
func (in *RelationInput) Validate(kinds []string) error {
	if in.ID != "" && !ValidNodeID(in.ID) {
		return Invalid("id", "relation id must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
	}
	if err := oneOf("kind", &in.Kind, RelationKind); err != nil {
		return err
	}
	if _, ok := ParseRef(in.From, kinds, false); !ok {
		return Invalid("from", "from must be a node ref (kind:id)")
	}
	if _, ok := ParseRef(in.To, kinds, false); !ok {
		return Invalid("to", "to must be a node ref (kind:id)")
	}
	if in.Confidence != nil {
		if err := ValidConfidence("confidence", *in.Confidence); err != nil {
			return err
		}
	}
	if len(in.Reasons) > MaxReasons {
		return Invalid("reasons", "at most %d reasons", MaxReasons)
	}
	for _, r := range in.Reasons {
		if r == "" || len(r) > 1024 {
			return Invalid("reasons", "each reason must be 1 to 1024 bytes")
		}
	}
	return nil
}

// Relation is a typed, weighted edge between two nodes of one scope.
type Relation struct {
	ID         string   `json:"id"`
	Scope      string   `json:"scope"`
	Kind       string   `json:"kind"`
	From       string   `json:"from"`
	To         string   `json:"to"`
	Confidence float64  `json:"confidence"`
	Reasons    []string `json:"reasons"`
	CreatedAt  string   `json:"created_at"`
}

// FeedbackInput is the body of POST .../memory/feedback.
type FeedbackInput struct {
	Ref      string `json:"ref"`
	Outcome  string `json:"outcome"`
	Note     string `json:"note"`
	AuthorID string `json:"author_id"`
}

// Validate checks the feedback's shape.
func (in *FeedbackInput) Validate(kinds []string) error {
	if _, ok := ParseRef(in.Ref, kinds, false); !ok {
		return Invalid("ref", "ref must be a node ref (kind:id)")
	}
	if err := oneOf("outcome", &in.Outcome, Outcomes); err != nil {
		return err
	}
	if len(in.Note) > MaxSummary {
		return Invalid("note", "note is longer than %d bytes", MaxSummary)
	}
	if err := CheckAuthorID("author_id", in.AuthorID, "who reports the outcome"); err != nil {
		return err
	}
	return nil
}

// Feedback is a stored outcome report on a node.
type Feedback struct {
	ID        string `json:"id"`
	Scope     string `json:"scope"`
	Ref       string `json:"ref"`
	Outcome   string `json:"outcome"`
	Note      string `json:"note"`
	AuthorID  string `json:"author_id"`
	CreatedAt string `json:"created_at"`
}

// SearchQuery is GET .../memory/search: query words and exact filters.
type SearchQuery struct {
	Q             string
	Kind          string
	Lifecycle     string
	Authority     string
	TargetFile    string
	Owner         string
	MinConfidence *float64
	Limit         int
	// Mode is lexical, semantic or hybrid (SearchModes); empty: hybrid
	// when an embedder is configured, else lexical.
	Mode string
}

// Search modes: by words, by meaning (embeddings), or both fused.
const (
	SearchLexical  = "lexical"
	SearchSemantic = "semantic"
	SearchHybrid   = "hybrid"
)

// SearchModes are the values of SearchQuery.Mode.
var SearchModes = []string{SearchLexical, SearchSemantic, SearchHybrid}

// SearchAnswer is the body of a memory search: the results, and warnings
// when the search could not be what was asked (an embedder that did not
// answer makes a hybrid search lexical).
type SearchAnswer struct {
	Results  []SearchResult `json:"results"`
	Warnings []string       `json:"warnings,omitempty"`
}

// SearchReason explains a score or names a filter a result passed.
type SearchReason struct {
	Code   string `json:"code"`
	Detail string `json:"detail"`
}

// SearchResult is one hit, best first. Score is the relevance (higher is
// better; BM25 over the node's fields, four decimals); 0 without a query.
type SearchResult struct {
	Ref     string         `json:"ref"`
	Score   float64        `json:"score"`
	Reasons []SearchReason `json:"reasons"`
	Node    *Node          `json:"node"`
}

// NodeBatch is the body and the answer of a node batch write.
type NodeBatch struct {
	Nodes []Node `json:"nodes"`
}

// NodeBatchInput is the body of POST .../memory/nodes/batch.
type NodeBatchInput struct {
	Nodes []NodeInput `json:"nodes"`
}
