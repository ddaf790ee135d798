package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/kura-memory/kura/internal/kura"
)

// The provenance answers, aliased for programs outside this module like the
// ones in types.go.
type (
	// Trace is a lineage tree: where a memory came from (Backward), what
	// was derived from it (Forward), or both.
	Trace = kura.Trace
	// TraceMemory is what a trace is about: a node (Node) or a record
	// (Record, as its lineage item).
	TraceMemory = kura.TraceMemory
	// TraceBackward holds a trace's sources.
	TraceBackward = kura.TraceBackward
	// TraceForward holds a trace's derivations.
	TraceForward = kura.TraceForward
	// Lineage is one node or record in a lineage tree or list.
	Lineage = kura.Lineage
	// Evidence lists the episodes, notes and raw records behind a memory.
	Evidence = kura.Evidence
	// EvidenceSet groups evidence by what it is.
	EvidenceSet = kura.EvidenceSet
	// EvidenceNode is an episode or note in an evidence list.
	EvidenceNode = kura.EvidenceNode
	// RawEntry is a record at the root of a lineage.
	RawEntry = kura.RawEntry
	// RawSources lists the records a memory traces back to.
	RawSources = kura.RawSources
	// Derived lists everything transitively derived from a record or node.
	Derived = kura.Derived
)

// Trace directions.
const (
	DirectionBackward = kura.DirectionBackward
	DirectionForward  = kura.DirectionForward
	DirectionBoth     = kura.DirectionBoth
)

// TraceOptions shape a trace. Zero values are left out of the query: the
// server's defaults apply (both directions, depth 3).
type TraceOptions struct {
	Direction string // backward, forward or both
	Depth     int    // 1..10
}

func (o TraceOptions) query() url.Values {
	q := url.Values{}
	if o.Direction != "" {
		q.Set("direction", o.Direction)
	}
	if o.Depth != 0 {
		q.Set("depth", strconv.Itoa(o.Depth))
	}
	return q
}

func provenancePath(scope, ref string, suffix ...string) string {
	p := "/v1/scopes/" + esc(scope) + "/provenance/" + esc(ref)
	for _, s := range suffix {
		p += "/" + s
	}
	return p
}

// checkLineageRef fails before any I/O when scope or ref is empty: an empty
// segment would address another route.
func checkLineageRef(scope, ref string) error {
	if isEmpty(scope) {
		return errMissingID("scope")
	}
	if isEmpty(ref) {
		return errMissingID("ref")
	}
	return nil
}

// Trace returns the lineage tree of ref in scope
// (GET /v1/scopes/{scope}/provenance/{ref}). ref is a node ref ("belief:abc")
// or a record ("record:<id>").
func (c *Client) Trace(ctx context.Context, scope, ref string, opts TraceOptions) (*Trace, error) {
	if err := checkLineageRef(scope, ref); err != nil {
		return nil, err
	}
	var out Trace
	if err := c.do(ctx, "trace", http.MethodGet, provenancePath(scope, ref), opts.query(), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Evidence returns the episodes, notes and records in ref's whole backward
// lineage, each once (GET .../provenance/{ref}/evidence).
func (c *Client) Evidence(ctx context.Context, scope, ref string) (*Evidence, error) {
	if err := checkLineageRef(scope, ref); err != nil {
		return nil, err
	}
	var out Evidence
	if err := c.do(ctx, "evidence", http.MethodGet, provenancePath(scope, ref, "evidence"), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RawSources returns the records at the roots of ref's lineage
// (GET .../provenance/{ref}/raw-sources).
func (c *Client) RawSources(ctx context.Context, scope, ref string) (*RawSources, error) {
	if err := checkLineageRef(scope, ref); err != nil {
		return nil, err
	}
	var out RawSources
	if err := c.do(ctx, "raw sources", http.MethodGet, provenancePath(scope, ref, "raw-sources"), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Derived returns every node of scope transitively derived from ref,
// complete, nearest first (GET .../provenance/{ref}/derived).
func (c *Client) Derived(ctx context.Context, scope, ref string) (*Derived, error) {
	if err := checkLineageRef(scope, ref); err != nil {
		return nil, err
	}
	var out Derived
	if err := c.do(ctx, "derived", http.MethodGet, provenancePath(scope, ref, "derived"), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
