package api

import (
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
)

// TestOpenAPI_CoversEveryRoute walks the routes the server registers and
// checks that docs/openapi.yaml documents each path and method, so the
// contract file cannot fall behind the server.
func TestOpenAPI_CoversEveryRoute(t *testing.T) {
	b, err := os.ReadFile("../../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	path := ""
	pathRE := regexp.MustCompile(`^  (/\S*):\s*$`)
	methodRE := regexp.MustCompile(`^    (get|post|put|patch|delete):\s*$`)
	for _, line := range strings.Split(string(b), "\n") {
		if m := pathRE.FindStringSubmatch(line); m != nil {
			path = m[1]
		} else if m := methodRE.FindStringSubmatch(line); m != nil && path != "" {
			documented[strings.ToUpper(m[1])+" "+path] = true
		} else if line != "" && !strings.HasPrefix(line, " ") {
			path = ""
		}
	}
	s := New(Config{Registry: prometheus.NewRegistry()}, nil, nil)
	// chi names the second id of the diff route {other}; the contract {b}.
	norm := regexp.MustCompile(`\{[^}]+\}`)
	docNorm := map[string]bool{}
	for k := range documented {
		docNorm[norm.ReplaceAllString(k, "{}")] = true
	}
	n := 0
	err = chi.Walk(s.router, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		n++
		key := method + " " + strings.TrimSuffix(route, "/")
		if !docNorm[norm.ReplaceAllString(key, "{}")] {
			t.Errorf("%s is served but not in docs/openapi.yaml", key)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 25 {
		t.Fatalf("walked %d routes; the walk is broken", n)
	}
}
