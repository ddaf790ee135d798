package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"

	"github.com/kura-memory/kura/internal/kura"
)

// Access checks for project-restricted callers (docs/security.md, "Records
// and ledgers visibility"). Records and ledgers belong to no project, so a
// restricted caller sees a ledger only when a session of one of its
// projects reaches it (a turn's context or output ledger, or a head in the
// reflog), and a record only when it wrote it or such a ledger, or an open
// turn of such a session, holds it. A scope-limited caller does not read
// memory kurad packed from another scope into a context ledger. Project and
// scope lists travel as one JSON array parameter read with json_each: every
// statement here is a constant.

// visibleLedger is the predicate "ledger $LEDGER is reachable from a session of
// the projects in JSON array ?2"; each branch is an index probe.
const visibleLedger = `(
	EXISTS (SELECT 1 FROM turns t JOIN sessions s ON s.id = t.session_id
		WHERE t.context_ledger_id = $LEDGER AND s.project IN (SELECT value FROM json_each(?2)))
	OR EXISTS (SELECT 1 FROM turns t JOIN sessions s ON s.id = t.session_id
		WHERE t.output_ledger_id = $LEDGER AND s.project IN (SELECT value FROM json_each(?2)))
	OR EXISTS (SELECT 1 FROM session_reflog r JOIN sessions s ON s.id = r.session_id
		WHERE r.to_ledger_id = $LEDGER AND s.project IN (SELECT value FROM json_each(?2))))`

// packedScope is the scope a record r of kurad's names as the one its
// memory was packed from: metadata.scope, or for records packed before
// kurad wrote that marker, the scope of the bundle metadata.bundle_id names.
const packedScope = `coalesce(json_extract(r.metadata, '$.` + kura.PackedScopeKey + `'),
	(SELECT b.scope FROM context_bundles b WHERE b.id = json_extract(r.metadata, '$.bundle_id')))`

// withheld returns the predicate "record r is memory kurad packed from a
// scope outside the JSON array in parameter param". Only sys:kurad records
// count: no token may write as sys:, so no one else can set the marker.
func withheld(param string) string {
	// param is one of the constant placeholders of this package, never input.
	return `(r.author_id = 'sys:kurad' AND ` + packedScope + ` NOT IN (SELECT value FROM json_each(` + param + `)))`
}

var (
	qLedgerVisible = "SELECT " + sprintfLedger("?1")
	// ?1 ids (JSON array), ?2 projects (JSON array, NULL: all), ?3 the
	// reader's identity, ?4 scopes (JSON array, NULL: all).
	qRecordsVisible = `SELECT r.id FROM json_each(?1) j CROSS JOIN records r ON r.id = j.value
	WHERE (CAST(?2 AS TEXT) IS NULL OR r.author_id = ?3
		OR EXISTS (SELECT 1 FROM ledger_records lr WHERE lr.record_id = r.id AND ` + sprintfLedger("lr.ledger_id") + `)
		OR EXISTS (SELECT 1 FROM turn_output o JOIN turns t ON t.id = o.turn_id JOIN sessions s ON s.id = t.session_id
			WHERE o.record_id = r.id AND s.project IN (SELECT value FROM json_each(?2))))
	AND (CAST(?4 AS TEXT) IS NULL OR NOT ` + withheld("?4") + `)`
)

func sprintfLedger(col string) string {
	// col is one of two constants above, never input.
	return strings.ReplaceAll(visibleLedger, "$LEDGER", col)
}

func projectsJSON(projects []string) string {
	if projects == nil {
		projects = []string{}
	}
	b, _ := json.Marshal(projects)
	return string(b)
}

// LedgerVisible reports whether a caller limited to projects may read
// ledger id. A ledger that does not exist is not visible.
func (db *DB) LedgerVisible(ctx context.Context, id string, projects []string) (bool, error) {
	var ok bool
	err := db.rdb.QueryRowContext(ctx, qLedgerVisible, id, projectsJSON(projects)).Scan(&ok)
	return ok, mapErr(err)
}

// RecordVisible reports whether rd may read record id. A record that does
// not exist is not visible.
func (db *DB) RecordVisible(ctx context.Context, id string, rd kura.Reader) (bool, error) {
	vis, err := db.RecordsVisible(ctx, []string{id}, rd)
	return vis[id], err
}

// RecordsVisible returns the ids among ids that rd may read, in one query.
func (db *DB) RecordsVisible(ctx context.Context, ids []string, rd kura.Reader) (map[string]bool, error) {
	out := make(map[string]bool, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := db.rdb.QueryContext(ctx, qRecordsVisible, jsonList(ids), listParam(rd.Projects), rd.Identity, listParam(rd.Scopes))
	err = scanRows(rows, err, func(rows *sql.Rows) error {
		var id string
		if err := rows.Scan(&id); err != nil {
			return err
		}
		out[id] = true
		return nil
	})
	return out, mapErr(err)
}

// listParam is a project or scope list as a query parameter: NULL for nil
// (every one), else a JSON array.
func listParam(list []string) any {
	if list == nil {
		return nil
	}
	return projectsJSON(list)
}

// RecordIDByHash returns the id of the record with hash, or "" when there
// is none.
func (db *DB) RecordIDByHash(ctx context.Context, hash string) (string, error) {
	var id string
	err := db.rdb.QueryRowContext(ctx, "SELECT id FROM records WHERE hash = ?", hash).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return id, mapErr(err)
}

// SessionAccess is what access checks need to know of a session.
type SessionAccess struct {
	Project, Scope string
	CreatedBy      string // "" when unknown: only admins move its head
}

// SessionAccess returns the project, scope and creator of session id;
// kura.ENotFound ("session not found", as GetSession says) when absent.
func (db *DB) SessionAccess(ctx context.Context, id string) (project, scope, createdBy string, err error) {
	var by sql.NullString
	err = db.rdb.QueryRowContext(ctx, "SELECT project, scope, created_by FROM sessions WHERE id = ?", id).Scan(&project, &scope, &by)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", "", kura.Errorf(kura.ENotFound, "session not found")
	}
	return project, scope, by.String, mapErr(err)
}

// TurnAccess returns the project and scope of turn id's session;
// kura.ENotFound ("turn not found", as GetTurn says) when absent.
func (db *DB) TurnAccess(ctx context.Context, id string) (project, scope string, err error) {
	err = db.rdb.QueryRowContext(ctx, "SELECT s.project, s.scope FROM turns t JOIN sessions s ON s.id = t.session_id WHERE t.id = ?", id).Scan(&project, &scope)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", kura.Errorf(kura.ENotFound, "turn not found")
	}
	return project, scope, mapErr(err)
}

// ListSessionsIn is ListSessions limited to sessions of projects.
func (db *DB) ListSessionsIn(ctx context.Context, projects []string, after string, limit int) ([]kura.Session, string, error) {
	rows, err := db.rdb.QueryContext(ctx, "SELECT "+sessionCols+sessionFrom+
		" WHERE s.id > ? AND s.project IN (SELECT value FROM json_each(?)) ORDER BY s.id LIMIT ?",
		after, projectsJSON(projects), limit+1)
	if err != nil {
		return nil, "", mapErr(err)
	}
	return scanPage(rows, limit, scanSession, func(s *kura.Session) string { return s.ID })
}

// ListTurnsIn is ListTurns limited to turns of sessions of projects.
func (db *DB) ListTurnsIn(ctx context.Context, projects []string, sessionID, state, after string, limit int) ([]kura.Turn, string, error) {
	rows, err := db.rdb.QueryContext(ctx, "SELECT "+turnCols+" FROM turns WHERE id > ?1"+
		" AND (?2 = '' OR session_id = ?2) AND (?3 = '' OR state = ?3)"+
		" AND session_id IN (SELECT id FROM sessions WHERE project IN (SELECT value FROM json_each(?4)))"+
		" ORDER BY id LIMIT ?5", after, sessionID, state, projectsJSON(projects), limit+1)
	if err != nil {
		return nil, "", mapErr(err)
	}
	out, next, err := scanPage(rows, limit, scanTurn, func(t *kura.Turn) string { return t.ID })
	if err != nil {
		return nil, "", err
	}
	if err := db.loadOutputs(ctx, out); err != nil {
		return nil, "", err
	}
	return out, next, nil
}

// RecordTypes returns the type of each record among ids that exists, in
// one query.
func (db *DB) RecordTypes(ctx context.Context, ids []string) (map[string]string, error) {
	out := make(map[string]string, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := db.rdb.QueryContext(ctx, "SELECT r.id, r.type FROM json_each(?) j CROSS JOIN records r ON r.id = j.value", jsonList(ids))
	err = scanRows(rows, err, func(rows *sql.Rows) error {
		var id, typ string
		if err := rows.Scan(&id, &typ); err != nil {
			return err
		}
		out[id] = typ
		return nil
	})
	return out, mapErr(err)
}
