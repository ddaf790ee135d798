package store

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strconv"
	"sync"

	"github.com/kura-memory/kura/internal/admission"
	"github.com/kura-memory/kura/internal/kura"
	"golang.org/x/sync/singleflight"
)

// A context compile decides every node of its scope, so it reads the
// whole scope: in a scope of 10,000 nodes that read was most of a
// compile's time, and it is the same read for every compile until the
// scope changes. kurad keeps the last read of each recently compiled scope
// in memory, tagged with scopes.gen (migration 0008: triggers bump it on
// every change to the scope's nodes and relations, in the changing
// transaction). A compile uses the copy only when its own snapshot sees
// the same generation; otherwise it reads the scope and keeps that read.
// Compiles as of a past time read node versions and never use the copy.
// Compiles that miss the copy at once share one read (reading): each read
// of a scope of large nodes walks every row's pages, and four at once
// held four scopes' worth of them.

// scopeCacheMaxBytes bounds what the copies of all scopes together hold
// (snapBytes: a node without its summary costs some 500 bytes, more with
// long titles or many target files); the least recently used scope goes
// first. A scope larger than the bound is read by every compile.
const scopeCacheMaxBytes = 96 << 20

type scopeSnap struct {
	gen      int64
	prepared *admission.Scope // read-only: compiles share it
	nodes    []kura.Node      // the prepared scope's nodes
	rels     []kura.Relation
	nids     map[string]int64
	bytes    int
	used     uint64
}

// snapBytes estimates what a scope's copy holds: per node its struct, its
// strings, its decision and its entry in nids; per relation its struct
// and strings.
func snapBytes(nodes []kura.Node, rels []kura.Relation) int {
	n := 0
	for i := range nodes {
		nd := &nodes[i]
		n += 296 + 64 + 100 + 2*len(nd.Ref) + len(nd.Kind) + len(nd.ID) + len(nd.Title) + len(nd.Lifecycle) +
			len(nd.Authority) + len(nd.UpdatedAt)
		if nd.PayloadRef != nil {
			n += 16 + len(*nd.PayloadRef)
		}
		for _, f := range nd.TargetFiles {
			n += 16 + len(f)
		}
	}
	for i := range rels {
		r := &rels[i]
		n += 160 + len(r.ID) + len(r.Kind) + len(r.From) + len(r.To) + len(r.CreatedAt)
	}
	return n
}

type scopeCache struct {
	reading singleflight.Group // by sid and gen
	mu      sync.Mutex
	m       map[int64]*scopeSnap
	bytes   int
	clock   uint64
	hits    int64
}

func (c *scopeCache) get(sid, gen int64) *scopeSnap {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.m[sid]
	if s == nil || s.gen != gen {
		return nil
	}
	c.clock++
	s.used = c.clock
	c.hits++
	return s
}

func (c *scopeCache) put(sid int64, s *scopeSnap) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[int64]*scopeSnap{}
	}
	if old := c.m[sid]; old != nil {
		if old.gen > s.gen {
			return // a newer read is already kept
		}
		c.bytes -= old.bytes
		delete(c.m, sid)
	}
	if s.bytes > scopeCacheMaxBytes {
		return
	}
	for c.bytes+s.bytes > scopeCacheMaxBytes {
		var lru int64
		var oldest *scopeSnap
		for id, o := range c.m {
			if oldest == nil || o.used < oldest.used {
				lru, oldest = id, o
			}
		}
		c.bytes -= oldest.bytes
		delete(c.m, lru)
	}
	c.clock++
	s.used = c.clock
	c.m[sid] = s
	c.bytes += s.bytes
}

// currentScope returns scope as it is in the snapshot of rtx (every node,
// without its summary, with the target files a compile explains; the
// search index ranks a query, so no other text is kept; and the deciding
// relations), prepared for compiles, and each node's nid (to read the
// summaries of the items a bundle keeps), from the copy of the snapshot's
// generation when there is one. Relations created after asOf are left
// out, as scopeMemory leaves them.
func (db *DB) currentScope(ctx context.Context, rtx *sql.Tx, scope, asOf string) (*admission.Scope, map[string]int64, error) {
	var sid, gen int64
	err := rtx.QueryRowContext(ctx, "SELECT sid, gen FROM scopes WHERE name = ?", scope).Scan(&sid, &gen)
	if errors.Is(err, sql.ErrNoRows) {
		return admission.Prepare(nil, nil), nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	s := db.scopes.get(sid, gen)
	if s == nil {
		read := func() (any, error) {
			// Every relation that may decide, whatever its time: the
			// filter by asOf below is per compile.
			read, err := scopeMemory(ctx, rtx, scope, "9999", true, true, nil, nil)
			if err != nil {
				return nil, err
			}
			s := &scopeSnap{gen: gen, prepared: admission.Prepare(read.nodes, read.rels), nodes: read.nodes, rels: read.rels,
				nids: read.nids, bytes: snapBytes(read.nodes, read.rels)}
			db.scopes.put(sid, s)
			return s, nil
		}
		// Another compile's read of the same generation is this
		// snapshot's scope too; if it failed for its own reasons (its
		// client went away), this compile reads on its own.
		v, err, _ := db.scopes.reading.Do(strconv.FormatInt(sid, 10)+"/"+strconv.FormatInt(gen, 10), read)
		if err != nil && ctx.Err() == nil {
			v, err = read()
		}
		if err != nil {
			return nil, nil, err
		}
		s = v.(*scopeSnap)
	}
	for i := range s.rels {
		if s.rels[i].CreatedAt > asOf {
			// Only a clock set back puts a relation after now: prepare a
			// copy without the relations of the future.
			var rels []kura.Relation
			for _, r := range s.rels {
				if r.CreatedAt <= asOf {
					rels = append(rels, r)
				}
			}
			return admission.Prepare(slices.Clone(s.nodes), rels), s.nids, nil
		}
	}
	return s.prepared, s.nids, nil
}
