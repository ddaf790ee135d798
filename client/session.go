package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

// SessionListOptions filters and pages GET /v1/sessions. Zero values are
// left out of the query: the server's defaults apply.
type SessionListOptions struct {
	Project string // only sessions of this project
	Limit   int    // page size, at most 1000
	Cursor  string // NextCursor of the previous page
}

func (o SessionListOptions) query() url.Values {
	q := url.Values{}
	if o.Project != "" {
		q.Set("project", o.Project)
	}
	if o.Cursor != "" {
		q.Set("cursor", o.Cursor)
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	return q
}

// SessionPage is one page of sessions; NextCursor is empty on the last page.
type SessionPage struct {
	Sessions   []Session `json:"sessions"`
	NextCursor string    `json:"next_cursor,omitempty"`
}

// sessionInputWire leaves the optional fields out when empty, as the
// contract writes them ("scope"?, "from_ledger_id"?).
type sessionInputWire struct {
	Project      string `json:"project"`
	Name         string `json:"name"`
	Scope        string `json:"scope,omitempty"`
	FromLedgerID string `json:"from_ledger_id,omitempty"`
}

// CreateSession creates a session (POST /v1/sessions); with FromLedgerID set
// the new session forks from that ledger: its head starts there.
func (c *Client) CreateSession(ctx context.Context, in SessionInput) (*Session, error) {
	body := sessionInputWire{Project: in.Project, Name: in.Name, Scope: in.Scope, FromLedgerID: in.FromLedgerID}
	var out Session
	if err := c.do(ctx, "create session", http.MethodPost, "/v1/sessions", nil, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListSessions returns one page of sessions (GET /v1/sessions).
func (c *Client) ListSessions(ctx context.Context, opts SessionListOptions) (*SessionPage, error) {
	var out SessionPage
	if err := c.do(ctx, "list sessions", http.MethodGet, "/v1/sessions", opts.query(), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetSession returns the session with the given id (GET /v1/sessions/{id}).
func (c *Client) GetSession(ctx context.Context, id string) (*Session, error) {
	if isEmpty(id) {
		return nil, errMissingID("session id")
	}
	var out Session
	if err := c.do(ctx, "get session", http.MethodGet, "/v1/sessions/"+esc(id), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// FindSession returns the session of project named name, paging through
// GET /v1/sessions?project=; it is a not_found *Error when there is none.
func (c *Client) FindSession(ctx context.Context, project, name string) (*Session, error) {
	if isEmpty(project) || isEmpty(name) {
		return nil, errMissingID("session project and name")
	}
	cursor := ""
	for {
		p, err := c.ListSessions(ctx, SessionListOptions{Project: project, Limit: 1000, Cursor: cursor})
		if err != nil {
			return nil, err
		}
		for i := range p.Sessions {
			if s := &p.Sessions[i]; s.Project == project && s.Name == name {
				return s, nil
			}
		}
		if p.NextCursor == "" || p.NextCursor == cursor || len(p.Sessions) == 0 {
			return nil, (&Error{Code: ENotFound, Message: fmt.Sprintf("no session %s/%s", project, name)}).
				WithDetail("project", project).WithDetail("name", name)
		}
		cursor = p.NextCursor
	}
}

// SessionLog returns the ledgers of a session from its head following first
// parents, newest first, like git log (GET /v1/sessions/{id}/log). limit <= 0
// leaves the server's default. The ledgers come without their record ids.
func (c *Client) SessionLog(ctx context.Context, id string, limit int) ([]Ledger, error) {
	if isEmpty(id) {
		return nil, errMissingID("session id")
	}
	// The server pages by at most 1000; follow next_cursor up to limit.
	var all []Ledger
	cursor := ""
	for {
		q := url.Values{}
		page := limit - len(all)
		if limit <= 0 || page > 1000 {
			page = 1000
		}
		if limit > 0 || cursor != "" {
			q.Set("limit", strconv.Itoa(page))
		}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var out struct {
			Ledgers    []Ledger `json:"ledgers"`
			NextCursor string   `json:"next_cursor"`
		}
		if err := c.do(ctx, "session log", http.MethodGet, "/v1/sessions/"+esc(id)+"/log", q, nil, &out); err != nil {
			return nil, err
		}
		all = append(all, out.Ledgers...)
		if out.NextCursor == "" || limit <= 0 || len(all) >= limit || len(out.Ledgers) == 0 {
			return all, nil
		}
		cursor = out.NextCursor
	}
}

// Reflog returns every move of a session's head, oldest first
// (GET /v1/sessions/{id}/reflog).
func (c *Client) Reflog(ctx context.Context, id string) ([]ReflogEntry, error) {
	if isEmpty(id) {
		return nil, errMissingID("session id")
	}
	var out struct {
		Reflog []ReflogEntry `json:"reflog"`
	}
	if err := c.do(ctx, "session reflog", http.MethodGet, "/v1/sessions/"+esc(id)+"/reflog", nil, nil, &out); err != nil {
		return nil, err
	}
	return out.Reflog, nil
}

// MoveHead moves a session's head with a compare-and-swap
// (POST /v1/sessions/{id}/head): in.ExpectedHead must name the current head
// (nil for a session without one). On a mismatch the answer is a conflict
// *Error whose details carry "actual_head".
func (c *Client) MoveHead(ctx context.Context, id string, in HeadMove) (*Session, error) {
	if isEmpty(id) {
		return nil, errMissingID("session id")
	}
	var out Session
	if err := c.do(ctx, "move session head", http.MethodPost, "/v1/sessions/"+esc(id)+"/head", nil, in, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// VerifySession asks kurad to verify every ledger on the session's
// first-parent chain and every record in them
// (GET /v1/sessions/{id}/verify); with expectHeadHash it also checks that
// the chain still holds that ledger hash. A failed verification is an
// answer with OK false, not an error.
func (c *Client) VerifySession(ctx context.Context, id, expectHeadHash string) (*SessionVerification, error) {
	if isEmpty(id) {
		return nil, errMissingID("session id")
	}
	q := url.Values{}
	if expectHeadHash != "" {
		q.Set("expect_head_hash", expectHeadHash)
	}
	var out SessionVerification
	if err := c.do(ctx, "verify session", http.MethodGet, "/v1/sessions/"+esc(id)+"/verify", q, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Ancestry returns the ledger with the given id and every ledger reachable
// from it through parent_ids (all parents, not only the first), each once,
// parents before children: the order in which they can be recreated. The
// ledger itself comes last. It fetches every ledger (record ids included).
func (c *Client) Ancestry(ctx context.Context, id string) ([]Ledger, error) {
	if isEmpty(id) {
		return nil, errMissingID("ledger id")
	}
	const (
		visiting = 1
		done     = 2
	)
	state := map[string]int{}
	type frame struct {
		id   string // as asked for, whatever the answer says
		l    *Ledger
		next int // index of the next parent to visit
	}
	first, err := c.GetLedger(ctx, id)
	if err != nil {
		return nil, err
	}
	state[id] = visiting
	stack := []frame{{id: id, l: first}}
	var out []Ledger
	// An iterative depth-first walk emitting each ledger after its parents
	// (post-order): sessions can be thousands of ledgers deep.
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		if top.next < len(top.l.ParentIDs) {
			pid := top.l.ParentIDs[top.next]
			top.next++
			switch state[pid] {
			case done:
				continue
			case visiting:
				// Ledger hashes chain parent hashes, so a true cycle
				// cannot exist; a server that reports one is broken.
				return nil, fmt.Errorf("ancestry of ledger %s: ledger %s is its own ancestor", id, pid)
			}
			p, err := c.GetLedger(ctx, pid)
			if err != nil {
				return nil, err
			}
			state[pid] = visiting
			stack = append(stack, frame{id: pid, l: p})
			continue
		}
		state[top.id] = done
		out = append(out, *top.l)
		stack = stack[:len(stack)-1]
	}
	return out, nil
}
