package api

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/kura-memory/kura/internal/kura"
)

// pathParamCheck validates one {name} path segment; every parameter a
// route declares has one (TestPathParams_EveryRouteParamChecked), so no id
// from a URL reaches a handler, let alone SQL, unchecked.
var pathParamCheck = map[string]func(string) error{
	"id":        uuidParam("id"),
	"other":     uuidParam("other"),
	"record_id": uuidParam("record_id"),
	"hash": func(v string) error {
		if !kura.ValidHash(v) {
			return kura.Invalid("hash", "%q is not a lowercase hex SHA-256", v)
		}
		return nil
	},
	"scope": func(v string) error {
		if !kura.ValidSlug(v) {
			return kura.Invalid("scope", "scope must be a slug (lowercase letters, digits, - and _)")
		}
		return nil
	},
	"kb": func(v string) error {
		if !kura.ValidSlug(v) {
			return kura.Invalid("kb", "knowledge base name must be a slug (lowercase letters, digits, - and _)")
		}
		return nil
	},
	// The store knows the node kinds and checks them; here only the form.
	"ref": func(v string) error {
		if u, err := url.PathUnescape(v); err == nil {
			v = u
		}
		if !ValidRefForm(v) {
			return kura.Invalid("ref", "%q is not a ref (kind:id)", v)
		}
		return nil
	},
}

func uuidParam(name string) func(string) error {
	return func(v string) error {
		if !kura.ValidID(v) {
			return kura.Invalid(name, "%q is not a lowercase UUID", v)
		}
		return nil
	}
}

// ValidRefForm reports whether s has the form of a node or record ref:
// a slug kind, a colon and a node id (a UUID is one too).
func ValidRefForm(s string) bool {
	k, id, ok := strings.Cut(s, ":")
	return ok && kura.ValidSlug(k) && kura.ValidNodeID(id)
}

// CheckPathParams validates route parameters by name; "*" (the rest of a
// mounted path) is routed further and not a parameter.
func CheckPathParams(p chi.RouteParams) error {
	for i, k := range p.Keys {
		if k == "*" {
			continue
		}
		check, ok := pathParamCheck[k]
		if !ok {
			return kura.Errorf(kura.EInternal, "path parameter %q has no validator", k)
		}
		if err := check(p.Values[i]); err != nil {
			return err
		}
	}
	return nil
}

// checkPathParams routes the request once ahead of the router, so that
// every parameter of the matched route, in subrouters too, is checked
// before any middleware or handler of the route sees it.
func (s *Server) checkPathParams(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rctx, pattern := s.matchRoute(r); pattern != "" {
			if err := CheckPathParams(rctx.URLParams); err != nil {
				s.writeError(w, r, err)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
