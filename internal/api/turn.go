package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/kura-memory/kura/internal/auth"
	"github.com/kura-memory/kura/internal/kura"
)

func (s *Server) registerTurnRoutes(r chi.Router) {
	r.Get("/turns", s.handleTurnList)
	r.Get("/turns/{id}", s.handleTurnGet)
	r.Post("/turns/{id}/claim", s.idempotent(s.handleTurnClaim))
	r.Post("/turns/{id}/renew", s.idempotent(s.handleTurnRenew))
	r.Post("/turns/{id}/records", s.idempotent(s.handleTurnAppend))
	r.Post("/turns/{id}/close", s.idempotent(s.handleTurnClose))
}

func (s *Server) handleTurnOpen(w http.ResponseWriter, r *http.Request) {
	var in kura.TurnOpenInput
	if err := s.decodeJSON(w, r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	t, err := s.store.OpenTurn(r.Context(), chi.URLParam(r, "id"), &in, s.cfg.TurnDeadline, keep(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.answer(w, http.StatusCreated, t)
}

func (s *Server) handleTurnClaim(w http.ResponseWriter, r *http.Request) {
	var in kura.TurnClaim
	if err := s.decodeJSON(w, r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	if in.Worker == "" {
		in.Worker = auth.FromContext(r.Context()).Identity // claims as the caller
	}
	l, err := s.store.ClaimTurn(r.Context(), chi.URLParam(r, "id"), &in, keep(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.answer(w, http.StatusOK, l)
}

func (s *Server) handleTurnRenew(w http.ResponseWriter, r *http.Request) {
	var in kura.TurnRenew
	if err := s.decodeJSON(w, r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	in.Writer = writerOf(r)
	l, err := s.store.RenewTurn(r.Context(), chi.URLParam(r, "id"), &in, keep(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.answer(w, http.StatusOK, l)
}

func (s *Server) handleTurnAppend(w http.ResponseWriter, r *http.Request) {
	var in kura.TurnAppend
	if err := s.decodeJSON(w, r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	in.Writer = writerOf(r)
	res, err := s.store.AppendTurn(r.Context(), chi.URLParam(r, "id"), &in, keep(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.answer(w, http.StatusOK, res)
}

func (s *Server) handleTurnClose(w http.ResponseWriter, r *http.Request) {
	var in kura.TurnClose
	if err := s.decodeJSON(w, r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	id := chi.URLParam(r, "id")
	p := auth.FromContext(r.Context())
	in.Closer = writerOf(r)
	if kura.ValidID(id) {
		// A session's scope never changes: read before the write, it is
		// still the scope the close extracts into.
		_, scope, err := s.access().TurnAccess(r.Context(), id)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		in.MayWriteScope = p.AllowsScope(scope)
	}
	t, err := s.store.CloseTurn(r.Context(), id, &in, keep(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.answer(w, http.StatusOK, t)
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
