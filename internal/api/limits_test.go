package api_test

import (
	"bytes"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/kura-memory/kura/internal/api"
	"github.com/kura-memory/kura/internal/daemon"
	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/kuradtest"
)

// TestPathParams_EveryRouteParamChecked walks the router: a route that
// gains a {param} without a validator fails here, not in production.
func TestPathParams_EveryRouteParamChecked(t *testing.T) {
	t.Parallel()
	routes, ok := api.New(api.Config{}, nil, nil).Handler().(chi.Routes)
	if !ok {
		t.Fatal("the handler is not a chi router")
	}
	param := regexp.MustCompile(`\{([^}:]+)(:[^}]*)?\}`)
	seen := map[string]bool{}
	err := chi.Walk(routes, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		for _, m := range param.FindAllStringSubmatch(route, -1) {
			name := m[1]
			seen[name] = true
			err := api.CheckPathParams(chi.RouteParams{Keys: []string{name}, Values: []string{"'; DROP TABLE records; --"}})
			if err == nil || !kura.IsCode(err, kura.EInvalid) {
				t.Errorf("%s %s: {%s} with a hostile value: got %v, want invalid_argument", method, route, name, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"id", "other", "record_id", "hash", "scope", "kb", "ref"} {
		if !seen[name] {
			t.Errorf("no route uses {%s} any more; the walk is not seeing the routes", name)
		}
	}
	if err := api.CheckPathParams(chi.RouteParams{Keys: []string{"novel"}, Values: []string{"x"}}); !kura.IsCode(err, kura.EInternal) {
		t.Errorf("a parameter without a validator: got %v, want an internal error", err)
	}
}

// TestPathParams_Refused sends malformed ids in every kind of path
// parameter: each is a 400 naming the parameter, and nothing changes.
func TestPathParams_Refused(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	const u = "01a1fdca-0000-7000-8000-000000000000"
	before := c.state()
	tests := []struct {
		method, path, field string
	}{
		{"GET", "/v1/records/not-a-uuid", "id"},
		{"GET", "/v1/records/01A1FDCA-0000-7000-8000-000000000000", "id"},
		{"GET", "/v1/records/by-hash/abc", "hash"},
		{"GET", "/v1/ledgers/x'%20OR%20'1'='1", "id"},
		{"GET", "/v1/ledgers/" + u + "/diff/nope", "other"},
		{"GET", "/v1/ledgers/" + u + "/proof/nope", "record_id"},
		{"GET", "/v1/sessions/..%2F..%2Fetc", "id"},
		{"POST", "/v1/sessions/bad/head", "id"},
		{"POST", "/v1/turns/bad/claim", "id"},
		{"GET", "/v1/scopes/Bad/memory/nodes", "scope"},
		{"POST", "/v1/scopes/a%20b/memory/nodes", "scope"},
		{"GET", "/v1/scopes/s/memory/nodes/no-colon", "ref"},
		{"GET", "/v1/scopes/s/memory/nodes/belief:%00", "ref"},
		{"POST", "/v1/scopes/s/memory/nodes/:x/transition", "ref"},
		{"GET", "/v1/scopes/s/context/bundles/nope", "id"},
		{"GET", "/v1/scopes/s/provenance/Kind:x", "ref"},
		{"GET", "/v1/kb/KB/entries", "kb"},
		{"PUT", "/v1/kb/" + strings.Repeat("k", 65) + "/entries", "kb"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			st, m, raw := c.do(tt.method, tt.path, "application/json", []byte(`{}`))
			if st != 400 {
				t.Fatalf("status %d, want 400: %s", st, raw)
			}
			e, _ := m["error"].(map[string]any)
			d, _ := e["details"].(map[string]any)
			if e["code"] != "invalid_argument" || d["field"] != tt.field {
				t.Errorf("error %s, want invalid_argument on %s", raw, tt.field)
			}
		})
	}
	if after := c.state(); after != before {
		t.Errorf("state changed: %s -> %s", before, after)
	}
}

// TestJSONLimits checks each body limit at its boundary on a real kurad.
func TestJSONLimits(t *testing.T) {
	t.Parallel()
	const limit = 1 << 20
	d := kuradtest.StartMain(t, kuradtest.Options{Configure: func(c *daemon.Config) { c.MaxBodyBytes = limit }})
	c := &apiClient{tb: t, base: d.BaseURL()}
	record := func(content string) []byte {
		return []byte(`{"type":"agent.thought","author_id":"agent:bmo","content":` + content + `}`)
	}
	nested := func(levels int) string { // levels of arrays
		return strings.Repeat("[", levels) + strings.Repeat("]", levels)
	}
	members := func(n int) string {
		return "[" + strings.TrimSuffix(strings.Repeat("0,", n), ",") + "]"
	}
	padded := func(n int) []byte { // a valid record body of exactly n bytes
		b := record(`{"pad":true}`)
		return append(b, bytes.Repeat([]byte(" "), n-len(b))...)
	}
	tests := []struct {
		name    string
		body    []byte
		status  int
		message string // in the error message
	}{
		// The body object is one level, the content arrays the rest.
		{"DepthAtLimit", record(nested(api.MaxJSONDepth - 1)), 201, ""},
		{"DepthOverLimit", record(nested(api.MaxJSONDepth)), 400, "deeper than 64"},
		{"DepthOverLimitInString", record(`"` + strings.Repeat("[", 1000) + `"`), 201, ""},
		{"DepthOverLimitMalformed", []byte(strings.Repeat("[{", 200)), 400, "deeper than 64"},
		{"MembersAtLimit", record(members(api.MaxJSONElements)), 201, ""},
		{"MembersOverLimit", record(members(api.MaxJSONElements + 1)), 400, "more than 100000 members"},
		{"KeysOverLimit", record(`{` + strings.TrimSuffix(strings.Repeat(`"":0,`, api.MaxJSONElements+1), ",") + `}`), 400, "members"},
		{"InvalidUTF8InString", record("\"caf\xe9\""), 400, "not valid UTF-8"},
		{"InvalidUTF8InKey", []byte("{\"type\xff\":1}"), 400, "not valid UTF-8"},
		{"LoneSurrogate", record(`"\ud800"`), 400, "lone UTF-16 surrogate"},
		{"SurrogatePair", record(`"\ud83d\ude80"`), 201, ""},
		{"BodyAtLimit", padded(limit), 201, ""},
		{"BodyOverLimit", padded(limit + 1), 413, "larger than 1048576"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := c.state()
			st, m, raw := c.do("POST", "/v1/records", "application/json", tt.body)
			if st != tt.status {
				t.Fatalf("status %d, want %d: %.300s", st, tt.status, raw)
			}
			if tt.status < 300 {
				return
			}
			e, _ := m["error"].(map[string]any)
			msg, _ := e["message"].(string)
			if !strings.Contains(msg, tt.message) {
				t.Errorf("message %q, want it to contain %q", msg, tt.message)
			}
			if tt.status == 400 && e["code"] != "invalid_argument" {
				t.Errorf("code %v, want invalid_argument", e["code"])
			}
			if after := c.state(); after != before {
				t.Errorf("a refused body changed the store: %s -> %s", before, after)
			}
		})
	}
}
