package kura

import (
	"bytes"
	"encoding/json"
)

// Trace directions and depth bounds (API.md, "Memory graph and provenance").
const (
	DirectionBackward = "backward"
	DirectionForward  = "forward"
	DirectionBoth     = "both"

	DefaultTraceDepth = 3
	MaxTraceDepth     = 10
)

// RecordSourceType is the source_type a record reports in lineage: a record
// is a raw capture, never derived from anything.
const RecordSourceType = "direct_experience"

// Lineage is one vertex of a lineage tree or list: a node of the scope or a
// record. Nodes carry Title and Summary (cut short), records Text, Type and
// AuthorID. A record the caller may not read is Withheld: listed by ref,
// kind and time, with an empty text and no type or author.
type Lineage struct {
	Ref        string  `json:"ref"`
	Kind       string  `json:"kind"`
	Title      *string `json:"title,omitempty"`
	Summary    string  `json:"summary,omitempty"`
	Text       *string `json:"text,omitempty"`
	Type       string  `json:"type,omitempty"`
	AuthorID   string  `json:"author_id,omitempty"`
	Redacted   bool    `json:"redacted,omitempty"`
	Withheld   bool    `json:"withheld,omitempty"`
	SourceType string  `json:"source_type"`
	CreatedAt  string  `json:"created_at"`
	// Depth is the distance from the traced vertex (1 for a direct source
	// or derivation).
	Depth int `json:"depth,omitempty"`
	// Shared marks a vertex already shown, expanded, elsewhere in the same
	// tree: it is not expanded twice, so diamonds stay linear in size.
	Shared bool `json:"shared,omitempty"`
	// Truncated marks a vertex that has further sources (or derivations)
	// not shown because the trace's depth ended here.
	Truncated bool `json:"truncated,omitempty"`
	// Sources and Derived are nil (absent) when the vertex was not expanded
	// (shared, or at the depth limit) and empty when it has none: "no
	// sources" and "not shown" are different answers.
	Sources []Lineage `json:"sources,omitzero"`
	Derived []Lineage `json:"derived,omitzero"`
}

// IsRecord reports whether the item is a record.
func (l *Lineage) IsRecord() bool { return l.Kind == "record" }

// Label is the item's one-line text: a node's title (its summary when it has
// none) or a record's text.
func (l *Lineage) Label() string {
	switch {
	case l.Text != nil:
		return *l.Text
	case l.Title != nil && *l.Title != "":
		return *l.Title
	}
	return l.Summary
}

// TraceMemory is what a trace is about: a node of the scope, or a record
// (as its lineage item). Exactly one is set.
type TraceMemory struct {
	Node   *Node
	Record *Lineage
}

// MarshalJSON writes the node or the record item, unwrapped.
func (m TraceMemory) MarshalJSON() ([]byte, error) {
	if m.Record != nil {
		return json.Marshal(m.Record)
	}
	return json.Marshal(m.Node)
}

// UnmarshalJSON tells a record from a node by its kind.
func (m *TraceMemory) UnmarshalJSON(b []byte) error {
	var k struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(b, &k); err != nil {
		return err
	}
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*m = TraceMemory{}
		return nil
	}
	if k.Kind == "record" {
		m.Node, m.Record = nil, &Lineage{}
		return json.Unmarshal(b, m.Record)
	}
	m.Node, m.Record = &Node{}, nil
	return json.Unmarshal(b, m.Node)
}

// Ref is the traced ref.
func (m TraceMemory) Ref() string {
	if m.Record != nil {
		return m.Record.Ref
	}
	if m.Node != nil {
		return m.Node.Ref
	}
	return ""
}

// TraceBackward is where the traced memory came from.
type TraceBackward struct {
	SourceType string    `json:"source_type"`
	CreatedAt  string    `json:"created_at"`
	Sources    []Lineage `json:"sources"`
}

// TraceForward is what was derived from the traced memory.
type TraceForward struct {
	Derived []Lineage `json:"derived"`
}

// Trace is the answer of GET /v1/scopes/{scope}/provenance/{ref}: the
// lineage tree in one or both directions, to the asked depth.
type Trace struct {
	Memory    TraceMemory    `json:"memory"`
	Direction string         `json:"direction"`
	Depth     int            `json:"depth"`
	Backward  *TraceBackward `json:"backward,omitempty"`
	Forward   *TraceForward  `json:"forward,omitempty"`
	// Truncated is true when something was left out: a vertex at the depth
	// limit had more lineage, or the trace hit its size cap.
	Truncated bool `json:"truncated"`
}

// EvidenceNode is an episode or note supporting a memory.
type EvidenceNode struct {
	Ref        string  `json:"ref"`
	ID         string  `json:"id"`
	Title      string  `json:"title"`
	Summary    string  `json:"summary"`
	SourceType string  `json:"source_type"`
	Confidence float64 `json:"confidence"`
	Lifecycle  string  `json:"lifecycle"`
	CreatedAt  string  `json:"created_at"`
	Depth      int     `json:"depth"`
}

// RawEntry is a record at the root of a lineage. A record the caller may
// not read is Withheld: an empty text and no type or author.
type RawEntry struct {
	Ref       string `json:"ref"`
	ID        string `json:"id"`
	Type      string `json:"type,omitempty"`
	Text      string `json:"text"`
	AuthorID  string `json:"author_id,omitempty"`
	Redacted  bool   `json:"redacted,omitempty"`
	Withheld  bool   `json:"withheld,omitempty"`
	CreatedAt string `json:"created_at"`
	Depth     int    `json:"depth"`
}

// Withhold strips what a caller who may not read the record must not see.
func (e *RawEntry) Withhold() {
	e.Type, e.Text, e.AuthorID, e.Redacted, e.Withheld = "", "", "", false, true
}

// Withhold strips a record item of what a caller who may not read the
// record must not see. Its text becomes empty, not absent, so that it
// still reads as a record.
func (l *Lineage) Withhold() {
	empty := ""
	l.Text, l.Type, l.AuthorID, l.Redacted, l.Withheld = &empty, "", "", false, true
}

// EvidenceSet groups the evidence of a memory by what it is.
type EvidenceSet struct {
	Episodes   []EvidenceNode `json:"episodes"`
	Notes      []EvidenceNode `json:"notes"`
	RawEntries []RawEntry     `json:"raw_entries"`
}

// Evidence is the answer of .../provenance/{ref}/evidence: everything in
// the transitive backward lineage that is evidence, each listed once.
type Evidence struct {
	Ref                string      `json:"ref"`
	Evidence           EvidenceSet `json:"evidence"`
	TotalEvidenceCount int         `json:"total_evidence_count"`
	// DirectEpisodes counts the episodes the memory names itself in
	// derived_from (depth 1).
	DirectEpisodes   int `json:"direct_episodes"`
	SourceRawEntries int `json:"source_raw_entries"`
	// Truncated is set when the walk reached its bound of edges before the
	// end of the lineage: the lists hold what it reached.
	Truncated bool `json:"truncated,omitempty"`
}

// RawSources is the answer of .../provenance/{ref}/raw-sources.
type RawSources struct {
	Ref        string     `json:"ref"`
	RawSources []RawEntry `json:"raw_sources"`
	Count      int        `json:"count"`
	// Truncated: as Evidence's.
	Truncated bool `json:"truncated,omitempty"`
}

// Derived is the answer of .../provenance/{ref}/derived: every node of the
// scope transitively derived from ref, complete, by depth then creation.
type Derived struct {
	Ref     string    `json:"ref"`
	Derived []Lineage `json:"derived"`
	Count   int       `json:"count"`
	// Truncated: as Evidence's.
	Truncated bool `json:"truncated,omitempty"`
}
