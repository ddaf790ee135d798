package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/recall"
)

// SetReviseFault lets tests fail a revise of db between its steps.
func (db *DB) SetReviseFault(f func(step string) error) { db.cfg.Hooks.Revise = f }

// SetWriterStallAfter sets how long a transaction runs before
// WriterHealth reports it.
func (db *DB) SetWriterStallAfter(d time.Duration) { db.stallAfter = d }

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

// PrepareWriterStatements prepares every statement the writer keeps
// prepared, on a read connection (preparing runs nothing): the writer
// prepares each as it first runs it, so a statement no test runs would
// otherwise be checked by no one.
func (db *DB) PrepareWriterStatements() error {
	qs := writeStatements()
	if db.pg == nil {
		qs = append(qs, sqliteSearchStatements()...)
	}
	for _, q := range qs {
		s, err := db.rdb.Prepare(q)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", q, err)
		}
		s.Close()
	}
	return nil
}

// WriterStatementsPrepared is how many statements the writer holds
// prepared on its connection, read inside a write (the writer's goroutine
// owns them).
func (db *DB) WriterStatementsPrepared(ctx context.Context) (int, error) {
	var n int
	err := db.Update(ctx, func(tx *Tx) error {
		n = len(tx.db.wstmts.prepared)
		return nil
	})
	return n, err
}

// NodeText is node_text's row of a node: the view the index is filled
// from, read on the store's own engine.
func (db *DB) NodeText(ctx context.Context, scope, kind, id string) ([6]string, error) {
	var cols [6]sql.NullString
	err := db.rdb.QueryRowContext(ctx, "SELECT t.title, t.ident, t.files, t.summary, t.payload, t.meta FROM node_text t"+
		" JOIN nodes n ON n.nid = t.nid JOIN scopes s ON s.sid = n.sid WHERE s.name = ? AND n.kind = ? AND n.id = ?",
		scope, kind, id).Scan(&cols[0], &cols[1], &cols[2], &cols[3], &cols[4], &cols[5])
	var out [6]string
	for i, c := range cols {
		out[i] = c.String
	}
	return out, err
}

// JSONEach is json_each(doc)'s rows as [key, value] (value "<null>" for
// SQL NULL), on the store's own engine.
func (db *DB) JSONEach(ctx context.Context, doc string) ([][2]string, error) {
	rows, err := db.rdb.QueryContext(ctx, "SELECT CAST(key AS TEXT), CAST(value AS TEXT) FROM json_each(?)", doc)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][2]string
	for rows.Next() {
		var k, v sql.NullString
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		if !v.Valid {
			v.String = "<null>"
		}
		out = append(out, [2]string{k.String, v.String})
	}
	return out, rows.Err()
}

// ReadSetting is a setting as a read transaction (a search's, a
// compile's) sees it.
func (db *DB) ReadSetting(ctx context.Context, name string) (string, error) {
	tx, err := db.beginRead(ctx)
	if err != nil {
		return "", err
	}
	defer tx.Rollback()
	var v string
	err = tx.QueryRowContext(ctx, "SELECT current_setting(?)", name).Scan(&v)
	return v, err
}

// PoolSetting is a setting of a read pool connection outside any
// transaction.
func (db *DB) PoolSetting(ctx context.Context, name string) (string, error) {
	var v string
	err := db.rdb.QueryRowContext(ctx, "SELECT current_setting(?)", name).Scan(&v)
	return v, err
}
