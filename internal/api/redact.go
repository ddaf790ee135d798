package api

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/kura-memory/kura/internal/auth"
	"github.com/kura-memory/kura/internal/kura"
)

// RedactStore is what the redaction route needs from the store.
type RedactStore interface {
	RedactRecord(ctx context.Context, id, by string, in *kura.RedactInput, opts ...kura.WriteOption) (*kura.RedactResult, error)
	// PurgeState is "pending" while redacted content may remain in the
	// database files, else "complete".
	PurgeState() string
}

// registerRedactRoutes adds POST /v1/records/{id}/redact (admin only).
func (s *Server) registerRedactRoutes(r chi.Router) {
	r.Post("/records/{id}/redact", s.idempotent(s.handleRecordRedact))
}

// handleRecordRedact drops a record's content for good. Who asked comes from
// the request's principal, never from the body. Redacting a redacted record
// is 200 with the first redaction (already_redacted true) and writes
// nothing: the outcome the caller wants holds either way.
func (s *Server) handleRecordRedact(w http.ResponseWriter, r *http.Request) {
	p := auth.FromContext(r.Context())
	if !p.Can(auth.RoleAdmin) {
		s.writeError(w, r, kura.Errorf(kura.EDenied, "redacting a record needs the admin role"))
		return
	}
	var in kura.RedactInput
	if err := s.decodeJSON(w, r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := s.store.RedactRecord(r.Context(), chi.URLParam(r, "id"), p.Identity, &in, keep(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.answer(w, http.StatusOK, res)
}
