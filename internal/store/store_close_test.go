package store_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/store"
)

// A close that gives up waiting for a busy writer still releases the
// pools, reports the timeout, and a second close is a no-op.
func TestStore_CloseTimeoutReleases(t *testing.T) {
	ctx := context.Background()
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	db := store.New(store.Config{Path: filepath.Join(t.TempDir(), "kura.db"), Signer: key})
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

// A uniqueness constraint that fires is answered as a conflict, not an
// internal error; a failing disk carries kura.ErrStorage.
func TestStore_ConstraintIsConflict(t *testing.T) {
	ctx := context.Background()
	db := MustOpenStore(t)
	insert := func(tx *store.Tx) error {
		_, err := tx.Exec("INSERT INTO scopes(name) VALUES('twice')")
		return err
	}
	if err := db.Update(ctx, insert); err != nil {
		t.Fatal(err)
	}
	err := db.Update(ctx, insert)
	if !kura.IsCode(err, kura.EConflict) {
		t.Fatalf("second insert: got %v, want conflict", err)
	}
	if errors.Is(err, kura.ErrStorage) {
		t.Fatalf("a conflict is not a storage failure: %v", err)
	}
}
