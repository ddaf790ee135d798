package store

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"sync"

	"github.com/kura-memory/kura/internal/admission"
	"github.com/kura-memory/kura/internal/kura"
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

// scopeCacheMaxNodes bounds the nodes kept for all scopes together (a
// node costs a few hundred bytes); the least recently used scope goes
// first.
const scopeCacheMaxNodes = 250_000

type scopeSnap struct {
	gen      int64
	prepared *admission.Scope // read-only: compiles share it
	nodes    []kura.Node      // the prepared scope's nodes
	rels     []kura.Relation
	used     uint64
}

type scopeCache struct {
	mu    sync.Mutex
	m     map[int64]*scopeSnap
	nodes int
	clock uint64
	hits  int64
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
		c.nodes -= len(old.nodes)
		delete(c.m, sid)
	}
	if len(s.nodes) > scopeCacheMaxNodes {
		return
	}
	for c.nodes+len(s.nodes) > scopeCacheMaxNodes {
		var lru int64
		var oldest *scopeSnap
		for id, o := range c.m {
			if oldest == nil || o.used < oldest.used {
				lru, oldest = id, o
			}
		}
		c.nodes -= len(oldest.nodes)
		delete(c.m, lru)
	}
	c.clock++
	s.used = c.clock
	c.m[sid] = s
	c.nodes += len(s.nodes)
}

// currentScope returns scope as it is in the snapshot of rtx (every node,
// with the target files a compile explains; the search index ranks a
// query, so no other text is kept; and the deciding relations),
// prepared for compiles, from the copy of the snapshot's generation when
// there is one. Relations created after asOf are left out, as
// scopeMemory leaves them. nil: the scope holds nothing.
func (db *DB) currentScope(ctx context.Context, rtx *sql.Tx, scope, asOf string) (*admission.Scope, error) {
	var sid, gen int64
	err := rtx.QueryRowContext(ctx, "SELECT sid, gen FROM scopes WHERE name = ?", scope).Scan(&sid, &gen)
	if errors.Is(err, sql.ErrNoRows) {
		return admission.Prepare(nil, nil), nil
	}
	if err != nil {
		return nil, err
	}
	s := db.scopes.get(sid, gen)
	if s == nil {
		// Every relation that may decide, whatever its time: the filter by
		// asOf below is per compile.
		nodes, rels, err := scopeMemory(ctx, rtx, scope, "9999", true, true, nil)
		if err != nil {
			return nil, err
		}
		s = &scopeSnap{gen: gen, prepared: admission.Prepare(nodes, rels), nodes: nodes, rels: rels}
		db.scopes.put(sid, s)
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
			return admission.Prepare(slices.Clone(s.nodes), rels), nil
		}
	}
	return s.prepared, nil
}
