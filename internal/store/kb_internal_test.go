package store

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzDecodeKeys checks the hand-split fast path against the stored form:
// whatever list jsonList writes, decodeKeys reads back exactly.
func FuzzDecodeKeys(f *testing.F) {
	for _, s := range []string{"Dex\x00Lending", "", "a,b", `"quoted"`, `","`, "back\\slash", "<&>", "東京\x00déjà", "\u2028", "a\x01b", "]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, joined string) {
		if !utf8.ValidString(joined) {
			return // stored keys are valid UTF-8 (kura.ValidKBKeys)
		}
		keys := strings.Split(joined, "\x00")
		if joined == "" {
			keys = []string{}
		}
		got, err := decodeKeys(jsonList(keys))
		if err != nil || !slices.Equal(got, keys) || got == nil {
			t.Fatalf("keys %q stored as %s read back as %q (%v)", keys, jsonList(keys), got, err)
		}
	})
}
