package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/kura-memory/kura/internal/kura"
)

// MaxNodeBatch bounds one batch of node writes (one transaction).
const MaxNodeBatch = 1000

const nodeCols = "n.nid, n.kind, n.id, n.version, n.title, n.summary, n.lifecycle, n.authority, n.confidence, n.target_files, n.payload_ref, n.owner, n.source_type, n.derived_from, n.metadata, n.created_at, n.updated_at, n.written_by"

var (
	qScopeID        = wsql("SELECT sid FROM scopes WHERE name = ?")
	qInsertScope    = wsql("INSERT INTO scopes(name) VALUES(?)")
	qNodeByKey      = wsql("SELECT " + nodeCols + " FROM nodes n WHERE n.sid = ? AND n.kind = ? AND n.id = ?")
	qNodeNID        = wsql("SELECT nid FROM nodes WHERE sid = ? AND kind = ? AND id = ?")
	qInsertNode     = wsql("INSERT INTO nodes(sid, kind, id, version, title, summary, lifecycle, authority, confidence, target_files, payload_ref, owner, source_type, derived_from, metadata, created_at, updated_at, written_by) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
	qUpdateNode     = wsql("UPDATE nodes SET version = ?, title = ?, summary = ?, lifecycle = ?, authority = ?, confidence = ?, target_files = ?, payload_ref = ?, owner = ?, source_type = ?, derived_from = ?, metadata = ?, updated_at = ?, written_by = ? WHERE nid = ?")
	qInsertVersion  = wsql("INSERT INTO node_versions(nid, version, valid_from, body) VALUES(?,?,?,?)")
	qInsertConf     = wsql("INSERT INTO confidence_history(nid, version, at, old, new, reason) VALUES(?,?,?,?,?,?)")
	qRecordVertex   = wsql("SELECT vid FROM lineage_records WHERE record_id = ?")
	qInsertVertex   = wsql("INSERT INTO lineage_records(record_id) VALUES(?)")
	qRecordExists   = wsql("SELECT 1 FROM records WHERE id = ?")
	qDeleteEdges    = wsql("DELETE FROM lineage WHERE child = ?")
	qInsertEdge     = wsql("INSERT OR IGNORE INTO lineage(child, parent) VALUES(?,?)")
	qInsertRelation = wsql("INSERT INTO relations(sid, id, kind, from_nid, to_nid, confidence, reasons, created_at) VALUES(?,?,?,?,?,?,?,?)")
	qRelationExists = wsql("SELECT 1 FROM relations WHERE sid = ? AND id = ?")
	qInsertFeedback = wsql("INSERT INTO feedback(id, sid, nid, outcome, note, author_id, created_at) VALUES(?,?,?,?,?,?,?)")
	qInsertExtract  = wsql("INSERT INTO turn_extracted(turn_id, pos, ref) VALUES(?,?,?)")
	qTurnExtracted  = wsql("SELECT ref FROM turn_extracted WHERE turn_id = ? ORDER BY pos")
	// reachesUp answers "is nid an ancestor of any of these parents?"; the
	// walk is bounded by the graph itself (UNION drops repeats), not by a
	// depth guess, so a 10,000-deep honest chain is fine and a cycle is
	// always found.
	qAncestorOf = wsql(`WITH RECURSIVE up(v) AS (
		SELECT value FROM json_each(?1)
		UNION
		SELECT l.parent FROM lineage l JOIN up ON l.child = up.v WHERE up.v > 0
	) SELECT 1 FROM up WHERE v = ?2 LIMIT 1`)
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
		res, err := tx.Exec(qInsertScope, name)
		if err != nil {
			return 0, err
		}
		return res.LastInsertId()
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
				res, err := tx.Exec(qInsertVertex, r.ID)
				if err != nil {
					return nil, err
				}
				vid, _ = res.LastInsertId()
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

// putNode writes a node: a new node (version 1) or a new version of an
// existing one, with its version row, confidence history, lineage edges
// and event, all in tx; its text is indexed for search before tx commits
// (indexNodeText). A new version is refused unless
// in.Writer may rewrite the node (kura.CheckNodeRewrite), here in the
// transaction that writes it, so no other write can slip in between the
// check and the write; every version records in.Writer as written_by.
func (tx *Tx) putNode(sid int64, scope string, in *kura.NodeInput, field string, event string) (*kura.Node, bool, error) {
	now := tx.NowString()
	var old *nodeRow
	if in.ID == "" {
		in.ID = uuid.Must(uuid.NewV7()).String()
	} else {
		n, err := tx.nodeByRef(sid, scope, kura.Ref{Kind: in.Kind, ID: in.ID})
		if err != nil && !kura.IsCode(err, kura.ENotFound) {
			return nil, false, err
		}
		old = n
	}
	var n kura.Node
	if old != nil {
		if err := kura.CheckNodeRewrite(old.Ref, old.Owner, in.Writer); err != nil {
			return nil, false, err
		}
		n = old.Node
	} else {
		if in.Summary == nil {
			return nil, false, kura.Invalid(field+"summary", "summary is required for a new node")
		}
		n = kura.Node{Ref: in.Kind + ":" + in.ID, Scope: scope, Kind: in.Kind, ID: in.ID,
			Lifecycle: "candidate", Authority: "unknown", Confidence: 0.5, SourceType: "direct_experience",
			TargetFiles: []string{}, DerivedFrom: []string{}, Metadata: json.RawMessage("{}"), CreatedAt: now}
	}
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&n.Title, in.Title)
	set(&n.Summary, in.Summary)
	set(&n.Lifecycle, in.Lifecycle)
	set(&n.Authority, in.Authority)
	set(&n.SourceType, in.SourceType)
	if in.Confidence != nil {
		n.Confidence = *in.Confidence
	}
	if in.TargetFiles != nil {
		n.TargetFiles = in.TargetFiles
	}
	if in.PayloadRef != nil {
		n.PayloadRef = in.PayloadRef
		if *in.PayloadRef == "" {
			n.PayloadRef = nil
		}
	}
	if in.Owner != nil {
		n.Owner = in.Owner
		if *in.Owner == "" {
			n.Owner = nil
		}
	}
	if in.Metadata != nil {
		n.Metadata = in.Metadata
	}
	lineageChanged := old == nil && len(in.DerivedFrom) > 0
	if in.DerivedFrom != nil && (old == nil || !slices.Equal(in.DerivedFrom, old.DerivedFrom)) {
		n.DerivedFrom = dedupe(in.DerivedFrom)
		lineageChanged = true
	}
	n.Version++
	n.UpdatedAt = now
	n.WrittenBy = in.Writer.Identity

	var parents []int64
	if lineageChanged {
		if slices.Contains(n.DerivedFrom, n.Ref) {
			return nil, false, kura.Invalid(field+"derived_from", "%s cannot be derived from itself", n.Ref)
		}
		var err error
		if parents, err = tx.vertices(sid, scope, n.DerivedFrom, field+"derived_from"); err != nil {
			return nil, false, err
		}
	}

	var nid int64
	files, derived := jsonList(n.TargetFiles), jsonList(n.DerivedFrom)
	if old == nil {
		res, err := tx.Exec(qInsertNode, sid, n.Kind, n.ID, n.Version, n.Title, n.Summary, n.Lifecycle, n.Authority, n.Confidence,
			files, nullable(n.PayloadRef), nullable(n.Owner), n.SourceType, derived, string(n.Metadata), n.CreatedAt, n.UpdatedAt, nullable(&n.WrittenBy))
		if err != nil {
			return nil, false, err
		}
		nid, _ = res.LastInsertId()
	} else {
		nid = old.nid
		if lineageChanged && len(parents) > 0 {
			// Only an existing node can close a cycle: something may already
			// descend from it.
			ps, _ := json.Marshal(parents)
			var one int
			err := tx.QueryRow(qAncestorOf, string(ps), nid).Scan(&one)
			if err == nil {
				return nil, false, kura.Invalid(field+"derived_from", "deriving %s from %s would close a derivation cycle", n.Ref, strings.Join(n.DerivedFrom, ", "))
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return nil, false, err
			}
		}
		if _, err := tx.Exec(qUpdateNode, n.Version, n.Title, n.Summary, n.Lifecycle, n.Authority, n.Confidence,
			files, nullable(n.PayloadRef), nullable(n.Owner), n.SourceType, derived, string(n.Metadata), n.UpdatedAt, nullable(&n.WrittenBy), nid); err != nil {
			return nil, false, err
		}
	}
	if lineageChanged {
		if old != nil {
			if _, err := tx.Exec(qDeleteEdges, nid); err != nil {
				return nil, false, err
			}
		}
		for _, p := range parents {
			if _, err := tx.Exec(qInsertEdge, nid, p); err != nil {
				return nil, false, err
			}
		}
	}
	if old == nil || searchTextChanged(&old.Node, &n) {
		tx.nodeText = append(tx.nodeText, nid)
	}
	if err := tx.nodeVersion(nid, &n); err != nil {
		return nil, false, err
	}
	if old == nil || old.Confidence != n.Confidence {
		var prev any
		if old != nil {
			prev = old.Confidence
		}
		reason := in.Reason
		if reason == "" {
			reason = "created"
			if old != nil {
				reason = "updated"
			}
		}
		if _, err := tx.Exec(qInsertConf, nid, n.Version, now, prev, n.Confidence, reason); err != nil {
			return nil, false, err
		}
	}
	if err := tx.AddEvent(event, scope, map[string]string{"ref": n.Ref}); err != nil {
		return nil, false, err
	}
	return &n, old == nil, nil
}

func dedupe(s []string) []string {
	out := make([]string, 0, len(s))
	for _, v := range s {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// nodeVersion keeps the version as the JSON the API serves for it.
func (tx *Tx) nodeVersion(nid int64, n *kura.Node) error {
	body, err := json.Marshal(n)
	if err != nil {
		return err
	}
	_, err = tx.Exec(qInsertVersion, nid, n.Version, n.UpdatedAt, string(body))
	return err
}

// PutNode writes one node (201 when created, 200 for a new version).
func (db *DB) PutNode(ctx context.Context, scope string, in *kura.NodeInput, opts ...kura.WriteOption) (*kura.Node, bool, error) {
	if err := in.Validate(db.nodeKinds(), ""); err != nil {
		return nil, false, err
	}
	var n *kura.Node
	var created bool
	err := db.write(ctx, opts, func(tx *Tx) error {
		sid, err := tx.scope(scope)
		if err != nil {
			return err
		}
		n, created, err = tx.putNode(sid, scope, in, "", "memory.node")
		if err != nil {
			return err
		}
		return tx.KeepAnswer(created, n)
	})
	if err != nil {
		return nil, false, mapErr(err)
	}
	return n, created, nil
}

// PutNodes writes a batch of nodes in one transaction: all or nothing.
// Later nodes may derive from earlier ones in the same batch.
func (db *DB) PutNodes(ctx context.Context, scope string, ins []kura.NodeInput, opts ...kura.WriteOption) ([]kura.Node, error) {
	if len(ins) == 0 || len(ins) > MaxNodeBatch {
		return nil, kura.Invalid("nodes", "a batch holds 1 to %d nodes", MaxNodeBatch)
	}
	for i := range ins {
		if err := ins[i].Validate(db.nodeKinds(), fmt.Sprintf("nodes[%d].", i)); err != nil {
			return nil, err
		}
	}
	out := make([]kura.Node, len(ins))
	err := db.write(ctx, opts, func(tx *Tx) error {
		sid, err := tx.scope(scope)
		if err != nil {
			return err
		}
		for i := range ins {
			n, _, err := tx.putNode(sid, scope, &ins[i], fmt.Sprintf("nodes[%d].", i), "memory.node")
			if err != nil {
				return err
			}
			out[i] = *n
		}
		return tx.KeepAnswer(true, kura.NodeBatch{Nodes: out})
	})
	if err != nil {
		return nil, mapErr(err)
	}
	return out, nil
}

// parseNodeRef checks a ref from a path or body.
func (db *DB) parseNodeRef(s, field string) (kura.Ref, error) {
	r, ok := kura.ParseRef(s, db.nodeKinds(), false)
	if !ok {
		return r, kura.Invalid(field, "%q is not a node ref (kind:id)", s)
	}
	return r, nil
}

// TransitionNode moves a node to another lifecycle as a new version.
func (db *DB) TransitionNode(ctx context.Context, scope, ref string, t *kura.Transition, opts ...kura.WriteOption) (*kura.Node, error) {
	r, err := db.parseNodeRef(ref, "ref")
	if err != nil {
		return nil, err
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	var n *kura.Node
	err = db.write(ctx, opts, func(tx *Tx) error {
		var err error
		n, err = tx.transition(scope, r, t.Lifecycle, t.Authority, t.Reason, t.Writer)
		if err != nil {
			return err
		}
		return tx.KeepAnswer(false, n)
	})
	if err != nil {
		return nil, mapErr(err)
	}
	return n, nil
}

// transition writes a node's next version with another lifecycle (and
// authority); putNode checks that w may write it.
func (tx *Tx) transition(scope string, r kura.Ref, lifecycle string, authority *string, reason string, w kura.Writer) (*kura.Node, error) {
	sid, err := tx.scope(scope)
	if err != nil {
		return nil, err
	}
	if _, err := tx.nodeByRef(sid, scope, r); err != nil {
		return nil, err
	}
	in := &kura.NodeInput{Kind: r.Kind, ID: r.ID, Lifecycle: &lifecycle, Authority: authority, Reason: reason, Writer: w}
	n, _, err := tx.putNode(sid, scope, in, "", "memory.lifecycle")
	return n, err
}

// reviseFault lets tests fail a revise between its steps.
var reviseFault func(step string) error

// ReviseNode replaces a node by a new one in one transaction: the new node
// (source_type revision, derived from the old), a supersedes relation from
// new to old, and the old node retired. Any failure leaves none of it.
func (db *DB) ReviseNode(ctx context.Context, scope, ref string, in *kura.NodeInput, opts ...kura.WriteOption) (*kura.Revision, error) {
	r, err := db.parseNodeRef(ref, "ref")
	if err != nil {
		return nil, err
	}
	if in.Kind == "" {
		in.Kind = r.Kind
	}
	if in.SourceType != nil && *in.SourceType != "revision" {
		return nil, kura.Invalid("source_type", "a revision's source_type is revision")
	}
	rev := "revision"
	in.SourceType = &rev
	in.DerivedFrom = dedupe(append([]string{r.String()}, in.DerivedFrom...))
	if err := in.Validate(db.nodeKinds(), ""); err != nil {
		return nil, err
	}
	var out kura.Revision
	err = db.write(ctx, opts, func(tx *Tx) error {
		sid, err := tx.scope(scope)
		if err != nil {
			return err
		}
		old, err := tx.nodeByRef(sid, scope, r)
		if err != nil {
			return err
		}
		// The revision stands in for the old node under its owner, and
		// retires it: both are rewrites of the old node.
		if err := kura.CheckNodeRewrite(old.Ref, old.Owner, in.Writer); err != nil {
			return err
		}
		if old.Lifecycle == "retired" {
			return kura.Errorf(kura.EConflict, "%s is retired; revise its successor", r)
		}
		if in.ID != "" {
			if _, err := tx.nodeByRef(sid, scope, kura.Ref{Kind: in.Kind, ID: in.ID}); err == nil {
				return kura.Errorf(kura.EConflict, "%s:%s already exists; a revision is a new node", in.Kind, in.ID).WithDetail("field", "id")
			}
		}
		// The revision takes the old node's place: what the body leaves out
		// is carried over.
		keep := func(dst **string, v string) {
			if *dst == nil {
				*dst = &v
			}
		}
		keep(&in.Title, old.Title)
		keep(&in.Summary, old.Summary)
		keep(&in.Lifecycle, old.Lifecycle)
		keep(&in.Authority, old.Authority)
		if in.Confidence == nil {
			in.Confidence = &old.Confidence
		}
		if in.TargetFiles == nil {
			in.TargetFiles = old.TargetFiles
		}
		if in.PayloadRef == nil {
			in.PayloadRef = old.PayloadRef
		}
		if in.Owner == nil {
			in.Owner = old.Owner
		}
		if in.Metadata == nil {
			in.Metadata = old.Metadata
		}
		n, _, err := tx.putNode(sid, scope, in, "", "memory.node")
		if err != nil {
			return err
		}
		if reviseFault != nil {
			if err := reviseFault("node"); err != nil {
				return err
			}
		}
		one := 1.0
		rel, err := tx.relate(sid, scope, &kura.RelationInput{Kind: "supersedes", From: n.Ref, To: old.Ref, Confidence: &one, Reasons: []string{"revision"}})
		if err != nil {
			return err
		}
		if reviseFault != nil {
			if err := reviseFault("relation"); err != nil {
				return err
			}
		}
		retired, err := tx.transition(scope, r, "retired", nil, "superseded by "+n.Ref, in.Writer)
		if err != nil {
			return err
		}
		out = kura.Revision{Node: n, Superseded: retired, Relation: rel}
		return tx.KeepAnswer(true, &out)
	})
	if err != nil {
		return nil, mapErr(err)
	}
	return &out, nil
}

// CreateRelation writes a relation between two nodes of the scope.
func (db *DB) CreateRelation(ctx context.Context, scope string, in *kura.RelationInput, opts ...kura.WriteOption) (*kura.Relation, error) {
	if err := in.Validate(db.nodeKinds()); err != nil {
		return nil, err
	}
	var rel *kura.Relation
	err := db.write(ctx, opts, func(tx *Tx) error {
		sid, err := tx.scope(scope)
		if err != nil {
			return err
		}
		rel, err = tx.relate(sid, scope, in)
		if err != nil {
			return err
		}
		return tx.KeepAnswer(true, rel)
	})
	if err != nil {
		return nil, mapErr(err)
	}
	return rel, nil
}

func (tx *Tx) relate(sid int64, scope string, in *kura.RelationInput) (*kura.Relation, error) {
	ends := [2]int64{}
	for i, s := range []string{in.From, in.To} {
		r, _ := kura.ParseRef(s, tx.db.nodeKinds(), false)
		if err := tx.QueryRow(qNodeNID, sid, r.Kind, r.ID).Scan(&ends[i]); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return nil, kura.Invalid([]string{"from", "to"}[i], "no node %s in scope %s", s, scope)
			}
			return nil, err
		}
	}
	rel := kura.Relation{ID: in.ID, Scope: scope, Kind: in.Kind, From: in.From, To: in.To, Confidence: 0.7,
		Reasons: in.Reasons, CreatedAt: tx.NowString()}
	if rel.ID == "" {
		rel.ID = uuid.Must(uuid.NewV7()).String()
	} else {
		var one int
		if err := tx.QueryRow(qRelationExists, sid, rel.ID).Scan(&one); err == nil {
			return nil, kura.Errorf(kura.EConflict, "relation %s already exists in scope %s", rel.ID, scope).WithDetail("field", "id")
		} else if !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
	}
	if in.Confidence != nil {
		rel.Confidence = *in.Confidence
	}
	if rel.Reasons == nil {
		rel.Reasons = []string{}
	}
	if _, err := tx.Exec(qInsertRelation, sid, rel.ID, rel.Kind, ends[0], ends[1], rel.Confidence, jsonList(rel.Reasons), rel.CreatedAt); err != nil {
		return nil, err
	}
	if err := tx.AddEvent(kura.EventMemoryRelation, scope, map[string]string{"relation_id": rel.ID}); err != nil {
		return nil, err
	}
	return &rel, nil
}

// CreateFeedback stores an outcome report on a node.
func (db *DB) CreateFeedback(ctx context.Context, scope string, in *kura.FeedbackInput, opts ...kura.WriteOption) (*kura.Feedback, error) {
	if err := in.Validate(db.nodeKinds()); err != nil {
		return nil, err
	}
	r, _ := kura.ParseRef(in.Ref, db.nodeKinds(), false)
	var fb *kura.Feedback
	err := db.write(ctx, opts, func(tx *Tx) error {
		sid, err := tx.scope(scope)
		if err != nil {
			return err
		}
		var nid int64
		if err := tx.QueryRow(qNodeNID, sid, r.Kind, r.ID).Scan(&nid); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return kura.Errorf(kura.ENotFound, "no node %s in scope %s", in.Ref, scope)
			}
			return err
		}
		fb = &kura.Feedback{ID: uuid.Must(uuid.NewV7()).String(), Scope: scope, Ref: in.Ref, Outcome: in.Outcome,
			Note: in.Note, AuthorID: in.AuthorID, CreatedAt: tx.NowString()}
		if _, err := tx.Exec(qInsertFeedback, fb.ID, sid, nid, fb.Outcome, fb.Note, fb.AuthorID, fb.CreatedAt); err != nil {
			return err
		}
		if err := tx.AddEvent(kura.EventMemoryFeedback, scope, map[string]string{"ref": in.Ref, "feedback_id": fb.ID}); err != nil {
			return err
		}
		return tx.KeepAnswer(true, fb)
	})
	if err != nil {
		return nil, mapErr(err)
	}
	return fb, nil
}

// readScope returns the key of a scope for reads; ok is false when the
// scope has never been written (so it holds nothing).
func (db *DB) readScope(ctx context.Context, scope string) (int64, bool, error) {
	var sid int64
	err := db.rdb.QueryRowContext(ctx, "SELECT sid FROM scopes WHERE name = ?", scope).Scan(&sid)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, mapErr(err)
	}
	return sid, true, nil
}

// GetNode reads a node's current version, or with asOf the version that
// was current at that instant.
func (db *DB) GetNode(ctx context.Context, scope, ref, asOf string) (*kura.Node, error) {
	r, err := db.parseNodeRef(ref, "ref")
	if err != nil {
		return nil, err
	}
	sid, ok, err := db.readScope(ctx, scope)
	if err != nil {
		return nil, err
	}
	notFound := kura.Errorf(kura.ENotFound, "no node %s in scope %s", r, scope)
	if !ok {
		return nil, notFound
	}
	if asOf == "" {
		n, err := scanNode(db.rdb.QueryRowContext(ctx, "SELECT "+nodeCols+" FROM nodes n WHERE n.sid = ? AND n.kind = ? AND n.id = ?", sid, r.Kind, r.ID), scope)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, notFound
		}
		if err != nil {
			return nil, mapErr(err)
		}
		return &n.Node, nil
	}
	var body string
	err = db.rdb.QueryRowContext(ctx, `SELECT v.body FROM nodes n JOIN node_versions v ON v.nid = n.nid
		WHERE n.sid = ? AND n.kind = ? AND n.id = ? AND v.valid_from <= ? ORDER BY v.version DESC LIMIT 1`,
		sid, r.Kind, r.ID, asOf).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, kura.Errorf(kura.ENotFound, "node %s did not exist in scope %s at %s", r, scope, asOf)
	}
	if err != nil {
		return nil, mapErr(err)
	}
	var n kura.Node
	if err := json.Unmarshal([]byte(body), &n); err != nil {
		return nil, err
	}
	return &n, nil
}

// NodeHistory lists every version of a node and its confidence changes.
func (db *DB) NodeHistory(ctx context.Context, scope, ref string) (*kura.NodeHistory, error) {
	r, err := db.parseNodeRef(ref, "ref")
	if err != nil {
		return nil, err
	}
	sid, ok, err := db.readScope(ctx, scope)
	if err != nil {
		return nil, err
	}
	var nid int64
	if ok {
		err = db.rdb.QueryRowContext(ctx, "SELECT nid FROM nodes WHERE sid = ? AND kind = ? AND id = ?", sid, r.Kind, r.ID).Scan(&nid)
	}
	if !ok || errors.Is(err, sql.ErrNoRows) {
		return nil, kura.Errorf(kura.ENotFound, "no node %s in scope %s", r, scope)
	}
	if err != nil {
		return nil, mapErr(err)
	}
	h := &kura.NodeHistory{Ref: r.String(), Versions: []json.RawMessage{}, ConfidenceHistory: []kura.ConfidenceChange{}}
	rows, err := db.rdb.QueryContext(ctx, "SELECT body FROM node_versions WHERE nid = ? ORDER BY version", nid)
	if err != nil {
		return nil, mapErr(err)
	}
	for rows.Next() {
		var b string
		if err := rows.Scan(&b); err != nil {
			rows.Close()
			return nil, mapErr(err)
		}
		h.Versions = append(h.Versions, json.RawMessage(b))
	}
	rows.Close()
	rows, err = db.rdb.QueryContext(ctx, "SELECT at, old, new, reason, version FROM confidence_history WHERE nid = ? ORDER BY version", nid)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		var c kura.ConfidenceChange
		var old sql.NullFloat64
		if err := rows.Scan(&c.At, &old, &c.New, &c.Reason, &c.Version); err != nil {
			return nil, mapErr(err)
		}
		if old.Valid {
			c.Old = &old.Float64
		}
		h.ConfidenceHistory = append(h.ConfidenceHistory, c)
	}
	return h, mapErr(rows.Err())
}

// ListNodes lists a scope's nodes in creation order, filtered.
func (db *DB) ListNodes(ctx context.Context, scope string, f kura.NodeFilter) ([]kura.Node, string, error) {
	sid, ok, err := db.readScope(ctx, scope)
	if err != nil || !ok {
		return []kura.Node{}, "", err
	}
	q := "SELECT " + nodeCols + " FROM nodes n WHERE n.sid = ?"
	args := []any{sid}
	for _, c := range []struct{ col, v string }{{"kind", f.Kind}, {"lifecycle", f.Lifecycle}, {"authority", f.Authority}, {"owner", f.Owner}} {
		if c.v != "" {
			q += " AND n." + c.col + " = ?"
			args = append(args, c.v)
		}
	}
	if f.MinConfidence != nil {
		q += " AND n.confidence >= ?"
		args = append(args, *f.MinConfidence)
	}
	if f.UpdatedSince != "" {
		q += " AND n.updated_at >= ?"
		args = append(args, f.UpdatedSince)
	}
	if f.After != "" {
		after, err := strconv.ParseInt(f.After, 10, 64)
		if err != nil {
			return nil, "", kura.Invalid("cursor", "bad cursor")
		}
		q += " AND n.nid > ?"
		args = append(args, after)
	}
	q += " ORDER BY n.nid LIMIT " + strconv.Itoa(f.Limit+1)
	rows, err := db.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, "", mapErr(err)
	}
	defer rows.Close()
	out := []kura.Node{}
	var last int64
	for rows.Next() {
		n, err := scanNode(rows, scope)
		if err != nil {
			return nil, "", mapErr(err)
		}
		if len(out) == f.Limit {
			return out, strconv.FormatInt(last, 10), nil
		}
		out = append(out, n.Node)
		last = n.nid
	}
	return out, "", mapErr(rows.Err())
}

// ListRelations lists a scope's relations touching ref (either end), or all
// of them, optionally of one kind, in creation order.
func (db *DB) ListRelations(ctx context.Context, scope, ref, kind, after string, limit int) ([]kura.Relation, string, error) {
	if ref != "" {
		if _, err := db.parseNodeRef(ref, "ref"); err != nil {
			return nil, "", err
		}
	}
	sid, ok, err := db.readScope(ctx, scope)
	if err != nil || !ok {
		return []kura.Relation{}, "", err
	}
	q := `SELECT r.rid, r.id, r.kind, f.kind || ':' || f.id, t.kind || ':' || t.id, r.confidence, r.reasons, r.created_at
		FROM relations r JOIN nodes f ON f.nid = r.from_nid JOIN nodes t ON t.nid = r.to_nid WHERE r.sid = ?`
	args := []any{sid}
	if ref != "" {
		r, err := db.parseNodeRef(ref, "ref")
		if err != nil {
			return nil, "", err
		}
		var nid int64
		err = db.rdb.QueryRowContext(ctx, "SELECT nid FROM nodes WHERE sid = ? AND kind = ? AND id = ?", sid, r.Kind, r.ID).Scan(&nid)
		if errors.Is(err, sql.ErrNoRows) {
			return []kura.Relation{}, "", nil
		}
		if err != nil {
			return nil, "", mapErr(err)
		}
		q += " AND r.rid IN (SELECT rid FROM relations WHERE from_nid = ?1 UNION SELECT rid FROM relations WHERE to_nid = ?1)"
		q = strings.Replace(q, "?1", "?", 1)
		q = strings.Replace(q, "?1", "?", 1)
		args = append(args, nid, nid)
	}
	if kind != "" {
		q += " AND r.kind = ?"
		args = append(args, kind)
	}
	if after != "" {
		a, err := strconv.ParseInt(after, 10, 64)
		if err != nil {
			return nil, "", kura.Invalid("cursor", "bad cursor")
		}
		q += " AND r.rid > ?"
		args = append(args, a)
	}
	q += " ORDER BY r.rid LIMIT " + strconv.Itoa(limit+1)
	rows, err := db.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, "", mapErr(err)
	}
	defer rows.Close()
	out := []kura.Relation{}
	var last int64
	for rows.Next() {
		var rel kura.Relation
		var rid int64
		var reasons string
		if err := rows.Scan(&rid, &rel.ID, &rel.Kind, &rel.From, &rel.To, &rel.Confidence, &reasons, &rel.CreatedAt); err != nil {
			return nil, "", mapErr(err)
		}
		if len(out) == limit {
			return out, strconv.FormatInt(last, 10), nil
		}
		rel.Scope = scope
		json.Unmarshal([]byte(reasons), &rel.Reasons)
		out = append(out, rel)
		last = rid
	}
	return out, "", mapErr(rows.Err())
}

// extractTurnMemory turns a closing turn's memory.fact and memory.decision
// records into candidate fact/decision nodes of the session's scope, each
// derived from its record and owned by its author, written by the closer
// (by). The node id is the record id, so a record extracted twice
// (appended to two turns) yields one node.
func (tx *Tx) extractTurnMemory(turnID, scope string, recs [][2]string, by string) ([]string, error) {
	refs := make([]string, 0, len(recs))
	if len(recs) == 0 {
		return refs, nil
	}
	sid, err := tx.scope(scope)
	if err != nil {
		return nil, err
	}
	for i, e := range recs {
		rid, kind := e[0], e[1]
		ref := kind + ":" + rid
		if _, err := tx.nodeByRef(sid, scope, kura.Ref{Kind: kind, ID: rid}); err == nil {
			refs = append(refs, ref)
		} else if !kura.IsCode(err, kura.ENotFound) {
			return nil, err
		} else {
			rec, err := scanRecord(tx.QueryRow(qRecordByID, rid))
			if err != nil {
				return nil, err
			}
			title, summary := extractText(rec.Content)
			if rec.Redacted {
				// Redacted while the turn was open: its content is gone
				// and must not come back through a node.
				title, summary = "", "(redacted record)"
			}
			lc, st, owner := "candidate", "promote", rec.AuthorID
			in := &kura.NodeInput{Kind: kind, ID: rid, Title: &title, Summary: &summary, Lifecycle: &lc, SourceType: &st,
				Owner: &owner, DerivedFrom: []string{"record:" + rid}, Reason: "extracted from turn " + turnID,
				Writer: kura.Writer{Identity: by}}
			n, _, err := tx.putNode(sid, scope, in, "", "memory.node")
			if err != nil {
				return nil, err
			}
			refs = append(refs, n.Ref)
		}
		if _, err := tx.Exec(qInsertExtract, turnID, i, ref); err != nil {
			return nil, err
		}
	}
	return refs, nil
}

// extractText picks a title and summary out of a memory record's content: a
// JSON string is the summary; an object offers "title" and
// "text"/"summary"/"statement"; anything else is summarised as its JSON.
func extractText(content json.RawMessage) (string, string) {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return "", truncate(s, kura.MaxSummary)
	}
	var m map[string]any
	if json.Unmarshal(content, &m) == nil {
		title, _ := m["title"].(string)
		for _, k := range []string{"text", "summary", "statement", "decision", "fact"} {
			if v, ok := m[k].(string); ok && v != "" {
				return truncate(title, kura.MaxTitle), truncate(v, kura.MaxSummary)
			}
		}
		return truncate(title, kura.MaxTitle), truncate(string(content), kura.MaxSummary)
	}
	return "", truncate(string(content), kura.MaxSummary)
}

// truncate cuts s to at most n bytes on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// drainPendingExtractions extracts the memory records that turns closed
// before the memory graph existed (schema 2) left queued, so no promised
// extraction is lost by an upgrade.
func (db *DB) drainPendingExtractions(ctx context.Context) error {
	var one int
	err := db.rdb.QueryRowContext(ctx, "SELECT 1 FROM pending_extractions LIMIT 1").Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	return db.Update(ctx, func(tx *Tx) error {
		rows, err := tx.Query("SELECT turn_id, record_id, scope, kind FROM pending_extractions ORDER BY turn_id, created_at, record_id")
		if err != nil {
			return err
		}
		type item struct{ turn, rec, scope, kind string }
		var items []item
		for rows.Next() {
			var it item
			if err := rows.Scan(&it.turn, &it.rec, &it.scope, &it.kind); err != nil {
				rows.Close()
				return err
			}
			items = append(items, it)
		}
		rows.Close()
		if err := rows.Err(); err != nil || len(items) == 0 {
			return err
		}
		for i := 0; i < len(items); {
			j := i
			var recs [][2]string
			for ; j < len(items) && items[j].turn == items[i].turn; j++ {
				recs = append(recs, [2]string{items[j].rec, items[j].kind})
			}
			if _, err := tx.extractTurnMemory(items[i].turn, items[i].scope, recs, kuradIdentity); err != nil {
				return err
			}
			i = j
		}
		db.log.Info("extracted memory queued by an older kurad", "records", len(items))
		_, err = tx.Exec("DELETE FROM pending_extractions")
		return err
	})
}
