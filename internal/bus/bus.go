// Package bus runs the NATS server embedded in kurad: the doorbell other
// processes on the host subscribe to. SQLite stays the truth; NATS only
// carries pointers.
package bus

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Config is how the embedded server listens.
type Config struct {
	Addr         string // host:port; port 0 picks a free one
	Logger       *slog.Logger
	ReadyTimeout time.Duration
	// Users, when any, are the only clients (besides kurad's own
	// in-process publisher) that may connect. Required beyond loopback.
	Users []User
	// Tokens, without Users, make NATS require a Kura token of every
	// client (nil: kurad has no tokens, and every local client is the
	// local user). Anonymous turns that off again: local clients connect
	// without one, as without tokens.
	Tokens    Tokens
	Anonymous bool
	// Cluster joins this server to other kurads' (NATS routes); the zero
	// value runs it alone.
	Cluster Cluster
	// ServerName names the server among its peers, which nats-server
	// requires to be unique; "" derives one (see serverName).
	ServerName string
}

// Bus wraps the embedded NATS server.
type Bus struct {
	cfg Config
	log *slog.Logger
	srv *server.Server
	// internalPass is the in-process publisher's password.
	internalPass string
	// auth decides who connects when there is no users file; nil with one.
	auth *clientAuth
	// The token watcher's lifetime (see clientAuth.watch).
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New returns an unstarted bus.
func New(cfg Config) *Bus {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = 10 * time.Second
	}
	return &Bus{cfg: cfg, log: cfg.Logger}
}

// Open starts the server and waits until it accepts connections.
func (b *Bus) Open(ctx context.Context) error {
	host, portStr, err := net.SplitHostPort(b.cfg.Addr)
	if err != nil {
		return fmt.Errorf("nats addr %q: %w", b.cfg.Addr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return fmt.Errorf("nats addr %q: bad port", b.cfg.Addr)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	// Without users every client may subscribe to every project's
	// doorbell, which is only safe while nobody but this host can connect.
	if !loopbackHost(host) && len(b.cfg.Users) == 0 {
		return fmt.Errorf("nats addr %q: %s is not a loopback address and no NATS users are configured; kurad requires NATS authentication beyond loopback (--nats-users-file)", b.cfg.Addr, host)
	}
	name, err := b.serverName()
	if err != nil {
		return err
	}
	opts := &server.Options{
		ServerName: name,
		Host:       host,
		Port:       port,
		NoSigs:     true, // kurad owns signal handling
		NoLog:      false,
		MaxPayload: 1 << 20,
	}
	if err := b.clusterOptions(opts); err != nil {
		return err
	}
	var secret [32]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return fmt.Errorf("nats internal password: %w", err)
	}
	b.internalPass = hex.EncodeToString(secret[:])
	if len(b.cfg.Users) > 0 {
		opts.Users, opts.Nkeys = serverUsers(b.cfg.Users, b.internalPass)
	} else {
		// In every configuration only kurad publishes the doorbell, so
		// clients are always authenticated, if only to be told so.
		b.auth = &clientAuth{internalPass: b.internalPass, log: b.log, conns: map[uint64]tokenConn{}}
		if !b.cfg.Anonymous {
			b.auth.tokens = b.cfg.Tokens
		}
		opts.CustomClientAuthentication = b.auth
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return fmt.Errorf("nats server: %w", err)
	}
	logs := &logAdapter{log: b.log, fatal: make(chan error, 1)}
	srv.SetLoggerV2(logs, false, false, false)
	go srv.Start()
	if err := b.waitReady(ctx, srv, logs.fatal); err != nil {
		srv.Shutdown()
		return err
	}
	b.srv = srv
	if b.auth != nil {
		b.auth.srv = srv
		if b.auth.tokens != nil {
			wctx, cancel := context.WithCancel(context.Background())
			b.cancel = cancel
			b.wg.Go(func() { b.auth.watch(wctx) })
		}
	}
	b.log.Info("nats listening", "addr", b.Addr(), "clients", b.clientRule())
	if b.cfg.Cluster.Enabled() {
		// Routes connect in the background and retry while a peer is
		// down: a kurad starts whether its peers run or not.
		b.log.Info("nats cluster listening", "addr", b.ClusterAddr(), "cluster", srv.ClusterName(),
			"server_name", srv.Name(), "routes", len(b.cfg.Cluster.Routes), "route_auth", b.cfg.Cluster.User != "")
	}
	return nil
}

// waitReady waits until srv accepts connections. nats-server reports a
// listener it cannot open (a port another process holds) only through its
// logger's Fatalf, and ReadyForConnections would go on waiting for the full
// timeout; so the wait is cut into short steps and ends at the first fatal
// line, with the listener's own error (which names the address), the way a
// taken HTTP port fails at once.
func (b *Bus) waitReady(ctx context.Context, srv *server.Server, fatal <-chan error) error {
	deadline := time.Now().Add(b.cfg.ReadyTimeout)
	for {
		// Each call polls every 25ms for up to 50ms.
		if srv.ReadyForConnections(50 * time.Millisecond) {
			return nil
		}
		select {
		case err := <-fatal:
			return fmt.Errorf("listen nats: %w", err)
		case <-ctx.Done():
			return fmt.Errorf("nats server on %s: %w", b.cfg.Addr, ctx.Err())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nats server on %s not ready within %s", b.cfg.Addr, b.cfg.ReadyTimeout)
		}
	}
}

// Addr is the host:port clients connect to.
func (b *Bus) Addr() string {
	if b.srv == nil {
		return ""
	}
	if a, ok := b.srv.Addr().(*net.TCPAddr); ok {
		return net.JoinHostPort(a.IP.String(), strconv.Itoa(a.Port))
	}
	return b.srv.Addr().String()
}

// Running reports whether the server accepts connections.
func (b *Bus) Running() bool { return b.srv != nil && b.srv.Running() }

// Server is the embedded server, for in-process tests that inject faults
// (dropping a client's connection); nil when not running.
func (b *Bus) Server() *server.Server { return b.srv }

// NumClients is the number of connected NATS clients.
func (b *Bus) NumClients() int {
	if b.srv == nil {
		return 0
	}
	return b.srv.NumClients()
}

// Close shuts the server down; safe to call twice.
func (b *Bus) Close(ctx context.Context) error {
	if b.srv == nil {
		return nil
	}
	srv := b.srv
	b.srv = nil
	if b.cancel != nil {
		b.cancel()
		b.wg.Wait()
	}
	srv.Shutdown()
	done := make(chan struct{})
	go func() { srv.WaitForShutdown(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("nats shutdown: %w", ctx.Err())
	}
}

// AuthRequired reports whether clients must present credentials: a NATS
// user's, or a Kura token.
func (b *Bus) AuthRequired() bool {
	return len(b.cfg.Users) > 0 || (b.cfg.Tokens != nil && !b.cfg.Anonymous)
}

// clientRule says in a few words who may connect, for the start-up log.
func (b *Bus) clientRule() string {
	switch {
	case len(b.cfg.Users) > 0:
		return "NATS users file"
	case b.cfg.Tokens != nil && !b.cfg.Anonymous:
		return "Kura tokens"
	case b.cfg.Tokens != nil:
		return "anonymous local clients (nats-anonymous); only kurad publishes on " + SubjectRoot + ".>"
	}
	return "anonymous local clients (no tokens); only kurad publishes on " + SubjectRoot + ".>"
}

// loopbackHost reports whether host names only the local machine; "" and
// 0.0.0.0 listen everywhere and are not.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// logAdapter sends the NATS server's log lines to slog, and its fatal
// errors to fatal as well, for Open to fail on.
type logAdapter struct {
	log   *slog.Logger
	fatal chan error // buffered; the first fatal error is kept
}

func (l *logAdapter) Noticef(format string, v ...any) { l.log.Info(fmt.Sprintf(format, v...)) }
func (l *logAdapter) Warnf(format string, v ...any)   { l.log.Warn(fmt.Sprintf(format, v...)) }

// Fatalf is how nats-server reports that it cannot start (its own logger
// exits the process). The error among the arguments, such as net.Listen's
// "listen tcp 127.0.0.1:4222: bind: address already in use", reads better
// than the whole line; without one the line stands.
func (l *logAdapter) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	l.log.Error(msg)
	err := errors.New(msg)
	for _, a := range v {
		if e, ok := a.(error); ok {
			err = e
		}
	}
	select {
	case l.fatal <- err:
	default:
	}
}

func (l *logAdapter) Errorf(format string, v ...any) { l.log.Error(fmt.Sprintf(format, v...)) }
func (l *logAdapter) Debugf(format string, v ...any) { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l *logAdapter) Tracef(format string, v ...any) { l.log.Debug(fmt.Sprintf(format, v...)) }
