package admission

import (
	"unicode/utf8"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/recall"
)

// tracePlan is a compile's trace before it is written: the ranked order
// and how many of its nodes the trace lists (max_trace, MaxTraceBytes).
// The entries are made as the bundle is encoded, from the order, so a
// compile holds no trace of its own however large the scope.
type tracePlan struct {
	list   []ranked
	scored bool // a query ranked the nodes: every entry has a score
	n      int  // the entries listed: list[:n]
	bytes  int  // the JSON of those entries, brackets and commas included
}

// planTrace lists the longest prefix of list within max entries and
// maxBytes of JSON (MaxTraceBytes). The sizes are exact (entryBaseSize, scoreSize,
// whySize mirror appendEntry), so that what Encode writes is what was
// planned, and no entry is encoded to be measured.
func planTrace(list []ranked, scored bool, max, maxBytes int) *tracePlan {
	p := &tracePlan{list: list, scored: scored, bytes: 2}
	var num []byte
	for i := range list {
		if i >= max {
			break
		}
		rk := &list[i]
		size := rk.base + whySize(rk.why)
		if scored {
			// Rounded once, here: most nodes of a large scope score 0.
			if rk.score != 0 {
				rk.shown = recall.RoundScore(rk.score)
			}
			num = appendFloat(num[:0], rk.shown)
			size += len(`,"score":`) + len(num)
		}
		if i > 0 {
			size++ // the comma before it
		}
		if p.bytes+size > maxBytes {
			break
		}
		p.bytes += size
		p.n++
	}
	return p
}

// entry is the trace entry of list[i].
func (p *tracePlan) entry(i int, score *float64) TraceEntry {
	rk := &p.list[i]
	te := TraceEntry{Ref: rk.n.Ref, Bucket: rk.d.Bucket, Reason: rk.d.Reason, RelationID: rk.d.RelationID, Detail: rk.d.Detail, Why: rk.why}
	if p.scored {
		*score = rk.shown
		te.Score = score
	}
	return te
}

// entries makes the planned entries ([] when there are none).
func (p *tracePlan) entries() []TraceEntry {
	out := make([]TraceEntry, p.n)
	for i := range out {
		out[i] = p.entry(i, new(float64))
	}
	return out
}

// entryBaseSize is the JSON size of a node's trace entry without its score
// and its reasons: what depends only on the node and its decision, so the
// prepared scope computes it once for every compile.
func entryBaseSize(ref string, d *Decision) int {
	n := len(`{"ref":`) + stringSize(ref) + len(`,"bucket":`) + stringSize(d.Bucket) +
		len(`,"reason":`) + stringSize(d.Reason) + len(`,"detail":`) + stringSize(d.Detail) + len(`}`)
	if d.RelationID != "" {
		n += len(`,"relation_id":`) + stringSize(d.RelationID)
	}
	return n
}

// whySize is the JSON size of an entry's reasons, with their key.
func whySize(why []kura.SearchReason) int {
	if len(why) == 0 {
		return 0
	}
	n := len(`,"why":[]`) + len(why) - 1
	for _, r := range why {
		n += len(`{"code":,"detail":}`) + stringSize(r.Code) + stringSize(r.Detail)
	}
	return n
}

// stringSize is the length of s as encoding/json writes it (quoted,
// escaped as for HTML), counted without writing it.
func stringSize(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
				n += 2
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				n += 6 // \u00xx
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6 // \ufffd
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}
