package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kura-memory/kura/internal/kura"
)

// Backup and restore of a PostgreSQL store. The snapshot is PostgreSQL's
// own: pg_dump's custom format, read from a snapshot kurad exports and
// reads the manifest's facts in, so the archive and the manifest describe
// the same instant. The archive is an ordinary one: pg_restore (and
// nothing of Kura's) reads it, and kura restore is pg_restore plus the
// checks a SQLite restore makes.

// BackupPGDump is the snapshot file of a PostgreSQL backup.
const BackupPGDump = "kura.pgdump"

// PGSchemaVersion is the newest PostgreSQL schema this build knows (the
// meta row pg_schema_version of a database it migrated).
var PGSchemaVersion = func() int {
	names, _ := fs.Glob(pgMigrationFS, "migrations_pg/*.sql")
	return len(names)
}()

// pgToolDirs is where PostgreSQL's client programs are looked for when
// they are not on PATH: Debian and Ubuntu keep them in a directory per
// major version.
var pgToolDirs = "/usr/lib/postgresql/*/bin"

// findPGTool finds a PostgreSQL client program: the configured path, else
// name on PATH, else the newest version's in pgToolDirs. Not finding it
// is EUnavailable: kurad works, the host lacks a program.
func findPGTool(name, configured string) (string, error) {
	if configured != "" {
		if st, err := os.Stat(configured); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return "", kura.Errorf(kura.EUnavailable, "the configured %s cannot be run: install PostgreSQL's client programs (Debian: postgresql-client) and name their %s, or leave it unset to use the one on PATH", name, name)
		}
		return configured, nil
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	dirs, _ := filepath.Glob(pgToolDirs)
	sort.Slice(dirs, func(i, j int) bool { return pgDirVersion(dirs[i]) > pgDirVersion(dirs[j]) })
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", kura.Errorf(kura.EUnavailable, "%s is not installed: a store on PostgreSQL is backed up and restored with PostgreSQL's own %s; install PostgreSQL's client programs of the server's version or newer (Debian: apt-get install postgresql-client) on kurad's host", name, name)
}

func pgDirVersion(bin string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(bin)))
	return v
}

// pgxOnlyParams are connection URL parameters pgx understands and libpq
// (pg_dump, pg_restore) refuses.
var pgxOnlyParams = []string{"statement_cache_capacity", "description_cache_capacity", "default_query_exec_mode", "min_read_buffer_size"}

// pgToolTarget splits a database URL into what a client program may show
// in its argv (the URL without its password) and the environment that
// carries the password (PGPASSWORD): argv is readable by every user of the
// host, a process's environment only by its own user.
func pgToolTarget(dbURL string) (target string, env []string, err error) {
	u, err := url.Parse(dbURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", nil, errors.New("the database URL is not a postgres:// URL")
	}
	q := u.Query()
	password, has := "", false
	if u.User != nil {
		password, has = u.User.Password()
		u.User = url.User(u.User.Username())
	}
	if p := q.Get("password"); q.Has("password") {
		password, has = p, true
		q.Del("password")
	}
	for _, k := range pgxOnlyParams {
		q.Del(k)
	}
	for k := range q {
		if strings.HasPrefix(k, "pool_") {
			q.Del(k)
		}
	}
	u.RawQuery = q.Encode()
	if has {
		env = append(env, "PGPASSWORD="+password)
	}
	return u.String(), env, nil
}

// RedactDatabaseURL is a database URL fit to print: without its password.
func RedactDatabaseURL(dbURL string) string {
	target, _, err := pgToolTarget(dbURL)
	if err != nil {
		return "(a database URL that does not parse)"
	}
	return target
}

// runPGTool runs a PostgreSQL client program on the database at dbURL
// (as --dbname, without its password), with stdin as its input. Its
// error names the program and ends with what it said last.
func runPGTool(ctx context.Context, path, dbURL string, stdin io.Reader, args ...string) error {
	target, env, err := pgToolTarget(dbURL)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, path, append(args, "--dbname="+target)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = stdin
	var out tailBuffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	// A program killed on cancel may leave children holding its output
	// open: Run does not wait for them long.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		said := strings.TrimSpace(out.String())
		name := filepath.Base(path)
		if strings.Contains(said, "server version mismatch") {
			return kura.Errorf(kura.EUnavailable, "%s is older than the PostgreSQL server: install PostgreSQL's client programs of the server's version or newer on kurad's host (%s)", name, said)
		}
		return fmt.Errorf("%s: %w: %s", name, err, said)
	}
	return nil
}

// tailBuffer keeps the last 4 KiB written to it: what a failing program
// said last is the reason.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.b) }

// dumpPG writes the database into dst with pg_dump from a snapshot
// exported by a read transaction of this store, and reads the manifest's
// facts in that same transaction. The transaction stays open until
// pg_dump is done, so the snapshot it imported stays valid. A context
// cancelled (a redaction, a shutdown) kills pg_dump.
func (db *DB) dumpPG(ctx context.Context, pgDump, dst string) (*kura.BackupManifest, error) {
	conn, err := db.rdb.Conn(ctx)
	if err != nil {
		return nil, mapErr(fmt.Errorf("backup: %w", err))
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return nil, mapErr(fmt.Errorf("backup: %w", err))
	}
	defer tx.Rollback()
	var snapshot string
	if err := tx.QueryRowContext(ctx, "SELECT pg_export_snapshot()").Scan(&snapshot); err != nil {
		return nil, mapErr(fmt.Errorf("backup: export snapshot: %w", err))
	}
	m, err := describePG(ctx, tx)
	if err != nil {
		return nil, err
	}
	if err := runPGTool(ctx, pgDump, db.cfg.DatabaseURL, nil,
		"--snapshot="+snapshot, "--format=custom", "--no-owner", "--no-privileges", "--file="+dst); err != nil {
		return nil, mapErr(fmt.Errorf("backup: %w", err))
	}
	if err := syncFile(dst); err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	return m, nil
}

// describePG reads a manifest's facts from a PostgreSQL database through
// q: in the backup, the snapshot's transaction; in a restore, the
// restored database before anything migrates it.
func describePG(ctx context.Context, q queryer) (*kura.BackupManifest, error) {
	m := &kura.BackupManifest{Format: kura.BackupFormatPostgres, Counts: map[string]int64{}}
	v, err := metaInt(ctx, q, "pg_schema_version")
	if err != nil {
		return nil, fmt.Errorf("read snapshot: %w", err)
	}
	m.SchemaVersion = int(v)
	if err := describeContents(ctx, q, m, "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"); err != nil {
		return nil, err
	}
	return m, nil
}

// manifestDifference is how what a restore brought back differs from
// what the manifest says the backup held: "" when it does not.
func manifestDifference(m, got *kura.BackupManifest) string {
	switch {
	case got.SchemaVersion != m.SchemaVersion:
		return fmt.Sprintf("schema version %d restored, the manifest says %d", got.SchemaVersion, m.SchemaVersion)
	case got.LastEventSeq != m.LastEventSeq:
		return fmt.Sprintf("last event seq %d restored, the manifest says %d", got.LastEventSeq, m.LastEventSeq)
	case got.EventsCompactedThrough != m.EventsCompactedThrough:
		return fmt.Sprintf("events compacted through %d restored, the manifest says %d", got.EventsCompactedThrough, m.EventsCompactedThrough)
	}
	names := make([]string, 0, len(m.Counts)+len(got.Counts))
	for k := range m.Counts {
		names = append(names, k)
	}
	for k := range got.Counts {
		if _, ok := m.Counts[k]; !ok {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		if got.Counts[k] != m.Counts[k] {
			return fmt.Sprintf("%s: %d restored, the manifest says %d", k, got.Counts[k], m.Counts[k])
		}
	}
	return ""
}

// restorePG restores a PostgreSQL backup into the empty database at
// o.DatabaseURL: it checks the backup (CheckBackup), refuses a database
// that holds anything, runs pg_restore in one transaction on the very
// file it hashed, compares what was restored with the manifest, brings
// it to this build's schema, gathers the planner's statistics and
// verifies every session and ledger. The
// migration lock kurad takes at start is held throughout, so a kurad
// started meanwhile waits for the restore.
//
// A restore that fails before pg_restore commits leaves the database
// empty. One whose restored database does not verify says so and leaves
// it as restored, for the operator to inspect and drop: a restore never
// deletes.
func restorePG(ctx context.Context, o RestoreOptions) (*kura.RestoreReport, error) {
	backupDir, err := filepath.Abs(o.BackupDir)
	if err != nil {
		return nil, err
	}
	m, err := CheckBackup(backupDir, o.PublicKey)
	if err != nil {
		return nil, err
	}
	if m.Format != kura.BackupFormatPostgres {
		return nil, fmt.Errorf("restore: %s is a backup of a SQLite store (format %s): restore it into a data directory with --data-dir, without --database-url or KURA_DATABASE_URL", backupDir, m.Format)
	}
	pgRestore, err := findPGTool("pg_restore", o.PGRestore)
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	shown := RedactDatabaseURL(o.DatabaseURL)
	wdb, err := sql.Open(pgDriverName, o.DatabaseURL)
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	defer wdb.Close()
	// One connection: it holds the session lock until the end.
	wdb.SetMaxOpenConns(1)
	wdb.SetMaxIdleConns(1)
	if _, err := wdb.ExecContext(ctx, "SELECT pg_advisory_lock(?)", int64(pgMigrateLockKey)); err != nil {
		return nil, fmt.Errorf("restore: connect to %s: %w", shown, err)
	}
	var objects int64
	if err := wdb.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\_%')
		+ (SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
			WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\_%')`).Scan(&objects); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	if objects > 0 {
		return nil, fmt.Errorf("restore: the database %s is not empty (%d tables, indexes, sequences or functions); restore into a new, empty database (CREATE DATABASE), which kurad then runs on", shown, objects)
	}
	// pg_restore reads the file this process opened and hashed: swapping
	// the file after the check cannot change what is restored.
	f, err := openChecked(filepath.Join(backupDir, BackupPGDump), m)
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	defer f.Close()
	if err := runPGTool(ctx, pgRestore, o.DatabaseURL, f,
		"--format=custom", "--no-owner", "--no-privileges", "--exit-on-error", "--single-transaction"); err != nil {
		return nil, fmt.Errorf("restore: %w; %s is unchanged", err, shown)
	}
	got, err := describePG(ctx, wdb)
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	check := &kura.StoreCheck{Integrity: "ok"}
	if d := manifestDifference(m, got); d != "" {
		check.Integrity = d
	}
	db := New(Config{DatabaseURL: o.DatabaseURL})
	db.pub = o.PublicKey
	db.pg = &pgState{}
	db.wdb = wdb
	if err := db.migratePG(ctx); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	// pg_restore brings no planner statistics. Until autovacuum gets to
	// the tables the planner guesses, and read a scope's whole index to
	// count one word, search after search.
	if _, err := wdb.ExecContext(ctx, "ANALYZE"); err != nil {
		return nil, fmt.Errorf("restore: analyze: %w", err)
	}
	rdb, err := sql.Open(pgDriverName, o.DatabaseURL)
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	defer rdb.Close()
	db.rdb = rdb
	if err := db.verifyChains(ctx, check); err != nil {
		return nil, fmt.Errorf("restore: verify: %w", err)
	}
	rep := &kura.RestoreReport{Backup: backupDir, Database: shown, Manifest: m, Verification: check}
	if !check.OK {
		return rep, fmt.Errorf("restore: the restored database does not verify (integrity %s, %d sessions and %d ledgers failing); do not run kurad on %s: drop it, and restore another backup",
			check.Integrity, len(check.FailedSessions), len(check.FailedLedgers), shown)
	}
	return rep, nil
}

// openChecked opens a backup's file and checks, reading it through, that
// it is what the manifest describes; it returns it rewound.
func openChecked(path string, m *kura.BackupManifest) (*os.File, error) {
	var want kura.BackupFile
	for _, bf := range m.Files {
		if bf.Name == filepath.Base(path) {
			want = bf
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	if sum := hex.EncodeToString(h.Sum(nil)); n != want.Bytes || sum != want.SHA256 {
		f.Close()
		return nil, fmt.Errorf("%s (%d bytes, SHA-256 %s) does not match the manifest: the backup changed while it was restored", path, n, sum)
	}
	return f, nil
}
