// Command kurad is Kura's daemon: agent memory you can verify, served over
// HTTP/JSON with an embedded NATS doorbell and one SQLite file.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/kura-memory/kura/internal/daemon"
)

// version is stamped at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	os.Exit(run())
}

func run() int {
	cfg, showVersion, err := daemon.LoadConfig(os.Args[1:], os.Getenv, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "kurad: config: %v\n", err)
		return 2
	}
	if showVersion {
		fmt.Println("kurad", version)
		return 0
	}
	tuneGC()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	m := daemon.NewMain(cfg, version, os.Stderr)
	if err := m.Run(ctx); err != nil {
		m.Logger.Error("kurad failed to start", "err", err)
		return 1
	}
	// SIGHUP reloads the tokens file; a bad file keeps the tokens in force.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		for range hup {
			m.ReloadTokens()
		}
	}()
	<-ctx.Done()
	stop()
	signal.Stop(hup)

	// A second signal means "now": skip the graceful path.
	again := make(chan os.Signal, 1)
	signal.Notify(again, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-again
		m.Logger.Warn("second signal: exiting at once")
		os.Exit(1)
	}()

	m.Logger.Info("shutting down", "timeout", cfg.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := m.Close(sctx); err != nil {
		m.Logger.Error("shutdown", "err", err)
		return 1
	}
	m.Logger.Info("stopped")
	return 0
}

// tuneGC sets kurad's garbage collector policy unless the operator chose
// one with GOGC or GOMEMLIMIT. kurad's live heap is small while it streams
// large answers (a 1,000-record hydrate page is ~0.5 MB), so the default
// GOGC=100 collects every few requests; 300 cuts that by about a third of
// hydrate's time, and the 256 MiB soft limit makes the collector work
// harder, not the heap grow, should memory ever get that far on a Pi.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(300)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(256 << 20)
	}
}
