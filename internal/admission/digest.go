package admission

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"hash"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/kura-memory/kura/kurahash"
)

// Digest is "sha256:<hex>" of the RFC 8785 form of the buckets: what a
// client recomputes to check a bundle it was handed.
//
// The form is written straight into the hash, a piece at a time: the
// buckets hold up to budget_bytes (16 MiB) of items, and marshalling them
// and canonicalising that through a parsed tree held them four or five
// times over. Buckets have one shape (fixed keys, strings and one number
// per item), so their canonical form is simple to write; a string that is
// not valid UTF-8 or a confidence the plain form does not cover takes
// the general path (kurahash.Canonical). A property test holds the two to
// the same bytes.
func Digest(b *Buckets) (string, error) {
	h := sha256.New()
	if !writeCanonical(h, b) {
		raw, err := json.Marshal(b)
		if err != nil {
			return "", err
		}
		canon, err := kurahash.Canonical(raw)
		if err != nil {
			return "", err
		}
		h.Reset()
		h.Write(canon)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// writeCanonical writes the RFC 8785 form of b to h and reports whether
// it could: false leaves h holding part of it.
func writeCanonical(h hash.Hash, b *Buckets) bool {
	buf := make([]byte, 0, 32<<10)
	// Keys in UTF-16 order: do_not_use < inspect_before_use < rehydrate <
	// use_now, and within an item authority < confidence < lifecycle <
	// payload_ref < ref < summary < title.
	lists := []struct {
		key   string
		items []Item
	}{{"do_not_use", b.DoNotUse}, {"inspect_before_use", b.InspectBeforeUse}, {"rehydrate", b.Rehydrate}, {"use_now", b.UseNow}}
	buf = append(buf, '{')
	for i, l := range lists {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, '"')
		buf = append(buf, l.key...)
		buf = append(buf, `":`...)
		if l.items == nil {
			buf = append(buf, "null"...)
			continue
		}
		buf = append(buf, '[')
		for j := range l.items {
			it := &l.items[j]
			if j > 0 {
				buf = append(buf, ',')
			}
			var ok bool
			buf = append(buf, `{"authority":`...)
			if buf, ok = appendCanonicalString(buf, it.Authority); !ok {
				return false
			}
			buf = append(buf, `,"confidence":`...)
			if buf, ok = appendCanonicalNumber(buf, it.Confidence); !ok {
				return false
			}
			buf = append(buf, `,"lifecycle":`...)
			if buf, ok = appendCanonicalString(buf, it.Lifecycle); !ok {
				return false
			}
			if it.PayloadRef != nil {
				buf = append(buf, `,"payload_ref":`...)
				if buf, ok = appendCanonicalString(buf, *it.PayloadRef); !ok {
					return false
				}
			}
			buf = append(buf, `,"ref":`...)
			if buf, ok = appendCanonicalString(buf, it.Ref); !ok {
				return false
			}
			buf = append(buf, `,"summary":`...)
			if buf, ok = appendCanonicalString(buf, it.Summary); !ok {
				return false
			}
			buf = append(buf, `,"title":`...)
			if buf, ok = appendCanonicalString(buf, it.Title); !ok {
				return false
			}
			buf = append(buf, '}')
			if len(buf) >= 16<<10 {
				h.Write(buf)
				buf = buf[:0]
			}
		}
		buf = append(buf, ']')
	}
	buf = append(buf, '}')
	h.Write(buf)
	return true
}

// appendCanonicalString writes s as RFC 8785 does: quote, backslash and
// the control characters escaped (the short escapes where JSON has them,
// else \u00xx), everything else as it is. false: s is not valid UTF-8.
func appendCanonicalString(out []byte, s string) ([]byte, bool) {
	if !utf8.ValidString(s) {
		return out, false
	}
	out = append(out, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		out = append(out, s[start:i]...)
		switch c {
		case '"', '\\':
			out = append(out, '\\', c)
		case '\b':
			out = append(out, '\\', 'b')
		case '\f':
			out = append(out, '\\', 'f')
		case '\n':
			out = append(out, '\\', 'n')
		case '\r':
			out = append(out, '\\', 'r')
		case '\t':
			out = append(out, '\\', 't')
		default:
			const hexDigits = "0123456789abcdef"
			out = append(out, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	out = append(out, s[start:]...)
	return append(out, '"'), true
}

// appendCanonicalNumber writes f as ECMAScript does (RFC 8785) where that
// is the shortest decimal in plain notation: 0, and 1e-6 to below 1e21.
// false: any other number (a confidence is 0 to 1, so in practice one
// below 1e-6, or a negative zero).
func appendCanonicalNumber(out []byte, f float64) ([]byte, bool) {
	if f == 0 && !math.Signbit(f) {
		return append(out, '0'), true
	}
	if !(f >= 1e-6 && f < 1e21) {
		return out, false
	}
	return strconv.AppendFloat(out, f, 'f', -1, 64), true
}
