package store_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/store"
	"github.com/kura-memory/kura/internal/testwait"
)

// TestStore_StorageTroubleClearsOnAClientWrite fills the database to its
// page limit and checks that the store's own bookkeeping (the doorbell's
// cursor, moved in place) committing on the full disk does not report the
// storage healthy while every client write still fails; a client write
// that commits does.
func TestStore_StorageTroubleClearsOnAClientWrite(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	pages, err := db.PageCount(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.SetMaxPages(ctx, pages); err != nil {
		t.Fatal(err)
	}
	big := json.RawMessage(`"` + strings.Repeat("x", 8000) + `"`)
	var werr error
	for i := 0; i < 100 && werr == nil; i++ {
		_, werr = db.CreateRecord(ctx, &kura.RecordInput{Type: "agent.thought", AuthorID: "agent:full", Content: big})
	}
	if !kura.IsCode(werr, kura.EStorageFull) {
		t.Fatalf("writes on a full database: %v, want %s", werr, kura.EStorageFull)
	}
	if db.StorageHealth() == "" {
		t.Fatal("StorageHealth is empty after a write failed on a full database")
	}
	if err := db.SavePublishedSeq(ctx, 1); err != nil {
		t.Fatalf("a bookkeeping update that needs no new page: %v", err)
	}
	if db.StorageHealth() == "" {
		t.Error("a bookkeeping commit cleared StorageHealth while client writes still fail")
	}
	if _, err := db.CreateRecord(ctx, &kura.RecordInput{Type: "agent.thought", AuthorID: "agent:full", Content: big}); !kura.IsCode(err, kura.EStorageFull) {
		t.Fatalf("a client write after the bookkeeping commit: %v, want %s", err, kura.EStorageFull)
	}
	if _, err := db.SetMaxPages(ctx, 1<<30); err != nil {
		t.Fatal(err)
	}
	if db.StorageHealth() == "" {
		t.Error("raising the page limit (bookkeeping) cleared StorageHealth before any client write committed")
	}
	if _, err := db.CreateRecord(ctx, &kura.RecordInput{Type: "agent.thought", AuthorID: "agent:full", Content: big}); err != nil {
		t.Fatalf("a client write with room again: %v", err)
	}
	if h := db.StorageHealth(); h != "" {
		t.Errorf("StorageHealth after a client write committed: %q, want empty", h)
	}
}

// TestStore_WriterHealthNamesAStuckTransaction: a transaction that does not
// end (here a job that waits; in the field a disk that hangs or a primary
// waiting for a synchronous standby that is gone) holds up every write
// behind it, and WriterHealth says so until it ends.
func TestStore_WriterHealthNamesAStuckTransaction(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	db.SetWriterStallAfter(100 * time.Millisecond)
	if h := db.WriterHealth(); h != "" {
		t.Fatalf("WriterHealth of an idle writer: %q", h)
	}
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- db.Update(context.Background(), func(*store.Tx) error { <-release; return nil })
	}()
	testwait.For(t, testwait.Default, "WriterHealth naming the stuck transaction", func() bool {
		return strings.Contains(db.WriterHealth(), "waited")
	})
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The writer answers its callers before it marks the transaction
	// ended, so the mark may trail the answer by a moment.
	testwait.For(t, testwait.Default, "WriterHealth to clear after the transaction ended", func() bool {
		return db.WriterHealth() == ""
	})
}
