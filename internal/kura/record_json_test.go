package kura_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/kura-memory/kura/internal/kura"
)

// TestRecord_MarshalJSON checks the hand-written encoder against
// encoding/json's reading of it: every field survives the round trip.
func TestRecord_MarshalJSON(t *testing.T) {
	t.Parallel()
	recs := []kura.Record{
		{ID: "01a1fdca-0646-72df-b50c-b563f3a48bdc", Hash: "h", ContentHash: "c", Seal: "s", Type: "agent.thought",
			Content: json.RawMessage(`{"text":"x"}`), AuthorID: "agent:bmo", Metadata: map[string]string{}, CreatedAt: "2026-11-21T09:00:00.000000000Z"},
		{ID: "i", Type: "t", Content: json.RawMessage(`null`), Metadata: map[string]string{"b": "quote \" back \\ nl \n tab \t ctl \x01 \u2028 é 😀", "a": "\xff"}, Redacted: true, Deduplicated: true},
		{ID: "i", Content: nil, Metadata: nil},
		{ID: "w", Type: "memory.fact", Content: json.RawMessage(`null`), AuthorID: "sys:kurad", Metadata: map[string]string{"scope": "alpha"}, Withheld: true},
	}
	for i, r := range recs {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(b) {
			t.Fatalf("record %d: invalid JSON %s", i, b)
		}
		var back kura.Record
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		want := r
		if want.Metadata == nil {
			want.Metadata = map[string]string{}
		}
		if want.Content == nil {
			want.Content = json.RawMessage("null")
		}
		if v, ok := want.Metadata["a"]; ok && v == "\xff" {
			want.Metadata["a"] = "\ufffd"
		}
		if !reflect.DeepEqual(back, want) {
			t.Errorf("record %d round trip:\n got %+v\nwant %+v", i, back, want)
		}
	}
}

func FuzzRecordAppendJSON(f *testing.F) {
	f.Add("agent:bmo", "k", "v\n\"x\"")
	f.Add("\xff\xfe", "\u2029", "\x00")
	f.Fuzz(func(t *testing.T, author, k, v string) {
		r := kura.Record{ID: "id", AuthorID: author, Content: json.RawMessage(`1`), Metadata: map[string]string{k: v}}
		b, _ := json.Marshal(r)
		if !json.Valid(b) {
			t.Fatalf("invalid JSON for %q %q %q: %s", author, k, v, b)
		}
	})
}
