// Command kurad is Kura's daemon: agent memory you can verify, served over
// HTTP/JSON with an embedded NATS doorbell and one SQLite file.
package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/kura-memory/kura/internal/daemon"
	"github.com/kura-memory/kura/internal/keys"
)

// version is stamped at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	os.Exit(run())
}

func run() int {
	if len(os.Args) > 1 && os.Args[1] == "keygen" {
		return keygen(os.Args[2:])
	}
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
	exit := 0
	select {
	case <-ctx.Done():
	case err := <-m.Failed():
		// Serving stops, reads too: what they would read is damaged.
		m.Logger.Error("kurad stops serving", "err", err)
		exit = 1
	}
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
	return exit
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

// keygen creates the signing key at a path outside the data directory (the
// systemd credential /etc/kura/kurad.key, say) and prints its public key;
// an existing key is kept, never replaced, and its public key printed.
func keygen(args []string) int {
	if len(args) != 1 || strings.HasPrefix(args[0], "-") {
		fmt.Fprintln(os.Stderr, "usage: kurad keygen <key file>   (creates it 0600 unless it exists; prints the public key)")
		return 2
	}
	_, statErr := os.Stat(args[0])
	key, err := keys.LoadOrCreate(args[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "kurad keygen: %v\n", err)
		return 1
	}
	what := "created"
	if statErr == nil {
		what = "kept the existing key"
	}
	fmt.Printf("%s  (%s %s)\n", keys.PublicKeyString(key.Public().(ed25519.PublicKey)), what, args[0])
	return 0
}
