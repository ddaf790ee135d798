package api

import (
	"mime"
	"net/http"
	"strings"

	"github.com/kura-memory/kura/internal/kura"
)

// A browser sends some requests to any address a web page names without
// asking the server first (no CORS preflight): a form's POST, fetch in
// no-cors mode, a beacon, an image. It cannot read the answers, but without
// tokens every caller is the local admin, so the write itself is the harm:
// one page load could make kurad copy its whole database again and again
// (POST /v1/admin/backup took no body, so nothing asked for JSON). Two
// rules close that, both before anything is read or written:
//
//   - every write (POST, PUT, PATCH, DELETE) says Content-Type:
//     application/json, with a body or without one (needJSON, on every
//     route mount declares, with or without tokens). No form and no no-cors
//     request can send that type; a page that sets it must ask first, and
//     kurad answers no preflight.
//   - without tokens, a write a browser marks as coming from another origin
//     is refused (checkCrossSite): Sec-Fetch-Site other than same-origin or
//     none, or, from a browser too old to send it, an Origin whose host and
//     port are not the Host's. Another port of 127.0.0.1 is another origin
//     (the browser calls it same-site). The console is kurad's own origin;
//     clients that are not browsers send neither header.
//
// With tokens the second rule is left out, as the Host check is: a page
// holds no token and the browser attaches none on its own, while a reverse
// proxy may rewrite the Host an Origin would be compared with.

// unsafeMethod reports whether a request with this method may change
// something: everything but GET, HEAD and OPTIONS.
func unsafeMethod(m string) bool {
	return m != http.MethodGet && m != http.MethodHead && m != http.MethodOptions
}

// jsonMediaType reports whether a Content-Type header names JSON
// (application/json, or a type ending in +json), parameters allowed.
func jsonMediaType(ct string) bool {
	switch ct {
	case "":
		return false
	case "application/json": // what nearly every client sends: no parse
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// needJSON refuses a write that does not say its body is JSON, body or not.
func (s *Server) needJSON(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if ct := r.Header.Get("Content-Type"); !jsonMediaType(ct) {
			s.writeError(w, r, kura.Errorf(kura.EMediaType,
				"a write must say Content-Type: application/json, with a body or without one (a web page can send any other type to kurad without asking), got %q", abbrevHost(ct)))
			return
		}
		next(w, r)
	}
}

// checkCrossSite refuses, without tokens, a write a browser sent on behalf
// of a page of another origin. http.CrossOriginProtection reads the two
// headers exactly as the rule above says; its answer becomes kurad's error
// body.
func (s *Server) checkCrossSite(next http.Handler) http.Handler {
	if s.cfg.Tokens != nil {
		return next
	}
	cop := http.NewCrossOriginProtection()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := cop.Check(r); err != nil {
			e := kura.Errorf(kura.EDenied, "without tokens kurad refuses a write sent by a web page of another origin (the local user's browser would make it as the local admin)")
			if v := r.Header.Get("Sec-Fetch-Site"); v != "" {
				e = e.WithDetail("sec_fetch_site", abbrevHost(v))
			}
			if v := r.Header.Get("Origin"); v != "" {
				e = e.WithDetail("origin", abbrevHost(v))
			}
			s.writeError(w, r, e)
			return
		}
		next.ServeHTTP(w, r)
	})
}
