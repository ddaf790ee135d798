package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	_ "modernc.org/sqlite" // the driver kurad uses, registered as "sqlite"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/kurahash"
)

// rawDSN opens SQLite the way kurad's write connection does (store's dsn()
// with its default synchronous=FULL): same driver, same pragmas, and BEGIN
// IMMEDIATE so a write transaction takes the lock up front. busy_timeout
// never fires here (one connection), it is kept only to match.
const rawDSN = "file:%s?_pragma=busy_timeout(10000)&_pragma=foreign_keys(ON)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate"

// migrationsDir is where kurad's embedded migrations live in the source
// tree. The bench execs the same files so its rows land in kurad's real
// tables, indexes and triggers, not an approximation of them.
const migrationsDir = "internal/store/migrations"

// fallbackSchema is what the bench expects kurad's schema to look like; it
// is used only when migrationsDir holds no .sql file, and the result says so.
const fallbackSchema = `
CREATE TABLE records (
	id TEXT PRIMARY KEY, hash TEXT NOT NULL UNIQUE, content_hash TEXT NOT NULL, seal TEXT NOT NULL,
	type TEXT NOT NULL, content TEXT, author_id TEXT NOT NULL, metadata TEXT NOT NULL,
	created_at TEXT NOT NULL, redacted INTEGER NOT NULL DEFAULT 0);
CREATE TABLE events (
	seq INTEGER PRIMARY KEY, id TEXT NOT NULL, type TEXT NOT NULL, project TEXT NOT NULL,
	subject TEXT NOT NULL, refs TEXT NOT NULL, created_at TEXT NOT NULL);
`

// rawPhase inserts the rows kurad would write for each record (one records
// row, one events row, in one transaction) straight into SQLite, batch rows
// per transaction. It is the ceiling kurad's ingest is judged against.
func (b *bench) rawPhase(ctx context.Context, batch int) (*PhaseResult, error) {
	res := &PhaseResult{
		Title:     fmt.Sprintf("raw SQLite, %d records/tx", batch),
		Metric:    "rows/s",
		LatencyOf: "transaction incl. commit",
		DataDir:   "fresh database file per run",
		Params: map[string]any{
			"rows_per_run":    b.cfg.rawRows,
			"batch":           batch,
			"dsn":             fmt.Sprintf(rawDSN, "<file>"),
			"rows_per_record": "1 records + 1 events",
		},
	}
	for run := range b.cfg.runs {
		r, err := b.rawRun(ctx, batch, run, res)
		if err != nil {
			return res, err
		}
		b.logf("run %d: %.0f rows/s p50 %.2f ms p99 %.2f ms", run+1, r.RowsPerSec, r.P50ms, r.P99ms)
		res.Runs = append(res.Runs, r)
	}
	res.summarizeThroughput()
	return res, nil
}

func (b *bench) rawRun(ctx context.Context, batch, run int, res *PhaseResult) (Run, error) {
	path := filepath.Join(b.tmp, fmt.Sprintf("raw-%d-%d.db", batch, run))
	defer func() {
		for _, s := range []string{"", "-wal", "-shm"} {
			_ = os.Remove(path + s)
		}
	}()
	db, err := sql.Open("sqlite", fmt.Sprintf(rawDSN, path))
	if err != nil {
		return Run{}, fmt.Errorf("open raw db: %w", err)
	}
	defer db.Close()
	// One connection, like kurad's single writer.
	db.SetMaxOpenConns(1)

	src, err := b.applySchema(ctx, db)
	if err != nil {
		return Run{}, err
	}
	var jm string
	var syncMode int
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&jm); err != nil {
		return Run{}, fmt.Errorf("read journal_mode: %w", err)
	}
	if err := db.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&syncMode); err != nil {
		return Run{}, fmt.Errorf("read synchronous: %w", err)
	}
	if jm != "wal" || syncMode != 2 {
		return Run{}, fmt.Errorf("raw db has journal_mode=%s synchronous=%d, want wal and 2 (FULL)", jm, syncMode)
	}

	// Build every row before the clock starts: the baseline measures
	// SQLite, not hashing or JSON.
	n := b.cfg.rawRows
	recs := make([]map[string]any, n)
	evs := make([]map[string]any, n)
	stream := fmt.Sprintf("raw%d-%d", batch, run)
	for i := range n {
		recs[i], evs[i], err = b.rawRow(stream, i)
		if err != nil {
			return Run{}, err
		}
	}
	recIns, recArgs, recNote, err := insertFor(ctx, db, "records", recs)
	if err != nil {
		return Run{}, err
	}
	evIns, evArgs, evNote, err := insertFor(ctx, db, "events", evs)
	if err != nil {
		return Run{}, err
	}
	if run == 0 {
		res.Params["schema"] = src
		res.Params["records_insert"] = recIns
		res.Params["events_insert"] = evIns
		res.Notes = append(res.Notes, recNote...)
		res.Notes = append(res.Notes, evNote...)
	}
	recStmt, err := db.PrepareContext(ctx, recIns)
	if err != nil {
		return Run{}, fmt.Errorf("prepare %s: %w", recIns, err)
	}
	defer recStmt.Close()
	evStmt, err := db.PrepareContext(ctx, evIns)
	if err != nil {
		return Run{}, fmt.Errorf("prepare %s: %w", evIns, err)
	}
	defer evStmt.Close()

	lat := make([]time.Duration, 0, n/batch+1)
	cpu := startCPU(0)
	start := time.Now()
	for off := 0; off < n; off += batch {
		t0 := time.Now()
		if err := rawTx(ctx, db, recStmt, evStmt, recArgs[off:min(off+batch, n)], evArgs[off:min(off+batch, n)]); err != nil {
			return Run{}, err
		}
		lat = append(lat, time.Since(t0))
	}
	elapsed := time.Since(start)
	c := cpu.stop()
	return Run{
		Rows:       n,
		Requests:   len(lat),
		Seconds:    round(elapsed.Seconds()),
		RowsPerSec: round(float64(n) / elapsed.Seconds()),
		P50ms:      round(percentile(lat, 0.50)),
		P99ms:      round(percentile(lat, 0.99)),
		CPU:        c,
	}, nil
}

func rawTx(ctx context.Context, db *sql.DB, recStmt, evStmt *sql.Stmt, recArgs, evArgs [][]any) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	rs, es := tx.StmtContext(ctx, recStmt), tx.StmtContext(ctx, evStmt)
	for i := range recArgs {
		if _, err := rs.ExecContext(ctx, recArgs[i]...); err != nil {
			return fmt.Errorf("insert record: %w", err)
		}
		if _, err := es.ExecContext(ctx, evArgs[i]...); err != nil {
			return fmt.Errorf("insert event: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// rawRow returns, by column name, what kurad stores for record i of a
// stream and for its record.written event. Columns the schema lacks are
// ignored; columns this map lacks are reported by insertFor.
func (b *bench) rawRow(stream string, i int) (rec, ev map[string]any, err error) {
	ch, canonical, err := kurahash.ContentHash(b.content(stream, i))
	if err != nil {
		return nil, nil, fmt.Errorf("content hash: %w", err)
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, nil, err
	}
	eid, err := uuid.NewV7()
	if err != nil {
		return nil, nil, err
	}
	now := kura.FormatTime(time.Now())
	h := kurahash.RecordHash(recordType, ch, recordAuthor)
	md := kurahash.MetadataJSON(nil)
	rec = map[string]any{
		"id": id.String(), "hash": h, "content_hash": ch, "seal": kurahash.Seal(h, md, now),
		"type": recordType, "content": string(canonical), "author_id": recordAuthor,
		"metadata": string(md), "created_at": now, "redacted": 0,
	}
	const project = "default"
	e := kura.Event{
		ID: eid.String(), Type: kura.EventRecordWritten, Project: project,
		Subject: kura.EventSubject(project, kura.EventRecordWritten),
		Refs:    map[string]string{"record_id": id.String()}, CreatedAt: now,
	}
	ev = map[string]any{
		"id": e.ID, "type": e.Type, "project": e.Project, "subject": e.Subject,
		"refs": `{"record_id":"` + id.String() + `"}`, "created_at": now, "at": now,
		"payload": string(e.Pointer()),
	}
	return rec, ev, nil
}

// insertFor builds an INSERT for table from its actual columns (PRAGMA
// table_info) and the argument lists for rows. Reading the columns instead of
// hard-coding them keeps the baseline honest as kurad's schema grows: a new
// NOT NULL column without a default stops the bench with its name rather
// than letting it insert something kurad never would.
func insertFor(ctx context.Context, db *sql.DB, table string, rows []map[string]any) (string, [][]any, []string, error) {
	q, err := db.QueryContext(ctx, "SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info(?)", table)
	if err != nil {
		return "", nil, nil, fmt.Errorf("table_info %s: %w", table, err)
	}
	defer q.Close()
	type col struct {
		name, typ string
		blob      bool
	}
	var cols []col
	var notes []string
	seen := 0
	for q.Next() {
		var name, typ string
		var notnull, pk int
		var dflt sql.NullString
		if err := q.Scan(&name, &typ, &notnull, &dflt, &pk); err != nil {
			return "", nil, nil, err
		}
		seen++
		if _, ok := rows[0][name]; ok {
			cols = append(cols, col{name, typ, strings.Contains(strings.ToUpper(typ), "BLOB")})
			continue
		}
		// An INTEGER PRIMARY KEY is the rowid: SQLite numbers it.
		if pk == 1 && strings.EqualFold(typ, "INTEGER") {
			continue
		}
		if notnull == 1 && !dflt.Valid {
			return "", nil, nil, fmt.Errorf("%s.%s is NOT NULL without a default and the bench does not know what kurad writes there; teach rawRow", table, name)
		}
		notes = append(notes, fmt.Sprintf("%s.%s not written by the baseline (nullable or defaulted)", table, name))
	}
	if err := q.Err(); err != nil {
		return "", nil, nil, err
	}
	if seen == 0 {
		return "", nil, nil, fmt.Errorf("schema has no table %q", table)
	}
	names := make([]string, len(cols))
	marks := make([]string, len(cols))
	for i, c := range cols {
		names[i], marks[i] = c.name, "?"
	}
	ins := fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)", table, strings.Join(names, ", "), strings.Join(marks, ", "))
	args := make([][]any, len(rows))
	for i, r := range rows {
		a := make([]any, len(cols))
		for j, c := range cols {
			v := r[c.name]
			if s, ok := v.(string); ok && c.blob {
				v = []byte(s)
			}
			a[j] = v
		}
		args[i] = a
	}
	return ins, args, notes, nil
}

// applySchema runs kurad's migrations in name order, each in its own
// transaction as kurad's store does, and says which schema it used.
func (b *bench) applySchema(ctx context.Context, db *sql.DB) (string, error) {
	dir := filepath.Join(b.root, migrationsDir)
	files, _ := filepath.Glob(filepath.Join(dir, "*.sql"))
	sort.Strings(files)
	if len(files) == 0 {
		if _, err := db.ExecContext(ctx, fallbackSchema); err != nil {
			return "", fmt.Errorf("apply fallback schema: %w", err)
		}
		return "fallback (no " + migrationsDir + "/*.sql found)", nil
	}
	var names []string
	for _, f := range files {
		sqlText, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return "", err
		}
		if _, err := tx.ExecContext(ctx, string(sqlText)); err != nil {
			tx.Rollback()
			return "", fmt.Errorf("apply %s: %w", filepath.Base(f), err)
		}
		if err := tx.Commit(); err != nil {
			return "", fmt.Errorf("apply %s: %w", filepath.Base(f), err)
		}
		names = append(names, filepath.Base(f))
	}
	return migrationsDir + ": " + strings.Join(names, ", "), nil
}
