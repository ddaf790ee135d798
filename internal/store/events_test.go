package store_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"slices"
	"testing"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/pgtest"
	"github.com/kura-memory/kura/internal/store"
)

// TestListEvents_Through holds the feed to a Through seq the caller knows
// is committed: the page ends there, whether this instance has heard of
// newer commits or not. On PostgreSQL the newer ones are another
// instance's, written after this one's own; without Through the page runs
// on to them.
func TestListEvents_Through(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			_, key, _ := ed25519.GenerateKey(rand.Reader)
			cfg := store.Config{Signer: key}
			if engine == "postgres" {
				cfg.DatabaseURL = pgtest.URL(t)
			}
			reader := mustOpenConfig(t, cfg)
			writer := reader
			if engine == "postgres" {
				writer = mustOpenConfig(t, cfg) // a second kurad on the database
			}
			if _, err := reader.CreateRecords(ctx, []kura.RecordInput{thought(100)}); err != nil {
				t.Fatal(err) // seq 1, this instance's own
			}
			mustRecords(t, writer, 3) // seqs 2-4

			for _, tt := range []struct {
				name          string
				f             kura.EventFilter
				want          []int64
				wantNextAfter int64
			}{
				{"OwnCommit", kura.EventFilter{Through: 1}, []int64{1}, 1},
				{"PastWhatThisInstanceHeardOf", kura.EventFilter{Through: 3}, []int64{1, 2, 3}, 3},
				{"FromAfter", kura.EventFilter{After: 1, Through: 3}, []int64{2, 3}, 3},
				{"AtAfter", kura.EventFilter{After: 3, Through: 3}, nil, 3},
				{"Limited", kura.EventFilter{Through: 3, Limit: 2}, []int64{1, 2}, 2},
				{"Typed", kura.EventFilter{After: 1, Through: 3, Types: []string{kura.EventRecordWritten}}, []int64{2, 3}, 3},
				{"WithoutThrough", kura.EventFilter{}, []int64{1, 2, 3, 4}, 4},
			} {
				t.Run(tt.name, func(t *testing.T) {
					p, err := reader.ListEvents(ctx, tt.f)
					if err != nil {
						t.Fatal(err)
					}
					var got []int64
					for _, e := range p.Events {
						got = append(got, e.Seq)
					}
					if !slices.Equal(got, tt.want) || p.NextAfter != tt.wantNextAfter {
						t.Errorf("got seqs %v next_after %d, want %v next_after %d", got, p.NextAfter, tt.want, tt.wantNextAfter)
					}
					if p.LastSeq < tt.wantNextAfter {
						t.Errorf("got last_seq %d, before the page's end %d", p.LastSeq, tt.wantNextAfter)
					}
				})
			}
		})
	}
}

// TestCounts_ReadersRacingTheWriter holds an instance's counts to the
// database's while readers of the feed catch up with the database (on
// PostgreSQL they may find a commit there before the writer has counted
// it): every event is counted once.
func TestCounts_ReadersRacingTheWriter(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			cfg := store.Config{}
			if engine == "postgres" {
				cfg.DatabaseURL = pgtest.URL(t)
			}
			db := mustOpenConfig(t, cfg)
			stop := make(chan struct{})
			readers := make(chan struct{})
			go func() {
				defer close(readers)
				for {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := db.ListEvents(ctx, kura.EventFilter{After: max(0, db.LastEventSeq()-1), Limit: 10}); err != nil {
						t.Error(err)
						return
					}
				}
			}()
			for i := range 150 {
				if _, err := db.CreateRecords(ctx, []kura.RecordInput{thought(1000 + i)}); err != nil {
					t.Fatal(err)
				}
			}
			close(stop)
			<-readers
			page, err := db.ListEvents(ctx, kura.EventFilter{Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := db.Counts()["events"], int64(len(page.Events)); got != want {
				t.Fatalf("counts %d events, the feed holds %d", got, want)
			}
		})
	}
}
