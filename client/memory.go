package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/kura-memory/kura/internal/kura"
)

// The memory graph's domain types, aliased for programs outside this module
// like the ones in types.go.
type (
	// NodeInput is the body of a node write. Nil fields are left out: on a
	// new version of an existing node they keep their current value.
	NodeInput = kura.NodeInput
	// Node is one memory node: its current version, or the version an
	// as_of read found.
	Node = kura.Node
	// Transition moves a node to another lifecycle (and optionally
	// authority), with a reason.
	Transition = kura.Transition
	// Revision is the answer of a revise: the new node, the old one (now
	// retired) and the supersedes relation from new to old.
	Revision = kura.Revision
	// RelationInput is the body of a relation write.
	RelationInput = kura.RelationInput
	// Relation is a typed, weighted edge between two nodes of one scope.
	Relation = kura.Relation
	// FeedbackInput is the body of a feedback write.
	FeedbackInput = kura.FeedbackInput
	// Feedback is a stored outcome report on a node.
	Feedback = kura.Feedback
	// ConfidenceChange is one entry of a node's confidence history.
	ConfidenceChange = kura.ConfidenceChange
	// SearchQuery is a memory search: query words and exact filters. Zero
	// values are left out of the request.
	SearchQuery = kura.SearchQuery
	// SearchReason explains part of a score or names a filter a result passed.
	SearchReason = kura.SearchReason
	// SearchResult is one search hit, with its score, reasons and node.
	SearchResult = kura.SearchResult
	// SearchAnswer is a search's results and its warnings (a search by
	// meaning that fell back to words says so).
	SearchAnswer = kura.SearchAnswer
)

// NodeHistory is every version of a node, oldest first, and every change of
// its confidence. kurad keeps each version as the JSON it served; here they
// are decoded, unlike in the store's own type.
type NodeHistory struct {
	Ref               string             `json:"ref"`
	Versions          []Node             `json:"versions"`
	ConfidenceHistory []ConfidenceChange `json:"confidence_history"`
}

// NodeListOptions filters and pages GET .../memory/nodes. Zero values are
// left out of the query: the server's defaults apply.
type NodeListOptions struct {
	Kind          string
	Lifecycle     string
	Authority     string
	Owner         string   // e.g. "agent:bmo"
	MinConfidence *float64 // only nodes at least this confident
	UpdatedSince  string   // RFC 3339; updated_at >= UpdatedSince
	Limit         int      // page size, at most 1000
	Cursor        string   // NextCursor of the previous page
}

func (o NodeListOptions) query() url.Values {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("kind", o.Kind)
	set("lifecycle", o.Lifecycle)
	set("authority", o.Authority)
	set("owner", o.Owner)
	set("updated_since", o.UpdatedSince)
	set("cursor", o.Cursor)
	if o.MinConfidence != nil {
		q.Set("min_confidence", strconv.FormatFloat(*o.MinConfidence, 'f', -1, 64))
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	return q
}

// NodePage is one page of nodes; NextCursor is empty on the last page.
type NodePage struct {
	Nodes      []Node `json:"nodes"`
	NextCursor string `json:"next_cursor,omitempty"`
}

// RelationListOptions filters and pages GET .../memory/relations.
type RelationListOptions struct {
	Ref    string // only relations with this node at either end
	Kind   string // only relations of this kind, e.g. "supersedes"
	Limit  int    // page size, at most 1000
	Cursor string // NextCursor of the previous page
}

func (o RelationListOptions) query() url.Values {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("ref", o.Ref)
	set("kind", o.Kind)
	set("cursor", o.Cursor)
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	return q
}

// RelationPage is one page of relations; NextCursor is empty on the last page.
type RelationPage struct {
	Relations  []Relation `json:"relations"`
	NextCursor string     `json:"next_cursor,omitempty"`
}

func searchValues(s SearchQuery) url.Values {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("q", s.Q)
	set("kind", s.Kind)
	set("lifecycle", s.Lifecycle)
	set("authority", s.Authority)
	set("target_file", s.TargetFile)
	set("owner", s.Owner)
	if s.MinConfidence != nil {
		q.Set("min_confidence", strconv.FormatFloat(*s.MinConfidence, 'f', -1, 64))
	}
	if s.Limit > 0 {
		q.Set("limit", strconv.Itoa(s.Limit))
	}
	set("mode", s.Mode)
	return q
}

// nodeInputWire is NodeInput as the contract writes it: an omitted field is
// absent, not null. kurad reads "metadata": null as a metadata that is not
// an object, and an update must be able to tell "keep the target files"
// (nil, left out) from "clear them" (empty, sent as []), which omitzero
// does and omitempty would not.
type nodeInputWire struct {
	Kind        string          `json:"kind,omitzero"`
	ID          string          `json:"id,omitzero"`
	Title       *string         `json:"title,omitzero"`
	Summary     *string         `json:"summary,omitzero"`
	Lifecycle   *string         `json:"lifecycle,omitzero"`
	Authority   *string         `json:"authority,omitzero"`
	Confidence  *float64        `json:"confidence,omitzero"`
	TargetFiles []string        `json:"target_files,omitzero"`
	PayloadRef  *string         `json:"payload_ref,omitzero"`
	Owner       *string         `json:"owner,omitzero"`
	SourceType  *string         `json:"source_type,omitzero"`
	DerivedFrom []string        `json:"derived_from,omitzero"`
	Metadata    json.RawMessage `json:"metadata,omitzero"`
	Reason      string          `json:"reason,omitzero"`
	// Writer is kurad's: it takes the writer from the token, never from
	// the body.
	Writer kura.Writer `json:"-"`
}

type transitionWire struct {
	Lifecycle string      `json:"lifecycle"`
	Authority *string     `json:"authority,omitzero"`
	Reason    string      `json:"reason"`
	Writer    kura.Writer `json:"-"` // kurad's, as in nodeInputWire
}

type relationInputWire struct {
	ID         string   `json:"id,omitzero"`
	Kind       string   `json:"kind"`
	From       string   `json:"from"`
	To         string   `json:"to"`
	Confidence *float64 `json:"confidence,omitzero"`
	Reasons    []string `json:"reasons,omitzero"`
}

type feedbackInputWire struct {
	Ref      string `json:"ref"`
	Outcome  string `json:"outcome"`
	Note     string `json:"note,omitzero"`
	AuthorID string `json:"author_id"`
}

// memoryPath is the path of a scope's memory routes. Refs are "kind:id";
// url.PathEscape leaves ':' (and the '.', '-' and '_' ids may hold) as they
// are, and escapes '/' so that a mistyped ref stays one segment.
func memoryPath(scope string, parts ...string) string {
	p := "/v1/scopes/" + esc(scope) + "/memory"
	for _, s := range parts {
		p += "/" + s
	}
	return p
}

func nodePath(scope, ref string, suffix ...string) string {
	return memoryPath(scope, append([]string{"nodes", esc(ref)}, suffix...)...)
}

// checkScopeRef fails before any I/O when scope or ref is empty: an empty
// segment would address another route.
func checkScopeRef(scope, ref string) error {
	if isEmpty(scope) {
		return errMissingID("scope")
	}
	if isEmpty(ref) {
		return errMissingID("node ref")
	}
	return nil
}

// PutNode writes a node of scope (POST /v1/scopes/{scope}/memory/nodes):
// a new node, or a new version of the node in.Kind:in.ID already names, in
// which case the fields in leaves nil keep their value. created reports
// which: kurad answers 201 for a new node and 200 for a new version, and
// numbers a new node's first version 1, which is what is read here (do
// hands back the body only, and a replay carries the same version).
func (c *Client) PutNode(ctx context.Context, scope string, in NodeInput) (n *Node, created bool, err error) {
	if isEmpty(scope) {
		return nil, false, errMissingID("scope")
	}
	var out Node
	if err := c.do(ctx, "put node", http.MethodPost, memoryPath(scope, "nodes"), nil, nodeInputWire(in), &out); err != nil {
		return nil, false, err
	}
	return &out, out.Version == 1, nil
}

// PutNodes writes up to 1000 nodes of scope all or nothing, in one
// transaction (POST .../memory/nodes/batch), and returns them in input
// order. A node may derive from one written earlier in the same batch.
func (c *Client) PutNodes(ctx context.Context, scope string, in []NodeInput) ([]Node, error) {
	if isEmpty(scope) {
		return nil, errMissingID("scope")
	}
	body := struct {
		Nodes []nodeInputWire `json:"nodes"`
	}{Nodes: make([]nodeInputWire, len(in))}
	for i := range in {
		body.Nodes[i] = nodeInputWire(in[i])
	}
	var out struct {
		Nodes []Node `json:"nodes"`
	}
	if err := c.do(ctx, "put nodes", http.MethodPost, memoryPath(scope, "nodes", "batch"), nil, body, &out); err != nil {
		return nil, err
	}
	return out.Nodes, nil
}

// GetNode returns the node ref ("kind:id") of scope
// (GET .../memory/nodes/{ref}). With asOf, an RFC 3339 time, it returns
// the version that was current then instead; a Node's UpdatedAt names the
// instant its version became current.
func (c *Client) GetNode(ctx context.Context, scope, ref, asOf string) (*Node, error) {
	if err := checkScopeRef(scope, ref); err != nil {
		return nil, err
	}
	q := url.Values{}
	if asOf != "" {
		q.Set("as_of", asOf)
	}
	var out Node
	if err := c.do(ctx, "get node", http.MethodGet, nodePath(scope, ref), q, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListNodes returns one page of the nodes of scope, oldest first
// (GET .../memory/nodes).
func (c *Client) ListNodes(ctx context.Context, scope string, opts NodeListOptions) (*NodePage, error) {
	if isEmpty(scope) {
		return nil, errMissingID("scope")
	}
	var out NodePage
	if err := c.do(ctx, "list nodes", http.MethodGet, memoryPath(scope, "nodes"), opts.query(), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// NodeHistory returns every version of a node, oldest first, and its
// confidence history (GET .../memory/nodes/{ref}/history).
func (c *Client) NodeHistory(ctx context.Context, scope, ref string) (*NodeHistory, error) {
	if err := checkScopeRef(scope, ref); err != nil {
		return nil, err
	}
	var out NodeHistory
	if err := c.do(ctx, "node history", http.MethodGet, nodePath(scope, ref, "history"), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// TransitionNode moves a node to another lifecycle, and authority when
// t.Authority is set, as a new version (POST .../nodes/{ref}/transition).
// Nothing is ever deleted; t.Reason is required.
func (c *Client) TransitionNode(ctx context.Context, scope, ref string, t Transition) (*Node, error) {
	if err := checkScopeRef(scope, ref); err != nil {
		return nil, err
	}
	var out Node
	if err := c.do(ctx, "transition node", http.MethodPost, nodePath(scope, ref, "transition"), nil, transitionWire(t), &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ReviseNode replaces the node ref by a new one in one step
// (POST .../nodes/{ref}/revise): the new node (source_type revision,
// derived from ref; the fields in leaves nil are carried over), a
// supersedes relation from new to old, and the old node retired. in.Kind
// may be left empty: the old node's kind.
func (c *Client) ReviseNode(ctx context.Context, scope, ref string, in NodeInput) (*Revision, error) {
	if err := checkScopeRef(scope, ref); err != nil {
		return nil, err
	}
	var out Revision
	if err := c.do(ctx, "revise node", http.MethodPost, nodePath(scope, ref, "revise"), nil, nodeInputWire(in), &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// CreateRelation writes a relation between two nodes of scope
// (POST .../memory/relations).
func (c *Client) CreateRelation(ctx context.Context, scope string, in RelationInput) (*Relation, error) {
	if isEmpty(scope) {
		return nil, errMissingID("scope")
	}
	var out Relation
	if err := c.do(ctx, "create relation", http.MethodPost, memoryPath(scope, "relations"), nil, relationInputWire(in), &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListRelations returns one page of the relations of scope, oldest first
// (GET .../memory/relations).
func (c *Client) ListRelations(ctx context.Context, scope string, opts RelationListOptions) (*RelationPage, error) {
	if isEmpty(scope) {
		return nil, errMissingID("scope")
	}
	var out RelationPage
	if err := c.do(ctx, "list relations", http.MethodGet, memoryPath(scope, "relations"), opts.query(), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// CreateFeedback reports an outcome on a node of scope
// (POST .../memory/feedback).
func (c *Client) CreateFeedback(ctx context.Context, scope string, in FeedbackInput) (*Feedback, error) {
	if isEmpty(scope) {
		return nil, errMissingID("scope")
	}
	var out Feedback
	if err := c.do(ctx, "create feedback", http.MethodPost, memoryPath(scope, "feedback"), nil, feedbackInputWire(in), &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Search searches the nodes of scope (GET .../memory/search) and returns
// the hits best first, each with the reasons of its score and the filters
// it passed. Search writes nothing.
func (c *Client) Search(ctx context.Context, scope string, q SearchQuery) ([]SearchResult, error) {
	ans, err := c.SearchMemory(ctx, scope, q)
	if err != nil {
		return nil, err
	}
	return ans.Results, nil
}

// SearchMemory is Search with the answer's warnings: a semantic or hybrid
// search (q.Mode) that kurad answered by words says why there.
func (c *Client) SearchMemory(ctx context.Context, scope string, q SearchQuery) (*SearchAnswer, error) {
	if isEmpty(scope) {
		return nil, errMissingID("scope")
	}
	var out SearchAnswer
	if err := c.do(ctx, "search memory", http.MethodGet, memoryPath(scope, "search"), searchValues(q), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
