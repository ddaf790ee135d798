package store_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/sqlitetest"
	"github.com/kura-memory/kura/internal/store"
)

// mustHistory writes a session with turns and a few loose records, so the
// event log has every kind of row verification could be thought to need.
func mustHistory(t *testing.T, db *store.DB) *kura.Session {
	t.Helper()
	ctx := context.Background()
	s, err := db.CreateSession(ctx, &kura.SessionInput{Project: "hashi", Name: "compact"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		instr := kura.RecordInput{Type: "task.instruction", AuthorID: "user:oles", Content: json.RawMessage(fmt.Sprint(i))}
		turn, err := db.OpenTurn(ctx, s.ID, &kura.TurnOpenInput{Instruction: &instr}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.AppendTurn(ctx, turn.ID, &kura.TurnAppend{Records: []kura.RecordRef{{RecordInput: kura.RecordInput{
			Type: "memory.fact", AuthorID: "agent:bmo", Content: json.RawMessage(fmt.Sprintf(`"fact %d"`, i))}}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.CloseTurn(ctx, turn.ID, &kura.TurnClose{Status: "complete"}); err != nil {
			t.Fatal(err)
		}
	}
	recs := mustRecords(t, db, 5)
	if _, err := db.CreateLedger(ctx, &kura.LedgerInput{Label: "loose", RecordIDs: ids(recs)}); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStore_CompactEvents(t *testing.T) {
	t.Parallel()
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	path := sqlitetest.File(t)
	db := mustOpenAt(t, path, key)
	ctx := context.Background()
	s := mustHistory(t, db)
	last := db.LastEventSeq()
	eventsBefore := db.Counts()["events"]
	if last < 30 {
		t.Fatalf("only %d events; the test needs more", last)
	}

	t.Run("Invalid", func(t *testing.T) {
		if _, err := db.CompactEvents(ctx, 0); kura.ErrorCode(err) != kura.EInvalid {
			t.Errorf("got %v, want invalid_argument", err)
		}
	})

	t.Run("NothingPublishedNothingRemoved", func(t *testing.T) {
		res, err := db.CompactEvents(ctx, last)
		if err != nil {
			t.Fatal(err)
		}
		if res.Removed != 0 || res.CompactedThrough != 0 || res.FirstSeq != 1 {
			t.Errorf("got %+v, want nothing removed before the doorbell published anything", res)
		}
	})

	t.Run("StopsAtThePublishedCursor", func(t *testing.T) {
		if err := db.SavePublishedSeq(ctx, 20); err != nil {
			t.Fatal(err)
		}
		res, err := db.CompactEvents(ctx, last)
		if err != nil {
			t.Fatal(err)
		}
		if res.Removed != 20 || res.CompactedThrough != 20 || res.FirstSeq != 21 || res.LastSeq != last || res.PublishedSeq != 20 {
			t.Errorf("got %+v, want seqs 1..20 removed", res)
		}
		if got := db.Counts()["events"]; got != eventsBefore-20 {
			t.Errorf("got events count %d, want %d", got, eventsBefore-20)
		}
	})

	t.Run("StopsAtBeforeSeq", func(t *testing.T) {
		if err := db.SavePublishedSeq(ctx, last); err != nil {
			t.Fatal(err)
		}
		res, err := db.CompactEvents(ctx, 26)
		if err != nil {
			t.Fatal(err)
		}
		if res.Removed != 5 || res.CompactedThrough != 25 || res.RemovedTotal != 25 || res.FirstSeq != 26 {
			t.Errorf("got %+v, want seqs 21..25 removed, 25 in all", res)
		}
		// Asking for less than is done already changes nothing.
		res, err = db.CompactEvents(ctx, 10)
		if err != nil || res.Removed != 0 || res.CompactedThrough != 25 {
			t.Errorf("got %+v, %v, want nothing more removed", res, err)
		}
	})

	t.Run("FeedSaysWhatWasCompacted", func(t *testing.T) {
		for _, tt := range []struct {
			name string
			f    kura.EventFilter
			want int64
		}{
			{"FromZero", kura.EventFilter{After: 0}, 25},
			{"InsideTheGap", kura.EventFilter{After: 24}, 25},
			{"Filtered", kura.EventFilter{After: 3, Types: []string{"turn.complete"}}, 25},
			{"AtTheCheckpoint", kura.EventFilter{After: 25}, 0},
			{"Past", kura.EventFilter{After: 27}, 0},
		} {
			t.Run(tt.name, func(t *testing.T) {
				p, err := db.ListEvents(ctx, tt.f)
				if err != nil {
					t.Fatal(err)
				}
				if p.CompactedThrough != tt.want {
					t.Errorf("got compacted_through %d, want %d", p.CompactedThrough, tt.want)
				}
				if len(p.Events) > 0 && p.Events[0].Seq <= 25 {
					t.Errorf("got event %d, which was compacted", p.Events[0].Seq)
				}
			})
		}
		if got, err := db.EventsCompactedThrough(ctx); err != nil || got != 25 {
			t.Errorf("got %d, %v, want 25", got, err)
		}
	})

	t.Run("NewestRowIsKept", func(t *testing.T) {
		res, err := db.CompactEvents(ctx, last+1000)
		if err != nil {
			t.Fatal(err)
		}
		if res.CompactedThrough != last-1 || res.FirstSeq != last || res.LastSeq != last {
			t.Errorf("got %+v, want everything but the newest event (%d) removed", res, last)
		}
	})

	t.Run("EverythingStillVerifies", func(t *testing.T) {
		check, err := db.VerifyAll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !check.OK || check.Sessions != 1 || check.Ledgers != 9 {
			t.Errorf("got %+v, want 1 session and 9 ledgers verified", check)
		}
		cur, err := db.GetSession(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		v, err := db.VerifySession(ctx, s.ID, *cur.HeadHash)
		if err != nil || !v.OK {
			t.Errorf("got %+v, %v, want the session to verify", v, err)
		}
	})

	t.Run("BackupCarriesTheCheckpoint", func(t *testing.T) {
		m, err := db.Backup(ctx, filepath.Join(t.TempDir(), "b"))
		if err != nil {
			t.Fatal(err)
		}
		if m.EventsCompactedThrough != last-1 || m.Counts["events"] != 1 || m.LastEventSeq != last {
			t.Errorf("got %+v, want the checkpoint %d, one event, last seq %d", m, last-1, last)
		}
	})

	t.Run("SeqsAreNeverReused", func(t *testing.T) {
		db.Close(ctx)
		db = mustOpenAt(t, path, key)
		if db.LastEventSeq() != last {
			t.Fatalf("got last event seq %d after reopening, want %d", db.LastEventSeq(), last)
		}
		if _, err := db.CreateRecord(ctx, &kura.RecordInput{Type: "agent.thought", AuthorID: "agent:bmo", Content: json.RawMessage(`"new"`)}); err != nil {
			t.Fatal(err)
		}
		if db.LastEventSeq() != last+1 {
			t.Errorf("got seq %d for the next event, want %d", db.LastEventSeq(), last+1)
		}
		if got := db.Counts()["events"]; got != 2 {
			t.Errorf("got events count %d, want 2", got)
		}
	})
}

// A compaction larger than one chunk goes in several transactions and ends
// with the checkpoint where it was asked to be.
func TestStore_CompactEventsInChunks(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	defer store.SetCompactChunk(db, 7)()
	mustRecords(t, db, 40)
	last := db.LastEventSeq()
	if err := db.SavePublishedSeq(ctx, last); err != nil {
		t.Fatal(err)
	}
	txBefore := db.Stats().Transactions.Load()
	res, err := db.CompactEvents(ctx, last-10)
	if err != nil {
		t.Fatal(err)
	}
	if n := db.Stats().Transactions.Load() - txBefore; n < (last-11+6)/7 {
		t.Errorf("got %d transactions, want one per chunk of 7 seqs", n)
	}
	if res.Removed != last-11 || res.CompactedThrough != last-11 || res.FirstSeq != last-10 {
		t.Errorf("got %+v, want seqs 1..%d removed", res, last-11)
	}
}
