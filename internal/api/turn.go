package api

import (
	"context"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/kura-memory/kura/internal/auth"
	"github.com/kura-memory/kura/internal/kura"
)

// TurnStore is what the turn routes need from the store.
type TurnStore interface {
	OpenTurn(ctx context.Context, sessionID string, in *kura.TurnOpenInput, defaultDeadline time.Duration, opts ...kura.WriteOption) (*kura.Turn, error)
	ClaimTurn(ctx context.Context, id string, in *kura.TurnClaim, opts ...kura.WriteOption) (*kura.Lease, error)
	RenewTurn(ctx context.Context, id string, in *kura.TurnRenew, opts ...kura.WriteOption) (*kura.Lease, error)
	AppendTurn(ctx context.Context, id string, in *kura.TurnAppend, opts ...kura.WriteOption) (*kura.TurnAppendResult, error)
	CloseTurn(ctx context.Context, id string, in *kura.TurnClose, opts ...kura.WriteOption) (*kura.Turn, error)
	GetTurn(ctx context.Context, id string) (*kura.Turn, error)
	ListTurns(ctx context.Context, sessionID, state, after string, limit int) ([]kura.Turn, string, error)
}

// turnRoutes are the turn routes but POST /v1/sessions/{id}/turns, which
// opens one (sessionRoutes).
func (s *Server) turnRoutes() []route {
	return []route{
		{method: http.MethodGet, pattern: "/v1/turns", role: auth.RoleReader, serve: s.handleTurnList}, // filtered by listTurns
		{method: http.MethodGet, pattern: "/v1/turns/{id}", role: auth.RoleReader, check: turnParam, serve: s.handleTurnGet},
		bodyRoute[kura.TurnClaim, *kura.Lease]{
			method: http.MethodPost, pattern: "/v1/turns/{id}/claim", role: auth.RoleWriter,
			check: turnParam, body: checkClaim, answer: answer200,
			call: func(r *http.Request, in *kura.TurnClaim, keep kura.WriteOption) (*kura.Lease, bool, error) {
				if in.Worker == "" {
					in.Worker = auth.FromContext(r.Context()).Identity // claims as the caller
				}
				l, err := s.store.ClaimTurn(r.Context(), chi.URLParam(r, "id"), in, keep)
				return l, false, err
			},
		}.route(s),
		bodyRoute[kura.TurnRenew, *kura.Lease]{
			method: http.MethodPost, pattern: "/v1/turns/{id}/renew", role: auth.RoleWriter,
			check: turnParam, answer: answer200,
			call: func(r *http.Request, in *kura.TurnRenew, keep kura.WriteOption) (*kura.Lease, bool, error) {
				in.Writer = writerOf(r)
				l, err := s.store.RenewTurn(r.Context(), chi.URLParam(r, "id"), in, keep)
				return l, false, err
			},
		}.route(s),
		bodyRoute[kura.TurnAppend, *kura.TurnAppendResult]{
			method: http.MethodPost, pattern: "/v1/turns/{id}/records", role: auth.RoleWriter,
			check: turnParam, body: checkTurnAppend, answer: answer200,
			call: func(r *http.Request, in *kura.TurnAppend, keep kura.WriteOption) (*kura.TurnAppendResult, bool, error) {
				in.Writer = writerOf(r)
				res, err := s.store.AppendTurn(r.Context(), chi.URLParam(r, "id"), in, keep)
				return res, false, err
			},
		}.route(s),
		bodyRoute[kura.TurnClose, *kura.Turn]{
			method: http.MethodPost, pattern: "/v1/turns/{id}/close", role: auth.RoleWriter,
			check: turnParam, answer: answer200, call: s.closeTurn,
		}.route(s),
	}
}

func (s *Server) closeTurn(r *http.Request, in *kura.TurnClose, keep kura.WriteOption) (*kura.Turn, bool, error) {
	id := chi.URLParam(r, "id")
	p := auth.FromContext(r.Context())
	in.Closer = writerOf(r)
	if kura.ValidID(id) {
		// A session's scope never changes: read before the write, it is
		// still the scope the close extracts into.
		_, scope, err := s.access().TurnAccess(r.Context(), id)
		if err != nil {
			return nil, false, err
		}
		in.MayWriteScope = p.AllowsScope(scope)
	}
	t, err := s.store.CloseTurn(r.Context(), id, in, keep)
	return t, false, err
}

func (s *Server) handleTurnGet(w http.ResponseWriter, r *http.Request) {
	t, err := s.store.GetTurn(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, t)
}

func (s *Server) handleTurnList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, err := parseLimit(q.Get("limit"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	sid := q.Get("session_id")
	if sid != "" && !kura.ValidID(sid) {
		s.writeError(w, r, kura.Invalid("session_id", "%q is not a lowercase UUID", sid))
		return
	}
	state := q.Get("state")
	switch state {
	case "", kura.TurnOpen, kura.TurnComplete, kura.TurnFailed, kura.TurnTimeout:
	default:
		s.writeError(w, r, kura.Invalid("state", "state must be open, complete, failed or timeout"))
		return
	}
	after, err := idCursor(q.Get("cursor"), "t")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	list, next, err := s.listTurns(r, sid, state, after, limit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := map[string]any{"turns": list}
	if next != "" {
		out["next_cursor"] = encodeCursor("t", next)
	}
	s.writeJSON(w, http.StatusOK, out)
}

func turnParam(s *Server, r *http.Request, rc *chi.Context, p auth.Principal) error {
	_, err := turnScope(s, r, rc, p)
	return err
}

func turnScope(s *Server, r *http.Request, rc *chi.Context, p auth.Principal) (string, error) {
	id := rc.URLParam("id")
	if !kura.ValidID(id) {
		return "", nil
	}
	project, scope, err := s.access().TurnAccess(r.Context(), id)
	if err == nil && !p.AllowsProject(project) {
		err = kura.Errorf(kura.ENotFound, "turn not found")
	}
	return scope, err
}

// checkClaim: the worker of a claim is bound like an author, so a writer
// claims turns only as itself (a claim without worker is the caller's).
func checkClaim(s *Server, r *http.Request, p auth.Principal, in *kura.TurnClaim) error {
	if !kura.ValidAuthorID(in.Worker) {
		return nil // the store answers what is wrong with the body
	}
	return checkAuthors(p, "worker", []string{in.Worker})
}

// checkTurnAppend refuses records the caller may not see or write, and
// memory records in a turn whose scope it may not write (checkNoMemory).
func checkTurnAppend(s *Server, r *http.Request, p auth.Principal, in *kura.TurnAppend) error {
	if err := s.checkRecordRefs(r.Context(), p, in.Records); err != nil {
		return err
	}
	scope, err := turnScope(s, r, chi.RouteContext(r.Context()), p)
	if err != nil {
		return err
	}
	if scope == "" || p.AllowsScope(scope) {
		return nil
	}
	return s.checkNoMemory(r.Context(), scope, in.Records)
}

// checkNoMemory refuses memory records, new or by id, in the output of a
// turn whose scope the caller may not write: its close would extract them
// into that scope, whoever closes it. Record types never change, so the
// check holds when the append is written.
func (s *Server) checkNoMemory(ctx context.Context, scope string, refs []kura.RecordRef) error {
	var ids []string
	for _, ref := range refs {
		switch {
		case ref.RecordID == "":
			if _, extracted := kura.ExtractedKind(ref.Type); extracted {
				return memoryScopeDenied(scope, ref.Type)
			}
		case kura.ValidID(ref.RecordID):
			ids = append(ids, ref.RecordID)
		}
	}
	types, err := s.access().RecordTypes(ctx, ids)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if _, extracted := kura.ExtractedKind(types[id]); extracted {
			return memoryScopeDenied(scope, types[id])
		}
	}
	return nil
}

func memoryScopeDenied(scope, typ string) error {
	return kura.Errorf(kura.EDenied, "%s records are extracted into scope %s at close, and scope %s is outside the token's scopes", typ, scope, scope).WithDetail("scope", scope)
}

// listTurns is GET /v1/turns for the caller: a turn of a session it may
// not see is left out, and a session_id it may not see lists nothing, as
// a missing one does.
func (s *Server) listTurns(r *http.Request, sid, state, after string, limit int) ([]kura.Turn, string, error) {
	p := auth.FromContext(r.Context())
	if !p.AllProjects() {
		return s.access().ListTurnsIn(r.Context(), p.Projects, sid, state, after, limit)
	}
	return s.store.ListTurns(r.Context(), sid, state, after, limit)
}
