package api

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/kura-memory/kura/internal/auth"
	"github.com/kura-memory/kura/internal/kura"
	"golang.org/x/time/rate"
)

// Authentication and authorisation (docs/security.md). One middleware
// resolves the caller from its bearer token (or auth.Local without
// tokens), then looks up the route it is about to serve (route.go): the
// role it needs and the check of its path and query. A route with a body
// checks the decoded body (authors, owners, scopes and the objects it
// names) after its one decoding, before the store call (bodyRoute).
// Handlers stay unaware of all this, except listings, which filter in the
// store query (listSessions, listTurns, restrictEvents).

// AccessStore is what the access checks need from the store.
type AccessStore interface {
	LedgerVisible(ctx context.Context, id string, projects []string) (bool, error)
	RecordVisible(ctx context.Context, id string, rd kura.Reader) (bool, error)
	RecordsVisible(ctx context.Context, ids []string, rd kura.Reader) (map[string]bool, error)
	RecordTypes(ctx context.Context, ids []string) (map[string]string, error)
	RecordIDByHash(ctx context.Context, hash string) (string, error)
	SessionAccess(ctx context.Context, id string) (project, scope, createdBy string, err error)
	TurnAccess(ctx context.Context, id string) (project, scope string, err error)
	ListSessionsIn(ctx context.Context, projects []string, after string, limit int) ([]kura.Session, string, error)
	ListTurnsIn(ctx context.Context, projects []string, sessionID, state, after string, limit int) ([]kura.Turn, string, error)
}

// router lookups without serving: the middleware runs before chi routes.
type routeFinder interface {
	Find(rctx *chi.Context, method, path string) string
}

// matchRoute finds the route a request will take, and its path
// parameters, before the router does: the access rules and the path
// parameter checks both need it. It is found once per request; the second
// middleware takes it from the context.
func (s *Server) matchRoute(r *http.Request) (*chi.Context, string) {
	if m, ok := r.Context().Value(routeKey{}).(*routeMatch); ok {
		return m.rc, m.pattern
	}
	rc := chi.NewRouteContext()
	path := r.URL.RawPath
	if path == "" {
		path = r.URL.Path
	}
	pattern := ""
	if f, ok := s.router.(routeFinder); ok {
		pattern = f.Find(rc, r.Method, path)
	}
	return rc, pattern
}

type routeKey struct{}

type routeMatch struct {
	rc      *chi.Context
	pattern string
}

// authenticate resolves the principal and enforces the matched route's
// role and path check.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc, pattern := s.matchRoute(r)
		rt, known := s.byPattern[patternKey(r.Method, pattern)]
		p := auth.Local
		if s.cfg.Tokens != nil {
			if known && rt.open {
				next.ServeHTTP(w, r)
				return
			}
			var ok bool
			if p, ok = s.cfg.Tokens.Lookup(bearer(r)); !ok {
				w.Header().Set("WWW-Authenticate", `Bearer realm="kura"`)
				s.writeError(w, r, kura.Errorf(kura.EUnauth, "a valid bearer token is required (Authorization: Bearer <token>)"))
				return
			}
			if retry, ok := s.limiter.allow(p.Identity); !ok {
				w.Header().Set("Retry-After", strconv.Itoa(retry))
				s.writeError(w, r, kura.Errorf(kura.ERateLimited, "%s sends more than %g requests/s; retry after %ds", p.Identity, s.cfg.RateLimit, retry).WithDetail("retry_after_seconds", retry))
				return
			}
		}
		r = r.WithContext(context.WithValue(auth.WithPrincipal(r.Context(), p), routeKey{}, &routeMatch{rc, pattern}))
		release, ok := s.reserveBody(w, r)
		if !ok {
			return
		}
		defer release()
		if pattern == "" || p.Anonymous {
			// No route: chi answers 404/405. Tokenless: the local user
			// may do everything, any author_id included (API.md).
			next.ServeHTTP(w, r)
			return
		}
		if !known {
			// chi matched a route mount did not register: refuse it
			// rather than guess who may call it.
			s.writeError(w, r, kura.Errorf(kura.EDenied, "%s %s has no access rule", r.Method, pattern))
			return
		}
		if !p.Can(rt.role) {
			s.writeError(w, r, kura.Errorf(kura.EDenied, "%s holds the %s role; this call needs %s", p.Identity, p.Role, rt.role))
			return
		}
		if rt.check != nil {
			if err := rt.check(s, r, rc, p); err != nil {
				s.writeError(w, r, err)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

// limiter holds one token bucket per identity. Identities come only from
// the tokens file, so the map is bounded by it.
type limiter struct {
	rps   float64
	burst int
	mu    sync.Mutex
	by    map[string]*rate.Limiter
}

func newLimiter(rps float64, burst int) *limiter {
	if rps <= 0 {
		return nil
	}
	return &limiter{rps: rps, burst: max(burst, 1), by: map[string]*rate.Limiter{}}
}

// allow takes one request from identity's bucket, or says in how many
// whole seconds one will be there.
func (l *limiter) allow(identity string) (int, bool) {
	if l == nil {
		return 0, true
	}
	l.mu.Lock()
	lim, ok := l.by[identity]
	if !ok {
		lim = rate.NewLimiter(rate.Limit(l.rps), l.burst)
		l.by[identity] = lim
	}
	l.mu.Unlock()
	now := time.Now()
	res := lim.ReserveN(now, 1)
	d := res.DelayFrom(now)
	if d == 0 {
		return 0, true
	}
	res.CancelAt(now)
	return max(1, int(math.Ceil(d.Seconds()))), false
}

func denied(format string, args ...any) error { return kura.Errorf(kura.EDenied, format, args...) }

// checkAuthors is author binding: sys: is kurad's own, and a non-admin
// writes only under its own identity.
func checkAuthors(p auth.Principal, field string, authors []string) error {
	for _, a := range authors {
		if a == "" {
			continue // missing: the handler's validation answers
		}
		if strings.HasPrefix(a, "sys:") {
			return denied("%s %s: sys: authors are kurad's own; no token may write as one", field, a)
		}
		if a != p.Identity && !p.Can(auth.RoleAdmin) {
			return denied("%s %s: %s may write only under its own identity", field, a, p.Identity)
		}
	}
	return nil
}

// checkRecordAuthors is checkAuthors for records, and more: a token
// limited to projects writes records only under its own identity, its
// role whatever. Records deduplicate by hash (type, content, author), so
// a record written under another author may be one that already exists
// and that the token cannot read; the answer (200 with its id, or the
// record joining the token's turn) would confirm it exists. Refusing
// every such write, whether or not the record exists, says nothing; under
// its own identity a token only ever meets records it wrote, which it
// may read.
func checkRecordAuthors(p auth.Principal, field string, authors []string) error {
	if err := checkAuthors(p, field, authors); err != nil {
		return err
	}
	if !restricted(p) {
		return nil
	}
	for _, a := range authors {
		if a != "" && a != p.Identity {
			return denied("%s %s: %s is limited to projects and writes records only under its own identity", field, a, p.Identity)
		}
	}
	return nil
}

// restricted reports whether p's reads of project-less objects (records,
// ledgers) go through the visibility rules.
func restricted(p auth.Principal) bool { return !p.AllProjects() }

// readerOf is p as the store's record visibility rules take it: a
// project-limited token reads through its projects, a scope-limited one
// does not read memory kurad packed from other scopes.
func readerOf(p auth.Principal) kura.Reader {
	rd := kura.Reader{Identity: p.Identity}
	if !p.AllProjects() {
		rd.Projects = append([]string{}, p.Projects...)
	}
	if !p.AllScopes() {
		rd.Scopes = append([]string{}, p.Scopes...)
	}
	return rd
}

// writerOf is the caller of a memory write as the store checks it: only
// admins (the tokenless local user among them) write nodes others own.
func writerOf(r *http.Request) kura.Writer {
	p := auth.FromContext(r.Context())
	return kura.Writer{Identity: p.Identity, Admin: p.Can(auth.RoleAdmin)}
}

func (s *Server) access() AccessStore { return s.store }

func (s *Server) recordVisible(ctx context.Context, p auth.Principal, id string) (bool, error) {
	rd := readerOf(p)
	if rd.Unlimited() {
		return true, nil
	}
	return s.access().RecordVisible(ctx, id, rd)
}

func (s *Server) ledgerVisible(ctx context.Context, p auth.Principal, id string) (bool, error) {
	if !restricted(p) {
		return true, nil
	}
	return s.access().LedgerVisible(ctx, id, p.Projects)
}

func needAllProjects(what string) accessCheck {
	return func(s *Server, r *http.Request, rc *chi.Context, p auth.Principal) error {
		if restricted(p) {
			return denied("%s belong to no project: they need a token with projects *", what)
		}
		return nil
	}
}

func needAll(s *Server, r *http.Request, rc *chi.Context, p auth.Principal) error {
	if !p.AllProjects() || !p.AllScopes() {
		return denied("this call reaches every scope and project: it needs an admin token with scopes * and projects *")
	}
	return nil
}

// projectQuery: an explicit project= outside the token's projects is 403,
// whatever the project holds.
func projectQuery(s *Server, r *http.Request, rc *chi.Context, p auth.Principal) error {
	if v := r.URL.Query().Get("project"); v != "" && kura.ValidSlug(v) && !p.AllowsProject(v) {
		return denied("project %s is outside the token's projects", v)
	}
	return nil
}

// requireLedger refuses a reference to a ledger the caller may not see
// exactly as the store refuses one that does not exist.
func (s *Server) requireLedger(ctx context.Context, p auth.Principal, field, id string) error {
	ok, err := s.ledgerVisible(ctx, p, id)
	if err == nil && !ok {
		err = kura.Invalid(field, "ledger %s does not exist", id).WithDetail("missing", []string{id})
	}
	return err
}

// checkRecordRefs binds the authors of new records and refuses existing
// ones the caller may not see as the store refuses missing ones.
func (s *Server) checkRecordRefs(ctx context.Context, p auth.Principal, refs []kura.RecordRef) error {
	var authors []string
	var missing []string
	for _, ref := range refs {
		if ref.RecordID == "" {
			authors = append(authors, ref.AuthorID)
			continue
		}
		if !kura.ValidID(ref.RecordID) {
			continue
		}
		ok, err := s.recordVisible(ctx, p, ref.RecordID)
		if err != nil {
			return err
		}
		if !ok {
			missing = append(missing, ref.RecordID)
		}
	}
	if err := checkRecordAuthors(p, "author_id", authors); err != nil {
		return err
	}
	if len(missing) > 0 {
		return kura.Errorf(kura.EInvalid, "%d record(s) do not exist", len(missing)).WithDetail("missing", missing)
	}
	return nil
}

// scoped checks the {scope} path parameter, then more.
func scoped(more accessCheck) accessCheck {
	return func(s *Server, r *http.Request, rc *chi.Context, p auth.Principal) error {
		scope := rc.URLParam("scope")
		if !kura.ValidSlug(scope) {
			return nil
		}
		if !p.AllowsScope(scope) {
			return denied("scope %s is outside the token's scopes", scope)
		}
		if more != nil {
			return more(s, r, rc, p)
		}
		return nil
	}
}
