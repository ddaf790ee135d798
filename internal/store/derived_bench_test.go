package store_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	mrand "math/rand/v2"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/store"
)

// BenchmarkDerived_10k is make bench's memory_derived shape in the store
// alone: a record, 10,000 nodes descending from it (the first 1% cite it,
// node k derives from k/2 and one of the 1,000 before it), about 19,900
// edges, diamonds included; one Derived call an iteration.
func BenchmarkDerived_10k(b *testing.B) {
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	db := store.New(store.Config{Path: filepath.Join(b.TempDir(), "kura.db"), Signer: key})
	ctx := context.Background()
	if err := db.Open(ctx); err != nil {
		b.Fatal(err)
	}
	defer db.Close(context.Background())
	rec, err := db.CreateRecord(ctx, &kura.RecordInput{Type: "agent.thought", AuthorID: "agent:bench", Content: json.RawMessage(`{"text":"root"}`)})
	if err != nil {
		b.Fatal(err)
	}
	const n, window = 10_000, 1000
	r := mrand.New(mrand.NewPCG(1, 1))
	var batch []kura.NodeInput
	for k := range n {
		var ps []string
		if k < n/100 {
			ps = append(ps, "record:"+rec.ID)
		} else {
			ps = append(ps, "note:n"+strconv.Itoa(k/2))
			if p := k - 1 - r.IntN(min(window, k)); p != k/2 {
				ps = append(ps, "note:n"+strconv.Itoa(p))
			}
		}
		s := "note " + strconv.Itoa(k)
		batch = append(batch, kura.NodeInput{Kind: "note", ID: "n" + strconv.Itoa(k), Summary: &s, DerivedFrom: ps})
		if len(batch) == store.MaxNodeBatch || k == n-1 {
			if _, err := db.PutNodes(ctx, "graph", batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	b.ResetTimer()
	start := cpuTime()
	for b.Loop() {
		d, err := db.Derived(ctx, "graph", "record:"+rec.ID)
		if err != nil {
			b.Fatal(err)
		}
		if d.Count != n || d.Truncated {
			b.Fatalf("got %d derived nodes (truncated %v), want %d", d.Count, d.Truncated, n)
		}
	}
	reportCPU(b, start)
}
