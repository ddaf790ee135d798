package store_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/sqlitetest"
	"github.com/kura-memory/kura/internal/store"
	"github.com/kura-memory/kura/internal/testwait"
)

// quietStore is a store whose background sweeper stays out of the way, so
// the writer runs only the test's jobs.
func quietStore(t *testing.T) *store.DB {
	t.Helper()
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	db := store.New(store.Config{Path: sqlitetest.File(t), Signer: key, SweepInterval: time.Hour})
	if err := db.Open(context.Background()); err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { db.Close(context.Background()) })
	return db
}

func TestStore_OnBatch(t *testing.T) {
	t.Parallel()
	db := quietStore(t)
	ctx := context.Background()
	var mu sync.Mutex
	var got []store.BatchStats
	db.OnBatch(func(bs store.BatchStats) {
		mu.Lock()
		got = append(got, bs)
		mu.Unlock()
	})
	// The writer calls the observer before it answers, so each write is
	// observed by the time it returns: no waiting.
	last := func() store.BatchStats {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		if len(got) == 0 {
			t.Fatal("got no batch observed, want one per transaction")
		}
		bs := got[len(got)-1]
		got = got[:0]
		return bs
	}

	t.Run("Committed", func(t *testing.T) {
		mustRecords(t, db, 3)
		bs := last()
		if !bs.Committed || bs.Failed || bs.Jobs != 1 {
			t.Errorf("got %+v, want one committed job", bs)
		}
		if bs.Duration <= 0 || bs.Commit <= 0 || bs.Commit > bs.Duration {
			t.Errorf("got duration %v, commit %v, want 0 < commit <= duration", bs.Duration, bs.Commit)
		}
	})
	t.Run("RolledBack", func(t *testing.T) {
		err := db.Update(ctx, func(tx *store.Tx) error { return errors.New("refused") })
		if err == nil {
			t.Fatal("got nil, want the job's error")
		}
		if bs := last(); bs.Committed || bs.Failed || bs.Jobs != 1 || bs.Commit != 0 {
			t.Errorf("got %+v, want one job rolled back, not a writer failure", bs)
		}
	})
	t.Run("Batched", func(t *testing.T) {
		release := make(chan struct{})
		started := make(chan struct{})
		gate := make(chan error, 1)
		go func() {
			gate <- db.Update(ctx, func(*store.Tx) error { close(started); <-release; return nil })
		}()
		<-started
		const n = 5
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				in := thought(500 + i)
				if _, err := db.CreateRecord(ctx, &in); err != nil {
					t.Error(err)
				}
			})
		}
		// Poll until every write has queued behind the gate job.
		testwait.For(t, 10*time.Second, "every write queued behind the gate job", func() bool { return db.QueueDepth() >= n })
		close(release)
		wg.Wait()
		if err := <-gate; err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		jobs := 0
		for _, bs := range got {
			jobs += bs.Jobs
		}
		got = got[:0]
		mu.Unlock()
		if jobs != n+1 {
			t.Errorf("got %d jobs observed, want %d", jobs, n+1)
		}
	})
}

func TestStore_Written(t *testing.T) {
	t.Parallel()
	db := quietStore(t)
	ctx := context.Background()
	w := db.Written()
	if len(w) != len(store.WrittenKinds) {
		t.Fatalf("got kinds %v, want %v", w, store.WrittenKinds)
	}
	for k, v := range w {
		if v != 0 {
			t.Errorf("%s: got %d before any write, want 0", k, v)
		}
	}
	recs := mustRecords(t, db, 4)
	mustRecords(t, db, 4) // the same again: deduplicated, not written
	if _, err := db.CreateLedger(ctx, &kura.LedgerInput{Label: "l", RecordIDs: ids(recs)}); err != nil {
		t.Fatal(err)
	}
	w = db.Written()
	for kind, want := range map[string]int64{"records": 4, "ledgers": 1, "sessions": 0, "nodes": 0} {
		if w[kind] != want {
			t.Errorf("%s: got %d, want %d", kind, w[kind], want)
		}
	}
}
