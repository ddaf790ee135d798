package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/kura-memory/kura/internal/kura"
)

// TurnListOptions filters and pages GET /v1/turns. Zero values are left out
// of the query: the server's defaults apply.
type TurnListOptions struct {
	SessionID string // only turns of this session
	State     string // open, complete, failed or timeout
	Limit     int    // page size, at most 1000
	Cursor    string // NextCursor of the previous page
}

func (o TurnListOptions) query() url.Values {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("session_id", o.SessionID)
	set("state", o.State)
	set("cursor", o.Cursor)
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	return q
}

// TurnPage is one page of turns; NextCursor is empty on the last page.
type TurnPage struct {
	Turns      []Turn `json:"turns"`
	NextCursor string `json:"next_cursor,omitempty"`
}

// recordRefWire is a RecordRef as the contract writes it: either
// {"record_id"} alone or a record input, never the empty fields of the other.
// kura.RecordRef embeds RecordInput, whose zero fields would otherwise go out
// as "type":"","content":null next to a record_id.
type recordRefWire struct {
	RecordID string            `json:"record_id,omitempty"`
	Type     string            `json:"type,omitempty"`
	Content  json.RawMessage   `json:"content,omitempty"`
	AuthorID string            `json:"author_id,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

func wireRefs(refs []RecordRef) []recordRefWire {
	out := make([]recordRefWire, len(refs))
	for i, r := range refs {
		out[i] = recordRefWire{RecordID: r.RecordID, Type: r.Type, Content: r.Content, AuthorID: r.AuthorID, Metadata: r.Metadata}
	}
	return out
}

type turnOpenWire struct {
	Instruction     *RecordInput    `json:"instruction"`
	Context         []recordRefWire `json:"context,omitempty"`
	Memory          *MemoryRequest  `json:"memory,omitempty"`
	Dispatch        string          `json:"dispatch,omitempty"`
	DeadlineSeconds int             `json:"deadline_seconds,omitempty"`
}

type turnAppendWire struct {
	Epoch   *int64          `json:"epoch,omitempty"`
	Records []recordRefWire `json:"records"`
}

type turnCloseWire struct {
	Epoch  *int64 `json:"epoch,omitempty"`
	Status string `json:"status,omitempty"`
	// kurad's own, from the token: never sent.
	Closer        kura.Writer `json:"-"`
	MayWriteScope bool        `json:"-"`
}

// OpenTurn opens a turn on a session (POST /v1/sessions/{id}/turns): kurad
// builds the context ledger (instruction, context records, memory when asked,
// the previous output's deliverables) and moves the head to it. A session
// holds one open turn at a time (conflict otherwise).
func (c *Client) OpenTurn(ctx context.Context, sessionID string, in TurnOpenInput) (*Turn, error) {
	if isEmpty(sessionID) {
		return nil, errMissingID("session id")
	}
	body := turnOpenWire{Instruction: in.Instruction, Memory: in.Memory, Dispatch: in.Dispatch, DeadlineSeconds: in.DeadlineSeconds}
	if len(in.Context) > 0 {
		body.Context = wireRefs(in.Context)
	}
	var out Turn
	if err := c.do(ctx, "open turn", http.MethodPost, "/v1/sessions/"+esc(sessionID)+"/turns", nil, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ClaimTurn claims a turn for a worker (POST /v1/turns/{id}/claim). The
// lease's Epoch must go with every later write of that worker; claiming a
// turn whose lease has not expired is a conflict.
func (c *Client) ClaimTurn(ctx context.Context, id string, in TurnClaim) (*Lease, error) {
	if isEmpty(id) {
		return nil, errMissingID("turn id")
	}
	var out Lease
	if err := c.do(ctx, "claim turn", http.MethodPost, "/v1/turns/"+esc(id)+"/claim", nil, in, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RenewTurn extends a claim (POST /v1/turns/{id}/renew); a stale epoch is a
// conflict.
func (c *Client) RenewTurn(ctx context.Context, id string, in TurnRenew) (*Lease, error) {
	if isEmpty(id) {
		return nil, errMissingID("turn id")
	}
	var out Lease
	if err := c.do(ctx, "renew turn", http.MethodPost, "/v1/turns/"+esc(id)+"/renew", nil, in, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// AppendTurn appends records, new or existing, to a turn's output, in order
// (POST /v1/turns/{id}/records). in.Epoch is required once the turn has been
// claimed; a stale epoch, or a turn that is not open, is a conflict and
// nothing is written.
func (c *Client) AppendTurn(ctx context.Context, id string, in TurnAppend) (*TurnAppendResult, error) {
	if isEmpty(id) {
		return nil, errMissingID("turn id")
	}
	body := turnAppendWire{Epoch: in.Epoch, Records: wireRefs(in.Records)}
	var out TurnAppendResult
	if err := c.do(ctx, "append to turn", http.MethodPost, "/v1/turns/"+esc(id)+"/records", nil, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// CloseTurn closes a turn (POST /v1/turns/{id}/close): kurad seals the output
// ledger, moves the head to it and extracts memory. The answer carries
// OutputLedgerID, HeadHash and the Extracted node refs.
func (c *Client) CloseTurn(ctx context.Context, id string, in TurnClose) (*Turn, error) {
	if isEmpty(id) {
		return nil, errMissingID("turn id")
	}
	var out Turn
	if err := c.do(ctx, "close turn", http.MethodPost, "/v1/turns/"+esc(id)+"/close", nil, turnCloseWire(in), &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetTurn returns a turn with its output record ids so far
// (GET /v1/turns/{id}).
func (c *Client) GetTurn(ctx context.Context, id string) (*Turn, error) {
	if isEmpty(id) {
		return nil, errMissingID("turn id")
	}
	var out Turn
	if err := c.do(ctx, "get turn", http.MethodGet, "/v1/turns/"+esc(id), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListTurns returns one page of turns (GET /v1/turns).
func (c *Client) ListTurns(ctx context.Context, opts TurnListOptions) (*TurnPage, error) {
	var out TurnPage
	if err := c.do(ctx, "list turns", http.MethodGet, "/v1/turns", opts.query(), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
