package kura_test

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/kura-memory/kura/internal/kura"
)

func TestRedactInput_Validate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		reason string
		ok     bool
	}{
		{"Plain", "leaked an API key", true},
		{"Tab", "pii:\tphone number", true},
		{"Unicode", "données personnelles — RGPD art. 17", true},
		{"AtLimit", strings.Repeat("r", kura.MaxRedactReason), true},
		{"Empty", "", false},
		{"Blank", " \t ", false},
		{"OverLimit", strings.Repeat("r", kura.MaxRedactReason+1), false},
		{"MultibyteOverLimit", strings.Repeat("é", kura.MaxRedactReason/2+1), false},
		{"Newline", "one\ntwo", false},
		{"CarriageReturn", "one\rtwo", false},
		{"Escape", "red \x1b[31m alert", false},
		{"NUL", "a\x00b", false},
		{"LineSeparator", "a\u2028b", false},
		{"InvalidUTF8", "a\xffb", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := (&kura.RedactInput{Reason: tt.reason}).Validate()
			if (err == nil) != tt.ok {
				t.Fatalf("got %v, want ok=%v", err, tt.ok)
			}
			if err != nil {
				if !kura.IsCode(err, kura.EInvalid) {
					t.Errorf("got code of %v, want %s", err, kura.EInvalid)
				}
				var ke *kura.Error
				if e, ok := err.(*kura.Error); ok {
					ke = e
				}
				if ke == nil || ke.Details["field"] != "reason" {
					t.Errorf("got %+v, want the reason field named", err)
				}
			}
		})
	}
}

func FuzzRedactInputValidate(f *testing.F) {
	for _, s := range []string{"leaked an API key", "", " ", "a\nb", "\x1b[0m", "\xff", strings.Repeat("x", kura.MaxRedactReason+1), "é\u2029"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, reason string) {
		err := (&kura.RedactInput{Reason: reason}).Validate()
		if err != nil {
			if !kura.IsCode(err, kura.EInvalid) {
				t.Fatalf("got %v, want invalid_argument", err)
			}
			return
		}
		// What passes is bounded, valid, printable on one line, not blank.
		if len(reason) > kura.MaxRedactReason || !utf8.ValidString(reason) || strings.TrimSpace(reason) == "" {
			t.Fatalf("accepted %q", reason)
		}
		for _, c := range reason {
			if c != '\t' && (unicode.IsControl(c) || c == '\u2028' || c == '\u2029') {
				t.Fatalf("accepted control character %U in %q", c, reason)
			}
		}
	})
}
