package store

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/kura-memory/kura/internal/kura"
)

// PostgreSQL plans a read by its tables' statistics, which ANALYZE
// gathers. Autovacuum does it when a table has changed by a tenth, but on
// its own schedule: a minute's nap at best, and its few workers are shared
// by every database on the server (after a bulk import here it took six
// minutes). Until then a search or a compile over a new scope runs on
// guessed plans, and every search reads through the new entries a GIN
// index keeps apart until autovacuum merges them: several times slower.
// So kurad does both, soon after a bulk write, for a table autovacuum
// would analyse anyway.

// pgAnalyzeEvery is how often an instance looks for tables to analyse,
// while the feed moves (and when it opens).
var pgAnalyzeEvery = 5 * time.Second

// pgAnalyzeLookOn is how long after the feed last moved it keeps looking.
const pgAnalyzeLookOn = 30 * time.Second

// pgAnalyzeMinRows is the least change (rows written since the table's
// last analysis) that is worth an ANALYZE of its own; a table must also
// have changed by a tenth, autovacuum's measure.
const pgAnalyzeMinRows = 1000

// qPGStale names the tables of the store's schema that changed by at
// least the row count given and a tenth of their rows since they were
// last analysed.
const qPGStale = `SELECT relname FROM pg_stat_user_tables
	WHERE schemaname = current_schema() AND n_mod_since_analyze >= ?
	AND n_mod_since_analyze >= n_live_tup / 10 ORDER BY relname`

// qPGCleanGIN merges the pending entries of the GIN indexes of the
// tables an array names.
const qPGCleanGIN = `SELECT gin_clean_pending_list(i.indexrelid) FROM pg_index i
	JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
	WHERE a.amname = 'gin' AND i.indrelid = ANY(CAST(? AS regclass[]))`

// analyzeStale analyses the tables that qPGStale names (merging their GIN
// indexes' pending entries), and returns them.
func (db *DB) analyzeStale(ctx context.Context) ([]string, error) {
	rows, err := db.rdb.QueryContext(ctx, qPGStale, pgAnalyzeMinRows)
	if err != nil {
		return nil, err
	}
	var stale []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return nil, err
		}
		stale = append(stale, name)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(stale) == 0 {
		return nil, err
	}
	quoted := make([]string, len(stale))
	for i, name := range stale {
		quoted[i] = `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
	}
	// A GIN index (the search documents') keeps new entries in a pending
	// list that every search reads through until autovacuum merges it; a
	// manual ANALYZE leaves it be. Merged first, so that a table shown
	// analysed has it merged too.
	if _, err := db.rdb.ExecContext(ctx, qPGCleanGIN, "{"+strings.Join(quoted, ",")+"}"); err != nil {
		return nil, err
	}
	if _, err := db.rdb.ExecContext(ctx, "ANALYZE "+strings.Join(quoted, ", ")); err != nil {
		return nil, err
	}
	return stale, nil
}

// analyzeAfterWrites runs analyzeStale when the instance opens and then
// every pgAnalyzeEvery while the feed moves (and for pgAnalyzeLookOn
// after), until the store closes. A
// user who may not analyse the tables (they belong to another role) is
// told once, and left to autovacuum.
func (db *DB) analyzeAfterWrites() {
	defer close(db.pg.analyzeDone)
	t := time.NewTicker(pgAnalyzeEvery)
	defer t.Stop()
	seen, movedAt := int64(-1), time.Time{}
	for {
		if seq := db.lastSeq.Load(); seq != seen {
			seen, movedAt = seq, time.Now()
		}
		// PostgreSQL's statistics views count a commit's rows a moment
		// after it (seconds, when busy): it looks on for a while after the
		// feed last moved, not only at the next tick.
		if time.Since(movedAt) <= pgAnalyzeLookOn {
			ctx, cancel := context.WithTimeout(db.bg, time.Minute)
			start := time.Now()
			tables, err := db.analyzeStale(ctx)
			cancel()
			var pe *pgconn.PgError
			switch {
			case errors.As(err, &pe) && pe.Code == "42501": // insufficient_privilege
				db.log.Warn("statistics: may not analyse the tables; autovacuum alone keeps them", "err", err)
				return
			case err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, sql.ErrConnDone) && !kura.IsCode(mapErr(err), kura.EUnavailable):
				// (An outage or a failover is the health checks' to report.)
				db.log.Warn("statistics: analysing tables written in bulk", "err", err)
			case len(tables) > 0:
				db.log.Info("statistics: analysed tables written in bulk", "tables", tables, "took", time.Since(start).Round(time.Millisecond))
			}
		}
		select {
		case <-db.quit:
			return
		case <-t.C:
		}
	}
}
