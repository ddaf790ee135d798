package store

import (
	"context"
	"crypto/ed25519"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kura-memory/kura/internal/dirlock"
	"github.com/kura-memory/kura/internal/kura"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Config is how a store is opened.
type Config struct {
	// Hooks let tests act between the steps of a write; nil in production.
	Hooks Hooks
	Path  string // database file
	// DatabaseURL, when set, keeps everything in PostgreSQL instead of
	// the file at Path (pg.go): several kurads may share one database.
	DatabaseURL string
	// PGDump is the pg_dump a backup on PostgreSQL runs (empty: found on
	// PATH or in /usr/lib/postgresql/*/bin).
	PGDump         string
	Synchronous    string // FULL (default) or NORMAL
	MaxBatch       int    // write jobs per transaction
	ReadPool       int    // read-only connections
	DefaultProject string // event project for records without metadata.project_id and for ledgers
	Vocabulary     *kura.Vocabulary
	NodeKinds      []string // memory node kinds; empty: kura.NodeKinds
	Signer         ed25519.PrivateKey
	// RetiredKeys are public keys this kurad signed with before a key
	// rotation: their ledger signatures vouch for sys: records on import.
	RetiredKeys []ed25519.PublicKey
	Logger      *slog.Logger
	Now         func() time.Time // tests control time
	// CheckpointInterval is how often the WAL is copied back into the
	// database (PASSIVE: never blocks the writer or readers).
	CheckpointInterval time.Duration
	// Linger is how long the writer may hold a batch open for more jobs
	// when writers are concurrent (0: never).
	Linger time.Duration
	// SweepInterval is how often expired turns are closed (and stale
	// idempotency keys dropped).
	SweepInterval time.Duration
	// StartupCheck is the consistency check Open runs before serving:
	// StartupCheckQuick (default; the full check then runs in the
	// background, writes refused until it passes: startcheck.go),
	// StartupCheckFull or StartupCheckOff.
	StartupCheck string
	// OnDamaged, when set, is called once, from the background check's
	// goroutine, when the full check finds the database damaged: kurad
	// then stops serving it.
	OnDamaged func(err error)
	// WALTruncateFrames is the WAL length in frames past which the writer
	// truncates it between batches (0: walTruncateFrames).
	WALTruncateFrames int
	// WALTruncateRetry is how long the writer waits before it tries again
	// to truncate a WAL that readers kept it from truncating (0: a second).
	WALTruncateRetry time.Duration
	// RedactPurgeWait is how long a redaction retries purging the content
	// from the files before it answers that the purge is pending (0:
	// defaultRedactPurgeWait).
	RedactPurgeWait time.Duration
	// Embedder, when set, makes memory search semantic and hybrid
	// (semantic.go); an EmbedWorker keeps the nodes' vectors. nil: search
	// is lexical, as without embeddings.
	Embedder Embedder
	// EmbedQueryTimeout is how long a search waits for its query's vector
	// before it answers by words (0: defaultEmbedQueryTimeout).
	EmbedQueryTimeout time.Duration
	// LogOff leaves events out of the Merkle log (a benchmark's baseline);
	// a later open with the log on appends the leaves it missed.
	LogOff bool
	// LogOrigin names a new database's log (empty: kura/<random>); an
	// existing database keeps the origin it has.
	LogOrigin string
	// RankBounds bound memory search's ranking cost (search_rank.go); zero
	// fields take the defaults. Tests make them small.
	RankBounds RankBounds
}

// Hooks are points where a test may act inside an operation: an explicit
// input of the store it opens, not a switch every store shares.
type Hooks struct {
	// Revise, when set, runs after each step of a revise ("node",
	// "relation"); an error it returns fails the revise there.
	Revise func(step string) error
	// Backup, when set, runs at the stages of a backup ("snapshot":
	// before the copy starts; "manifest": after it, before the manifest
	// is written).
	Backup func(stage string)
	// FullCheck, when set, runs before the full integrity check in the
	// background starts (ctx ends at Close): a test holds the check there.
	FullCheck func(ctx context.Context)
}

// CommitHook receives the events of every committed transaction, in seq
// order, after the commit. The doorbell publishes from it.
type CommitHook func(events []kura.Event)

// queryer is what a read needs: the read pool, one of its connections, a
// read transaction or the writer's transaction. Declared once so every
// read helper takes any of them.
type queryer interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}

// DB is an open Kura store.
type DB struct {
	cfg    Config
	log    *slog.Logger
	wdb    *sql.DB // one write connection, owned by the writer goroutine
	rdb    *sql.DB // read-only pool
	heavy  heavyReads
	cdb    *sql.DB // checkpoints the WAL beside the writer
	now    func() time.Time
	signer ed25519.PrivateKey
	pub    ed25519.PublicKey

	jobs   chan *job
	mu     sync.RWMutex // guards closed against senders
	closed bool
	quit   chan struct{}
	done   chan struct{}
	// bg is the context of the store's own background work (postings and
	// vocabulary loads, sweeps, purge retries); Close cancels it.
	bg     context.Context
	stopBg context.CancelFunc

	ckptDone  chan struct{}
	ckptKick  chan struct{}
	sweepDone chan struct{}

	wstmts     writerStmts    // prepared on wdb; used only by the writer
	kbStmts    stmtCache      // prepared knowledge-base reads (kbquery.go)
	kbPostings postingCache   // copies of large postings (kbcache.go)
	kbLoads    sync.WaitGroup // background readers of postings
	// kbRankBounds, when set, replace the ranking's budget and sample
	// (kbsearch.go) so tests reach its paths with small knowledge bases.
	kbRankBounds [2]int
	scopes       scopeCache // the last read of compiled scopes (context_cache.go)
	vocab        vocabCache // the search index's terms, for misspelt words (typo.go)
	searchStmts  stmtCache  // prepared search reads (search_read.go)
	lastSeq      atomic.Int64
	txStart      atomic.Int64  // the writer's transaction in progress began (unix ns); 0 between transactions
	stallAfter   time.Duration // WriterHealth's threshold when set (tests); else writerStallAfter
	counts       struct{ records, ledgers, events atomic.Int64 }
	hookMu       sync.Mutex
	hooks        []CommitHook
	evMu         sync.Mutex
	evCh         chan struct{} // closed and replaced at each commit that wrote events
	stats        WriterStats

	written  [numWrittenKinds]atomic.Int64   // writes committed since Open, by kind
	batchObs atomic.Pointer[[]BatchObserver] // copy-on-write under hookMu

	storageTrouble atomic.Pointer[string] // why the last write failed at the storage; nil after a commit

	walFrames     atomic.Int64 // frames not yet checkpointed at the last checkpoint
	walLog        atomic.Int64 // frames in the WAL at the last checkpoint
	ckptMu        sync.Mutex   // one checkpoint at a time: SQLite refuses a second at once
	walRetryAt    time.Time    // when the writer may try to truncate the WAL again (writer only)
	sinceCkpt     int          // commits since the last kick (writer only)
	lastBatch     int          // size of the previous batch (writer only)
	savepointMode int          // batches left to run with savepoints (writer only)

	purge   purgeState     // redacted content still in the files (purge.go)
	purgeWG sync.WaitGroup // the background purge
	backups backupRuns     // backups running, abandoned by a redaction (backup.go)

	logs logState // the Merkle log's tree (log.go)

	pg *pgState // the PostgreSQL store's own state; nil on SQLite (pg.go)

	fileLock *dirlock.Lock  // the database file, held from Open to Close (SQLite)
	integ    integrityState // the full integrity check at start (startcheck.go)

	// compactChunk, when above 0, replaces compactChunk for this DB (a
	// test's).
	compactChunk atomic.Int64

	vecs  vectorIndexes // semantic indexes built so far (vecindex.go)
	embed embedState    // the embedder as the worker and searches saw it (vectors.go)
}

// WriterStats are counters the metrics layer reads.
type WriterStats struct {
	Transactions atomic.Int64
	Jobs         atomic.Int64
	Failures     atomic.Int64
}

// SchemaVersion is the newest schema this build knows.
var SchemaVersion = func() int {
	names, _ := fs.Glob(migrationFS, "migrations/*.sql")
	return len(names)
}()

// New returns an unopened store.
func New(cfg Config) *DB {
	if cfg.Synchronous == "" {
		cfg.Synchronous = "FULL"
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = 256
	}
	if cfg.ReadPool <= 0 {
		cfg.ReadPool = 4
	}
	if cfg.DefaultProject == "" {
		cfg.DefaultProject = "default"
	}
	if cfg.Vocabulary == nil {
		cfg.Vocabulary = kura.NewVocabulary()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.CheckpointInterval <= 0 {
		cfg.CheckpointInterval = time.Second
	}
	if cfg.SweepInterval <= 0 {
		cfg.SweepInterval = time.Second
	}
	if cfg.WALTruncateFrames <= 0 {
		cfg.WALTruncateFrames = walTruncateFrames
	}
	if cfg.WALTruncateRetry <= 0 {
		cfg.WALTruncateRetry = time.Second
	}
	if cfg.RedactPurgeWait <= 0 {
		cfg.RedactPurgeWait = defaultRedactPurgeWait
	}
	cfg.RankBounds = cfg.RankBounds.withDefaults()
	return &DB{cfg: cfg, log: cfg.Logger, heavy: newHeavyReads(cfg.ReadPool), now: cfg.Now, signer: cfg.Signer, ckptKick: make(chan struct{}, 1), evCh: make(chan struct{}),
		kbStmts: stmtCache{max: maxKBStmts}, searchStmts: stmtCache{max: maxSearchStmts}}
}

// Connection roles: the writer, the read pool and the checkpointer.
const (
	roleWrite = iota
	roleRead
	roleCheckpoint
)

// dsn builds the connection string for a role. temp_store=MEMORY keeps the
// per-job savepoint journals off the disk; the writer does not checkpoint
// (wal_autocheckpoint=0): a separate connection does, so commits never pay
// for copying the WAL back into the database.
func dsn(path string, role int, sync string) string {
	q := "?_pragma=busy_timeout(10000)&_pragma=foreign_keys(ON)&_pragma=temp_store(MEMORY)"
	switch role {
	case roleWrite:
		// secure_delete zeroes what a write frees (a redacted record's
		// content, a purged answer) instead of leaving it in free space
		// inside the pages, where it could be read back from the file.
		q += "&_pragma=secure_delete(ON)"
		q += "&_pragma=journal_mode(WAL)&_pragma=synchronous(" + sync + ")&_pragma=wal_autocheckpoint(0)&_pragma=cache_size(-" + strconv.Itoa(writerCacheKiB) + ")&_txlock=immediate"
	case roleRead:
		q += "&_pragma=query_only(ON)&_pragma=cache_size(-8000)"
	case roleCheckpoint:
		q += "&_pragma=synchronous(" + sync + ")&_pragma=wal_autocheckpoint(0)"
	}
	return "file:" + path + q
}

// Open checks the schema version, migrates, opens the read pool and starts
// the writer. A database written by a newer kurad is refused before any write.
func (db *DB) Open(ctx context.Context) error {
	if db.signer == nil {
		return errors.New("open store: a signing key is required")
	}
	db.pub = db.signer.Public().(ed25519.PublicKey)
	if db.cfg.DatabaseURL != "" {
		return db.openPG(ctx)
	}
	switch strings.ToUpper(db.cfg.Synchronous) {
	case "FULL", "NORMAL":
	default:
		return fmt.Errorf("open store: synchronous must be FULL or NORMAL, not %q", db.cfg.Synchronous)
	}
	if err := securePermissions(db.cfg.Path, db.log); err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	// One kurad per database file, whatever path reaches it: the data
	// directory's lock does not see a second directory whose kura.db is a
	// link to this one, and two writers on one file fail each other's
	// writes while each signs with its own key. On PostgreSQL (above)
	// sharing is the design.
	lock, err := dirlock.AcquireFile(db.cfg.Path, "kurad")
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	db.fileLock = lock
	if err := db.openSQLite(ctx); err != nil {
		// Close releases the lock when start got far enough to call it.
		db.releaseFile()
		return err
	}
	return nil
}

// releaseFile lets the database file go, once nothing here has it open.
func (db *DB) releaseFile() {
	if err := db.fileLock.Release(); err != nil {
		db.log.Warn("unlock database file", "err", err)
	}
	db.fileLock = nil
}

// openSQLite is Open on the locked database file.
func (db *DB) openSQLite(ctx context.Context) error {
	if err := checkSchemaVersion(ctx, db.cfg.Path); err != nil {
		if db.isFull(err) {
			return errNoRoomToRead(err)
		}
		return err
	}
	// journal_size_limit: when the writer restarts the WAL (health.go), the
	// file is cut back to the bound instead of to nothing, so later commits
	// overwrite allocated space rather than growing the file (a growing
	// file makes every fsync commit metadata too).
	wdb, err := sql.Open("sqlite", dsn(db.cfg.Path, roleWrite, strings.ToUpper(db.cfg.Synchronous))+
		"&_pragma=journal_size_limit("+strconv.Itoa(db.cfg.WALTruncateFrames*4096)+")")
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	wdb.SetMaxOpenConns(1)
	wdb.SetMaxIdleConns(1)
	wdb.SetConnMaxLifetime(0)
	db.wdb = wdb
	if err := db.checkAtStart(ctx); err != nil {
		wdb.Close()
		return err
	}
	if err := db.migrate(ctx); err != nil {
		wdb.Close()
		return err
	}
	// A kurad stopped while a redaction's purge was pending (a crash, a
	// kill) may have left the old content in the WAL: start from an empty
	// one. Nothing else reads yet, so it cannot be kept from finishing.
	// On a full disk it cannot finish (the database file must grow to take
	// the WAL): kurad starts read-only instead (diskfull.go).
	fullAtStart := false
	if _, err := wdb.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		if !db.isFull(err) {
			wdb.Close()
			return fmt.Errorf("open store: checkpoint: %w", err)
		}
		fullAtStart = true
	}
	rdb, err := sql.Open("sqlite", dsn(db.cfg.Path, roleRead, ""))
	if err != nil {
		wdb.Close()
		return fmt.Errorf("open read pool: %w", err)
	}
	rdb.SetMaxOpenConns(db.cfg.ReadPool)
	rdb.SetMaxIdleConns(db.cfg.ReadPool)
	db.rdb = rdb
	if err := db.loadCounters(ctx); err != nil {
		db.wdb.Close()
		db.rdb.Close()
		return err
	}
	if err := db.openLog(ctx); err != nil {
		db.wdb.Close()
		db.rdb.Close()
		return err
	}
	// The writer's statements are prepared as it first runs them
	// (writerStmts): a kurad that never writes a knowledge base never parses
	// its statements, and start does not wait for all of them.
	db.wstmts.init(append(writeStatements(), sqliteSearchStatements()...), nil)
	// The migrations and the checkpoint at start filled the writer's page
	// cache with pages no write needs; hand them back.
	if _, err := db.wdb.ExecContext(ctx, "PRAGMA shrink_memory"); err != nil {
		db.wdb.Close()
		db.rdb.Close()
		return fmt.Errorf("open store: %w", err)
	}
	cdb, err := sql.Open("sqlite", dsn(db.cfg.Path, roleCheckpoint, strings.ToUpper(db.cfg.Synchronous)))
	if err != nil {
		db.wdb.Close()
		db.rdb.Close()
		return fmt.Errorf("open checkpointer: %w", err)
	}
	cdb.SetMaxOpenConns(1)
	db.cdb = cdb
	if err := db.start(ctx); err != nil {
		return err
	}
	if fullAtStart {
		db.startFull()
	}
	db.startFullCheck()
	return nil
}

// start runs the writer and the background work of an opened store.
func (db *DB) start(ctx context.Context) error {
	db.jobs = make(chan *job, 4096)
	db.bg, db.stopBg = context.WithCancel(context.Background())
	db.quit = make(chan struct{})
	db.done = make(chan struct{})
	db.ckptDone = make(chan struct{})
	db.sweepDone = make(chan struct{})
	go db.writer()
	go db.checkpointer()
	go db.sweeper()
	if err := db.drainPendingExtractions(ctx); err != nil {
		db.Close(ctx)
		return fmt.Errorf("extract memory queued before the memory graph existed: %w", err)
	}
	return nil
}

// loadCounters reads the last event seq and the counts /v1/info reports.
// The counts walk whole indexes: they run through the writer's connection
// with its cache cut (withSmallCache), so the pages they read never sit in
// a connection's cache of an idle kurad.
func (db *DB) loadCounters(ctx context.Context) error {
	return db.withSmallCache(ctx, func() error {
		var seq sql.NullInt64
		if err := db.wdb.QueryRowContext(ctx, "SELECT max(seq) FROM events").Scan(&seq); err != nil {
			return fmt.Errorf("load counters: %w", err)
		}
		db.lastSeq.Store(seq.Int64)
		for _, q := range []struct {
			q string
			v *atomic.Int64
		}{
			{"SELECT count(*) FROM records", &db.counts.records},
			{"SELECT count(*) FROM ledgers", &db.counts.ledgers},
			{"SELECT count(*) FROM events", &db.counts.events},
		} {
			var n int64
			if err := db.wdb.QueryRowContext(ctx, q.q).Scan(&n); err != nil {
				return fmt.Errorf("load counters: %w", err)
			}
			q.v.Store(n)
		}
		return nil
	})
}

// Close stops accepting writes, lets the writer finish every queued job,
// then closes the database. It is safe to call twice.
func (db *DB) Close(ctx context.Context) error {
	db.mu.Lock()
	if db.closed || db.quit == nil {
		db.mu.Unlock()
		return nil
	}
	db.closed = true
	db.mu.Unlock()
	db.stopBg()
	close(db.quit)
	var errs []error
	// Everything is released below whether or not the goroutines stopped
	// in time: a close that gives up waiting still closes the pools (work
	// left running then fails on them), and a second Close finds nothing
	// left to do.
	drained := waitUntil(ctx, db.kbLoads.Wait, db.vocab.wg.Wait, db.purgeWG.Wait, db.integ.wg.Wait,
		func() { <-db.sweepDone }, func() { <-db.done }, func() { <-db.ckptDone })
	if !drained {
		errs = append(errs, fmt.Errorf("writer did not drain: %w", ctx.Err()))
	}
	db.wstmts.close()
	if db.pg != nil {
		return db.closePG(errs)
	}
	if err := db.cdb.Close(); err != nil {
		errs = append(errs, err)
	}
	if err := db.rdb.Close(); err != nil {
		errs = append(errs, err)
	}
	// A final checkpoint keeps the WAL small for the next start, and
	// finishes a purge still pending: every reader is gone now.
	if drained {
		want := db.purge.wanted.Load()
		var busy, logFrames, done int
		if err := db.wdb.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logFrames, &done); err != nil {
			// On a full disk the WAL stays (every commit in it is
			// durable) and the next start copies it back: a stop that
			// cannot tidy up has still lost nothing.
			if db.isFull(err) {
				db.log.Warn("the disk is full: the WAL stays beside the database until the next start copies it in", "err", err)
			} else {
				errs = append(errs, err)
			}
		} else if busy == 0 {
			db.markPurged(want)
		}
	}
	if db.PurgePending() {
		db.log.Warn("redacted content may remain in the WAL until the next start, which truncates it")
	}
	if err := db.wdb.Close(); err != nil {
		errs = append(errs, err)
	}
	// Last: closing the lock's descriptor would drop SQLite's own locks on
	// the file, were a connection still open.
	db.releaseFile()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close store: %w", err)
	}
	return nil
}

// waitUntil runs every wait and reports whether all returned before ctx
// ended. A wait still blocked then is left to finish on its own.
func waitUntil(ctx context.Context, waits ...func()) bool {
	done := make(chan struct{})
	go func() {
		for _, w := range waits {
			w()
		}
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// OnCommit registers a hook called with each committed batch of events.
func (db *DB) OnCommit(h CommitHook) {
	db.hookMu.Lock()
	db.hooks = append(db.hooks, h)
	db.hookMu.Unlock()
}

// PublicKey is the key that verifies kurad's signatures.
func (db *DB) PublicKey() ed25519.PublicKey { return db.pub }

// LastEventSeq is the seq of the newest committed event.
func (db *DB) LastEventSeq() int64 { return db.lastSeq.Load() }

// Counts returns row counts kept in memory (no table scan per call).
func (db *DB) Counts() map[string]int64 {
	return map[string]int64{
		"records": db.counts.records.Load(),
		"ledgers": db.counts.ledgers.Load(),
		"events":  db.counts.events.Load(),
	}
}

// Stats exposes the writer's counters.
func (db *DB) Stats() *WriterStats { return &db.stats }

// QueueDepth is the number of write jobs waiting for the writer.
func (db *DB) QueueDepth() int { return len(db.jobs) }

// Ping checks that the read pool answers and the writer is running.
func (db *DB) Ping(ctx context.Context) error {
	db.mu.RLock()
	closed := db.closed
	db.mu.RUnlock()
	if closed {
		return kura.Errorf(kura.EUnavailable, "store is closing")
	}
	select {
	case <-db.done:
		return kura.Errorf(kura.EUnavailable, "writer stopped")
	default:
	}
	if err := db.integrityDamaged(); err != nil {
		return err
	}
	var one int
	if err := db.rdb.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return mapErr(err)
	}
	return db.pgBehindErr()
}

// msgStorageFailing answers writes and reads that hit an I/O error or a
// damaged page: the request may be fine, the disk is not.
const msgStorageFailing = "storage is failing"

// mapErr turns SQLite failures into Kura errors by result code (never by
// message text). Errors already carrying a Kura code pass through.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	var ke *kura.Error
	if errors.As(err, &ke) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return kura.Errorf(kura.EUnavailable, "request cancelled or timed out")
	}
	if pe := mapPGErr(err); pe != nil {
		return pe
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_FULL:
			return errStorageFull()
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return &kura.Error{Code: kura.EUnavailable, Message: "the database is busy; retry"}
		case sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY:
			return &kura.Error{Code: kura.EUnavailable, Message: msgStorageFailing, Cause: kura.ErrStorage}
		}
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			// A uniqueness constraint that fires is a write racing another
			// for the same name: the caller's conflict, not kurad's fault.
			return &kura.Error{Code: kura.EConflict, Message: "a conflicting write holds this name; retry or choose another"}
		}
		if se.Code()&0xff == sqlite3.SQLITE_CONSTRAINT {
			// NOT NULL, CHECK, FOREIGN KEY or any other constraint: every
			// input is validated and every reference resolved, in the
			// writer's own transaction, before a statement runs, so the
			// schema refusing a row means that validation let through
			// what it should have refused. That is kurad's bug, not the
			// caller's invalid_argument: internal, with the SQLite error
			// as the cause for the log and nothing of it in the answer.
			return &kura.Error{Code: kura.EInternal, Message: msgConstraintBroken, Cause: err}
		}
	}
	return err
}

// msgConstraintBroken answers a write the schema refused though validation
// passed it (mapErr); the constraint and its table are in kurad's log.
const msgConstraintBroken = "internal error: a write broke a constraint of the schema (kurad's log has it)"

// walKickPages is the number of WAL frames written since the last
// checkpoint after which the writer asks for one early, so a burst of
// writes cannot grow the WAL far between ticks.
const walKickPages = 4000

// checkpointer copies the WAL back into the database on its own connection
// every CheckpointInterval (and when the writer kicks it), with PASSIVE
// checkpoints that never wait for the writer or readers.
func (db *DB) checkpointer() {
	defer close(db.ckptDone)
	if db.pg != nil {
		return // PostgreSQL runs its own checkpoints
	}
	t := time.NewTicker(db.cfg.CheckpointInterval)
	defer t.Stop()
	for {
		select {
		case <-db.done:
			return
		case <-t.C:
		case <-db.ckptKick:
		}
		var busy, logFrames, done int
		db.ckptMu.Lock()
		err := db.cdb.QueryRow("PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &logFrames, &done)
		db.ckptMu.Unlock()
		if err != nil {
			db.log.Warn("checkpoint", "err", err)
			continue
		}
		db.walFrames.Store(int64(logFrames - done))
		db.walLog.Store(int64(logFrames))
	}
}

// sweeper closes turns past their deadline as timeout and, hourly, drops
// idempotency answers past their retention.
func (db *DB) sweeper() {
	defer close(db.sweepDone)
	t := time.NewTicker(db.cfg.SweepInterval)
	defer t.Stop()
	lastExpire := time.Time{}
	for {
		select {
		case <-db.quit:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(db.bg, 30*time.Second)
		if n, err := db.CloseExpiredTurns(ctx); err != nil {
			if !kura.IsCode(err, kura.EUnavailable) {
				db.log.Warn("closing expired turns", "err", err)
			}
		} else if n > 0 {
			db.log.Info("closed expired turns", "count", n)
		}
		if time.Since(lastExpire) > time.Hour {
			if err := db.expireIdempotency(ctx); err != nil && !kura.IsCode(err, kura.EUnavailable) {
				db.log.Warn("expiring idempotency keys", "err", err)
			}
			lastExpire = time.Now()
		}
		cancel()
	}
}

// scanPage reads up to limit items of a listing queried with LIMIT
// limit+1, and the id to continue after when there are more.
func scanPage[T any](rows *sql.Rows, limit int, scan func(rowScanner) (*T, error), id func(*T) string) ([]T, string, error) {
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, "", mapErr(err)
		}
		out = append(out, *v)
	}
	if err := rows.Err(); err != nil {
		return nil, "", mapErr(err)
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = id(&out[limit-1])
	}
	return out, next, nil
}
