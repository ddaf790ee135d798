package bus

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/nats-io/nats.go"
)

// Outbox is what the publisher needs from the store: the committed event
// log and a place to keep its cursor.
type Outbox interface {
	ListEvents(ctx context.Context, f kura.EventFilter) (*kura.EventPage, error)
	LastEventSeq() int64
	PublishedSeq(ctx context.Context) (int64, error)
	SavePublishedSeq(ctx context.Context, seq int64) error
}

// Leaser is an outbox several kurads share (one PostgreSQL database): only
// the instance holding the lease publishes, so every event goes out once.
// HoldLease takes or renews the named lease for holder, true while held;
// ReleaseLease gives it up.
type Leaser interface {
	HoldLease(ctx context.Context, name, holder string, ttl time.Duration) (bool, error)
	ReleaseLease(ctx context.Context, name, holder string) error
}

// outboxLease names the publisher's lease.
const outboxLease = "outbox"

// PublisherConfig tunes the publisher; zero values take the defaults.
type PublisherConfig struct {
	// SaveEvery is how often the cursor is written to SQLite. After a crash
	// at most this much is published a second time.
	SaveEvery time.Duration
	// MaxPending bounds the events held in memory between the writer and
	// the publisher; past it they are read back from SQLite instead.
	MaxPending int
	// PageSize is how many events one catch-up read fetches.
	PageSize int
	// LeaseTTL is how long the outbox lease lasts unrenewed when several
	// kurads share a database (Leaser): a leader that dies is replaced
	// after at most this long.
	LeaseTTL time.Duration
	Logger   *slog.Logger
}

// PublisherStats are the counters the metrics layer reads.
type PublisherStats struct {
	Published atomic.Int64
	Errors    atomic.Int64
}

// Publisher rings the doorbell: it publishes every committed event row, in
// seq order, as a pointer payload on the event's subject. Events reach it
// from the writer's commit hook (the fast path) and from SQLite (start-up,
// gaps, overflow and recovery after a failed publish), so nothing committed
// is skipped and nothing uncommitted is ever seen. Its cursor lives in
// SQLite: delivery is at least once across crashes.
type Publisher struct {
	bus *Bus
	out Outbox
	nc  *nats.Conn
	cfg PublisherConfig
	log *slog.Logger

	mu       sync.Mutex
	pending  []kura.Event
	spare    []kura.Event
	overflow bool
	wake     chan struct{}

	published atomic.Int64 // every event up to this seq was handed to NATS
	failing   atomic.Value // string: why the last publish failed, "" when fine
	stats     PublisherStats

	saveReq chan int64
	stop    chan struct{}
	done    chan struct{}
	saved   chan struct{}
	once    sync.Once
	started atomic.Bool

	// The outbox lease, when the store is shared (Leaser): lead reports
	// whether this instance publishes; renewAt is when to renew (loop
	// goroutine only).
	holder  string
	leading atomic.Bool
	renewAt time.Time

	// beforePublish lets tests stop the publisher at a chosen event.
	beforePublish func(e *kura.Event) error
}

// PublishRaw publishes data on subject over the doorbell's connection,
// outside the outbox: for what is derived from committed state and
// republished anyway (the log's checkpoints), not for events.
func (p *Publisher) PublishRaw(subject string, data []byte) error {
	if p.nc == nil {
		return errors.New("the doorbell is not connected")
	}
	return p.nc.Publish(subject, data)
}

// NewPublisher returns a doorbell for the embedded server, configured and
// not yet connected: register its Notify as the store's commit hook, then
// Open it.
func (b *Bus) NewPublisher(out Outbox, cfg PublisherConfig) *Publisher {
	if cfg.SaveEvery <= 0 {
		cfg.SaveEvery = 250 * time.Millisecond
	}
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = 1 << 16
	}
	if cfg.PageSize <= 0 {
		cfg.PageSize = 1000
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = b.log
	}
	p := &Publisher{bus: b, out: out, cfg: cfg, log: cfg.Logger,
		wake: make(chan struct{}, 1), saveReq: make(chan int64, 1),
		stop: make(chan struct{}), done: make(chan struct{}), saved: make(chan struct{})}
	p.failing.Store("")
	var id [8]byte
	rand.Read(id[:])
	p.holder = hex.EncodeToString(id[:])
	if _, ok := out.(Leaser); !ok {
		p.leading.Store(true) // the only instance on its store
	}
	return p
}

// lead reports whether this instance publishes, taking or renewing the
// outbox lease when it is due. An instance that takes the lease starts
// from the cursor the last leader saved (at least once: what it published
// after its last save goes out again).
func (p *Publisher) lead() bool {
	l, ok := p.out.(Leaser)
	if !ok {
		return true
	}
	now := time.Now()
	if now.Before(p.renewAt) {
		return p.leading.Load()
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.LeaseTTL/2)
	defer cancel()
	held, err := l.HoldLease(ctx, outboxLease, p.holder, p.cfg.LeaseTTL)
	if err != nil {
		p.setFailing(fmt.Sprintf("outbox lease: %v", err))
		held = false
	}
	p.renewAt = now.Add(p.cfg.LeaseTTL / 3)
	was := p.leading.Load()
	if held && !was {
		cursor, err := p.out.PublishedSeq(ctx)
		if err != nil {
			p.setFailing(fmt.Sprintf("doorbell cursor: %v", err))
			p.renewAt = time.Time{}
			return false
		}
		p.published.Store(cursor)
		p.log.Info("doorbell leads the outbox", "published_seq", cursor)
	} else if !held && was {
		p.log.Info("doorbell no longer leads the outbox")
	}
	p.leading.Store(held)
	if !held {
		p.mu.Lock()
		p.pending, p.overflow = p.pending[:0], false
		p.mu.Unlock()
	}
	return held
}

// Notify is the store's commit hook: it queues the committed events and
// wakes the publisher without blocking the writer.
func (p *Publisher) Notify(events []kura.Event) {
	p.mu.Lock()
	if !p.overflow {
		if len(p.pending)+len(events) > p.cfg.MaxPending {
			// SQLite has them all; drop the copies and read back instead.
			p.pending = p.pending[:0]
			p.overflow = true
		} else {
			p.pending = append(p.pending, events...)
		}
	}
	p.mu.Unlock()
	p.kick()
}

func (p *Publisher) kick() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Open connects to the embedded server in-process (no TCP port; with
// authentication on, as kurad's internal user), loads the saved cursor and
// starts publishing from it: events committed while kurad was down (or
// never published before a crash) go out first, in order.
func (p *Publisher) Open(ctx context.Context) error {
	if p.bus.srv == nil {
		return errors.New("nats server is not running")
	}
	var auth []nats.Option
	if p.bus.internalPass != "" {
		auth = append(auth, nats.UserInfo(internalUser, p.bus.internalPass))
	}
	nc, err := nats.Connect("", append(auth, nats.InProcessServer(p.bus.srv), nats.Name("kurad-doorbell"),
		// While disconnected, a publish must fail rather than sit in a
		// client-side buffer that dies with the process: the cursor then
		// stays put and SQLite replays the events once NATS is back.
		nats.ReconnectBufSize(-1),
		nats.MaxReconnects(-1),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			if !nc.IsClosed() {
				p.setFailing(fmt.Sprintf("disconnected from NATS: %v", err))
			}
		}),
		nats.ReconnectHandler(func(*nats.Conn) { p.log.Info("doorbell reconnected to NATS"); p.kick() }),
	)...)
	if err != nil {
		return fmt.Errorf("doorbell connect: %w", err)
	}
	p.nc = nc
	cursor, err := p.out.PublishedSeq(ctx)
	if err != nil {
		return fmt.Errorf("doorbell cursor: %w", err)
	}
	p.published.Store(cursor)
	p.started.Store(true)
	if lag := p.out.LastEventSeq() - cursor; lag > 0 {
		p.log.Info("doorbell resuming", "published_seq", cursor, "to_publish", lag)
	}
	go p.saver(cursor)
	go p.loop()
	return nil
}

// PublishedSeq is the seq of the newest event handed to NATS.
func (p *Publisher) PublishedSeq() int64 { return p.published.Load() }

// Lag is how many committed events are not yet published (0 on an
// instance that does not lead the outbox: the leader reports it).
func (p *Publisher) Lag() int64 {
	if !p.leading.Load() {
		return 0
	}
	return max(0, p.out.LastEventSeq()-p.published.Load())
}

// Leading reports whether this instance publishes the outbox.
func (p *Publisher) Leading() bool { return p.leading.Load() }

// Stats exposes the counters.
func (p *Publisher) Stats() *PublisherStats { return &p.stats }

// Health is "" while the doorbell works, else what is wrong.
func (p *Publisher) Health() string {
	if p.nc == nil || !p.nc.IsConnected() {
		return "doorbell not connected to NATS"
	}
	return p.failing.Load().(string)
}

func (p *Publisher) setFailing(why string) {
	if p.failing.Swap(why) != why && why != "" {
		p.log.Warn("doorbell degraded: events stay in the outbox until NATS takes them", "reason", why)
	}
}

func (p *Publisher) loop() {
	defer close(p.done)
	tick := time.NewTicker(p.cfg.SaveEvery)
	defer tick.Stop()
	if p.lead() {
		p.catchUp()
	}
	for {
		select {
		case <-p.stop:
			if p.leading.Load() {
				p.publishPending()
				p.catchUp()
			}
			return
		case <-p.wake:
			if p.lead() {
				p.publishPending()
			}
		case <-tick.C:
			if !p.lead() {
				continue
			}
			// Anything a failed publish or an overflow left behind is read
			// back from SQLite; the tick doubles as the retry backoff.
			if p.published.Load() < p.out.LastEventSeq() {
				p.catchUp()
			}
			p.requestSave()
		}
	}
}

// publishPending publishes what the commit hook queued, filling any gap
// from SQLite first so the order is always seq order.
func (p *Publisher) publishPending() {
	p.mu.Lock()
	batch, overflow := p.pending, p.overflow
	p.pending, p.spare, p.overflow = p.spare[:0], batch, false
	p.mu.Unlock()
	if overflow {
		p.catchUp()
	}
	for i := range batch {
		e := &batch[i]
		pub := p.published.Load()
		if e.Seq <= pub {
			continue
		}
		if e.Seq > pub+1 {
			// The gap is other instances' commits (one PostgreSQL
			// database), or what an overflow dropped: committed, since e
			// is. Read it alone; e and the rest are in hand.
			if !p.catchUpTo(e.Seq-1, true) {
				return
			}
			if e.Seq <= p.published.Load() {
				continue
			}
		}
		if p.publish(e) != nil {
			return
		}
	}
}

// catchUp publishes everything committed and not yet published.
func (p *Publisher) catchUp() { p.catchUpTo(p.out.LastEventSeq(), false) }

// catchUpTo publishes events from the outbox until the cursor reaches
// upto. committed says every event up to upto is known to be committed:
// the pages then stop there (EventFilter.Through) instead of asking for
// the newest commit and running on to it. It reports false if a read or a
// publish failed.
func (p *Publisher) catchUpTo(upto int64, committed bool) bool {
	var through int64
	if committed {
		through = upto
	}
	for p.published.Load() < upto {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		page, err := p.out.ListEvents(ctx, kura.EventFilter{After: p.published.Load(), Through: through, Limit: p.cfg.PageSize})
		cancel()
		if err != nil {
			p.stats.Errors.Add(1)
			p.setFailing("reading the outbox: " + kura.ErrorMessage(err))
			return false
		}
		for i := range page.Events {
			if p.publish(&page.Events[i]) != nil {
				return false
			}
		}
		// Seqs the page skipped over (none exist today) count as done.
		if page.NextAfter > p.published.Load() {
			p.published.Store(page.NextAfter)
		}
		if len(page.Events) == 0 {
			return true
		}
	}
	return true
}

func (p *Publisher) publish(e *kura.Event) error {
	var err error
	if p.beforePublish != nil {
		err = p.beforePublish(e)
	}
	if err == nil {
		err = p.nc.Publish(e.Subject, e.Pointer())
	}
	if err != nil {
		p.stats.Errors.Add(1)
		p.setFailing(fmt.Sprintf("publishing event %d: %v", e.Seq, err))
		return err
	}
	p.published.Store(e.Seq)
	p.stats.Published.Add(1)
	if p.failing.Load().(string) != "" {
		p.failing.Store("")
		p.log.Info("doorbell publishing again", "seq", e.Seq)
	}
	return nil
}

func (p *Publisher) requestSave() {
	select {
	case p.saveReq <- p.published.Load():
	default:
	}
}

// saver writes the cursor in its own goroutine so the fsync never delays a
// publish. It saves a seq only after a flush round trip proved the server
// holds every event up to it.
func (p *Publisher) saver(saved int64) {
	defer close(p.saved)
	var failing string // the last save's error, while saves fail
	save := func(seq int64) {
		if seq <= saved {
			return
		}
		// Disconnected (the server went away; the client reconnects),
		// no flush can prove anything: keep the old cursor at once rather
		// than wait out the flush's timeout (a shutdown would).
		if !p.nc.IsConnected() {
			return
		}
		if err := p.nc.FlushTimeout(5 * time.Second); err != nil {
			return // not proven delivered: keep the old cursor
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := p.out.SavePublishedSeq(ctx, seq); err != nil {
			// Said once for each cause: a store that refuses writes for a
			// while (a database that lost commits) is tried every publish.
			if msg := err.Error(); msg != failing {
				p.log.Warn("doorbell cursor not saved", "seq", seq, "err", err)
				failing = msg
			}
			return
		}
		if failing != "" {
			p.log.Info("doorbell cursor saved again", "seq", seq)
			failing = ""
		}
		saved = seq
	}
	for {
		select {
		case seq := <-p.saveReq:
			save(seq)
		case <-p.done:
			if p.leading.Load() {
				save(p.published.Load())
				if l, ok := p.out.(Leaser); ok {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					l.ReleaseLease(ctx, outboxLease, p.holder) // a follower takes over without waiting out the lease
					cancel()
				}
			}
			return
		}
	}
}

// Close publishes what is committed, saves the cursor and disconnects. The
// store must still accept writes (the cursor goes through its writer).
func (p *Publisher) Close(ctx context.Context) error {
	var err error
	p.once.Do(func() {
		close(p.stop)
		if p.started.Load() {
			select {
			case <-p.saved:
			case <-ctx.Done():
				err = fmt.Errorf("doorbell close: %w", ctx.Err())
			}
		}
		if p.nc != nil {
			p.nc.Close()
		}
	})
	return err
}
