package api_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/daemon"
	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/kuradtest"
)

// TestRecords_DamagedHashIndexNeverDuplicates damages the database so
// that the UNIQUE(hash) index of records no longer holds one record's row
// (the table still does), then writes that record again, alone and in a
// batch: the write must find the record (200, deduplicated, its id) and
// never insert a second record with its hash. On SQLite the damage is done
// while kurad is stopped and kurad starts with --startup-check=off (the
// check that would find it is the operator's to skip); on PostgreSQL the
// index is kept from taking the row by its catalog flags.
func TestRecords_DamagedHashIndexNeverDuplicates(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := kuradtest.StartMain(t, kuradtest.Options{Configure: func(c *daemon.Config) {
		c.DataDir, c.KeyFile, c.StartupCheck = dir, dir+"/kurad.key", "off"
	}})
	c := &apiClient{tb: t, base: d.BaseURL()}
	const body = `{"type":"agent.thought","content":"once only","author_id":"agent:bmo"}`
	r := decode[kura.Record](t, c.mustPost("/v1/records", body, 201))
	for _, content := range []string{"a", "b", "c"} {
		c.mustPost("/v1/records", `{"type":"agent.thought","content":"`+content+`","author_id":"agent:bmo"}`, 201)
	}
	raw := d.RawDB(t)
	ctx := context.Background()
	// rows counts the records with r's hash through UNIQUE(hash), and in
	// the table itself.
	rows := func() (byIndex, all int) {
		t.Helper()
		pg := d.Config.DatabaseURL != ""
		tx, err := raw.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if pg {
			// A table this small is read whole unless told otherwise.
			tx.ExecContext(ctx, "SET LOCAL enable_seqscan = off")
			tx.ExecContext(ctx, "SET LOCAL enable_bitmapscan = off")
		}
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM records WHERE hash = ?", r.Hash).Scan(&byIndex); err != nil {
			t.Fatal(err)
		}
		tx.Rollback()
		// Every row of the table, compared here: asked for the hashes
		// alone, SQLite reads them from the smallest index holding them,
		// the damaged one; no index holds the content.
		rs, err := raw.QueryContext(ctx, "SELECT hash, content FROM records")
		if err != nil {
			t.Fatal(err)
		}
		defer rs.Close()
		for rs.Next() {
			var h string
			var content sql.NullString
			if err := rs.Scan(&h, &content); err != nil {
				t.Fatal(err)
			}
			if h == r.Hash {
				all++
			}
		}
		return byIndex, all
	}

	if b, a := rows(); b != 1 || a != 1 {
		t.Fatalf("before the damage: %d, %d rows with hash %q", b, a, r.Hash)
	}
	if d.Config.DatabaseURL == "" {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := d.Close(ctx); err != nil {
			t.Fatal(err)
		}
		loseIndexRowSQLite(t, raw, r.ID)
		d = kuradtest.StartMain(t, kuradtest.Options{Configure: func(c *daemon.Config) {
			c.DataDir, c.KeyFile, c.StartupCheck = dir, dir+"/kurad.key", "off"
		}})
		c = &apiClient{tb: t, base: d.BaseURL()}
	} else {
		loseIndexRowPostgres(t, raw, r.ID)
	}
	if byIndex, all := rows(); byIndex != 0 || all != 1 {
		t.Fatalf("the damage: the index finds %d rows with the hash, the table holds %d; want 0 and 1", byIndex, all)
	}

	st, m, out := c.post("/v1/records", body)
	if st != 200 || m["id"] != r.ID || m["deduplicated"] != true {
		t.Errorf("the record written again: %d %s, want 200 deduplicated onto %s", st, out, r.ID)
	}
	st, m, out = c.post("/v1/records/batch", `{"records":[`+body+`,{"type":"agent.thought","content":"new","author_id":"agent:bmo"}]}`)
	recs, _ := m["records"].([]any)
	if st != 201 || len(recs) != 2 || recs[0].(map[string]any)["id"] != r.ID || recs[0].(map[string]any)["deduplicated"] != true {
		t.Errorf("the record written again in a batch: %d %s, want it deduplicated onto %s", st, out, r.ID)
	}
	if _, all := rows(); all != 1 {
		t.Fatalf("after writing it again the table holds %d records with its hash, want 1", all)
	}
}

// loseIndexRowSQLite makes records' UNIQUE(hash) index lose the row of
// record id, on a stopped kurad's file: a copy of the index without that
// row is built as another table's, and the two indexes' root pages are
// swapped in the schema.
func loseIndexRowSQLite(t *testing.T, raw *sql.DB, id string) {
	t.Helper()
	conn, err := raw.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx := context.Background()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := conn.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("CREATE TABLE scratch (id TEXT PRIMARY KEY, hash TEXT NOT NULL UNIQUE) WITHOUT ROWID")
	exec("INSERT INTO scratch SELECT id, hash FROM records WHERE id <> ?", id)
	var idx string
	if err := conn.QueryRowContext(ctx, "SELECT name FROM pragma_index_list('records') WHERE origin = 'u' AND name LIKE 'sqlite_autoindex_%'").Scan(&idx); err != nil {
		t.Fatal(err)
	}
	var a, b int
	conn.QueryRowContext(ctx, "SELECT rootpage FROM sqlite_schema WHERE name = ?", idx).Scan(&a)
	conn.QueryRowContext(ctx, "SELECT rootpage FROM sqlite_schema WHERE name = 'sqlite_autoindex_scratch_2'").Scan(&b)
	if a == 0 || b == 0 {
		t.Fatalf("root pages of %s and scratch's index: %d, %d", idx, a, b)
	}
	var version int
	conn.QueryRowContext(ctx, "PRAGMA schema_version").Scan(&version)
	exec("PRAGMA writable_schema = ON")
	exec("UPDATE sqlite_schema SET rootpage = CASE name WHEN ? THEN ? ELSE ? END WHERE name IN (?, 'sqlite_autoindex_scratch_2')", idx, b, a, idx)
	// Other connections reread the schema only when its version moves.
	exec(fmt.Sprintf("PRAGMA schema_version = %d", version+1))
	exec("PRAGMA writable_schema = OFF")
}

// loseIndexRowPostgres makes records' UNIQUE(hash) index lose the row of
// record id on a running kurad's database: with the index marked not
// ready PostgreSQL does not maintain it, so the row's hash changed and set
// back leaves a version of the row the index does not hold, and the
// version it holds is dead.
func loseIndexRowPostgres(t *testing.T, raw *sql.DB, id string) {
	t.Helper()
	ctx := context.Background()
	tx, err := raw.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var hash string
	if err := tx.QueryRowContext(ctx, "SELECT hash FROM records WHERE id = ?", id).Scan(&hash); err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		q    string
		args []any
	}{
		{"UPDATE pg_index SET indisready = false WHERE indexrelid = 'records_hash_key'::regclass", nil},
		{"UPDATE records SET hash = ? WHERE id = ?", []any{strings.Repeat("e", 64), id}},
		{"UPDATE records SET hash = ? WHERE id = ?", []any{hash, id}},
		{"UPDATE pg_index SET indisready = true WHERE indexrelid = 'records_hash_key'::regclass", nil},
	} {
		if _, err := tx.ExecContext(ctx, s.q, s.args...); err != nil {
			t.Fatalf("%s: %v", s.q, err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}
