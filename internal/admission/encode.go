package admission

import (
	"encoding/json"
	"io"
	"math"
	"strconv"
)

// Encode is json.Marshal(b), byte for byte, written without reflection for
// the trace and the items: a compile's trace lists up to 100,000 nodes
// (some 15 MB), and encoding it through reflection cost a large share of a
// compile; the items are up to budget_bytes. The rest of the bundle goes
// through encoding/json. A property test holds Encode
// to json.Marshal. A Result from Scope.Compile has its trace written from
// its plan, as json.Marshal of the Result Compile would make.
func Encode(b *Bundle) ([]byte, error) {
	e := encoder{out: make([]byte, 0, sizeHint(b))}
	if err := e.bundle(b); err != nil {
		return nil, err
	}
	return e.out, nil
}

// WriteBundle writes Encode(b) to w as it is made, a piece at a time: an
// answer that is only sent (a preview) is never held whole.
func WriteBundle(w io.Writer, b *Bundle) error {
	e := encoder{out: make([]byte, 0, spillAt+4<<10), w: w}
	if err := e.bundle(b); err != nil {
		return err
	}
	return e.write()
}

// MarshalJSON is Encode: a Result of Scope.Compile holds its trace only as
// a plan, which encoding/json would not see.
func (b Bundle) MarshalJSON() ([]byte, error) { return Encode(&b) }

// spillAt is how much a WriteBundle holds before it writes: pieces
// large enough that writing them costs little next to making them.
const spillAt = 256 << 10

type encoder struct {
	out []byte
	w   io.Writer // nil: out keeps everything
	err error
}

// spill writes out once it holds spillAt bytes.
func (e *encoder) spill() error {
	if e.w == nil || len(e.out) < spillAt {
		return e.err
	}
	return e.write()
}

func (e *encoder) write() error {
	if e.err == nil && len(e.out) > 0 {
		_, e.err = e.w.Write(e.out)
		e.out = e.out[:0]
	}
	return e.err
}

// sizeHint is the length of the bundle's JSON, or close to it, so that
// Encode makes its buffer once.
func sizeHint(b *Bundle) int {
	n := 1024 + b.Bytes + 4*len(b.Warnings)
	if b.plan != nil {
		return n + b.plan.bytes
	}
	return n + len(b.Trace)*160
}

func (e *encoder) bundle(b *Bundle) error {
	e.out = append(e.out, '{')
	if b.BundleID != "" {
		e.out = append(e.out, `"bundle_id":`...)
		e.out = appendString(e.out, b.BundleID)
		e.out = append(e.out, ',')
	}
	e.out = append(e.out, `"digest":`...)
	e.out = appendString(e.out, b.Digest)
	e.out = append(e.out, `,"scope":`...)
	e.out = appendString(e.out, b.Scope)
	e.out = append(e.out, `,"as_of":`...)
	e.out = appendString(e.out, b.AsOf)
	e.out = append(e.out, `,"buckets":`...)
	if err := e.buckets(&b.Buckets); err != nil {
		return err
	}
	e.out = append(e.out, `,"trace":`...)
	if err := e.trace(&b.Result); err != nil {
		return err
	}
	rest, err := json.Marshal(struct {
		Omitted      map[string]int `json:"omitted"`
		TraceOmitted int            `json:"trace_omitted"`
		Bytes        int            `json:"bytes"`
		Redactions   int            `json:"redactions"`
		Warnings     []string       `json:"warnings"`
	}{b.Omitted, b.TraceOmitted, b.Bytes, b.Redactions, b.Warnings})
	if err != nil {
		return err
	}
	e.out = append(e.out, ',')
	e.out = append(e.out, rest[1:]...) // its members, after the opening brace
	return e.err
}

// buckets writes json.Marshal(b) an item at a time: they hold up to
// budget_bytes.
func (e *encoder) buckets(b *Buckets) error {
	e.out = append(e.out, '{')
	for i, l := range []struct {
		key   string
		items []Item
	}{{"use_now", b.UseNow}, {"inspect_before_use", b.InspectBeforeUse}, {"do_not_use", b.DoNotUse}, {"rehydrate", b.Rehydrate}} {
		if i > 0 {
			e.out = append(e.out, ',')
		}
		e.out = append(e.out, '"')
		e.out = append(e.out, l.key...)
		e.out = append(e.out, `":`...)
		if l.items == nil {
			e.out = append(e.out, "null"...)
			continue
		}
		e.out = append(e.out, '[')
		for j := range l.items {
			if j > 0 {
				e.out = append(e.out, ',')
			}
			e.out = appendItem(e.out, &l.items[j])
			if e.spill() != nil {
				return e.err
			}
		}
		e.out = append(e.out, ']')
	}
	e.out = append(e.out, '}')
	return nil
}

func appendItem(out []byte, it *Item) []byte {
	out = append(out, `{"ref":`...)
	out = appendString(out, it.Ref)
	out = append(out, `,"title":`...)
	out = appendString(out, it.Title)
	out = append(out, `,"summary":`...)
	out = appendString(out, it.Summary)
	out = append(out, `,"confidence":`...)
	out = appendFloat(out, it.Confidence)
	out = append(out, `,"lifecycle":`...)
	out = appendString(out, it.Lifecycle)
	out = append(out, `,"authority":`...)
	out = appendString(out, it.Authority)
	if it.PayloadRef != nil {
		out = append(out, `,"payload_ref":`...)
		out = appendString(out, *it.PayloadRef)
	}
	return append(out, '}')
}

func (e *encoder) trace(r *Result) error {
	p := r.plan
	if p == nil {
		if r.Trace == nil {
			e.out = append(e.out, "null"...)
			return nil
		}
		e.out = append(e.out, '[')
		for i := range r.Trace {
			if i > 0 {
				e.out = append(e.out, ',')
			}
			e.out = appendEntry(e.out, &r.Trace[i])
			if e.spill() != nil {
				return e.err
			}
		}
		e.out = append(e.out, ']')
		return nil
	}
	e.out = append(e.out, '[')
	var score float64
	for i := range p.n {
		if i > 0 {
			e.out = append(e.out, ',')
		}
		te := p.entry(i, &score)
		e.out = appendEntry(e.out, &te)
		if e.spill() != nil {
			return e.err
		}
	}
	e.out = append(e.out, ']')
	return nil
}

func appendEntry(out []byte, te *TraceEntry) []byte {
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
	return append(out, '}')
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
