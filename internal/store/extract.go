package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/kura-memory/kura/internal/kura"
)

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
			n, _, err := tx.putNode(sid, scope, in, "", kura.EventMemoryNode)
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
