package store

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/pgtest"
	"github.com/kura-memory/kura/internal/testwait"
)

// Tests look for stale tables twice a second, not every five.
func init() { pgAnalyzeEvery = 500 * time.Millisecond }

// TestPGAnalyze_AfterABulkWrite holds kurad to gathering statistics
// itself for a table written in bulk, and only for such a table: a scope
// of pgAnalyzeMinRows nodes gets its nodes and their search documents
// analysed within seconds, where autovacuum may take minutes, and their
// GIN index's pending entries merged; a few nodes get no ANALYZE from
// kurad.
func TestPGAnalyze_AfterABulkWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.URL(t)
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	db := New(Config{DatabaseURL: url, Signer: key})
	if err := db.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(context.Background()) })
	probe, err := sql.Open(pgDriverName, url)
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	// analysed reports whether someone ran ANALYZE on table; autovacuum's
	// own runs are counted apart (last_autoanalyze) and do not count.
	analysed := func(table string) bool {
		var at sql.NullTime
		if err := probe.QueryRowContext(ctx, "SELECT last_analyze FROM pg_stat_user_tables WHERE relname = ?", table).Scan(&at); err != nil {
			t.Fatal(err)
		}
		return at.Valid
	}
	put := func(scope string, n int) {
		ins := make([]kura.NodeInput, n)
		for i := range ins {
			s := fmt.Sprintf("note %d on the harbour's %d boats", i, i%17)
			ins[i] = kura.NodeInput{Kind: "fact", ID: fmt.Sprintf("n%d", i), Summary: &s}
		}
		if _, err := db.PutNodes(ctx, scope, ins); err != nil {
			t.Fatal(err)
		}
	}

	put("few", 20)
	// Once PostgreSQL's statistics count the 20 (it reports them within
	// a second), a look for stale tables passes over them.
	testwait.For(t, 30*time.Second, "the 20 nodes counted in pg_stat_user_tables", func() bool {
		var n int64
		err := probe.QueryRowContext(ctx, "SELECT n_mod_since_analyze FROM pg_stat_user_tables WHERE relname = 'nodes'").Scan(&n)
		return err == nil && n >= 20
	})
	if tables, err := db.analyzeStale(ctx); err != nil || len(tables) > 0 {
		t.Fatalf("after 20 nodes: analysed %v (%v), want nothing", tables, err)
	}
	if analysed("nodes") || analysed("node_fts") {
		t.Fatal("20 nodes were analysed by kurad; only bulk writes should be")
	}
	// One batch (a batch's most): were the analysis to come between two,
	// the second's entries would wait for autovacuum.
	put("bulk", pgAnalyzeMinRows)
	testwait.For(t, 30*time.Second, "nodes and node_fts analysed after a bulk write", func() bool {
		return analysed("nodes") && analysed("node_fts")
	})
	// The search documents' GIN index has nothing left pending: merging
	// it again finds no page to merge.
	var pages int64
	if err := probe.QueryRowContext(ctx, qPGCleanGIN, "{node_fts}").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if pages != 0 {
		t.Errorf("node_fts's GIN index had %d pending pages after kurad analysed it, want 0", pages)
	}
}
