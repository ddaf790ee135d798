package store

import (
	"github.com/kura-memory/kura/internal/kb"
	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/recall"
)

// The knowledge base's search indexes on PostgreSQL
// (migrations_pg/0002_search.sql). kb_terms is written by SQLite's
// statements (its tsvector is generated from the same text); kb_fts holds
// a document made here (search_pg.go: pgDoc), so its writes and every
// match differ from SQLite's.

// kbFTSLabels are the weight classes of kb_fts's fields, in kb's field
// order (identifier, keys, value).
var kbFTSLabels = []byte("ABC")

// kbFTSColumns name kb_fts's fields for a column filter.
var kbFTSColumns = map[string]byte{"identifier": 'A', "keys": 'B', "value": 'C'}

// kbRankWeights is ts_rank's weights for kb.Weights.
var kbRankWeights = func() string {
	w := map[byte]float64{}
	for i, l := range kbFTSLabels {
		w[l] = kb.Weights[i]
	}
	return pgWeights(w)
}()

// pgKBFTSRows fill PostgreSQL's kb_fts.
var pgKBFTSRows = newMultiRow("INSERT INTO kb_fts(rowid, doc) VALUES ", 2, 250)

const qPGKBUpdateFTS = "UPDATE kb_fts SET doc = CAST(? AS tsvector) WHERE rowid = ?"

// kbFTSDoc is the kb_fts document of an entry.
func kbFTSDoc(e *kura.KBEntry) string {
	return pgDoc([]string{e.Identifier, keysText(e.Keys), e.Value}, kbFTSLabels)
}

// kbFTSRows are the multi-row inserts of the engine's kb_fts.
func (tx *Tx) kbFTSRows() *multiRow {
	if tx.db.pg != nil {
		return pgKBFTSRows
	}
	return kbFTSRows
}

// kbFTSRow appends an entry's kb_fts row to args.
func (tx *Tx) kbFTSRow(args []any, rowid int64, e *kura.KBEntry) []any {
	if tx.db.pg != nil {
		return append(args, rowid, kbFTSDoc(e))
	}
	return append(args, rowid, e.Identifier, keysText(e.Keys), e.Value)
}

// updateKBFTS rewrites an entry's kb_fts row.
func (tx *Tx) updateKBFTS(rowid int64, e *kura.KBEntry) error {
	var err error
	if tx.db.pg != nil {
		_, err = tx.Exec(qPGKBUpdateFTS, kbFTSDoc(e), rowid)
	} else {
		_, err = tx.Exec(qKBUpdateFTS, e.Identifier, keysText(e.Keys), e.Value, rowid)
	}
	return err
}

// Strict queries over kb_terms on PostgreSQL: SQLite's statements with
// the match a tsquery (the same arguments, the expression translated by
// kbTermsMatch).
const (
	qPGKBTermsPage  = "SELECT " + kbEntryCols + " FROM kb_entries e WHERE e.eid IN (SELECT rowid - ? FROM kb_terms WHERE doc @@ CAST(? AS tsquery) AND rowid > ? AND rowid <= ? ORDER BY rowid LIMIT ?) ORDER BY e.eid"
	qPGKBTermsCount = "SELECT count(*) FROM kb_terms WHERE doc @@ CAST(? AS tsquery) AND rowid <= ? AND rowid > ?"
	qPGKBPosting    = "SELECT string_agg((rowid - ?)::text, ',' ORDER BY rowid) FROM kb_terms WHERE doc @@ CAST(? AS tsquery) AND rowid BETWEEN ? AND ?"
)

// kbTermsMatch is a kb_terms expression for the engine.
func kbTermsMatch(pg bool, expr string) string {
	if pg {
		return pgTSQuery(expr, ftsExact, nil)
	}
	return expr
}

// Ranked search over kb_fts on PostgreSQL, in the arguments of SQLite's
// statements (kbsearch.go). A match without ranking is read in rowid
// order, as FTS5 reads it.
var (
	qPGKBRank = "SELECT f.rowid FROM CAST(? AS tsquery) q, kb_fts f WHERE f.doc @@ q AND f.rowid BETWEEN ? AND ? ORDER BY ts_rank(" +
		kbRankWeights + ", f.doc, q, 1) DESC, f.rowid LIMIT ?"
	qPGKBCountUpTo = "SELECT count(*) FROM (SELECT 1 FROM kb_fts WHERE doc @@ CAST(? AS tsquery) AND rowid BETWEEN ? AND ? LIMIT ?) c"
	qPGKBMatchSome = "SELECT rowid FROM kb_fts WHERE doc @@ CAST(? AS tsquery) AND rowid BETWEEN ? AND ? ORDER BY rowid LIMIT ?"
)

// match is a kb_fts statement of kbsearch.go and its expression for the
// ranker's engine.
func (r *kbRanker) match(query, expr string) (string, string) {
	if r.rtx.db.pg == nil {
		return query, expr
	}
	switch query {
	case qKBRank:
		query = qPGKBRank
	case qKBCountUpTo:
		query = qPGKBCountUpTo
	case qKBMatchSome:
		query = qPGKBMatchSome
	}
	return query, pgTSQuery(expr, recall.Tokens, kbFTSColumns)
}
