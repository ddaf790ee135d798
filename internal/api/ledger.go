package api

import (
	"context"
	"io"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"
	"github.com/kura-memory/kura/internal/auth"
	"github.com/kura-memory/kura/internal/kura"
)

// LedgerStore is what the ledger routes need from the store.
type LedgerStore interface {
	CreateLedger(ctx context.Context, in *kura.LedgerInput, opts ...kura.WriteOption) (*kura.Ledger, error)
	GetLedger(ctx context.Context, id string, withRecords bool) (*kura.Ledger, error)
	HydrateLedger(ctx context.Context, id string, after, limit int, scopes []string, w io.Writer, start func(next int) error) error
	VerifyLedger(ctx context.Context, id string) (*kura.Verification, error)
	Diff(ctx context.Context, a, b string) (*kura.Diff, error)
	Proof(ctx context.Context, ledgerID, recordID string) (*kura.Proof, error)
}

func (s *Server) ledgerRoutes() []route {
	return []route{
		bodyRoute[kura.LedgerInput, *kura.Ledger]{
			method: http.MethodPost, pattern: "/v1/ledgers", role: auth.RoleWriter,
			check: needAllProjects("free-standing ledgers (POST /v1/ledgers)"), answer: answer201,
			call: func(r *http.Request, in *kura.LedgerInput, keep kura.WriteOption) (*kura.Ledger, bool, error) {
				l, err := s.store.CreateLedger(r.Context(), in, keep)
				return l, true, err
			},
		}.route(s),
		{method: http.MethodGet, pattern: "/v1/ledgers/{id}", role: auth.RoleReader, check: ledgerParams("id"), serve: s.handleLedgerGet},
		{method: http.MethodGet, pattern: "/v1/ledgers/{id}/records", role: auth.RoleReader, check: ledgerParams("id"), serve: s.handleLedgerRecords},
		{method: http.MethodGet, pattern: "/v1/ledgers/{id}/verify", role: auth.RoleReader, check: ledgerParams("id"), serve: s.handleLedgerVerify},
		{method: http.MethodGet, pattern: "/v1/ledgers/{id}/diff/{other}", role: auth.RoleReader, check: ledgerParams("id", "other"), serve: s.handleLedgerDiff},
		{method: http.MethodGet, pattern: "/v1/ledgers/{id}/proof/{record_id}", role: auth.RoleReader, check: ledgerParams("id"), serve: s.handleLedgerProof},
	}
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

func ledgerParams(names ...string) accessCheck {
	return func(s *Server, r *http.Request, rc *chi.Context, p auth.Principal) error {
		for _, n := range names {
			if err := s.checkLedgerVisible(r, p, rc.URLParam(n)); err != nil {
				return err
			}
		}
		return nil
	}
}

// checkLedgerVisible answers a ledger the caller may not read exactly as
// one that does not exist (404). An id that is not valid passes: the
// handler answers it with 400.
func (s *Server) checkLedgerVisible(r *http.Request, p auth.Principal, id string) error {
	if !kura.ValidID(id) {
		return nil
	}
	ok, err := s.ledgerVisible(r.Context(), p, id)
	if err != nil {
		return err
	}
	if !ok {
		return kura.Errorf(kura.ENotFound, "ledger %s not found", id)
	}
	return nil
}
