package kura_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kura-memory/kura/internal/kura"
)

// The validators are regular expressions; these references spell the same
// rules out by hand, so the two have to agree on every input.

func allIn(s, set string) bool {
	for i := 0; i < len(s); i++ {
		if !strings.ContainsRune(set, rune(s[i])) {
			return false
		}
	}
	return true
}

const (
	lower  = "abcdefghijklmnopqrstuvwxyz"
	upper  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	digits = "0123456789"
	hexLow = "0123456789abcdef"
)

func refSlug(s string) bool {
	return len(s) >= 1 && len(s) <= 64 && allIn(s[:1], lower+digits) && allIn(s, lower+digits+"_-")
}

func refID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if s[i] != '-' {
				return false
			}
		} else if !allIn(s[i:i+1], hexLow) {
			return false
		}
	}
	return true
}

func refAuthor(s string) bool {
	for _, p := range []string{"user:", "agent:", "tool:", "sys:"} {
		if rest, ok := strings.CutPrefix(s, p); ok {
			return len(rest) >= 1 && len(rest) <= 64 && allIn(rest, lower+upper+digits+"._-")
		}
	}
	return false
}

func refNodeID(s string) bool {
	return len(s) >= 1 && len(s) <= 128 && allIn(s[:1], lower+upper+digits) && allIn(s, lower+upper+digits+"._-")
}

// FuzzValidators checks the id, slug, author, hash, node id, ref, type
// name and knowledge-base validators against the references, and that a
// validator refusing with an error says invalid_argument.
func FuzzValidators(f *testing.F) {
	for _, s := range []string{"", "a", "hashi", "-a", "A", strings.Repeat("a", 64), strings.Repeat("a", 65),
		"01a1fdca-0000-7000-8000-000000000000", "01A1FDCA-0000-7000-8000-000000000000", "agent:bmo", "sys:kurad",
		"user:", "agent:" + strings.Repeat("x", 65), strings.Repeat("0f", 32), "belief:b1", "record:01a1fdca-0000-7000-8000-000000000000",
		"agent.thought", "a\nb", "a\x00", "é", "belief:b1\n"} {
		f.Add(s)
	}
	kinds := []string{"belief", "fact"}
	f.Fuzz(func(t *testing.T, s string) {
		check := func(name string, got, want bool) {
			if got != want {
				t.Fatalf("%s(%q) = %v, reference says %v", name, s, got, want)
			}
		}
		check("ValidSlug", kura.ValidSlug(s), refSlug(s))
		check("ValidID", kura.ValidID(s), refID(s))
		check("ValidAuthorID", kura.ValidAuthorID(s), refAuthor(s))
		check("ValidHash", kura.ValidHash(s), len(s) == 64 && allIn(s, hexLow))
		check("ValidNodeID", kura.ValidNodeID(s), refNodeID(s))
		check("ValidKBScope", kura.ValidKBScope(s), s == "" || refSlug(s))
		check("ValidTypeName", kura.ValidTypeName(s), len(s) >= 1 && len(s) <= kura.MaxTypeLen && allIn(s, lower+digits+"._-"))

		k, id, colon := strings.Cut(s, ":")
		r, ok := kura.ParseRef(s, kinds, true)
		wantRef := colon && (k == "record" && refID(id) || (k == "belief" || k == "fact") && refNodeID(id))
		check("ParseRef", ok, wantRef)
		if ok && r.String() != s {
			t.Fatalf("ParseRef(%q) = %q: does not round-trip", s, r.String())
		}
		if _, ok := kura.ParseRef(s, kinds, false); ok && k == "record" {
			t.Fatalf("ParseRef(%q, records=false) accepted a record", s)
		}

		for name, err := range map[string]error{
			"ValidKBIdentifier": kura.ValidKBIdentifier("f", s),
			"ValidKBKeys":       kura.ValidKBKeys("f", []string{s}),
			"ValidKBValue":      kura.ValidKBValue("f", s),
		} {
			var ke *kura.Error
			if err != nil && (!errors.As(err, &ke) || ke.Code != kura.EInvalid || ke.Details["field"] == nil) {
				t.Fatalf("%s(%q) = %#v, want invalid_argument naming a field", name, s, err)
			}
		}
		if kura.ValidKBIdentifier("f", s) == nil && (s == "" || !utf8.ValidString(s)) {
			t.Fatalf("ValidKBIdentifier accepted %q", s)
		}
		err := (&kura.LedgerInput{Label: s}).Validate()
		check("LedgerInput.Validate label", err == nil, len(s) <= kura.MaxLabelLen && !refHasControl(s))
		var ke *kura.Error
		if err != nil && (!errors.As(err, &ke) || ke.Code != kura.EInvalid || ke.Details["field"] != "label") {
			t.Fatalf("LedgerInput.Validate(label %q) = %#v, want invalid_argument naming label", s, err)
		}
	})
}

// refHasControl spells out Unicode's Cc for UTF-8 text: C0 and DEL are
// single bytes, C1 (U+0080-U+009F) is 0xC2 followed by 0x80-0x9F.
func refHasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		switch b := s[i]; {
		case b < 0x20 || b == 0x7f:
			return true
		case b == 0xc2 && i+1 < len(s) && s[i+1] >= 0x80 && s[i+1] <= 0x9f:
			return true
		}
	}
	return false
}
