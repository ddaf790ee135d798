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

// redactRoutes is POST /v1/records/{id}/redact. Who asked comes from the
// request's principal, never from the body. Redacting a redacted record is
// 200 with the first redaction (already_redacted true) and writes nothing:
// the outcome the caller wants holds either way.
func (s *Server) redactRoutes() []route {
	return []route{
		// Redaction: admin, and the record must be visible to the caller.
		bodyRoute[kura.RedactInput, *kura.RedactResult]{
			method: http.MethodPost, pattern: "/v1/records/{id}/redact", role: auth.RoleAdmin,
			check: recordParam("id"), answer: answer200,
			call: func(r *http.Request, in *kura.RedactInput, keep kura.WriteOption) (*kura.RedactResult, bool, error) {
				by := auth.FromContext(r.Context()).Identity
				res, err := s.store.RedactRecord(r.Context(), chi.URLParam(r, "id"), by, in, keep)
				return res, false, err
			},
		}.route(s),
	}
}
