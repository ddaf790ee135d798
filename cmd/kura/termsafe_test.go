package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// safeOutput writes in through a safeWriter, cut into writes at the given
// offsets, and returns what came out.
func safeOutput(t testing.TB, in string, asJSON bool, cuts ...int) string {
	t.Helper()
	var out bytes.Buffer
	w := newSafeWriter(&out, asJSON)
	prev := 0
	for _, c := range append(cuts, len(in)) {
		if c < prev || c > len(in) {
			continue
		}
		if n, err := w.Write([]byte(in[prev:c])); err != nil || n != c-prev {
			t.Fatalf("write: %d, %v", n, err)
		}
		prev = c
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// terminalSafe reports the first thing in s a terminal would act on.
func terminalSafe(s string) (bad string, ok bool) {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 {
			return s[i : i+1], false
		}
		if r == '\r' && !strings.HasPrefix(s[i:], "\r\n") {
			return "CR", false
		}
		if r != '\n' && r != '\t' && r != '\r' && unsafeRune(r) {
			return string(r), false
		}
		i += n
	}
	return "", true
}

func TestSafeWriter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, text, json string
	}{
		{"Plain", "hello, wörld 東 😀\n\tx", "hello, wörld 東 😀\n\tx", "hello, wörld 東 😀\n\tx"},
		{"ESC", "a\x1b[31mred\x1b[0m", `a\x1b[31mred\x1b[0m`, `a\u001b[31mred\u001b[0m`},
		{"OSC52", "\x1b]52;c;ZXZpbA==\x07", `\x1b]52;c;ZXZpbA==\x07`, `\u001b]52;c;ZXZpbA==\u0007`},
		{"LoneCR", "ok\rFAILED", `ok\x0dFAILED`, "ok\nFAILED"},
		{"CRLF", "a\r\nb\r\n", "a\r\nb\r\n", "a\r\nb\r\n"},
		{"CRAtEnd", "a\r", `a\x0d`, "a\n"},
		{"NULAndDEL", "a\x00b\x7f", `a\x00b\x7f`, `a\u0000b\u007f`},
		{"C1CSI", "a\u009b31mb\u0085", `a\u009b31mb\u0085`, `a\u009b31mb\u0085`},
		{"Bidi", "abc\u202edcba\u2066x\u2069", `abc\u202edcba\u2066x\u2069`, `abc\u202edcba\u2066x\u2069`},
		{"NotUTF8", "a\xffb\xc2", `a\xffb\xc2`, `a\ufffdb\ufffd`},
		{"RawC1Byte", "a\x9bb", `a\x9bb`, `a\ufffdb`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, asJSON := range []bool{false, true} {
				want := tt.text
				if asJSON {
					want = tt.json
				}
				if got := safeOutput(t, tt.in, asJSON); got != want {
					t.Errorf("json=%v: got %q, want %q", asJSON, got, want)
				}
				// Cut anywhere, the output is the same.
				for cut := 0; cut <= len(tt.in); cut++ {
					if got := safeOutput(t, tt.in, asJSON, cut); got != want {
						t.Errorf("json=%v cut at %d: got %q, want %q", asJSON, cut, got, want)
					}
				}
			}
		})
	}
}

// FuzzSafeWriter: whatever goes in, nothing a terminal acts on comes out,
// however the input is cut into writes; and JSON goes through meaning the
// same value.
func FuzzSafeWriter(f *testing.F) {
	for _, s := range []string{"", "plain\n", "\x1b[2J\x1b[H", "a\rb\r\n", "\u009b\u202e", `{"k":"\u001b v\u0085"}`, "\xe6\x9d", "{\"a\":\"\u2066\"}"} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, in string, cut int) {
		for _, asJSON := range []bool{false, true} {
			whole := safeOutput(t, in, asJSON)
			if bad, ok := terminalSafe(whole); !ok {
				t.Fatalf("json=%v: %q came out of %q as %q", asJSON, bad, in, whole)
			}
			if c := cut % (len(in) + 1); c >= 0 {
				if split := safeOutput(t, in, asJSON, c); split != whole {
					t.Fatalf("json=%v: cut at %d gives %q, whole %q", asJSON, c, split, whole)
				}
			}
		}
		var v any
		if json.Unmarshal([]byte(in), &v) == nil && utf8.ValidString(in) {
			var back any
			if err := json.Unmarshal([]byte(safeOutput(t, in, true)), &back); err != nil {
				t.Fatalf("JSON %q no longer parses: %v", in, err)
			}
			a, _ := json.Marshal(v)
			b, _ := json.Marshal(back)
			if !bytes.Equal(a, b) {
				t.Fatalf("JSON %q came back as %s, want %s", in, b, a)
			}
		}
	})
}
