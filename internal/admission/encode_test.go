package admission_test

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kura-memory/kura/internal/admission"
	"github.com/kura-memory/kura/internal/kura"
)

// Strings that take every path of the encoder: plain ASCII, each escape
// encoding/json makes (quote, backslash, control bytes, < > &, U+2028 and
// U+2029), other Unicode, and invalid UTF-8.
var tricky = []string{"", "fact:f1", "use_now", `say "hi"`, `back\slash`, "tab\there\nnewline", "\x00\x1f\x7f",
	"<script>&amp;</script>", "line\u2028sep\u2029", "café ☕ 日本", "\xff\xfe bad", "ok ~ ^ `"}

// scores holds floats encoding/json writes in each of its forms.
var scores = []float64{0, 1, -2.5, 12.3456, 0.0001, 1e-6, 9.99e-7, 1e-7, 1.5e-10, 1e20, 1e21, 123456789e15, -3e-9, 7.0e22}

func randString(r *rand.Rand) string {
	if r.IntN(3) > 0 {
		return tricky[r.IntN(len(tricky))]
	}
	b := make([]byte, r.IntN(12))
	for i := range b {
		b[i] = byte(r.IntN(256))
	}
	return string(b)
}

func randBundle(r *rand.Rand) *admission.Bundle {
	b := &admission.Bundle{Digest: randString(r), Scope: randString(r), AsOf: randString(r)}
	if r.IntN(2) == 0 {
		b.BundleID = randString(r)
	}
	if r.IntN(5) > 0 {
		b.Trace = []admission.TraceEntry{}
	}
	for range r.IntN(6) {
		te := admission.TraceEntry{Ref: randString(r), Bucket: randString(r), Reason: randString(r), Detail: randString(r)}
		if r.IntN(2) == 0 {
			te.RelationID = randString(r)
		}
		if r.IntN(2) == 0 {
			// Scores as search shows them (four decimals), and floats of
			// every magnitude: both of encoding/json's number forms.
			s := scores[r.IntN(len(scores))]
			if r.IntN(2) == 0 {
				s = math.Round(r.Float64()*1e6) / 1e4
			}
			te.Score = &s
		}
		switch r.IntN(3) {
		case 0:
			te.Why = []kura.SearchReason{}
		case 1:
			for range 1 + r.IntN(3) {
				te.Why = append(te.Why, kura.SearchReason{Code: randString(r), Detail: randString(r)})
			}
		}
		b.Trace = append(b.Trace, te)
	}
	if r.IntN(4) > 0 {
		b.Omitted = map[string]int{"use_now": r.IntN(9), "do_not_use": r.IntN(9), randString(r): 1}
	}
	if r.IntN(4) > 0 {
		b.Warnings = []string{}
		for range r.IntN(3) {
			b.Warnings = append(b.Warnings, randString(r))
		}
	}
	b.Bytes, b.Redactions, b.TraceOmitted = r.IntN(1<<20), r.IntN(5), r.IntN(3)
	if r.IntN(2) == 0 {
		p := randString(r)
		b.Buckets.UseNow = []admission.Item{{Ref: randString(r), Title: randString(r), Confidence: r.Float64(), PayloadRef: &p}}
	} else {
		b.Buckets = randBuckets(r)
	}
	return b
}

// plainBundle is a Bundle without its MarshalJSON (which is Encode):
// what encoding/json makes of its fields.
type plainBundle admission.Bundle

func TestEncode_IsJSONMarshal(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(11, 13))
	for i := range 3000 {
		b := randBundle(r)
		want, err := json.Marshal((*plainBundle)(b))
		if err != nil {
			t.Fatal(err)
		}
		got, err := admission.Encode(b)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("bundle %d: Encode differs from json.Marshal (%v)\n got %s\nwant %s", i, err, got, want)
		}
	}
}

func FuzzEncode(f *testing.F) {
	for i, s := range tricky {
		f.Add(s, s, scores[i%len(scores)])
	}
	f.Fuzz(func(t *testing.T, ref, detail string, score float64) {
		if math.IsNaN(score) || math.IsInf(score, 0) {
			return // no score is either; encoding/json refuses them
		}
		b := &admission.Bundle{Scope: ref, Result: admission.Result{Trace: []admission.TraceEntry{
			{Ref: ref, Bucket: "use_now", Reason: detail, Detail: detail, Score: &score, Why: []kura.SearchReason{{Code: ref, Detail: detail}}},
			{Ref: detail, RelationID: ref},
		}, Warnings: []string{detail}}}
		want, _ := json.Marshal((*plainBundle)(b))
		got, err := admission.Encode(b)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("Encode differs from json.Marshal (%v)\n got %s\nwant %s", err, got, want)
		}
	})
}
