package api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/kura-memory/kura/internal/auth"
	"github.com/kura-memory/kura/internal/kura"
)

// ProvenanceStore is what the provenance routes need from the store.
type ProvenanceStore interface {
	Trace(ctx context.Context, scope, ref, direction string, depth int) (*kura.Trace, error)
	Evidence(ctx context.Context, scope, ref string) (*kura.Evidence, error)
	RawSources(ctx context.Context, scope, ref string) (*kura.RawSources, error)
	Derived(ctx context.Context, scope, ref string) (*kura.Derived, error)
}

// provenanceRoutes are the lineage reads. {ref} is a node ref or
// record:<id>; its colon needs no escaping in a path segment, and an
// escaped one (%3A) is decoded by refParam. Tracing a record needs the
// record to be visible.
func (s *Server) provenanceRoutes() []route {
	const prefix = "/v1/scopes/{scope}/provenance/{ref}"
	read := func(pattern string, h http.HandlerFunc) route {
		return route{method: http.MethodGet, pattern: prefix + pattern, role: auth.RoleReader, check: scoped(provenanceRef), serve: h, heavy: true}
	}
	return []route{
		read("", s.handleProvenanceTrace),
		read("/evidence", s.handleProvenanceEvidence),
		read("/raw-sources", s.handleProvenanceRawSources),
		read("/derived", s.handleProvenanceDerived),
	}
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
	if err == nil {
		err = s.withholdRecords(r.Context(), t)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, t)
}

func (s *Server) handleProvenanceEvidence(w http.ResponseWriter, r *http.Request) {
	e, err := s.store.Evidence(r.Context(), chi.URLParam(r, "scope"), refParam(r))
	if err == nil {
		err = s.withholdRecords(r.Context(), e)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, e)
}

func (s *Server) handleProvenanceRawSources(w http.ResponseWriter, r *http.Request) {
	rs, err := s.store.RawSources(r.Context(), chi.URLParam(r, "scope"), refParam(r))
	if err == nil {
		err = s.withholdRecords(r.Context(), rs)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, rs)
}

func (s *Server) handleProvenanceDerived(w http.ResponseWriter, r *http.Request) {
	d, err := s.store.Derived(r.Context(), chi.URLParam(r, "scope"), refParam(r))
	if err == nil {
		err = s.withholdRecords(r.Context(), d)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, d)
}

// recordItems are the records of a lineage answer.
type recordItems struct {
	lineage []*kura.Lineage
	raw     []*kura.RawEntry
}

func (it *recordItems) addLineage(ls []kura.Lineage) {
	for i := range ls {
		if ls[i].IsRecord() {
			it.lineage = append(it.lineage, &ls[i])
		}
		it.addLineage(ls[i].Sources)
		it.addLineage(ls[i].Derived)
	}
}

func (it *recordItems) addRaw(es []kura.RawEntry) {
	for i := range es {
		it.raw = append(it.raw, &es[i])
	}
}

// withholdRecords strips, in a provenance answer (trace, evidence,
// raw-sources, derived), the text of every record the caller may not read
// by the rules of docs/security.md ("Records and ledgers visibility"),
// asking the store about all of them in one query. The records stay
// listed: the lineage says that they exist, not what they say.
func (s *Server) withholdRecords(ctx context.Context, answer any) error {
	var it recordItems
	switch a := answer.(type) {
	case *kura.Trace:
		if a.Memory.Record != nil {
			it.lineage = append(it.lineage, a.Memory.Record)
		}
		if a.Backward != nil {
			it.addLineage(a.Backward.Sources)
		}
		if a.Forward != nil {
			it.addLineage(a.Forward.Derived)
		}
	case *kura.Evidence:
		it.addRaw(a.Evidence.RawEntries)
	case *kura.RawSources:
		it.addRaw(a.RawSources)
	case *kura.Derived:
		it.addLineage(a.Derived)
	default:
		return fmt.Errorf("withhold records: no walk for %T", answer)
	}
	rd := readerOf(auth.FromContext(ctx))
	if rd.Unlimited() || len(it.lineage)+len(it.raw) == 0 {
		return nil
	}
	ids := make([]string, 0, len(it.lineage)+len(it.raw))
	for _, l := range it.lineage {
		ids = append(ids, strings.TrimPrefix(l.Ref, "record:"))
	}
	for _, e := range it.raw {
		ids = append(ids, e.ID)
	}
	slices.Sort(ids)
	vis, err := s.access().RecordsVisible(ctx, slices.Compact(ids), rd)
	if err != nil {
		return err
	}
	for _, l := range it.lineage {
		if !vis[strings.TrimPrefix(l.Ref, "record:")] {
			l.Withhold()
		}
	}
	for _, e := range it.raw {
		if !vis[e.ID] {
			e.Withhold()
		}
	}
	return nil
}

// provenanceRef: tracing a record needs the record to be visible.
func provenanceRef(s *Server, r *http.Request, rc *chi.Context, p auth.Principal) error {
	ref := refParamFrom(rc)
	id, ok := strings.CutPrefix(ref, "record:")
	if !ok || !kura.ValidID(id) {
		return nil
	}
	vis, err := s.recordVisible(r.Context(), p, id)
	if err == nil && !vis {
		err = kura.Errorf(kura.ENotFound, "no record %s", id)
	}
	return err
}

// refParamFrom is refParam for a route context the middleware matched.
func refParamFrom(rc *chi.Context) string {
	v := rc.URLParam("ref")
	if u, err := url.PathUnescape(v); err == nil {
		return u
	}
	return v
}
