package api

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/kura-memory/kura/internal/admission"
	"github.com/kura-memory/kura/internal/auth"
	"github.com/kura-memory/kura/internal/kura"
)

// ContextStore is what the context routes need from the store.
type ContextStore interface {
	// PreviewContext's bundle may hold its trace only as a plan: it is
	// written with admission.WriteBundle.
	PreviewContext(ctx context.Context, scope string, req *admission.Request) (*admission.Bundle, error)
	CompileContext(ctx context.Context, scope string, req *admission.Request, opts ...kura.WriteOption) (json.RawMessage, error)
	GetBundle(ctx context.Context, scope, id string) (json.RawMessage, error)
}

func (s *Server) contextRoutes() []route {
	const prefix = "/v1/scopes/{scope}/context"
	return []route{
		// preview writes nothing: a reader may ask it.
		{method: http.MethodPost, pattern: prefix + "/preview", role: auth.RoleReader, check: scoped(nil), serve: s.handleContextPreview, heavy: true},
		bodyRoute[admission.Request, json.RawMessage]{
			method: http.MethodPost, pattern: prefix + "/compile", role: auth.RoleWriter,
			check: scoped(nil), answer: answer200, heavy: true,
			call: func(r *http.Request, req *admission.Request, keep kura.WriteOption) (json.RawMessage, bool, error) {
				release, err := s.reserveCompile(r, req)
				if err != nil {
					return nil, false, err
				}
				defer release()
				b, err := s.store.CompileContext(r.Context(), chi.URLParam(r, "scope"), req, keep)
				return b, false, err
			},
		}.route(s),
		{method: http.MethodGet, pattern: prefix + "/bundles/{id}", role: auth.RoleReader, check: scoped(nil), serve: s.handleBundleGet},
	}
}

// handleContextPreview answers what compile would, writing nothing: no
// bundle, no event, no idempotency record. The answer is written as it is
// encoded, without a Content-Length: a preview never holds its whole
// answer (up to admission.MaxAnswerBytes), only a piece of it at a time.
func (s *Server) handleContextPreview(w http.ResponseWriter, r *http.Request) {
	var req admission.Request
	if err := s.decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	release, err := s.reserveCompile(r, &req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer release() // once the answer is written: it is made as it goes
	b, err := s.store.PreviewContext(r.Context(), chi.URLParam(r, "scope"), &req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	// Past the header nothing but the client can fail: a client gone
	// away ends the answer, and there is nobody to tell.
	if admission.WriteBundle(w, b) == nil {
		w.Write([]byte{'\n'})
	}
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
