package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/url"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/kura-memory/kura/internal/admission"
	"github.com/kura-memory/kura/internal/kura"
)

// bodyTypes are the request bodies the routes decode, by route.
var bodyTypes = []struct {
	route string
	new   func() any
}{
	{"POST /v1/records", func() any { return new(kura.RecordInput) }},
	{"POST /v1/records/batch", func() any {
		return new(struct {
			Records []kura.RecordInput `json:"records"`
		})
	}},
	{"POST /v1/ledgers", func() any { return new(kura.LedgerInput) }},
	{"POST /v1/sessions", func() any { return new(kura.SessionInput) }},
	{"POST /v1/sessions/{id}/head", func() any { return new(kura.HeadMove) }},
	{"POST /v1/sessions/{id}/turns", func() any { return new(kura.TurnOpenInput) }},
	{"POST /v1/turns/{id}/claim", func() any { return new(kura.TurnClaim) }},
	{"POST /v1/turns/{id}/renew", func() any { return new(kura.TurnRenew) }},
	{"POST /v1/turns/{id}/records", func() any { return new(kura.TurnAppend) }},
	{"POST /v1/turns/{id}/close", func() any { return new(kura.TurnClose) }},
	{"POST memory/nodes", func() any { return new(kura.NodeInput) }},
	{"POST memory/nodes/batch", func() any { return new(kura.NodeBatchInput) }},
	{"POST memory/nodes/{ref}/transition", func() any { return new(kura.Transition) }},
	{"POST memory/relations", func() any { return new(kura.RelationInput) }},
	{"POST memory/feedback", func() any { return new(kura.FeedbackInput) }},
	{"POST context/compile|preview", func() any { return new(admission.Request) }},
	{"PUT kb/entries", func() any { return new(kura.KBEntryInput) }},
	{"PUT kb/entries/batch", func() any { return new(kura.KBBatchInput) }},
	{"PATCH kb/entries", func() any { return new(kura.KBPatch) }},
	{"POST /v1/admin/import", func() any { return new(kura.ImportInput) }},
	{"POST /v1/admin/backup", func() any { return new(backupRequest) }},
	{"POST /v1/admin/compact-events", func() any { return new(compactRequest) }},
}

// FuzzDecodeBody feeds every request body type the bytes a client could
// send: the decoder never panics, refuses only with invalid_argument, and
// what it accepts encodes back to a body it accepts again unchanged.
func FuzzDecodeBody(f *testing.F) {
	for i, s := range []string{
		`{"type":"agent.thought","content":{"t":[1,2,{"x":null}]},"author_id":"agent:bmo","metadata":{"project_id":"p"}}`,
		`{"records":[{"type":"agent.thought","content":1,"author_id":"agent:bmo"}]}`,
		`{"record_ids":["01a1fdca-0000-7000-8000-000000000000"],"parents":[],"author_id":"agent:a"}`,
		`{"project":"p","name":"n"}`, `{"ledger_id":"01a1fdca-0000-7000-8000-000000000000","expected_head":null}`,
		`{"instruction":{"content":"x","author_id":"user:a"},"deadline_seconds":5}`, `{"worker":"agent:w","lease_seconds":5}`,
		`{"epoch":1}`, `{"epoch":1,"records":[]}`, `{"status":"failed"}`,
		`{"kind":"belief","id":"b1","title":"t","confidence":0.5}`, `{"nodes":[{"kind":"fact"}]}`, `{"to":"active","reason":"r"}`,
		`{"kind":"supports","from":"fact:a","to":"belief:b"}`, `{"ref":"belief:b","outcome":"positive","author_id":"agent:a"}`,
		`{"task":"t","budget_tokens":100}`, `{"identifier":"x","keys":["k"],"value":"v"}`, `{"entries":[{"identifier":"x"}]}`,
		`{"identifier":"x","add_keys":["y"]}`, `{"records":[],"ledgers":[],"sessions":[]}`, `{"path":"/tmp/x"}`, `{}`,
		"{\"a\":\"\xff\"}", `{"a":"\udc00"}`, `[[[[[[[[[[]]]]]]]]]]`, `{"a":1}{"b":2}`, ``, `null`, `{"unknown":1}`,
	} {
		f.Add([]byte(s), uint8(i))
	}
	s := New(Config{}, nil, nil)
	f.Fuzz(func(t *testing.T, body []byte, which uint8) {
		bt := bodyTypes[int(which)%len(bodyTypes)]
		v := bt.new()
		err := s.decodeBody(body, v)
		if err != nil {
			var ke *kura.Error
			if !errors.As(err, &ke) || ke.Code != kura.EInvalid || ke.Message == "" {
				t.Fatalf("%s: %q refused with %#v, want invalid_argument with a message", bt.route, body, err)
			}
			return
		}
		enc, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: accepted %q but cannot encode it: %v", bt.route, body, err)
		}
		again := bt.new()
		if err := s.decodeBody(enc, again); err != nil {
			t.Fatalf("%s: accepted %q, but not its own encoding %s: %v", bt.route, body, enc, err)
		}
		if enc2, _ := json.Marshal(again); !bytes.Equal(enc, enc2) {
			t.Fatalf("%s: round trip changed the value:\n%s\n%s", bt.route, enc, enc2)
		}
	})
}

// shapeOf walks valid JSON with the standard decoder: the deepest nesting
// and the largest container.
func shapeOf(b []byte) (depth, members int) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var counts []int
	for {
		tok, err := dec.Token()
		if err == io.EOF || err != nil {
			return depth, members
		}
		if len(counts) > 0 {
			// In an object, keys and values alternate; count values.
			if d, ok := tok.(json.Delim); !ok || d == '[' || d == '{' {
				counts[len(counts)-1]++
			}
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '[', '{':
				counts = append(counts, 0)
				depth = max(depth, len(counts))
			default:
				c := counts[len(counts)-1]
				counts = counts[:len(counts)-1]
				members = max(members, c)
			}
		}
	}
}

// FuzzJSONShape checks the one-pass shape scan against the standard
// decoder: for valid JSON it refuses exactly what nests too deep or holds
// too many members, and it never lets invalid UTF-8 through.
func FuzzJSONShape(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":"[[["}]}`, `"\\"`, `"\"["`, strings.Repeat("[", 65) + strings.Repeat("]", 65),
		strings.Repeat("[", 64) + strings.Repeat("]", 64), `{"a":"\ud83d\ude80"}`, "\"\xc3\"", `[1,,2]`, `]]]][`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := checkJSONShape(b)
		if err != nil && !kura.IsCode(err, kura.EInvalid) {
			t.Fatalf("refused with %v, want invalid_argument", err)
		}
		if !utf8.Valid(b) {
			if err == nil {
				t.Fatalf("%q is not UTF-8 but passed", b)
			}
			return
		}
		if !json.Valid(b) || loneSurrogate(b) {
			return
		}
		// Objects count key-value pairs; shapeOf counts values, which is
		// the same number.
		depth, members := shapeOf(b)
		want := depth > MaxJSONDepth || members > MaxJSONElements
		if (err != nil) != want {
			t.Fatalf("%q (depth %d, largest container %d): refused=%v (%v), want %v", b, depth, members, err != nil, err, want)
		}
	})
}

// FuzzPathParams: a path value accepted for any parameter is plain text
// that cannot escape a path segment or an SQL literal, and a refusal is an
// invalid_argument naming the parameter.
func FuzzPathParams(f *testing.F) {
	names := []string{"id", "other", "record_id", "hash", "scope", "kb", "ref"}
	for i, v := range []string{"01a1fdca-0000-7000-8000-000000000000", "x", "", "' OR 1=1 --",
		strings.Repeat("ab", 32), "hashi", "kb_1", "belief%3Ab1", "record:01a1fdca-0000-7000-8000-000000000000", "../x", "a%00"} {
		f.Add(uint8(i), v)
	}
	f.Fuzz(func(t *testing.T, which uint8, v string) {
		name := names[int(which)%len(names)]
		err := CheckPathParams(chi.RouteParams{Keys: []string{name}, Values: []string{v}})
		if err != nil {
			var ke *kura.Error
			if !errors.As(err, &ke) || ke.Code != kura.EInvalid || ke.Details["field"] != name {
				t.Fatalf("%s=%q refused with %#v, want invalid_argument on %s", name, v, err, name)
			}
			return
		}
		if name == "ref" {
			if u, err := url.PathUnescape(v); err == nil {
				v = u
			}
		}
		for _, r := range v {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.:", r)) {
				t.Fatalf("%s=%q accepted with %q in it", name, v, r)
			}
		}
		if v == "" || len(v) > 64+1+128 {
			t.Fatalf("%s=%q accepted", name, v)
		}
		switch name {
		case "id", "other", "record_id":
			if !kura.ValidID(v) {
				t.Fatalf("%s=%q accepted but not a UUID", name, v)
			}
		case "scope", "kb":
			if v != strings.ToLower(v) || strings.ContainsAny(v, ".:") {
				t.Fatalf("%s=%q accepted but not a slug", name, v)
			}
		}
	})
}

// FuzzEventFilter: the events query parser refuses only with
// invalid_argument and accepts only a filter kurad can run as is.
func FuzzEventFilter(f *testing.F) {
	for _, s := range []string{"", "after=5&limit=10", "type=record.written,ledger.written&type=record.written",
		"project=hashi", "after=-1", "limit=1001", "type=nope", "project=Bad", "type=,", "after=9223372036854775808"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		fl, err := parseEventFilter(q)
		if err != nil {
			if !kura.IsCode(err, kura.EInvalid) {
				t.Fatalf("%q refused with %v, want invalid_argument", raw, err)
			}
			return
		}
		if fl.After < 0 || fl.Limit < 1 || fl.Limit > 1000 {
			t.Fatalf("%q gave after=%d limit=%d", raw, fl.After, fl.Limit)
		}
		if fl.Project != "" && !kura.ValidSlug(fl.Project) {
			t.Fatalf("%q gave project %q", raw, fl.Project)
		}
		for i, ty := range fl.Types {
			if !kura.ValidEventType(ty) || slices.Contains(fl.Types[:i], ty) {
				t.Fatalf("%q gave types %q", raw, fl.Types)
			}
		}
	})
}
