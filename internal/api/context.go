package api

import (
	"context"
	"encoding/json"
	"github.com/kura-memory/kura/internal/kura"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/kura-memory/kura/internal/admission"
)

// ContextStore is what the context routes need from the store.
type ContextStore interface {
	PreviewContext(ctx context.Context, scope string, req *admission.Request) (json.RawMessage, error)
	CompileContext(ctx context.Context, scope string, req *admission.Request, opts ...kura.WriteOption) (json.RawMessage, error)
	GetBundle(ctx context.Context, scope, id string) (json.RawMessage, error)
}

func (s *Server) registerContextRoutes(r chi.Router) {
	r.Route("/scopes/{scope}/context", func(r chi.Router) {
		r.Use(s.scopeParam)
		r.Post("/preview", s.handleContextPreview)
		r.Post("/compile", s.idempotent(bodyRoute(s, s.decodeJSON, http.StatusOK, func(r *http.Request, req *admission.Request) (json.RawMessage, error) {
			return s.store.CompileContext(r.Context(), chi.URLParam(r, "scope"), req, keep(r))
		})))
		r.Get("/bundles/{id}", s.handleBundleGet)
	})
}

// handleContextPreview answers what compile would, writing nothing: no
// bundle, no event, no idempotency record.
func (s *Server) handleContextPreview(w http.ResponseWriter, r *http.Request) {
	var req admission.Request
	if err := s.decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	body, err := s.store.PreviewContext(r.Context(), chi.URLParam(r, "scope"), &req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeBody(w, http.StatusOK, append(body, '\n'))
}

// handleBundleGet returns a stored bundle as compile answered it.
func (s *Server) handleBundleGet(w http.ResponseWriter, r *http.Request) {
	body, err := s.store.GetBundle(r.Context(), chi.URLParam(r, "scope"), chi.URLParam(r, "id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeBody(w, http.StatusOK, append(body, '\n'))
}
