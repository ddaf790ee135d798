package kura

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"
	"strings"
)

// The record types kurad itself acts on: a turn opens with a
// task.instruction and its output holds one task.deliverable; its close
// extracts memory.fact and memory.decision records into memory nodes.
const (
	RecordTaskInstruction = "task.instruction"
	RecordTaskDeliverable = "task.deliverable"
	RecordMemoryFact      = "memory.fact"
	RecordMemoryDecision  = "memory.decision"
)

// DefaultRecordTypes is the record type vocabulary of API.md. Configuration
// may extend it (see Vocabulary).
var DefaultRecordTypes = []string{
	RecordTaskInstruction, RecordTaskDeliverable, "agent.thought", "agent.plan",
	"tool.call", "tool.result", RecordMemoryFact, RecordMemoryDecision,
	"sys.context", "sys.error",
}

// ExtractedKind reports the kind of the memory node a record of type t
// becomes when a turn whose output holds it closes (memory.fact → fact,
// memory.decision → decision), and whether it becomes one at all.
func ExtractedKind(t string) (kind string, ok bool) {
	switch t {
	case RecordMemoryFact:
		return "fact", true
	case RecordMemoryDecision:
		return "decision", true
	}
	return "", false
}

// Limits that keep a single record sane; the body limit bounds the whole request.
const (
	MaxMetadataEntries = 64
	MaxMetadataKey     = 128
	MaxMetadataValue   = 4096
	MaxTypeLen         = 64
	MaxBatchRecords    = 1000
)

// Record is an immutable, content-addressed entry. Content is its canonical
// (RFC 8785) JSON; it is null once the record has been redacted, and in the
// answer to a reader who may not read it (Withheld: memory kurad packed
// from a scope the reader does not hold), where every hash and the
// metadata are kept, so that it verifies as a redacted record does.
type Record struct {
	ID           string            `json:"id"`
	Hash         string            `json:"hash"`
	ContentHash  string            `json:"content_hash"`
	Seal         string            `json:"seal"`
	Type         string            `json:"type"`
	Content      json.RawMessage   `json:"content"`
	AuthorID     string            `json:"author_id"`
	Metadata     map[string]string `json:"metadata"`
	CreatedAt    string            `json:"created_at"`
	Redacted     bool              `json:"redacted,omitempty"`
	Withheld     bool              `json:"withheld,omitempty"`
	Deduplicated bool              `json:"deduplicated,omitempty"`
	// Mismatches names the stored hashes that no longer follow from the
	// record's stored fields (read with the record, never stored): what is
	// served then is not what Kura committed to. Content that no longer
	// hashes to content_hash is served as null.
	Mismatches []Mismatch `json:"mismatches,omitempty"`

	// MetadataJSON, when set, is the stored canonical JSON of Metadata; the
	// store fills it instead of Metadata so that reads do not decode and
	// re-encode metadata they only pass through. Meta decodes it on demand.
	MetadataJSON json.RawMessage `json:"-"`
}

// Meta returns the metadata map, decoding MetadataJSON when only that is set.
func (r *Record) Meta() map[string]string {
	if r.Metadata == nil && len(r.MetadataJSON) > 0 {
		m := map[string]string{}
		if json.Unmarshal(r.MetadataJSON, &m) == nil {
			r.Metadata = m
		}
	}
	if r.Metadata == nil {
		r.Metadata = map[string]string{}
	}
	return r.Metadata
}

// RecordInput is what a caller sends to create a record.
type RecordInput struct {
	Type     string            `json:"type"`
	Content  json.RawMessage   `json:"content"`
	AuthorID string            `json:"author_id"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// RecordEventProject is the project whose feed and NATS subjects hear of
// a record written outside a turn (its record.written event): the project
// its metadata.project_id names, else the default project, unless the
// writer is limited to projects (non-nil) that do not include the default:
// then the writer's first project, so that a limited writer's records never
// ring in a project it does not hold. The metadata is not changed: it is
// covered by the record's seal. A project_id outside the writer's projects
// is refused before this (the API's check); one that is not a slug names
// no project.
func RecordEventProject(metadata map[string]string, defaultProject string, projects []string) string {
	if pid := metadata["project_id"]; ValidSlug(pid) {
		return pid
	}
	if len(projects) == 0 || slices.Contains(projects, defaultProject) {
		return defaultProject
	}
	return projects[0]
}

// RecordFilter selects records for listing. Since and Until bound created_at
// (inclusive, exclusive); Cursor is the last id of the previous page.
type RecordFilter struct {
	Type     string
	AuthorID string
	Since    string
	Until    string
	After    string
	Limit    int
	// Scopes are the scopes the reader holds (nil: all); memory kurad
	// packed from any other scope is left out (see Reader).
	Scopes []string
}

// Reader is who reads records, for the visibility rules of
// docs/security.md ("Records and ledgers visibility"): a reader limited to
// Projects reads a record it wrote, or one a ledger of its projects' sessions
// or an open turn of them holds; a reader limited to Scopes does not read
// memory kurad packed from another scope (a sys:kurad record whose metadata
// names that scope). nil Projects or Scopes mean all.
type Reader struct {
	Identity string
	Projects []string
	Scopes   []string
}

// Unlimited reports whether r reads every record.
func (r Reader) Unlimited() bool { return r.Projects == nil && r.Scopes == nil }

// PackedScopeKey is the metadata key kurad sets on the memory it packs into
// a context ledger: the scope the memory came from. Only sys:kurad records
// count, and no token may write as sys:, so no one can forge it.
const PackedScopeKey = "scope"

// Vocabulary is the set of record types a kurad accepts.
type Vocabulary struct {
	types map[string]bool
	list  []string
}

// NewVocabulary returns the default vocabulary extended by extra types.
func NewVocabulary(extra ...string) *Vocabulary {
	v := &Vocabulary{types: map[string]bool{}}
	for _, t := range append(append([]string{}, DefaultRecordTypes...), extra...) {
		t = strings.TrimSpace(t)
		if t == "" || v.types[t] {
			continue
		}
		v.types[t] = true
		v.list = append(v.list, t)
	}
	sort.Strings(v.list)
	return v
}

// Has reports whether t is an accepted record type.
func (v *Vocabulary) Has(t string) bool { return v.types[t] }

// Types lists the accepted record types, sorted.
func (v *Vocabulary) Types() []string { return append([]string(nil), v.list...) }

// ValidTypeName reports whether t is a well-formed record type name, the rule
// for types added through configuration.
func ValidTypeName(t string) bool {
	if t == "" || len(t) > MaxTypeLen {
		return false
	}
	for _, c := range t {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Validate checks a record input against the vocabulary and the content rules
// of API.md. field prefixes the names in errors (e.g. "records[3].").
func (in *RecordInput) Validate(v *Vocabulary, field string) error {
	if err := in.ValidateEnvelope(v, field); err != nil {
		return err
	}
	if len(in.Content) == 0 {
		return Invalid(field+"content", "content is required (any JSON value)")
	}
	switch in.Type {
	case "tool.call":
		return validateToolCall(in.Content, field+"content")
	case "tool.result":
		return validateToolResult(in.Content, field+"content")
	}
	return nil
}

// ValidateEnvelope checks everything of a record input but its content:
// type, author and metadata. A redacted record (an import of one) has no
// content left to check.
func (in *RecordInput) ValidateEnvelope(v *Vocabulary, field string) error {
	if in.Type == "" {
		return Invalid(field+"type", "type is required")
	}
	if !v.Has(in.Type) {
		// The vocabulary is kurad's configuration, not a fixed list: say
		// so, or a newcomer with a type of their own thinks it impossible.
		return Invalid(field+"type", "unknown record type %q: the accepted types are in details.allowed (and GET /v1/info record_types); kurad accepts more when started with KURA_RECORD_TYPES (flag --record-types)", in.Type).WithDetail("allowed", v.Types())
	}
	if err := CheckAuthorID(field+"author_id", in.AuthorID, "who wrote the record"); err != nil {
		return err
	}
	if len(in.Metadata) > MaxMetadataEntries {
		return Invalid(field+"metadata", "metadata has %d entries, at most %d allowed", len(in.Metadata), MaxMetadataEntries)
	}
	for k, val := range in.Metadata {
		if k == "" || len(k) > MaxMetadataKey {
			return Invalid(field+"metadata", "metadata keys must be 1..%d bytes", MaxMetadataKey)
		}
		if len(val) > MaxMetadataValue {
			return Invalid(field+"metadata."+k, "metadata values must be at most %d bytes", MaxMetadataValue)
		}
	}
	return nil
}

func strictDecode(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func validateToolCall(raw json.RawMessage, field string) error {
	var c struct {
		ToolName  *string         `json:"tool_name"`
		Arguments json.RawMessage `json:"arguments"`
		Status    *string         `json:"status"`
	}
	if err := strictDecode(raw, &c); err != nil {
		return Invalid(field, "tool.call content must be {\"tool_name\":string,\"arguments\":object,\"status\":\"pending\"|\"success\"|\"error\"}: %s", jsonProblem(err))
	}
	if c.ToolName == nil || *c.ToolName == "" {
		return Invalid(field+".tool_name", "tool.call content needs a non-empty tool_name")
	}
	if a := bytes.TrimSpace(c.Arguments); len(a) == 0 || a[0] != '{' {
		return Invalid(field+".arguments", "tool.call content needs arguments as a JSON object")
	}
	if c.Status == nil {
		return Invalid(field+".status", "tool.call content needs status pending, success or error")
	}
	switch *c.Status {
	case "pending", "success", "error":
	default:
		return Invalid(field+".status", "tool.call status %q is not one of pending, success, error", *c.Status)
	}
	return nil
}

func validateToolResult(raw json.RawMessage, field string) error {
	var c struct {
		Status *string         `json:"status"`
		Result json.RawMessage `json:"result"`
		Error  *string         `json:"error"`
	}
	if err := strictDecode(raw, &c); err != nil {
		return Invalid(field, "tool.result content must be {\"status\":string,\"result\"?:any,\"error\"?:string}: %s", jsonProblem(err))
	}
	if c.Status == nil || *c.Status == "" {
		return Invalid(field+".status", "tool.result content needs a non-empty status")
	}
	return nil
}

// jsonProblem shortens encoding/json errors to the part a caller can act on.
func jsonProblem(err error) string {
	return strings.TrimPrefix(err.Error(), "json: ")
}
