package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
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
)

// These tests run the worker in-process against a real kurad (HTTP, SQLite
// and the embedded NATS server on 127.0.0.1, ports picked by the OS).

// startWorker runs the worker until the returned stop is called, after its
// first catch-up.
func startWorker(t *testing.T, cfg config) (stop func()) {
	t.Helper()
	cfg.Log = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	ready := make(chan struct{})
	cfg.onReady = func() { close(ready) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg) }()
	select {
	case <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("worker ended before it was ready: %v", err)
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatal("worker not ready")
	}
	return func() {
		t.Helper()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("worker stopped with %v, want a clean stop", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("worker did not stop")
		}
	}
}

func putRecords(t *testing.T, c *client.Client, project string, n int) []string {
	t.Helper()
	var ids []string
	for range n {
		r, err := c.PutRecord(t.Context(), client.RecordInput{Type: "agent.thought", AuthorID: "agent:test",
			Content:  json.RawMessage(fmt.Sprintf(`"%d"`, time.Now().UnixNano())),
			Metadata: map[string]string{"project_id": project}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	return ids
}

// TestWorker_Resume stops the worker, writes while it is down and starts it
// again: every record of its project is handled exactly once, in seq order,
// whether it came live or through the catch-up.
func TestWorker_Resume(t *testing.T) {
	t.Parallel()
	url := kuradtest.Start(t)
	c := client.New(url)
	var mu sync.Mutex
	var got []string
	var seqs []int64
	handled := func(n int) func() bool {
		return func() bool { mu.Lock(); defer mu.Unlock(); return len(got) >= n }
	}
	cfg := config{KuraURL: url, Project: "hashi", StateFile: filepath.Join(t.TempDir(), "worker.seq"), Queue: "workers", Name: "agent:test",
		onRecord: func(seq int64, r *client.Record) {
			mu.Lock()
			defer mu.Unlock()
			got, seqs = append(got, r.ID), append(seqs, seq)
		}}

	want := putRecords(t, c, "hashi", 3) // before the first start: catch-up
	putRecords(t, c, "other", 2)         // another project: never handled
	stop := startWorker(t, cfg)
	want = append(want, putRecords(t, c, "hashi", 3)...) // live
	testwait.For(t, 10*time.Second, "6 records", handled(6))
	stop()

	want = append(want, putRecords(t, c, "hashi", 3)...) // while it is down
	putRecords(t, c, "other", 1)
	stop = startWorker(t, cfg)
	want = append(want, putRecords(t, c, "hashi", 3)...)
	testwait.For(t, 10*time.Second, "12 records", handled(12))
	stop()

	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, want) {
		t.Errorf("got records %v, want %v, each once and in order", got, want)
	}
	for i := 1; i < len(seqs); i++ {
		if seqs[i] <= seqs[i-1] {
			t.Fatalf("got seqs %v, want them strictly increasing", seqs)
		}
	}
	if last, err := loadSeq(cfg.StateFile); err != nil || last != seqs[len(seqs)-1] {
		t.Errorf("got saved seq %d (%v), want %d", last, err, seqs[len(seqs)-1])
	}
}

// TestWorker_KuradRestart restarts kurad, NATS included, on the same
// addresses and data under a running worker: what is written before its
// NATS connection comes back reaches it through the catch-up that follows
// the reconnect, and nothing is handled twice.
func TestWorker_KuradRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sameData := func(cfg *daemon.Config) { cfg.DataDir, cfg.KeyFile = dir, dir+"/kurad.key" }
	d := kuradtest.StartMain(t, kuradtest.Options{Configure: sameData})
	httpAddr, natsAddr := d.HTTPAddr(), d.NATSAddr()
	c := client.New(d.BaseURL())
	var mu sync.Mutex
	var got []string
	stop := startWorker(t, config{KuraURL: d.BaseURL(), Project: "hashi", Name: "agent:test",
		StateFile: filepath.Join(t.TempDir(), "worker.seq"),
		onRecord:  func(_ int64, r *client.Record) { mu.Lock(); defer mu.Unlock(); got = append(got, r.ID) }})
	defer stop()
	handled := func(n int) func() bool {
		return func() bool { mu.Lock(); defer mu.Unlock(); return len(got) >= n }
	}

	want := putRecords(t, c, "hashi", 2)
	testwait.For(t, 10*time.Second, "2 records", handled(2))
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	kuradtest.StartMain(t, kuradtest.Options{Configure: func(cfg *daemon.Config) {
		sameData(cfg)
		cfg.HTTPAddr, cfg.NATSAddr = httpAddr, natsAddr
	}})
	want = append(want, putRecords(t, c, "hashi", 3)...) // most likely before the worker is back
	testwait.For(t, 10*time.Second, "5 records", handled(5))
	want = append(want, putRecords(t, c, "hashi", 2)...)
	testwait.For(t, 10*time.Second, "7 records", handled(7))

	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, want) {
		t.Errorf("got records %v, want %v, each once and in order", got, want)
	}
}

// TestWorker_Dispatch runs two workers for one target and opens turns with
// dispatch: each turn is claimed, worked and closed exactly once. In one
// queue group NATS hands each dispatch to one of them; in two groups both
// hear every dispatch and the claim decides.
func TestWorker_Dispatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		queues [2]string
	}{
		{"SameQueue", [2]string{"workers", "workers"}},
		{"OwnQueues", [2]string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := kuradtest.Start(t)
			c, ctx := client.New(url), t.Context()
			sess, err := c.CreateSession(ctx, client.SessionInput{Project: "hashi", Name: "dispatch"})
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			closedBy := map[string][]string{} // turn -> workers that closed it
			for i, q := range tt.queues {
				name := fmt.Sprintf("agent:w%d", i)
				stop := startWorker(t, config{KuraURL: url, Project: "hashi", Target: "builder", Queue: q, Name: name,
					StateFile: filepath.Join(t.TempDir(), "worker.seq"),
					onTurn: func(id string) {
						mu.Lock()
						defer mu.Unlock()
						closedBy[id] = append(closedBy[id], name)
					}})
				defer stop()
			}

			var turns []string
			for i := range 10 {
				turn, err := c.OpenTurn(ctx, sess.ID, client.TurnOpenInput{Dispatch: "builder",
					Instruction: &client.RecordInput{Type: "task.instruction", AuthorID: "user:test", Content: json.RawMessage(fmt.Sprintf(`"step %d"`, i))}})
				if err != nil {
					t.Fatal(err)
				}
				turns = append(turns, turn.ID)
				// One open turn per session: the next waits for a worker.
				testwait.For(t, 10*time.Second, "turn "+turn.ID+" closed", func() bool {
					got, err := c.GetTurn(ctx, turn.ID)
					return err == nil && got.State != client.TurnOpen
				})
			}

			for _, id := range turns {
				checkTurn(t, c, id)
			}
			// A claim is an event; a refused one (409) writes none.
			p, err := c.Events(ctx, client.EventQuery{Types: []string{"turn.claimed"}, Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			claims := map[string]int{}
			for _, e := range p.Events {
				claims[e.Refs["turn_id"]]++
			}
			mu.Lock()
			defer mu.Unlock()
			for _, id := range turns {
				if len(closedBy[id]) != 1 || claims[id] != 1 {
					t.Errorf("turn %s: closed by %v, claimed %d times, want one worker once", id, closedBy[id], claims[id])
				}
			}
			if len(closedBy) != len(turns) {
				t.Errorf("got %d turns closed, want %d", len(closedBy), len(turns))
			}
		})
	}
}

// TestWorker_DispatchWithToken: with a token the worker claims turns as the
// token's identity (kurad refuses a writer claiming as anyone else), and
// writes and closes them under it.
func TestWorker_DispatchWithToken(t *testing.T) {
	t.Parallel()
	tokens := filepath.Join(t.TempDir(), "tokens")
	const adminTok, workerTok = "tok-admin", "tok-worker"
	lines := auth.HashToken(adminTok) + " user:test admin * *\n" +
		auth.HashToken(workerTok) + " agent:example-worker writer hashi hashi\n"
	if err := os.WriteFile(tokens, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	d := kuradtest.StartMain(t, kuradtest.Options{Configure: func(c *daemon.Config) { c.TokensFile = tokens; c.RateLimit = 0 }})
	c, ctx := client.New(d.BaseURL(), client.WithToken(adminTok)), t.Context()
	sess, err := c.CreateSession(ctx, client.SessionInput{Project: "hashi", Name: "dispatch"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 1)
	stop := startWorker(t, config{KuraURL: d.BaseURL(), Token: workerTok, Project: "hashi", Target: "builder", Queue: "workers",
		StateFile: filepath.Join(t.TempDir(), "worker.seq"), onTurn: func(id string) { done <- id }})
	defer stop()
	turn, err := c.OpenTurn(ctx, sess.ID, client.TurnOpenInput{Dispatch: "builder",
		Instruction: &client.RecordInput{Type: "task.instruction", AuthorID: "user:test", Content: json.RawMessage(`"step"`)}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case id := <-done:
		if id != turn.ID {
			t.Fatalf("worker closed turn %s, want %s", id, turn.ID)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the worker did not close the dispatched turn")
	}
	got, err := c.GetTurn(ctx, turn.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != client.TurnComplete || got.Worker == nil || *got.Worker != "agent:example-worker" {
		t.Errorf("got turn state %s worker %v, want complete, claimed by agent:example-worker", got.State, got.Worker)
	}
}

// checkTurn checks a turn the worker closed: complete, with one thought
// that counted the context right.
func checkTurn(t *testing.T, c *client.Client, id string) {
	t.Helper()
	ctx := t.Context()
	turn, err := c.GetTurn(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if turn.State != client.TurnComplete || turn.OutputLedgerID == nil || turn.Worker == nil || !strings.HasPrefix(*turn.Worker, "agent:w") {
		t.Fatalf("got turn %+v, want it complete and closed by a worker", turn)
	}
	in, err := c.AllLedgerRecords(ctx, turn.ContextLedgerID)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.AllLedgerRecords(ctx, *turn.OutputLedgerID)
	if err != nil {
		t.Fatal(err)
	}
	var thoughts []int
	for _, r := range out {
		if r.Type == "agent.thought" && r.AuthorID == "agent:example-worker" {
			var v struct {
				N int `json:"context_records"`
			}
			if err := json.Unmarshal(r.Content, &v); err != nil {
				t.Fatal(err)
			}
			thoughts = append(thoughts, v.N)
		}
	}
	if len(thoughts) != 1 || thoughts[0] != len(in) {
		t.Errorf("turn %s: got thoughts counting %v, want one counting %d context records", id, thoughts, len(in))
	}
}

func TestWorkerName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		host string
		pid  int
		want string
	}{
		{"box", 42, "agent:box-42"},
		{"my box.local", 7, "agent:my-box.local-7"},
		{"", 1, "agent:-1"},
		{strings.Repeat("h", 100), 12345, "agent:" + strings.Repeat("h", 58) + "-12345"},
	}
	for _, tt := range tests {
		if got := workerName(tt.host, tt.pid); got != tt.want {
			t.Errorf("workerName(%q, %d): got %q, want %q", tt.host, tt.pid, got, tt.want)
		}
	}
}

func TestStateFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "w.seq")
	if n, err := loadSeq(path); n != 0 || err != nil {
		t.Errorf("missing file: got %d, %v, want 0 and no error", n, err)
	}
	for _, seq := range []int64{1, 99, 7} {
		if err := saveSeq(path, seq); err != nil {
			t.Fatal(err)
		}
		if n, err := loadSeq(path); n != seq || err != nil {
			t.Errorf("got %d, %v, want %d", n, err, seq)
		}
	}
	if err := os.WriteFile(path, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadSeq(path); err == nil {
		t.Error("got no error for a state file without a seq")
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("got %d files, want the state file alone (no temp files left)", len(entries))
	}
}
