package store

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/pgtest"
)

// TestPGCommit_AllOrNothing holds the pipelined COMMIT (pgCommit) to a
// transaction's rules: a pipeline whose statements all succeed commits
// them with what the transaction wrote before; one whose statement fails
// commits nothing, names the statement, and leaves the connection fit for
// the next transaction. After either, the transaction's own Commit or
// Rollback sends nothing more and reports the outcome.
func TestPGCommit_AllOrNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sql.Open(pgDriverName, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, "CREATE TABLE piped(k BIGINT PRIMARY KEY, v TEXT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	// run writes row k in the transaction, then sends pipe with the COMMIT.
	run := func(k int64, pipe *pgPipe) (commitErr, txErr error) {
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO piped(k, v) VALUES (?, 'before')", k); err != nil {
			t.Fatal(err)
		}
		if commitErr = pgCommit(ctx, conn, pipe); commitErr != nil {
			return commitErr, tx.Rollback()
		}
		return nil, tx.Commit()
	}
	rows := func() []string {
		rs, err := db.QueryContext(ctx, "SELECT k || ':' || v FROM piped ORDER BY k, v")
		if err != nil {
			t.Fatal(err)
		}
		defer rs.Close()
		var out []string
		for rs.Next() {
			var s string
			rs.Scan(&s)
			out = append(out, s)
		}
		return out
	}

	ok := &pgPipe{}
	ok.add("INSERT INTO piped(k, v) VALUES (?, ?), (?, ?)", []any{int64(2), "piped", int64(3), "piped"})
	if cerr, terr := run(1, ok); cerr != nil || terr != nil {
		t.Fatalf("pipeline: %v; Commit after it: %v", cerr, terr)
	}
	if got, want := strings.Join(rows(), " "), "1:before 2:piped 3:piped"; got != want {
		t.Fatalf("after the pipeline: rows %q, want %q", got, want)
	}

	bad := &pgPipe{}
	bad.add("INSERT INTO piped(k, v) VALUES (?, ?)", []any{int64(5), "piped"})
	bad.add("INSERT INTO piped(v, k) VALUES (?, ?)", []any{"again", int64(2)}) // a duplicate key
	bad.add("INSERT INTO piped(k, v) VALUES (?, ?)", []any{int64(6), "piped"})
	cerr, terr := run(4, bad)
	if cerr == nil || !strings.Contains(cerr.Error(), "23505") || !strings.Contains(cerr.Error(), "piped(v, k)") {
		t.Fatalf("failed pipeline: got %v, want the duplicate key, naming its statement", cerr)
	}
	if terr != nil {
		t.Fatalf("Rollback after a failed pipeline: %v", terr)
	}
	if got, want := strings.Join(rows(), " "), "1:before 2:piped 3:piped"; got != want {
		t.Fatalf("after the failed pipeline: rows %q, want %q (nothing of it)", got, want)
	}

	// The connection serves the next transaction, pipelined or not.
	if cerr, terr := run(7, &pgPipe{}); cerr != nil || terr != nil {
		t.Fatalf("empty pipeline after a failure: %v; Commit: %v", cerr, terr)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO piped(k, v) VALUES (8, 'plain')"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("plain commit: %v", err)
	}
	if got, want := strings.Join(rows(), " "), "1:before 2:piped 3:piped 7:before 8:plain"; got != want {
		t.Fatalf("rows %q, want %q", got, want)
	}
}
