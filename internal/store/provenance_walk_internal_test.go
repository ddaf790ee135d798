package store

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/pgtest"
)

// TestLineageWalk_Budget holds the walk to its budget of edges on both
// engines: a walk whose budget equals the edges it needs reads them all and
// is not truncated; one edge less and it keeps exactly its budget and says
// truncated. The graph has a chain of 40 notes (past restLevels, so a
// closure finishes it with the recursive CTE) and a fan of 30 notes derived
// from the chain's last, so both the levels and the CTE meet the bound.
func TestLineageWalk_Budget(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			_, key, _ := ed25519.GenerateKey(rand.Reader)
			cfg := Config{Path: filepath.Join(t.TempDir(), "kura.db"), Signer: key}
			if engine == "postgres" {
				cfg = Config{DatabaseURL: pgtest.URL(t), Signer: key}
			}
			db := New(cfg)
			ctx := context.Background()
			if err := db.Open(ctx); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close(context.Background()) })

			var ins []kura.NodeInput
			note := func(id string, from ...string) {
				s := "note " + id
				ins = append(ins, kura.NodeInput{Kind: "note", ID: id, Summary: &s, DerivedFrom: from})
			}
			note("c0")
			for i := 1; i < 40; i++ {
				note(fmt.Sprintf("c%d", i), fmt.Sprintf("note:c%d", i-1))
			}
			for i := range 30 {
				note(fmt.Sprintf("f%d", i), "note:c39")
			}
			if _, err := db.PutNodes(ctx, "walk", ins); err != nil {
				t.Fatal(err)
			}

			walk := func(ref string, forward bool, levels, budget int) (w *lineageWalk) {
				t.Helper()
				err := db.readLineage(ctx, "walk", ref, func(tx *sql.Tx, root *lineageRoot) error {
					w = newLineageWalk(root, forward, levels, budget)
					return w.run(ctx, tx, db.pg != nil)
				})
				if err != nil {
					t.Fatal(err)
				}
				return w
			}
			edges := func(w *lineageWalk) int {
				n := 0
				for _, cs := range w.next {
					n += len(cs)
				}
				return n
			}
			for _, tc := range []struct {
				name    string
				ref     string
				forward bool
				levels  int
				need    int // what the whole walk reads: edges, and a row per vertex with more
				edges   int
			}{
				{"backward by levels and CTE", "note:c39", false, -1, 39, 39},
				{"forward by levels", "note:c0", true, -1, 39 + 30, 39 + 30},
				// 20 edges down to c20, then whether c20 has children.
				{"forward to a depth", "note:c0", true, 20, 21, 20},
				{"fan", "note:c39", true, -1, 30, 30},
			} {
				t.Run(tc.name, func(t *testing.T) {
					w := walk(tc.ref, tc.forward, tc.levels, tc.need)
					if w.truncated || edges(w) < tc.edges {
						t.Errorf("budget %d: read %d edges, truncated %v; want at least %d, not truncated", tc.need, edges(w), w.truncated, tc.edges)
					}
					w = walk(tc.ref, tc.forward, tc.levels, tc.need-1)
					if !w.truncated || edges(w) > tc.need-1 {
						t.Errorf("budget %d: read %d edges, truncated %v; want at most %d, truncated", tc.need-1, edges(w), w.truncated, tc.need-1)
					}
				})
			}

			t.Run("look-ahead", func(t *testing.T) {
				// Two levels back from c39: c38 and c37, and c37 is known
				// to have a parent without reading it.
				w := walk("note:c39", false, 2, 10)
				if got := len(w.reached); got != 2 || edges(w) != 2 || len(w.more) != 1 || w.truncated {
					t.Errorf("got %d reached, %d edges, %d with more, truncated %v; want 2, 2, 1, false", got, edges(w), len(w.more), w.truncated)
				}
				// The look-ahead counts against the budget too.
				if w := walk("note:c39", false, 2, 2); !w.truncated {
					t.Errorf("budget 2 with a look-ahead to make: not truncated")
				}
			})

			t.Run("answers say truncated", func(t *testing.T) {
				d, err := db.Derived(ctx, "walk", "note:c0")
				if err != nil || d.Truncated || d.Count != 69 {
					t.Errorf("derived: %d, truncated %v (%v); want 69, complete", d.Count, d.Truncated, err)
				}
				e, err := db.Evidence(ctx, "walk", "note:f0")
				if err != nil || e.Truncated || e.TotalEvidenceCount != 40 {
					t.Errorf("evidence: %d, truncated %v (%v); want 40, complete", e.TotalEvidenceCount, e.Truncated, err)
				}
			})
		})
	}
}
