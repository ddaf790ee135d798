package admission

import (
	"encoding/json"
	"math"
	"strconv"
)

// Encode is json.Marshal(b), byte for byte, written without reflection for
// the trace: a compile's trace lists every node of the scope (100,000
// entries are some 15 MB), and encoding it through reflection cost a
// large share of a compile. The rest of the bundle is small and goes
// through encoding/json. A property test holds Encode to json.Marshal.
func Encode(b *Bundle) ([]byte, error) {
	out := make([]byte, 0, 64+len(b.Trace)*160)
	out = append(out, '{')
	if b.BundleID != "" {
		out = append(out, `"bundle_id":`...)
		out = appendString(out, b.BundleID)
		out = append(out, ',')
	}
	out = append(out, `"digest":`...)
	out = appendString(out, b.Digest)
	out = append(out, `,"scope":`...)
	out = appendString(out, b.Scope)
	out = append(out, `,"as_of":`...)
	out = appendString(out, b.AsOf)
	buckets, err := json.Marshal(&b.Buckets)
	if err != nil {
		return nil, err
	}
	out = append(out, `,"buckets":`...)
	out = append(out, buckets...)
	out = append(out, `,"trace":`...)
	out = appendTrace(out, b.Trace)
	rest, err := json.Marshal(struct {
		Omitted    map[string]int `json:"omitted"`
		Bytes      int            `json:"bytes"`
		Redactions int            `json:"redactions"`
		Warnings   []string       `json:"warnings"`
	}{b.Omitted, b.Bytes, b.Redactions, b.Warnings})
	if err != nil {
		return nil, err
	}
	out = append(out, ',')
	out = append(out, rest[1:]...) // its members, after the opening brace
	return out, nil
}

func appendTrace(out []byte, trace []TraceEntry) []byte {
	if trace == nil {
		return append(out, "null"...)
	}
	out = append(out, '[')
	for i := range trace {
		if i > 0 {
			out = append(out, ',')
		}
		te := &trace[i]
		out = append(out, `{"ref":`...)
		out = appendString(out, te.Ref)
		out = append(out, `,"bucket":`...)
		out = appendString(out, te.Bucket)
		out = append(out, `,"reason":`...)
		out = appendString(out, te.Reason)
		if te.RelationID != "" {
			out = append(out, `,"relation_id":`...)
			out = appendString(out, te.RelationID)
		}
		out = append(out, `,"detail":`...)
		out = appendString(out, te.Detail)
		if te.Score != nil {
			out = append(out, `,"score":`...)
			out = appendFloat(out, *te.Score)
		}
		if len(te.Why) > 0 {
			out = append(out, `,"why":[`...)
			for j, r := range te.Why {
				if j > 0 {
					out = append(out, ',')
				}
				out = append(out, `{"code":`...)
				out = appendString(out, r.Code)
				out = append(out, `,"detail":`...)
				out = appendString(out, r.Detail)
				out = append(out, '}')
			}
			out = append(out, ']')
		}
		out = append(out, '}')
	}
	return append(out, ']')
}

// appendFloat writes f as encoding/json writes a float64: the shortest
// decimal that reads back as f, in exponent form only below 1e-6 or from
// 1e21 on (and then with a one-digit exponent where it has one).
func appendFloat(out []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	out = strconv.AppendFloat(out, f, format, -1, 64)
	if format == 'e' {
		// e-09 -> e-9, as encoding/json writes it.
		if n := len(out); n >= 4 && out[n-4] == 'e' && out[n-3] == '-' && out[n-2] == '0' {
			out[n-2] = out[n-1]
			out = out[:n-1]
		}
	}
	return out
}

// appendString writes s as encoding/json does. Printable ASCII that needs
// no escape (encoding/json escapes quote, backslash and, for HTML, < > &)
// is copied; anything else is left to encoding/json, so every escape,
// invalid byte and line separator comes out exactly as it would there.
func appendString(out []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s) // a string always encodes
			return append(out, b...)
		}
	}
	out = append(out, '"')
	out = append(out, s...)
	return append(out, '"')
}
