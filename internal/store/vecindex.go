package store

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"math/bits"
	"runtime/debug"
	"slices"
	"sync"
)

// The semantic index. Brute-force cosine over float32 vectors costs
// 100,000 × 384 multiply-adds a query (40 ms on one x86 core of the
// development machine; more on a Raspberry Pi) and 150 MB of RAM to hold
// them. Instead each scope keeps, in memory, one
// bit per dimension of every vector: the sign of the normalised vector
// minus the scope's mean vector (centring spreads the signs, which raw
// embeddings share many of). Hamming distance between bit codes tracks
// the angle between vectors, so a pass over the codes (six XOR-popcounts
// a node at 384 dimensions) picks a few thousand candidates; the
// unquantised query against their codes (refine) orders them; and exact
// cosine over the stored float vectors of the best few hundred, read from
// SQLite, ranks those.
// At 100,000 nodes of 384 dimensions the codes are 4.8 MB, the node keys
// and the key-to-slot map about 5 MB more.
//
// An index is built on a scope's first semantic search, not at start, so
// an idle kurad holds none; the embedding worker keeps built ones up to
// date after it stores vectors.

// binaryIndex holds the sign codes of one scope's vectors of one model.
type binaryIndex struct {
	dims, words int
	mean        []float32 // of the normalised vectors at build
	nids        []int64
	codes       []uint64 // words per node, node i at codes[i*words:]
	slot        map[int64]int32
	built       int // nodes at build; a small index is rebuilt as it grows
}

func newBinaryIndex(dims int, mean []float32) *binaryIndex {
	words := (dims + 63) / 64
	return &binaryIndex{dims: dims, words: words, mean: mean, slot: map[int64]int32{}}
}

// code writes the sign code of v into dst (words long).
func (x *binaryIndex) code(dst []uint64, v []float32) {
	clear(dst)
	norm := vecNorm(v)
	if norm == 0 {
		norm = 1
	}
	for i, f := range v {
		c := f / norm
		if x.mean != nil {
			c -= x.mean[i]
		}
		if c > 0 {
			dst[i>>6] |= 1 << (uint(i) & 63)
		}
	}
}

// upsert adds or replaces the vector of nid. A vector of other dimensions
// is not indexed: it cannot be compared with the others.
func (x *binaryIndex) upsert(nid int64, v []float32) {
	if len(v) != x.dims {
		return
	}
	s, ok := x.slot[nid]
	if !ok {
		s = int32(len(x.nids))
		x.slot[nid] = s
		x.nids = append(x.nids, nid)
		x.codes = append(x.codes, make([]uint64, x.words)...)
	}
	x.code(x.codes[int(s)*x.words:int(s+1)*x.words], v)
}

func (x *binaryIndex) len() int { return len(x.nids) }

// needsRebuild reports whether the index has grown so much since its
// mean was taken that the mean may no longer be the scope's. Past a few
// thousand vectors the mean is settled, and the exact re-ranking makes a
// slightly-off mean cost a little recall at most.
func (x *binaryIndex) needsRebuild() bool {
	return x.built < 4096 && len(x.nids) > 2*x.built+64
}

// rankScratch is the per-query memory of rank, pooled: at 100,000 nodes
// it is 600 KB a query.
type rankScratch struct {
	dist  []uint16
	order []int32
	count []int32
	code  []uint64
	// refine's
	lut     []float32
	score   []float32
	idx     []int32
	refined []int32
}

var rankScratchPool = sync.Pool{New: func() any { return new(rankScratch) }}

// rank returns the slots of every node, nearest to q first by Hamming
// distance of the codes (a counting sort: distances are at most dims;
// equal distances keep slot order). The result lives in sc.
func (x *binaryIndex) rank(q []float32, sc *rankScratch) []int32 {
	n := len(x.nids)
	if cap(sc.code) < x.words {
		sc.code = make([]uint64, x.words)
	}
	qc := sc.code[:x.words]
	x.code(qc, q)
	if cap(sc.dist) < n {
		sc.dist = make([]uint16, n)
		sc.order = make([]int32, n)
	}
	dist, order := sc.dist[:n], sc.order[:n]
	if cap(sc.count) < x.dims+2 {
		sc.count = make([]int32, x.dims+2)
	}
	count := sc.count[:x.dims+2]
	clear(count)
	codes := x.codes
	switch x.words {
	case 6: // 384 dimensions (all-minilm), unrolled
		q0, q1, q2, q3, q4, q5 := qc[0], qc[1], qc[2], qc[3], qc[4], qc[5]
		for i := range n {
			c := codes[i*6 : i*6+6 : i*6+6]
			d := bits.OnesCount64(c[0]^q0) + bits.OnesCount64(c[1]^q1) + bits.OnesCount64(c[2]^q2) +
				bits.OnesCount64(c[3]^q3) + bits.OnesCount64(c[4]^q4) + bits.OnesCount64(c[5]^q5)
			dist[i] = uint16(d)
			count[d+1]++
		}
	default:
		w := x.words
		for i := range n {
			d := 0
			for j, c := range codes[i*w : i*w+w] {
				d += bits.OnesCount64(c ^ qc[j])
			}
			dist[i] = uint16(d)
			count[d+1]++
		}
	}
	for d := 1; d < len(count); d++ {
		count[d] += count[d-1]
	}
	for i := range n {
		d := dist[i]
		order[count[d]] = int32(i)
		count[d]++
	}
	return order
}

// vecNorm is the Euclidean norm of v.
func vecNorm(v []float32) float32 {
	var s float32
	for _, f := range v {
		s += f * f
	}
	return float32(math.Sqrt(float64(s)))
}

// cosine is the cosine of the angle between a and b (0 when either is
// zero or they differ in length).
func cosine(a, b []float32) float64 {
	if len(a) != len(b) {
		return 0
	}
	var dot, na, nb float32
	for i := range a {
		dot += a[i] * b[i]
		na += a[i] * a[i]
		nb += b[i] * b[i]
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return float64(dot) / math.Sqrt(float64(na)*float64(nb))
}

// scopeIndex is the semantic index of one scope, built on first use.
type scopeIndex struct {
	mu    sync.RWMutex
	model string
	idx   *binaryIndex // nil until built
}

// vectorIndexes are the built semantic indexes, by scope key.
type vectorIndexes struct {
	mu      sync.Mutex
	byScope map[int64]*scopeIndex
}

func (vi *vectorIndexes) entry(sid int64, model string, create bool) *scopeIndex {
	vi.mu.Lock()
	defer vi.mu.Unlock()
	e := vi.byScope[sid]
	if e == nil || e.model != model {
		if !create {
			return nil
		}
		if vi.byScope == nil {
			vi.byScope = map[int64]*scopeIndex{}
		}
		e = &scopeIndex{model: model}
		vi.byScope[sid] = e
	}
	return e
}

// upsert brings a built index of sid up to date with a stored vector; a
// scope whose index was not built yet reads the vector when it is.
func (vi *vectorIndexes) upsert(sid int64, model string, nid int64, v []float32) {
	e := vi.entry(sid, model, false)
	if e == nil {
		return
	}
	e.mu.Lock()
	if e.idx != nil {
		e.idx.upsert(nid, v)
	}
	e.mu.Unlock()
}

// scopeVectors returns the index of scope sid for model and dims,
// building (or rebuilding) it first when needed.
func (db *DB) scopeVectors(ctx context.Context, sid int64, model string, dims int) (*scopeIndex, error) {
	e := db.vecs.entry(sid, model, true)
	e.mu.RLock()
	ready := e.idx != nil && e.idx.dims == dims && !e.idx.needsRebuild()
	e.mu.RUnlock()
	if ready {
		return e, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	// Held while the vectors are read: a vector the worker stores
	// meanwhile is either in what is read or applied (upsert waits for
	// the lock) after it, never lost between the two.
	if e.idx == nil || e.idx.dims != dims || e.idx.needsRebuild() {
		idx, err := db.buildIndex(ctx, sid, model, dims)
		if err != nil {
			return nil, err
		}
		e.idx = idx
		if idx.len() >= bigIndex {
			// The build read every vector of the scope through the driver,
			// which copies each: at 100,000 nodes 150 MB of garbage, which
			// kurad's GOGC=300 would let grow the heap to 100 MB and more
			// before collecting it. Hand it back now; builds are rare.
			debug.FreeOSMemory()
		}
	}
	return e, nil
}

// bigIndex is the size of an index whose build is worth returning memory
// to the system for.
const bigIndex = 10000

// nearest returns up to limit node keys, nearest to q first by their
// codes, and how many nodes the index holds. The Hamming distance picks
// wide candidates; the query itself, unquantised, against their codes
// (refine) orders them.
func (e *scopeIndex) nearest(q []float32, limit int) ([]int64, int) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	x := e.idx
	if x == nil || len(q) != x.dims {
		return nil, 0
	}
	sc := rankScratchPool.Get().(*rankScratch)
	defer rankScratchPool.Put(sc)
	order := x.rank(q, sc)
	order = x.refine(q, order[:min(len(order), max(refineWidth*limit, minRefine))], sc)
	out := make([]int64, min(limit, len(order)))
	for i := range out {
		out[i] = x.nids[order[i]]
	}
	return out, x.len()
}

// How many candidates by Hamming distance refine orders: refineWidth a
// result asked for, at least minRefine.
const (
	refineWidth = 8
	minRefine   = 4096
)

// refine orders slots by the dot product of the query (normalised and
// centred as the codes were, but not quantised) with each code read as a
// ±1 vector, best first (ties: slot order). It ranks much closer to the
// exact cosine than the Hamming distance, whose query is quantised too;
// per-byte tables of partial sums make it 8 lookups a code word. slots is
// reordered in place.
func (x *binaryIndex) refine(q []float32, slots []int32, sc *rankScratch) []int32 {
	nb := x.words * 8
	if cap(sc.lut) < nb*256 {
		sc.lut = make([]float32, nb*256)
	}
	lut := sc.lut[:nb*256]
	norm := vecNorm(q)
	if norm == 0 {
		norm = 1
	}
	for j := range nb {
		t := lut[j*256 : j*256+256]
		t[0] = 0
		for b := 1; b < 256; b++ {
			i := 8*j + bits.TrailingZeros8(uint8(b))
			var c float32
			if i < x.dims {
				c = q[i] / norm
				if x.mean != nil {
					c -= x.mean[i]
				}
			}
			t[b] = t[b&(b-1)] + c
		}
	}
	if cap(sc.score) < len(slots) {
		sc.score = make([]float32, len(slots))
	}
	score := sc.score[:len(slots)]
	for k, s := range slots {
		var sum float32
		for w, c := range x.codes[int(s)*x.words : int(s+1)*x.words] {
			l := lut[w*8*256:]
			sum += l[c&0xff] + l[256+(c>>8)&0xff] + l[512+(c>>16)&0xff] + l[768+(c>>24)&0xff] +
				l[1024+(c>>32)&0xff] + l[1280+(c>>40)&0xff] + l[1536+(c>>48)&0xff] + l[1792+(c>>56)]
		}
		score[k] = sum
	}
	idx := sc.idx[:0]
	for k := range slots {
		idx = append(idx, int32(k))
	}
	sc.idx = idx
	slices.SortFunc(idx, func(a, b int32) int {
		if score[a] != score[b] {
			if score[a] > score[b] {
				return -1
			}
			return 1
		}
		return int(slots[a] - slots[b])
	})
	out := sc.refined[:0]
	for _, k := range idx {
		out = append(out, slots[k])
	}
	sc.refined = out
	return out
}

// meanSample is how many vectors the mean of a new index is taken from:
// enough to settle it, and a fraction of the read a large scope costs.
const meanSample = 4096

// buildIndex reads the stored vectors of scope sid, model and dims into a
// new index: the mean of a sample first, then every code.
func (db *DB) buildIndex(ctx context.Context, sid int64, model string, dims int) (idx *binaryIndex, err error) {
	err = db.withReadConn(ctx, func(c *sql.Conn) error {
		tx, err := c.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return err
		}
		defer tx.Rollback()
		idx, err = readIndex(ctx, tx, sid, model, dims)
		return err
	})
	return idx, mapErr(err)
}

// readIndex reads an index in one read transaction (one snapshot).
func readIndex(ctx context.Context, tx *sql.Tx, sid int64, model string, dims int) (*binaryIndex, error) {
	read := func(limit int, each func(nid int64, v []float32)) error {
		rows, err := tx.QueryContext(ctx, "SELECT nid, vec FROM node_vectors WHERE sid = ? AND model = ? AND dims = ? LIMIT ?", sid, model, dims, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		var buf []float32
		var raw sql.RawBytes // the driver's copy, not another
		for rows.Next() {
			var nid int64
			if err := rows.Scan(&nid, &raw); err != nil {
				return err
			}
			if buf, err = decodeVector(buf, raw); err != nil {
				return fmt.Errorf("node %d: %w", nid, err)
			}
			each(nid, buf)
		}
		return rows.Err()
	}
	mean := make([]float64, dims)
	n := 0
	if err := read(meanSample, func(_ int64, v []float32) {
		norm := vecNorm(v)
		if norm == 0 {
			return
		}
		for i, f := range v {
			mean[i] += float64(f / norm)
		}
		n++
	}); err != nil {
		return nil, fmt.Errorf("build semantic index: %w", err)
	}
	var m []float32
	if n > 0 {
		m = make([]float32, dims)
		for i := range m {
			m[i] = float32(mean[i] / float64(n))
		}
	}
	idx := newBinaryIndex(dims, m)
	// Every row: the largest LIMIT both engines take (PostgreSQL refuses -1).
	if err := read(math.MaxInt, idx.upsert); err != nil {
		return nil, fmt.Errorf("build semantic index: %w", err)
	}
	idx.built = idx.len()
	return idx, nil
}
