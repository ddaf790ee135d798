package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/kura-memory/kura/internal/kura"
	"golang.org/x/mod/sumdb/tlog"
)

// PostgreSQL store: the same DB, statements and rules as on SQLite, with
// what only a shared server needs (doc.go, "The store line"):
//
//   - one write lock across every kurad on the database (a transaction
//     advisory lock each group transaction holds until it commits): writes
//     serialise as SQLite's single writer does, so event seqs stay
//     gap-free and commit-ordered, and head moves, claims and idempotency
//     keys decide against the latest committed state. Only lock-free jobs
//     (writeLockFree: record inserts) run before the batch takes it, so
//     the instances' inserts overlap while numbering, the log and the
//     commit take turns;
//   - after taking it, the writer catches up with what other instances
//     committed since its last transaction (seq, counts, the log's tree);
//   - a poller notices other instances' commits for readers (the event
//     feed, followers) between this instance's own writes.

//go:embed migrations_pg/*.sql
var pgMigrationFS embed.FS

// Advisory lock keys (pg_advisory_*): arbitrary, fixed, Kura's own.
const (
	pgWriteLockKey   = 0x6b757261_0001 // every group transaction
	pgMigrateLockKey = 0x6b757261_0002 // a starting instance's migrations
)

// pgPollInterval is how often an instance looks for events other
// instances committed.
const pgPollInterval = 100 * time.Millisecond

type pgState struct {
	pollDone    chan struct{}
	analyzeDone chan struct{}            // analyzeAfterWrites returned
	ownPlans    bool                     // the URL names a plan_cache_mode: reads leave planning to it (beginRead)
	behind      atomic.Pointer[pgBehind] // set while the database lacks commits this instance saw (pg_behind.go)
}

// openPG is Open for KURA_DATABASE_URL.
func (db *DB) openPG(ctx context.Context) error {
	db.pg = &pgState{pollDone: make(chan struct{}), analyzeDone: make(chan struct{}), ownPlans: urlSetsPlanMode(db.cfg.DatabaseURL)}
	wdb, err := sql.Open(pgDriverName, db.cfg.DatabaseURL)
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	wdb.SetMaxOpenConns(1)
	wdb.SetMaxIdleConns(1)
	db.wdb = wdb
	fail := func(err error) error {
		wdb.Close()
		if db.rdb != nil {
			db.rdb.Close()
		}
		return err
	}
	if err := wdb.PingContext(ctx); err != nil {
		return fail(fmt.Errorf("open store: connect to the database: %w", err))
	}
	// Instances starting together take turns to migrate and to name the
	// log: a session lock on the writer's one connection.
	if _, err := wdb.ExecContext(ctx, "SELECT pg_advisory_lock(?)", int64(pgMigrateLockKey)); err != nil {
		return fail(fmt.Errorf("open store: %w", err))
	}
	err = db.migratePG(ctx)
	if err == nil {
		var seq sql.NullInt64
		if err = wdb.QueryRowContext(ctx, "SELECT max(seq) FROM events").Scan(&seq); err == nil {
			db.lastSeq.Store(seq.Int64)
			err = db.openLog(ctx)
		}
	}
	if _, uerr := wdb.ExecContext(ctx, "SELECT pg_advisory_unlock(?)", int64(pgMigrateLockKey)); err == nil && uerr != nil {
		err = uerr
	}
	if err != nil {
		return fail(err)
	}
	rdb, err := sql.Open(pgDriverName, db.cfg.DatabaseURL)
	if err != nil {
		return fail(fmt.Errorf("open read pool: %w", err))
	}
	rdb.SetMaxOpenConns(db.cfg.ReadPool)
	rdb.SetMaxIdleConns(db.cfg.ReadPool)
	db.rdb = rdb
	for _, q := range []struct {
		q string
		v interface{ Store(int64) }
	}{
		{"SELECT count(*) FROM records", &db.counts.records},
		{"SELECT count(*) FROM ledgers", &db.counts.ledgers},
		{"SELECT count(*) FROM events", &db.counts.events},
	} {
		var n int64
		if err := rdb.QueryRowContext(ctx, q.q).Scan(&n); err != nil {
			return fail(fmt.Errorf("load counters: %w", err))
		}
		q.v.Store(n)
	}
	// Prepared now, before the writer runs: pgx prepares again on each
	// pooled connection that runs one, and none is found missing later.
	prepared := map[string]*sql.Stmt{}
	for _, q := range writeStatements() {
		st, err := db.wdb.PrepareContext(ctx, q)
		if err != nil {
			return fail(fmt.Errorf("prepare %q: %w", q, err))
		}
		prepared[q] = st
	}
	db.wstmts.init(writeStatements(), prepared)
	// No checkpointer: PostgreSQL checkpoints itself.
	if err := db.start(ctx); err != nil {
		return err
	}
	go db.pollRemoteCommits()
	go db.analyzeAfterWrites()
	return nil
}

// migratePG applies migrations_pg in order; the version is kept in meta
// (PostgreSQL has no user_version). A database written by a newer kurad
// is refused before anything writes.
func (db *DB) migratePG(ctx context.Context) error {
	names, err := fs.Glob(pgMigrationFS, "migrations_pg/*.sql")
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	sort.Strings(names)
	v := 0
	var hasMeta bool
	if err := db.wdb.QueryRowContext(ctx, "SELECT to_regclass('meta') IS NOT NULL").Scan(&hasMeta); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if hasMeta {
		var s string
		err := db.wdb.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = 'pg_schema_version'").Scan(&s)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("migrate: %w", err)
		}
		v, _ = strconv.Atoi(s)
	}
	if v > len(names) {
		return fmt.Errorf("open store: database schema version %d is newer than this kurad supports (%d); refusing to open it", v, len(names))
	}
	err = db.applyMigrations(ctx, pgMigrationFS, "migrations_pg/*.sql", v, func(tx *sql.Tx, ver int) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO meta(key, value) VALUES('pg_schema_version', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", strconv.Itoa(ver))
		return err
	}, "engine", "postgres")
	if err == nil && v > 0 && v < pgNoContentStatistics {
		// The statistics of content the migration dropped are dead rows
		// of pg_statistic until its file is rewritten (VACUUM, not a
		// transaction's statement). A role that owns neither the database
		// nor the catalog gets a warning from PostgreSQL and the rows stay
		// until autovacuum reuses their space: docs/scale-out.md.
		if _, verr := db.wdb.ExecContext(ctx, "VACUUM FULL pg_statistic"); verr != nil {
			db.log.Warn("could not rewrite pg_statistic after dropping the statistics of record content", "err", verr)
		}
	}
	return err
}

// pgNoContentStatistics is the schema version from which ANALYZE keeps no
// sample of record content (migrations_pg/0007).
const pgNoContentStatistics = 7

// pgCustomPlans is the statement a read transaction on PostgreSQL begins
// with, unless the database URL names a plan_cache_mode: plan each
// statement for the values it is given. pgx prepares every statement, and
// after five runs PostgreSQL may settle on a generic plan made without the
// values. For a search that plan guesses a scope's key range selective and
// reads every document of the scope to count one word (9 ms where the
// word's index entry takes 0.5); planning anew costs a tenth of a
// millisecond. A statement, not a connection parameter, so that a pooler
// in front of PostgreSQL (PgBouncer refuses startup parameters it does not
// know) sees nothing new, and SET LOCAL ends with the transaction.
const pgCustomPlans = "SET LOCAL plan_cache_mode = force_custom_plan"

// urlSetsPlanMode reports whether the database URL (or keyword/value
// string) names a plan_cache_mode of its own.
func urlSetsPlanMode(dsn string) bool {
	const key = "plan_cache_mode"
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		// Not url.Parse: a URL naming several hosts (primary and standby)
		// is no URL net/url reads.
		_, query, _ := strings.Cut(dsn, "?")
		vals, _ := url.ParseQuery(query)
		return vals.Has(key)
	}
	for _, f := range strings.Fields(dsn) {
		if strings.HasPrefix(f, key+"=") {
			return true
		}
	}
	return false
}

// beginRead begins a read-only transaction: one snapshot for a search, a
// compile or a walk of the graph, planned for its values on PostgreSQL
// (pgCustomPlans).
func (db *DB) beginRead(ctx context.Context) (*sql.Tx, error) {
	tx, err := db.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil || db.pg == nil || db.pg.ownPlans {
		return tx, err
	}
	if _, err := tx.ExecContext(ctx, pgCustomPlans); err != nil {
		tx.Rollback()
		return nil, err
	}
	return tx, nil
}

// pgLockWrites takes the write lock in a group transaction, catches up
// with what other instances committed since this one last wrote, and
// returns the newest event's seq (the batch numbers its events from
// there) and how long PostgreSQL kept it waiting for the lock. The lock
// and the catch-up are one statement (migrations_pg/0003_write_lock.sql):
// each round trip made while holding the lock is time no instance commits.
func (db *DB) pgLockWrites(ctx context.Context, tx *sql.Tx) (int64, time.Duration, error) {
	if err := db.pgBehindErr(); err != nil {
		return 0, 0, err
	}
	known := db.lastSeq.Load()
	rows, err := tx.QueryContext(ctx, "SELECT k_waited_us, k_seq, k_size, k_records, k_ledgers, k_events, k_leaf, k_hashes FROM kura_write_lock(?, ?, ?, ?, ?, ?)",
		int64(pgWriteLockKey), known, db.logs.size, !db.logs.off, kura.EventRecordWritten, kura.EventLedgerWritten)
	if err != nil {
		return 0, 0, fmt.Errorf("write lock: %w", err)
	}
	var waited, seq, size int64
	var c seqCounts
	var stored map[int64]tlog.Hash // the new frontier's rows, by stored hash index
	for rows.Next() {
		var leaf sql.NullInt64
		var hashes []byte
		if err := rows.Scan(&waited, &seq, &size, &c.records, &c.ledgers, &c.events, &leaf, &hashes); err != nil {
			rows.Close()
			return 0, 0, fmt.Errorf("write lock: %w", err)
		}
		if !leaf.Valid {
			continue
		}
		if stored == nil {
			stored = map[int64]tlog.Hash{}
		}
		// A leaf's row holds the hashes its append stored: level L's is
		// the block of 2^L leaves it completed (hashReader.ReadHashes).
		for l := 0; (l+1)*tlog.HashSize <= len(hashes); l++ {
			stored[tlog.StoredHashIndex(l, ((leaf.Int64+1)>>l)-1)] = tlog.Hash(hashes[l*tlog.HashSize : (l+1)*tlog.HashSize])
		}
	}
	if err := rows.Close(); err != nil {
		return 0, 0, fmt.Errorf("write lock: %w", err)
	}
	if err := rows.Err(); err != nil {
		return 0, 0, fmt.Errorf("write lock: %w", err)
	}
	if err := db.pgCheckBehind(seq, size, known); err != nil {
		return 0, 0, err
	}
	if !db.logs.off && size != db.logs.size {
		// Another instance appended leaves: this one's tree, and the head
		// its checkpoints and proofs serve, move to them.
		if err := db.loadFrontier(ctx, tx, size, stored); err != nil {
			return 0, 0, err
		}
		if err := db.publishHead(ctx); err != nil {
			return 0, 0, err
		}
	}
	db.advanceSeqCounted(ctx, tx, known, seq, c)
	return seq, time.Duration(waited) * time.Microsecond, nil
}

// isLockWaitBroken reports whether err is PostgreSQL breaking a deadlock
// (or a serialization failure): nothing was written, and the batch may
// simply run again.
func isLockWaitBroken(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}

// pgEventRows writes a batch's events, numbered in Go (Tx.seqs), many rows
// a statement.
var pgEventRows = newMultiRow("INSERT INTO events(seq, id, type, project, subject, refs, created_at, digest) VALUES ", 8, 200)

// pgInsertEvents queues the events of a batch's successful jobs, many rows
// a statement, to go out with its COMMIT: what SQLite's writer inserts one
// by one as the jobs run.
func (db *DB) pgInsertEvents(pipe *pgPipe, events []kura.Event) {
	args := make([]any, 0, 8*len(events))
	for i := range events {
		e := &events[i]
		stored := e.Digest
		if e.Type == kura.EventRecordWritten {
			stored = "" // the record's seal (qLeafEvents), as addEvent stores it
		}
		args = append(args, e.Seq, e.ID, e.Type, e.Project, e.Subject, string(refsJSON(e.Refs)), e.CreatedAt, stored)
	}
	per := pgEventRows.cols * pgEventRows.chunk
	for len(args) > 0 {
		n := min(len(args), per)
		q := pgEventRows.full
		if n < per {
			q = pgEventRows.sql(n / pgEventRows.cols)
		}
		pipe.add(q, args[:n])
		args = args[n:]
	}
}

// pgPipe holds the writes a batch makes under PostgreSQL's write lock once
// its jobs have run (events, search index, log leaves) until its COMMIT,
// to send them all with it in one round trip (pgConn.pipeCommit). Each
// round trip made while holding the lock is time no instance commits; and
// between two of them the lock waits on this kurad's own scheduling, so a
// busy or CPU-limited host would hold every other instance up with it.
// After the pipeline goes out, the lock is PostgreSQL's alone to release.
// A nil pipe sends each statement at once (a transaction of its own
// making, such as the log's backfill).
type pgPipe struct {
	stmts []pgStmt
}

type pgStmt struct {
	q    string
	args []any
}

// send queues q (or, on a nil pipe, runs it in tx).
func (p *pgPipe) send(ctx context.Context, tx *sql.Tx, q string, args []any) error {
	if p == nil {
		_, err := tx.ExecContext(ctx, q, args...)
		return err
	}
	p.add(q, args)
	return nil
}

func (p *pgPipe) add(q string, args []any) {
	p.stmts = append(p.stmts, pgStmt{q: q, args: args})
}

// pgCommit sends what pipe holds and the COMMIT of the transaction begun on
// conn, in one round trip; the transaction's own Commit then only reports
// the outcome (pgTx).
func pgCommit(ctx context.Context, conn *sql.Conn, pipe *pgPipe) error {
	return conn.Raw(func(dc any) error {
		c, ok := dc.(*pgConn)
		if !ok {
			return fmt.Errorf("commit: the write connection is a %T, not the store's driver's", dc)
		}
		return c.pipeCommit(ctx, pipe.stmts)
	})
}

// seqCounts are the events committed between two seqs, and how many of
// them wrote a record or a ledger.
type seqCounts struct{ records, ledgers, events int64 }

// advanceSeq moves what this instance knows of the feed to seq, counting
// the records, ledgers and events committed elsewhere since.
func (db *DB) advanceSeq(ctx context.Context, q queryer, seq int64) {
	for {
		last := db.lastSeq.Load()
		if seq <= last {
			return
		}
		rows, err := q.QueryContext(ctx, "SELECT type, count(*) FROM events WHERE seq > ? AND seq <= ? GROUP BY type", last, seq)
		if err != nil {
			return // the next poll or write tries again
		}
		var c seqCounts
		for rows.Next() {
			var typ string
			var n int64
			if rows.Scan(&typ, &n) != nil {
				continue
			}
			c.events += n
			switch typ {
			case kura.EventRecordWritten:
				c.records += n
			case kura.EventLedgerWritten:
				c.ledgers += n
			}
		}
		rows.Close()
		if db.moveSeq(last, seq, c) {
			return
		}
		// The writer or the poller moved first: count from there.
	}
}

// advanceSeqCounted is advanceSeq for a writer that counted the events
// after from already (kura_write_lock); if the poller moved the feed
// since, the count no longer fits and advanceSeq counts again.
func (db *DB) advanceSeqCounted(ctx context.Context, q queryer, from, seq int64, c seqCounts) {
	if seq > from && db.moveSeq(from, seq, c) {
		return
	}
	db.advanceSeq(ctx, q, seq)
}

// moveSeq moves the feed from last to seq with the counts of the events
// between, and wakes its readers; false when it was not at last.
func (db *DB) moveSeq(last, seq int64, c seqCounts) bool {
	if db.pgBehindErr() != nil {
		return true // a database that lost commits this instance saw shows no new ones (pg_behind.go)
	}
	if !db.lastSeq.CompareAndSwap(last, seq) {
		return false
	}
	db.counts.records.Add(c.records)
	db.counts.ledgers.Add(c.ledgers)
	db.counts.events.Add(c.events)
	db.evMu.Lock()
	close(db.evCh)
	db.evCh = make(chan struct{})
	db.evMu.Unlock()
	return true
}

// pgCatchUpSeq moves LastEventSeq to the newest event committed by any
// instance. Commits take the write lock in seq order, so every event up to
// the newest committed one is committed: the feed never shows a gap.
func (db *DB) pgCatchUpSeq(ctx context.Context) error {
	var seq sql.NullInt64
	if err := db.rdb.QueryRowContext(ctx, "SELECT max(seq) FROM events").Scan(&seq); err != nil {
		return mapErr(err)
	}
	db.advanceSeq(ctx, db.rdb, seq.Int64)
	return nil
}

// pollRemoteCommits wakes this instance's readers (the feed, followers)
// for events other instances commit.
func (db *DB) pollRemoteCommits() {
	defer close(db.pg.pollDone)
	t := time.NewTicker(pgPollInterval)
	defer t.Stop()
	for {
		select {
		case <-db.quit:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(db.bg, 5*time.Second)
		// What this instance saw is read before the database: a commit
		// of its own in between must not look like a loss.
		known := db.lastSeq.Load()
		if seq, err := pgMaxSeq(ctx, db.rdb); err == nil {
			db.pgCheckBehind(seq, -1, known)
			db.pgRecheckBehind(ctx, seq)
			if seq > known {
				db.advanceSeq(ctx, db.rdb, seq)
			}
			// An empty write takes the write lock, which brings the log's
			// tree (and the checkpoints and proofs this instance serves)
			// up to what the others committed. It is asked for whenever
			// the tree lags the feed, not only when this poll moved the
			// feed: a reader of the feed (pgCatchUpSeq) may have moved it
			// first, and the tree moves only under the lock.
			if !db.logs.off && seq > db.Log().Size && db.pgBehindErr() == nil {
				if err := db.Update(ctx, func(*Tx) error { return nil }); err != nil && !kura.IsCode(err, kura.EUnavailable) {
					db.log.Warn("catching up with other instances' log", "err", err)
				}
			}
		}
		cancel()
	}
}

func (db *DB) closePG(errs []error) error {
	<-db.pg.pollDone
	<-db.pg.analyzeDone
	if err := db.rdb.Close(); err != nil {
		errs = append(errs, err)
	}
	if err := db.wdb.Close(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close store: %w", err)
	}
	return nil
}

// msgUnreachable answers a request that needs a database no server
// answers for: down, restarting, or a failover in progress.
const msgUnreachable = "the database is unreachable; retry"

// mapPGErr turns PostgreSQL failures into Kura errors by SQLSTATE, and a
// server that cannot be reached into unavailable: an outage is not the
// request's fault nor kurad's (a 500), and the request may be retried.
func mapPGErr(err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		var ce *pgconn.ConnectError
		var ne net.Error
		// pgx reports a server that closed the connection mid-statement
		// (killed, crashed) as io.ErrUnexpectedEOF, not always wrapped
		// in an error that says it is safe to retry.
		if errors.As(err, &ce) || errors.As(err, &ne) || pgconn.SafeToRetry(err) || errors.Is(err, sql.ErrConnDone) ||
			errors.Is(err, driver.ErrBadConn) || errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, io.ErrUnexpectedEOF) {
			return &kura.Error{Code: kura.EUnavailable, Message: msgUnreachable}
		}
		return nil
	}
	switch {
	case pe.Code[:2] == "08" || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03":
		// connection exceptions; the server shutting down, crashed, or
		// not yet accepting connections (starting, recovering)
		return &kura.Error{Code: kura.EUnavailable, Message: msgUnreachable}
	case pe.Code == "57014": // query_canceled: a statement_timeout, an administrator's cancel
		return &kura.Error{Code: kura.EUnavailable, Message: "the database cancelled the statement; retry"}
	case pe.Code == "25006": // read_only_sql_transaction: connected to a standby
		return &kura.Error{Code: kura.EUnavailable, Message: "the database takes no writes (a standby, or a failover in progress); retry"}
	case pe.Code == "23505": // unique_violation
		return &kura.Error{Code: kura.EConflict, Message: "a conflicting write holds this name; retry or choose another"}
	case pe.Code[:2] == "23": // not_null, check, foreign_key, exclusion...: as on SQLite (mapErr), kurad's bug
		return &kura.Error{Code: kura.EInternal, Message: msgConstraintBroken, Cause: err}
	case pe.Code == "40001" || pe.Code == "40P01" || pe.Code == "55P03": // serialization, deadlock, lock not available
		return &kura.Error{Code: kura.EUnavailable, Message: "the database is busy; retry"}
	case pe.Code == "53100": // disk_full
		return errStorageFull()
	case pe.Code[:2] == "53" || pe.Code[:2] == "58" || pe.Code[:2] == "XX" || pe.Code[:2] == "57":
		return &kura.Error{Code: kura.EUnavailable, Message: msgStorageFailing, Cause: kura.ErrStorage}
	}
	return nil
}

// pgVacuumRecords is the PostgreSQL purge of redacted content: VACUUM FULL
// rewrites the records table into new files and drops the old ones, which
// held the content in dead row versions; and the idempotency table, whose
// stored answers naming the record the redaction deleted (their dead
// versions held the content too). The planner's statistics hold none
// (migrations_pg/0007). Like SQLite's TRUNCATE
// checkpoint it waits at most wait for readers of the table (a long read
// keeps the purge pending; it is retried). What PostgreSQL keeps outside
// the table (WAL segments not yet recycled, replicas, base backups) is the
// operator's to expire: docs/scale-out.md.
func (db *DB) pgVacuumRecords(ctx context.Context, wait time.Duration) (bool, error) {
	conn, err := db.rdb.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET lock_timeout = "+strconv.FormatInt(max(1, wait.Milliseconds()), 10)); err != nil {
		return false, err
	}
	defer conn.ExecContext(context.Background(), "RESET lock_timeout")
	if _, err := conn.ExecContext(ctx, "VACUUM FULL records, idempotency"); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "55P03" { // lock_not_available: a reader holds the table
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// HoldLease takes or renews the named lease for holder for ttl: true while
// holder has it. Instances sharing a PostgreSQL database take turns with
// it (the outbox publisher); the database's clock decides expiry, so the
// instances' clocks need not agree. On SQLite the one kurad always holds
// it (the data directory's lock keeps a second one out).
func (db *DB) HoldLease(ctx context.Context, name, holder string, ttl time.Duration) (bool, error) {
	if db.pg == nil {
		return true, nil
	}
	var got string
	err := db.rdb.QueryRowContext(ctx, `INSERT INTO leases(name, holder, expires_at)
		VALUES(?1, ?2, now() + make_interval(secs => ?3))
		ON CONFLICT(name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
		WHERE leases.holder = excluded.holder OR leases.expires_at < now()
		RETURNING holder`, name, holder, ttl.Seconds()).Scan(&got)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, mapErr(err)
	}
	return got == holder, nil
}

// ReleaseLease gives the named lease up if holder has it.
func (db *DB) ReleaseLease(ctx context.Context, name, holder string) error {
	if db.pg == nil {
		return nil
	}
	_, err := db.rdb.ExecContext(ctx, "DELETE FROM leases WHERE name = ? AND holder = ?", name, holder)
	return mapErr(err)
}

// Postgres reports whether the store keeps its state in PostgreSQL.
func (db *DB) Postgres() bool { return db.pg != nil }

// DatabaseSize is the PostgreSQL database's size in bytes
// (pg_database_size): tables, indexes, TOAST and free space.
func (db *DB) DatabaseSize(ctx context.Context) (int64, error) {
	if db.pg == nil {
		return 0, errors.New("database size: a SQLite store is a file; stat it")
	}
	var n int64
	err := db.rdb.QueryRowContext(ctx, "SELECT pg_database_size(current_database())").Scan(&n)
	return n, mapErr(err)
}
