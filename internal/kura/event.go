package kura

import "encoding/json"

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
}

// Pointer renders the pointer payload published on NATS and served by the
// event feed: seq, type, project, at and the ids, nothing else.
func (e *Event) Pointer() json.RawMessage {
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

// EventSubject returns the NATS subject of an event type for a project, e.g.
// "oclaw.v1.hashi.evt.record.written".
func EventSubject(project, typ string) string {
	return "oclaw.v1." + project + ".evt." + typ
}

// Info is the answer of GET /v1/info.
type Info struct {
	Version       string           `json:"version"`
	SchemaVersion int              `json:"schema_version"`
	LastEventSeq  int64            `json:"last_event_seq"`
	Counts        map[string]int64 `json:"counts"`
	NATS          struct {
		Addr string `json:"addr"`
	} `json:"nats"`
	PublicKey   string   `json:"public_key"`
	RecordTypes []string `json:"record_types"`
	StartedAt   string   `json:"started_at"`
}
