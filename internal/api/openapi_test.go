package api

import (
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
)

// TestOpenAPI_CoversEveryRoute walks the routes the server registers and
// checks that docs/openapi.yaml documents each path and method, so the
// contract file cannot fall behind the server.
func TestOpenAPI_CoversEveryRoute(t *testing.T) {
	t.Parallel()
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
		// chi's catch-all (the console's files) is {path} in the document.
		key := method + " " + strings.Replace(strings.TrimSuffix(route, "/"), "/*", "/{path}", 1)
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

// TestOpenAPI_DescribesEveryOperation is the structural part of what an
// OpenAPI linter (Redocly's recommended rules, Spectral's spectral:oas)
// asks of docs/openapi.yaml: info names a license, and every operation has
// a description and at least one 4xx answer (every route can be refused:
// without tokens, a Host that is not a loopback name is 403 everywhere).
// It reads the file by its indentation, which the file keeps regular.
func TestOpenAPI_DescribesEveryOperation(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")

	// info.license: a name, and an SPDX identifier or a URL.
	license := map[string]bool{}
	section, inLicense := "", false
	for _, line := range lines {
		if line != "" && !strings.HasPrefix(line, " ") {
			section = strings.TrimSuffix(line, ":")
		}
		if section != "info" {
			continue
		}
		switch {
		case line == "  license:":
			inLicense = true
		case inLicense && strings.HasPrefix(line, "    "):
			k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
			license[k] = strings.TrimSpace(v) != ""
		case strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "   "):
			inLicense = false
		}
	}
	if !license["name"] || !(license["identifier"] || license["url"]) {
		t.Errorf("info.license: got %v, want a name and an identifier or url", license)
	}

	type op struct {
		description bool
		codes       []string
	}
	ops := map[string]*op{}
	var order []string
	var cur *op
	path, inResponses := "", false
	pathRE := regexp.MustCompile(`^  (/\S*):\s*$`)
	methodRE := regexp.MustCompile(`^    (get|post|put|patch|delete):\s*$`)
	codeRE := regexp.MustCompile(`^        "?([0-9X]{3}|default)"?:\s*$`)
	section = ""
	for _, line := range lines {
		if line != "" && !strings.HasPrefix(line, " ") {
			section = strings.TrimSuffix(line, ":")
		}
		if section != "paths" {
			continue
		}
		switch {
		case pathRE.MatchString(line):
			path, cur = pathRE.FindStringSubmatch(line)[1], nil
		case methodRE.MatchString(line):
			key := strings.ToUpper(methodRE.FindStringSubmatch(line)[1]) + " " + path
			cur = &op{}
			ops[key] = cur
			order = append(order, key)
			inResponses = false
		case cur == nil:
		case strings.HasPrefix(line, "      description:"):
			cur.description = strings.TrimSpace(strings.TrimPrefix(line, "      description:")) != ""
		case line == "      responses:":
			inResponses = true
		case strings.HasPrefix(line, "      ") && !strings.HasPrefix(line, "       "):
			inResponses = false
		case inResponses && codeRE.MatchString(line):
			cur.codes = append(cur.codes, codeRE.FindStringSubmatch(line)[1])
		}
	}
	if len(ops) < 25 {
		t.Fatalf("read %d operations; the reading is broken", len(ops))
	}
	for _, key := range order {
		o := ops[key]
		if !o.description {
			t.Errorf("%s has no description", key)
		}
		has4xx := false
		for _, c := range o.codes {
			has4xx = has4xx || c[0] == '4'
		}
		if !has4xx {
			t.Errorf("%s documents no 4xx answer (responses %v)", key, o.codes)
		}
		// Every write refuses a Content-Type that is not JSON, body or
		// not (crosssite.go).
		if !strings.HasPrefix(key, "GET ") && !slices.Contains(o.codes, "415") {
			t.Errorf("%s documents no 415 (a write without the JSON type; responses %v)", key, o.codes)
		}
	}
}
