package store

import (
	"encoding/json"
	"maps"
	"testing"
)

// FuzzParseRefs: the feed's reader of stored refs agrees with
// encoding/json, which it stands in for.
func FuzzParseRefs(f *testing.F) {
	for _, s := range []string{`{}`, `{"record_id":"0190f0f0-0000-7000-8000-000000000001"}`,
		`{"head_hash":"ab","ledger_id":"x","session_id":"y"}`, `{"a":"1","a":"2"}`, `{"a":"\u00e9"}`, `null`, `{"a":1}`, `{"a":"b",}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseRefs(s)
		var want map[string]string
		werr := json.Unmarshal([]byte(s), &want)
		if werr == nil && want == nil {
			werr = errParseNull
		}
		if (err == nil) != (werr == nil) {
			t.Fatalf("%q: parseRefs err %v, encoding/json err %v", s, err, werr)
		}
		if err == nil && !maps.Equal(got, want) {
			t.Fatalf("%q: parseRefs %v, encoding/json %v", s, got, want)
		}
	})
}
