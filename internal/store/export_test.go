package store

import (
	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/recall"
)

// SetReviseFault lets tests fail a revise of db between its steps.
func (db *DB) SetReviseFault(f func(step string) error) { db.cfg.Hooks.Revise = f }

// Path is the database file, for tests that inspect it directly.
func (db *DB) Path() string { return db.cfg.Path }

// SetBackupHook lets tests act at the stages of a backup ("snapshot",
// "manifest").
func (db *DB) SetBackupHook(f func(stage string)) { db.cfg.Hooks.Backup = f }

// SearchFields are the texts search reads of a node (node_text), one per
// index column, with the reason code of each.
func SearchFields(n *kura.Node) []recall.Field {
	t := textOf(n)
	return t.fields()
}

// SearchWeights are the index columns' bm25 weights, in column order.
func SearchWeights() []float64 { return ftsWeights }

// QueryWords are the words search matches of a query.
func QueryWords(q string) []string { return queryWords(q) }
