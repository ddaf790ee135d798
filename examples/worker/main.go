// Command worker is an example of a program that runs next to kurad and
// reacts to what Kura records, without missing or repeating anything:
//
//   - a record.written message of its project on NATS (the doorbell) tells
//     it that the event feed moved; it then reads GET /v1/events from the
//     last seq it saved and handles what the feed holds. It does the same
//     after every (re)connect, so events published while it was down or
//     disconnected are handled too. A seq is handled and saved only once
//     the feed has shown it: one read off NATS moves nothing (a forged
//     pointer with a huge seq would otherwise skip every later event);
//   - with -target, it takes dispatched turns from a NATS queue group, so
//     each turn goes to one worker of the group, and works them: claim,
//     read the context, append an agent.thought, close.
//
// See README.md next to this file.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kura-memory/kura/client"
	"github.com/nats-io/nats.go"
)

type config struct {
	KuraURL   string
	Token     string // bearer token for kurad, if it wants one
	NATSURL   string // "" asks kurad's /v1/info for its NATS address
	Project   string
	Target    string // dispatch target; "" takes no turns
	Queue     string
	StateFile string
	Name      string // identity turns are claimed under; "": the caller's
	Log       *slog.Logger

	// Tests watch progress through these; the command leaves them nil.
	onReady  func()                            // after the first catch-up
	onRecord func(seq int64, r *client.Record) // after a record is handled and its seq saved
	onTurn   func(turnID string)               // after a dispatched turn is closed
}

func main() {
	host, _ := os.Hostname()
	cfg := config{Token: os.Getenv("KURA_TOKEN"), Log: slog.New(slog.NewTextHandler(os.Stderr, nil))}
	flag.StringVar(&cfg.KuraURL, "kura", client.DefaultURL, "kurad base URL")
	flag.StringVar(&cfg.NATSURL, "nats", "", "NATS URL (default: the address kurad reports in /v1/info)")
	flag.StringVar(&cfg.Project, "project", "default", "project whose records to follow")
	flag.StringVar(&cfg.Target, "target", "", "dispatch target to take turns for (oclaw.v1.{project}.cmd.{target}.dispatch)")
	flag.StringVar(&cfg.Queue, "queue", "workers", "NATS queue group shared by the workers of a target")
	flag.StringVar(&cfg.StateFile, "state", "worker.seq", "file keeping the last event seq handled")
	name := workerName(host, os.Getpid())
	if cfg.Token != "" {
		// kurad binds a token's claims to the token's identity: claim
		// without a name, which kurad fills in with that identity.
		name = ""
	}
	flag.StringVar(&cfg.Name, "name", name, "worker identity for turn claims (with KURA_TOKEN: the token's identity, which only an admin token may override)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		cfg.Log.Error("worker stopped", "err", err)
		os.Exit(1)
	}
}

// workerName makes an identity kurad accepts (agent:[A-Za-z0-9._-]{1,64})
// out of a host name, which may hold anything.
func workerName(host string, pid int) string {
	host = regexp.MustCompile(`[^A-Za-z0-9._-]+`).ReplaceAllString(host, "-")
	pidS := strconv.Itoa(pid)
	return "agent:" + host[:min(len(host), 63-len(pidS))] + "-" + pidS
}

// retryWait is the pause before catching up again after kurad failed us.
const retryWait = 2 * time.Second

// run follows the project until ctx ends; it returns nil on a clean stop.
func run(ctx context.Context, cfg config) error {
	var opts []client.Option
	if cfg.Token != "" {
		opts = append(opts, client.WithToken(cfg.Token))
	}
	w := &worker{cfg: cfg, c: client.New(cfg.KuraURL, opts...), log: cfg.Log}
	var err error
	if w.last, err = loadSeq(cfg.StateFile); err != nil {
		return err
	}
	natsURL := cfg.NATSURL
	if natsURL == "" {
		info, err := w.c.Info(ctx)
		if err != nil {
			return fmt.Errorf("ask kurad for its NATS address: %w", err)
		}
		natsURL = "nats://" + info.NATS.Addr
	}

	// Every (re)connect may have lost events (core NATS keeps nothing for
	// absent subscribers), so each one asks for a catch-up from the feed;
	// so does every doorbell naming a seq past the last one handled.
	resync := make(chan struct{}, 1)
	kick := func() {
		select {
		case resync <- struct{}{}:
		default:
		}
	}
	var force atomic.Bool // catch up whatever the doorbells named
	var rung atomic.Int64 // the highest seq a doorbell named since the last catch-up
	force.Store(true)
	closed := make(chan struct{})
	nopts := []nats.Option{nats.Name("kura-example-worker " + cfg.Name),
		nats.MaxReconnects(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil { // nil: our own Close or Drain
				w.log.Warn("NATS disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(*nats.Conn) { w.log.Info("NATS reconnected; catching up"); force.Store(true); kick() }),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			w.log.Warn("NATS", "err", err)
			// A doorbell NATS dropped for us (slow consumer) may have
			// been the last for a while: read the feed now.
			force.Store(true)
			kick()
		}),
		nats.ClosedHandler(func(*nats.Conn) { close(closed) }),
	}
	if cfg.Token != "" {
		// kurad with tokens takes NATS clients by the same token
		// (credentials in the URL, a NATS user's, come first).
		nopts = append(nopts, nats.Token(cfg.Token))
	}
	nc, err := nats.Connect(natsURL, nopts...)
	if err != nil {
		return fmt.Errorf("connect to NATS at %s: %w", natsURL, err)
	}
	// Drain rather than Close: a turn in hand is finished before we go.
	defer func() {
		if nc.Drain() != nil {
			nc.Close()
		}
		<-closed
	}()

	if _, err := nc.Subscribe(client.EventSubject(cfg.Project, client.EventRecordWritten), func(m *nats.Msg) {
		var e client.Event
		if err := json.Unmarshal(m.Data, &e); err != nil {
			w.log.Warn("ignoring a malformed doorbell", "err", err)
			return
		}
		for cur := rung.Load(); e.Seq > cur && !rung.CompareAndSwap(cur, e.Seq); cur = rung.Load() {
		}
		kick()
	}); err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	if cfg.Target != "" {
		subject := client.CommandSubject(cfg.Project, cfg.Target, client.EventDispatch)
		if _, err := nc.QueueSubscribe(subject, cfg.Queue, func(m *nats.Msg) { w.dispatch(ctx, m) }); err != nil {
			return fmt.Errorf("subscribe to dispatches: %w", err)
		}
	}
	// Once the server has our subscriptions, any event the first catch-up
	// does not see is published after it, to us: nothing falls in between.
	if err := nc.Flush(); err != nil {
		return fmt.Errorf("NATS flush: %w", err)
	}
	kick()

	ready := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-resync:
			named := rung.Swap(0)
			if !force.Swap(false) && named <= w.last {
				continue // a doorbell for what the feed already gave us
			}
			err := w.catchUp(ctx)
			if errors.Is(err, errStateAhead) {
				return err
			}
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				w.log.Warn("catch-up failed; retrying", "err", err, "in", retryWait)
				force.Store(true)
				time.AfterFunc(retryWait, kick)
				continue
			}
			if named > w.feedLast {
				// kurad publishes an event only after it commits it, so the
				// feed read since holds every seq kurad rang for.
				w.log.Warn("a NATS message named an event the feed does not hold: not kurad's, ignored", "seq", named, "feed_last_seq", w.feedLast)
			}
			if !ready && cfg.onReady != nil {
				cfg.onReady()
			}
			ready = true
		}
	}
}

type worker struct {
	cfg      config
	c        *client.Client
	log      *slog.Logger
	last     int64 // newest seq handled and saved; only run's loop touches it
	feedLast int64 // the feed's newest seq at the last catch-up
}

// errStateAhead stops the worker: its state file holds a seq the feed has
// never reached, so it cannot tell what it handled.
var errStateAhead = errors.New("the state file is ahead of kurad's event feed")

// catchUp handles, in seq order, every record.written event of the project
// after the last one handled.
func (w *worker) catchUp(ctx context.Context) error {
	q := client.EventQuery{After: w.last, Types: []string{client.EventRecordWritten}, Project: w.cfg.Project, Limit: 500}
	for {
		p, err := w.c.Events(ctx, q)
		if err != nil {
			return err
		}
		w.feedLast = p.LastSeq
		if w.last > p.LastSeq {
			// Only a seq never read from this feed gets here: a forged NATS
			// pointer an older worker saved, or the state of another kurad
			// (or of this one before it was restored from a backup).
			return fmt.Errorf("%w: %s holds seq %d, the feed ends at %d; remove the file to start from the beginning, or write the last seq handled into it",
				errStateAhead, w.cfg.StateFile, w.last, p.LastSeq)
		}
		for _, e := range p.Events {
			if err := w.handle(ctx, e); err != nil {
				return err
			}
		}
		if p.NextAfter >= p.LastSeq {
			return nil
		}
		q.After = p.NextAfter
	}
}

// handle does the work for one event of the feed, once.
func (w *worker) handle(ctx context.Context, e client.Event) error {
	if e.Seq <= w.last {
		return nil
	}
	r, err := w.c.GetRecord(ctx, e.Refs["record_id"])
	switch {
	case client.IsCode(err, client.ENotFound), client.IsCode(err, client.EDenied):
		// A token limited to projects reads a record of its project's feed
		// only when it wrote it or a session of its projects holds it; no
		// retry changes that, and retrying would hold up every later event.
		w.log.Warn("skipping a record this worker's token may not read", "seq", e.Seq, "record", e.Refs["record_id"], "err", err)
		if err := saveSeq(w.cfg.StateFile, e.Seq); err != nil {
			return err
		}
		w.last = e.Seq
		return nil
	case err != nil:
		return fmt.Errorf("event %d: %w", e.Seq, err)
	}
	w.log.Info("record", "seq", e.Seq, "id", r.ID, "type", r.Type, "author", r.AuthorID, "content_bytes", len(r.Content))
	// Saved after the work: a crash in between repeats one event rather
	// than losing it.
	if err := saveSeq(w.cfg.StateFile, e.Seq); err != nil {
		return err
	}
	w.last = e.Seq
	if w.cfg.onRecord != nil {
		w.cfg.onRecord(e.Seq, r)
	}
	return nil
}

// dispatch works one dispatched turn. The queue group hands each dispatch to
// one worker; the claim settles it if two ever get the same turn.
func (w *worker) dispatch(ctx context.Context, m *nats.Msg) {
	if ctx.Err() != nil {
		return // shutting down: leave it unclaimed
	}
	var e client.Event
	if err := json.Unmarshal(m.Data, &e); err != nil {
		w.log.Warn("ignoring a malformed dispatch", "err", err)
		return
	}
	turnID := e.Refs["turn_id"]
	// A claimed turn is finished even if we are told to stop meanwhile:
	// abandoned, it would stay claimed until its lease ran out.
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	// The message only names a turn: kurad says whether it is open and
	// dispatched to this target, before we take it.
	turn, err := w.c.GetTurn(tctx, turnID)
	if err != nil {
		w.log.Warn("dispatched turn not readable", "turn", turnID, "err", err)
		return
	}
	if turn.State != client.TurnOpen || turn.Dispatch == nil || *turn.Dispatch != w.cfg.Target {
		w.log.Warn("ignoring a dispatch kurad does not hold for this target", "turn", turnID, "state", turn.State)
		return
	}
	lease, err := w.c.ClaimTurn(tctx, turnID, client.TurnClaim{Worker: w.cfg.Name, LeaseSeconds: 60})
	if client.IsCode(err, client.EConflict) {
		w.log.Info("turn taken by another worker", "turn", turnID)
		return
	}
	if err != nil {
		w.log.Warn("claim failed", "turn", turnID, "err", err)
		return
	}
	status := "complete"
	if err := w.work(tctx, turnID, e.Refs["context_ledger_id"], lease.Epoch); err != nil {
		w.log.Warn("turn failed", "turn", turnID, "err", err)
		status = "failed"
	}
	if _, err := w.c.CloseTurn(tctx, turnID, client.TurnClose{Epoch: &lease.Epoch, Status: status}); err != nil {
		w.log.Warn("close failed", "turn", turnID, "err", err)
		return
	}
	w.log.Info("turn closed", "turn", turnID, "status", status)
	if w.cfg.onTurn != nil {
		w.cfg.onTurn(turnID)
	}
}

// work is the example's "agent": it reads the context and writes one thought.
func (w *worker) work(ctx context.Context, turnID, contextLedger string, epoch int64) error {
	recs, err := w.c.AllLedgerRecords(ctx, contextLedger)
	if err != nil {
		return err
	}
	content, err := json.Marshal(map[string]any{
		"text":            fmt.Sprintf("saw %d context records", len(recs)),
		"context_records": len(recs),
		"turn_id":         turnID, // keeps each thought distinct: identical records are deduplicated
	})
	if err != nil {
		return err
	}
	_, err = w.c.AppendTurn(ctx, turnID, client.TurnAppend{Epoch: &epoch, Records: []client.RecordRef{
		{RecordInput: client.RecordInput{Type: "agent.thought", AuthorID: "agent:example-worker", Content: content}},
	}})
	return err
}

// loadSeq reads the saved seq; no file yet means from the start.
func loadSeq(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read state: %w", err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("state file %s does not hold a seq: %q", path, b)
	}
	return n, nil
}

// saveSeq replaces the state file atomically, so that a crash leaves the
// old seq or the new one, never a torn file.
func saveSeq(path string, seq int64) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	_, err = f.WriteString(strconv.FormatInt(seq, 10) + "\n")
	if err == nil {
		err = f.Sync() // else a power cut after the rename can leave it empty
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("save state: %w", err)
	}
	return nil
}
