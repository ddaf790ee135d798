package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/kura-memory/kura/internal/kura"
)

// The event types kurad writes (API.md, "Events"), for EventQuery.Types
// and Event.Type.
const (
	EventRecordWritten   = kura.EventRecordWritten
	EventRecordRedacted  = kura.EventRecordRedacted
	EventLedgerWritten   = kura.EventLedgerWritten
	EventSessionCreated  = kura.EventSessionCreated
	EventSessionHead     = kura.EventSessionHead
	EventTurnOpened      = kura.EventTurnOpened
	EventTurnClaimed     = kura.EventTurnClaimed
	EventTurnComplete    = kura.EventTurnComplete
	EventMemoryNode      = kura.EventMemoryNode
	EventMemoryRelation  = kura.EventMemoryRelation
	EventMemoryLifecycle = kura.EventMemoryLifecycle
	EventMemoryFeedback  = kura.EventMemoryFeedback
	EventContextCompiled = kura.EventContextCompiled
	EventKBChanged       = kura.EventKBChanged
	EventLogAcknowledged = kura.EventLogAcknowledged
	// EventDispatch is both the type of the dispatch command in the event
	// log and its action: CommandSubject(project, target, EventDispatch).
	EventDispatch = kura.EventDispatch
)

// SubjectRoot begins every NATS subject kurad publishes or serves.
const SubjectRoot = kura.SubjectRoot

// EventSubject is the NATS subject kurad publishes events of type typ of a
// project on, e.g. "oclaw.v1.hashi.evt.record.written".
func EventSubject(project, typ string) string { return kura.EventSubject(project, typ) }

// CommandSubject is the NATS subject a command to target's action goes to,
// e.g. "oclaw.v1.hashi.cmd.worker.dispatch".
func CommandSubject(project, target, action string) string {
	return kura.CommandSubject(project, target, action)
}

// Event is one pointer of the event log, as the feed, the stream and NATS
// carry it: seq, type, project, time and the ids of what changed. The pointer
// is all an event says; fetch the record, turn or ledger it names for more.
// One decoded from a NATS message is a doorbell, not proof that kurad wrote
// it: resume (and save your position) only from seqs Events or StreamEvents
// returned.
type Event struct {
	Seq     int64
	Type    string // e.g. "record.written", "turn.complete", "dispatch"
	Project string
	At      string // RFC 3339, nine fractional digits
	// Refs holds every other key of the pointer: record_id, ledger_id,
	// session_id, turn_id, context_ledger_id, output_ledger_id, head_hash...
	// and, on turn.complete, status: how the turn ended (TurnComplete,
	// TurnFailed or TurnTimeout). A value that is not a JSON string is kept
	// as its JSON text.
	Refs map[string]string
	// Raw is the pointer exactly as kurad sent it, for callers that pass
	// events on (kura events --json prints it).
	Raw json.RawMessage
}

// UnmarshalJSON reads a flat pointer object. Keys it does not know go to
// Refs rather than being dropped: new event types bring new ids, and a
// client must not need an upgrade to see them.
func (e *Event) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("event: %w", err)
	}
	if m == nil {
		return errors.New("event: not a JSON object")
	}
	out := Event{Refs: make(map[string]string, len(m)), Raw: append(json.RawMessage(nil), bytes.TrimSpace(b)...)}
	str := func(k string, v json.RawMessage, dst *string) error {
		if err := json.Unmarshal(v, dst); err != nil {
			return fmt.Errorf("event: %s is not a string", k)
		}
		return nil
	}
	for k, v := range m {
		var err error
		switch k {
		case "seq":
			// Callers resume from Seq: a missing or mangled one would
			// silently restart them from the beginning.
			if err = json.Unmarshal(v, &out.Seq); err != nil || out.Seq <= 0 {
				return fmt.Errorf("event: seq %s is not a positive integer", v)
			}
		case "type":
			err = str(k, v, &out.Type)
		case "project":
			err = str(k, v, &out.Project)
		case "at":
			err = str(k, v, &out.At)
		default:
			var s string
			if json.Unmarshal(v, &s) != nil {
				s = string(v)
			}
			out.Refs[k] = s
		}
		if err != nil {
			return err
		}
	}
	if out.Seq == 0 {
		return errors.New("event: seq is missing")
	}
	*e = out
	return nil
}

// MarshalJSON writes the pointer back in its wire form, so that an Event
// (or an EventPage) re-encodes as what kurad sent.
func (e Event) MarshalJSON() ([]byte, error) {
	if len(e.Raw) > 0 {
		return e.Raw, nil
	}
	m := make(map[string]any, len(e.Refs)+4)
	for k, v := range e.Refs {
		m[k] = v
	}
	m["seq"], m["type"], m["project"], m["at"] = e.Seq, e.Type, e.Project, e.At
	return json.Marshal(m)
}

// EventPage is one answer of the event feed. NextAfter is what to pass as
// After next time, also when Events is empty: a filter may have skipped
// events the caller never needs to scan again. LastSeq is the newest
// committed event; NextAfter < LastSeq means more may be waiting.
type EventPage struct {
	Events    []Event `json:"events"`
	NextAfter int64   `json:"next_after"`
	LastSeq   int64   `json:"last_seq"`
	// CompactedThrough is set when After lay before the event log's
	// compaction checkpoint: the events up to it are gone, and a reader
	// that needed them has missed them.
	CompactedThrough int64 `json:"compacted_through,omitempty"`
}

// EventQuery selects events: those with seq > After, oldest first. Zero
// values leave the server's defaults (limit 100, every type and project,
// no wait).
type EventQuery struct {
	After   int64
	Limit   int      // page size (feed) or read size (stream), at most 1000
	Types   []string // event types, e.g. "record.written"; unknown ones are invalid_argument
	Project string
	// Wait makes Events long-poll: when nothing matches yet, kurad answers
	// at the first matching commit or after Wait (at most 60 s on its side),
	// possibly with an empty page. Ignored by StreamEvents.
	Wait time.Duration
}

func (q EventQuery) values() url.Values {
	v := url.Values{}
	// Sent even when 0: without after= the stream would resume from a
	// Last-Event-ID header instead, and a query should say what it means.
	v.Set("after", strconv.FormatInt(q.After, 10))
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if len(q.Types) > 0 {
		v.Set("type", strings.Join(q.Types, ","))
	}
	if q.Project != "" {
		v.Set("project", q.Project)
	}
	if q.Wait > 0 {
		v.Set("wait", q.Wait.String())
	}
	return v
}

// Events returns one page of the event log (GET /v1/events). With q.Wait it
// long-polls; the wait is bounded by ctx and by kurad, and an HTTP client
// timeout set through WithHTTPClient is stretched by q.Wait for this call
// so that it bounds a hung server, not the wait that was asked for.
func (c *Client) Events(ctx context.Context, q EventQuery) (*EventPage, error) {
	cc := c
	if q.Wait > 0 && c.http.Timeout > 0 {
		cc = c.withTimeout(c.http.Timeout + q.Wait)
	}
	var out EventPage
	if err := cc.do(ctx, "list events", http.MethodGet, "/v1/events", q.values(), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// withTimeout returns a copy of c whose HTTP client has timeout d (0: none).
// The copy shares the transport, so connections are still pooled.
func (c *Client) withTimeout(d time.Duration) *Client {
	hc := *c.http
	hc.Timeout = d
	cc := *c
	cc.http = &hc
	return &cc
}

// ErrStreamEnded is returned (wrapped) by StreamEvents when an event stream
// that had started ends: kurad shut down, or the connection dropped.
// Resuming with After set to the last seq handled loses and repeats nothing.
var ErrStreamEnded = errors.New("event stream ended")

// maxStreamLine bounds one line of the stream. A pointer is under 512 bytes;
// the margin is for error frames and future ids, not for a runaway server.
const maxStreamLine = 1 << 20

// StreamEvents follows the event log as Server-Sent Events
// (GET /v1/events/stream): it calls fn for every matching event with
// seq > q.After, in seq order, first those already committed, then each new
// one as it commits, until ctx is done, fn returns an error, or the stream
// ends. It returns fn's error as it is, ctx's error, a *Error when kurad
// refuses the request or reports a failure inside the stream, or an error
// wrapping ErrStreamEnded.
//
// StreamEvents never reconnects by itself: the caller knows which events it
// has handled, so it resumes by calling again with After = the last Seq fn
// accepted. The HTTP client's timeout, if any, does not apply: a stream is
// meant to stay open, and ctx bounds it.
func (c *Client) StreamEvents(ctx context.Context, q EventQuery, fn func(Event) error) error {
	const op = "stream events"
	q.Wait = 0 // a stream waits by nature; wait= is the feed's
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/v1/events/stream?"+q.values().Encode(), nil)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	req.Header.Set("Accept", "text/event-stream")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	hc := c.http
	if hc.Timeout > 0 {
		hc = c.withTimeout(0).http
	}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%s: %w", op, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return decodeError(resp)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		// A proxy's page or a JSON answer would otherwise read as an
		// endless run of ignored lines.
		return kura.Errorf(kura.EInternal, "kurad answered %q, not an event stream", resp.Header.Get("Content-Type"))
	}

	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 4096), maxStreamLine)
	var name string
	var data []byte
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			// A blank line ends a frame (the SSE rule); frames without
			// data, such as a lone id, carry nothing to hand over.
			if len(data) > 0 {
				if err := dispatchFrame(name, data, fn); err != nil {
					return err
				}
			}
			name, data = "", data[:0]
			continue
		}
		if line[0] == ':' {
			continue // a comment: the greeting and keepalives
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			name = string(value)
		case "data":
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, value...)
		}
		// "id" repeats the seq that data carries; "retry" is for browsers
		// that reconnect by themselves, which this client does not.
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w: %w", op, ErrStreamEnded, err)
	}
	return fmt.Errorf("%s: %w", op, ErrStreamEnded)
}

// dispatchFrame hands one complete frame to fn, or turns an error frame
// into the *Error it carries.
func dispatchFrame(name string, data []byte, fn func(Event) error) error {
	if name == "error" {
		var env struct {
			Error *kura.Error `json:"error"`
		}
		if err := json.Unmarshal(data, &env); err == nil && env.Error != nil && env.Error.Code != "" {
			return env.Error
		}
		return kura.Errorf(kura.EInternal, "kurad ended the event stream with an error frame: %.200s", data)
	}
	var e Event
	if err := json.Unmarshal(data, &e); err != nil {
		return kura.Errorf(kura.EInternal, "stream events: malformed event %.200s: %v", data, err)
	}
	return fn(e)
}
