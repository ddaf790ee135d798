// Package kuradtest starts a real kurad in-process for tests: real SQLite
// file in a temp dir, real embedded NATS and a real HTTP listener, all on
// 127.0.0.1 with ports picked by the OS.
package kuradtest

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/daemon"
	"github.com/kura-memory/kura/internal/pgtest"
	"github.com/kura-memory/kura/internal/sqlitetest"
	"github.com/kura-memory/kura/internal/store"
)

// The stores a test daemon may run on: the whole API suite runs against
// each (KURA_TEST_STORE picks one; make test runs both).
const (
	StoreSQLite   = "sqlite"
	StorePostgres = "postgres"
)

// Stores is the table of store constructors: how a test daemon's
// configuration points it at each store, after the test's own Configure
// (which may have pointed it at a data directory a daemon used before: a
// restart).
var Stores = map[string]func(tb testing.TB, c *daemon.Config){
	// kura.db in the daemon's data directory.
	StoreSQLite: func(testing.TB, *daemon.Config) {},
	// A database of its own on the test binary's PostgreSQL server, one
	// per data directory, so a daemon restarted on a directory finds its
	// data again. A test that sets DatabaseURL itself keeps it.
	StorePostgres: func(tb testing.TB, c *daemon.Config) {
		if c.DatabaseURL != "" {
			return
		}
		pgDirs.Lock()
		defer pgDirs.Unlock()
		url, ok := pgDirs.url[c.DataDir]
		if !ok {
			url = pgtest.URL(tb)
			pgDirs.url[c.DataDir] = url
		}
		c.DatabaseURL = url
	},
}

// pgDirs maps data directories to the PostgreSQL databases their daemons
// used (the directories are the tests' own, never reused across tests).
var pgDirs = struct {
	sync.Mutex
	url map[string]string
}{url: map[string]string{}}

// Store is the store this test binary's daemons use: KURA_TEST_STORE, by
// default SQLite. An unknown name is a mistake, not a silent default.
func Store() string {
	s := os.Getenv("KURA_TEST_STORE")
	if s == "" {
		return StoreSQLite
	}
	if _, ok := Stores[s]; !ok {
		panic("KURA_TEST_STORE=" + s + ": want " + StoreSQLite + " or " + StorePostgres)
	}
	return s
}

// Options adjust the test daemon's configuration.
type Options struct {
	Configure func(*daemon.Config)
	LogOutput io.Writer // nil: discarded
	Clock     *Clock    // nil: the wall clock
	// Store pins the daemon to one store (a test of SQLite's files or of
	// a SQLite backup); "" is the binary's store (KURA_TEST_STORE).
	Store string
	// NewDatabase starts a SQLite kurad on a data directory without
	// kura.db, so that it creates and migrates one itself. By default it
	// finds a copy of a database the migrations made once per test binary
	// (seedSQLite).
	NewDatabase bool
}

func seedSQLite(tb testing.TB, dataDir string) {
	tb.Helper()
	path := filepath.Join(dataDir, "kura.db")
	if _, err := os.Stat(dataDir); err != nil {
		return
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		return
	}
	sqlitetest.CopyMigrated(tb, path)
}

// Clock is a store clock a test moves instead of sleeping: it runs with
// the wall clock plus an offset that Advance adds to, so a turn's deadline
// or lease passes at once and everything else behaves as in production.
type Clock struct {
	mu  sync.Mutex
	off time.Duration
}

// Now is the clock's time, for daemon.Config.Now.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.off += d
	c.mu.Unlock()
}

// Start runs a kurad for the test and returns its base URL. It is stopped
// when the test ends.
func Start(tb testing.TB) string {
	tb.Helper()
	return StartMain(tb, Options{}).BaseURL()
}

// Daemon is a running test kurad.
type Daemon struct {
	*daemon.Main
}

// BaseURL is http://host:port of the daemon.
func (d *Daemon) BaseURL() string { return "http://" + d.HTTPAddr() }

// StartMain runs a kurad with options and returns it.
func StartMain(tb testing.TB, o Options) *Daemon {
	tb.Helper()
	cfg := daemon.DefaultConfig()
	cfg.DataDir = tb.TempDir()
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.NATSAddr = "127.0.0.1:0"
	cfg.LogLevel = "warn"
	cfg.KeyFile = cfg.DataDir + "/kurad.key"
	if o.Clock != nil {
		cfg.Now = o.Clock.Now
	}
	if o.Configure != nil {
		o.Configure(&cfg)
	}
	store := o.Store
	if store == "" {
		store = Store()
	}
	Stores[store](tb, &cfg)
	if cfg.DatabaseURL == "" && !o.NewDatabase {
		seedSQLite(tb, cfg.DataDir)
	}
	if err := cfg.Validate(); err != nil {
		tb.Fatalf("kuradtest config: %v", err)
	}
	out := o.LogOutput
	if out == nil {
		out = io.Discard
		if os.Getenv("KURA_TEST_LOG") != "" { // a failing test's daemon log, on demand
			out = os.Stderr
		}
	}
	m := daemon.NewMain(cfg, "test", out)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Run(ctx); err != nil {
		tb.Fatalf("start kurad: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			tb.Errorf("stop kurad: %v", err)
		}
	})
	return &Daemon{Main: m}
}

// RawDB opens the daemon's database beside it, as a test that tampers with
// storage does: kura.db on SQLite, the database on PostgreSQL (with the
// store's driver, so statements use SQLite's ? placeholders on both).
func (d *Daemon) RawDB(tb testing.TB) *sql.DB {
	tb.Helper()
	var db *sql.DB
	var err error
	if d.Config.DatabaseURL != "" {
		db, err = sql.Open(store.PGDriverName, d.Config.DatabaseURL)
	} else {
		db, err = sql.Open("sqlite", "file:"+filepath.Join(d.Config.DataDir, "kura.db")+"?_pragma=busy_timeout(10000)")
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// Tables names the daemon's tables (search's own internal tables aside).
func (d *Daemon) Tables(tb testing.TB, db *sql.DB) []string {
	tb.Helper()
	q := "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
	if d.Config.DatabaseURL != "" {
		q = "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename"
	}
	rows, err := db.Query(q)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			tb.Fatal(err)
		}
		names = append(names, n)
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	return names
}
