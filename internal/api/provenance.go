package api

import (
	"context"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"
	"github.com/kura-memory/kura/internal/kura"
)

// ProvenanceStore is what the provenance routes need from the store.
type ProvenanceStore interface {
	Trace(ctx context.Context, scope, ref, direction string, depth int) (*kura.Trace, error)
	Evidence(ctx context.Context, scope, ref string) (*kura.Evidence, error)
	RawSources(ctx context.Context, scope, ref string) (*kura.RawSources, error)
	Derived(ctx context.Context, scope, ref string) (*kura.Derived, error)
}

// registerProvenanceRoutes serves the lineage reads. {ref} is a node ref or
// record:<id>; its colon needs no escaping in a path segment, and an
// escaped one (%3A) is decoded by refParam.
func (s *Server) registerProvenanceRoutes(r chi.Router) {
	r.Group(func(r chi.Router) {
		r.Use(s.scopeParam)
		r.Get("/scopes/{scope}/provenance/{ref}", s.handleProvenanceTrace)
		r.Get("/scopes/{scope}/provenance/{ref}/evidence", s.handleProvenanceEvidence)
		r.Get("/scopes/{scope}/provenance/{ref}/raw-sources", s.handleProvenanceRawSources)
		r.Get("/scopes/{scope}/provenance/{ref}/derived", s.handleProvenanceDerived)
	})
}

func (s *Server) handleProvenanceTrace(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	direction := kura.DirectionBoth
	if v := q.Get("direction"); v != "" {
		direction = v
	}
	depth := kura.DefaultTraceDepth
	if v := q.Get("depth"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			s.writeError(w, r, kura.Invalid("depth", "depth must be an integer from 1 to %d", kura.MaxTraceDepth))
			return
		}
		depth = n
	}
	t, err := s.store.Trace(r.Context(), chi.URLParam(r, "scope"), refParam(r), direction, depth)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, t)
}

func (s *Server) handleProvenanceEvidence(w http.ResponseWriter, r *http.Request) {
	e, err := s.store.Evidence(r.Context(), chi.URLParam(r, "scope"), refParam(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, e)
}

func (s *Server) handleProvenanceRawSources(w http.ResponseWriter, r *http.Request) {
	rs, err := s.store.RawSources(r.Context(), chi.URLParam(r, "scope"), refParam(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, rs)
}

func (s *Server) handleProvenanceDerived(w http.ResponseWriter, r *http.Request) {
	d, err := s.store.Derived(r.Context(), chi.URLParam(r, "scope"), refParam(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, d)
}
