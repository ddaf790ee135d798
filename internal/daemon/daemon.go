// Package daemon wires kurad together: configuration, logging, the signing
// key, the store, the embedded NATS server and the HTTP API, started in that
// order and closed in reverse. cmd/kurad adds signals; tests start the same
// daemon in-process.
package daemon

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/kura-memory/kura/internal/api"
	"github.com/kura-memory/kura/internal/auth"
	"github.com/kura-memory/kura/internal/bus"
	"github.com/kura-memory/kura/internal/checkpoint"
	"github.com/kura-memory/kura/internal/dirlock"
	"github.com/kura-memory/kura/internal/embed"
	"github.com/kura-memory/kura/internal/keys"
	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/mcp"
	"github.com/kura-memory/kura/internal/store"
)

// AddrFile is the file in the data dir naming the bound addresses.
const AddrFile = "kurad.addr"

// DamagedFile is the file in the data dir that says the last full
// integrity check found the database damaged (what, in its text): the next
// start checks in full before it serves, instead of serving reads while the
// check runs in the background, and removes it once a check passes (a
// restored database). A supervisor that restarts kurad therefore does not
// serve a damaged file again and again.
const DamagedFile = "kurad.damaged"

// Main is a running kurad.
type Main struct {
	Config  Config
	Version string
	Logger  *slog.Logger

	store    *store.DB
	embedder *store.EmbedWorker // nil: no embedder configured
	bus      *bus.Bus
	doorbell *bus.Publisher
	http     *http.Server
	listener net.Listener
	serveErr chan error
	debug    *http.Server
	stopDog  context.CancelFunc
	dogDone  chan struct{}
	tokens   *auth.Table              // nil: tokenless mode
	log      *checkpoint.Checkpointer // nil: the log is off
	lock     *dirlock.Lock
	failed   chan error // the reason kurad must stop serving, once
	stopAddr context.CancelFunc
	addrDone chan struct{} // the retry of the address file on a full disk
}

// NewMain returns an unstarted daemon.
func NewMain(cfg Config, version string, logOut io.Writer) *Main {
	if logOut == nil {
		logOut = os.Stderr
	}
	lvl, _ := parseLevel(cfg.LogLevel)
	opts := &slog.HandlerOptions{Level: lvl}
	var h slog.Handler = slog.NewTextHandler(logOut, opts)
	if cfg.LogFormat == "json" {
		h = slog.NewJSONHandler(logOut, opts)
	}
	return &Main{Config: cfg, Version: version, Logger: slog.New(h), failed: make(chan error, 1)}
}

// Failed delivers the reason kurad must stop serving after it started: the
// full integrity check in the background found the database damaged. The
// caller closes kurad and exits non-zero.
func (m *Main) Failed() <-chan error { return m.failed }

// Run opens everything and returns once kurad serves; it does not block.
func (m *Main) Run(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			m.Close(context.Background())
		}
	}()
	cfg := m.Config
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	// One kurad per data directory, decided before anything in it is
	// touched: a second one would run its own writer on the same database,
	// overwrite kurad.addr and, with the key, sign a history of its own.
	if m.lock, err = dirlock.Acquire(cfg.DataDir, "kurad"); err != nil {
		return err
	}
	// The files kurad keeps there are private whatever the directory's
	// mode (the store sees to its own); a directory others may list still
	// shows what is in it, so say so once.
	if st, err := os.Stat(cfg.DataDir); err == nil && st.Mode().Perm()&0o077 != 0 {
		m.Logger.Warn("the data directory is open to other users; kurad keeps its files private (0600), but consider chmod 700",
			"data_dir", cfg.DataDir, "mode", fmt.Sprintf("%04o", st.Mode().Perm()))
	}
	// A stale address file from an earlier run must not mislead anyone
	// waiting for this one.
	os.Remove(filepath.Join(cfg.DataDir, AddrFile))
	key, err := keys.Open(cfg.KeyFile, os.Getenv("CREDENTIALS_DIRECTORY"))
	if err != nil {
		return err
	}
	retired, err := cfg.RetiredPublicKeys()
	if err != nil {
		return err
	}
	var previousKey ed25519.PrivateKey
	if cfg.PreviousKeyFile != "" {
		if previousKey, err = keys.Load(cfg.PreviousKeyFile); err != nil {
			return fmt.Errorf("previous-key-file: %w", err)
		}
	}
	if cfg.TokensFile != "" && keyInside(cfg.KeyFile, cfg.DataDir) {
		// Tokens mean more than one party: whoever gets a copy of the data
		// directory then also holds the key, and can re-sign an older or
		// edited history that every signature check accepts.
		m.Logger.Warn("the signing key lies inside the data directory: anyone with a copy of the directory can re-sign its history; keep it outside (a systemd credential, see docs/log.md)",
			"key_file", cfg.KeyFile, "data_dir", cfg.DataDir)
	}
	vocab := kura.NewVocabulary(cfg.RecordTypes...)
	dbPath := filepath.Join(cfg.DataDir, "kura.db")
	var embedder store.Embedder
	if cfg.EmbedderURL != "" {
		c, err := embed.New(embed.Config{URL: cfg.EmbedderURL, Model: cfg.EmbedderModel, Token: cfg.EmbedderToken, Timeout: cfg.EmbedderTimeout})
		if err != nil {
			return err
		}
		embedder = c
	}
	startupCheck, damaged := cfg.StartupCheck, ""
	if cfg.DatabaseURL == "" {
		if b, err := os.ReadFile(filepath.Join(cfg.DataDir, DamagedFile)); err == nil {
			damaged = strings.TrimSpace(string(b))
			if startupCheck == store.StartupCheckQuick {
				startupCheck = store.StartupCheckFull
			}
			m.Logger.Warn("the last full integrity check found the database damaged; checking it in full before serving",
				"file", filepath.Join(cfg.DataDir, DamagedFile), "found", damaged, "startup_check", startupCheck)
		}
	}
	m.store = store.New(store.Config{
		Path:           dbPath,
		DatabaseURL:    cfg.DatabaseURL,
		PGDump:         cfg.PGDump,
		Synchronous:    cfg.Synchronous,
		MaxBatch:       cfg.WriterMaxBatch,
		Linger:         cfg.WriterLinger,
		ReadPool:       cfg.ReadPool,
		DefaultProject: cfg.DefaultProject,
		Vocabulary:     vocab,
		Signer:         key,
		RetiredKeys:    retired,
		Logger:         m.Logger.With("component", "store"),
		StartupCheck:   startupCheck,
		OnDamaged:      m.damaged,
		Hooks:          cfg.StoreHooks,
		Now:            cfg.Now,

		Embedder:          embedder,
		EmbedQueryTimeout: cfg.EmbedderQueryTimeout,
		LogOff:            cfg.LogOff,
		LogOrigin:         cfg.LogOrigin,
	})
	if err := m.store.Open(ctx); err != nil {
		return err
	}
	if damaged != "" && startupCheck == store.StartupCheckFull {
		// The full check passed: a database put back from a backup.
		if err := os.Remove(filepath.Join(cfg.DataDir, DamagedFile)); err != nil {
			m.Logger.Warn("remove "+DamagedFile, "err", err)
		}
	}
	if embedder != nil {
		// After the store, before the API: vectors follow commits from the
		// first write on. The worker never holds a write up.
		m.embedder = store.NewEmbedWorker(m.store, store.EmbedWorkerConfig{
			Logger: m.Logger.With("component", "embedder"), RetryMin: cfg.EmbedRetry})
		if err := m.embedder.Open(ctx); err != nil {
			return err
		}
		ep, _ := embed.Endpoint(cfg.EmbedderURL)
		m.Logger.Info("semantic search on", "embedder", ep, "model", cfg.EmbedderModel)
	}
	// Before NATS: without a users file, its clients present these tokens.
	if err := m.loadTokens(); err != nil {
		return err
	}
	var natsUsers []bus.User
	if cfg.NATSUsersFile != "" {
		if natsUsers, err = bus.LoadUsers(cfg.NATSUsersFile); err != nil {
			return err
		}
		if len(natsUsers) == 0 {
			return fmt.Errorf("nats users file %s defines no users; with none, no client could connect", cfg.NATSUsersFile)
		}
	}
	cluster, err := cfg.NATSCluster()
	if err != nil {
		return err
	}
	var natsTokens bus.Tokens
	if m.tokens != nil {
		natsTokens = natsTokenTable{m.tokens}
	}
	m.bus = bus.New(bus.Config{Addr: cfg.NATSAddr, Users: natsUsers, Tokens: natsTokens, Anonymous: cfg.NATSAnonymous,
		Cluster: cluster, ServerName: cfg.NATSServerName, Logger: m.Logger.With("component", "nats")})
	if err := m.bus.Open(ctx); err != nil {
		return err
	}
	m.doorbell = m.bus.NewPublisher(m.store, bus.PublisherConfig{Logger: m.Logger.With("component", "doorbell"), LeaseTTL: cfg.OutboxLease})
	// Hook first, then open: the publisher dedupes by seq, so an event seen
	// both ways goes out once, and none falls between the two.
	m.store.OnCommit(m.doorbell.Notify)
	if err := m.doorbell.Open(ctx); err != nil {
		return err
	}
	if !cfg.LogOff {
		// After the doorbell (checkpoints go out on its connection), before
		// the API: a rolled-back log is known, and writes held, before the
		// first request.
		cp := checkpoint.New(checkpoint.Config{Log: m.store, Key: key, PreviousKey: previousKey, RetiredKeys: retired,
			Publish:   func(payload []byte) error { return m.doorbell.PublishRaw(kura.CheckpointSubject, payload) },
			Witnesses: cfg.Witnesses, Poll: cfg.WitnessPoll, Logger: m.Logger.With("component", "log")})
		m.log = cp
		m.store.OnCommit(func([]kura.Event) { cp.Notify() })
		cp.Start(ctx)
		cp.Notify()
	}
	backupDir, err := prepareBackupDir(cfg.BackupPath(), cfg.DataDir, m.Logger)
	if err != nil {
		return err
	}
	reg := newRegistry(m.store, dbPath, m.doorbell, m.bus)
	srv := api.New(api.Config{
		Version:       m.Version,
		SchemaVersion: schemaVersion(cfg),
		MaxBodyBytes:  cfg.MaxBodyBytes,
		RecordTypes:   vocab.Types(),
		Logger:        m.Logger.With("component", "api"),
		Registry:      reg,
		TurnDeadline:  cfg.TurnDeadline,
		Doorbell:      m.doorbell,
		Tokens:        m.tokens,
		RateLimit:     cfg.RateLimit,
		RateBurst:     cfg.RateBurst,
		BackupDir:     backupDir,

		MaxInflightBodyBytes:    cfg.InflightBodyBytes(),
		MaxInflightBodyWait:     cfg.MaxInflightBodyWait,
		MaxInflightContextBytes: cfg.InflightContextBytes(),
		MCP:                     mcpHandler,
		Log:                     logService(m.log),
	}, m.store, m.bus)
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen http: %w", err)
	}
	m.listener = ln
	fresh := &freshConns{}
	m.http = &http.Server{
		Handler:           srv.Handler(),
		ConnState:         fresh.track,
		ReadHeaderTimeout: cfg.HTTPReadHeaderTimeout,
		ReadTimeout:       cfg.HTTPReadTimeout,
		WriteTimeout:      cfg.HTTPWriteTimeout,
		IdleTimeout:       cfg.HTTPIdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(m.Logger.With("component", "http").Handler(), slog.LevelWarn),
	}
	m.http.RegisterOnShutdown(srv.CloseStreams)
	m.http.RegisterOnShutdown(fresh.closeAll)
	m.serveErr = make(chan error, 1)
	go func() { m.serveErr <- m.http.Serve(ln) }()
	if cfg.DebugAddr != "" {
		if err := m.startDebug(cfg.DebugAddr); err != nil {
			return err
		}
	}
	if err := m.writeAddrFile(); err != nil {
		// A full disk keeps kurad serving reads (the store starts
		// read-only); the address file follows once there is room.
		if !errors.Is(err, syscall.ENOSPC) {
			return err
		}
		m.Logger.Warn("the disk is full: "+AddrFile+" is written once there is room", "http", m.HTTPAddr(), "nats", m.NATSAddr(), "err", err)
		m.retryAddrFile()
	}
	if err := sdNotify("READY=1\nSTATUS=serving HTTP on " + m.HTTPAddr() + ", NATS on " + m.NATSAddr()); err != nil {
		m.Logger.Warn("sd_notify READY", "err", err)
	}
	if every := watchdogInterval(); every > 0 {
		dctx, cancel := context.WithCancel(context.Background())
		m.stopDog, m.dogDone = cancel, make(chan struct{})
		go func() {
			defer close(m.dogDone)
			m.watchdog(dctx, every, func(ctx context.Context) bool {
				return m.store.Ping(ctx) == nil && m.bus.Running()
			})
		}()
	}
	m.Logger.Info("kurad ready", "version", m.Version, "http", m.HTTPAddr(), "nats", m.bus.Addr(),
		"data_dir", cfg.DataDir, "synchronous", cfg.Synchronous, "public_key", keys.PublicKeyString(m.store.PublicKey()))
	return nil
}

// damaged is the store's OnDamaged: it leaves DamagedFile for the next
// start (best effort: the disk may be what failed) and tells Failed.
func (m *Main) damaged(err error) {
	path := filepath.Join(m.Config.DataDir, DamagedFile)
	if werr := os.WriteFile(path, []byte(err.Error()+"\n"), 0o600); werr != nil {
		m.Logger.Warn("write "+DamagedFile, "err", werr)
	}
	select {
	case m.failed <- fmt.Errorf("the database failed its full integrity check: %w", err):
	default:
	}
}

// prepareBackupDir creates the backup directory (0700, parents too) and
// returns it absolute with its symlinks resolved, the form the API checks
// a backup's path against. It may not be the data directory or hold it: a
// backup path could then name the data directory's own entries, and a
// restore moves what the data directory holds aside.
func prepareBackupDir(dir, dataDir string, log *slog.Logger) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("backup-dir: %w", err)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err == nil {
		real, err = filepath.Abs(real)
	}
	if err != nil {
		return "", fmt.Errorf("backup-dir: %w", err)
	}
	data, err := filepath.EvalSymlinks(dataDir)
	if err == nil {
		data, err = filepath.Abs(data)
	}
	if err != nil {
		return "", fmt.Errorf("data-dir: %w", err)
	}
	if rel, err := filepath.Rel(real, data); err == nil && (rel == "." || !strings.HasPrefix(rel, "..")) {
		return "", fmt.Errorf("backup-dir: %s is the data directory or holds it; give a directory of its own (the default is <data-dir>/backups)", dir)
	}
	if st, err := os.Stat(real); err == nil && st.Mode().Perm()&0o077 != 0 {
		log.Warn("the backup directory is open to other users; backups are written 0700/0600, but consider chmod 700",
			"backup_dir", real, "mode", fmt.Sprintf("%04o", st.Mode().Perm()))
	}
	return real, nil
}

// HTTPAddr is the bound HTTP address.
func (m *Main) HTTPAddr() string {
	if m.listener == nil {
		return ""
	}
	return m.listener.Addr().String()
}

// NATSAddr is the bound NATS address.
func (m *Main) NATSAddr() string {
	if m.bus == nil {
		return ""
	}
	return m.bus.Addr()
}

// Store exposes the store to in-process tests.
func (m *Main) Store() *store.DB { return m.store }

// Bus exposes the embedded NATS server to in-process tests (fault
// injection: dropping the doorbell's connection).
func (m *Main) Bus() *bus.Bus { return m.bus }

func (m *Main) writeAddrFile() error {
	b, _ := json.Marshal(map[string]string{"http": m.HTTPAddr(), "nats": m.NATSAddr()})
	path := filepath.Join(m.Config.DataDir, AddrFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", AddrFile, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", AddrFile, err)
	}
	return nil
}

// retryAddrFile writes the address file every second until it is written
// or kurad closes.
func (m *Main) retryAddrFile() {
	ctx, cancel := context.WithCancel(context.Background())
	m.stopAddr, m.addrDone = cancel, make(chan struct{})
	go func() {
		defer close(m.addrDone)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if err := m.writeAddrFile(); err == nil {
				m.Logger.Info("wrote "+AddrFile+" once the disk had room", "http", m.HTTPAddr(), "nats", m.NATSAddr())
				return
			}
		}
	}()
}

// Close stops accepting requests, waits for those in flight, drains the
// writer, closes the database and the NATS server. Safe to call twice.
func (m *Main) Close(ctx context.Context) error {
	var errs []error
	if m.listener != nil {
		sdNotify("STOPPING=1")
	}
	if m.stopAddr != nil {
		// Before the address file is removed below.
		m.stopAddr()
		<-m.addrDone
		m.stopAddr = nil
	}
	if m.stopDog != nil {
		m.stopDog()
		select {
		case <-m.dogDone:
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("watchdog did not stop: %w", ctx.Err()))
		}
		m.stopDog = nil
	}
	if m.http != nil {
		if err := m.http.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("http shutdown: %w", err))
		}
		if err := <-m.serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
		m.http = nil
	}
	if m.debug != nil {
		m.debug.Close()
		m.debug = nil
	}
	// The embedding worker and the publisher go before the store: both
	// write through the writer.
	if m.embedder != nil {
		if err := m.embedder.Close(ctx); err != nil {
			errs = append(errs, err)
		}
		m.embedder = nil
	}
	if m.log != nil {
		m.log.Close()
		m.log = nil
	}
	if m.doorbell != nil {
		if err := m.doorbell.Close(ctx); err != nil {
			errs = append(errs, err)
		}
		m.doorbell = nil
	}
	if m.store != nil {
		if err := m.store.Close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if m.bus != nil {
		if err := m.bus.Close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if m.listener != nil {
		os.Remove(filepath.Join(m.Config.DataDir, AddrFile))
	}
	// Last: the directory is free only once the database is closed.
	if err := m.lock.Release(); err != nil {
		errs = append(errs, err)
	}
	m.lock = nil
	return errors.Join(errs...)
}

// logService is the API's view of the checkpointer; a nil one is no
// service at all (not a nil pointer in an interface).
func logService(c *checkpoint.Checkpointer) api.LogService {
	if c == nil {
		return nil
	}
	return c
}

// keyInside reports whether the key file lies inside the data directory.
func keyInside(keyFile, dataDir string) bool {
	k, err1 := filepath.Abs(keyFile)
	d, err2 := filepath.Abs(dataDir)
	if err1 != nil || err2 != nil {
		return false
	}
	rel, err := filepath.Rel(d, k)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// startDebug serves Go's pprof handlers on their own loopback listener, so
// profiles are never reachable through the API port.
func (m *Main) startDebug(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen debug: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	m.debug = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go m.debug.Serve(ln)
	m.Logger.Info("pprof listening", "addr", ln.Addr().String())
	return nil
}

// mcpHandler builds the MCP server over the API's own handler: every tool
// call is a request to the API, with the caller's token.
func mcpHandler(o api.MCPOptions) http.Handler {
	return mcp.NewHTTPHandler(mcp.Local(func() http.Handler { return o.API }), mcp.HTTPOptions{
		Options:      mcp.Options{Version: o.Version, RecordTypes: o.RecordTypes, NodeKinds: o.NodeKinds},
		MaxBodyBytes: o.MaxBodyBytes,
	})
}

// schemaVersion is the schema /v1/info reports: the engine's own numbering
// (SQLite's user_version, or PostgreSQL's meta pg_schema_version).
func schemaVersion(cfg Config) int {
	if cfg.DatabaseURL != "" {
		return store.PGSchemaVersion
	}
	return store.SchemaVersion
}
