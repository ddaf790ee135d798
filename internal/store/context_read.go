package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/kura-memory/kura/internal/admission"
	"github.com/kura-memory/kura/internal/kura"
)

// scopeRead is a scope's memory as a compile reads it: its nodes without
// their summaries (up to 16 KiB each: a compile keeps a few items, and
// reading every summary of a scope held them all, for every compile), the
// relations that may decide, and each node's row, where the summaries of
// the few a bundle keeps are read (summaries).
type scopeRead struct {
	nodes []kura.Node
	rels  []kura.Relation
	nids  map[string]int64 // ref → nodes.nid
}

// scopeMemory reads a scope's nodes (of kinds, or all) and relations as they
// were at asOf, from one snapshot. current reads the nodes table itself
// (no version lookups) when asOf is now. A past read hands each node, with
// its text, to rank (when not nil) before it lets the text go.
func scopeMemory(ctx context.Context, q queryer, scope, asOf string, current, withText bool, kinds []string, rank *pastRanker) (*scopeRead, error) {
	out := &scopeRead{nids: map[string]int64{}}
	var sid int64
	err := q.QueryRowContext(ctx, "SELECT sid FROM scopes WHERE name = ?", scope).Scan(&sid)
	if errors.Is(err, sql.ErrNoRows) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	kindSQL, args := "", []any{sid}
	if len(kinds) > 0 {
		kindSQL = " AND n.kind IN (?" + strings.Repeat(",?", len(kinds)-1) + ")"
		for _, k := range kinds {
			args = append(args, k)
		}
	}
	// The node structs are large: size the slice once rather than grow it
	// (growing was a fifth of the read in a 10,000-node scope).
	var count int
	if err := q.QueryRowContext(ctx, "SELECT count(*) FROM nodes n WHERE n.sid = ?"+kindSQL, args...).Scan(&count); err != nil {
		return nil, err
	}
	out.nodes = make([]kura.Node, 0, count)
	out.nids = make(map[string]int64, count)
	if current {
		// Only what admission reads: a compile reads every node of the
		// scope, and the summaries, the lineage and unused JSON columns
		// would be most of the decoding and of what is held. Target files
		// (which explain a compile asked about files) come only with a
		// query or target files; the search index ranks a query, so no
		// other text is read.
		cols := "n.nid, n.kind, n.id, n.title, n.lifecycle, n.authority, n.confidence, n.payload_ref, n.updated_at"
		if withText {
			cols += ", n.target_files"
		}
		rows, err := q.QueryContext(ctx, "SELECT "+cols+" FROM nodes n WHERE n.sid = ?"+kindSQL, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var n kura.Node
			var nid int64
			var payload sql.NullString
			var files string
			dst := []any{&nid, &n.Kind, &n.ID, &n.Title, &n.Lifecycle, &n.Authority, &n.Confidence, &payload, &n.UpdatedAt}
			if withText {
				dst = append(dst, &files)
			}
			if err := rows.Scan(dst...); err != nil {
				rows.Close()
				return nil, err
			}
			n.Ref, n.Scope = n.Kind+":"+n.ID, scope
			if payload.Valid {
				n.PayloadRef = &payload.String
			}
			if withText && files != "[]" { // "[]", the usual case, holds nothing to decode
				if err := json.Unmarshal([]byte(files), &n.TargetFiles); err != nil {
					rows.Close()
					return nil, fmt.Errorf("node %s: target_files: %w", n.Ref, err)
				}
			}
			out.nodes = append(out.nodes, n)
			out.nids[n.Ref] = nid
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	} else {
		// The version current at asOf: the newest whose valid_from is not
		// after it. Nodes created later have none and drop out.
		rows, err := q.QueryContext(ctx, `SELECT n.nid, `+versionAt+` AS body FROM nodes n WHERE n.sid = ?`+kindSQL+` AND n.created_at <= ?`,
			append(append([]any{asOf}, args...), asOf)...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var nid int64
			var body sql.NullString
			if err := rows.Scan(&nid, &body); err != nil {
				rows.Close()
				return nil, err
			}
			if !body.Valid {
				continue
			}
			var n kura.Node
			if err := json.Unmarshal([]byte(body.String), &n); err != nil {
				rows.Close()
				return nil, fmt.Errorf("node version: %w", err)
			}
			if rank != nil {
				rank.add(&n)
			}
			// What admission does not read goes: summaries are read again
			// for the items a bundle may keep.
			n.Summary, n.Metadata, n.DerivedFrom, n.Owner = "", nil, nil, nil
			if !withText {
				n.TargetFiles = nil
			}
			out.nodes = append(out.nodes, n)
			out.nids[n.Ref] = nid
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	// Only relations that can decide are read (admission.DecidingRelations).
	deciding, minConf := admission.DecidingRelations()
	relArgs := []any{sid, asOf, minConf}
	for _, k := range deciding {
		relArgs = append(relArgs, k)
	}
	rows, err := q.QueryContext(ctx, `SELECT r.id, r.kind, f.kind || ':' || f.id, t.kind || ':' || t.id, r.confidence, r.created_at
		FROM relations r JOIN nodes f ON f.nid = r.from_nid JOIN nodes t ON t.nid = r.to_nid
		WHERE r.sid = ? AND r.created_at <= ? AND r.confidence >= ?
		AND r.kind IN (?`+strings.Repeat(",?", len(deciding)-1)+`)`, relArgs...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var r kura.Relation
		if err := rows.Scan(&r.ID, &r.Kind, &r.From, &r.To, &r.Confidence, &r.CreatedAt); err != nil {
			return nil, err
		}
		r.Scope = scope
		out.rels = append(out.rels, r)
	}
	return out, rows.Err()
}

// versionAt is the body of node n's version current at the instant of its
// one parameter.
const versionAt = `(SELECT v.body FROM node_versions v WHERE v.nid = n.nid AND v.valid_from <= ? ORDER BY v.version DESC LIMIT 1)`

// summaries reads, from the snapshot of q, the summaries of nodes a
// compile read with scopeMemory (nids): of their current rows, or of the
// versions current at asOf when past. Compile asks a batch at a time,
// only for nodes it may still keep.
func summaries(ctx context.Context, q queryer, pg bool, nids map[string]int64, asOf string, past bool) admission.Texts {
	return func(nodes []*kura.Node) ([]string, error) {
		keys := make([]byte, 0, 2+12*len(nodes))
		open, end := byte('['), byte(']')
		if pg {
			open, end = '{', '}'
		}
		keys = append(keys, open)
		for i, n := range nodes {
			if i > 0 {
				keys = append(keys, ',')
			}
			keys = strconv.AppendInt(keys, nids[n.Ref], 10)
		}
		keys = append(keys, end)
		col, args := "n.summary", []any{string(keys)}
		if past {
			col, args = versionAt, []any{asOf, string(keys)}
		}
		from := " FROM json_each(?) j CROSS JOIN nodes n ON n.nid = j.value"
		if pg {
			from = " FROM nodes n WHERE n.nid = ANY(CAST(CAST(? AS TEXT) AS BIGINT[]))"
		}
		rows, err := q.QueryContext(ctx, "SELECT n.nid, "+col+from, args...)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		got := make(map[int64]string, len(nodes))
		for rows.Next() {
			var nid int64
			var text sql.NullString
			if err := rows.Scan(&nid, &text); err != nil {
				return nil, err
			}
			if past && text.Valid {
				var v struct {
					Summary string `json:"summary"`
				}
				if err := json.Unmarshal([]byte(text.String), &v); err != nil {
					return nil, fmt.Errorf("node version: %w", err)
				}
				text.String = v.Summary
			}
			got[nid] = text.String
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
		out := make([]string, len(nodes))
		for i, n := range nodes {
			s, ok := got[nids[n.Ref]]
			if !ok {
				// The snapshot that read the node reads its summary:
				// a node without one is damage.
				return nil, fmt.Errorf("node %s: no summary in the snapshot", n.Ref)
			}
			out[i] = s
		}
		return out, nil
	}
}
