package bus

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/store"
	"github.com/kura-memory/kura/internal/testwait"
	"github.com/nats-io/nats.go"
)

// doorbell is a store, an embedded NATS server and a publisher wired the way
// kurad wires them.
type doorbell struct {
	db  *store.DB
	bus *Bus
	pub *Publisher
}

func openStore(tb testing.TB, path string, key ed25519.PrivateKey) *store.DB {
	tb.Helper()
	db := store.New(store.Config{Path: path, Signer: key})
	if err := db.Open(context.Background()); err != nil {
		tb.Fatalf("open store: %v", err)
	}
	return db
}

func openBus(tb testing.TB) *Bus {
	tb.Helper()
	b := New(Config{Addr: "127.0.0.1:0"})
	if err := b.Open(context.Background()); err != nil {
		tb.Fatalf("open bus: %v", err)
	}
	return b
}

// startDoorbell opens everything on the database at path; hook, if set, runs
// before each publish. close stops it all in kurad's order.
func startDoorbell(tb testing.TB, path string, key ed25519.PrivateKey, cfg PublisherConfig, hook func(*kura.Event) error) (*doorbell, func()) {
	tb.Helper()
	d := &doorbell{db: openStore(tb, path, key), bus: openBus(tb)}
	pub := d.bus.NewPublisher(d.db, cfg)
	pub.beforePublish = hook
	d.pub = pub
	d.db.OnCommit(pub.Notify)
	if err := pub.Open(context.Background()); err != nil {
		tb.Fatal(err)
	}
	var once sync.Once
	closeAll := func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := pub.Close(ctx); err != nil {
				tb.Errorf("close publisher: %v", err)
			}
			if err := d.db.Close(ctx); err != nil {
				tb.Errorf("close store: %v", err)
			}
			d.bus.Close(ctx)
		})
	}
	tb.Cleanup(closeAll)
	return d, closeAll
}

func newKey(tb testing.TB) ed25519.PrivateKey {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	return key
}

// subscriber collects pointer payloads from an ordinary TCP NATS client.
type subscriber struct {
	mu   sync.Mutex
	msgs []*nats.Msg
}

func subscribe(tb testing.TB, b *Bus, subject string) *subscriber {
	tb.Helper()
	nc, err := nats.Connect("nats://" + b.Addr())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nc.Close)
	s := &subscriber{}
	if _, err := nc.Subscribe(subject, func(m *nats.Msg) {
		s.mu.Lock()
		s.msgs = append(s.msgs, m)
		s.mu.Unlock()
	}); err != nil {
		tb.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		tb.Fatal(err)
	}
	return s
}

// wait returns the messages once there are n, failing after a bound.
func (s *subscriber) wait(tb testing.TB, n int) []*nats.Msg {
	tb.Helper()
	var got []*nats.Msg
	testwait.For(tb, testwait.Default, fmt.Sprintf("%d messages", n), func() bool {
		s.mu.Lock()
		got = append([]*nats.Msg(nil), s.msgs...)
		s.mu.Unlock()
		return len(got) >= n
	})
	return got
}

// sentinel writes one more record and returns every message once its event
// (seq n+1) is among them. The publisher sends in seq order over one
// connection, so a stray message (a duplicate, a rolled-back write) sent
// before it has arrived by then, ahead of it, and shows in the run.
func (s *subscriber) sentinel(tb testing.TB, db *store.DB, n int) []*nats.Msg {
	tb.Helper()
	if _, err := db.CreateRecords(context.Background(), records(1, 1_000_000)); err != nil {
		tb.Fatal(err)
	}
	return s.wait(tb, n+1)
}

// seqs decodes the payloads and returns their seqs in arrival order.
func seqs(tb testing.TB, msgs []*nats.Msg) []int64 {
	tb.Helper()
	out := make([]int64, len(msgs))
	for i, m := range msgs {
		var p struct {
			Seq int64 `json:"seq"`
		}
		if err := json.Unmarshal(m.Data, &p); err != nil {
			tb.Fatalf("payload %q: %v", m.Data, err)
		}
		out[i] = p.Seq
	}
	return out
}

func records(n, from int) []kura.RecordInput {
	ins := make([]kura.RecordInput, n)
	for i := range ins {
		ins[i] = kura.RecordInput{Type: "agent.thought", AuthorID: "agent:bmo",
			Content: json.RawMessage(fmt.Sprintf(`{"n":%d}`, from+i))}
	}
	return ins
}

// wantRun fails unless got is exactly from, from+1, ..., to.
func wantRun(tb testing.TB, got []int64, from, to int64) {
	tb.Helper()
	if int64(len(got)) != to-from+1 {
		tb.Fatalf("got %d seqs (%v...), want %d..%d", len(got), head(got), from, to)
	}
	for i, s := range got {
		if s != from+int64(i) {
			tb.Fatalf("seq at %d is %d, want %d (order or duplicate broken)", i, s, from+int64(i))
		}
	}
}

func head(s []int64) []int64 { return s[:min(len(s), 10)] }

func TestPublisher_SubscriberGetsPointerToCommittedData(t *testing.T) {
	t.Parallel()
	d, _ := startDoorbell(t, filepath.Join(t.TempDir(), "kura.db"), newKey(t), PublisherConfig{}, nil)
	sub := subscribe(t, d.bus, "oclaw.v1.>")
	ctx := context.Background()
	in := kura.RecordInput{Type: "agent.thought", AuthorID: "agent:bmo",
		Content:  json.RawMessage(`{"text":"the doorbell rings"}`),
		Metadata: map[string]string{"project_id": "hashi"}}
	rec, err := d.db.CreateRecord(ctx, &in)
	if err != nil {
		t.Fatal(err)
	}
	m := sub.wait(t, 1)[0]
	if m.Subject != "oclaw.v1.hashi.evt.record.written" {
		t.Errorf("subject %q", m.Subject)
	}
	if len(m.Data) >= 512 {
		t.Errorf("payload is %d bytes, want < 512", len(m.Data))
	}
	var p map[string]any
	if err := json.Unmarshal(m.Data, &p); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"seq": true, "type": true, "project": true, "at": true, "record_id": true}
	for k := range p {
		if !want[k] {
			t.Errorf("payload carries %q: pointers only (%s)", k, m.Data)
		}
	}
	if p["type"] != "record.written" || p["project"] != "hashi" || p["seq"] != float64(1) {
		t.Errorf("payload %s", m.Data)
	}
	got, err := d.db.GetRecord(ctx, p["record_id"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if got.Hash != rec.Hash || string(got.Content) != string(rec.Content) {
		t.Errorf("record_id resolves to %+v, want %+v", got, rec)
	}
}

func TestPublisher_SeqOrderAcrossConcurrentWriters(t *testing.T) {
	t.Parallel()
	d, _ := startDoorbell(t, filepath.Join(t.TempDir(), "kura.db"), newKey(t), PublisherConfig{}, nil)
	sub := subscribe(t, d.bus, "oclaw.v1.default.>")
	var wg sync.WaitGroup
	const writers, each = 4, 25
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				ins := records(1+i%3, w*1000+i*10)
				if _, err := d.db.CreateRecords(context.Background(), ins); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	n := d.db.LastEventSeq()
	wantRun(t, seqs(t, sub.wait(t, int(n))), 1, n)
}

// A job that wrote an event row and then failed is rolled back with it:
// nothing is published for it, and what is published is exactly the
// committed log.
func TestPublisher_NothingForRolledBackWrites(t *testing.T) {
	t.Parallel()
	d, _ := startDoorbell(t, filepath.Join(t.TempDir(), "kura.db"), newKey(t), PublisherConfig{}, nil)
	sub := subscribe(t, d.bus, "oclaw.v1.>")
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if i%2 == 0 {
				err := d.db.Update(ctx, func(tx *store.Tx) error {
					if err := tx.AddEvent("record.written", "ghost", map[string]string{"record_id": "never"}, ""); err != nil {
						return err
					}
					return errors.New("changed my mind")
				})
				if err == nil {
					t.Error("failing job reported success")
				}
				return
			}
			if _, err := d.db.CreateRecords(ctx, records(2, i*10)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	n := d.db.LastEventSeq()
	if n != 20 {
		t.Fatalf("last seq %d, want 20 committed events", n)
	}
	wantRun(t, seqs(t, sub.wait(t, 20)), 1, 20)
	msgs := sub.sentinel(t, d.db, 20)
	wantRun(t, seqs(t, msgs), 1, 21)
	for _, m := range msgs {
		if m.Subject != "oclaw.v1.default.evt.record.written" {
			t.Errorf("published %s: %s", m.Subject, m.Data)
		}
	}
}

// The publisher is stopped at a chosen event (as if kurad died between
// commit and publish); the next start publishes everything after the saved
// cursor, in order, and nothing before it again.
func TestPublisher_ResumesFromSavedCursor(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "kura.db")
	key := newKey(t)
	const stopAt, total = 7, 30
	stuck := errors.New("publisher stopped here")
	d, closeAll := startDoorbell(t, path, key, PublisherConfig{SaveEvery: 10 * time.Millisecond}, func(e *kura.Event) error {
		if e.Seq > stopAt {
			return stuck
		}
		return nil
	})
	sub := subscribe(t, d.bus, "oclaw.v1.>")
	for i := range total {
		if _, err := d.db.CreateRecords(context.Background(), records(1, i)); err != nil {
			t.Fatal(err)
		}
	}
	wantRun(t, seqs(t, sub.wait(t, stopAt)), 1, stopAt)
	if d.pub.Lag() != total-stopAt {
		t.Errorf("lag %d, want %d", d.pub.Lag(), total-stopAt)
	}
	if d.pub.Health() == "" {
		t.Error("a failing publisher reports healthy")
	}
	if d.pub.Stats().Errors.Load() == 0 {
		t.Error("publish errors not counted")
	}
	closeAll()

	d2, _ := startDoorbell(t, path, key, PublisherConfig{}, nil)
	// Wait for the backlog through the saved cursor before the subscriber
	// joins, then write one more to see the live path too. The cursor is
	// saved after a flush, so NATS has had every event up to it: the
	// in-memory PublishedSeq says only that the client took them, and a
	// subscriber joining then could still hear the backlog.
	var saved int64
	testwait.Until(10*time.Second, func() bool {
		saved, _ = d2.db.PublishedSeq(context.Background())
		return saved >= total
	})
	if d2.pub.PublishedSeq() != total || saved != total {
		t.Fatalf("after restart published up to %d, saved %d, want %d", d2.pub.PublishedSeq(), saved, total)
	}
	sub2 := subscribe(t, d2.bus, "oclaw.v1.>")
	if _, err := d2.db.CreateRecords(context.Background(), records(1, 999)); err != nil {
		t.Fatal(err)
	}
	wantRun(t, seqs(t, sub2.wait(t, 1)), total+1, total+1)
}

// With the NATS server gone (the client reconnects), no flush can prove
// the events the client took delivered: Close keeps the cursor where it
// was and returns at once, instead of waiting out the flush's 5 s timeout
// (a kurad's shutdown did).
func TestPublisher_CloseWithTheServerGone(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "kura.db")
	d, _ := startDoorbell(t, path, newKey(t), PublisherConfig{SaveEvery: time.Hour}, nil)
	ctx := context.Background()
	if _, err := d.db.CreateRecords(ctx, records(3, 0)); err != nil {
		t.Fatal(err)
	}
	testwait.Until(10*time.Second, func() bool { return d.pub.PublishedSeq() == 3 })
	if err := d.bus.Close(ctx); err != nil {
		t.Fatal(err)
	}
	testwait.Until(10*time.Second, func() bool { return d.pub.nc.IsReconnecting() })
	start := time.Now()
	if err := d.pub.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("Close with the server gone took %s, want at once", took)
	}
	if saved, err := d.db.PublishedSeq(ctx); err != nil || saved != 0 {
		t.Errorf("saved cursor %d (%v), want 0: nothing proved the events delivered", saved, err)
	}
}

// The restart replay itself, seen by a subscriber that is there from the
// start: exactly the events after the saved cursor, in order.
func TestPublisher_ReplayAfterRestartIsTheMissingEvents(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "kura.db")
	key := newKey(t)
	const stopAt, total = 5, 40
	d, closeAll := startDoorbell(t, path, key, PublisherConfig{SaveEvery: 10 * time.Millisecond}, func(e *kura.Event) error {
		if e.Seq > stopAt {
			return errors.New("stopped")
		}
		return nil
	})
	if _, err := d.db.CreateRecords(context.Background(), records(total, 0)); err != nil {
		t.Fatal(err)
	}
	closeAll()

	// Same database, a NATS server on a known port this time so the
	// subscriber can be connected before the publisher starts.
	db := openStore(t, path, key)
	b := openBus(t)
	t.Cleanup(func() { b.Close(context.Background()) })
	sub := subscribe(t, b, "oclaw.v1.>")
	pub := b.NewPublisher(db, PublisherConfig{})
	db.OnCommit(pub.Notify)
	if err := pub.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pub.Close(context.Background())
		db.Close(context.Background())
	})
	wantRun(t, seqs(t, sub.wait(t, total-stopAt)), stopAt+1, total)
}

// Publishing fails for a while (NATS refusing); writes go on, and once
// publishing works again every missed event goes out in order.
func TestPublisher_RecoversFromPublishFailures(t *testing.T) {
	t.Parallel()
	var failing atomic.Bool
	failing.Store(true)
	d, _ := startDoorbell(t, filepath.Join(t.TempDir(), "kura.db"), newKey(t), PublisherConfig{SaveEvery: 20 * time.Millisecond}, func(e *kura.Event) error {
		if failing.Load() {
			return errors.New("nats refused")
		}
		return nil
	})
	sub := subscribe(t, d.bus, "oclaw.v1.>")
	for i := range 10 {
		if _, err := d.db.CreateRecords(context.Background(), records(3, i*3)); err != nil {
			t.Fatal(err)
		}
	}
	if d.pub.Health() == "" {
		t.Error("health is fine while every publish fails")
	}
	failing.Store(false)
	wantRun(t, seqs(t, sub.wait(t, 30)), 1, 30)
	testwait.Until(5*time.Second, func() bool { return d.pub.Health() == "" })
	if h := d.pub.Health(); h != "" {
		t.Errorf("health after recovery: %q", h)
	}
}

// A tiny in-memory queue overflows at once: every event is then read back
// from SQLite, still in order and once each.
func TestPublisher_OverflowReadsBackFromSQLite(t *testing.T) {
	t.Parallel()
	d, _ := startDoorbell(t, filepath.Join(t.TempDir(), "kura.db"), newKey(t), PublisherConfig{MaxPending: 3, PageSize: 7}, nil)
	sub := subscribe(t, d.bus, "oclaw.v1.>")
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			for i := range 5 {
				if _, err := d.db.CreateRecords(context.Background(), records(10, w*1000+i*10)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	wantRun(t, seqs(t, sub.wait(t, 150)), 1, 150)
	// Duplicates sent before the sentinel show in its run.
	wantRun(t, seqs(t, sub.sentinel(t, d.db, 150)), 1, 151)
}

// Dispatch commands go to one worker of a queue group each.
func TestPublisher_DispatchToQueueGroup(t *testing.T) {
	t.Parallel()
	d, _ := startDoorbell(t, filepath.Join(t.TempDir(), "kura.db"), newKey(t), PublisherConfig{}, nil)
	var mu sync.Mutex
	got := map[string]int{}
	perWorker := [2]int{}
	var conns [2]*nats.Conn
	var subs [2]*nats.Subscription
	for w := range 2 {
		nc, err := nats.Connect("nats://" + d.bus.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		conns[w] = nc
		if subs[w], err = nc.QueueSubscribe("oclaw.v1.*.cmd.summariser.dispatch", "summarisers", func(m *nats.Msg) {
			var p map[string]any
			json.Unmarshal(m.Data, &p)
			mu.Lock()
			got[p["turn_id"].(string)]++
			perWorker[w]++
			mu.Unlock()
		}); err != nil {
			t.Fatal(err)
		}
		nc.Flush()
	}
	ctx := context.Background()
	want := map[string]bool{}
	open := func(i int) {
		t.Helper()
		s, err := d.db.CreateSession(ctx, &kura.SessionInput{Project: "hashi", Name: fmt.Sprintf("s%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		instr := kura.RecordInput{Type: "task.instruction", AuthorID: "user:oles", Content: json.RawMessage(`"summarise"`)}
		turn, err := d.db.OpenTurn(ctx, s.ID, &kura.TurnOpenInput{Instruction: &instr, Dispatch: "summariser"}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		want[turn.ID] = true
	}
	dispatched := func(n int) func() bool {
		return func() bool { mu.Lock(); defer mu.Unlock(); return len(got) >= n }
	}
	const turns = 20
	for i := range turns {
		open(i)
	}
	testwait.Until(10*time.Second, dispatched(turns))
	// A sentinel turn: the publisher sends in order, so once its command
	// is in, a duplicate sent before it has reached the server too; a
	// flush on each worker's connection then brings it into that worker's
	// queue, and the workers are waited on to have handled all they got.
	open(turns)
	testwait.Until(10*time.Second, dispatched(turns+1))
	for w := range 2 {
		if err := conns[w].Flush(); err != nil {
			t.Fatal(err)
		}
	}
	testwait.For(t, 10*time.Second, "the workers to handle every command delivered", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for w := range 2 {
			if n, _, _ := subs[w].Pending(); n != 0 || uint64(perWorker[w]) != mustDelivered(t, subs[w]) {
				return false
			}
		}
		return true
	})
	mu.Lock()
	defer mu.Unlock()
	for id := range want {
		if got[id] != 1 {
			t.Errorf("turn %s dispatched %d times", id, got[id])
		}
	}
	if len(got) != turns+1 {
		t.Errorf("%d turns dispatched, want %d", len(got), turns+1)
	}
	if perWorker[0] == 0 || perWorker[1] == 0 {
		t.Logf("queue group split %v (NATS picks at random; both usually get some)", perWorker)
	}
}

func mustDelivered(tb testing.TB, s *nats.Subscription) uint64 {
	n, err := s.Delivered()
	if err != nil {
		tb.Fatal(err)
	}
	return uint64(n)
}
