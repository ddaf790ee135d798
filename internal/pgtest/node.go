package pgtest

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/kura-memory/kura/internal/testwait"
)

// Node is a PostgreSQL server of one test's own, for tests that stop,
// restart and promote servers: a primary, or a streaming-replication
// standby of one. The shared server (URL) is never stopped under a test.
type Node struct {
	Port int
	bin  string
	root string // the node's directory: data/, log, the socket
	cred *syscall.Credential
	opts string // postgres options beyond serverOpts
}

// NewPrimary initialises and starts a server with a database named db.
// synchronous makes every commit wait until a standby has flushed it
// (synchronous_standby_names '*'): a commit acknowledged is then on a
// standby too. Durability against a host crash is off (fsync), as for the
// shared server: what these tests stop is the PostgreSQL process, and a
// commit is in the WAL (the kernel's page cache) before it is answered.
func NewPrimary(tb testing.TB, db string, synchronous bool) *Node {
	tb.Helper()
	bin := requireBin(tb)
	n := newNode(tb, bin)
	if err := initdb(n.cred, bin, n.dir()); err != nil {
		tb.Fatal(err)
	}
	n.Start(tb)
	n.Exec(tb, "postgres", "CREATE DATABASE "+pgx.Identifier{db}.Sanitize())
	if synchronous {
		// From now on a commit waits for a standby (NewStandby).
		n.Exec(tb, "postgres", "ALTER SYSTEM SET synchronous_standby_names = '*'")
		n.Exec(tb, "postgres", "SELECT pg_reload_conf()")
	}
	return n
}

// NewStandby copies p with pg_basebackup and starts it as a hot standby
// streaming from p.
func (p *Node) NewStandby(tb testing.TB) *Node {
	tb.Helper()
	n := newNode(tb, p.bin)
	if err := runAs(n.cred, p.bin, "pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(p.Port), "-U", "kura",
		"-D", n.dir(), "-R", "-X", "stream", "--checkpoint=fast", "--no-sync"); err != nil {
		tb.Fatal(err)
	}
	n.Start(tb)
	return n
}

func requireBin(tb testing.TB) string {
	tb.Helper()
	bin, err := binDir()
	if err != nil {
		if os.Getenv("KURA_REQUIRE_POSTGRES") == "1" {
			tb.Fatalf("postgres: %v", err)
		}
		tb.Skipf("postgres not installed (%v); KURA_REQUIRE_POSTGRES=1 makes this a failure", err)
	}
	return bin
}

func newNode(tb testing.TB, bin string) *Node {
	tb.Helper()
	root, cred, err := newRoot()
	if err != nil {
		tb.Fatal(err)
	}
	port, err := freePort()
	if err != nil {
		tb.Fatal(err)
	}
	n := &Node{Port: port, bin: bin, root: root, cred: cred, opts: " -c fsync=off -c full_page_writes=off -c shared_buffers=32MB"}
	tb.Cleanup(func() {
		_ = runAs(n.cred, n.bin, "pg_ctl", "stop", "-D", n.dir(), "-m", "immediate", "-w")
		os.RemoveAll(n.root)
	})
	return n
}

func (n *Node) dir() string { return filepath.Join(n.root, "data") }

// URL is the URL of database db on this node.
func (n *Node) URL(db string) string {
	return "postgres://kura@127.0.0.1:" + strconv.Itoa(n.Port) + "/" + db + "?sslmode=disable"
}

// Start starts the node (again) and waits until it accepts connections.
func (n *Node) Start(tb testing.TB) {
	tb.Helper()
	if err := runAs(n.cred, n.bin, "pg_ctl", "start", "-D", n.dir(), "-w", "-t", "60", "-l", filepath.Join(n.root, "log"),
		"-o", serverOpts(n.root, n.Port)+n.opts); err != nil {
		logb, _ := os.ReadFile(filepath.Join(n.root, "log"))
		tb.Fatalf("%v\n%s", err, logb)
	}
}

// Kill stops the node at once, as a crash would (pg_ctl stop -m immediate).
func (n *Node) Kill(tb testing.TB) {
	tb.Helper()
	if err := runAs(n.cred, n.bin, "pg_ctl", "stop", "-D", n.dir(), "-m", "immediate", "-w"); err != nil {
		tb.Fatal(err)
	}
}

// Promote ends a standby's recovery: it becomes a primary.
func (n *Node) Promote(tb testing.TB) {
	tb.Helper()
	if err := runAs(n.cred, n.bin, "pg_ctl", "promote", "-D", n.dir(), "-w", "-t", "60"); err != nil {
		tb.Fatal(err)
	}
}

// Exec runs stmt in database db.
func (n *Node) Exec(tb testing.TB, db, stmt string, args ...any) {
	tb.Helper()
	n.with(tb, db, stmt, func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, stmt, args...)
		return err
	})
}

// QueryInt runs a query of one integer in database db.
func (n *Node) QueryInt(tb testing.TB, db, q string, args ...any) int64 {
	tb.Helper()
	var v int64
	n.queryRow(tb, db, &v, q, args...)
	return v
}

// queryRow scans the one value q answers in database db into dst.
func (n *Node) queryRow(tb testing.TB, db string, dst any, q string, args ...any) {
	tb.Helper()
	n.with(tb, db, q, func(ctx context.Context, c *pgx.Conn) error {
		return c.QueryRow(ctx, q, args...).Scan(dst)
	})
}

// with runs fn on a connection of its own to database db, failing the
// test with what (the statement) when fn fails.
func (n *Node) with(tb testing.TB, db, what string, fn func(context.Context, *pgx.Conn) error) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, n.URL(db))
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close(context.Background())
	if err := fn(ctx, c); err != nil {
		tb.Fatalf("%s: %v", what, err)
	}
}

// WaitReplayed waits until standby s has replayed everything p has
// written so far.
func (p *Node) WaitReplayed(tb testing.TB, s *Node) {
	tb.Helper()
	var target string
	p.queryRow(tb, "postgres", &target, "SELECT pg_current_wal_lsn()::text")
	testwait.For(tb, 30*time.Second, "the standby replaying up to "+target, func() bool {
		var done bool
		s.queryRow(tb, "postgres", &done, "SELECT coalesce(pg_last_wal_replay_lsn() >= $1::pg_lsn, false)", target)
		return done
	})
}
