package store

import (
	"context"
	"database/sql"
)

// writeStatements is every statement the writer runs often enough to keep
// prepared: the one place that names them. A statement left out still
// runs, prepared for its transaction alone.
// The search index's statements differ by engine: SQLite's are
// sqliteSearchStatements (PostgreSQL's run prepared by pgx's own cache).
func writeStatements() []string {
	qs := []string{
		qMetaValue,
		qLogInsertHash,
		qLogInsertChunk,
		qMaxEventSeq,
		qDeleteEvents,
		qSetMeta,
		qInsertBundle,
		qSavePublished,
		qInsertIdem,
		qKBSpace,
		qKBInsertSpace,
		qKBAddCount,
		qKBEntry,
		qKBEntries,
		qKBLastVersions,
		qKBMaxEID,
		qKBUpdateEntry,
		qKBDeleteEntry,
		qKBDeleteTerms,
		qKBDeleteFTS,
		qKBUpdateTerms,
		qKBScopeEntries,
		qKBClearTerms,
		qKBClearFTS,
		qKBClearEntries,
		qKBZeroCount,
		qKBBumpGen,
		qKBClearDF,
		qLedgerHash,
		qRecordSeal,
		qInsertLedger,
		qInsertParent,
		qInsertLedgerRecord,
		qScopeID,
		qInsertScope,
		qNodeByKey,
		qNodeNID,
		qInsertNode,
		qUpdateNode,
		qInsertVersion,
		qInsertConf,
		qRecordVertex,
		qInsertVertex,
		qRecordExists,
		qDeleteEdges,
		qInsertEdge,
		qInsertRelation,
		qRelationExists,
		qInsertFeedback,
		qInsertExtract,
		qTurnExtracted,
		qAncestorOf,
		qInsertRecord,
		qRecordByHash,
		qRedactionByRecord,
		qRedactRecord,
		qInsertRedaction,
		qPurgeIdemRecord,
		qSessionByID,
		qLedgerHashForHead,
		qReflogNext,
		qInsertReflog,
		qSetHead,
		qTurnByID,
		qTurnOutput,
		qInsertOutput,
		qRecordByID,
		qOutputTypes,
		qOutputExtract,
		qDeliverables,
		qUpsertVector,
		qTouchVector,
		qInsertEvent,
		qSavepoint,
		qRelease,
		qRollbackTo,
	}
	for _, m := range kbRows {
		qs = append(qs, m.full)
	}
	return qs
}

// sqliteSearchStatements are the writer's statements on SQLite's FTS5
// tables that PostgreSQL's search tables have no columns for.
func sqliteSearchStatements() []string {
	return []string{qIndexNodeText, qKBUpdateFTS, kbFTSRows.full}
}

// writerStmts are the writer's prepared statements. A statement is
// prepared on the single write connection, which is free only between
// transactions (preparing during one would wait for a second connection
// that never comes): the first transaction that runs a statement prepares
// it for itself, and the writer prepares it on the connection once that
// transaction has ended (promote). So a kurad parses the statements it
// runs, not all of them at every start. Only the writer goroutine, or
// Open before it starts, touches it.
type writerStmts struct {
	known    map[string]bool
	prepared map[string]*sql.Stmt
	wanted   []string // known, run since the last promote, not prepared
}

func (w *writerStmts) init(known []string, prepared map[string]*sql.Stmt) {
	w.known = make(map[string]bool, len(known))
	for _, q := range known {
		w.known[q] = true
	}
	w.prepared = prepared
	if w.prepared == nil {
		w.prepared = map[string]*sql.Stmt{}
	}
	w.wanted = nil
}

// bind returns q for the transaction tx: the connection's statement bound
// to it, or one prepared for tx alone.
func (w *writerStmts) bind(ctx context.Context, tx *sql.Tx, q string) (*sql.Stmt, error) {
	if ps, ok := w.prepared[q]; ok {
		return tx.StmtContext(ctx, ps), nil
	}
	s, err := tx.PrepareContext(ctx, q)
	if err == nil && w.known[q] {
		w.wanted = append(w.wanted, q)
	}
	return s, err
}

// promote prepares on the write connection the known statements the last
// transactions ran. A statement that fails to prepare is left to run
// prepared for each transaction, as before.
func (w *writerStmts) promote(wdb *sql.DB) {
	for _, q := range w.wanted {
		if _, ok := w.prepared[q]; ok {
			continue
		}
		if s, err := wdb.PrepareContext(context.Background(), q); err == nil {
			w.prepared[q] = s
		}
	}
	w.wanted = w.wanted[:0]
}

func (w *writerStmts) close() {
	for _, s := range w.prepared {
		s.Close()
	}
	w.prepared = nil
}
