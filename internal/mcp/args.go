package mcp

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/kura-memory/kura/internal/kura"
)

// call is the HTTP request a tool call becomes.
type call struct {
	method string
	target string // path and query, e.g. /v1/records/0193...?x=y
	body   []byte // nil for requests without a body
	header http.Header
}

// idempotencyArg is the argument every write tool accepts in place of the
// Idempotency-Key header a plain HTTP client would send.
const idempotencyArg = "idempotency_key"

// decodeArgs turns a tool's JSON arguments into the API request: path
// arguments fill the route's {placeholders}, query arguments become the
// query string, and whatever is left is sent verbatim as the JSON body for
// the API to decode and validate exactly as it does for HTTP. Only the
// routing is checked here (a path argument present and a string, a query
// argument a scalar, no stray argument on a bodiless route); every value
// is the API's to judge, so that the limits and the messages are the
// HTTP API's.
func decodeArgs(sp *spec, raw json.RawMessage) (*call, error) {
	args := map[string]json.RawMessage{}
	if t := bytes.TrimSpace(raw); len(t) > 0 && !bytes.Equal(t, []byte("null")) {
		if t[0] != '{' {
			return nil, kura.Invalid("", "the arguments must be a JSON object")
		}
		if err := json.Unmarshal(t, &args); err != nil {
			return nil, kura.Invalid("", "malformed arguments: %s", strings.TrimPrefix(err.Error(), "json: "))
		}
	}
	c := &call{method: sp.method, header: http.Header{}}
	if sp.method != http.MethodGet {
		// Every write says JSON, a bodiless one too: the API refuses any
		// other type (what a web page can send it without asking).
		c.header.Set("Content-Type", "application/json")
	}

	path := sp.path
	for _, name := range sp.pathArgs() {
		v, ok := args[name]
		delete(args, name)
		var s string
		if !ok || isNull(v) {
			return nil, kura.Invalid(name, "%s is required", name)
		}
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, kura.Invalid(name, "%s must be a string", name)
		}
		if s == "" {
			return nil, kura.Invalid(name, "%s is required", name)
		}
		path = strings.Replace(path, "{"+name+"}", url.PathEscape(s), 1)
	}

	q := url.Values{}
	for _, name := range sp.query {
		v, ok := args[name]
		delete(args, name)
		if !ok || isNull(v) {
			continue
		}
		s, ok := scalar(v)
		if !ok {
			return nil, kura.Invalid(name, "%s must be a string, a number or a boolean", name)
		}
		q.Set(queryName(sp, name), s)
	}
	c.target = path
	if len(q) > 0 {
		c.target += "?" + q.Encode()
	}

	if sp.method != http.MethodGet {
		if v, ok := args[idempotencyArg]; ok {
			delete(args, idempotencyArg)
			var key string
			if err := json.Unmarshal(v, &key); err != nil {
				return nil, kura.Invalid(idempotencyArg, "%s must be a string", idempotencyArg)
			}
			if key != "" {
				c.header.Set("Idempotency-Key", key)
			}
		}
	}

	if !sp.body {
		if len(args) > 0 {
			// The API's own wording for a stray body field.
			name := firstKey(args)
			return nil, kura.Invalid(name, "unknown field %q", name)
		}
		return c, nil
	}
	for from, to := range sp.rename {
		v, ok := args[from]
		if !ok {
			continue
		}
		if _, both := args[to]; both {
			return nil, kura.Invalid(from, "give %s or %s, not both", from, to)
		}
		delete(args, from)
		args[to] = v
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(args); err != nil {
		// Every value came out of a JSON decoder; re-encoding cannot fail
		// unless the arguments were not JSON.
		return nil, kura.Invalid("", "malformed arguments: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	c.body = buf.Bytes()
	return c, nil
}

func isNull(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }

// scalar renders a JSON string, number or boolean as a query value; a
// number keeps its JSON spelling, so the API parses and judges it.
func scalar(v json.RawMessage) (string, bool) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "", false
	}
	switch v[0] {
	case '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", false
		}
		return s, true
	case 't', 'f':
		var b bool
		if err := json.Unmarshal(v, &b); err != nil {
			return "", false
		}
		if b {
			return "true", true
		}
		return "false", true
	case '{', '[', 'n':
		return "", false
	}
	var n json.Number
	if err := json.Unmarshal(v, &n); err != nil {
		return "", false
	}
	return n.String(), true
}

func queryName(sp *spec, arg string) string {
	if to, ok := sp.rename[arg]; ok {
		return to
	}
	return arg
}

// firstKey picks the alphabetically first key, so the error a caller sees
// does not depend on map order.
func firstKey(m map[string]json.RawMessage) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys[0]
}
