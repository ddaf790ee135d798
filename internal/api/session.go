package api

import (
	"github.com/kura-memory/kura/internal/auth"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/kura-memory/kura/internal/kura"
)

func (s *Server) registerSessionRoutes(r chi.Router) {
	r.Post("/sessions", s.idempotent(s.handleSessionCreate))
	r.Get("/sessions", s.handleSessionList)
	r.Get("/sessions/{id}", s.handleSessionGet)
	r.Get("/sessions/{id}/log", s.handleSessionLog)
	r.Get("/sessions/{id}/reflog", s.handleSessionReflog)
	r.Post("/sessions/{id}/head", s.idempotent(s.handleSessionHead))
	r.Get("/sessions/{id}/verify", s.handleSessionVerify)
	r.Post("/sessions/{id}/turns", s.idempotent(s.handleTurnOpen))
}

func (s *Server) handleSessionCreate(w http.ResponseWriter, r *http.Request) {
	var in kura.SessionInput
	if err := s.decodeJSON(w, r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	in.CreatedBy = auth.FromContext(r.Context()).Identity
	sess, err := s.store.CreateSession(r.Context(), &in, keep(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.answer(w, http.StatusCreated, sess)
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

func (s *Server) handleSessionHead(w http.ResponseWriter, r *http.Request) {
	var mv kura.HeadMove
	if err := s.decodeJSON(w, r, &mv); err != nil {
		s.writeError(w, r, err)
		return
	}
	sess, err := s.store.MoveHead(r.Context(), chi.URLParam(r, "id"), &mv, keep(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.answer(w, http.StatusOK, sess)
}

func (s *Server) handleSessionVerify(w http.ResponseWriter, r *http.Request) {
	v, err := s.store.VerifySession(r.Context(), chi.URLParam(r, "id"), r.URL.Query().Get("expect_head_hash"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, v)
}
