package store

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/kura-memory/kura/internal/kura"
)

// EmbedWorkerConfig tunes the embedding worker; zero values take the
// defaults.
type EmbedWorkerConfig struct {
	Logger *slog.Logger
	// Batch is how many texts go to the embedder in one request (32).
	Batch int
	// Sweep is how often the worker looks over every node for one
	// without a current vector (10m): the backstop behind the commit
	// signal, which catches everything in normal operation.
	Sweep time.Duration
	// RetryMin and RetryMax bound the wait before asking a failing
	// embedder again (1s, doubling to 1m).
	RetryMin, RetryMax time.Duration
}

// EmbedWorker gives every memory node a vector of the configured model
// for its current text, after commit: writes never wait for it, and an
// embedder that is down only delays vectors. It follows the event log
// from the commit signal, re-embeds only nodes whose text changed (a new
// version with the same text keeps its vector), and after a model change
// re-embeds every node in the background.
type EmbedWorker struct {
	db   *DB
	emb  Embedder
	cfg  EmbedWorkerConfig
	log  *slog.Logger
	kick chan struct{}

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once

	cursor int64 // last event seq looked at (worker goroutine only)
	// skip holds the nodes whose text the embedder refused, by the
	// version refused: they wait for a new text (worker goroutine only).
	skip map[int64]int64
}

// NewEmbedWorker returns an unstarted worker for db's embedder.
func NewEmbedWorker(db *DB, cfg EmbedWorkerConfig) *EmbedWorker {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 32
	}
	if cfg.Sweep <= 0 {
		cfg.Sweep = 10 * time.Minute
	}
	if cfg.RetryMin <= 0 {
		cfg.RetryMin = time.Second
	}
	if cfg.RetryMax < cfg.RetryMin {
		cfg.RetryMax = max(time.Minute, cfg.RetryMin)
	}
	return &EmbedWorker{db: db, emb: db.cfg.Embedder, cfg: cfg, log: cfg.Logger, kick: make(chan struct{}, 1), skip: map[int64]int64{}}
}

// Open starts the worker on an open store. It returns at once: the first
// look over the nodes runs in the background.
func (w *EmbedWorker) Open(ctx context.Context) error {
	if w.emb == nil {
		return errors.New("embed worker: the store has no embedder")
	}
	if dims, err := w.db.modelDims(ctx, w.emb.Model()); err != nil {
		return mapErr(err)
	} else if dims > 0 {
		w.db.embed.dims.Store(int64(dims))
	}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	w.db.OnCommit(w.notify)
	w.wg.Add(1)
	go w.run()
	return nil
}

// Close stops the worker, abandoning a request in flight (its nodes are
// embedded after the next start). Safe to call twice.
func (w *EmbedWorker) Close(ctx context.Context) error {
	w.once.Do(func() {
		if w.cancel != nil {
			w.cancel()
		}
	})
	done := make(chan struct{})
	go func() { w.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return errors.New("close embed worker: it did not stop in time")
	}
}

// notify is the commit hook: a committed node write rings the worker. It
// runs on the writer's goroutine, so it only signals.
func (w *EmbedWorker) notify(events []kura.Event) {
	for _, e := range events {
		if e.Type == kura.EventMemoryNode || e.Type == kura.EventMemoryLifecycle {
			select {
			case w.kick <- struct{}{}:
			default:
			}
			return
		}
	}
}

func (w *EmbedWorker) run() {
	defer w.wg.Done()
	sweep := time.NewTicker(w.cfg.Sweep)
	defer sweep.Stop()
	sweepDue := true
	var backoff time.Duration
	for {
		var err error
		if sweepDue {
			err = w.sweepAll(w.ctx)
		} else {
			err = w.follow(w.ctx)
		}
		if w.ctx.Err() != nil {
			return
		}
		if err != nil {
			// Whatever was not embedded is found by the next sweep, which
			// runs once the embedder answers again.
			sweepDue = true
			backoff = min(max(2*backoff, w.cfg.RetryMin), w.cfg.RetryMax)
			w.log.Warn("embedding nodes failed; writes go on, their vectors wait", "err", err, "retry_in", backoff.String(),
				"pending", w.db.embed.pending.Load())
			t := time.NewTimer(backoff)
			select {
			case <-w.ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		if backoff > 0 {
			w.log.Info("embedder answers again; vectors are up to date")
			backoff = 0
		}
		sweepDue = false
		select {
		case <-w.ctx.Done():
			return
		case <-w.kick:
		case <-sweep.C:
			sweepDue = true
		}
	}
}

// sweepAll gives every node lacking a current vector one, in nid order.
// The event cursor moves to where the sweep started: later writes are
// followed from there.
func (w *EmbedWorker) sweepAll(ctx context.Context) error {
	model := w.emb.Model()
	start := w.db.LastEventSeq()
	var n int64
	err := w.db.withReadConn(ctx, func(c *sql.Conn) (err error) {
		n, err = countStale(ctx, c, w.db.pg != nil, model)
		return err
	})
	if err != nil {
		return mapErr(err)
	}
	w.db.embed.pending.Store(n)
	if !w.db.embed.started.Load() || w.db.embed.failing.Load() {
		// Ask at start even with nothing to embed, so a wrong URL, model
		// or token shows in the log and /v1/info right away; and after a
		// failure, so "failing" ends only when the embedder answers.
		vs, err := w.emb.Embed(ctx, []string{"kura"})
		if err != nil {
			if ctx.Err() == nil {
				w.db.embed.fail(err, w.db.now())
			}
			return err
		}
		if len(vs) == 1 {
			w.db.embed.ok(len(vs[0]))
		}
	}
	if n == 0 {
		w.cursor = start
		return nil
	}
	w.log.Info("embedding nodes without a vector of the current model", "model", model, "nodes", n)
	after := int64(0)
	for {
		var cs []embedCandidate
		err := w.db.withReadConn(ctx, func(c *sql.Conn) (err error) {
			cs, err = staleNodes(ctx, c, w.db.pg != nil, model, after, 256)
			return err
		})
		if err != nil {
			return mapErr(err)
		}
		if len(cs) == 0 {
			break
		}
		after = cs[len(cs)-1].nid
		if err := w.process(ctx, model, cs); err != nil {
			return err
		}
	}
	w.cursor = start
	w.db.embed.pending.Store(int64(len(w.skip))) // refused texts wait for a change
	return nil
}

// follow embeds the nodes written since the cursor, reading the event log
// in windows.
func (w *EmbedWorker) follow(ctx context.Context) error {
	model := w.emb.Model()
	last := w.db.LastEventSeq()
	for w.cursor < last {
		upto := min(w.cursor+4096, last)
		cs, err := changedNodes(ctx, w.db.rdb, w.db.pg != nil, w.cursor, upto)
		if err != nil {
			return mapErr(err)
		}
		if err := w.process(ctx, model, cs); err != nil {
			return err
		}
		w.cursor = upto
	}
	w.db.embed.pending.Store(int64(len(w.skip))) // refused texts wait for a change
	return nil
}

// process gives candidates that need one a vector: a node whose text is
// the one its stored vector was made from keeps it (moved to the new
// version), the others are embedded a batch at a time, each batch stored
// as soon as it is back.
func (w *EmbedWorker) process(ctx context.Context, model string, cs []embedCandidate) error {
	var touch, todo []embedCandidate
	for _, c := range cs {
		switch v, skipped := w.skip[c.nid]; {
		case c.current(model):
		case skipped && v == c.version:
		case c.vModel.String == model && sameHash(c.vHash, embedText(&c)):
			touch = append(touch, c)
		default:
			todo = append(todo, c)
		}
	}
	if len(touch) > 0 {
		if err := w.db.touchVectors(ctx, model, touch); err != nil {
			return err
		}
	}
	if len(todo) == 0 {
		return nil
	}
	if w.db.embed.pending.Load() < int64(len(todo)) {
		w.db.embed.pending.Store(int64(len(todo)))
	}
	texts := make([]string, 0, w.cfg.Batch)
	for start := 0; start < len(todo); start += w.cfg.Batch {
		batch := todo[start:min(start+w.cfg.Batch, len(todo))]
		texts = texts[:0]
		for _, c := range batch {
			texts = append(texts, embedText(&c))
		}
		out, err := w.embedBatch(ctx, batch, texts)
		if len(out) > 0 {
			if err := w.db.putVectors(ctx, model, out); err != nil {
				return err
			}
			w.db.embed.ok(len(out[0].vec))
			w.db.embed.embedded.Add(int64(len(out)))
			if p := w.db.embed.pending.Add(-int64(len(out))); p < 0 {
				w.db.embed.pending.Store(0)
			}
		}
		if err != nil {
			if ctx.Err() == nil {
				w.db.embed.fail(err, w.db.now())
			}
			return err
		}
	}
	return nil
}

// embedBatch embeds the texts of a batch of nodes. When the embedder
// refuses the batch (it answered, with an error), each text is tried
// alone: a text it cannot take (too long for the model, say) must not
// hold the others back for ever. A text refused alone, by an embedder
// that still embeds others, leaves its node without a vector until the
// node's text changes. What was embedded is returned with any error.
func (w *EmbedWorker) embedBatch(ctx context.Context, batch []embedCandidate, texts []string) ([]nodeVector, error) {
	vec := func(c *embedCandidate, text string, v []float32) nodeVector {
		delete(w.skip, c.nid)
		return nodeVector{nid: c.nid, sid: c.sid, version: c.version, hash: textHash(text), vec: v}
	}
	vs, err := w.embed(ctx, texts)
	if err == nil {
		out := make([]nodeVector, len(batch))
		for i := range batch {
			out[i] = vec(&batch[i], texts[i], vs[i])
		}
		return out, nil
	}
	if !refused(err) {
		return nil, err
	}
	var out []nodeVector
	for i := range batch {
		c := &batch[i]
		vs, err := w.embed(ctx, texts[i:i+1])
		if err == nil {
			out = append(out, vec(c, texts[i], vs[0]))
			continue
		}
		if !refused(err) {
			return out, err
		}
		// This text, or the embedder? Ask it for a word.
		if _, perr := w.embed(ctx, []string{"kura"}); perr != nil {
			return out, perr
		}
		w.skip[c.nid] = c.version
		w.db.embed.note(err, w.db.now())
		w.db.embed.skipped.Add(1)
		w.log.Warn("the embedder refuses a node's text; the node stays without a vector until its text changes",
			"node", c.kind+":"+c.id, "version", c.version, "bytes", len(texts[i]), "err", err)
	}
	return out, nil
}

// embed asks the embedder and checks it answered a vector a text.
func (w *EmbedWorker) embed(ctx context.Context, texts []string) ([][]float32, error) {
	vs, err := w.emb.Embed(ctx, texts)
	if err == nil && len(vs) != len(texts) {
		err = errors.New("embedder answered another number of vectors than texts asked")
	}
	return vs, err
}

// refused reports whether an embedder error is a refusal of what it was
// sent (embed.Error.Refused) rather than an outage.
func refused(err error) bool {
	var r interface{ Refused() bool }
	return errors.As(err, &r) && r.Refused()
}
