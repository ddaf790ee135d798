package store

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/kurahash"
)

// record makes a record as kurad stores it: canonical content and
// metadata, its hashes computed by kurahash.
func record(t testing.TB, typ, content, author string, md map[string]string) kura.Record {
	t.Helper()
	ch, canon, err := kurahash.ContentHash([]byte(content))
	if err != nil {
		t.Fatal(err)
	}
	h := kurahash.RecordHash(typ, ch, author)
	mdj := kurahash.MetadataJSON(md)
	at := "2026-11-21T09:00:00.120000000Z"
	return kura.Record{ID: "0190f0f0-0000-7000-8000-000000000001", Hash: h, ContentHash: ch, Seal: kurahash.Seal(h, mdj, at),
		Type: typ, Content: canon, AuthorID: author, MetadataJSON: mdj, CreatedAt: at}
}

// TestRecordJSONVerifies: the JSON of a record as stored (the bytes
// hydrate's SQL writes, which TestStore_HydrateJSONMatchesRecordJSON holds
// to AppendJSON's) verifies; the same JSON with any stored value changed
// does not, and neither does JSON of another layout.
func TestRecordJSONVerifies(t *testing.T) {
	t.Parallel()
	good := []kura.Record{
		record(t, "agent.thought", `{"text":"plain"}`, "agent:bmo", nil),
		record(t, "tool.call", `{"tool_name":"gh \"q\" \\ é","arguments":{"x":[1,2.5,null,"}]"]},"status":"pending"}`, "tool:gh",
			map[string]string{"project_id": "hashi", "note": "line\nbreak \"quoted\" ☃ },{"}),
		record(t, "task.instruction", `"just text, with a comma"`, "user:oles", nil),
		record(t, "task.instruction", `null`, "user:oles", nil),
		record(t, "agent.thought", `-12.5e3`, "agent:bmo", map[string]string{"a": ""}),
		record(t, "agent.thought", `[]`, "agent:bmo", nil),
	}
	redacted := record(t, "agent.thought", `{"secret":1}`, "agent:bmo", nil)
	redacted.Content, redacted.Redacted = nil, true
	withheld := record(t, "memory.fact", `{"fact":"packed"}`, "sys:kurad", map[string]string{"scope": "alpha"})
	withheld.Content, withheld.Withheld = nil, true
	good = append(good, redacted, withheld)
	for i, r := range good {
		js := r.AppendJSON(nil)
		if !recordJSONVerifies(js) {
			t.Errorf("record %d: %s does not verify", i, js)
		}
		checked := r
		checkRecord(&checked, r.Content, r.MetadataJSON)
		if r.Content == nil && !r.Redacted {
			checked.Mismatches = checked.Mismatches[:len(checked.Mismatches)-1] // withheld: content not read
		}
		if len(checked.Mismatches) > 0 {
			t.Errorf("record %d: checkRecord found %+v", i, checked.Mismatches)
		}
	}

	base := good[1]
	for _, c := range []struct {
		name  string
		edit  func(r *kura.Record)
		field string
	}{
		{"content", func(r *kura.Record) { r.Content = json.RawMessage(`{"forged":true}`) }, "content_hash"},
		{"content_hash", func(r *kura.Record) { r.ContentHash = strings.Repeat("a", 64) }, "hash"},
		{"hash", func(r *kura.Record) { r.Hash = strings.Repeat("b", 64) }, "hash"},
		{"type", func(r *kura.Record) { r.Type = "agent.plan" }, "hash"},
		{"author", func(r *kura.Record) { r.AuthorID = "agent:eve" }, "hash"},
		{"seal", func(r *kura.Record) { r.Seal = strings.Repeat("c", 64) }, "seal"},
		{"metadata", func(r *kura.Record) { r.MetadataJSON = json.RawMessage(`{"project_id":"elsewhere"}`) }, "seal"},
		{"created_at", func(r *kura.Record) { r.CreatedAt = "2026-11-21T09:00:00.120000001Z" }, "seal"},
	} {
		r := base
		r.Metadata = maps.Clone(base.Metadata)
		c.edit(&r)
		if js := r.AppendJSON(nil); recordJSONVerifies(js) {
			t.Errorf("%s changed: %s verifies", c.name, js)
		}
		checkRecord(&r, r.Content, r.MetadataJSON)
		found := false
		for _, m := range r.Mismatches {
			found = found || m.Field == c.field
		}
		if !found {
			t.Errorf("%s changed: mismatches %+v, want %s named", c.name, r.Mismatches, c.field)
		}
		if c.field == "content_hash" && string(r.Content) != "null" {
			t.Errorf("%s changed: content %s is still served", c.name, r.Content)
		}
	}
	// Content gone without a redaction.
	gone := base
	checkRecord(&gone, nil, gone.MetadataJSON)
	if len(gone.Mismatches) != 1 || gone.Mismatches[0].Computed != "content is missing" {
		t.Errorf("content gone without a redaction: %+v", gone.Mismatches)
	}
	// Another layout is never taken as verified.
	js := string(base.AppendJSON(nil))
	for _, bad := range []string{"", "{}", js[:len(js)-1], js + " ", strings.Replace(js, `"type":"tool.call"`, `"type":"tool\u002ecall"`, 1),
		strings.Replace(js, `{"id":`, `{"ID":`, 1), js[:len(js)-1] + `,"extra":1}`} {
		if recordJSONVerifies([]byte(bad)) {
			t.Errorf("%q verifies", bad)
		}
	}
}

// FuzzRecordJSONVerifies: whatever the bytes, the reader never panics,
// and JSON it takes as verified is a record whose hashes kurahash
// recomputes from its fields.
func FuzzRecordJSONVerifies(f *testing.F) {
	r := record(f, "agent.thought", `{"text":"plain","n":[1,{"a":"}"}]}`, "agent:bmo", map[string]string{"k": "v \"q\""})
	f.Add(string(r.AppendJSON(nil)))
	r.Content, r.Redacted = nil, true
	f.Add(string(r.AppendJSON(nil)))
	f.Add(`{"id":"x","hash":"","content_hash":"","seal":"","type":"","content":,"author_id":"","metadata":{},"created_at":""}`)
	f.Fuzz(func(t *testing.T, js string) {
		if !recordJSONVerifies([]byte(js)) {
			return
		}
		var got struct {
			kura.Record
			Metadata json.RawMessage `json:"metadata"`
		}
		if err := json.Unmarshal([]byte(js), &got); err != nil {
			t.Fatalf("%q verified but is not a record: %v", js, err)
		}
		if !got.Redacted && !got.Withheld {
			ch, _, err := kurahash.ContentHash(got.Content)
			if err != nil || ch != got.ContentHash {
				t.Fatalf("%q verified, content hashes to %s (%v)", js, ch, err)
			}
		}
		if h := kurahash.RecordHash(got.Type, got.ContentHash, got.AuthorID); h != got.Hash {
			t.Fatalf("%q verified, hash is %s", js, h)
		}
		md, err := kurahash.Canonical(got.Metadata)
		if err != nil || kurahash.Seal(got.Hash, md, got.CreatedAt) != got.Seal {
			t.Fatalf("%q verified, seal does not follow (%v)", js, err)
		}
	})
}

// recordJSONVerifies is recordChecker.verifies for one record's JSON
// whose content and metadata lengths the test does not know: they are
// found by reading the values to their end.
func recordJSONVerifies(js []byte) bool {
	var content, md []byte
	p := jsonFields{b: js}
	var skip []byte
	if !(p.lit(`{"id":`) && p.str(&skip) && p.lit(`,"hash":`) && p.str(&skip) && p.lit(`,"content_hash":`) && p.str(&skip) &&
		p.lit(`,"seal":`) && p.str(&skip) && p.lit(`,"type":`) && p.str(&skip) && p.lit(`,"content":`) && p.value(&content) &&
		p.lit(`,"author_id":`) && p.str(&skip) && p.lit(`,"metadata":`) && p.value(&md)) {
		return false
	}
	var ck recordChecker
	return ck.verifies(js, len(content), len(md))
}

// value reads one JSON value (content and metadata are copied into the
// record's JSON as stored) into v: to the end of its object, array or
// string, or of a literal, at the next comma or brace.
func (p *jsonFields) value(v *[]byte) bool {
	start, depth, inStr := p.i, 0, false
	for j := p.i; j < len(p.b); j++ {
		c := p.b[j]
		if inStr {
			switch c {
			case '\\':
				j++
			case '"':
				inStr = false
			}
			if depth == 0 && !inStr {
				*v, p.i = p.b[start:j+1], j+1
				return true
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				*v, p.i = p.b[start:j], j
				return j > start
			}
			depth--
			if depth == 0 {
				*v, p.i = p.b[start:j+1], j+1
				return true
			}
		case ',':
			if depth == 0 {
				*v, p.i = p.b[start:j], j
				return j > start
			}
		}
	}
	return false
}
