package api

import (
	"net/http"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
)

// TestAccessRules_CoverEveryRoute: every route the server registers has an
// access rule, and every rule names a route, so a
// new route cannot ship without deciding who may call it.
func TestAccessRules_CoverEveryRoute(t *testing.T) {
	s := New(Config{Registry: prometheus.NewRegistry()}, nil, nil)
	seen := map[string]bool{}
	err := chi.Walk(s.router, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		k := rulePattern(method, route)
		seen[k] = true
		if _, ok := accessRules[k]; !ok {
			t.Errorf("%s has no access rule in accessRules (auth.go)", k)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for k := range accessRules {
		if !seen[k] {
			t.Errorf("access rule %s names no route", k)
		}
	}
	if len(seen) < 50 {
		t.Fatalf("walked %d routes; the walk is broken", len(seen))
	}
}
