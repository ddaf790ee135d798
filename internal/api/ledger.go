package api

import (
	"io"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"
	"github.com/kura-memory/kura/internal/auth"
	"github.com/kura-memory/kura/internal/kura"
)

func (s *Server) registerLedgerRoutes(r chi.Router) {
	r.Post("/ledgers", s.idempotent(s.handleLedgerCreate))
	r.Get("/ledgers/{id}", s.handleLedgerGet)
	r.Get("/ledgers/{id}/records", s.handleLedgerRecords)
	r.Get("/ledgers/{id}/verify", s.handleLedgerVerify)
	r.Get("/ledgers/{id}/diff/{other}", s.handleLedgerDiff)
	r.Get("/ledgers/{id}/proof/{record_id}", s.handleLedgerProof)
}

func (s *Server) handleLedgerCreate(w http.ResponseWriter, r *http.Request) {
	var in kura.LedgerInput
	if err := s.decodeJSON(w, r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	l, err := s.store.CreateLedger(r.Context(), &in, keep(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.answer(w, http.StatusCreated, l)
}

func (s *Server) handleLedgerGet(w http.ResponseWriter, r *http.Request) {
	l, err := s.store.GetLedger(r.Context(), chi.URLParam(r, "id"), true)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, l)
}

func (s *Server) handleLedgerRecords(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	if !kura.ValidID(id) {
		s.writeError(w, r, kura.Invalid("id", "%q is not a lowercase UUID", id))
		return
	}
	q := r.URL.Query()
	limit, err := parseLimit(q.Get("limit"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	after := -1
	if c := q.Get("cursor"); c != "" {
		v, err := decodeCursor(c, "p")
		n, aerr := strconv.Atoi(v)
		if err != nil || aerr != nil || n < 0 {
			s.writeError(w, r, kura.Invalid("cursor", "cursor is not one this server handed out"))
			return
		}
		after = n
	}
	// The page streams: the opening is written once the store knows the
	// ledger exists, the records as they are read, the cursor at the end.
	cursor := ""
	opened := false
	// Memory kurad packed from scopes the caller does not hold goes out
	// withheld.
	scopes := readerOf(auth.FromContext(r.Context())).Scopes
	err = s.store.HydrateLedger(r.Context(), id, after, limit, scopes, w, func(next int) error {
		if next >= 0 {
			cursor = encodeCursor("p", strconv.Itoa(next))
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		opened = true
		_, err := io.WriteString(w, `{"records":[`)
		return err
	})
	if err != nil {
		if !opened {
			s.writeError(w, r, err)
			return
		}
		// Half an answer must not pass for a whole one: abort the
		// connection so the client sees a failed read, not a short page.
		s.log.Error("hydrate failed mid-answer", "ledger_id", id, "err", err)
		panic(http.ErrAbortHandler)
	}
	tail := "]"
	if cursor != "" {
		tail += `,"next_cursor":"` + cursor + `"`
	}
	io.WriteString(w, tail+"}\n")
}

func (s *Server) handleLedgerVerify(w http.ResponseWriter, r *http.Request) {
	v, err := s.store.VerifyLedger(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, v)
}

func (s *Server) handleLedgerDiff(w http.ResponseWriter, r *http.Request) {
	a, b := chi.URLParam(r, "id"), chi.URLParam(r, "other")
	for _, id := range []string{a, b} {
		if !kura.ValidID(id) {
			s.writeError(w, r, kura.Invalid("id", "%q is not a lowercase UUID", id))
			return
		}
	}
	d, err := s.store.Diff(r.Context(), a, b)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, d)
}

func (s *Server) handleLedgerProof(w http.ResponseWriter, r *http.Request) {
	p, err := s.store.Proof(r.Context(), chi.URLParam(r, "id"), chi.URLParam(r, "record_id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, p)
}
