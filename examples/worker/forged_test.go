package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/auth"
	"github.com/kura-memory/kura/internal/daemon"
	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/kura-memory/kura/internal/testwait"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// forgedSeq is a seq far beyond anything these tests write: a worker that
// saved it would skip every genuine event after.
const forgedSeq = 1_000_000_000_000

// handledLog records what the worker handled.
type handledLog struct {
	mu   sync.Mutex
	ids  []string
	seqs []int64
}

func (h *handledLog) onRecord(seq int64, r *client.Record) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ids, h.seqs = append(h.ids, r.ID), append(h.seqs, seq)
}

func (h *handledLog) has(ids ...string) func() bool {
	return func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, id := range ids {
			if !slices.Contains(h.ids, id) {
				return false
			}
		}
		return true
	}
}

// routePeer joins a NATS server of the test's own to kurad's NATS cluster,
// as a peer may (routes have every right: docs/security.md): whatever it
// publishes reaches kurad's subscribers, so it stands for anyone who can
// put a message on oclaw.v1.> however that is prevented elsewhere.
func routePeer(t *testing.T, d *kuradtest.Daemon) *nats.Conn {
	t.Helper()
	route, err := url.Parse("nats-route://" + d.Bus().ClusterAddr())
	if err != nil {
		t.Fatal(err)
	}
	peer, err := server.NewServer(&server.Options{ServerName: "forger", Host: "127.0.0.1", Port: server.RANDOM_PORT, NoSigs: true, NoLog: true,
		Cluster: server.ClusterOpts{Name: "kura", Host: "127.0.0.1", Port: server.RANDOM_PORT}, Routes: []*url.URL{route}})
	if err != nil {
		t.Fatal(err)
	}
	go peer.Start()
	if !peer.ReadyForConnections(10 * time.Second) {
		t.Fatal("the peer NATS server did not start")
	}
	t.Cleanup(peer.Shutdown)
	testwait.For(t, 10*time.Second, "the route between kurad and the peer", func() bool { return d.Bus().NumRoutes() == 1 })
	nc, err := nats.Connect(peer.ClientURL(), nats.NoReconnect())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	subject := client.EventSubject("hashi", client.EventRecordWritten)
	testwait.For(t, 10*time.Second, "kurad's subscribers known to the peer", func() bool {
		return peer.GlobalAccount().SubscriptionInterest(subject)
	})
	return nc
}

// TestWorker_ForgedSeqMovesNothing: a record.written pointer that reaches
// the worker over NATS without kurad having written it (a huge seq, naming
// a real record) is checked against GET /v1/events and moves nothing:
// every genuine record after it is handled, the saved seq is the feed's,
// and so after a restart too.
func TestWorker_ForgedSeqMovesNothing(t *testing.T) {
	t.Parallel()
	d := kuradtest.StartMain(t, kuradtest.Options{Configure: func(c *daemon.Config) { c.NATSClusterAddr = "127.0.0.1:0" }})
	c := client.New(d.BaseURL())
	h := &handledLog{}
	cfg := config{KuraURL: d.BaseURL(), Project: "hashi", Name: "agent:test", StateFile: filepath.Join(t.TempDir(), "worker.seq"),
		onRecord: h.onRecord}
	stop := startWorker(t, cfg)
	first := putRecords(t, c, "hashi", 1)
	testwait.For(t, 10*time.Second, "the first record", h.has(first...))

	forger := routePeer(t, d)
	// A subscriber of its own on kurad's server, beside the worker's: once
	// it holds the forged pointer, so does the worker's connection, ahead
	// of anything kurad publishes after.
	watch, err := nats.Connect("nats://"+d.NATSAddr(), nats.NoReconnect())
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	seen, err := watch.SubscribeSync(client.EventSubject("hashi", client.EventRecordWritten))
	if err != nil {
		t.Fatal(err)
	}
	if err := watch.Flush(); err != nil {
		t.Fatal(err)
	}
	forged := fmt.Sprintf(`{"seq":%d,"type":"record.written","project":"hashi","at":"2026-01-01T00:00:00.000000000Z","record_id":%q}`, forgedSeq, first[0])
	for {
		// The peer may hear of the watcher's subscription a moment after
		// the worker's: publish until the watcher has it.
		if err := forger.Publish(client.EventSubject("hashi", client.EventRecordWritten), []byte(forged)); err != nil {
			t.Fatal(err)
		}
		if m, err := seen.NextMsg(200 * time.Millisecond); err == nil && strings.Contains(string(m.Data), fmt.Sprint(forgedSeq)) {
			break
		}
	}

	later := putRecords(t, c, "hashi", 2)
	testwait.For(t, 10*time.Second, "the genuine records after the forged pointer", h.has(later...))
	stop()

	p, err := c.Events(t.Context(), client.EventQuery{Types: []string{client.EventRecordWritten}, Project: "hashi"})
	if err != nil {
		t.Fatal(err)
	}
	want := p.Events[len(p.Events)-1].Seq
	if saved, err := loadSeq(cfg.StateFile); err != nil || saved != want {
		t.Errorf("got saved seq %d (%v), want %d, the feed's last record.written", saved, err, want)
	}
	h.mu.Lock()
	for _, s := range h.seqs {
		if s > p.LastSeq {
			t.Errorf("handled seq %d, past the feed's last %d", s, p.LastSeq)
		}
	}
	h.mu.Unlock()

	stop = startWorker(t, cfg)
	defer stop()
	again := putRecords(t, c, "hashi", 1)
	testwait.For(t, 10*time.Second, "a record after a restart", h.has(again...))
}

// TestWorker_StateAheadOfFeedRefused: a state file holding a seq the feed
// never reached (saved by a worker that trusted a forged pointer) stops the
// worker, saying so, instead of skipping every event up to it.
func TestWorker_StateAheadOfFeedRefused(t *testing.T) {
	t.Parallel()
	url := kuradtest.Start(t)
	putRecords(t, client.New(url), "hashi", 1)
	state := filepath.Join(t.TempDir(), "worker.seq")
	if err := saveSeq(state, forgedSeq); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := run(ctx, config{KuraURL: url, Project: "hashi", Name: "agent:test", StateFile: state, Log: testLogger(t)})
	if !errors.Is(err, errStateAhead) || !strings.Contains(err.Error(), state) {
		t.Fatalf("got %v, want the worker stopped naming its state file as ahead of the feed", err)
	}
}

// TestWorker_SkipsRecordItsTokenCannotRead: with a token limited to its
// project, a record.written event of that project whose record the token
// may not read (another identity wrote it outside any session) is skipped,
// with a warning, and the records after it are handled.
func TestWorker_SkipsRecordItsTokenCannotRead(t *testing.T) {
	t.Parallel()
	tokens := filepath.Join(t.TempDir(), "tokens")
	const adminTok, workerTok = "tok-admin", "tok-reader"
	lines := auth.HashToken(adminTok) + " user:test admin * *\n" +
		auth.HashToken(workerTok) + " agent:example-worker reader hashi hashi\n"
	if err := os.WriteFile(tokens, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	d := kuradtest.StartMain(t, kuradtest.Options{Configure: func(c *daemon.Config) { c.TokensFile = tokens; c.RateLimit = 0 }})
	admin := client.New(d.BaseURL(), client.WithToken(adminTok))
	put := func(author string) string {
		r, err := admin.PutRecord(t.Context(), client.RecordInput{Type: "agent.thought", AuthorID: author,
			Content: json.RawMessage(fmt.Sprintf(`"%d"`, time.Now().UnixNano())), Metadata: map[string]string{"project_id": "hashi"}})
		if err != nil {
			t.Fatal(err)
		}
		return r.ID
	}
	hidden := put("user:test")
	h := &handledLog{}
	cfg := config{KuraURL: d.BaseURL(), Token: workerTok, Project: "hashi", StateFile: filepath.Join(t.TempDir(), "worker.seq"), onRecord: h.onRecord}
	stop := startWorker(t, cfg)
	defer stop()
	visible := put("agent:example-worker")
	testwait.For(t, 10*time.Second, "the record written after an unreadable one", h.has(visible))
	h.mu.Lock()
	defer h.mu.Unlock()
	if slices.Contains(h.ids, hidden) {
		t.Errorf("handled record %s, which the worker's token may not read", hidden)
	}
}
