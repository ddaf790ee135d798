package api

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/kura-memory/kura/internal/auth"
	"github.com/kura-memory/kura/internal/kura"
)

// MemoryStore is what the memory routes need from the store.
type MemoryStore interface {
	PutNode(ctx context.Context, scope string, in *kura.NodeInput, opts ...kura.WriteOption) (*kura.Node, bool, error)
	PutNodes(ctx context.Context, scope string, ins []kura.NodeInput, opts ...kura.WriteOption) ([]kura.Node, error)
	GetNode(ctx context.Context, scope, ref, asOf string) (*kura.Node, error)
	ListNodes(ctx context.Context, scope string, f kura.NodeFilter) ([]kura.Node, string, error)
	NodeHistory(ctx context.Context, scope, ref string) (*kura.NodeHistory, error)
	TransitionNode(ctx context.Context, scope, ref string, t *kura.Transition, opts ...kura.WriteOption) (*kura.Node, error)
	ReviseNode(ctx context.Context, scope, ref string, in *kura.NodeInput, opts ...kura.WriteOption) (*kura.Revision, error)
	CreateRelation(ctx context.Context, scope string, in *kura.RelationInput, opts ...kura.WriteOption) (*kura.Relation, error)
	ListRelations(ctx context.Context, scope, ref, kind, after string, limit int) ([]kura.Relation, string, error)
	CreateFeedback(ctx context.Context, scope string, in *kura.FeedbackInput, opts ...kura.WriteOption) (*kura.Feedback, error)
	SearchNodes(ctx context.Context, scope string, q kura.SearchQuery) ([]kura.SearchResult, error)
	// SearchMemory is search in every mode (lexical, semantic, hybrid),
	// with warnings when it had to fall back to words.
	SearchMemory(ctx context.Context, scope string, q kura.SearchQuery) (*kura.SearchAnswer, error)
	NodeKinds() []string
}

func (s *Server) memoryRoutes() []route {
	const prefix = "/v1/scopes/{scope}/memory"
	read := func(pattern string, h http.HandlerFunc) route {
		return route{method: http.MethodGet, pattern: prefix + pattern, role: auth.RoleReader, check: scoped(nil), serve: h}
	}
	return []route{
		bodyRoute[kura.NodeInput, *kura.Node]{
			method: http.MethodPost, pattern: prefix + "/nodes", role: auth.RoleWriter,
			check: scoped(nil), body: checkNode, answer: answerNew,
			call: func(r *http.Request, in *kura.NodeInput, keep kura.WriteOption) (*kura.Node, bool, error) {
				in.Writer = writerOf(r)
				return s.store.PutNode(r.Context(), chi.URLParam(r, "scope"), in, keep)
			},
		}.route(s),
		bodyRoute[kura.NodeBatchInput, kura.NodeBatch]{
			method: http.MethodPost, pattern: prefix + "/nodes/batch", role: auth.RoleWriter,
			check: scoped(nil), answer: answer201,
			body: func(s *Server, r *http.Request, p auth.Principal, in *kura.NodeBatchInput) error {
				return s.checkNodes(r, p, in.Nodes)
			},
			call: func(r *http.Request, in *kura.NodeBatchInput, keep kura.WriteOption) (kura.NodeBatch, bool, error) {
				w := writerOf(r)
				for i := range in.Nodes {
					in.Nodes[i].Writer = w
				}
				nodes, err := s.store.PutNodes(r.Context(), chi.URLParam(r, "scope"), in.Nodes, keep)
				return kura.NodeBatch{Nodes: nodes}, true, err
			},
		}.route(s),
		read("/nodes", s.handleNodeList),
		read("/nodes/{ref}", s.handleNodeGet),
		read("/nodes/{ref}/history", s.handleNodeHistory),
		bodyRoute[kura.Transition, *kura.Node]{
			method: http.MethodPost, pattern: prefix + "/nodes/{ref}/transition", role: auth.RoleWriter,
			check: scoped(nil), answer: answer200,
			call: func(r *http.Request, in *kura.Transition, keep kura.WriteOption) (*kura.Node, bool, error) {
				in.Writer = writerOf(r)
				n, err := s.store.TransitionNode(r.Context(), chi.URLParam(r, "scope"), refParam(r), in, keep)
				return n, false, err
			},
		}.route(s),
		bodyRoute[kura.NodeInput, *kura.Revision]{
			method: http.MethodPost, pattern: prefix + "/nodes/{ref}/revise", role: auth.RoleWriter,
			check: scoped(nil), body: checkNode, answer: answer201,
			call: func(r *http.Request, in *kura.NodeInput, keep kura.WriteOption) (*kura.Revision, bool, error) {
				in.Writer = writerOf(r)
				rev, err := s.store.ReviseNode(r.Context(), chi.URLParam(r, "scope"), refParam(r), in, keep)
				return rev, true, err
			},
		}.route(s),
		bodyRoute[kura.RelationInput, *kura.Relation]{
			method: http.MethodPost, pattern: prefix + "/relations", role: auth.RoleWriter,
			check: scoped(nil), answer: answer201,
			call: func(r *http.Request, in *kura.RelationInput, keep kura.WriteOption) (*kura.Relation, bool, error) {
				rel, err := s.store.CreateRelation(r.Context(), chi.URLParam(r, "scope"), in, keep)
				return rel, true, err
			},
		}.route(s),
		read("/relations", s.handleRelationList),
		bodyRoute[kura.FeedbackInput, *kura.Feedback]{
			method: http.MethodPost, pattern: prefix + "/feedback", role: auth.RoleWriter,
			check: scoped(nil), answer: answer201,
			body: func(s *Server, r *http.Request, p auth.Principal, in *kura.FeedbackInput) error {
				return checkAuthors(p, "author_id", []string{in.AuthorID})
			},
			call: func(r *http.Request, in *kura.FeedbackInput, keep kura.WriteOption) (*kura.Feedback, bool, error) {
				fb, err := s.store.CreateFeedback(r.Context(), chi.URLParam(r, "scope"), in, keep)
				return fb, true, err
			},
		}.route(s),
		read("/search", s.handleSearch),
	}
}

func (s *Server) handleNodeGet(w http.ResponseWriter, r *http.Request) {
	asOf, err := timeParam(r, "as_of")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	n, err := s.store.GetNode(r.Context(), chi.URLParam(r, "scope"), refParam(r), asOf)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, n)
}

// timeParam reads an RFC 3339 time from the query, normalised to Kura's
// format so it compares with stored times as text.
func timeParam(r *http.Request, name string) (string, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return "", nil
	}
	t, err := kura.ParseTime(v)
	if err != nil {
		return "", kura.Invalid(name, "%s must be an RFC 3339 time", name)
	}
	return kura.FormatTime(t), nil
}

// enumParam reads an optional query value that must be one of allowed.
func enumParam(r *http.Request, name string, allowed []string) (string, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return "", nil
	}
	for _, a := range allowed {
		if a == v {
			return v, nil
		}
	}
	return "", kura.Invalid(name, "unknown %s %q", name, v).WithDetail("allowed", allowed)
}

// confidenceParam reads min_confidence.
func confidenceParam(r *http.Request) (*float64, error) {
	v := r.URL.Query().Get("min_confidence")
	if v == "" {
		return nil, nil
	}
	c, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return nil, kura.Invalid("min_confidence", "min_confidence must be a number between 0 and 1")
	}
	if err := kura.ValidConfidence("min_confidence", c); err != nil {
		return nil, err
	}
	return &c, nil
}

func ownerParam(r *http.Request) (string, error) {
	v := r.URL.Query().Get("owner")
	if v != "" && !kura.ValidAuthorID(v) {
		return "", kura.Invalid("owner", "owner must be an identity such as agent:bmo")
	}
	return v, nil
}

// nodeParams are the filters node listing and search share.
type nodeParams struct {
	limit                             int
	kind, lifecycle, authority, owner string
	minConfidence                     *float64
}

func (s *Server) nodeParams(r *http.Request) (p nodeParams, err error) {
	if p.limit, err = parseLimit(r.URL.Query().Get("limit")); err != nil {
		return p, err
	}
	if p.kind, err = enumParam(r, "kind", s.store.NodeKinds()); err != nil {
		return p, err
	}
	if p.lifecycle, err = enumParam(r, "lifecycle", kura.Lifecycles); err != nil {
		return p, err
	}
	if p.authority, err = enumParam(r, "authority", kura.Authorities); err != nil {
		return p, err
	}
	if p.owner, err = ownerParam(r); err != nil {
		return p, err
	}
	p.minConfidence, err = confidenceParam(r)
	return p, err
}

func (s *Server) handleNodeList(w http.ResponseWriter, r *http.Request) {
	p, err := s.nodeParams(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	f := kura.NodeFilter{Kind: p.kind, Lifecycle: p.lifecycle, Authority: p.authority, Owner: p.owner,
		MinConfidence: p.minConfidence, Limit: p.limit}
	if f.UpdatedSince, err = timeParam(r, "updated_since"); err != nil {
		s.writeError(w, r, err)
		return
	}
	if c := r.URL.Query().Get("cursor"); c != "" {
		v, err := decodeCursor(c, "n")
		if _, perr := strconv.ParseInt(v, 10, 64); err != nil || perr != nil {
			s.writeError(w, r, kura.Invalid("cursor", "cursor is not one this server handed out"))
			return
		}
		f.After = v
	}
	nodes, next, err := s.store.ListNodes(r.Context(), chi.URLParam(r, "scope"), f)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := map[string]any{"nodes": nodes}
	if next != "" {
		out["next_cursor"] = encodeCursor("n", next)
	}
	s.writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleNodeHistory(w http.ResponseWriter, r *http.Request) {
	h, err := s.store.NodeHistory(r.Context(), chi.URLParam(r, "scope"), refParam(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, h)
}

func (s *Server) handleRelationList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, err := parseLimit(q.Get("limit"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	kind, err := enumParam(r, "kind", kura.RelationKind)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var after string
	if c := q.Get("cursor"); c != "" {
		v, err := decodeCursor(c, "r")
		if _, perr := strconv.ParseInt(v, 10, 64); err != nil || perr != nil {
			s.writeError(w, r, kura.Invalid("cursor", "cursor is not one this server handed out"))
			return
		}
		after = v
	}
	rels, next, err := s.store.ListRelations(r.Context(), chi.URLParam(r, "scope"), q.Get("ref"), kind, after, limit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := map[string]any{"relations": rels}
	if next != "" {
		out["next_cursor"] = encodeCursor("r", next)
	}
	s.writeJSON(w, http.StatusOK, out)
}

// maxSearchQuery bounds q: a search is a handful of index lookups, not a
// document.
const maxSearchQuery = 1024

func (s *Server) handleSearch(w http.ResponseWriter, r *http.Request) {
	qv := r.URL.Query()
	if len(qv.Get("q")) > maxSearchQuery {
		s.writeError(w, r, kura.Invalid("q", "q is longer than %d bytes", maxSearchQuery))
		return
	}
	p, err := s.nodeParams(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	q := kura.SearchQuery{Q: qv.Get("q"), Kind: p.kind, Lifecycle: p.lifecycle, Authority: p.authority, Owner: p.owner,
		MinConfidence: p.minConfidence, TargetFile: qv.Get("target_file"), Limit: p.limit}
	if q.Mode, err = enumParam(r, "mode", kura.SearchModes); err != nil {
		s.writeError(w, r, err)
		return
	}
	ans, err := s.store.SearchMemory(r.Context(), chi.URLParam(r, "scope"), q)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, ans)
}

// refParam is the {ref} path segment, unescaped: chi matches on the raw
// path, so a client that wrote "belief%3Ab1" (as encodeURIComponent does)
// would otherwise see its ref refused.
func refParam(r *http.Request) string {
	v := chi.URLParam(r, "ref")
	if u, err := url.PathUnescape(v); err == nil {
		return u
	}
	return v
}

// checkNode binds a node's owner and refuses derived_from records the
// caller may not see.
func checkNode(s *Server, r *http.Request, p auth.Principal, in *kura.NodeInput) error {
	return s.checkNodes(r, p, []kura.NodeInput{*in})
}

func (s *Server) checkNodes(r *http.Request, p auth.Principal, nodes []kura.NodeInput) error {
	var owners, missing []string
	for _, n := range nodes {
		if n.Owner != nil {
			owners = append(owners, *n.Owner)
		}
		for _, d := range n.DerivedFrom {
			id, ok := strings.CutPrefix(d, "record:")
			if !ok || !kura.ValidID(id) {
				continue
			}
			vis, err := s.recordVisible(r.Context(), p, id)
			if err != nil {
				return err
			}
			if !vis {
				missing = append(missing, d)
			}
		}
	}
	if err := checkAuthors(p, "owner", owners); err != nil {
		return err
	}
	if len(missing) > 0 {
		return kura.Invalid("derived_from", "derived_from names what does not exist in scope %s: %s", chi.URLParam(r, "scope"), strings.Join(missing, ", ")).WithDetail("missing", missing)
	}
	return nil
}
