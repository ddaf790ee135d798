package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/kura-memory/kura/internal/kb"
	"github.com/kura-memory/kura/internal/kura"
)

const (
	qKBSpace       = "SELECT sp FROM kb_spaces WHERE kb = ? AND scope = ?"
	qKBInsertSpace = "INSERT INTO kb_spaces(kb, scope) VALUES(?,?) RETURNING sp"
	qKBAddCount    = "UPDATE kb_spaces SET entries = entries + ? WHERE sp = ?"
	qKBEntry       = "SELECT eid, id, identifier, keys, value, version, created_at FROM kb_entries WHERE sp = ? AND identifier = ?"
	// The live entries and the last versions of many identifiers at once:
	// a batch asks once, not once per entry.
	qKBEntries      = "SELECT eid, id, identifier, keys, value, version, created_at FROM kb_entries WHERE sp = ? AND identifier IN (SELECT value FROM json_each(?))"
	qKBLastVersions = "SELECT identifier, max(version) FROM kb_history WHERE sp = ? AND identifier IN (SELECT value FROM json_each(?)) GROUP BY identifier"
	qKBMaxEID       = "SELECT coalesce(max(eid), 0) FROM kb_entries"
	qKBUpdateEntry  = "UPDATE kb_entries SET keys = ?, value = ?, version = ?, updated_at = ? WHERE eid = ?"
	qKBDeleteEntry  = "DELETE FROM kb_entries WHERE eid = ?"
	qKBDeleteTerms  = "DELETE FROM kb_terms WHERE rowid = ?"
	qKBDeleteFTS    = "DELETE FROM kb_fts WHERE rowid = ?"
	qKBUpdateTerms  = "UPDATE kb_terms SET terms = ? WHERE rowid = ?"
	qKBUpdateFTS    = "UPDATE kb_fts SET identifier = ?, keys = ?, value = ? WHERE rowid = ?"
	qKBScopeEntries = "SELECT id, identifier, version FROM kb_entries WHERE sp = ? ORDER BY eid"
	qKBClearTerms   = "DELETE FROM kb_terms WHERE rowid BETWEEN ? AND ?"
	qKBClearFTS     = "DELETE FROM kb_fts WHERE rowid BETWEEN ? AND ?"
	qKBClearEntries = "DELETE FROM kb_entries WHERE sp = ?"
	qKBZeroCount    = "UPDATE kb_spaces SET entries = 0, gen = gen + 1 WHERE sp = ?"
	qKBBumpGen      = "UPDATE kb_spaces SET gen = gen + 1 WHERE sp = ?"
	qKBClearDF      = "DELETE FROM kb_df WHERE sp = ?"
)

// kbSpace is a (knowledge base, scope) pair and its key.
type kbSpace struct {
	sp        int64
	kb, scope string
}

// kbRow is a live entry as the writer reads it.
type kbRow struct {
	kura.KBEntry
	eid int64
}

func validKBName(name string) error {
	if !kura.ValidSlug(name) {
		return kura.Invalid("kb", "knowledge base name must be a slug (lowercase letters, digits, - and _)")
	}
	return nil
}

// kbSpace returns the space of (kb, scope); with create it is made on
// first use, else ok is false when it does not exist (so it holds nothing
// and nothing is written for it).
func (tx *Tx) kbSpace(name, scope string, create bool) (s kbSpace, ok bool, err error) {
	s = kbSpace{kb: name, scope: scope}
	err = tx.QueryRow(qKBSpace, name, scope).Scan(&s.sp)
	if errors.Is(err, sql.ErrNoRows) {
		if !create {
			return s, false, nil
		}
		err := tx.QueryRow(qKBInsertSpace, name, scope).Scan(&s.sp)
		return s, err == nil, err
	}
	return s, err == nil, err
}

func scanKBRow(row rowScanner, scope string) (*kbRow, error) {
	r := kbRow{KBEntry: kura.KBEntry{Scope: scope}}
	var keys string
	if err := row.Scan(&r.eid, &r.ID, &r.Identifier, &keys, &r.Value, &r.Version, &r.CreatedAt); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(keys), &r.Keys); err != nil {
		return nil, fmt.Errorf("kb entry %q: keys: %w", r.Identifier, err)
	}
	return &r, nil
}

// kbEntry reads the live entry with this exact identifier, or nil.
func (tx *Tx) kbEntry(s kbSpace, identifier string) (*kbRow, error) {
	r, err := scanKBRow(tx.QueryRow(qKBEntry, s.sp, identifier), s.scope)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return r, err
}

// kbChanged appends the event of a change to an entry. Like memory and
// context events it carries its scope as its project, so the feed and the
// NATS subjects keep one scope's knowledge apart from another's.
func (tx *Tx) kbChanged(s kbSpace, entryID, digest string) error {
	return tx.AddEvent(kura.EventKBChanged, kura.KBScopeName(s.scope), map[string]string{"kb": s.kb, "entry_id": entryID}, digest)
}

// kbHistory writes one version row now (the single-entry changes: patch,
// delete, clear). A nil keys is a tombstone.
func (tx *Tx) kbHistory(s kbSpace, identifier string, version int, op, entryID string, keys []string, value *string) error {
	return kbRows["history"].exec(tx, historyRow(nil, s.sp, identifier, version, op, entryID, keys, value, tx.NowString()))
}

func historyRow(args []any, sp int64, identifier string, version int, op, entryID string, keys []string, value *string, at string) []any {
	var k, v any
	if keys != nil {
		k = jsonList(keys)
	}
	if value != nil {
		v = *value
	}
	return append(args, sp, identifier, version, op, entryID, k, v, at)
}

// PutKBEntry upserts one entry of knowledge base name; created is true for
// a new entry (201) and false for a replaced one (200).
func (db *DB) PutKBEntry(ctx context.Context, name string, in *kura.KBEntryInput, opts ...kura.WriteOption) (*kura.KBEntry, bool, error) {
	if err := validKBName(name); err != nil {
		return nil, false, err
	}
	if err := in.Validate(""); err != nil {
		return nil, false, err
	}
	var e kura.KBEntry
	var created bool
	err := db.write(ctx, opts, func(tx *Tx) error {
		s, _, err := tx.kbSpace(name, in.Scope, true)
		if err != nil {
			return err
		}
		p, err := tx.newKBPut()
		if err != nil {
			return err
		}
		if err := p.load(s, []string{in.Identifier}); err != nil {
			return err
		}
		if e, created, err = p.put(s, in); err != nil {
			return err
		}
		if err := p.flush(); err != nil {
			return err
		}
		return tx.KeepAnswer(created, &e)
	})
	if err != nil {
		return nil, false, mapErr(err)
	}
	return &e, created, nil
}

// PutKBEntries upserts up to MaxKBBatch entries in one transaction: all or
// nothing. Entries are applied in order, so an identifier given twice ends
// as its last entry (one created, one replaced).
func (db *DB) PutKBEntries(ctx context.Context, name string, ins []kura.KBEntryInput, opts ...kura.WriteOption) (*kura.KBBatch, error) {
	if err := validKBName(name); err != nil {
		return nil, err
	}
	if len(ins) == 0 || len(ins) > kura.MaxKBBatch {
		return nil, kura.Invalid("entries", "a batch holds 1 to %d entries", kura.MaxKBBatch)
	}
	for i := range ins {
		if err := ins[i].Validate(fmt.Sprintf("entries[%d].", i)); err != nil {
			return nil, err
		}
	}
	byScope := map[string][]string{}
	for i := range ins {
		byScope[ins[i].Scope] = append(byScope[ins[i].Scope], ins[i].Identifier)
	}
	var out *kura.KBBatch
	err := db.write(ctx, opts, func(tx *Tx) error {
		out = &kura.KBBatch{Entries: make([]kura.KBEntry, len(ins))}
		p, err := tx.newKBPut()
		if err != nil {
			return err
		}
		spaces := map[string]kbSpace{}
		for scope, ids := range byScope {
			s, _, err := tx.kbSpace(name, scope, true)
			if err != nil {
				return err
			}
			spaces[scope] = s
			if err := p.load(s, ids); err != nil {
				return err
			}
		}
		for i := range ins {
			e, created, err := p.put(spaces[ins[i].Scope], &ins[i])
			if err != nil {
				return err
			}
			out.Entries[i] = e
			if created {
				out.Created++
			} else {
				out.Replaced++
			}
		}
		if err := p.flush(); err != nil {
			return err
		}
		return tx.KeepAnswer(false, out)
	})
	if err != nil {
		return nil, mapErr(err)
	}
	return out, nil
}

func kbNotFound(name, scope, identifier string) error {
	return kura.Errorf(kura.ENotFound, "no entry %q in knowledge base %s%s", identifier, name, scopeText(scope))
}

func scopeText(scope string) string {
	if scope == "" {
		return " (default scope)"
	}
	return ", scope " + scope
}

// UpdateKBEntry changes the value, the keys or both of the entry with this
// exact identifier (not_found when there is none) as one new version.
func (db *DB) UpdateKBEntry(ctx context.Context, name string, p *kura.KBPatch, opts ...kura.WriteOption) (*kura.KBEntry, error) {
	if err := validKBName(name); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var e *kura.KBEntry
	err := db.write(ctx, opts, func(tx *Tx) error {
		s, ok, err := tx.kbSpace(name, p.Scope, false)
		if err != nil {
			return err
		}
		var old *kbRow
		if ok {
			if old, err = tx.kbEntry(s, p.Identifier); err != nil {
				return err
			}
		}
		if old == nil {
			return kbNotFound(name, p.Scope, p.Identifier)
		}
		e = &old.KBEntry
		e.Version++
		e.UpdatedAt = tx.NowString()
		op := kura.KBOpUpdateKeys
		if p.Value != nil {
			e.Value, op = *p.Value, kura.KBOpUpdate
		}
		if p.Keys != nil {
			if err := tx.rekey(s.sp, old.eid, e.Identifier, old.Keys, p.Keys); err != nil {
				return err
			}
			e.Keys = p.Keys
		}
		if _, err := tx.Exec(qKBUpdateEntry, jsonList(e.Keys), e.Value, e.Version, e.UpdatedAt, old.eid); err != nil {
			return err
		}
		if err := tx.updateKBFTS(kbRowid(s.sp, old.eid), e); err != nil {
			return err
		}
		if err := tx.kbHistory(s, e.Identifier, e.Version, op, e.ID, e.Keys, &e.Value); err != nil {
			return err
		}
		if err := tx.kbChanged(s, e.ID, kbDigest(e.Identifier, e.Version, op, e.ID, e.Keys, &e.Value)); err != nil {
			return err
		}
		return tx.KeepAnswer(false, e)
	})
	if err != nil {
		return nil, mapErr(err)
	}
	return e, nil
}

// DeleteKBEntry deletes the entry with this exact identifier; its history
// stays and gains a tombstone. It answers 1, or not_found.
func (db *DB) DeleteKBEntry(ctx context.Context, name, scope, identifier string, opts ...kura.WriteOption) (int, error) {
	if err := validKBName(name); err != nil {
		return 0, err
	}
	if err := kura.ValidKBIdentifier("identifier", identifier); err != nil {
		return 0, err
	}
	if !kura.ValidKBScope(scope) {
		return 0, kura.Invalid("scope", "scope must be empty (the default scope) or a slug")
	}
	err := db.write(ctx, opts, func(tx *Tx) error {
		s, ok, err := tx.kbSpace(name, scope, false)
		if err != nil {
			return err
		}
		var old *kbRow
		if ok {
			if old, err = tx.kbEntry(s, identifier); err != nil {
				return err
			}
		}
		if old == nil {
			return kbNotFound(name, scope, identifier)
		}
		if _, err := tx.Exec(qKBDeleteEntry, old.eid); err != nil {
			return err
		}
		for _, q := range []string{qKBDeleteTerms, qKBDeleteFTS} {
			if _, err := tx.Exec(q, kbRowid(s.sp, old.eid)); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(qKBAddCount, -1, s.sp); err != nil {
			return err
		}
		df := dfDelta{}
		df.add(s.sp, dfWord, kb.Words(identifier), -1)
		df.add(s.sp, dfKey, kb.FoldKeys(old.Keys), -1)
		if err := df.write(tx); err != nil {
			return err
		}
		if err := tx.kbHistory(s, identifier, old.Version+1, kura.KBOpDelete, old.ID, nil, nil); err != nil {
			return err
		}
		if err := tx.kbChanged(s, old.ID, kbDigest(identifier, old.Version+1, kura.KBOpDelete, old.ID, nil, nil)); err != nil {
			return err
		}
		return tx.KeepAnswer(false, kura.KBDeleted{Deleted: 1})
	})
	if err != nil {
		return 0, mapErr(err)
	}
	return 1, nil
}

// ClearKB removes every entry of one scope and answers how many there
// were. Other scopes of the knowledge base are untouched. Each removed
// entry gets a tombstone version and its own kb.changed event, as a
// delete would.
func (db *DB) ClearKB(ctx context.Context, name, scope string, opts ...kura.WriteOption) (int, error) {
	if err := validKBName(name); err != nil {
		return 0, err
	}
	if !kura.ValidKBScope(scope) {
		return 0, kura.Invalid("scope", "scope must be empty (the default scope) or a slug")
	}
	var n int
	err := db.write(ctx, opts, func(tx *Tx) error {
		n = 0
		s, ok, err := tx.kbSpace(name, scope, false)
		if err != nil {
			return err
		}
		if ok {
			if n, err = tx.clearKB(s); err != nil {
				return err
			}
		}
		return tx.KeepAnswer(false, kura.KBDeleted{Deleted: n})
	})
	if err != nil {
		return 0, mapErr(err)
	}
	return n, nil
}

func (tx *Tx) clearKB(s kbSpace) (int, error) {
	rows, err := tx.Query(qKBScopeEntries, s.sp)
	if err != nil {
		return 0, err
	}
	type gone struct {
		id, identifier string
		version        int
	}
	var all []gone
	for rows.Next() {
		var g gone
		if err := rows.Scan(&g.id, &g.identifier, &g.version); err != nil {
			rows.Close()
			return 0, err
		}
		all = append(all, g)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	var history []any
	for _, g := range all {
		history = historyRow(history, s.sp, g.identifier, g.version+1, kura.KBOpClear, g.id, nil, nil, tx.NowString())
		if err := tx.kbChanged(s, g.id, kbDigest(g.identifier, g.version+1, kura.KBOpClear, g.id, nil, nil)); err != nil {
			return 0, err
		}
	}
	if err := kbRows["history"].exec(tx, history); err != nil {
		return 0, err
	}
	lo, hi := kbRange(s.sp)
	for _, q := range []string{qKBClearTerms, qKBClearFTS} {
		if _, err := tx.Exec(q, lo, hi); err != nil {
			return 0, err
		}
	}
	for _, q := range []string{qKBClearEntries, qKBZeroCount, qKBClearDF} {
		if _, err := tx.Exec(q, s.sp); err != nil {
			return 0, err
		}
	}
	return len(all), nil
}
