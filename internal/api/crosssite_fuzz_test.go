package api_test

import (
	"mime"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/api"
)

// FuzzJSONMediaType: the Content-Type check every write passes (with its
// fast path for the exact "application/json") agrees with the media type
// as mime parses it: application/json or a +json type, parameters allowed.
func FuzzJSONMediaType(f *testing.F) {
	for _, s := range []string{"", "application/json", "application/json; charset=utf-8", "APPLICATION/JSON",
		"application/merge-patch+json", "text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
		"multipart/form-data; boundary=x", "application/json;", "application/jsonx", " application/json", "application/json\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ct string) {
		mt, _, err := mime.ParseMediaType(ct)
		want := ct != "" && err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
		if got := api.JSONMediaType(ct); got != want {
			t.Fatalf("JSONMediaType(%q) = %v, want %v", ct, got, want)
		}
	})
}
