package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
)

// TestAccessRules_CoverEveryRoute: every route chi serves was declared
// through mount (so it has a role or is open), and every declaration is
// served, so a new route cannot ship without deciding who may call it.
func TestAccessRules_CoverEveryRoute(t *testing.T) {
	t.Parallel()
	s := New(Config{Registry: prometheus.NewRegistry()}, nil, nil)
	seen := map[string]bool{}
	err := chi.Walk(s.router, func(method, pattern string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		k := patternKey(method, pattern)
		seen[k] = true
		rt, ok := s.byPattern[k]
		switch {
		case !ok:
			t.Errorf("%s is served but was not declared through mount (route.go)", k)
		case rt.role == 0 && !rt.open:
			t.Errorf("%s declares no role and is not open", k)
		case rt.open && rt.role != 0:
			t.Errorf("%s is open and declares role %s: one or the other", k, rt.role)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for k := range s.byPattern {
		if !seen[k] {
			t.Errorf("route %s was declared but chi does not serve it", k)
		}
	}
	if len(seen) < 50 {
		t.Fatalf("walked %d routes; the walk is broken", len(seen))
	}
}

// TestMount_RefusesRouteWithoutRole: forgetting the role of a route stops
// the server from being built at all.
func TestMount_RefusesRouteWithoutRole(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		routes []route
		want   string
	}{
		{"NoRole", []route{{method: http.MethodGet, pattern: "/v1/x", serve: func(http.ResponseWriter, *http.Request) {}}}, "declares no role"},
		{"Twice", []route{
			{method: http.MethodGet, pattern: "/v1/x", open: true, serve: func(http.ResponseWriter, *http.Request) {}},
			{method: http.MethodGet, pattern: "/v1/x", open: true, serve: func(http.ResponseWriter, *http.Request) {}},
		}, "declared twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				v := recover()
				if msg, _ := v.(string); !strings.Contains(msg, tc.want) {
					t.Fatalf("got panic %v, want one saying %q", v, tc.want)
				}
			}()
			s := &Server{}
			s.mount(chi.NewRouter(), tc.routes)
		})
	}
}
