// Package pgtest runs a real PostgreSQL server for tests: the Debian
// package's initdb and pg_ctl, a cluster in a temporary directory owned by
// a non-root user (PostgreSQL refuses to run as root), listening on
// 127.0.0.1 and a socket in that directory. One server serves a whole test
// binary; every test gets a database of its own.
//
// A package that uses it stops the server in its TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
// Without PostgreSQL installed the tests that need it skip, unless
// KURA_REQUIRE_POSTGRES=1 (make test sets it) makes that a failure.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/kura-memory/kura/internal/freeport"
)

// server is the one cluster of this test binary.
var server struct {
	once sync.Once
	err  error
	dir  string
	port int
	bin  string
	cred *syscall.Credential
	n    atomic.Int64
}

// Main runs the tests and stops the server if one was started.
func Main(m *testing.M) int {
	code := m.Run()
	Stop()
	return code
}

// Stop stops the server (a no-op when none runs).
func Stop() {
	if server.dir == "" || server.err != nil {
		return
	}
	cmd := exec.Command(filepath.Join(server.bin, "pg_ctl"), "stop", "-D", server.dir, "-m", "immediate", "-w")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: server.cred}
	_ = cmd.Run()
	os.RemoveAll(filepath.Dir(server.dir))
}

// Server is a PostgreSQL server of its own for a program that is not a
// test (the benchmark): Start it, make databases, Stop it.
type Server struct{ started bool }

// Start starts the one server of this process (the tests' too) if it is
// not running. durable keeps PostgreSQL's fsync and synchronous commit on
// (a benchmark beside SQLite with synchronous=FULL); tests run without.
func Start(durable bool) (*Server, error) {
	server.once.Do(func() { server.err = start(durable) })
	if server.err != nil {
		return nil, server.err
	}
	return &Server{started: true}, nil
}

// CreateDB makes an empty database and returns its URL.
func (s *Server) CreateDB(ctx context.Context, name string) (string, error) {
	if err := admin(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", err
	}
	return dbURL(name), nil
}

// Stop stops the server.
func (s *Server) Stop() { Stop() }

// Available reports whether PostgreSQL's server binaries are installed.
func Available() bool { _, err := binDir(); return err == nil }

// URL creates a fresh, empty database for the test and returns its URL.
// The database is dropped when the test ends.
func URL(tb testing.TB) string {
	tb.Helper()
	if _, err := binDir(); err != nil {
		if os.Getenv("KURA_REQUIRE_POSTGRES") == "1" {
			tb.Fatalf("postgres: %v", err)
		}
		tb.Skipf("postgres not installed (%v); KURA_REQUIRE_POSTGRES=1 makes this a failure", err)
	}
	server.once.Do(func() { server.err = start(false) })
	if server.err != nil {
		tb.Fatalf("start postgres: %v", server.err)
	}
	name := fmt.Sprintf("kt_%d_%d", os.Getpid(), server.n.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := admin(ctx, "CREATE DATABASE "+name); err != nil {
		tb.Fatalf("create database: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := admin(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			tb.Errorf("drop database: %v", err)
		}
	})
	return dbURL(name)
}

func dbURL(name string) string {
	return "postgres://kura@127.0.0.1:" + strconv.Itoa(server.port) + "/" + name + "?sslmode=disable"
}

func admin(ctx context.Context, stmt string) error {
	c, err := pgx.Connect(ctx, dbURL("postgres"))
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	_, err = c.Exec(ctx, stmt)
	return err
}

// binDir finds initdb and pg_ctl: on PATH, else the newest
// /usr/lib/postgresql/<version>/bin (Debian keeps them off PATH).
func binDir() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if _, err := exec.LookPath("initdb"); err == nil {
			// A link on PATH (/usr/local/bin/pg_ctl) leads to the
			// directory with the other server programs (pg_basebackup).
			if real, err := filepath.EvalSymlinks(p); err == nil {
				p = real
			}
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("no initdb/pg_ctl on PATH or in /usr/lib/postgresql/*/bin (apt-get install postgresql)")
}

func version(bin string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(bin)))
	return v
}

// start makes and starts the cluster.
func start(durable bool) error {
	bin, err := binDir()
	if err != nil {
		return err
	}
	server.bin = bin
	root, cred, err := newRoot()
	if err != nil {
		return err
	}
	server.cred = cred
	reapOrphans(bin)
	port, err := freePort()
	if err != nil {
		return err
	}
	server.port = port
	dir := filepath.Join(root, "data")
	if err := initdb(cred, bin, dir); err != nil {
		return err
	}
	server.dir = dir
	opts := serverOpts(root, port)
	if durable {
		opts += " -c shared_buffers=256MB"
	} else {
		// A test's database dies with the test: durability is off.
		opts += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c shared_buffers=64MB"
	}
	if err := run(bin, "pg_ctl", "start", "-D", dir, "-w", "-t", "60", "-l", filepath.Join(root, "log"), "-o", opts); err != nil {
		logb, _ := os.ReadFile(filepath.Join(root, "log"))
		return fmt.Errorf("%w\n%s", err, logb)
	}
	return nil
}

// newRoot makes the directory a cluster lives in, with the owner.pid file
// reapOrphans reads: a test binary killed before it stopped its servers
// leaves them running, and the next start reaps them. As root, PostgreSQL
// runs as the postgres user (or nobody), which owns the directory; cred
// says as whom.
func newRoot() (root string, cred *syscall.Credential, err error) {
	root, err = os.MkdirTemp("", "kura-pg-")
	if err != nil {
		return "", nil, err
	}
	if err := os.WriteFile(filepath.Join(root, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return "", nil, err
	}
	if os.Geteuid() != 0 {
		return root, nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		if u, err = user.Lookup("nobody"); err != nil {
			return "", nil, fmt.Errorf("running as root and no postgres or nobody user: %w", err)
		}
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(root, uid, gid); err != nil {
		return "", nil, err
	}
	return root, &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func initdb(cred *syscall.Credential, bin, dir string) error {
	return runAs(cred, bin, "initdb", "-D", dir, "-U", "kura", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync")
}

// serverOpts are the postgres options every server here runs with.
func serverOpts(root string, port int) string {
	return "-c listen_addresses=127.0.0.1 -p " + strconv.Itoa(port) + " -k " + root + " -c max_connections=400"
}

func run(bin, name string, args ...string) error {
	return runAs(server.cred, bin, name, args...)
}

func runAs(cred *syscall.Credential, bin, name string, args ...string) error {
	cmd := exec.Command(filepath.Join(bin, name), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	cmd.Dir = os.TempDir()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w\n%s", name, err, out)
	}
	return nil
}

// freePort is a port for a server that names it in its own config; see
// freeport for why not one the kernel picks.
func freePort() (int, error) { return freeport.Get() }

// reapOrphans stops the servers of test binaries that died without
// stopping them (a timeout, a kill) and removes their directories.
func reapOrphans(bin string) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "kura-pg-*"))
	for _, root := range dirs {
		b, err := os.ReadFile(filepath.Join(root, "owner.pid"))
		if err != nil {
			continue // another layout, or still being made: not ours to judge
		}
		pid, err := strconv.Atoi(string(b))
		if err != nil || pid <= 0 || syscall.Kill(pid, 0) == nil || pid == os.Getpid() {
			continue // its owner lives
		}
		cmd := exec.Command(filepath.Join(bin, "pg_ctl"), "stop", "-D", filepath.Join(root, "data"), "-m", "immediate", "-w")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: server.cred}
		_ = cmd.Run()
		os.RemoveAll(root)
	}
}
