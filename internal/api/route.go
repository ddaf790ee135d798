package api

import (
	"fmt"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/kura-memory/kura/internal/auth"
	"github.com/kura-memory/kura/internal/kura"
)

// route is one route of the API, declared once next to its handler (each
// noun's file has a xRoutes method listing its own): who may call it, what
// is checked before anything reads the body, and for a write how its
// answer is decided. mount registers every route and is the only place a
// route reaches chi; the access middleware finds the route it is about to
// serve among them.
type route struct {
	method, pattern string
	// role is the least role that may call the route; open routes take no
	// token at all. mount refuses a route that declares neither.
	role auth.Role
	open bool
	// check runs in the access middleware, before the body is read: it
	// looks at the path parameters and the query (nil: nothing to check).
	check accessCheck
	// answer, for a write that keeps its answer under an Idempotency-Key,
	// decides that answer; nil: the route takes no Idempotency-Key.
	answer answerRule
	// serve is the handler. A route with a JSON body declares it with
	// bodyRoute, whose serve decodes the body once.
	serve http.HandlerFunc
	// recheck, set by bodyRoute, runs the body check on the raw body
	// before a stored answer is replayed (idempotent).
	recheck func(r *http.Request, body []byte) error
	// heavy marks a read whose cost grows with the data it walks: it runs
	// in a heavy slot (heavy.go).
	heavy bool
}

// accessCheck refuses a call the principal may not make; nil lets it
// through. rc holds the matched route's parameters.
type accessCheck func(s *Server, r *http.Request, rc *chi.Context, p auth.Principal) error

// answerRule decides a successful write's answer from the value it
// produced and whether it created something: the status and the bytes go
// to the client and, under an Idempotency-Key, are kept for a retry (the
// store calls the same rule as kura.Idempotency.Answer).
type answerRule func(v any, created bool) (status int, body []byte)

// The three answer rules of the API's writes.
var (
	answer201 answerRule = func(v any, _ bool) (int, []byte) { return http.StatusCreated, render(v) }
	answer200 answerRule = func(v any, _ bool) (int, []byte) { return http.StatusOK, render(v) }
	// answerNew is 201 for what the write created, 200 for what already
	// existed (a deduplicated record, an unchanged node or entry).
	answerNew answerRule = func(v any, created bool) (int, []byte) {
		if created {
			return http.StatusCreated, render(v)
		}
		return http.StatusOK, render(v)
	}
)

// bodyCheck is the access check of a decoded body: authors, owners and the
// objects it names. It runs after the path check and the body's one
// decoding, before the call.
type bodyCheck[In any] func(s *Server, r *http.Request, p auth.Principal, in *In) error

// decoder reads a request body into v (s.decodeJSON, or a stricter one).
type decoder func(w http.ResponseWriter, r *http.Request, v any) error

// bodyRoute declares a route whose body decodes once into In: the body
// check and the call both get the decoded value, and the answer rule
// writes what the call returns.
type bodyRoute[In, Out any] struct {
	method, pattern string
	role            auth.Role
	check           accessCheck // path and query, before the body is read
	body            bodyCheck[In]
	decode          decoder // nil: s.decodeJSON
	answer          answerRule
	// call makes the store call; keep carries the request's
	// Idempotency-Key (if any) and its answer rule to the write.
	call  func(r *http.Request, in *In, keep kura.WriteOption) (out Out, created bool, err error)
	heavy bool // see route.heavy
}

func (b bodyRoute[In, Out]) route(s *Server) route {
	decode := b.decode
	if decode == nil {
		decode = s.decodeJSON
	}
	serve := func(w http.ResponseWriter, r *http.Request) {
		var in In
		if err := decode(w, r, &in); err != nil {
			s.writeError(w, r, err)
			return
		}
		// The tokenless local user may do everything, any author included
		// (API.md); the path checks skip it the same way.
		if p := auth.FromContext(r.Context()); b.body != nil && !p.Anonymous {
			if err := b.body(s, r, p, &in); err != nil {
				s.writeError(w, r, err)
				return
			}
		}
		out, created, err := b.call(r, &in, keep(r))
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		status, body := b.answer(out, created)
		writeBody(w, status, body)
	}
	rt := route{method: b.method, pattern: b.pattern, role: b.role, check: b.check, answer: b.answer, serve: serve, heavy: b.heavy}
	if b.body != nil {
		// A replay answers before the body is decoded for the call, but
		// not before the body check: the request that stored the answer
		// passed it, the caller may no longer. A body the decoder refuses
		// is left to the replay (or the 409), which answers as before.
		rt.recheck = func(r *http.Request, body []byte) error {
			p := auth.FromContext(r.Context())
			var in In
			if p.Anonymous || s.decodeBody(body, &in) != nil {
				return nil
			}
			return b.body(s, r, p, &in)
		}
	}
	return rt
}

// noBody is the decoder of a write that takes no body (it reads its query).
func noBody(http.ResponseWriter, *http.Request, any) error { return nil }

// routes lists every route of the API.
func (s *Server) routes() []route {
	var all []route
	for _, nouns := range [][]route{
		s.opsRoutes(),
		s.recordRoutes(),
		s.redactRoutes(),
		s.ledgerRoutes(),
		s.sessionRoutes(),
		s.turnRoutes(),
		s.eventRoutes(),
		s.memoryRoutes(),
		s.contextRoutes(),
		s.provenanceRoutes(),
		s.kbRoutes(),
		s.adminRoutes(),
		s.logRoutes(),
		s.uiRoutes(),
	} {
		all = append(all, nouns...)
	}
	return all
}

// mount registers routes in r and indexes them by method and pattern for
// the access middleware, which runs before chi routes. A route without a
// role (and not open) or declared twice is a programming error: New
// panics, so no test and no kurad starts with one.
func (s *Server) mount(r chi.Router, routes []route) {
	s.byPattern = make(map[string]*route, len(routes))
	for i := range routes {
		rt := &routes[i]
		if rt.role == 0 && !rt.open {
			panic(fmt.Sprintf("api: route %s %s declares no role (or open)", rt.method, rt.pattern))
		}
		k := patternKey(rt.method, rt.pattern)
		if _, dup := s.byPattern[k]; dup {
			panic(fmt.Sprintf("api: route %s declared twice", k))
		}
		s.byPattern[k] = rt
		h := rt.serve
		if rt.heavy {
			h = s.inHeavySlot(h)
		}
		if rt.answer != nil {
			h = s.idempotent(rt.answer, rt.recheck, h)
		}
		if unsafeMethod(rt.method) {
			h = s.needJSON(h)
		}
		r.Method(rt.method, rt.pattern, h)
	}
}

// patternKey is how byPattern names a route: "METHOD pattern".
func patternKey(method, pattern string) string { return method + " " + pattern }
