package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kura-memory/kura/internal/kura"
)

// Embedder turns texts into vectors with one model: an OpenAI-compatible
// embeddings endpoint (internal/embed). The store asks it after commits
// (EmbedWorker) and at search time, never inside a write.
type Embedder interface {
	Model() string
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// maxEmbedText bounds the text embedded for a node, in bytes: about 500
// tokens, what small embedding models (all-minilm: 256 or 512 tokens) read
// before they cut the rest off themselves.
const maxEmbedText = 2048

// embedText is the text of a node that is embedded: its title and summary,
// what the node says (files and labels are for the words engine). A node
// with neither is embedded by its kind and id, the only words it has.
func embedText(c *embedCandidate) string {
	title, summary := strings.TrimSpace(c.title), strings.TrimSpace(c.summary)
	t := summary
	switch {
	case title != "" && summary != "":
		t = title + "\n" + summary
	case title != "":
		t = title
	case summary == "":
		t = c.kind + " " + c.id
	}
	return truncate(t, maxEmbedText)
}

func textHash(text string) []byte {
	h := sha256.Sum256([]byte(text))
	return h[:]
}

// encodeVector writes v as float32 little-endian.
func encodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// decodeVector reads a float32 little-endian vector into dst (grown as
// needed).
func decodeVector(dst []float32, b []byte) ([]float32, error) {
	if len(b)%4 != 0 || len(b) == 0 {
		return nil, fmt.Errorf("vector of %d bytes", len(b))
	}
	n := len(b) / 4
	if cap(dst) < n {
		dst = make([]float32, n)
	}
	dst = dst[:n]
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return dst, nil
}

const (
	qUpsertVector = `INSERT INTO node_vectors(nid, sid, model, dims, version, text_hash, vec, embedded_at) VALUES(?,?,?,?,?,?,?,?)
		ON CONFLICT(nid) DO UPDATE SET sid = excluded.sid, model = excluded.model, dims = excluded.dims, version = excluded.version,
		text_hash = excluded.text_hash, vec = excluded.vec, embedded_at = excluded.embedded_at`
	// A new version whose text is unchanged keeps its vector.
	qTouchVector = "UPDATE node_vectors SET version = ? WHERE nid = ? AND model = ? AND text_hash = ?"
)

// embedCandidate is a node that may need a vector, with what is stored
// for it.
type embedCandidate struct {
	nid, sid, version int64
	kind, id          string
	title, summary    string
	vModel            sql.NullString
	vVersion          sql.NullInt64
	vHash             []byte
}

// current reports whether the stored vector is of model and the node's
// current version.
func (c *embedCandidate) current(model string) bool {
	return c.vModel.Valid && c.vModel.String == model && c.vVersion.Int64 == c.version
}

// The worker's queries join node_vectors through node_vectors_state, which
// holds every column they read: SQLite would otherwise look rows up by
// rowid and read each node's 1.5 KB vector to compare two integers.
// PostgreSQL takes no such hint (vectorsJoin leaves it out); its planner
// chooses from the same indexes.
const candidateCols = "n.nid, n.sid, n.version, n.kind, n.id, n.title, n.summary, v.model, v.version, v.text_hash"

func scanCandidates(rows *sql.Rows) ([]embedCandidate, error) {
	defer rows.Close()
	var out []embedCandidate
	for rows.Next() {
		var c embedCandidate
		if err := rows.Scan(&c.nid, &c.sid, &c.version, &c.kind, &c.id, &c.title, &c.summary, &c.vModel, &c.vVersion, &c.vHash); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// withReadConn runs fn on one read connection and then hands the pages it
// cached back: the embedding worker's looks over every node and an index
// build read far more than any request does, and their pages would
// otherwise stay in that connection's cache, in kurad's memory, until it
// closes.
func (db *DB) withReadConn(ctx context.Context, fn func(*sql.Conn) error) error {
	c, err := db.rdb.Conn(ctx)
	if err != nil {
		return mapErr(err)
	}
	defer c.Close()
	err = fn(c)
	if db.pg != nil {
		return err // the server keeps its own cache
	}
	if _, serr := c.ExecContext(context.WithoutCancel(ctx), "PRAGMA shrink_memory"); err == nil && serr != nil {
		err = mapErr(serr)
	}
	return err
}

// changedNodes returns the nodes named by memory events with after < seq
// <= upto, as they are now, with their stored vectors. A node written
// several times comes once.
func changedNodes(ctx context.Context, q queryer, pg bool, after, upto int64) ([]embedCandidate, error) {
	rows, err := q.QueryContext(ctx, `WITH ev AS (
			SELECT DISTINCT project, json_extract(refs, '$.ref') AS ref FROM events
			WHERE seq > ? AND seq <= ? AND type IN ('memory.node', 'memory.lifecycle'))
		SELECT `+candidateCols+` FROM ev
		JOIN scopes s ON s.name = ev.project
		JOIN nodes n ON n.sid = s.sid AND n.kind = substr(ev.ref, 1, instr(ev.ref, ':') - 1) AND n.id = substr(ev.ref, instr(ev.ref, ':') + 1)
		`+vectorsJoin(pg), after, upto)
	if err != nil {
		return nil, err
	}
	cs, err := scanCandidates(rows)
	if err != nil {
		return nil, err
	}
	seen := make(map[int64]bool, len(cs))
	out := cs[:0]
	for _, c := range cs {
		if !seen[c.nid] {
			seen[c.nid] = true
			out = append(out, c)
		}
	}
	return out, nil
}

// staleNodes returns up to limit nodes after nid whose vector is missing,
// of another model or of an older version, in nid order.
func staleNodes(ctx context.Context, q queryer, pg bool, model string, after int64, limit int) ([]embedCandidate, error) {
	rows, err := q.QueryContext(ctx, "SELECT "+candidateCols+` FROM nodes n `+vectorsJoin(pg)+`
		WHERE n.nid > ? AND (v.nid IS NULL OR v.model <> ? OR v.version <> n.version) ORDER BY n.nid LIMIT ?`, after, model, limit)
	if err != nil {
		return nil, err
	}
	return scanCandidates(rows)
}

// countStale counts the nodes staleNodes would find.
func countStale(ctx context.Context, q queryer, pg bool, model string) (int64, error) {
	var n int64
	err := q.QueryRowContext(ctx, `SELECT count(*) FROM nodes n `+vectorsJoin(pg)+`
		WHERE v.nid IS NULL OR v.model <> ? OR v.version <> n.version`, model).Scan(&n)
	return n, err
}

// vectorsJoin joins a node n to its stored vector v (none: NULLs).
func vectorsJoin(pg bool) string {
	if pg {
		return "LEFT JOIN node_vectors v ON v.nid = n.nid"
	}
	return "LEFT JOIN node_vectors v INDEXED BY node_vectors_state ON v.nid = n.nid"
}

// nodeVector is a vector to store.
type nodeVector struct {
	nid, sid, version int64
	hash              []byte
	vec               []float32
}

// putVectors stores vectors of model in one transaction, then brings the
// in-memory indexes built so far up to date. It writes no event: vectors
// are derived from nodes, as the word index is, and say nothing new.
func (db *DB) putVectors(ctx context.Context, model string, vs []nodeVector) error {
	err := db.Update(ctx, func(tx *Tx) error {
		now := tx.NowString()
		for _, v := range vs {
			if _, err := tx.Exec(qUpsertVector, v.nid, v.sid, model, len(v.vec), v.version, v.hash, encodeVector(v.vec), now); err != nil {
				return fmt.Errorf("store vector: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, v := range vs {
		db.vecs.upsert(v.sid, model, v.nid, v.vec)
	}
	return nil
}

// touchVectors moves vectors whose text did not change to the node's new
// version.
func (db *DB) touchVectors(ctx context.Context, model string, cs []embedCandidate) error {
	return db.Update(ctx, func(tx *Tx) error {
		for _, c := range cs {
			if _, err := tx.Exec(qTouchVector, c.version, c.nid, model, c.vHash); err != nil {
				return fmt.Errorf("touch vector: %w", err)
			}
		}
		return nil
	})
}

// embedState is what the store knows of its embedder, for /v1/info and
// the metrics.
type embedState struct {
	started  atomic.Bool // a request was answered or failed
	failing  atomic.Bool
	dims     atomic.Int64
	pending  atomic.Int64
	embedded atomic.Int64
	errors   atomic.Int64
	skipped  atomic.Int64
	queryLog atomic.Int64 // when a search's embedding failure was last logged (unix ns)

	mu        sync.Mutex
	lastErr   string
	lastErrAt time.Time
}

func (s *embedState) ok(dims int) {
	s.started.Store(true)
	s.failing.Store(false)
	if dims > 0 {
		s.dims.Store(int64(dims))
	}
}

// fail records a failed request of the worker: the embedder is failing
// until the worker's next request succeeds.
func (s *embedState) fail(err error, at time.Time) {
	s.started.Store(true)
	s.failing.Store(true)
	s.note(err, at)
}

// note counts a failed request without judging the embedder by it (a
// search's query: the worker's next request decides the state).
func (s *embedState) note(err error, at time.Time) {
	s.errors.Add(1)
	s.mu.Lock()
	s.lastErr, s.lastErrAt = publicError(err), at
	s.mu.Unlock()
}

// publicError is what every reader may see of an embedder error: its kind
// and status (embed.Error.Public), not the endpoint's words, which may
// quote node texts of any scope, nor its address. The log has the rest.
func publicError(err error) string {
	var p interface{ Public() string }
	if errors.As(err, &p) {
		return p.Public()
	}
	return "embedder request failed"
}

// EmbedderInfo is the embedder's state, nil when none is configured.
func (db *DB) EmbedderInfo() *kura.EmbedderInfo {
	e := db.cfg.Embedder
	if e == nil {
		return nil
	}
	s := &db.embed
	info := &kura.EmbedderInfo{Model: e.Model(), Dims: int(s.dims.Load()), State: "starting",
		Pending: s.pending.Load(), Embedded: s.embedded.Load(), Errors: s.errors.Load(), Refused: s.skipped.Load()}
	if s.started.Load() {
		info.State = "ok"
		if s.failing.Load() {
			info.State = "failing"
		}
	}
	s.mu.Lock()
	if s.lastErr != "" {
		info.LastError, info.LastErrorAt = s.lastErr, kura.FormatTime(s.lastErrAt)
	}
	s.mu.Unlock()
	return info
}

// modelDims is the dimension count of a stored vector of model,
// 0 when there is none.
func (db *DB) modelDims(ctx context.Context, model string) (int, error) {
	var dims int
	err := db.rdb.QueryRowContext(ctx, "SELECT dims FROM node_vectors WHERE model = ? LIMIT 1", model).Scan(&dims)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return dims, err
}

// sameHash reports whether a stored hash is the hash of text.
func sameHash(stored []byte, text string) bool {
	return len(stored) > 0 && bytes.Equal(stored, textHash(text))
}
