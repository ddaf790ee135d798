package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/kura-memory/kura/internal/kura"
)

// putNode writes a node: a new node (version 1) or a new version of an
// existing one (what it inherits and defaults to is kura.MergeNode), with its version row, confidence history, lineage edges
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
	var base *kura.Node
	if old != nil {
		if err := kura.CheckNodeRewrite(old.Ref, old.Owner, in.Writer); err != nil {
			return nil, false, err
		}
		base = &old.Node
	}
	n, lineageChanged, err := kura.MergeNode(base, in, scope, now, field)
	if err != nil {
		return nil, false, err
	}

	var parents []int64
	if lineageChanged {
		if parents, err = tx.vertices(sid, scope, n.DerivedFrom, field+"derived_from"); err != nil {
			return nil, false, err
		}
	}

	var nid int64
	files, derived := jsonList(n.TargetFiles), jsonList(n.DerivedFrom)
	if old == nil {
		err := tx.QueryRow(qInsertNode, sid, n.Kind, n.ID, n.Version, n.Title, n.Summary, n.Lifecycle, n.Authority, n.Confidence,
			files, nullable(n.PayloadRef), nullable(n.Owner), n.SourceType, derived, string(n.Metadata), n.CreatedAt, n.UpdatedAt, nullable(&n.WrittenBy)).Scan(&nid)
		if err != nil {
			return nil, false, err
		}
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
		if _, err := tx.Exec(qInsertConf, nid, n.Version, now, prev, n.Confidence, kura.ConfidenceReason(in.Reason, old == nil)); err != nil {
			return nil, false, err
		}
	}
	if err := tx.AddEvent(event, scope, map[string]string{"ref": n.Ref}, objectDigest(n)); err != nil {
		return nil, false, err
	}
	return &n, old == nil, nil
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
		n, created, err = tx.putNode(sid, scope, in, "", kura.EventMemoryNode)
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
			n, _, err := tx.putNode(sid, scope, &ins[i], fmt.Sprintf("nodes[%d].", i), kura.EventMemoryNode)
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
	n, _, err := tx.putNode(sid, scope, in, "", kura.EventMemoryLifecycle)
	return n, err
}

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
	in.DerivedFrom = kura.Dedupe(append([]string{r.String()}, in.DerivedFrom...))
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
		n, _, err := tx.putNode(sid, scope, in, "", kura.EventMemoryNode)
		if err != nil {
			return err
		}
		if f := db.cfg.Hooks.Revise; f != nil {
			if err := f("node"); err != nil {
				return err
			}
		}
		one := 1.0
		rel, err := tx.relate(sid, scope, &kura.RelationInput{Kind: "supersedes", From: n.Ref, To: old.Ref, Confidence: &one, Reasons: []string{"revision"}})
		if err != nil {
			return err
		}
		if f := db.cfg.Hooks.Revise; f != nil {
			if err := f("relation"); err != nil {
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
