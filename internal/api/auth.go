package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
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
// tokens), then looks the matched route up in accessRules: the role it
// needs and the check that finds its scope, project, authors and the
// objects it names. Handlers stay unaware of all this, except listings,
// which filter in the store query (listSessions, listTurns, restrictEvents).

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

// accessCheck refuses a call the principal may not make; nil lets it
// through. rc holds the matched route's parameters.
type accessCheck func(s *Server, r *http.Request, rc *chi.Context, p auth.Principal) error

// accessRule is what a route requires. open routes need no token.
type accessRule struct {
	role  auth.Role
	open  bool
	check accessCheck
}

// accessRules maps "METHOD pattern" of every route to its rule. A route
// without a rule is refused (TestAccessRules_CoverEveryRoute keeps this
// table complete).
var accessRules = map[string]accessRule{
	"GET /healthz":                   {open: true},
	"GET /readyz":                    {open: true},
	"GET /metrics":                   {role: auth.RoleReader},
	"GET /v1/info":                   {role: auth.RoleReader},
	"POST /v1/records":               {role: auth.RoleWriter, check: bodyCheck[kura.RecordInput](func(in *kura.RecordInput) []string { return []string{in.AuthorID} }, recordProject)},
	"POST /v1/records/batch":         {role: auth.RoleWriter, check: bodyCheck[recordBatch](func(in *recordBatch) []string { return recordAuthors(in.Records) }, recordBatchProjects)},
	"GET /v1/records":                {role: auth.RoleReader, check: checkRecordList},
	"GET /v1/records/by-hash/{hash}": {role: auth.RoleReader, check: checkRecordHash},
	"GET /v1/records/{id}":           {role: auth.RoleReader, check: recordParam("id")},
	// Redaction: admin, and the record must be visible to the caller.
	"POST /v1/records/{id}/redact": {role: auth.RoleAdmin, check: recordParam("id")},
	// MCP: any valid token; every tool call is a request to the routes
	// here, carrying the same token, and is checked again as such.
	"POST /mcp": {role: auth.RoleReader},

	"POST /v1/ledgers":                       {role: auth.RoleWriter, check: needAllProjects("free-standing ledgers (POST /v1/ledgers)")},
	"GET /v1/ledgers/{id}":                   {role: auth.RoleReader, check: ledgerParams("id")},
	"GET /v1/ledgers/{id}/records":           {role: auth.RoleReader, check: ledgerParams("id")},
	"GET /v1/ledgers/{id}/verify":            {role: auth.RoleReader, check: ledgerParams("id")},
	"GET /v1/ledgers/{id}/diff/{other}":      {role: auth.RoleReader, check: ledgerParams("id", "other")},
	"GET /v1/ledgers/{id}/proof/{record_id}": {role: auth.RoleReader, check: ledgerParams("id")},

	"POST /v1/sessions":            {role: auth.RoleWriter, check: checkSessionCreate},
	"GET /v1/sessions":             {role: auth.RoleReader, check: projectQuery},
	"GET /v1/sessions/{id}":        {role: auth.RoleReader, check: sessionParam},
	"GET /v1/sessions/{id}/log":    {role: auth.RoleReader, check: sessionParam},
	"GET /v1/sessions/{id}/reflog": {role: auth.RoleReader, check: sessionParam},
	"GET /v1/sessions/{id}/verify": {role: auth.RoleReader, check: sessionParam},
	"POST /v1/sessions/{id}/head":  {role: auth.RoleWriter, check: checkHeadMove},
	"POST /v1/sessions/{id}/turns": {role: auth.RoleWriter, check: checkTurnOpen},
	"GET /v1/turns":                {role: auth.RoleReader}, // filtered by listTurns
	"GET /v1/turns/{id}":           {role: auth.RoleReader, check: turnParam},
	"POST /v1/turns/{id}/claim":    {role: auth.RoleWriter, check: checkClaim},
	"POST /v1/turns/{id}/renew":    {role: auth.RoleWriter, check: turnParam},
	"POST /v1/turns/{id}/records":  {role: auth.RoleWriter, check: checkTurnAppend},
	"POST /v1/turns/{id}/close":    {role: auth.RoleWriter, check: turnParam},
	"GET /v1/events":               {role: auth.RoleReader, check: projectQuery},
	"GET /v1/events/stream":        {role: auth.RoleReader, check: projectQuery},

	"POST /v1/scopes/{scope}/memory/nodes":                  {role: auth.RoleWriter, check: scoped(checkNodeBody[kura.NodeInput](func(in *kura.NodeInput) []kura.NodeInput { return []kura.NodeInput{*in} }))},
	"POST /v1/scopes/{scope}/memory/nodes/batch":            {role: auth.RoleWriter, check: scoped(checkNodeBody[kura.NodeBatchInput](func(in *kura.NodeBatchInput) []kura.NodeInput { return in.Nodes }))},
	"GET /v1/scopes/{scope}/memory/nodes":                   {role: auth.RoleReader, check: scoped(nil)},
	"GET /v1/scopes/{scope}/memory/nodes/{ref}":             {role: auth.RoleReader, check: scoped(nil)},
	"GET /v1/scopes/{scope}/memory/nodes/{ref}/history":     {role: auth.RoleReader, check: scoped(nil)},
	"POST /v1/scopes/{scope}/memory/nodes/{ref}/transition": {role: auth.RoleWriter, check: scoped(nil)},
	"POST /v1/scopes/{scope}/memory/nodes/{ref}/revise":     {role: auth.RoleWriter, check: scoped(checkNodeBody[kura.NodeInput](func(in *kura.NodeInput) []kura.NodeInput { return []kura.NodeInput{*in} }))},
	"POST /v1/scopes/{scope}/memory/relations":              {role: auth.RoleWriter, check: scoped(nil)},
	"GET /v1/scopes/{scope}/memory/relations":               {role: auth.RoleReader, check: scoped(nil)},
	"POST /v1/scopes/{scope}/memory/feedback":               {role: auth.RoleWriter, check: scoped(bodyCheck[kura.FeedbackInput](func(in *kura.FeedbackInput) []string { return []string{in.AuthorID} }, nil))},
	"GET /v1/scopes/{scope}/memory/search":                  {role: auth.RoleReader, check: scoped(nil)},
	"POST /v1/scopes/{scope}/context/preview":               {role: auth.RoleReader, check: scoped(nil)}, // writes nothing
	"POST /v1/scopes/{scope}/context/compile":               {role: auth.RoleWriter, check: scoped(nil)},
	"GET /v1/scopes/{scope}/context/bundles/{id}":           {role: auth.RoleReader, check: scoped(nil)},
	"GET /v1/scopes/{scope}/provenance/{ref}":               {role: auth.RoleReader, check: scoped(provenanceRef)},
	"GET /v1/scopes/{scope}/provenance/{ref}/evidence":      {role: auth.RoleReader, check: scoped(provenanceRef)},
	"GET /v1/scopes/{scope}/provenance/{ref}/raw-sources":   {role: auth.RoleReader, check: scoped(provenanceRef)},
	"GET /v1/scopes/{scope}/provenance/{ref}/derived":       {role: auth.RoleReader, check: scoped(provenanceRef)},

	"PUT /v1/kb/{kb}/entries":       {role: auth.RoleWriter, check: kbBody[kura.KBEntryInput](func(in *kura.KBEntryInput) []string { return []string{in.Scope} })},
	"PUT /v1/kb/{kb}/entries/batch": {role: auth.RoleWriter, check: kbBody[kura.KBBatchInput](kbBatchScopes)},
	"PATCH /v1/kb/{kb}/entries":     {role: auth.RoleWriter, check: kbBody[kura.KBPatch](func(in *kura.KBPatch) []string { return []string{in.Scope} })},
	"DELETE /v1/kb/{kb}/entries":    {role: auth.RoleWriter, check: kbQueryScope},
	"GET /v1/kb/{kb}/entries":       {role: auth.RoleReader, check: kbQueryScope},
	"GET /v1/kb/{kb}/stats":         {role: auth.RoleReader, check: kbQueryScope},
	"GET /v1/kb/{kb}/history":       {role: auth.RoleReader, check: kbQueryScope},
	"GET /v1/kb/{kb}/lookup":        {role: auth.RoleReader, check: kbQueryScope},
	"GET /v1/kb/{kb}/search":        {role: auth.RoleReader, check: kbQueryScope},

	// Backups hold everything, import writes any author: admins whose
	// token is not limited to some scopes or projects.
	"POST /v1/admin/import":         {role: auth.RoleAdmin, check: needAll},
	"POST /v1/admin/backup":         {role: auth.RoleAdmin, check: needAll},
	"POST /v1/admin/compact-events": {role: auth.RoleAdmin, check: needAll},
}

// openPattern is how the rule table spells a route pattern chi matched.
func rulePattern(method, pattern string) string {
	if len(pattern) > 1 {
		pattern = strings.TrimSuffix(pattern, "/")
	}
	return method + " " + pattern
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

// authenticate resolves the principal and enforces accessRules.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc, pattern := s.matchRoute(r)
		rule, known := accessRules[rulePattern(r.Method, pattern)]
		p := auth.Local
		if s.cfg.Tokens != nil {
			if known && rule.open {
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
			s.writeError(w, r, kura.Errorf(kura.EDenied, "%s %s has no access rule", r.Method, pattern))
			return
		}
		if !p.Can(rule.role) {
			s.writeError(w, r, kura.Errorf(kura.EDenied, "%s holds the %s role; this call needs %s", p.Identity, p.Role, rule.role))
			return
		}
		if rule.check != nil {
			if err := rule.check(s, r, rc, p); err != nil {
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

// peekBody decodes the request body into v for a check and puts the bytes
// back for the handler. A body it cannot read is left to the handler,
// whose stricter decoder refuses it (nothing it accepts fails here).
func (s *Server) peekBody(r *http.Request, v any) bool {
	if r.Body == nil {
		return false
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, s.cfg.MaxBodyBytes+1))
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(b), r.Body))
	if err != nil || int64(len(b)) > s.cfg.MaxBodyBytes {
		return false
	}
	return json.Unmarshal(b, v) == nil
}

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

type recordBatch struct {
	Records []kura.RecordInput `json:"records"`
}

func recordAuthors(ins []kura.RecordInput) []string {
	out := make([]string, len(ins))
	for i := range ins {
		out[i] = ins[i].AuthorID
	}
	return out
}

// recordProject: a record written outside a turn sends its event to
// the project its metadata.project_id names (the feed and the NATS
// subject), so the token must hold that project. Inside a turn the
// session's project is used whatever the metadata says.
func recordProject(s *Server, r *http.Request, p auth.Principal, in *kura.RecordInput) error {
	if pid := in.Metadata["project_id"]; kura.ValidSlug(pid) && !p.AllowsProject(pid) {
		return denied("metadata.project_id %s is outside the token's projects (the record's event would go to that project)", pid)
	}
	return nil
}

func recordBatchProjects(s *Server, r *http.Request, p auth.Principal, in *recordBatch) error {
	for i := range in.Records {
		if err := recordProject(s, r, p, &in.Records[i]); err != nil {
			return err
		}
	}
	return nil
}

// bodyCheck binds the authors found in the body, then runs more.
func bodyCheck[T any](authors func(*T) []string, more func(s *Server, r *http.Request, p auth.Principal, in *T) error) accessCheck {
	return func(s *Server, r *http.Request, rc *chi.Context, p auth.Principal) error {
		var in T
		if !s.peekBody(r, &in) {
			return nil
		}
		if err := checkAuthors(p, "author_id", authors(&in)); err != nil {
			return err
		}
		if more != nil {
			return more(s, r, p, &in)
		}
		return nil
	}
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

func recordParam(name string) accessCheck {
	return func(s *Server, r *http.Request, rc *chi.Context, p auth.Principal) error {
		id := rc.URLParam(name)
		if !kura.ValidID(id) {
			return nil // the handler answers 400, the same for everyone
		}
		ok, err := s.recordVisible(r.Context(), p, id)
		if err == nil && !ok {
			err = kura.Errorf(kura.ENotFound, "record not found")
		}
		return err
	}
}

func checkRecordHash(s *Server, r *http.Request, rc *chi.Context, p auth.Principal) error {
	h := rc.URLParam("hash")
	if readerOf(p).Unlimited() || !kura.ValidHash(h) {
		return nil
	}
	id, err := s.access().RecordIDByHash(r.Context(), h)
	if err != nil {
		return err
	}
	ok := false
	if id != "" {
		if ok, err = s.recordVisible(r.Context(), p, id); err != nil {
			return err
		}
	}
	if !ok {
		return kura.Errorf(kura.ENotFound, "record not found")
	}
	return nil
}

// checkRecordList: a project-restricted caller lists only the records it
// wrote (the listing has no project to filter by); it may not name another
// author.
func checkRecordList(s *Server, r *http.Request, rc *chi.Context, p auth.Principal) error {
	if !restricted(p) {
		return nil
	}
	q := r.URL.Query()
	switch a := q.Get("author_id"); a {
	case p.Identity:
	case "":
		q.Set("author_id", p.Identity)
		r.URL.RawQuery = q.Encode()
	default:
		return denied("%s is limited to projects and lists only the records it wrote (author_id=%s)", p.Identity, p.Identity)
	}
	return nil
}

func ledgerParams(names ...string) accessCheck {
	return func(s *Server, r *http.Request, rc *chi.Context, p auth.Principal) error {
		for _, n := range names {
			id := rc.URLParam(n)
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
		}
		return nil
	}
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

// session returns the session's access facts; a session of a project
// the caller may not see answers exactly as a missing one.
func (s *Server) session(ctx context.Context, p auth.Principal, id string) (project, scope, createdBy string, err error) {
	project, scope, createdBy, err = s.access().SessionAccess(ctx, id)
	if err == nil && !p.AllowsProject(project) {
		err = kura.Errorf(kura.ENotFound, "session not found")
	}
	return
}

func sessionParam(s *Server, r *http.Request, rc *chi.Context, p auth.Principal) error {
	id := rc.URLParam("id")
	if !kura.ValidID(id) {
		return nil
	}
	_, _, _, err := s.session(r.Context(), p, id)
	return err
}

func turnParam(s *Server, r *http.Request, rc *chi.Context, p auth.Principal) error {
	_, err := turnScope(s, r, rc, p)
	return err
}

func turnScope(s *Server, r *http.Request, rc *chi.Context, p auth.Principal) (string, error) {
	id := rc.URLParam("id")
	if !kura.ValidID(id) {
		return "", nil
	}
	project, scope, err := s.access().TurnAccess(r.Context(), id)
	if err == nil && !p.AllowsProject(project) {
		err = kura.Errorf(kura.ENotFound, "turn not found")
	}
	return scope, err
}

// checkClaim: the worker of a claim is bound like an author, so a writer
// claims turns only as itself (a claim without worker is the caller's).
func checkClaim(s *Server, r *http.Request, rc *chi.Context, p auth.Principal) error {
	if err := turnParam(s, r, rc, p); err != nil {
		return err
	}
	var in kura.TurnClaim
	if !s.peekBody(r, &in) || !kura.ValidAuthorID(in.Worker) {
		return nil // the handler answers what is wrong with the body
	}
	return checkAuthors(p, "worker", []string{in.Worker})
}

func checkSessionCreate(s *Server, r *http.Request, rc *chi.Context, p auth.Principal) error {
	var in kura.SessionInput
	if !s.peekBody(r, &in) || in.Validate() != nil {
		return nil
	}
	if !p.AllowsProject(in.Project) {
		return denied("project %s is outside the token's projects", in.Project)
	}
	scope := in.Scope
	if scope == "" {
		scope = in.Project // the store's default
	}
	if !p.AllowsScope(scope) {
		return denied("scope %s is outside the token's scopes", scope)
	}
	if in.FromLedgerID != "" {
		return s.requireLedger(r.Context(), p, "from_ledger_id", in.FromLedgerID)
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

// checkHeadMove: moving a head by hand is for admins and the session's
// creator; the ledger must be one the caller may see.
func checkHeadMove(s *Server, r *http.Request, rc *chi.Context, p auth.Principal) error {
	id := rc.URLParam("id")
	if !kura.ValidID(id) {
		return nil
	}
	_, _, by, err := s.session(r.Context(), p, id)
	if err != nil {
		return err
	}
	if !p.Can(auth.RoleAdmin) && (by == "" || by != p.Identity) {
		return denied("only admins and the identity that created a session move its head by hand")
	}
	var mv kura.HeadMove
	if !s.peekBody(r, &mv) || !kura.ValidID(mv.LedgerID) {
		return nil
	}
	return s.requireLedger(r.Context(), p, "ledger_id", mv.LedgerID)
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
	if err := checkAuthors(p, "author_id", authors); err != nil {
		return err
	}
	if len(missing) > 0 {
		return kura.Errorf(kura.EInvalid, "%d record(s) do not exist", len(missing)).WithDetail("missing", missing)
	}
	return nil
}

func checkTurnOpen(s *Server, r *http.Request, rc *chi.Context, p auth.Principal) error {
	id := rc.URLParam("id")
	if !kura.ValidID(id) {
		return nil
	}
	_, scope, _, err := s.session(r.Context(), p, id)
	if err != nil {
		return err
	}
	var in kura.TurnOpenInput
	if !s.peekBody(r, &in) {
		return nil
	}
	if in.Instruction != nil {
		if err := checkAuthors(p, "instruction.author_id", []string{in.Instruction.AuthorID}); err != nil {
			return err
		}
	}
	if in.Memory != nil && !p.AllowsScope(scope) {
		return denied("the session's scope %s is outside the token's scopes; open the turn without memory", scope)
	}
	return s.checkRecordRefs(r.Context(), p, in.Context)
}

func checkTurnAppend(s *Server, r *http.Request, rc *chi.Context, p auth.Principal) error {
	scope, err := turnScope(s, r, rc, p)
	if err != nil {
		return err
	}
	var in kura.TurnAppend
	if !s.peekBody(r, &in) {
		return nil
	}
	if err := s.checkRecordRefs(r.Context(), p, in.Records); err != nil {
		return err
	}
	if scope == "" || p.AllowsScope(scope) {
		return nil
	}
	return s.checkNoMemory(r.Context(), scope, in.Records)
}

// extractedTypes are the record types a turn's close turns into memory
// nodes of the session's scope.
var extractedTypes = []string{"memory.fact", "memory.decision"}

// checkNoMemory refuses memory records, new or by id, in the output of a
// turn whose scope the caller may not write: its close would extract them
// into that scope, whoever closes it. Record types never change, so the
// check holds when the append is written.
func (s *Server) checkNoMemory(ctx context.Context, scope string, refs []kura.RecordRef) error {
	var ids []string
	for _, ref := range refs {
		switch {
		case ref.RecordID == "":
			if slices.Contains(extractedTypes, ref.Type) {
				return memoryScopeDenied(scope, ref.Type)
			}
		case kura.ValidID(ref.RecordID):
			ids = append(ids, ref.RecordID)
		}
	}
	types, err := s.access().RecordTypes(ctx, ids)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if slices.Contains(extractedTypes, types[id]) {
			return memoryScopeDenied(scope, types[id])
		}
	}
	return nil
}

func memoryScopeDenied(scope, typ string) error {
	return kura.Errorf(kura.EDenied, "%s records are extracted into scope %s at close, and scope %s is outside the token's scopes", typ, scope, scope).WithDetail("scope", scope)
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

// checkNodeBody binds node owners and refuses derived_from records the
// caller may not see.
func checkNodeBody[T any](nodes func(*T) []kura.NodeInput) accessCheck {
	return func(s *Server, r *http.Request, rc *chi.Context, p auth.Principal) error {
		var in T
		if !s.peekBody(r, &in) {
			return nil
		}
		var owners, missing []string
		for _, n := range nodes(&in) {
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
			return kura.Invalid("derived_from", "derived_from names what does not exist in scope %s: %s", rc.URLParam("scope"), strings.Join(missing, ", ")).WithDetail("missing", missing)
		}
		return nil
	}
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

// KB scopes: the default scope "" is checked as the name "default".
func kbScopeName(s string) string { return kura.KBScopeName(s) }

func kbAllows(p auth.Principal, scopes []string) error {
	for _, sc := range scopes {
		if !kura.ValidKBScope(sc) {
			continue
		}
		if !p.AllowsScope(kbScopeName(sc)) {
			return denied("knowledge-base scope %s is outside the token's scopes", kbScopeName(sc))
		}
	}
	return nil
}

func kbQueryScope(s *Server, r *http.Request, rc *chi.Context, p auth.Principal) error {
	vs := r.URL.Query()["scope"]
	if len(vs) > 1 {
		return nil // the handler refuses a repeated scope
	}
	sc := ""
	if len(vs) == 1 {
		sc = vs[0]
	}
	return kbAllows(p, []string{sc})
}

func kbBody[T any](scopes func(*T) []string) accessCheck {
	return func(s *Server, r *http.Request, rc *chi.Context, p auth.Principal) error {
		var in T
		if !s.peekBody(r, &in) {
			return nil
		}
		return kbAllows(p, scopes(&in))
	}
}

func kbBatchScopes(in *kura.KBBatchInput) []string {
	out := make([]string, len(in.Entries))
	for i := range in.Entries {
		out[i] = in.Entries[i].Scope
	}
	return out
}

// listSessions is GET /v1/sessions for the caller: a project-restricted
// one sees only its projects' sessions.
func (s *Server) listSessions(r *http.Request, project, after string, limit int) ([]kura.Session, string, error) {
	p := auth.FromContext(r.Context())
	if project == "" && !p.AllProjects() {
		return s.access().ListSessionsIn(r.Context(), p.Projects, after, limit)
	}
	return s.store.ListSessions(r.Context(), project, after, limit)
}

// listTurns is GET /v1/turns for the caller: a turn of a session it may
// not see is left out, and a session_id it may not see lists nothing, as
// a missing one does.
func (s *Server) listTurns(r *http.Request, sid, state, after string, limit int) ([]kura.Turn, string, error) {
	p := auth.FromContext(r.Context())
	if !p.AllProjects() {
		return s.access().ListTurnsIn(r.Context(), p.Projects, sid, state, after, limit)
	}
	return s.store.ListTurns(r.Context(), sid, state, after, limit)
}

// restrictEvents limits an event filter to what the caller may see, in the
// store query, so next_after paging still steps over what it skipped.
func restrictEvents(r *http.Request, f *kura.EventFilter) {
	p := auth.FromContext(r.Context())
	if p.AllProjects() && p.AllScopes() {
		return
	}
	f.Restricted, f.Projects, f.Scopes = true, p.Projects, p.Scopes
}

// refParamFrom is refParam for a route context the middleware matched.
func refParamFrom(rc *chi.Context) string {
	v := rc.URLParam("ref")
	if u, err := url.PathUnescape(v); err == nil {
		return u
	}
	return v
}
