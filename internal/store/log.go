package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/kurahash"
)

// The one Merkle log (shared/API.md, "Log, checkpoints and witnesses"):
// every event is a leaf, leaf i the event with seq i+1. The writer appends
// a batch's leaves in the batch's own transaction, just before it commits,
// so the tree never disagrees with the events it hashes. tlog computes the
// stored hashes; the writer keeps the tree's frontier (the roots of its
// complete subtrees, at most 64) in memory, so appending a leaf and hashing
// the tree read nothing from the database.

const (
	metaLogOrigin = "log_origin"

	qLogInsertHash = "INSERT INTO log_hashes(leaf, hashes) VALUES(?, ?)"
	// logChunk leaves go in with one qLogInsertChunk.
	logChunk = 64
)

// qLeafEvents reads events as leaves. A record.written event does not
// store its digest: it is the record's seal, read from the record (the
// biggest share of events, so the event log stays as small as before the
// Merkle log); an edited seal then no longer hashes to the leaf. A
// record.redacted event comes with its redaction and the record's seal,
// from which scanLeafEvent recomputes its digest.
const qLeafEvents = `SELECT events.seq, events.id, events.type, events.project, events.subject, events.refs, events.created_at,
	CASE WHEN events.type = 'record.written' AND events.digest = ''
		THEN coalesce((SELECT seal FROM records WHERE id = json_extract(events.refs, '$.record_id')), '')
		ELSE events.digest END,
	coalesce(r.record_id, ''), coalesce(s.seal, ''), coalesce(r.by_id, ''), coalesce(r.reason, ''), coalesce(r.at, '')
	FROM events
	LEFT JOIN redactions r ON events.type = 'record.redacted' AND r.record_id = json_extract(events.refs, '$.record_id') AND r.event_seq = events.seq
	LEFT JOIN records s ON s.id = r.record_id
	WHERE events.seq > ? AND events.seq <= ? ORDER BY events.seq`

// scanLeafEvent reads one qLeafEvents row: the event, its refs as stored,
// and the digest its leaf commits to. A record.redacted event logged since
// its digest commits to the redaction (redactionDigest) gets that digest
// recomputed from the redactions row, so that a row edited afterwards (who,
// why, when) no longer hashes to the leaf. One logged before kept the
// record's seal, and keeps it; one with no digest (written before the log)
// stays without.
func scanLeafEvent(rows *sql.Rows) (kura.Event, string, error) {
	var e kura.Event
	var refs string
	var rd kurahash.Redaction
	if err := rows.Scan(&e.Seq, &e.ID, &e.Type, &e.Project, &e.Subject, &refs, &e.CreatedAt, &e.Digest,
		&rd.RecordID, &rd.Seal, &rd.By, &rd.Reason, &rd.At); err != nil {
		return e, "", err
	}
	if e.Type == kura.EventRecordRedacted && rd.RecordID != "" && e.Digest != "" && e.Digest != rd.Seal {
		d, err := kurahash.RedactionDigest(rd)
		if err != nil {
			return e, "", err
		}
		e.Digest = d
	}
	return e, refs, nil
}

// qLogInsertChunk inserts logChunk leaves' rows at once.
var qLogInsertChunk = "INSERT INTO log_hashes(leaf, hashes) VALUES(?, ?)" + strings.Repeat(",(?, ?)", logChunk-1)

// LogHead is the tree as of the last commit.
type LogHead = kura.LogHead

// logState is the writer's view of the tree. head is read by anyone; size
// and frontier belong to the writer goroutine (and to Open before it
// starts).
type logState struct {
	off      bool
	size     int64
	frontier map[int64]tlog.Hash
	head     atomic.Pointer[LogHead]
	origin   atomic.Pointer[string]
	// gate, when set, is why writes are refused (a witness saw a larger or
	// different tree); an admin acknowledgement clears it.
	gate atomic.Pointer[kura.Error]
	// next is what a batch's append would make the tree; it becomes the
	// state when the batch commits.
	next struct {
		size     int64
		frontier map[int64]tlog.Hash
	}
}

// objectDigest is the digest of an event whose object has no hash of its
// own: hex SHA-256 of the RFC 8785 form of the object as stored.
func objectDigest(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	c, err := kurahash.Canonical(b)
	if err != nil {
		return ""
	}
	return kurahash.SumHex(c)
}

// kbDigest is the digest of a knowledge-base entry version: the object the
// entry's history shows for it.
func kbDigest(identifier string, version int, op, entryID string, keys []string, value *string) string {
	return objectDigest(struct {
		Identifier string   `json:"identifier"`
		Version    int      `json:"version"`
		Op         string   `json:"op"`
		EntryID    string   `json:"entry_id"`
		Keys       []string `json:"keys"`
		Value      *string  `json:"value"`
	}{identifier, version, op, entryID, keys, value})
}

// leafData is the leaf of an event.
func leafData(e *kura.Event) ([]byte, error) {
	return kurahash.LogLeafData(kurahash.LogLeaf{Seq: e.Seq, ID: e.ID, Type: e.Type, Project: e.Project,
		Subject: e.Subject, Refs: e.Refs, At: e.CreatedAt, Digest: e.Digest})
}

// frontierIndexes are the stored-hash indexes of the roots of the complete
// subtrees a tree of n leaves splits into, left to right: what TreeHash(n)
// reads and what appending leaf n reads.
func frontierIndexes(n int64) []int64 {
	var out []int64
	var start int64
	for l := 63 - bits.LeadingZeros64(uint64(n)); l >= 0; l-- {
		if n&(1<<l) != 0 {
			out = append(out, tlog.StoredHashIndex(l, start>>l))
			start += 1 << l
		}
	}
	return out
}

// hashReader reads stored hashes: first from maps of hashes not yet (or
// recently) committed, then from the database through q.
type hashReader struct {
	ctx  context.Context
	q    queryer
	maps []map[int64]tlog.Hash
}

func (r hashReader) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	var missing []int // positions in indexes
	for i, x := range indexes {
		found := false
		for _, m := range r.maps {
			if h, ok := m[x]; ok {
				out[i], found = h, true
				break
			}
		}
		if !found {
			missing = append(missing, i)
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	// Stored hash (level L, index n) was the L-th hash stored when leaf
	// ((n+1)<<L)-1 was appended: its row, and its offset in the row.
	leaves := make([]int64, len(missing))
	for i, at := range missing {
		l, n := tlog.SplitStoredHashIndex(indexes[at])
		leaves[i] = ((n + 1) << l) - 1
	}
	// The leaves as a list of values, not a JSON array the statement
	// unpacks: PostgreSQL cannot see through json_each (a set-returning
	// function), so it scanned the whole table for a handful of rows,
	// inside the write lock when an instance caught up with another's
	// leaves. A tree of any size reads at most a few dozen.
	args := make([]any, len(leaves))
	for i, l := range leaves {
		args[i] = l
	}
	rows, err := r.q.QueryContext(r.ctx, "SELECT leaf, hashes FROM log_hashes WHERE leaf IN (?"+strings.Repeat(",?", len(leaves)-1)+")", args...)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	byLeaf := make(map[int64][]byte, len(leaves))
	for rows.Next() {
		var leaf int64
		var b []byte
		if err := rows.Scan(&leaf, &b); err != nil {
			return nil, mapErr(err)
		}
		byLeaf[leaf] = b
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(err)
	}
	for i, at := range missing {
		l, _ := tlog.SplitStoredHashIndex(indexes[at])
		b := byLeaf[leaves[i]]
		if len(b)%tlog.HashSize != 0 || len(b) < (l+1)*tlog.HashSize {
			return nil, kura.Errorf(kura.EInternal, "log: stored hash %d (leaf %d) is missing", indexes[at], leaves[i])
		}
		copy(out[at][:], b[l*tlog.HashSize:])
	}
	return out, nil
}

// openLog loads the tree's size and frontier, names the log's origin and
// appends the leaves of events written while the log was off (or before it
// existed). It runs in Open, before the writer starts.
func (db *DB) openLog(ctx context.Context) error {
	db.logs.off = db.cfg.LogOff
	origin, err := db.loadOrigin(ctx)
	if err != nil {
		return err
	}
	db.logs.origin.Store(&origin)
	// The tree's size is its number of leaves: one log_hashes row each,
	// the last one leaf size-1 (rows are only ever appended).
	var size int64
	if err := db.wdb.QueryRowContext(ctx, "SELECT coalesce(max(leaf) + 1, 0) FROM log_hashes").Scan(&size); err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	if err := db.loadFrontier(ctx, db.wdb, size); err != nil {
		return err
	}
	if !db.logs.off && size < db.lastSeq.Load() {
		if err := db.backfillLog(ctx); err != nil {
			return err
		}
	}
	return db.publishHead(ctx)
}

func (db *DB) loadOrigin(ctx context.Context) (string, error) {
	var origin string
	err := db.wdb.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = ?", metaLogOrigin).Scan(&origin)
	if err == nil {
		return origin, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("open log: %w", err)
	}
	origin = db.cfg.LogOrigin
	if origin == "" {
		origin = newOrigin()
	}
	if _, err := db.wdb.ExecContext(ctx, "INSERT INTO meta(key, value) VALUES(?, ?)", metaLogOrigin, origin); err != nil {
		return "", fmt.Errorf("open log: %w", err)
	}
	return origin, nil
}

// newOrigin names a new log: kura/ and 16 random hex digits. It is chosen
// once per database (and again after an acknowledged rollback), so a copy
// of the directory is the same log and a new database is not.
func newOrigin() string {
	var b [8]byte
	rand.Read(b[:])
	return "kura/" + hex.EncodeToString(b[:])
}

// ValidOrigin says whether s can name a log: a checkpoint's first line and
// a note key name (no spaces, no '+', printable).
func ValidOrigin(s string) bool {
	if s == "" || len(s) > 200 {
		return false
	}
	for _, c := range s {
		if c <= ' ' || c == '+' || c > '~' {
			return false
		}
	}
	return true
}

// loadFrontier reads the frontier of a tree of size leaves: from known
// (stored hashes already read, by index) where it can, else through q.
func (db *DB) loadFrontier(ctx context.Context, q queryer, size int64, known ...map[int64]tlog.Hash) error {
	idx := frontierIndexes(size)
	hs, err := hashReader{ctx: ctx, q: q, maps: known}.ReadHashes(idx)
	if err != nil {
		return fmt.Errorf("open log: tree of %d leaves: %w", size, err)
	}
	db.logs.size = size
	db.logs.frontier = make(map[int64]tlog.Hash, len(idx))
	for i, x := range idx {
		db.logs.frontier[x] = hs[i]
	}
	return nil
}

func (db *DB) publishHead(ctx context.Context) error {
	root, err := tlog.TreeHash(db.logs.size, hashReader{ctx: ctx, maps: []map[int64]tlog.Hash{db.logs.frontier}})
	if err != nil {
		return fmt.Errorf("log: tree hash: %w", err)
	}
	db.logs.head.Store(&LogHead{Size: db.logs.size, Root: [32]byte(root)})
	return nil
}

// backfillLog appends, in transactions of a thousand, the leaves of events
// the log has not seen. An event compacted away before the log saw it
// becomes a leaf of its seq alone.
func (db *DB) backfillLog(ctx context.Context) error {
	last := db.lastSeq.Load()
	from := db.logs.size
	for db.logs.size < last {
		tx, err := db.wdb.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("log backfill: %w", err)
		}
		upper := min(last, db.logs.size+1000)
		rows, err := tx.QueryContext(ctx, qLeafEvents, db.logs.size, upper)
		if err != nil {
			tx.Rollback()
			return fmt.Errorf("log backfill: %w", err)
		}
		var events []kura.Event
		for rows.Next() {
			e, refs, err := scanLeafEvent(rows)
			if err != nil {
				rows.Close()
				tx.Rollback()
				return fmt.Errorf("log backfill: %w", err)
			}
			json.Unmarshal([]byte(refs), &e.Refs)
			for int64(len(events))+db.logs.size+1 < e.Seq {
				events = append(events, kura.Event{Seq: int64(len(events)) + db.logs.size + 1})
			}
			events = append(events, e)
		}
		rows.Close()
		for int64(len(events))+db.logs.size < upper {
			events = append(events, kura.Event{Seq: int64(len(events)) + db.logs.size + 1})
		}
		if err := db.appendLog(ctx, tx, events, nil); err != nil {
			tx.Rollback()
			return fmt.Errorf("log backfill: %w", err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("log backfill: %w", err)
		}
		db.logCommitted()
	}
	db.log.Info("log caught up with the event feed", "leaves_added", last-from, "size", last)
	return nil
}

// stubLeaf is the leaf of an event that no longer exists (compacted before
// the log saw it): its seq alone.
func stubLeaf(e *kura.Event) ([]byte, error) {
	return kurahash.LogLeafData(kurahash.LogLeaf{Seq: e.Seq})
}

// appendLog writes the leaves of events (consecutive seqs right after the
// tree's current size) into tx and prepares the tree they make; it
// becomes the tree when tx commits (logCommitted). On PostgreSQL the rows
// go into pipe, to be sent with the COMMIT (pgPipe).
func (db *DB) appendLog(ctx context.Context, tx *sql.Tx, events []kura.Event, pipe *pgPipe) error {
	db.logs.next.size, db.logs.next.frontier = db.logs.size, db.logs.frontier
	if db.logs.off || len(events) == 0 {
		return nil
	}
	n := db.logs.size
	if events[0].Seq != n+1 {
		return kura.Errorf(kura.EInternal, "log: event %d does not follow leaf %d", events[0].Seq, n)
	}
	var err error
	pending := make(map[int64]tlog.Hash, 2*len(events)+8)
	r := hashReader{ctx: ctx, q: tx, maps: []map[int64]tlog.Hash{pending, db.logs.frontier}}
	// Rows go in as multi-row INSERTs of logChunk: one statement call per
	// chunk instead of per leaf, which a batch of a thousand records
	// otherwise pays a thousand times.
	type leafRow struct {
		leaf   int64
		hashes []byte
	}
	rows := make([]leafRow, 0, len(events))
	flat := make([]byte, 0, 2*tlog.HashSize*len(events)+tlog.HashSize*64)
	for i := range events {
		e := &events[i]
		var data []byte
		if e.ID == "" {
			data, err = stubLeaf(e)
		} else {
			data, err = leafData(e)
		}
		if err != nil {
			return err
		}
		hs, err := tlog.StoredHashes(n, data, r)
		if err != nil {
			return fmt.Errorf("log: leaf %d: %w", n, err)
		}
		base := tlog.StoredHashIndex(0, n)
		start := len(flat)
		for j, h := range hs {
			pending[base+int64(j)] = h
			flat = append(flat, h[:]...)
		}
		rows = append(rows, leafRow{n, flat[start:len(flat):len(flat)]})
		n++
	}
	bound := map[string]*sql.Stmt{}
	for len(rows) > 0 {
		k := min(len(rows), logChunk)
		q := qLogInsertChunk
		switch {
		case k == logChunk:
		case db.pg != nil:
			// One statement for the rest (pgx keeps the text of each row
			// count prepared).
			q = qLogInsertHash + strings.Repeat(",(?, ?)", k-1)
		default:
			// In process, one prepared row at a time costs less than
			// preparing a statement for this count.
			k, q = 1, qLogInsertHash
		}
		args := make([]any, 0, 2*k)
		for _, row := range rows[:k] {
			args = append(args, row.leaf, row.hashes)
		}
		if db.pg != nil {
			// pgx's statement cache serves (Tx.stmt).
			err = pipe.send(ctx, tx, q, args)
		} else {
			st, ok := bound[q]
			if !ok {
				if st, err = db.wstmts.bind(ctx, tx, q); err != nil {
					return err
				}
				bound[q] = st
			}
			_, err = st.ExecContext(ctx, args...)
		}
		if err != nil {
			return err
		}
		rows = rows[k:]
	}
	idx := frontierIndexes(n)
	hs, err := r.ReadHashes(idx)
	if err != nil {
		return err
	}
	f := make(map[int64]tlog.Hash, len(idx))
	for i, x := range idx {
		f[x] = hs[i]
	}
	db.logs.next.size, db.logs.next.frontier = n, f
	return nil
}

// logCommitted makes the prepared tree the tree, after its commit.
func (db *DB) logCommitted() {
	if db.logs.next.size == db.logs.size {
		return
	}
	db.logs.size, db.logs.frontier = db.logs.next.size, db.logs.next.frontier
	root, err := tlog.TreeHash(db.logs.size, hashReader{maps: []map[int64]tlog.Hash{db.logs.frontier}})
	if err != nil {
		// The frontier holds every hash TreeHash reads; this is a bug.
		db.log.Error("log: tree hash from the frontier", "err", err, "size", db.logs.size)
		return
	}
	db.logs.head.Store(&LogHead{Size: db.logs.size, Root: [32]byte(root)})
}

// LogCaughtUp returns the tree once this instance has read every leaf any
// instance sharing its PostgreSQL database committed: another kurad's
// newest leaves reach this one's tree only under the write lock (the
// poller brings them within pgPollInterval), and a witness following that
// kurad must not be judged against a tree that is merely behind. On
// SQLite, and with the log off, it is Log.
func (db *DB) LogCaughtUp(ctx context.Context) (LogHead, error) {
	if db.pg == nil || db.logs.off {
		return db.Log(), nil
	}
	var seq sql.NullInt64
	if err := db.rdb.QueryRowContext(ctx, qMaxEventSeq).Scan(&seq); err != nil {
		return db.Log(), mapErr(err)
	}
	if seq.Int64 > db.Log().Size {
		if err := db.Update(ctx, func(*Tx) error { return nil }); err != nil {
			return db.Log(), err
		}
	}
	return db.Log(), nil
}

// Log returns the tree as of the last commit.
func (db *DB) Log() LogHead {
	if h := db.logs.head.Load(); h != nil {
		return *h
	}
	return LogHead{Root: emptyTreeHash}
}

// emptyTreeHash is RFC 6962's hash of the empty tree, SHA-256("").
var emptyTreeHash = func() (h [32]byte) {
	b, _ := hex.DecodeString("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
	copy(h[:], b)
	return h
}()

// LogOff says whether the log is off (a benchmark's baseline).
func (db *DB) LogOff() bool { return db.logs.off }

// LogOrigin is the log's name, the first line of its checkpoints.
func (db *DB) LogOrigin() string {
	if p := db.logs.origin.Load(); p != nil {
		return *p
	}
	return ""
}

// logSize checks a tree size a caller asked about: 0 means the current one.
func (db *DB) logSize(size int64) (int64, error) {
	cur := db.Log().Size
	if size == 0 {
		return cur, nil
	}
	if size < 0 || size > cur {
		return 0, kura.Errorf(kura.EInvalid, "tree size %d is outside the log (size %d)", size, cur)
	}
	return size, nil
}

// LogTreeHash is the root of the tree of the first size leaves.
func (db *DB) LogTreeHash(ctx context.Context, size int64) (tlog.Hash, error) {
	if size == 0 {
		return tlog.Hash(emptyTreeHash), nil
	}
	if _, err := db.logSize(size); err != nil {
		return tlog.Hash{}, err
	}
	return tlog.TreeHash(size, hashReader{ctx: ctx, q: db.rdb})
}

// LogInclusion proves leaf seq-1 is in the tree of size leaves (0: the
// current tree): the leaf hash, the audit path and the size used.
func (db *DB) LogInclusion(ctx context.Context, seq, size int64) (tlog.Hash, tlog.RecordProof, int64, error) {
	size, err := db.logSize(size)
	if err != nil {
		return tlog.Hash{}, nil, 0, err
	}
	if seq < 1 || seq > size {
		return tlog.Hash{}, nil, 0, kura.Errorf(kura.EInvalid, "seq %d is outside the tree of size %d", seq, size)
	}
	r := hashReader{ctx: ctx, q: db.rdb}
	leaf, err := r.ReadHashes([]int64{tlog.StoredHashIndex(0, seq-1)})
	if err != nil {
		return tlog.Hash{}, nil, 0, err
	}
	p, err := tlog.ProveRecord(size, seq-1, r)
	if err != nil {
		return tlog.Hash{}, nil, 0, mapLogErr(err)
	}
	return leaf[0], p, size, nil
}

// LogConsistency proves the tree of old leaves is a prefix of the tree of
// size leaves (0: the current tree).
func (db *DB) LogConsistency(ctx context.Context, old, size int64) (tlog.TreeProof, int64, error) {
	size, err := db.logSize(size)
	if err != nil {
		return nil, 0, err
	}
	if old < 0 || old > size {
		return nil, 0, kura.Errorf(kura.EInvalid, "old size %d is outside 0..%d", old, size)
	}
	if old == 0 || old == size {
		return tlog.TreeProof{}, size, nil
	}
	p, err := tlog.ProveTree(size, old, hashReader{ctx: ctx, q: db.rdb})
	if err != nil {
		return nil, 0, mapLogErr(err)
	}
	return p, size, nil
}

func mapLogErr(err error) error {
	var ke *kura.Error
	if errors.As(err, &ke) {
		return err
	}
	return kura.Errorf(kura.EInternal, "log: %v", err)
}

// LogLeaf is one leaf as GET /v1/log/leaves serves it.
type LogLeaf = kura.LogLeaf

// MaxLogLeaves bounds one leaves read.
const MaxLogLeaves = 1000

// LogLeaves returns leaves [start, end). visible says whether the caller
// may read an event (the feed's scope rule); nil: every event.
func (db *DB) LogLeaves(ctx context.Context, start, end int64, visible func(*kura.Event) bool) ([]LogLeaf, error) {
	size := db.Log().Size
	if start < 0 || end < start || end > size || end-start > MaxLogLeaves {
		return nil, kura.Errorf(kura.EInvalid, "leaves [%d, %d) must lie within the log (size %d), at most %d at once", start, end, size, MaxLogLeaves)
	}
	out := make([]LogLeaf, end-start)
	idx := make([]int64, len(out))
	for i := range out {
		out[i].Index = start + int64(i)
		idx[i] = tlog.StoredHashIndex(0, out[i].Index)
	}
	if len(out) == 0 {
		return out, nil
	}
	hs, err := hashReader{ctx: ctx, q: db.rdb}.ReadHashes(idx)
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Hash = [32]byte(hs[i])
	}
	rows, err := db.rdb.QueryContext(ctx, qLeafEvents, start, end)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		e, refs, err := scanLeafEvent(rows)
		if err != nil {
			return nil, mapErr(err)
		}
		if err := json.Unmarshal([]byte(refs), &e.Refs); err != nil {
			return nil, kura.Errorf(kura.EInternal, "event %d: stored refs are not a JSON object: %v", e.Seq, err)
		}
		if visible != nil && !visible(&e) {
			continue
		}
		data, err := leafData(&e)
		if err != nil {
			return nil, err
		}
		// Serve only data that hashes to the leaf: an event row changed
		// after the log saw it is not passed off as the leaf.
		if [32]byte(kurahash.LogLeafHash(data)) == out[e.Seq-1-start].Hash {
			out[e.Seq-1-start].Data = data
		}
	}
	return out, mapErr(rows.Err())
}

// LedgerLogSeq is the seq of a ledger's ledger.written event, or a
// not_found error when the feed no longer holds it.
func (db *DB) LedgerLogSeq(ctx context.Context, ledgerID string) (int64, error) {
	var seq int64
	err := db.rdb.QueryRowContext(ctx, "SELECT seq FROM events WHERE type = 'ledger.written' AND refs = ?",
		string(refsJSON(map[string]string{"ledger_id": ledgerID}))).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, kura.Errorf(kura.ENotFound, "ledger %s has no event in the log (unknown, or compacted away)", ledgerID)
	}
	if err != nil {
		return 0, mapErr(err)
	}
	return seq, nil
}

// LogLeafData reads the leaf data of one event, nil when it is gone.
func (db *DB) LogLeafData(ctx context.Context, seq int64) ([]byte, error) {
	leaves, err := db.LogLeaves(ctx, seq-1, seq, nil)
	if err != nil {
		return nil, err
	}
	return leaves[0].Data, nil
}

// RefuseWrites makes every write fail with err until AllowWrites: the log
// was rolled back or forked and nothing may be built on it unnoticed.
func (db *DB) RefuseWrites(err *kura.Error) { db.logs.gate.Store(err) }

// AllowWrites lifts RefuseWrites.
func (db *DB) AllowWrites() { db.logs.gate.Store(nil) }

// writeGate is the error writes fail with while they are refused.
func (db *DB) writeGate() error {
	if e := db.logs.gate.Load(); e != nil {
		return e
	}
	return db.pgBehindErr()
}

// LogAcknowledgement is an admin's acknowledgement of a rollback or fork.
type LogAcknowledgement = kura.LogAcknowledgement

// AcknowledgeLog records ack as an event (so as a leaf) and, when the
// witnessed checkpoint is of this log's current origin, moves the log to a
// new origin: the old one has a history this database does not hold.
// It writes while writes are refused; the caller lifts the refusal.
func (db *DB) AcknowledgeLog(ctx context.Context, ack LogAcknowledgement) (string, error) {
	newOrigin := db.LogOrigin()
	if ack.Origin == newOrigin {
		newOrigin = nextOrigin(newOrigin)
	}
	err := db.writeUngated(ctx, nil, false, func(tx *Tx) error {
		refs := map[string]string{"origin": ack.Origin, "size": strconv.FormatInt(ack.Size, 10), "root": ack.Root,
			"witness": ack.Witness, "new_origin": newOrigin}
		if err := tx.addEvent(kura.EventLogAcknowledged, kura.LogProject, kura.EventSubject(kura.LogProject, kura.EventLogAcknowledged),
			refs, objectDigest(ack)); err != nil {
			return err
		}
		seq := tx.events[len(tx.events)-1].Seq
		if _, err := tx.Exec(`INSERT INTO log_acknowledged(origin, size, root, witness, reason, seq, at) VALUES(?,?,?,?,?,?,?)
			ON CONFLICT DO NOTHING`, ack.Origin, ack.Size, ack.Root, ack.Witness, ack.Reason, seq, tx.NowString()); err != nil {
			return err
		}
		_, err := tx.Exec("UPDATE meta SET value = ? WHERE key = ?", newOrigin, metaLogOrigin)
		return err
	})
	if err != nil {
		return "", err
	}
	db.logs.origin.Store(&newOrigin)
	return newOrigin, nil
}

// nextOrigin names the log that continues origin after an acknowledged
// rollback: origin with its generation suffix counted up ("/g2", "/g3").
func nextOrigin(origin string) string {
	base, gen := origin, 1
	if i := strings.LastIndex(origin, "/g"); i > 0 {
		if n, err := strconv.Atoi(origin[i+2:]); err == nil && n > 0 {
			base, gen = origin[:i], n
		}
	}
	return base + "/g" + strconv.Itoa(gen+1)
}

// LogAcknowledged says whether a witnessed checkpoint was acknowledged.
func (db *DB) LogAcknowledged(ctx context.Context, origin string, size int64, root string) (bool, error) {
	var n int
	err := db.rdb.QueryRowContext(ctx, "SELECT count(*) FROM log_acknowledged WHERE origin = ? AND size = ? AND root = ?", origin, size, root).Scan(&n)
	if err != nil {
		return false, mapErr(err)
	}
	return n > 0, nil
}
