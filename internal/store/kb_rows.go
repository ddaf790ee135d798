package store

import (
	"strings"
)

// Multi-row inserts: a batch of 1,000 entries writes some 5,000 entry,
// index and history rows, and one statement per row would cost the writer
// more in calls than SQLite spends inserting. Full chunks use a statement
// prepared at Open; the remainder one prepared for the transaction.
var kbRows = map[string]*multiRow{
	"entries": newMultiRow("INSERT INTO kb_entries(eid, sp, id, identifier, keys, value, version, created_at, updated_at) VALUES ", 9, 100),
	"terms":   newMultiRow("INSERT INTO kb_terms(rowid, terms) VALUES ", 2, 250),
	"history": newMultiRow("INSERT INTO kb_history(sp, identifier, version, op, entry_id, keys, value, at) VALUES ", 8, 100),
	"df":      newMultiRow("INSERT INTO kb_df(sp, kind, term, n) VALUES ", 4, 250, " ON CONFLICT(sp, kind, term) DO UPDATE SET n = kb_df.n + excluded.n"),
}

// kbFTSRows fill SQLite's kb_fts (PostgreSQL's: pgKBFTSRows).
var kbFTSRows = newMultiRow("INSERT INTO kb_fts(rowid, identifier, keys, value) VALUES ", 4, 100)

// multiRow is an INSERT of up to chunk rows of cols values each.
type multiRow struct {
	head, tail  string
	cols, chunk int
	full        string // the statement for a full chunk
}

func newMultiRow(head string, cols, chunk int, tail ...string) *multiRow {
	m := &multiRow{head: head, tail: strings.Join(tail, ""), cols: cols, chunk: chunk}
	m.full = m.sql(chunk)
	return m
}

func (m *multiRow) sql(rows int) string {
	row := "(?" + strings.Repeat(",?", m.cols-1) + ")"
	return m.head + row + strings.Repeat(","+row, rows-1) + m.tail
}

// exec inserts args, a whole number of rows of m.cols values.
func (m *multiRow) exec(tx *Tx, args []any) error {
	per := m.cols * m.chunk
	for len(args) > 0 {
		n := min(len(args), per)
		q := m.full
		if n < per {
			q = m.sql(n / m.cols)
		}
		if _, err := tx.Exec(q, args[:n]...); err != nil {
			return err
		}
		args = args[n:]
	}
	return nil
}
