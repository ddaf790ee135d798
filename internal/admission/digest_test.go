package admission_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kura-memory/kura/internal/admission"
	"github.com/kura-memory/kura/kurahash"
)

// digestOf is the digest by its definition (API.md): SHA-256 of the RFC
// 8785 form of the buckets' JSON.
func digestOf(t testing.TB, b *admission.Buckets) string {
	t.Helper()
	raw, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	canon, err := kurahash.Canonical(raw)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(canon)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// confidences holds the numbers the plain form writes and those it hands
// to the general path (below 1e-6, a negative zero).
var confidences = []float64{0, 1, 0.5, 0.85, 0.1 + 0.2, 1e-6, 1.5e-6, 9.99e-7, 1e-7, 5e-324, math.Copysign(0, -1), 0.123456789012345678}

// controls is every byte below 0x20, quote and backslash, in valid UTF-8:
// each escape the canonical form makes.
var controls = func() string {
	b := []byte(`a"b\c`)
	for c := range 0x20 {
		b = append(b, byte(c), 'x')
	}
	return string(b) + "\u2028\u00e9\x7f"
}()

func randText(r *rand.Rand) string {
	if r.IntN(5) == 0 {
		return controls[r.IntN(len(controls)/2):]
	}
	return randString(r)
}

func randItem(r *rand.Rand) admission.Item {
	it := admission.Item{Ref: randString(r), Title: randText(r), Summary: randText(r) + randString(r),
		Confidence: confidences[r.IntN(len(confidences))], Lifecycle: randString(r), Authority: randString(r)}
	if r.IntN(3) == 0 {
		p := randString(r)
		it.PayloadRef = &p
	}
	return it
}

func randBuckets(r *rand.Rand) admission.Buckets {
	var b admission.Buckets
	for _, l := range []*[]admission.Item{&b.UseNow, &b.InspectBeforeUse, &b.Rehydrate, &b.DoNotUse} {
		if r.IntN(6) == 0 {
			continue // nil: null
		}
		*l = []admission.Item{}
		for range r.IntN(4) {
			*l = append(*l, randItem(r))
		}
	}
	return b
}

// TestDigest_IsCanonical: Digest, which writes the canonical form itself,
// is the digest of kurahash.Canonical of the buckets' JSON, for items of
// every string and number shape.
func TestDigest_IsCanonical(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 7))
	for i := range 3000 {
		b := randBuckets(r)
		got, err := admission.Digest(&b)
		if want := digestOf(t, &b); err != nil || got != want {
			raw, _ := json.Marshal(&b)
			t.Fatalf("buckets %d %s: Digest %s (%v), want %s", i, raw, got, err, want)
		}
	}
}

// TestItemSize_IsJSONLength: ItemSize counts what json.Marshal writes.
func TestItemSize_IsJSONLength(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(9, 2))
	for range 5000 {
		it := randItem(r)
		raw, _ := json.Marshal(&it)
		if got := admission.ItemSize(&it); got != len(raw) {
			t.Fatalf("ItemSize(%s) = %d, want %d", raw, got, len(raw))
		}
	}
}

// FuzzDigest: for any title, summary and confidence, Digest is the
// digest of the canonical form by definition, and ItemSize the length of
// the item's JSON.
func FuzzDigest(f *testing.F) {
	for i, s := range append(tricky, controls) {
		f.Add(s, tricky[(i+3)%len(tricky)], confidences[i%len(confidences)])
	}
	f.Fuzz(func(t *testing.T, title, summary string, confidence float64) {
		if math.IsNaN(confidence) || math.IsInf(confidence, 0) {
			return // encoding/json refuses them; a confidence is 0 to 1
		}
		p := summary + title
		b := admission.Buckets{UseNow: []admission.Item{{Ref: title, Title: title, Summary: summary, Confidence: confidence, Lifecycle: "active", Authority: summary}},
			DoNotUse: []admission.Item{{Ref: summary, Title: summary, Summary: title, Confidence: confidence, PayloadRef: &p}}, InspectBeforeUse: []admission.Item{}}
		if got, err := admission.Digest(&b); err != nil || got != digestOf(t, &b) {
			t.Fatalf("Digest %s (%v), want %s", got, err, digestOf(t, &b))
		}
		for _, it := range append(b.UseNow, b.DoNotUse...) {
			raw, _ := json.Marshal(&it)
			if got := admission.ItemSize(&it); got != len(raw) {
				t.Fatalf("ItemSize(%s) = %d, want %d", raw, got, len(raw))
			}
		}
	})
}
