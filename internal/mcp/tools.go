package mcp

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/kura-memory/kura/internal/admission"
	"github.com/kura-memory/kura/internal/kura"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// spec is one tool: the API route it calls and how its arguments map
// onto that route.
type spec struct {
	name, title, description string
	method                   string
	// path is the API route with {arg} placeholders named after the tool
	// arguments that fill them.
	path string
	// query lists the arguments sent as query parameters.
	query []string
	// body: the remaining arguments are the JSON body; without it a
	// remaining argument is refused.
	body bool
	// rename maps an argument to the API's name for it.
	rename map[string]string
	// args documents the arguments: the input schema is inferred from it.
	args any
	// out is the type of the API's answer: the output schema is inferred
	// from it. nil with text: the answer is plain text.
	out  any
	text bool
	// readOnly: the route writes nothing; idempotent: sending the same
	// call twice has the effect of sending it once.
	readOnly, idempotent bool
}

var placeholder = regexp.MustCompile(`\{([a-z_]+)\}`)

func (sp *spec) pathArgs() []string {
	var out []string
	for _, m := range placeholder.FindAllStringSubmatch(sp.path, -1) {
		out = append(out, m[1])
	}
	return out
}

func (sp *spec) tool(enums map[string][]any) *sdk.Tool {
	in, err := jsonschema.ForType(reflect.TypeOf(sp.args), &jsonschema.ForOptions{TypeSchemas: typeSchemas})
	if err != nil {
		panic(fmt.Sprintf("tool %s: input schema: %v", sp.name, err))
	}
	in = inputSchema(in, reflect.TypeOf(sp.args), enums)
	t := &sdk.Tool{
		Name:        sp.name,
		Title:       sp.title,
		Description: sp.description,
		InputSchema: in,
		Annotations: &sdk.ToolAnnotations{
			Title:           sp.title,
			ReadOnlyHint:    sp.readOnly,
			IdempotentHint:  sp.readOnly || sp.idempotent,
			DestructiveHint: new(false), // Kura keeps every version; nothing is ever overwritten
			OpenWorldHint:   new(false),
		},
	}
	if sp.out != nil {
		out, err := jsonschema.ForType(reflect.TypeOf(sp.out), &jsonschema.ForOptions{TypeSchemas: typeSchemas})
		if err != nil {
			panic(fmt.Sprintf("tool %s: output schema: %v", sp.name, err))
		}
		t.OutputSchema = openSchema(out)
	}
	return t
}

// Vocabulary names an argument's tag enum:"..." may take: the fixed value
// sets of the API, and the configurable ones (record types, node kinds)
// as the deployment has them.
const (
	enumRecordType = "record_type"
	enumNodeKind   = "node_kind"
	enumLifecycle  = "lifecycle"
	enumAuthority  = "authority"
	enumSourceType = "source_type"
	enumDirection  = "direction"
	enumTurnStatus = "turn_status"
	enumLookupMode = "kb_lookup_mode"
	enumSearchMode = "search_mode"
)

// enumValues lists each vocabulary's values for the input schemas. A
// configurable vocabulary that is not known (kura mcp could not ask
// kurad) gets no enum: its arguments stay free strings, for the API to
// judge, rather than lists that might refuse what the deployment accepts.
func enumValues(o Options) map[string][]any {
	m := map[string][]any{
		enumLifecycle:  anys(kura.Lifecycles),
		enumAuthority:  anys(kura.Authorities),
		enumSourceType: anys(kura.SourceTypes),
		enumDirection:  anys([]string{kura.DirectionBackward, kura.DirectionForward, kura.DirectionBoth}),
		// What a client may close a turn with; timeout is kurad's alone.
		enumTurnStatus: anys([]string{kura.TurnComplete, kura.TurnFailed}),
		enumLookupMode: anys([]string{kura.KBLookupRanked, kura.KBLookupStrict}),
		enumSearchMode: anys(kura.SearchModes),
	}
	if len(o.RecordTypes) > 0 {
		m[enumRecordType] = anys(o.RecordTypes)
	}
	if len(o.NodeKinds) > 0 {
		m[enumNodeKind] = anys(o.NodeKinds)
	}
	return m
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// inputSchema makes the schema jsonschema-go infers from an argument type
// into what form-building clients (the MCP Inspector) and models read
// well: every type is a single type, and the arguments tagged enum:"name"
// list their values.
//
// jsonschema-go writes a pointer, slice or map as "type":["null",T], so
// that a Go nil encodes valid. An argument is optional by being left out
// of required, and a type list makes the Inspector fall back to a text
// box, whose value it then sends as a string where an array, a number or
// a boolean was meant.
func inputSchema(s *jsonschema.Schema, t reflect.Type, enums map[string][]any) *jsonschema.Schema {
	if s == nil {
		return nil
	}
	if len(s.Types) == 2 && s.Types[0] == "null" {
		s.Type, s.Types = s.Types[1], nil
	}
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	inputSchema(s.Items, t, enums)
	if s.AdditionalProperties != nil && s.AdditionalProperties.Not == nil {
		inputSchema(s.AdditionalProperties, t, enums)
	}
	if t.Kind() != reflect.Struct {
		return s
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		p := s.Properties[name]
		if p == nil {
			continue
		}
		inputSchema(p, f.Type, enums)
		if e, ok := f.Tag.Lookup("enum"); ok {
			target := p
			if p.Type == "array" {
				target = p.Items
			}
			target.Enum = enums[e]
		}
	}
	return s
}

// typeSchemas are the answer types whose JSON is not what their Go shape
// says: raw JSON, custom marshalers and the recursive lineage tree.
var typeSchemas = map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[json.RawMessage]():  {Description: "any JSON value"},
	reflect.TypeFor[kura.TraceMemory](): {Type: "object", Description: "the traced node, or the record when the ref is record:<id>"},
	reflect.TypeFor[kura.Lineage](): {Type: "object", Description: "a node or record of the lineage: ref, kind, title or text, " +
		"source_type, created_at, and its own sources (backward) or derived (forward) items"},
}

// openSchema lets an answer carry fields its schema does not list: the
// API adds fields freely (API.md), and a client must not reject them. Go
// writes nil slices and maps as null, so those may be null as well.
func openSchema(s *jsonschema.Schema) *jsonschema.Schema {
	if s == nil {
		return nil
	}
	if ap := s.AdditionalProperties; ap != nil && ap.Not != nil {
		s.AdditionalProperties = nil // a struct's "no other property"
	}
	if s.Type == "array" || (s.Type == "object" && len(s.Properties) == 0) {
		s.Types = []string{"null", s.Type}
		s.Type = ""
	}
	for _, p := range s.Properties {
		openSchema(p)
	}
	openSchema(s.Items)
	openSchema(s.AdditionalProperties)
	return s
}

// Argument types: they document the tools' arguments (their schemas are
// what a model reads). Values are never decoded into them: the API
// decodes the body itself.
type (
	recordPutArgs struct {
		Type     string            `json:"type" enum:"record_type" jsonschema:"record type: task.instruction, task.deliverable, agent.thought, agent.plan, tool.call, tool.result, memory.fact, memory.decision, sys.context, sys.error (or a type the deployment added)"`
		Content  any               `json:"content" jsonschema:"any JSON value; tool.call is {tool_name, arguments, status: pending|success|error}, tool.result is {status, result?, error?}"`
		AuthorID string            `json:"author_id" jsonschema:"who wrote it, kind:name with kind user, agent, tool or sys, e.g. agent:bmo; with a token, your own identity"`
		Metadata map[string]string `json:"metadata,omitempty" jsonschema:"string to string labels, e.g. project_id"`
		IdemKey  string            `json:"idempotency_key,omitempty" jsonschema:"up to 128 characters; a retry with the same key returns the first answer and writes nothing"`
	}
	recordGetArgs struct {
		ID string `json:"id" jsonschema:"the record id, a lowercase UUIDv7"`
	}
	ledgerVerifyArgs struct {
		ID string `json:"id" jsonschema:"the ledger id, a lowercase UUIDv7"`
	}
	sessionLogArgs struct {
		SessionID string `json:"session_id" jsonschema:"the session id"`
		Limit     int    `json:"limit,omitempty" jsonschema:"ledgers per page, 1 to 1000 (default 100)"`
		Cursor    string `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page"`
	}
	recordInput struct {
		Type     string            `json:"type,omitempty" enum:"record_type" jsonschema:"record type (a new record)"`
		Content  any               `json:"content,omitempty" jsonschema:"any JSON value"`
		AuthorID string            `json:"author_id,omitempty" jsonschema:"author identity, e.g. user:oles"`
		Metadata map[string]string `json:"metadata,omitempty" jsonschema:"string to string labels"`
		RecordID string            `json:"record_id,omitempty" jsonschema:"an existing record's id, instead of a new record"`
	}
	memoryRequest struct {
		Query        string `json:"query,omitempty" jsonschema:"words to rank the scope's memory by"`
		BudgetBytes  int    `json:"budget_bytes,omitempty" jsonschema:"byte budget of the packed memory (at most 16777216; omitted: 1 MiB)"`
		MaxPerBucket *int   `json:"max_per_bucket,omitempty" jsonschema:"keep at most this many items per bucket (0 keeps none; omitted: 1000)"`
		MaxTrace     *int   `json:"max_trace,omitempty" jsonschema:"list at most this many nodes in the stored bundle's trace (0 lists none; omitted: 100000)"`
	}
	turnOpenArgs struct {
		SessionID       string         `json:"session_id" jsonschema:"the session to open a turn in (one open turn per session)"`
		Instruction     recordInput    `json:"instruction" jsonschema:"the task.instruction record of the turn"`
		Context         []recordInput  `json:"context,omitempty" jsonschema:"context records: new records or {record_id}"`
		Memory          *memoryRequest `json:"memory,omitempty" jsonschema:"compile the session's scope into the context (admitted use_now memory)"`
		Dispatch        string         `json:"dispatch,omitempty" jsonschema:"publish a dispatch command to this worker target"`
		DeadlineSeconds int            `json:"deadline_seconds,omitempty" jsonschema:"kurad closes the turn as timeout after this many seconds"`
		IdemKey         string         `json:"idempotency_key,omitempty" jsonschema:"a retry with the same key returns the first answer and writes nothing"`
	}
	turnAppendArgs struct {
		TurnID  string        `json:"turn_id" jsonschema:"the open turn"`
		Epoch   *int64        `json:"epoch,omitempty" jsonschema:"the epoch of your claim, when the turn was claimed"`
		Records []recordInput `json:"records" jsonschema:"records to append to the turn's output, in order: new records or {record_id}"`
		IdemKey string        `json:"idempotency_key,omitempty" jsonschema:"a retry with the same key returns the first answer and writes nothing"`
	}
	turnCloseArgs struct {
		TurnID  string `json:"turn_id" jsonschema:"the open turn"`
		Epoch   *int64 `json:"epoch,omitempty" jsonschema:"the epoch of your claim, when the turn was claimed"`
		Status  string `json:"status,omitempty" enum:"turn_status" jsonschema:"complete (default) or failed"`
		IdemKey string `json:"idempotency_key,omitempty" jsonschema:"a retry with the same key returns the first answer and writes nothing"`
	}
	memoryPutArgs struct {
		Scope       string            `json:"scope" jsonschema:"the memory scope (a slug); nothing crosses scopes"`
		Kind        string            `json:"kind" enum:"node_kind" jsonschema:"the node kind: episode, note, belief, value, goal, drive, relationship, fact, decision, preference, procedure, execution, claim, feedback or trace_pointer (or a kind the deployment added)"`
		ID          string            `json:"id,omitempty" jsonschema:"node id (letters, digits, . _ -); omitted: a new UUIDv7. An existing id makes a new version"`
		Title       *string           `json:"title,omitempty" jsonschema:"a short title (a title hit outranks a summary hit in search)"`
		Summary     string            `json:"summary" jsonschema:"what the memory says; a new version of an existing node resends it (the current summary, or a new one)"`
		Lifecycle   *string           `json:"lifecycle,omitempty" enum:"lifecycle" jsonschema:"active, candidate (default), contested, suppressed, archived, retired, blocked or rehydrate_required"`
		Authority   *string           `json:"authority,omitempty" enum:"authority" jsonschema:"verified, trusted, advisory, unknown (default) or rejected"`
		Confidence  *float64          `json:"confidence,omitempty" jsonschema:"0 to 1 (default 0.5)"`
		TargetFiles []string          `json:"target_files,omitempty" jsonschema:"files the memory is about"`
		PayloadRef  *string           `json:"payload_ref,omitempty" jsonschema:"where the full payload lives, for memory that must be rehydrated"`
		Owner       *string           `json:"owner,omitempty" jsonschema:"an identity such as agent:bmo"`
		SourceType  *string           `json:"source_type,omitempty" enum:"source_type" jsonschema:"direct_experience (default), promote, inference, told_by_agent, consolidation, revision or unknown"`
		DerivedFrom []string          `json:"derived_from,omitempty" jsonschema:"refs it derives from: record:<id> or nodes of this scope (kind:id)"`
		Metadata    map[string]string `json:"metadata,omitempty" jsonschema:"string to string labels"`
		Reason      string            `json:"reason,omitempty" jsonschema:"kept in the confidence history when confidence changes"`
		IdemKey     string            `json:"idempotency_key,omitempty" jsonschema:"a retry with the same key returns the first answer and writes nothing"`
	}
	memorySearchArgs struct {
		Scope         string   `json:"scope" jsonschema:"the memory scope"`
		Q             string   `json:"q,omitempty" jsonschema:"query words, matched against title, summary, target files, id and metadata"`
		Kind          string   `json:"kind,omitempty" enum:"node_kind" jsonschema:"only this node kind"`
		Lifecycle     string   `json:"lifecycle,omitempty" enum:"lifecycle" jsonschema:"only this lifecycle (active, candidate, ...)"`
		Authority     string   `json:"authority,omitempty" enum:"authority" jsonschema:"only this authority (verified, trusted, ...)"`
		TargetFile    string   `json:"target_file,omitempty" jsonschema:"only nodes about this file"`
		Owner         string   `json:"owner,omitempty" jsonschema:"only nodes owned by this identity"`
		MinConfidence *float64 `json:"min_confidence,omitempty" jsonschema:"only nodes with at least this confidence (0 to 1)"`
		Limit         int      `json:"limit,omitempty" jsonschema:"1 to 1000 (default 100)"`
		Mode          string   `json:"mode,omitempty" enum:"search_mode" jsonschema:"lexical (by words), semantic (by meaning) or hybrid (both; the default when kurad has an embedder)"`
	}
	memoryTraceArgs struct {
		Scope     string `json:"scope" jsonschema:"the memory scope"`
		Ref       string `json:"ref" jsonschema:"a node ref kind:id (e.g. belief:b1) or record:<id>"`
		Direction string `json:"direction,omitempty" enum:"direction" jsonschema:"backward (where it came from), forward (what derives from it) or both (default)"`
		Depth     int    `json:"depth,omitempty" jsonschema:"1 to 10 (default 3)"`
	}
	evidenceArgs struct {
		Scope string `json:"scope" jsonschema:"the memory scope"`
		Ref   string `json:"ref" jsonschema:"the node ref, e.g. belief:b1"`
	}
	contextCompileArgs struct {
		Scope        string   `json:"scope" jsonschema:"the memory scope to compile"`
		Query        string   `json:"query,omitempty" jsonschema:"what the agent is about to do; ranks memory by it"`
		BudgetBytes  int      `json:"budget_bytes,omitempty" jsonschema:"byte budget of the bundle's items, at most 16777216 (budget is accepted as its alias; omitted: 1 MiB)"`
		Budget       int      `json:"budget,omitempty" jsonschema:"alias of budget_bytes"`
		TargetFiles  []string `json:"target_files,omitempty" jsonschema:"rank memory about these files first"`
		Kinds        []string `json:"kinds,omitempty" enum:"node_kind" jsonschema:"only these node kinds"`
		MaxPerBucket *int     `json:"max_per_bucket,omitempty" jsonschema:"keep at most this many items per bucket (0 keeps none; omitted: 1000)"`
		MaxTrace     *int     `json:"max_trace,omitempty" jsonschema:"list at most this many nodes in the trace, the first of the order (0 lists none; omitted: 100000; the rest count in trace_omitted)"`
		AsOf         string   `json:"as_of,omitempty" jsonschema:"RFC 3339 time: compile the memory as it was then"`
		Redact       *bool    `json:"redact,omitempty" jsonschema:"replace secret-like strings by [REDACTED] (default true)"`
		IdemKey      string   `json:"idempotency_key,omitempty" jsonschema:"a retry with the same key returns the first answer and writes nothing"`
	}
	kbLookupArgs struct {
		KB    string `json:"kb" jsonschema:"the knowledge base name (a slug)"`
		Q     string `json:"q" jsonschema:"the question, in any words: entries whose identifier holds every word (else a key equal to it) come first, then the best-ranked others"`
		Scope string `json:"scope,omitempty" jsonschema:"the knowledge base scope (default: the default scope)"`
		Mode  string `json:"mode,omitempty" enum:"kb_lookup_mode" jsonschema:"ranked (default: strict matches, then the best-ranked others) or strict (the strict matches only)"`
		Limit int    `json:"limit,omitempty" jsonschema:"entries at most (default 100)"`
	}
	kbSearchArgs struct {
		KB    string `json:"kb" jsonschema:"the knowledge base name (a slug)"`
		Q     string `json:"q" jsonschema:"the question, in any words"`
		Scope string `json:"scope,omitempty" jsonschema:"the knowledge base scope (default: the default scope)"`
		Limit int    `json:"limit,omitempty" jsonschema:"1 to 1000 (default 100)"`
	}
	kbPutArgs struct {
		KB         string   `json:"kb" jsonschema:"the knowledge base name (a slug)"`
		Scope      string   `json:"scope,omitempty" jsonschema:"the knowledge base scope (default: the default scope)"`
		Identifier string   `json:"identifier" jsonschema:"the entry's identifier (up to 512 characters); an existing one is replaced by a new version"`
		Keys       []string `json:"keys,omitempty" jsonschema:"up to 32 keys of up to 128 characters (default none)"`
		Value      string   `json:"value" jsonschema:"the entry's text (up to 65536 characters)"`
		IdemKey    string   `json:"idempotency_key,omitempty" jsonschema:"a retry with the same key returns the first answer and writes nothing"`
	}
)

// Answer types the API writes that have no named Go type.
type (
	ledgerPage struct {
		Ledgers    []kura.Ledger `json:"ledgers"`
		NextCursor string        `json:"next_cursor,omitempty"`
	}
	searchAnswer struct {
		Results  []kura.SearchResult `json:"results"`
		Warnings []string            `json:"warnings,omitempty"`
	}
)

// tools are Kura's MCP tools; their names are part of the contract.
var tools = []spec{
	{
		name: "record_put", title: "Write a record",
		description: "Write one raw entry (a record) to Kura's append-only log and return it with its id, hashes and seal. " +
			"Records are immutable and content-addressed: writing identical content again returns the existing record with deduplicated:true.",
		method: http.MethodPost, path: "/v1/records", body: true,
		args: recordPutArgs{}, out: kura.Record{}, idempotent: true,
	},
	{
		name: "record_get", title: "Read a record",
		description: "Read one record by id: type, content, author, metadata, hashes and seal.",
		method:      http.MethodGet, path: "/v1/records/{id}",
		args: recordGetArgs{}, out: kura.Record{}, readOnly: true,
	},
	{
		name: "ledger_verify", title: "Verify a ledger",
		description: "Recompute every record's hashes and seal, the Merkle root, the ledger hash and its signature. " +
			"ok is false, with the mismatches listed, when anything stored was altered.",
		method: http.MethodGet, path: "/v1/ledgers/{id}/verify",
		args: ledgerVerifyArgs{}, out: kura.Verification{}, readOnly: true,
	},
	{
		name: "session_log", title: "List a session's ledgers",
		description: "List a session's ledgers from its head back, following first parents (like git log): each turn's context and output ledgers.",
		method:      http.MethodGet, path: "/v1/sessions/{session_id}/log", query: []string{"limit", "cursor"},
		args: sessionLogArgs{}, out: ledgerPage{}, readOnly: true,
	},
	{
		name: "turn_open", title: "Open a turn",
		description: "Open a turn in a session: kurad builds its context ledger from the instruction, the given context records, " +
			"optionally the session scope's admitted memory, and the previous turn's deliverable, and moves the session head to it. One open turn per session.",
		method: http.MethodPost, path: "/v1/sessions/{session_id}/turns", body: true,
		args: turnOpenArgs{}, out: kura.Turn{},
	},
	{
		name: "turn_append", title: "Append to a turn",
		description: "Append records to an open turn's output, in order (new records or existing ones by record_id). The context ledger never changes.",
		method:      http.MethodPost, path: "/v1/turns/{turn_id}/records", body: true,
		args: turnAppendArgs{}, out: kura.TurnAppendResult{},
	},
	{
		name: "turn_close", title: "Close a turn",
		description: "Close a turn: seal its output ledger, move the session head to it, and extract every memory.fact and " +
			"memory.decision record of the output into a candidate memory node of the session's scope.",
		method: http.MethodPost, path: "/v1/turns/{turn_id}/close", body: true,
		args: turnCloseArgs{}, out: kura.Turn{},
	},
	{
		name: "memory_put", title: "Write a memory node",
		description: "Write a memory node (a fact, belief, decision, episode...) in a scope, or a new version of an existing one " +
			"(same kind and id): an update resends the summary, and the other fields it leaves out keep their value. " +
			"derived_from records where it came from, for memory_trace and get_belief_evidence.",
		method: http.MethodPost, path: "/v1/scopes/{scope}/memory/nodes", body: true,
		args: memoryPutArgs{}, out: kura.Node{},
	},
	{
		name: "memory_search", title: "Search memory",
		description: "Search a scope's memory nodes, best first, each result with its score and the reasons for it (semantic_match: found by meaning). " +
			"warnings says when a search by meaning fell back to words. Reads only.",
		method: http.MethodGet, path: "/v1/scopes/{scope}/memory/search",
		query: []string{"q", "kind", "lifecycle", "authority", "target_file", "owner", "min_confidence", "limit", "mode"},
		args:  memorySearchArgs{}, out: searchAnswer{}, readOnly: true,
	},
	{
		name: "memory_trace", title: "Trace provenance",
		description: "Show where a memory came from (backward: the nodes and raw records it derives from) and what was derived from it (forward), as a tree to the given depth.",
		method:      http.MethodGet, path: "/v1/scopes/{scope}/provenance/{ref}", query: []string{"direction", "depth"},
		args: memoryTraceArgs{}, out: kura.Trace{}, readOnly: true,
	},
	{
		name: "get_belief_evidence", title: "Evidence behind a belief",
		description: "List the evidence behind a memory node, transitively and each once: the episodes, the notes and the raw entries (records) it rests on.",
		method:      http.MethodGet, path: "/v1/scopes/{scope}/provenance/{ref}/evidence",
		args: evidenceArgs{}, out: kura.Evidence{}, readOnly: true,
	},
	{
		name: "context_compile", title: "Compile context",
		description: "Compile a scope's memory into a context bundle for the task at hand: use_now (active, authoritative), " +
			"inspect_before_use, rehydrate and do_not_use (superseded, contradicted, suppressed...), with a reason per node. " +
			"kurad keeps the bundle as a receipt; its digest lets anyone check it.",
		method: http.MethodPost, path: "/v1/scopes/{scope}/context/compile", body: true,
		rename: map[string]string{"budget": "budget_bytes"},
		args:   contextCompileArgs{}, out: admission.Bundle{},
	},
	{
		name: "kb_lookup", title: "Look up a knowledge base",
		description: "Ask a knowledge base a question in your own words and get the relevant entries as plain text: entries whose identifier holds every word of the question " +
			"(else entries with a key equal to it) first, then the best-ranked entries holding some of its words (stems match, a misspelt name is corrected).",
		method: http.MethodGet, path: "/v1/kb/{kb}/lookup", query: []string{"scope", "q", "mode", "limit"},
		args: kbLookupArgs{}, text: true, readOnly: true,
	},
	{
		name: "kb_search", title: "Search a knowledge base",
		description: "Rank a knowledge base's entries for a question in any words, best first, each entry with its score and which of its fields matched which words. Reads only.",
		method:      http.MethodGet, path: "/v1/kb/{kb}/search", query: []string{"scope", "q", "limit"},
		args: kbSearchArgs{}, out: kura.KBSearchPage{}, readOnly: true,
	},
	{
		name: "kb_put", title: "Write a knowledge-base entry",
		description: "Create or replace (as a new version; history is kept) the entry with this exact identifier in a knowledge base.",
		method:      http.MethodPut, path: "/v1/kb/{kb}/entries", body: true,
		args: kbPutArgs{}, out: kura.KBEntry{}, idempotent: true,
	},
}
