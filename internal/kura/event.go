package kura

import (
	"encoding/json"
	"slices"
	"strconv"
)

// Event is one row of the event log: the audit trail and the outbox the
// doorbell publishes from. Refs holds the ids the event points at.
type Event struct {
	Seq       int64             `json:"seq"`
	ID        string            `json:"id"`
	Type      string            `json:"type"`
	Project   string            `json:"project"`
	Subject   string            `json:"subject"`
	Refs      map[string]string `json:"refs"`
	CreatedAt string            `json:"at"`
	// Digest is the hash of what the event names, committed to by its
	// leaf in the log; not part of the pointer payload.
	Digest string `json:"-"`
	// Mismatch says the stored event no longer hashes to its leaf in the
	// log: it was changed after it was committed.
	Mismatch bool `json:"-"`
}

// Pointer renders the pointer payload published on NATS and served by the
// event feed: seq, type, project, at and the ids, nothing else. An event
// that no longer matches its log leaf is served without its ids, with
// "mismatch":true: what it points at is not what the log commits to, and a
// consumer must not act on it (its seq, type, project and time are as
// stored, so that filters and resumption work as for any event).
func (e *Event) Pointer() json.RawMessage {
	if e.Mismatch {
		b, _ := json.Marshal(map[string]any{"seq": e.Seq, "type": e.Type, "project": e.Project, "at": e.CreatedAt, "mismatch": true})
		return b
	}
	if b, ok := e.plainPointer(); ok {
		return b
	}
	return e.pointerMap()
}

// plainPointer writes the pointer directly when every string in it is
// plain (printable ASCII that encoding/json writes as it is: no quote,
// backslash, <, > or &), as the ids, slugs, types and times kurad writes
// are: the same bytes pointerMap writes, without a map and reflection,
// for a page of a thousand events. ok is false for anything else.
func (e *Event) plainPointer() (json.RawMessage, bool) {
	if !plainJSON(e.Type) || !plainJSON(e.Project) || !plainJSON(e.CreatedAt) {
		return nil, false
	}
	keys := make([]string, 0, len(e.Refs)+4)
	n := 64 + len(e.Type) + len(e.Project) + len(e.CreatedAt)
	for k, v := range e.Refs {
		switch k {
		case "at", "project", "seq", "type":
			return nil, false // the event's own field wins: pointerMap
		}
		if !plainJSON(k) || !plainJSON(v) {
			return nil, false
		}
		keys = append(keys, k)
		n += len(k) + len(v) + 6
	}
	keys = append(keys, "at", "project", "seq", "type")
	slices.Sort(keys)
	b := make([]byte, 0, n)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(append(b, '"'), k...), `":`...)
		switch k {
		case "at":
			b = append(append(append(b, '"'), e.CreatedAt...), '"')
		case "project":
			b = append(append(append(b, '"'), e.Project...), '"')
		case "seq":
			b = strconv.AppendInt(b, e.Seq, 10)
		case "type":
			b = append(append(append(b, '"'), e.Type...), '"')
		default:
			b = append(append(append(b, '"'), e.Refs[k]...), '"')
		}
	}
	return append(b, '}'), true
}

// plainJSON says whether encoding/json writes s as it is between quotes.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// pointerMap is the pointer as encoding/json writes it from a map: the
// definition plainPointer keeps to.
func (e *Event) pointerMap() json.RawMessage {
	m := make(map[string]any, len(e.Refs)+4)
	for k, v := range e.Refs {
		m[k] = v
	}
	m["seq"] = e.Seq
	m["type"] = e.Type
	m["project"] = e.Project
	m["at"] = e.CreatedAt
	b, _ := json.Marshal(m)
	return b
}

// SubjectRoot begins every NATS subject kurad publishes or serves. "oclaw"
// is the agent platform the doorbell was designed for (shared/API.md,
// "Doorbell"); "v1" the version of its subject layout, so a subscriber can
// tell a later, incompatible layout from this one.
const SubjectRoot = "oclaw.v1"

// The event types kurad writes (shared/API.md, "Events").
const (
	EventRecordWritten  = "record.written"
	EventRecordRedacted = "record.redacted"
	EventLedgerWritten  = "ledger.written"
	EventSessionCreated = "session.created"
	EventSessionHead    = "session.head"
	EventTurnOpened     = "turn.opened"
	EventTurnClaimed    = "turn.claimed"
	EventTurnComplete   = "turn.complete"
	// EventMemoryNode and EventMemoryLifecycle both mark a new node
	// version: a write or revision, and a lifecycle transition.
	EventMemoryNode      = "memory.node"
	EventMemoryLifecycle = "memory.lifecycle"
	EventMemoryRelation  = "memory.relation"
	EventMemoryFeedback  = "memory.feedback"
	EventContextCompiled = "context.compiled"
	EventKBChanged       = "kb.changed"
	// EventLogAcknowledged records an admin's acknowledgement of a
	// rollback or fork a witness reported (project LogProject).
	EventLogAcknowledged = "log.acknowledged"
	// EventDispatch is the command a turn opened with a dispatch target
	// publishes on CommandSubject(project, target, EventDispatch); the
	// event log keeps it under this type like any event.
	EventDispatch = "dispatch"
)

// LogProject is the project of the log's own subjects:
// oclaw.v1._log.evt.checkpoint and oclaw.v1._log.evt.log.acknowledged.
const LogProject = "_log"

// CheckpointSubject is where kurad publishes its signed checkpoints.
const CheckpointSubject = SubjectRoot + "." + LogProject + ".evt.checkpoint"

// CheckpointType is the "type" of a checkpoint's NATS message. It is not an
// event type: a checkpoint has no seq and is not in the event log.
const CheckpointType = "log.checkpoint"

// EventSubject returns the NATS subject of an event type for a project, e.g.
// "oclaw.v1.hashi.evt.record.written".
func EventSubject(project, typ string) string {
	return SubjectRoot + "." + project + ".evt." + typ
}

// CommandSubject returns the subject a command to target's action goes
// to, e.g. "oclaw.v1.hashi.cmd.worker.dispatch".
func CommandSubject(project, target, action string) string {
	return SubjectRoot + "." + project + ".cmd." + target + "." + action
}

// NATSClusterInfo describes the NATS cluster the embedded server joins.
type NATSClusterInfo struct {
	Name       string `json:"name"`
	ServerName string `json:"server_name"`
	Addr       string `json:"addr"` // where it listens for routes
	// Routes is the number of peers connected now.
	Routes int `json:"routes"`
}

// Info is the answer of GET /v1/info.
type Info struct {
	Version       string           `json:"version"`
	SchemaVersion int              `json:"schema_version"`
	LastEventSeq  int64            `json:"last_event_seq"`
	Counts        map[string]int64 `json:"counts"`
	NATS          struct {
		Addr string `json:"addr"`
		// Cluster is set when the embedded server joins other kurads'.
		Cluster *NATSClusterInfo `json:"cluster,omitempty"`
	} `json:"nats"`
	Outbox      *OutboxInfo `json:"outbox,omitempty"`
	PublicKey   string      `json:"public_key"`
	RecordTypes []string    `json:"record_types"`
	// NodeKinds is the memory node vocabulary kurad accepts.
	NodeKinds []string `json:"node_kinds"`
	StartedAt string   `json:"started_at"`
	// CompactedThrough: every event with seq <= it was compacted away.
	CompactedThrough int64 `json:"compacted_through"`
	// RedactionPurge is "pending" while the content of a redacted record
	// may still be in the database files (a reader kept the WAL from being
	// truncated; kurad retries), else "complete".
	RedactionPurge string `json:"redaction_purge"`
	// Embedder is the state of the embeddings endpoint semantic search
	// uses; absent when none is configured.
	Embedder *EmbedderInfo `json:"embedder,omitempty"`
	// LogOrigin names the Merkle log (its checkpoints' first line);
	// LogVKey is the note verifier key its checkpoints are signed with.
	LogOrigin string     `json:"log_origin,omitempty"`
	LogVKey   string     `json:"log_vkey,omitempty"`
	Log       *LogStatus `json:"log"`
	// IntegrityCheck is the SQLite database's check at start; absent on
	// PostgreSQL, which checks its own pages.
	IntegrityCheck *IntegrityCheckInfo `json:"integrity_check,omitempty"`
}

// The states of the full integrity check (IntegrityCheckInfo.State).
const (
	IntegrityRunning = "running" // in the background: writes are refused (503) until it passes
	IntegrityPassed  = "passed"
	IntegrityFailed  = "failed" // the database is damaged: kurad stops serving
	IntegrityOff     = "off"    // --startup-check=off: integrity not established, writes allowed
)

// IntegrityCheckInfo is what /v1/info says about the database's check at
// start: Mode is the configured --startup-check (quick: quick_check before
// serving, the full check in the background; full: the full check before
// serving; off), State one of the Integrity* states, the times those of
// the full check.
type IntegrityCheckInfo struct {
	Mode       string `json:"mode"`
	State      string `json:"state"`
	StartedAt  string `json:"started_at,omitempty"`
	FinishedAt string `json:"finished_at,omitempty"`
}

// EmbedderInfo is what /v1/info says about the embedder.
type EmbedderInfo struct {
	Model string `json:"model"`
	// Dims is the dimension count of the model's vectors, 0 until one
	// was seen.
	Dims int `json:"dims"`
	// State is "starting" (nothing asked yet), "ok" (the last request
	// answered) or "failing" (it did not; nodes wait for their vectors,
	// search falls back to words).
	State string `json:"state"`
	// Pending counts nodes without a vector of the current model for
	// their current text, as of the worker's last look.
	Pending int64 `json:"pending"`
	// Embedded counts vectors written since kurad started; Errors the
	// failed embeddings requests (the worker's and searches').
	Embedded int64 `json:"embedded"`
	Errors   int64 `json:"errors"`
	// Refused counts node texts the embedder refused alone while it
	// embedded others (too long for the model, say): those nodes stay
	// without a vector, found by words only, until their text changes.
	Refused     int64  `json:"refused"`
	LastError   string `json:"last_error,omitempty"`
	LastErrorAt string `json:"last_error_at,omitempty"`
}

// EventTypes are the event types kurad writes (API.md, "Events"); a filter
// naming any other type is refused rather than silently matching nothing.
var EventTypes = []string{
	EventRecordWritten, EventRecordRedacted, EventLedgerWritten,
	EventSessionCreated, EventSessionHead,
	EventTurnOpened, EventTurnClaimed, EventTurnComplete, EventDispatch,
	EventMemoryNode, EventMemoryRelation, EventMemoryLifecycle, EventMemoryFeedback,
	EventContextCompiled, EventKBChanged, EventLogAcknowledged,
}

// ScopedEvent reports whether events of type t carry a memory scope as
// their project (memory, context and knowledge-base events) rather than a
// project: the feed shows them to whoever may read that scope.
func ScopedEvent(t string) bool {
	switch t {
	case EventMemoryNode, EventMemoryRelation, EventMemoryLifecycle, EventMemoryFeedback,
		EventContextCompiled, EventKBChanged:
		return true
	}
	return false
}

// ValidEventType reports whether t is one of EventTypes.
func ValidEventType(t string) bool {
	for _, k := range EventTypes {
		if k == t {
			return true
		}
	}
	return false
}

// EventFilter selects events for the catch-up feed: seq > After, oldest
// first, at most Limit, optionally only some types and one project.
type EventFilter struct {
	After int64
	// Through, when set, is a seq the caller knows is committed: the page
	// ends there, and the store does not first ask for newer commits
	// (other instances' on PostgreSQL). Zero reads to the newest commit.
	Through int64
	Limit   int
	Types   []string
	Project string
	// Restricted limits the feed to what a caller may see: project events
	// of Projects, memory and context events (whose project is their
	// scope) of Scopes. A list holding "*" allows all.
	Restricted bool
	Projects   []string
	Scopes     []string
}

// EventPage is one answer of the event feed. NextAfter is the seq to pass as
// after= next time: the last event returned, or, when a filter skipped rows,
// the last seq examined, so a client never rescans what it has seen.
type EventPage struct {
	Events    []Event `json:"-"`
	NextAfter int64   `json:"next_after"`
	LastSeq   int64   `json:"last_seq"`
	// CompactedThrough is set when after= lies before the compaction
	// checkpoint: events up to it were removed and the reader missed some.
	CompactedThrough int64 `json:"compacted_through,omitempty"`
}

// OutboxInfo is the doorbell's progress in GET /v1/info: the newest
// published seq and how many committed events still wait.
type OutboxInfo struct {
	PublishedSeq int64 `json:"published_seq"`
	Lag          int64 `json:"lag"`
	// Leading: this kurad publishes the events (kurads sharing a database
	// take turns; the others report lag 0).
	Leading bool `json:"leading"`
}
