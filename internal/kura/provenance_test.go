package kura_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/kura-memory/kura/internal/kura"
)

func TestTraceMemoryJSON(t *testing.T) {
	t.Parallel()
	text := "hello"
	tests := []struct {
		name string
		m    kura.TraceMemory
		want string // the "memory" value
	}{
		{"Node", kura.TraceMemory{Node: &kura.Node{Ref: "belief:b", Kind: "belief", ID: "b", Title: "t"}}, `"ref":"belief:b"`},
		{"Record", kura.TraceMemory{Record: &kura.Lineage{Ref: "record:x", Kind: "record", Text: &text, SourceType: kura.RecordSourceType}}, `"text":"hello"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(kura.Trace{Memory: tt.m})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(b, []byte(tt.want)) {
				t.Errorf("got %s, want the memory unwrapped (%s)", b, tt.want)
			}
			var back kura.Trace
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if back.Memory.Ref() != tt.m.Ref() || (back.Memory.Record != nil) != (tt.m.Record != nil) || (back.Memory.Node != nil) != (tt.m.Node != nil) {
				t.Errorf("round trip of %s: got %+v", b, back.Memory)
			}
		})
	}
}

// FuzzTraceMemoryUnmarshal checks that whatever a server sends, decoding a
// trace's memory never panics and that what decodes survives a round trip.
func FuzzTraceMemoryUnmarshal(f *testing.F) {
	for _, s := range []string{`{"ref":"belief:b","kind":"belief","id":"b"}`, `{"ref":"record:x","kind":"record","text":"t"}`,
		`null`, `{"kind":7}`, `[]`, `{"kind":"record","sources":[{"ref":"a"}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var m kura.TraceMemory
		if json.Unmarshal(b, &m) != nil {
			return
		}
		if m.Node != nil && m.Record != nil {
			t.Fatalf("%s decoded as both a node and a record", b)
		}
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("re-encode %s: %v", b, err)
		}
		var back kura.TraceMemory
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("decode the re-encoding %s: %v", out, err)
		}
		if back.Ref() != m.Ref() {
			t.Fatalf("round trip changed the ref: %q, then %q", m.Ref(), back.Ref())
		}
	})
}
