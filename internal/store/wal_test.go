package store_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/sqlitetest"
	"github.com/kura-memory/kura/internal/store"
)

// Under writes that never pause, with readers always present, PASSIVE
// checkpoints alone never let the WAL restart; the writer's truncation must
// keep it near its configured bound. Not parallel: it watches for
// truncations within a time window, which other tests' load would stretch.
// On a loaded machine (other packages' tests on both cores) the readers
// may hold the WAL past the truncation's wait; the writer then tries
// again after WALTruncateRetry, and what the writers wrote meanwhile
// lands on top of the bound: a second of them (the default) was 8 MB
// here. The retry is cut to 20 ms so that the bound below holds also then.
func TestWAL_BoundedUnderSustainedWrites(t *testing.T) {
	const limit = 200 // frames
	path := sqlitetest.File(t)
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	db := store.New(store.Config{Path: path, Signer: key, WALTruncateFrames: limit, WALTruncateRetry: 20 * time.Millisecond,
		CheckpointInterval: 10 * time.Millisecond})
	if err := db.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(context.Background()) })
	ctx := context.Background()
	var stop atomic.Bool
	var wg sync.WaitGroup
	var written atomic.Int64
	for w := range 4 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				if _, err := db.CreateRecords(ctx, []kura.RecordInput{thought(w*1_000_000 + i)}); err != nil {
					t.Error(err)
					return
				}
				written.Add(1)
			}
		})
	}
	// Two readers at a steady pace keep read transactions coming, as a
	// busy kurad's would, without starving the writers of the 2 cores.
	for range 2 {
		wg.Go(func() {
			pace := time.NewTicker(time.Millisecond)
			defer pace.Stop()
			for !stop.Load() {
				db.ListEvents(ctx, kura.EventFilter{After: max(0, db.LastEventSeq()-50), Limit: 50})
				<-pace.C
			}
		})
	}
	var maxWAL int64
	truncations := 0
	prev := int64(0)
	// Sample the WAL's size every 2 ms (a slower poll would miss a grow and
	// shrink between two looks) until it has shrunk three times; the check
	// below fails the test if it never did within the bound (a loaded
	// machine may need a while: a truncation blocked by a reader retries
	// after a second).
	sample := time.NewTicker(2 * time.Millisecond)
	defer sample.Stop()
sampling:
	for bound := time.After(10 * time.Second); truncations < 3; {
		select {
		case <-bound:
			break sampling
		case <-sample.C:
		}
		if st, err := os.Stat(path + "-wal"); err == nil {
			maxWAL = max(maxWAL, st.Size())
			if st.Size() < prev {
				truncations++
			}
			prev = st.Size()
		}
	}
	stop.Store(true)
	wg.Wait()
	if truncations == 0 {
		t.Fatalf("the WAL never shrank while %d records were written (max %d bytes)", written.Load(), maxWAL)
	}
	// The bound plus what lands between a checkpoint and the truncation.
	if maxWAL > 8*limit*4096 {
		t.Errorf("the WAL reached %d bytes; truncation at %d frames should keep it near %d", maxWAL, limit, limit*4096)
	}
	t.Logf("%d records written, WAL truncated %d times, max %d KiB", written.Load(), truncations, maxWAL>>10)
}
