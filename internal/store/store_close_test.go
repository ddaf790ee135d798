package store_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/sqlitetest"
	"github.com/kura-memory/kura/internal/store"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// A close that gives up waiting for a busy writer still releases the
// pools, reports the timeout, and a second close is a no-op.
func TestStore_CloseTimeoutReleases(t *testing.T) {
	ctx := context.Background()
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	db := store.New(store.Config{Path: sqlitetest.File(t), Signer: key})
	if err := db.Open(ctx); err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}), make(chan struct{})
	jobDone := make(chan error, 1)
	go func() {
		jobDone <- db.Update(ctx, func(*store.Tx) error {
			close(started)
			<-release
			return nil
		})
	}()
	<-started
	if db.PoolsClosed() {
		t.Fatal("pools before close: got closed, want open")
	}
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := db.Close(cctx); err == nil {
		t.Fatal("close with the writer held: got nil, want a timeout")
	}
	if !db.PoolsClosed() {
		t.Fatal("pools after a timed-out close: got open, want closed")
	}
	if err := db.Close(ctx); err != nil {
		t.Fatalf("second close: got %v, want nil", err)
	}
	close(release)
	<-jobDone // answered (committed or failed on the closed pool), never hung
}

// Close is safe to call twice after a clean close too, and the pools are
// closed by the first.
func TestStore_CloseTwice(t *testing.T) {
	ctx := context.Background()
	db := MustOpenStore(t)
	if err := db.Close(ctx); err != nil {
		t.Fatalf("first close: %v", err)
	}
	if !db.PoolsClosed() {
		t.Fatal("pools after close: got open, want closed")
	}
	if err := db.Close(ctx); err != nil {
		t.Fatalf("second close: got %v, want nil", err)
	}
}

// TestStore_ConstraintErrors: a constraint SQLite enforces maps, by its
// extended code, to a kura code. A uniqueness constraint is a write racing
// another for a name (conflict); NOT NULL, CHECK and FOREIGN KEY reaching
// SQLite mean validation let a bad row through (internal, the SQLite error
// kept as the cause for the log, nothing of it in the message). None is a
// storage failure.
func TestStore_ConstraintErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := sqlitetest.File(t)
	db := mustOpenAt(t, path, nil)
	// raw runs a statement outside the store, in a transaction it rolls
	// back, to show which constraint it breaks.
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=foreign_keys(ON)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	rawCode := func(stmt string) int {
		tx, err := raw.Begin()
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		var se *sqlite.Error
		if _, err := tx.Exec(stmt); !errors.As(err, &se) {
			t.Fatalf("%s: got %v, want a SQLite error", stmt, err)
		}
		return se.Code()
	}
	for _, tc := range []struct {
		name  string
		setup string // run first, must succeed
		stmt  string // must fail on the constraint
		code  int    // the SQLite extended code stmt fails with
		want  string // the kura code
	}{
		{"Unique", "INSERT INTO scopes(name) VALUES('twice')", "INSERT INTO scopes(name) VALUES('twice')",
			sqlite3.SQLITE_CONSTRAINT_UNIQUE, kura.EConflict},
		{"PrimaryKey", "INSERT INTO scopes(sid, name) VALUES(9001, 'pk-a')", "INSERT INTO scopes(sid, name) VALUES(9001, 'pk-b')",
			sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY, kura.EConflict},
		{"NotNull", "", "INSERT INTO scopes(name) VALUES(NULL)",
			sqlite3.SQLITE_CONSTRAINT_NOTNULL, kura.EInternal},
		{"Check", "", "INSERT INTO kb_history(sp, identifier, version, op, entry_id, at) VALUES(1, 'i', 1, 'bogus', 'e', 't')",
			sqlite3.SQLITE_CONSTRAINT_CHECK, kura.EInternal},
		{"ForeignKey", "", "INSERT INTO redactions(record_id, by_id, reason, at, event_seq) VALUES('no-such-record', 'a', 'r', 't', 1)",
			sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY, kura.EInternal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != "" {
				if err := db.Update(ctx, func(tx *store.Tx) error { _, err := tx.Exec(tc.setup); return err }); err != nil {
					t.Fatalf("setup: %v", err)
				}
			}
			if got := rawCode(tc.stmt); got != tc.code {
				t.Fatalf("the statement breaks constraint %d, want %d", got, tc.code)
			}
			err := db.Update(ctx, func(tx *store.Tx) error { _, err := tx.Exec(tc.stmt); return err })
			// A kura code, not an error merely read as internal for lack
			// of one.
			var ke *kura.Error
			if !errors.As(err, &ke) || ke.Code != tc.want {
				t.Fatalf("got %v, want a kura error with code %s", err, tc.want)
			}
			if errors.Is(err, kura.ErrStorage) {
				t.Errorf("a constraint is not a storage failure: %v", err)
			}
			if tc.want != kura.EInternal {
				return
			}
			var se *sqlite.Error
			if !errors.As(err, &se) || se.Code() != tc.code {
				t.Fatalf("cause: got %v, want the SQLite error with extended code %d", err, tc.code)
			}
			if msg := err.Error(); strings.Contains(msg, "constraint failed") {
				t.Errorf("message %q carries SQLite's text; it belongs in the log", msg)
			}
		})
	}
}
