package store

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/kura-memory/kura/internal/kura"
)

// MaxNodeBatch bounds one batch of node writes (one transaction).
const MaxNodeBatch = 1000

const nodeCols = "n.nid, n.kind, n.id, n.version, n.title, n.summary, n.lifecycle, n.authority, n.confidence, n.target_files, n.payload_ref, n.owner, n.source_type, n.derived_from, n.metadata, n.created_at, n.updated_at, n.written_by"

const (
	qScopeID        = "SELECT sid FROM scopes WHERE name = ?"
	qInsertScope    = "INSERT INTO scopes(name) VALUES(?) RETURNING sid"
	qNodeByKey      = "SELECT " + nodeCols + " FROM nodes n WHERE n.sid = ? AND n.kind = ? AND n.id = ?"
	qNodeNID        = "SELECT nid FROM nodes WHERE sid = ? AND kind = ? AND id = ?"
	qInsertNode     = "INSERT INTO nodes(sid, kind, id, version, title, summary, lifecycle, authority, confidence, target_files, payload_ref, owner, source_type, derived_from, metadata, created_at, updated_at, written_by) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) RETURNING nid"
	qUpdateNode     = "UPDATE nodes SET version = ?, title = ?, summary = ?, lifecycle = ?, authority = ?, confidence = ?, target_files = ?, payload_ref = ?, owner = ?, source_type = ?, derived_from = ?, metadata = ?, updated_at = ?, written_by = ? WHERE nid = ?"
	qInsertVersion  = "INSERT INTO node_versions(nid, version, valid_from, body) VALUES(?,?,?,?)"
	qInsertConf     = "INSERT INTO confidence_history(nid, version, at, old, new, reason) VALUES(?,?,?,?,?,?)"
	qRecordVertex   = "SELECT vid FROM lineage_records WHERE record_id = ?"
	qInsertVertex   = "INSERT INTO lineage_records(record_id) VALUES(?) RETURNING vid"
	qRecordExists   = "SELECT 1 FROM records WHERE id = ?"
	qDeleteEdges    = "DELETE FROM lineage WHERE child = ?"
	qInsertEdge     = "INSERT INTO lineage(child, parent) VALUES(?,?) ON CONFLICT DO NOTHING"
	qInsertRelation = "INSERT INTO relations(sid, id, kind, from_nid, to_nid, confidence, reasons, created_at) VALUES(?,?,?,?,?,?,?,?)"
	qRelationExists = "SELECT 1 FROM relations WHERE sid = ? AND id = ?"
	qInsertFeedback = "INSERT INTO feedback(id, sid, nid, outcome, note, author_id, created_at) VALUES(?,?,?,?,?,?,?)"
	qInsertExtract  = "INSERT INTO turn_extracted(turn_id, pos, ref) VALUES(?,?,?)"
	qTurnExtracted  = "SELECT ref FROM turn_extracted WHERE turn_id = ? ORDER BY pos"
	// reachesUp answers "is nid an ancestor of any of these parents?"; the
	// walk is bounded by the graph itself (UNION drops repeats), not by a
	// depth guess, so a 10,000-deep honest chain is fine and a cycle is
	// always found.
	qAncestorOf = `WITH RECURSIVE up(v) AS (
		SELECT CAST(value AS BIGINT) FROM json_each(?1)
		UNION
		SELECT l.parent FROM lineage l JOIN up ON l.child = up.v WHERE up.v > 0
	) SELECT 1 FROM up WHERE v = ?2 LIMIT 1`
)

// nodeRow is a node as stored, with its keys.
type nodeRow struct {
	kura.Node
	nid int64
}

// scanNode scans the columns of nodeCols, then into extra the columns a
// query selects after them.
func scanNode(row rowScanner, scope string, extra ...any) (*nodeRow, error) {
	var n nodeRow
	var files, derived, meta string
	var payload, owner, writtenBy sql.NullString
	if err := row.Scan(append([]any{&n.nid, &n.Kind, &n.ID, &n.Version, &n.Title, &n.Summary, &n.Lifecycle, &n.Authority, &n.Confidence,
		&files, &payload, &owner, &n.SourceType, &derived, &meta, &n.CreatedAt, &n.UpdatedAt, &writtenBy}, extra...)...); err != nil {
		return nil, err
	}
	n.WrittenBy = writtenBy.String
	n.Scope = scope
	n.Ref = n.Kind + ":" + n.ID
	if payload.Valid {
		n.PayloadRef = &payload.String
	}
	if owner.Valid {
		n.Owner = &owner.String
	}
	if err := json.Unmarshal([]byte(files), &n.TargetFiles); err != nil {
		return nil, fmt.Errorf("node %s: target_files: %w", n.Ref, err)
	}
	if err := json.Unmarshal([]byte(derived), &n.DerivedFrom); err != nil {
		return nil, fmt.Errorf("node %s: derived_from: %w", n.Ref, err)
	}
	n.Metadata = json.RawMessage(meta)
	return &n, nil
}

func jsonList(v []string) string {
	if v == nil {
		v = []string{}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func nullable(p *string) any {
	if p == nil || *p == "" {
		return nil
	}
	return *p
}

// scope returns the key of a scope, creating it on first write.
func (tx *Tx) scope(name string) (int64, error) {
	var sid int64
	err := tx.QueryRow(qScopeID, name).Scan(&sid)
	if errors.Is(err, sql.ErrNoRows) {
		err := tx.QueryRow(qInsertScope, name).Scan(&sid)
		return sid, err
	}
	return sid, err
}

// nodeByRef reads the current row of a node, or a not_found error.
func (tx *Tx) nodeByRef(sid int64, scope string, ref kura.Ref) (*nodeRow, error) {
	n, err := scanNode(tx.QueryRow(qNodeByKey, sid, ref.Kind, ref.ID), scope)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, kura.Errorf(kura.ENotFound, "no node %s in scope %s", ref, scope)
	}
	return n, err
}

// vertices resolves derived_from refs to lineage vertices (node nids, or
// -vid for records), refusing refs that do not exist in this scope.
func (tx *Tx) vertices(sid int64, scope string, refs []string, field string) ([]int64, error) {
	out := make([]int64, 0, len(refs))
	var missing []string
	for _, s := range refs {
		r, _ := kura.ParseRef(s, tx.db.nodeKinds(), true)
		if r.IsRecord() {
			var vid int64
			err := tx.QueryRow(qRecordVertex, r.ID).Scan(&vid)
			if errors.Is(err, sql.ErrNoRows) {
				var one int
				if err := tx.QueryRow(qRecordExists, r.ID).Scan(&one); err != nil {
					if errors.Is(err, sql.ErrNoRows) {
						missing = append(missing, s)
						continue
					}
					return nil, err
				}
				if err := tx.QueryRow(qInsertVertex, r.ID).Scan(&vid); err != nil {
					return nil, err
				}
			} else if err != nil {
				return nil, err
			}
			out = append(out, -vid)
			continue
		}
		var nid int64
		err := tx.QueryRow(qNodeNID, sid, r.Kind, r.ID).Scan(&nid)
		if errors.Is(err, sql.ErrNoRows) {
			missing = append(missing, s)
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, nid)
	}
	if len(missing) > 0 {
		return nil, kura.Invalid(field, "derived_from names what does not exist in scope %s: %s", scope, strings.Join(missing, ", ")).WithDetail("missing", missing)
	}
	return out, nil
}

// nodeKinds is the configured node vocabulary.
func (db *DB) nodeKinds() []string {
	if len(db.cfg.NodeKinds) > 0 {
		return db.cfg.NodeKinds
	}
	return kura.NodeKinds
}

// NodeKinds is the node vocabulary this store accepts.
func (db *DB) NodeKinds() []string { return db.nodeKinds() }
