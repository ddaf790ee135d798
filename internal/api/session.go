package api

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/kura-memory/kura/internal/admission"
	"github.com/kura-memory/kura/internal/auth"
	"github.com/kura-memory/kura/internal/kura"
)

// SessionStore is what the session routes need from the store.
type SessionStore interface {
	CreateSession(ctx context.Context, in *kura.SessionInput, opts ...kura.WriteOption) (*kura.Session, error)
	GetSession(ctx context.Context, id string) (*kura.Session, error)
	ListSessions(ctx context.Context, project, after string, limit int) ([]kura.Session, string, error)
	SessionLog(ctx context.Context, id, after string, limit int) ([]kura.Ledger, string, error)
	Reflog(ctx context.Context, id string) ([]kura.ReflogEntry, error)
	MoveHead(ctx context.Context, id string, mv *kura.HeadMove, opts ...kura.WriteOption) (*kura.Session, error)
	VerifySession(ctx context.Context, id, expectHeadHash string) (*kura.SessionVerification, error)
}

func (s *Server) sessionRoutes() []route {
	return []route{
		bodyRoute[kura.SessionInput, *kura.Session]{
			method: http.MethodPost, pattern: "/v1/sessions", role: auth.RoleWriter,
			body: checkSessionCreate, answer: answer201,
			call: func(r *http.Request, in *kura.SessionInput, keep kura.WriteOption) (*kura.Session, bool, error) {
				in.CreatedBy = auth.FromContext(r.Context()).Identity
				sess, err := s.store.CreateSession(r.Context(), in, keep)
				return sess, true, err
			},
		}.route(s),
		{method: http.MethodGet, pattern: "/v1/sessions", role: auth.RoleReader, check: projectQuery, serve: s.handleSessionList},
		{method: http.MethodGet, pattern: "/v1/sessions/{id}", role: auth.RoleReader, check: sessionParam, serve: s.handleSessionGet},
		{method: http.MethodGet, pattern: "/v1/sessions/{id}/log", role: auth.RoleReader, check: sessionParam, serve: s.handleSessionLog},
		{method: http.MethodGet, pattern: "/v1/sessions/{id}/reflog", role: auth.RoleReader, check: sessionParam, serve: s.handleSessionReflog},
		{method: http.MethodGet, pattern: "/v1/sessions/{id}/verify", role: auth.RoleReader, check: sessionParam, serve: s.handleSessionVerify},
		bodyRoute[kura.HeadMove, *kura.Session]{
			method: http.MethodPost, pattern: "/v1/sessions/{id}/head", role: auth.RoleWriter,
			check: checkHeadMove, body: checkHeadLedger, answer: answer200,
			call: func(r *http.Request, mv *kura.HeadMove, keep kura.WriteOption) (*kura.Session, bool, error) {
				sess, err := s.store.MoveHead(r.Context(), chi.URLParam(r, "id"), mv, keep)
				return sess, false, err
			},
		}.route(s),
		bodyRoute[kura.TurnOpenInput, *kura.Turn]{
			method: http.MethodPost, pattern: "/v1/sessions/{id}/turns", role: auth.RoleWriter,
			check: sessionParam, body: checkTurnOpen, answer: answer201,
			call: func(r *http.Request, in *kura.TurnOpenInput, keep kura.WriteOption) (*kura.Turn, bool, error) {
				if in.Memory != nil { // a compile, bounded as one (contextbudget.go)
					release, err := s.reserveCompile(r, &admission.Request{BudgetBytes: in.Memory.BudgetBytes})
					if err != nil {
						return nil, false, err
					}
					defer release()
				}
				t, err := s.store.OpenTurn(r.Context(), chi.URLParam(r, "id"), in, s.cfg.TurnDeadline, keep)
				return t, true, err
			},
		}.route(s),
	}
}

func (s *Server) handleSessionList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, err := parseLimit(q.Get("limit"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	project := q.Get("project")
	if project != "" && !kura.ValidSlug(project) {
		s.writeError(w, r, kura.Invalid("project", "project must be a slug"))
		return
	}
	after, err := idCursor(q.Get("cursor"), "s")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	list, next, err := s.listSessions(r, project, after, limit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := map[string]any{"sessions": list}
	if next != "" {
		out["next_cursor"] = encodeCursor("s", next)
	}
	s.writeJSON(w, http.StatusOK, out)
}

// idCursor decodes a cursor that continues after an id.
func idCursor(c, kind string) (string, error) {
	if c == "" {
		return "", nil
	}
	id, err := decodeCursor(c, kind)
	if err != nil || !kura.ValidID(id) {
		return "", kura.Invalid("cursor", "cursor is not one this server handed out")
	}
	return id, nil
}

func (s *Server) handleSessionGet(w http.ResponseWriter, r *http.Request) {
	sess, err := s.store.GetSession(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, sess)
}

func (s *Server) handleSessionLog(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, err := parseLimit(q.Get("limit"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	after, err := idCursor(q.Get("cursor"), "l")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ls, next, err := s.store.SessionLog(r.Context(), chi.URLParam(r, "id"), after, limit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := map[string]any{"ledgers": ls}
	if next != "" {
		out["next_cursor"] = encodeCursor("l", next)
	}
	s.writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleSessionReflog(w http.ResponseWriter, r *http.Request) {
	rl, err := s.store.Reflog(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"reflog": rl})
}

func (s *Server) handleSessionVerify(w http.ResponseWriter, r *http.Request) {
	v, err := s.store.VerifySession(r.Context(), chi.URLParam(r, "id"), r.URL.Query().Get("expect_head_hash"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, v)
}

// session returns the session's access facts; a session of a project
// the caller may not see answers exactly as a missing one.
func (s *Server) session(ctx context.Context, p auth.Principal, id string) (project, scope, createdBy string, err error) {
	project, scope, createdBy, err = s.access().SessionAccess(ctx, id)
	if err == nil && !p.AllowsProject(project) {
		err = kura.Errorf(kura.ENotFound, "session not found")
	}
	return
}

func sessionParam(s *Server, r *http.Request, rc *chi.Context, p auth.Principal) error {
	id := rc.URLParam("id")
	if !kura.ValidID(id) {
		return nil
	}
	_, _, _, err := s.session(r.Context(), p, id)
	return err
}

func checkSessionCreate(s *Server, r *http.Request, p auth.Principal, in *kura.SessionInput) error {
	if in.Validate() != nil {
		return nil // the store answers what is wrong
	}
	if !p.AllowsProject(in.Project) {
		return denied("project %s is outside the token's projects", in.Project)
	}
	scope := in.Scope
	if scope == "" {
		scope = in.Project // the store's default
	}
	if !p.AllowsScope(scope) {
		return denied("scope %s is outside the token's scopes", scope)
	}
	if in.FromLedgerID != "" {
		return s.requireLedger(r.Context(), p, "from_ledger_id", in.FromLedgerID)
	}
	return nil
}

// checkHeadMove: moving a head by hand is for admins and the session's
// creator.
func checkHeadMove(s *Server, r *http.Request, rc *chi.Context, p auth.Principal) error {
	id := rc.URLParam("id")
	if !kura.ValidID(id) {
		return nil
	}
	_, _, by, err := s.session(r.Context(), p, id)
	if err != nil {
		return err
	}
	if !p.Can(auth.RoleAdmin) && (by == "" || by != p.Identity) {
		return denied("only admins and the identity that created a session move its head by hand")
	}
	return nil
}

// checkHeadLedger: the ledger a head moves to must be one the caller may
// see.
func checkHeadLedger(s *Server, r *http.Request, p auth.Principal, mv *kura.HeadMove) error {
	if !kura.ValidID(mv.LedgerID) {
		return nil
	}
	return s.requireLedger(r.Context(), p, "ledger_id", mv.LedgerID)
}

// checkTurnOpen binds the instruction's author, keeps memory out of a turn
// of a scope the caller may not write, and refuses context records it may
// not see (the session itself was checked by sessionParam).
func checkTurnOpen(s *Server, r *http.Request, p auth.Principal, in *kura.TurnOpenInput) error {
	if in.Instruction != nil {
		if err := checkRecordAuthors(p, "instruction.author_id", []string{in.Instruction.AuthorID}); err != nil {
			return err
		}
	}
	if id := chi.URLParam(r, "id"); in.Memory != nil && kura.ValidID(id) {
		_, scope, _, err := s.session(r.Context(), p, id)
		if err != nil {
			return err
		}
		if !p.AllowsScope(scope) {
			return denied("the session's scope %s is outside the token's scopes; open the turn without memory", scope)
		}
	}
	return s.checkRecordRefs(r.Context(), p, in.Context)
}

// listSessions is GET /v1/sessions for the caller: a project-restricted
// one sees only its projects' sessions.
func (s *Server) listSessions(r *http.Request, project, after string, limit int) ([]kura.Session, string, error) {
	p := auth.FromContext(r.Context())
	if project == "" && !p.AllProjects() {
		return s.access().ListSessionsIn(r.Context(), p.Projects, after, limit)
	}
	return s.store.ListSessions(r.Context(), project, after, limit)
}
