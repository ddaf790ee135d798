package store

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"time"

	"github.com/google/uuid"
	"github.com/kura-memory/kura/internal/kura"
)

// job is one write request: a function run inside the group transaction
// under its own savepoint, and where to send its outcome.
type job struct {
	ctx  context.Context
	idem *kura.Idempotency // the answer to keep, or nil
	fn   func(*Tx) error
	done chan error
	// own marks the store's bookkeeping (Update): its commit does not tell
	// /readyz that writes commit again, since a cursor moved in place
	// needs no new page on a full disk while every client write fails.
	own bool
	// lockFree marks a write no other instance's concurrent write can
	// change the outcome of (writeLockFree): on PostgreSQL it runs before
	// the batch takes the write lock the instances share.
	lockFree bool
	// records are what a lock-free job inserts with InsertRecord, in
	// order: on PostgreSQL the batch writes them ahead, together
	// (record_batch.go).
	records []*PreparedRecord
}

// Tx is what a write job sees: the shared transaction, the job's clock
// reading, and the events it produced (kept only if the job succeeds).
type Tx struct {
	db     *DB
	tx     *sql.Tx
	ctx    context.Context
	idem   *kura.Idempotency // where KeepAnswer keeps the answer; nil: nowhere
	now    time.Time
	events []kura.Event
	bound  map[string]*sql.Stmt // statements bound to tx, shared by the batch
	// nodeText are the nodes whose searchable text this job wrote, indexed
	// once for the whole batch just before it commits (search_index.go).
	nodeText []int64
	// pre are the records written ahead for this job's InsertRecord
	// calls, in order (record_batch.go).
	pre []*preRecord
	// seqs, on PostgreSQL, numbers the batch's events in Go (the write
	// lock makes the numbers this batch's alone); their rows go out
	// together with the commit (pgInsertEvents, pgPipe) instead of one
	// round trip each. nil on SQLite, where the insert is in-process.
	seqs *seqCounter
}

// seqCounter is the next event seq of a batch; a failed job hands back
// the seqs it took. Before the batch holds the write lock the numbers are
// not known yet: deferred jobs' events get 0, and are numbered once it
// does (numberEvents).
type seqCounter struct {
	next     int64
	deferred bool
}

// Now is the time of this write, used for every created_at it stamps.
func (tx *Tx) Now() time.Time { return tx.now }

// NowString is Now in kura.TimeFormat.
func (tx *Tx) NowString() string { return kura.FormatTime(tx.now) }

// stmt returns the prepared statement for q bound to this transaction.
// Unregistered statements are prepared on the transaction (uncached).
//
// On PostgreSQL, Exec, QueryRow and Query skip it: pgx keeps every
// statement it has run prepared on the connection, by its text, so a call
// is one round trip; a statement prepared through database/sql on the
// transaction would cost a Parse before and a Close after, three round
// trips a batch for each statement the writer has not prepared at Open
// (multi-row inserts, whose text varies with their row count).
func (tx *Tx) stmt(q string) (*sql.Stmt, error) {
	if s, ok := tx.bound[q]; ok {
		return s, nil
	}
	s, err := tx.db.wstmts.bind(tx.ctx, tx.tx, q)
	if err != nil {
		return nil, err
	}
	tx.bound[q] = s
	return s, nil
}

// Exec runs a cached prepared statement.
func (tx *Tx) Exec(q string, args ...any) (sql.Result, error) {
	if tx.db.pg != nil {
		return tx.tx.ExecContext(tx.ctx, q, args...)
	}
	s, err := tx.stmt(q)
	if err != nil {
		return nil, err
	}
	return s.ExecContext(tx.ctx, args...)
}

// QueryRow runs a cached prepared statement returning one row.
func (tx *Tx) QueryRow(q string, args ...any) *sql.Row {
	if tx.db.pg != nil {
		return tx.tx.QueryRowContext(tx.ctx, q, args...)
	}
	s, err := tx.stmt(q)
	if err != nil {
		// Surface the prepare error through Scan.
		return tx.tx.QueryRowContext(tx.ctx, q, args...)
	}
	return s.QueryRowContext(tx.ctx, args...)
}

// Query runs a cached prepared statement returning rows.
func (tx *Tx) Query(q string, args ...any) (*sql.Rows, error) {
	if tx.db.pg != nil {
		return tx.tx.QueryContext(tx.ctx, q, args...)
	}
	s, err := tx.stmt(q)
	if err != nil {
		return nil, err
	}
	return s.QueryContext(tx.ctx, args...)
}

const (
	// SQLite's (PostgreSQL's seqs come from the writer, Tx.seqs): the new
	// seq is the row's rowid, read back as the last one inserted rather
	// than through RETURNING, which costs a statement a result set and
	// was a third of a record write.
	qInsertEvent = "INSERT INTO events(seq, id, type, project, subject, refs, created_at, digest) VALUES((SELECT coalesce(max(seq), 0) + 1 FROM events),?,?,?,?,?,?,?)"
	qSavepoint   = "SAVEPOINT job"
	qRelease     = "RELEASE job"
	qRollbackTo  = "ROLLBACK TO job"
)

// AddEvent appends an event row in this transaction. refs holds the ids the
// event points at; the payload published later is built from them. digest
// is the hash of what the event names (log.go): the event's leaf in the
// log commits to it.
func (tx *Tx) AddEvent(typ, project string, refs map[string]string, digest string) error {
	return tx.addEvent(typ, project, kura.EventSubject(project, typ), refs, digest)
}

func (tx *Tx) addEvent(typ, project, subject string, refs map[string]string, digest string) error {
	b := refsJSON(refs)
	id := uuid.Must(uuid.NewV7()).String()
	at := tx.NowString()
	stored := digest
	if typ == kura.EventRecordWritten {
		stored = "" // the record's seal (qLeafEvents)
	}
	var seq int64
	if tx.seqs != nil {
		if !tx.seqs.deferred {
			seq = tx.seqs.next
			tx.seqs.next++
		}
	} else {
		res, err := tx.Exec(qInsertEvent, id, typ, project, subject, string(b), at, stored)
		if err != nil {
			return err
		}
		if seq, err = res.LastInsertId(); err != nil {
			return err
		}
	}
	tx.events = append(tx.events, kura.Event{Seq: seq, ID: id, Type: typ, Project: project, Subject: subject, Refs: refs, CreatedAt: at, Digest: digest})
	return nil
}

// refsJSON encodes an event's ids as a JSON object with sorted keys,
// without reflection: it runs once per event inside the writer.
func refsJSON(refs map[string]string) []byte {
	keys := make([]string, 0, len(refs))
	for k := range refs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b := make([]byte, 0, 64*len(refs)+2)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = kura.AppendJSONString(b, k)
		b = append(b, ':')
		b = kura.AppendJSONString(b, refs[k])
	}
	return append(b, '}')
}

// Update runs fn in the writer's next group transaction and returns once that
// transaction has committed (or fn failed and was rolled back). A nil error
// means the write is durable.
func (db *DB) Update(ctx context.Context, fn func(*Tx) error) error {
	return db.writeUngated(ctx, nil, true, fn)
}

// write is Update for a write its caller answers: opts say where the
// answer is kept (Tx.KeepAnswer). It is refused while the log is held
// (RefuseWrites) and until the full integrity check at start passed
// (startcheck.go); Update, the store's own bookkeeping, is not.
func (db *DB) write(ctx context.Context, opts []kura.WriteOption, fn func(*Tx) error) error {
	if err := db.integrityGate(ctx); err != nil {
		return err
	}
	if err := db.writeGate(); err != nil {
		return err
	}
	return db.writeUngated(ctx, opts, false, fn)
}

// writeLockFree is write for a job that only inserts rows whose keys it
// derives from their content (a record, found by its hash when it exists)
// or makes up itself (UUIDv7 ids), reads only rows that never change once
// committed, and keeps its answer with an insert that a concurrent
// duplicate turns into a replay. No other instance's concurrent write can
// change what such a job does, so on PostgreSQL it runs before its batch
// waits for the write lock: the instances' record inserts overlap, and
// only numbering the events, the log and the commit take turns.
//
// records are the records fn inserts with InsertRecord, in order.
func (db *DB) writeLockFree(ctx context.Context, opts []kura.WriteOption, records []*PreparedRecord, fn func(*Tx) error) error {
	if err := db.integrityGate(ctx); err != nil {
		return err
	}
	if err := db.writeGate(); err != nil {
		return err
	}
	return db.enqueue(&job{ctx: ctx, idem: kura.ApplyWriteOptions(opts).Idempotency, fn: fn, done: make(chan error, 1),
		lockFree: true, records: records})
}

func (db *DB) writeUngated(ctx context.Context, opts []kura.WriteOption, own bool, fn func(*Tx) error) error {
	return db.enqueue(&job{ctx: ctx, idem: kura.ApplyWriteOptions(opts).Idempotency, fn: fn, done: make(chan error, 1), own: own})
}

func (db *DB) enqueue(j *job) error {
	ctx := j.ctx
	db.mu.RLock()
	if db.closed || db.jobs == nil {
		db.mu.RUnlock()
		return kura.Errorf(kura.EUnavailable, "kurad is shutting down")
	}
	select {
	case db.jobs <- j:
	case <-ctx.Done():
		db.mu.RUnlock()
		return mapErr(ctx.Err())
	}
	db.mu.RUnlock()
	// Once queued the job runs to its end; waiting for it (rather than for
	// ctx) means the caller never reports failure for a write that committed.
	return <-j.done
}

// writer owns the write connection. It takes the first waiting job, drains
// whatever else is queued (up to MaxBatch), runs them in one transaction,
// commits once and answers every caller.
func (db *DB) writer() {
	defer close(db.done)
	batch := make([]*job, 0, db.cfg.MaxBatch)
	for {
		select {
		case j := <-db.jobs:
			batch = append(batch[:0], j)
		case <-db.quit:
			// Senders are fenced by mu, so what is queued now is all there is.
			for {
				select {
				case j := <-db.jobs:
					batch = append(batch[:0], j)
					db.drain(&batch)
					db.commit(batch)
				default:
					return
				}
			}
		}
		db.drain(&batch)
		db.linger(&batch)
		db.commit(batch)
		db.wstmts.promote(db.wdb)
		db.lastBatch = len(batch)
		db.truncateWAL()
	}
}

func (db *DB) drain(batch *[]*job) {
	for len(*batch) < db.cfg.MaxBatch {
		select {
		case j := <-db.jobs:
			*batch = append(*batch, j)
		default:
			return
		}
	}
}

// linger holds a batch open for a moment when the previous one showed
// concurrent writers, so that their next requests join this commit: fewer,
// larger transactions write each hot page (the newest leaf of every table
// and index) and sync the WAL once for many callers. A lone writer never
// waits.
func (db *DB) linger(batch *[]*job) {
	if db.cfg.Linger <= 0 || db.lastBatch < 2 || len(*batch) >= db.cfg.MaxBatch {
		return
	}
	t := time.NewTimer(db.cfg.Linger)
	defer t.Stop()
	for len(*batch) < db.cfg.MaxBatch && len(*batch) < db.lastBatch*2 {
		select {
		case j := <-db.jobs:
			*batch = append(*batch, j)
		case <-t.C:
			return
		}
	}
}

// savepointBatches is how many batches after a failed job run with
// savepoints from the start, so that a workload of conflicting writes does
// not pay for running each batch twice.
const savepointBatches = 16

// commit runs a batch in one transaction. Optimistically it runs the jobs
// back to back; if one fails, the transaction is rolled back and the batch
// is run again with a savepoint around each job, so that only the failed
// job's writes are undone.
func (db *DB) commit(batch []*job) {
	if db.savepointMode == 0 && len(batch) > 1 {
		if db.run(batch, false) {
			return
		}
		db.savepointMode = savepointBatches
	} else if db.savepointMode > 0 {
		db.savepointMode--
	}
	db.run(batch, true)
}

// run executes batch in one transaction and answers every caller, except
// when it runs without savepoints and a job fails: then it rolls back and
// returns false without answering anyone.
func (db *DB) run(batch []*job, savepoints bool) bool {
	for attempt := 1; ; attempt++ {
		done, again := db.runOnce(batch, savepoints, attempt < lockRetries)
		if !again {
			return done
		}
	}
}

// lockRetries bounds how often a batch is run again after PostgreSQL broke
// a deadlock by failing its wait for the write lock (lockFreeFirst).
const lockRetries = 3

// lockFreeFirst is the order a batch's jobs run in: on PostgreSQL the
// lock-free ones (writeLockFree) first, before the batch waits for the
// write lock; the others after it, in their order. On SQLite the lock is
// the writer itself: every job in its order.
func (db *DB) lockFreeFirst(batch []*job) []int {
	order := make([]int, 0, len(batch))
	for i, j := range batch {
		if db.pg != nil && j.lockFree {
			order = append(order, i)
		}
	}
	for i, j := range batch {
		if db.pg == nil || !j.lockFree {
			order = append(order, i)
		}
	}
	return order
}

// runOnce is one try of run. again asks for another try: retry was true
// and PostgreSQL failed the wait for the write lock to break a deadlock
// (a lock-free job holds a row another instance's locked job waits for).
func (db *DB) runOnce(batch []*job, savepoints, retry bool) (done, again bool) {
	ctx := context.Background()
	results := make([]error, len(batch))
	start := time.Now()
	db.txStart.Store(start.UnixNano())
	defer db.txStart.Store(0)
	// On PostgreSQL the transaction runs on a connection held for it: its
	// last writes go out with the COMMIT (pgCommit).
	var conn *sql.Conn
	begin := db.wdb.BeginTx
	if db.pg != nil {
		c, err := db.wdb.Conn(ctx)
		if err != nil {
			db.failAll(batch, start, db.writeErr(fmt.Errorf("begin: %w", err)))
			return true, false
		}
		defer c.Close()
		conn, begin = c, c.BeginTx
	}
	sqlTx, err := begin(ctx, nil)
	if err != nil {
		db.failAll(batch, start, db.writeErr(fmt.Errorf("begin: %w", err)))
		return true, false
	}
	// Every path ends the transaction before the connection goes back;
	// this is the guard that it does (after Commit, a no-op).
	defer sqlTx.Rollback()
	var events []kura.Event
	var seqs *seqCounter
	locked := db.pg == nil
	// asked is when the batch asked for PostgreSQL's write lock, waited
	// how long it waited for it.
	var asked time.Time
	var waited time.Duration
	// lock takes PostgreSQL's write lock and numbers the events the
	// lock-free jobs wrote before it.
	lock := func() error {
		asked = time.Now()
		last, w, err := db.pgLockWrites(ctx, sqlTx)
		if err != nil {
			return err
		}
		waited = w
		for i := range events {
			events[i].Seq = last + 1 + int64(i)
		}
		seqs, locked = &seqCounter{next: last + 1 + int64(len(events))}, true
		return nil
	}
	lockFailed := func(err error) (bool, bool) {
		sqlTx.Rollback()
		if retry && isLockWaitBroken(err) {
			return false, true
		}
		db.failAll(batch, start, db.writeErr(err))
		return true, false
	}
	if !locked {
		seqs = &seqCounter{deferred: true}
	}
	var indexed []int64
	anyOK := false
	bound := make(map[string]*sql.Stmt, 8)
	// A lone job needs no savepoint: if it fails, the whole transaction is
	// rolled back anyway.
	savepoints = savepoints && len(batch) > 1
	// ahead are the lock-free jobs' transactions on PostgreSQL, their
	// records written ahead, together (record_batch.go): each such job
	// runs whatever its caller's ctx says, its rows being in already.
	ahead := make([]*Tx, len(batch))
	if db.pg != nil && !savepoints {
		for i, j := range batch {
			if j.lockFree && len(j.records) > 0 && j.ctx.Err() == nil {
				ahead[i] = &Tx{db: db, tx: sqlTx, ctx: ctx, idem: j.idem, now: db.now(), bound: bound, seqs: seqs}
			}
		}
		if err := db.preinsertRecords(ctx, sqlTx, batch, ahead); err != nil {
			sqlTx.Rollback()
			switch {
			case retry && isLockWaitBroken(err):
				return false, true
			case len(batch) > 1:
				return false, false // run again with savepoints, one insert a record
			}
			db.failAll(batch, start, db.writeErr(err))
			return true, false
		}
	}
	for _, i := range db.lockFreeFirst(batch) {
		j := batch[i]
		if j.ctx.Err() != nil && ahead[i] == nil {
			results[i] = mapErr(j.ctx.Err())
			continue
		}
		if !locked && !j.lockFree {
			if err := lock(); err != nil {
				return lockFailed(err)
			}
		}
		tx := ahead[i]
		if tx == nil {
			tx = &Tx{db: db, tx: sqlTx, ctx: ctx, idem: j.idem, now: db.now(), bound: bound, seqs: seqs}
		}
		var mark int64
		if seqs != nil {
			mark = seqs.next
		}
		if savepoints {
			if _, err := tx.Exec(qSavepoint); err != nil {
				results[i] = db.writeErr(err)
				continue
			}
		}
		err := runJob(j.fn, tx)
		for try := 1; err != nil && savepoints && try < lockRetries && isLockWaitBroken(err); try++ {
			// PostgreSQL broke a deadlock with another instance's batch
			// (opposite orders of the same records) by failing this job:
			// nothing of it is left past its savepoint; run it again.
			if _, rerr := tx.Exec(qRollbackTo); rerr != nil {
				break
			}
			if seqs != nil {
				seqs.next = mark
			}
			tx = &Tx{db: db, tx: sqlTx, ctx: ctx, idem: j.idem, now: tx.now, bound: bound, seqs: seqs}
			err = runJob(j.fn, tx)
		}
		if err != nil {
			if seqs != nil {
				seqs.next = mark // its events are dropped with it
			}
			if !savepoints && len(batch) > 1 {
				sqlTx.Rollback()
				return false, false
			}
			if len(batch) == 1 && retry && isLockWaitBroken(err) {
				sqlTx.Rollback()
				return false, true
			}
			results[i] = db.writeErr(err)
			if !savepoints {
				continue
			}
			if _, rerr := tx.Exec(qRollbackTo); rerr != nil || isStorageErr(results[i]) {
				// The transaction is unusable (SQLite rolls it back itself
				// after a full disk or an I/O error): fail the whole batch,
				// with the storage's error rather than the savepoint's.
				sqlTx.Rollback()
				if !isStorageErr(results[i]) {
					results[i] = db.writeErr(rerr)
				}
				db.failAll(batch, start, results[i])
				return true, false
			}
			tx.Exec(qRelease)
			continue
		}
		if savepoints {
			if _, err := tx.Exec(qRelease); err != nil {
				sqlTx.Rollback()
				db.failAll(batch, start, db.writeErr(err))
				return true, false
			}
		}
		anyOK = true
		events = append(events, tx.events...)
		indexed = append(indexed, tx.nodeText...)
	}
	if !anyOK {
		sqlTx.Rollback()
		db.observe(BatchStats{Jobs: len(batch), Duration: time.Since(start)})
		for i, j := range batch {
			j.done <- results[i]
		}
		return true, false
	}
	if !locked {
		if err := lock(); err != nil {
			return lockFailed(err)
		}
	}
	var pipe *pgPipe // on PostgreSQL, the writes that go out with the COMMIT
	if db.pg != nil {
		pipe = &pgPipe{}
		db.pgInsertEvents(pipe, events)
	}
	if err := db.indexNodeText(ctx, sqlTx, indexed, pipe); err != nil {
		sqlTx.Rollback()
		db.failAll(batch, start, db.writeErr(fmt.Errorf("search index: %w", err)))
		return true, false
	}
	if err := db.appendLog(ctx, sqlTx, events, pipe); err != nil {
		sqlTx.Rollback()
		db.failAll(batch, start, db.writeErr(fmt.Errorf("log: %w", err)))
		return true, false
	}
	commitStart := time.Now()
	commit := sqlTx.Commit
	if pipe != nil {
		commit = func() error {
			if err := pgCommit(ctx, conn, pipe); err != nil {
				return err
			}
			return sqlTx.Commit() // reports what the pipeline's COMMIT did
		}
	}
	if err := commit(); err != nil {
		db.log.Error("commit failed", "err", err, "jobs", len(batch))
		sqlTx.Rollback()
		db.failAll(batch, start, db.writeErr(fmt.Errorf("commit: %w", err)))
		return true, false
	}
	end := time.Now()
	db.logCommitted()
	bs := BatchStats{Jobs: len(batch), Committed: true, Duration: end.Sub(start), Commit: end.Sub(commitStart)}
	if db.pg != nil {
		bs.LockWait, bs.LockHeld = waited, max(end.Sub(asked)-waited, 0)
	}
	db.committed(batch, results, events, bs)
	return true, false
}

// committedClientWrite reports whether a write a caller asked for is among
// the batch's successes.
func committedClientWrite(batch []*job, results []error) bool {
	for i, j := range batch {
		if !j.own && results[i] == nil {
			return true
		}
	}
	return false
}

// committed updates counters, answers the callers and hands the events to
// the commit hooks, in that order: nobody hears of a write before it is
// durable, and a caller that has its answer finds it counted.
func (db *DB) committed(batch []*job, results []error, events []kura.Event, bs BatchStats) {
	db.stats.Transactions.Add(1)
	db.stats.Jobs.Add(int64(len(batch)))
	if db.storageTrouble.Load() != nil && committedClientWrite(batch, results) {
		db.storageTrouble.Store(nil)
		db.log.Info("writes commit again")
	}
	// Ask for an early checkpoint after a burst of commits.
	db.sinceCkpt++
	if db.sinceCkpt >= 200 || db.walFrames.Load() > walKickPages {
		db.sinceCkpt = 0
		select {
		case db.ckptKick <- struct{}{}:
		default:
		}
	}
	if n := len(events); n > 0 {
		uncounted := db.moveSeqTo(events[n-1].Seq)
		if uncounted {
			db.counts.events.Add(int64(n))
		}
		for _, e := range events {
			k := writtenKind(e.Type)
			if k < 0 {
				continue
			}
			db.written[k].Add(1)
			if !uncounted {
				continue
			}
			switch k {
			case kindRecords:
				db.counts.records.Add(1)
			case kindLedgers:
				db.counts.ledgers.Add(1)
			}
		}
	}
	db.observe(bs)
	for i, j := range batch {
		j.done <- results[i]
	}
	if len(events) > 0 {
		db.evMu.Lock()
		close(db.evCh)
		db.evCh = make(chan struct{})
		db.evMu.Unlock()
		db.hookMu.Lock()
		hooks := db.hooks
		db.hookMu.Unlock()
		for _, h := range hooks {
			h(events)
		}
	}
}

// runJob turns a panic in a job into an error so one bad request cannot take
// the writer (and every other caller) down.
func runJob(fn func(*Tx) error, tx *Tx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("write job panicked: %v", r)
		}
	}()
	return fn(tx)
}

func (db *DB) failAll(batch []*job, start time.Time, err error) {
	db.stats.Failures.Add(1)
	db.observe(BatchStats{Jobs: len(batch), Failed: true, Duration: time.Since(start)})
	for _, j := range batch {
		j.done <- err
	}
}

// AddCommand appends a command event (published on
// oclaw.v1.{project}.cmd.{target}.{action}) in this transaction.
func (tx *Tx) AddCommand(project, target, action string, refs map[string]string, digest string) error {
	return tx.addEvent(action, project, kura.CommandSubject(project, target, action), refs, digest)
}

// Kinds of writes counted by Written, one per event type that marks one.
const (
	kindRecords = iota
	kindLedgers
	kindSessions
	kindTurnsOpened
	kindTurnsClosed
	kindNodes
	kindRelations
	kindFeedback
	kindKBEntries
	kindBundles
	numWrittenKinds
)

// WrittenKinds names the kinds Written counts, in a fixed order: a small,
// closed set, fit for a metric label.
var WrittenKinds = [numWrittenKinds]string{
	kindRecords:     "records",
	kindLedgers:     "ledgers",
	kindSessions:    "sessions",
	kindTurnsOpened: "turns_opened",
	kindTurnsClosed: "turns_closed",
	kindNodes:       "nodes",
	kindRelations:   "relations",
	kindFeedback:    "feedback",
	kindKBEntries:   "kb_entries",
	kindBundles:     "bundles",
}

// writtenKind maps a committed event to the kind of write it marks, or -1.
// Every mutation appends exactly one such event, so counting events counts
// writes without touching the tables.
func writtenKind(eventType string) int {
	switch eventType {
	case kura.EventRecordWritten:
		return kindRecords
	case kura.EventLedgerWritten:
		return kindLedgers
	case kura.EventSessionCreated:
		return kindSessions
	case kura.EventTurnOpened:
		return kindTurnsOpened
	case kura.EventTurnComplete:
		return kindTurnsClosed
	case kura.EventMemoryNode, kura.EventMemoryLifecycle:
		// Both write a new node version.
		return kindNodes
	case kura.EventMemoryRelation:
		return kindRelations
	case kura.EventMemoryFeedback:
		return kindFeedback
	case kura.EventKBChanged:
		return kindKBEntries
	case kura.EventContextCompiled:
		return kindBundles
	}
	return -1
}

// Written returns, by kind (WrittenKinds), how many writes this process
// has committed since it opened the store.
func (db *DB) Written() map[string]int64 {
	m := make(map[string]int64, numWrittenKinds)
	for k, name := range WrittenKinds {
		m[name] = db.written[k].Load()
	}
	return m
}
