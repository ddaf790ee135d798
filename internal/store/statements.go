package store

// writeStatements is every statement the writer runs often enough to keep
// prepared: the one place that names them. Open prepares them on the
// single write connection while it is free (preparing during a
// transaction would wait for a second connection that never comes); a
// statement left out still runs, prepared for its transaction alone.
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
