// Package witness is a Kura log witness: a small process, meant for another
// host than kurad's, that follows one or more Kura logs, checks that every
// new checkpoint a log shows is an append-only extension of the last one it
// cosigned (RFC 6962 consistency proof, golang.org/x/mod/sumdb/tlog), cosigns
// it (C2SP tlog-cosignature, cosignature/v1), keeps that durably and serves
// it. It refuses, logs at ERROR and counts in /metrics any checkpoint that is
// smaller, forked, badly signed or unproven, and keeps its old state.
//
// A kurad started with KURA_WITNESSES reads the served checkpoints back: a
// witness holding a larger tree than kurad's own log, or one kurad's log is
// not consistent with, is how a restored old copy of the data directory is
// caught.
package witness

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"

	"github.com/kura-memory/kura/internal/dirlock"
)

// Log names one log to follow.
type Log struct {
	URL string // kurad base URL, e.g. http://10.0.0.2:7700
	// VKey, when set, is the log's note verifier key (/v1/info log_vkey),
	// pinned by the operator; otherwise the key /v1/info names on first
	// contact is pinned (trust on first use).
	VKey string
}

// Config is what a witness runs with.
type Config struct {
	StateDir string
	Listen   string // host:port; port 0 picks a free one (see Addr)
	Logs     []Log
	Token    string        // bearer token sent to the logs (reader role suffices)
	Poll     time.Duration // interval between polls of each log
	Name     string        // key name, used only when the key is created
	NATSURL  string        // optional: wake on oclaw.v1._log.evt.checkpoint
	Logger   *slog.Logger
	// HTTPClient talks to the logs; nil means one with a 10s timeout.
	HTTPClient *http.Client
}

// Defaults.
const (
	DefaultPoll   = time.Second
	DefaultListen = "127.0.0.1:7780"
	// maxBody bounds every answer read from a log: a checkpoint is a few
	// hundred bytes and a consistency proof at most 64 hashes.
	maxBody = 1 << 20
)

// Witness follows logs and serves what it cosigned. New, then Open, then
// Run until its context ends; Close releases what Open took.
type Witness struct {
	cfg     Config
	log     *slog.Logger
	http    *http.Client
	metrics *metrics

	name     string // the witness's key name
	vkey     string // its cosignature/v1 verifier key
	cosigner note.Signer

	ln   net.Listener
	lock *dirlock.Lock

	// mu guards states; each logState is replaced whole, never mutated,
	// so a reader holding one needs no lock.
	mu     sync.RWMutex
	states map[string]*logState

	// originMu serialises the judging of one origin's checkpoints: two
	// URLs of one origin (two kurad instances sharing a database) must not
	// cosign from the same old state at once. Per origin, so that a slow
	// log does not hold up the others.
	originMu  map[string]*sync.Mutex
	failures  map[string]int    // consecutive failed polls per log URL, under mu
	urlOrigin map[string]string // the origin each log URL showed last, under mu

	closeOnce sync.Once
}

// New checks cfg and returns an unopened witness.
func New(cfg Config) (*Witness, error) {
	if cfg.StateDir == "" {
		return nil, errors.New("witness: a state directory is required")
	}
	if len(cfg.Logs) == 0 {
		return nil, errors.New("witness: at least one log is required")
	}
	for _, l := range cfg.Logs {
		if !strings.HasPrefix(l.URL, "http://") && !strings.HasPrefix(l.URL, "https://") {
			return nil, fmt.Errorf("witness: log %q: the URL must start with http:// or https://", l.URL)
		}
		if l.VKey != "" {
			if _, err := note.NewVerifier(l.VKey); err != nil {
				return nil, fmt.Errorf("witness: log %s: verifier key: %w", l.URL, err)
			}
		}
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if cfg.Name == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "localhost"
		}
		cfg.Name = "kura-witness/" + host
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	return &Witness{cfg: cfg, log: cfg.Logger, http: hc, metrics: newMetrics(), originMu: map[string]*sync.Mutex{}, failures: map[string]int{}, urlOrigin: map[string]string{}}, nil
}

// Open creates the state directory and the key on first start, loads the
// kept checkpoints and starts listening.
func (w *Witness) Open(ctx context.Context) error {
	if err := os.MkdirAll(w.cfg.StateDir, 0o700); err != nil {
		return fmt.Errorf("open witness: %w", err)
	}
	// Two witnesses on one state directory would each cosign from what
	// they loaded and overwrite the other's newer state with older.
	lock, err := dirlock.Acquire(w.cfg.StateDir, "kura witness")
	if err != nil {
		return fmt.Errorf("open witness: %w", err)
	}
	opened := false
	defer func() {
		if !opened {
			lock.Release()
		}
	}()
	skey, vkey, err := loadOrCreateKey(w.cfg.StateDir, w.cfg.Name)
	if err != nil {
		return fmt.Errorf("open witness: %w", err)
	}
	cosigner, err := fnote.NewSignerForCosignatureV1(skey)
	if err != nil {
		return fmt.Errorf("open witness: cosigner: %w", err)
	}
	states, err := loadStates(w.cfg.StateDir)
	if err != nil {
		return fmt.Errorf("open witness: %w", err)
	}
	if cosigner.Name() != w.cfg.Name {
		w.log.Info("witness key already exists; its name stays", "name", cosigner.Name(), "asked", w.cfg.Name)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", w.cfg.Listen)
	if err != nil {
		return fmt.Errorf("open witness: listen: %w", err)
	}
	w.cosigner, w.name, w.vkey, w.states, w.ln, w.lock = cosigner, cosigner.Name(), vkey, states, ln, lock
	opened = true
	// Each URL's origin is the one it showed last, so that a move to a new
	// origin is noticed across restarts too.
	latest := map[string]time.Time{}
	for _, st := range states {
		w.metrics.setState(st)
		for _, u := range st.URLs {
			if st.CosignedAt.After(latest[u]) {
				latest[u], w.urlOrigin[u] = st.CosignedAt, st.Origin
			}
		}
	}
	return nil
}

// Addr is the address the witness serves on, once opened.
func (w *Witness) Addr() string { return w.ln.Addr().String() }

// Name and VKey are the witness's key name and cosignature verifier key.
func (w *Witness) Name() string { return w.name }
func (w *Witness) VKey() string { return w.vkey }

// Run serves HTTP and follows every log until ctx ends, then shuts the
// server down gracefully and waits for every follower.
func (w *Witness) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv := &http.Server{Handler: w.handler(), ReadHeaderTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(w.ln) }()

	wakes := make([]chan struct{}, len(w.cfg.Logs))
	for i := range wakes {
		wakes[i] = make(chan struct{}, 1)
	}
	stopNATS, err := w.watchNATS(ctx, wakes)
	if err != nil {
		w.log.Warn("nats unavailable; polling only", "nats", w.cfg.NATSURL, "err", err)
	}
	var wg sync.WaitGroup
	for i, l := range w.cfg.Logs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.follow(ctx, l, wakes[i])
		}()
	}
	w.log.Info("witness started", "addr", w.Addr(), "name", w.name, "vkey", w.vkey, "logs", len(w.cfg.Logs))

	var runErr error
	select {
	case <-ctx.Done():
	case err := <-serveErr:
		runErr = fmt.Errorf("witness: serve: %w", err)
		cancel()
	}
	wg.Wait()
	stopNATS()
	// Every request is a read of memory, so a second is a generous grace.
	// What is left then is a client's idle connection that never sent a
	// request (net/http waits 5s for those): closed, not an error.
	shutCtx, shutCancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer shutCancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		srv.Close()
	}
	w.log.Info("witness stopped")
	return runErr
}

// Close releases the listener when Run never ran; safe to call twice.
func (w *Witness) Close() error {
	w.closeOnce.Do(func() {
		if w.ln != nil {
			w.ln.Close()
		}
		if w.lock != nil {
			w.lock.Release()
		}
	})
	return nil
}

// follow polls one log until ctx ends: at once, then every Poll or when a
// NATS notice wakes it. A failed poll is logged and counted; the next one
// tries again.
func (w *Witness) follow(ctx context.Context, l Log, wake <-chan struct{}) {
	t := time.NewTicker(w.cfg.Poll)
	defer t.Stop()
	for {
		w.pollOnce(ctx, l)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-wake:
		}
	}
}

// lockOrigin takes origin's judging lock and returns its release.
func (w *Witness) lockOrigin(origin string) func() {
	w.mu.Lock()
	m, ok := w.originMu[origin]
	if !ok {
		m = &sync.Mutex{}
		w.originMu[origin] = m
	}
	w.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// checkpoint returns the served checkpoint of origin, if any.
func (w *Witness) checkpoint(origin string) (*logState, bool) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	st, ok := w.states[origin]
	return st, ok
}
