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
	"sync"

	"github.com/google/uuid"
	"github.com/kura-memory/kura/internal/kb"
	"github.com/kura-memory/kura/internal/kura"
)

var (
	qKBSpace       = wsql("SELECT sp FROM kb_spaces WHERE kb = ? AND scope = ?")
	qKBInsertSpace = wsql("INSERT INTO kb_spaces(kb, scope) VALUES(?,?)")
	qKBAddCount    = wsql("UPDATE kb_spaces SET entries = entries + ? WHERE sp = ?")
	qKBEntry       = wsql("SELECT eid, id, identifier, keys, value, version, created_at FROM kb_entries WHERE sp = ? AND identifier = ?")
	// The live entries and the last versions of many identifiers at once:
	// a batch asks once, not once per entry.
	qKBEntries      = wsql("SELECT eid, id, identifier, keys, value, version, created_at FROM kb_entries WHERE sp = ? AND identifier IN (SELECT value FROM json_each(?))")
	qKBLastVersions = wsql("SELECT identifier, max(version) FROM kb_history WHERE sp = ? AND identifier IN (SELECT value FROM json_each(?)) GROUP BY identifier")
	qKBMaxEID       = wsql("SELECT coalesce(max(eid), 0) FROM kb_entries")
	qKBUpdateEntry  = wsql("UPDATE kb_entries SET keys = ?, value = ?, version = ?, updated_at = ? WHERE eid = ?")
	qKBDeleteEntry  = wsql("DELETE FROM kb_entries WHERE eid = ?")
	qKBDeleteFwd    = wsql("DELETE FROM kb_entry_words WHERE eid = ?")
	qKBDeleteWords  = wsql("DELETE FROM kb_words WHERE sp = ? AND word IN (SELECT value FROM json_each(?)) AND eid = ?")
	qKBDeleteKeys   = wsql("DELETE FROM kb_keys WHERE sp = ? AND key IN (SELECT value FROM json_each(?)) AND eid = ?")
	qKBScopeEntries = wsql("SELECT id, identifier, version FROM kb_entries WHERE sp = ? ORDER BY eid")
	qKBClearWords   = wsql("DELETE FROM kb_words WHERE sp = ?")
	qKBClearKeys    = wsql("DELETE FROM kb_keys WHERE sp = ?")
	qKBClearEntries = wsql("DELETE FROM kb_entries WHERE sp = ?")
	qKBClearFwd     = wsql("DELETE FROM kb_entry_words WHERE eid IN (SELECT eid FROM kb_entries WHERE sp = ?)")
	qKBZeroCount    = wsql("UPDATE kb_spaces SET entries = 0, gen = gen + 1 WHERE sp = ?")
	qKBBumpGen      = wsql("UPDATE kb_spaces SET gen = gen + 1 WHERE sp = ?")
	qKBClearDF      = wsql("DELETE FROM kb_df WHERE sp = ?")
)

// Term kinds of kb_df.
const (
	dfWord = 0
	dfKey  = 1
)

// dfDelta accumulates changes to the document frequencies of a job and
// writes them in one multi-row upsert.
type dfDelta map[dfTerm]int

type dfTerm struct {
	sp   int64
	kind int
	term string
}

func (d dfDelta) add(sp int64, kind int, terms []string, by int) {
	for _, t := range terms {
		d[dfTerm{sp, kind, t}] += by
	}
}

// rekey records a key set changing from one list to another.
func (d dfDelta) rekey(sp int64, from, to []string) {
	fa, fb := kb.FoldKeys(from), kb.FoldKeys(to)
	for _, k := range fa {
		if !slices.Contains(fb, k) {
			d[dfTerm{sp, dfKey, k}]--
		}
	}
	for _, k := range fb {
		if !slices.Contains(fa, k) {
			d[dfTerm{sp, dfKey, k}]++
		}
	}
}

// write also moves the generation of every space whose postings changed,
// even by a net zero (one entry's key moved to another entry).
func (d dfDelta) write(tx *Tx) error {
	args := make([]any, 0, 4*len(d))
	var sps []int64
	for t, n := range d {
		if n != 0 {
			args = append(args, t.sp, t.kind, t.term, n)
		}
		if !slices.Contains(sps, t.sp) {
			sps = append(sps, t.sp)
		}
	}
	for _, sp := range sps {
		if _, err := tx.Exec(qKBBumpGen, sp); err != nil {
			return err
		}
	}
	return kbRows["df"].exec(tx, args)
}

// Multi-row inserts: a batch of 1,000 entries writes some 15,000 index and
// history rows, and one statement per row would cost the writer more in
// calls than SQLite spends inserting. Full chunks use a statement prepared
// at Open; the remainder one prepared for the transaction.
var kbRows = map[string]*multiRow{
	"entries": newMultiRow("INSERT INTO kb_entries(eid, sp, id, identifier, keys, value, version, created_at, updated_at) VALUES ", 9, 100),
	"forward": newMultiRow("INSERT INTO kb_entry_words(eid, words) VALUES ", 2, 250),
	"words":   newMultiRow("INSERT INTO kb_words(sp, word, eid, sig, sig2) VALUES ", 5, 200),
	"keys":    newMultiRow("INSERT INTO kb_keys(sp, key, eid, sig, sig2) VALUES ", 5, 200),
	"history": newMultiRow("INSERT INTO kb_history(sp, identifier, version, op, entry_id, keys, value, at) VALUES ", 8, 100),
	"df":      newMultiRow("INSERT INTO kb_df(sp, kind, term, n) VALUES ", 4, 250, " ON CONFLICT(sp, kind, term) DO UPDATE SET n = n + excluded.n"),
}

// multiRow is an INSERT of up to chunk rows of cols values each.
type multiRow struct {
	head, tail  string
	cols, chunk int
	full        string // the statement for a full chunk
}

func newMultiRow(head string, cols, chunk int, tail ...string) *multiRow {
	m := &multiRow{head: head, tail: strings.Join(tail, ""), cols: cols, chunk: chunk}
	m.full = wsql(m.sql(chunk))
	return m
}

func (m *multiRow) sql(rows int) string {
	row := "(?" + strings.Repeat(",?", m.cols-1) + ")"
	return m.head + row + strings.Repeat(","+row, rows-1) + m.tail
}

// exec inserts args, a whole number of rows of m.cols values.
func (m *multiRow) exec(tx *Tx, args []any) error {
	per := m.cols * m.chunk
	for len(args) > 0 {
		n := min(len(args), per)
		q := m.full
		if n < per {
			q = m.sql(n / m.cols)
		}
		if _, err := tx.Exec(q, args[:n]...); err != nil {
			return err
		}
		args = args[n:]
	}
	return nil
}

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
		res, err := tx.Exec(qKBInsertSpace, name, scope)
		if err != nil {
			return s, false, err
		}
		s.sp, err = res.LastInsertId()
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
func (tx *Tx) kbChanged(s kbSpace, entryID string) error {
	return tx.AddEvent("kb.changed", kura.KBScopeName(s.scope), map[string]string{"kb": s.kb, "entry_id": entryID})
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

// termRows appends the index rows of an entry's words, or of its folded
// keys: each term once, each row carrying the signature of them all.
func termRows(args []any, sp, eid int64, terms []string) []any {
	lo, hi := kb.Signature(terms)
	for _, t := range terms {
		args = append(args, sp, t, eid, lo, hi)
	}
	return args
}

// wordSep delimits the words of kb_entry_words.words; no word holds it.
const wordSep = "\x1f"

// wordsColumn is kb_entry_words.words: "\x1fw1\x1fw2\x1f", so that w is
// a word exactly when instr(words, "\x1f"+w+"\x1f") > 0.
func wordsColumn(words []string) string {
	return wordSep + strings.Join(words, wordSep) + wordSep
}

// sameKeys reports whether two key lists are one key set once folded
// (then their index rows, signatures included, are the same).
func sameKeys(a, b []string) bool {
	fa, fb := kb.FoldKeys(a), kb.FoldKeys(b)
	if len(fa) != len(fb) {
		return false
	}
	for _, k := range fa {
		if !slices.Contains(fb, k) {
			return false
		}
	}
	return true
}

// rekey replaces an entry's key rows when its key set changed: the
// signature on every row changes with the set, so all rows are rewritten.
func (tx *Tx) rekey(sp, eid int64, from, to []string) error {
	if sameKeys(from, to) {
		return nil
	}
	if len(from) > 0 {
		if _, err := tx.Exec(qKBDeleteKeys, sp, jsonList(kb.FoldKeys(from)), eid); err != nil {
			return err
		}
	}
	if err := kbRows["keys"].exec(tx, termRows(nil, sp, eid, kb.FoldKeys(to))); err != nil {
		return err
	}
	d := dfDelta{}
	d.rekey(sp, from, to)
	return d.write(tx)
}

// kbPut applies the upserts of one write job in order and writes what they
// leave behind when it flushes: new entries and their index rows, replaced
// entries' final rows, every version, in multi-row statements. What a job
// knows of each identifier lives in state, read for all its identifiers at
// once, so an identifier given twice in a batch is created then replaced.
type kbPut struct {
	tx      *Tx
	now     string
	nextEID int64 // eids are handed out here: inserts carry them
	state   map[kbIdent]*kbState
	inserts []*kbState
	updates []*kbState
	history []any
	counts  map[int64]int
}

type kbIdent struct {
	sp         int64
	identifier string
}

// kbState is an identifier of a space as the job sees it.
type kbState struct {
	s        kbSpace
	e        kura.KBEntry
	eid      int64
	live     bool
	last     int      // the identifier's last version when not live (0: never)
	origKeys []string // the keys stored before this job, for a live entry
	fresh    bool     // inserted by this job
	dirty    bool     // a stored entry this job replaced
}

func (tx *Tx) newKBPut() (*kbPut, error) {
	p := &kbPut{tx: tx, now: tx.NowString(), state: map[kbIdent]*kbState{}, counts: map[int64]int{}}
	if err := tx.QueryRow(qKBMaxEID).Scan(&p.nextEID); err != nil {
		return nil, err
	}
	p.nextEID++
	return p, nil
}

// load reads the state of identifiers of one space.
func (p *kbPut) load(s kbSpace, identifiers []string) error {
	var want []string
	for _, id := range identifiers {
		k := kbIdent{s.sp, id}
		if _, ok := p.state[k]; !ok {
			p.state[k] = &kbState{s: s}
			want = append(want, id)
		}
	}
	if len(want) == 0 {
		return nil
	}
	rows, err := p.tx.Query(qKBEntries, s.sp, jsonList(want))
	if err != nil {
		return err
	}
	for rows.Next() {
		r, err := scanKBRow(rows, s.scope)
		if err != nil {
			rows.Close()
			return err
		}
		st := p.state[kbIdent{s.sp, r.Identifier}]
		st.e, st.eid, st.live, st.origKeys = r.KBEntry, r.eid, true, r.Keys
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	var gone []string
	for _, id := range want {
		if !p.state[kbIdent{s.sp, id}].live {
			gone = append(gone, id)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	rows, err = p.tx.Query(qKBLastVersions, s.sp, jsonList(gone))
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var v int
		if err := rows.Scan(&id, &v); err != nil {
			return err
		}
		p.state[kbIdent{s.sp, id}].last = v
	}
	return rows.Err()
}

// put upserts one entry whose identifier was loaded; created reports a new
// entry. A replace keeps the entry's id, eid (its position) and creation
// time; a new entry takes the version after the identifier's last one, so
// versions count on across deletes.
func (p *kbPut) put(s kbSpace, in *kura.KBEntryInput) (kura.KBEntry, bool, error) {
	st := p.state[kbIdent{s.sp, in.Identifier}]
	keys := in.Keys
	if keys == nil {
		keys = []string{}
	}
	created := !st.live
	if st.live {
		st.e.Keys, st.e.Value, st.e.Version, st.e.UpdatedAt = keys, in.Value, st.e.Version+1, p.now
		if !st.fresh && !st.dirty {
			st.dirty = true
			p.updates = append(p.updates, st)
		}
	} else {
		st.live, st.fresh, st.eid = true, true, p.nextEID
		p.nextEID++
		st.e = kura.KBEntry{ID: uuid.Must(uuid.NewV7()).String(), Scope: s.scope, Identifier: in.Identifier, Keys: keys,
			Value: in.Value, Version: st.last + 1, CreatedAt: p.now, UpdatedAt: p.now}
		p.inserts = append(p.inserts, st)
		p.counts[s.sp]++
	}
	p.history = historyRow(p.history, s.sp, st.e.Identifier, st.e.Version, kura.KBOpPut, st.e.ID, st.e.Keys, &st.e.Value, p.now)
	if err := p.tx.kbChanged(s, st.e.ID); err != nil {
		return kura.KBEntry{}, false, err
	}
	return st.e, created, nil
}

// flush writes everything the puts left: final rows only, so an entry
// replaced twice in a batch is written once.
func (p *kbPut) flush() error {
	var entries, forward, words, keys []any
	df := dfDelta{}
	for _, st := range p.inserts {
		e := &st.e
		ws, ks := kb.Words(e.Identifier), kb.FoldKeys(e.Keys)
		entries = append(entries, st.eid, st.s.sp, e.ID, e.Identifier, jsonList(e.Keys), e.Value, e.Version, e.CreatedAt, e.UpdatedAt)
		forward = append(forward, st.eid, wordsColumn(ws))
		words = termRows(words, st.s.sp, st.eid, ws)
		keys = termRows(keys, st.s.sp, st.eid, ks)
		df.add(st.s.sp, dfWord, ws, 1)
		df.add(st.s.sp, dfKey, ks, 1)
	}
	if err := kbRows["entries"].exec(p.tx, entries); err != nil {
		return err
	}
	for _, st := range p.updates {
		e := &st.e
		if _, err := p.tx.Exec(qKBUpdateEntry, jsonList(e.Keys), e.Value, e.Version, e.UpdatedAt, st.eid); err != nil {
			return err
		}
		if sameKeys(st.origKeys, e.Keys) {
			continue
		}
		if len(st.origKeys) > 0 {
			if _, err := p.tx.Exec(qKBDeleteKeys, st.s.sp, jsonList(kb.FoldKeys(st.origKeys)), st.eid); err != nil {
				return err
			}
		}
		keys = termRows(keys, st.s.sp, st.eid, kb.FoldKeys(e.Keys))
		df.rekey(st.s.sp, st.origKeys, e.Keys)
	}
	if err := df.write(p.tx); err != nil {
		return err
	}
	for _, r := range []struct {
		table string
		args  []any
	}{{"forward", forward}, {"words", words}, {"keys", keys}, {"history", p.history}} {
		if err := kbRows[r.table].exec(p.tx, r.args); err != nil {
			return err
		}
	}
	for sp, n := range p.counts {
		if _, err := p.tx.Exec(qKBAddCount, n, sp); err != nil {
			return err
		}
	}
	return nil
}

// PutKBEntry upserts one entry of knowledge base name; created is true for
// a new entry (201) and false for a replaced one (200).
func (db *DB) PutKBEntry(ctx context.Context, name string, in *kura.KBEntryInput) (*kura.KBEntry, bool, error) {
	if err := validKBName(name); err != nil {
		return nil, false, err
	}
	if err := in.Validate(""); err != nil {
		return nil, false, err
	}
	var e kura.KBEntry
	var created bool
	err := db.Update(ctx, func(tx *Tx) error {
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
		status := 200
		if created {
			status = 201
		}
		return tx.Answer(status, &e)
	})
	if err != nil {
		return nil, false, mapErr(err)
	}
	return &e, created, nil
}

// PutKBEntries upserts up to MaxKBBatch entries in one transaction: all or
// nothing. Entries are applied in order, so an identifier given twice ends
// as its last entry (one created, one replaced).
func (db *DB) PutKBEntries(ctx context.Context, name string, ins []kura.KBEntryInput) (*kura.KBBatch, error) {
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
	err := db.Update(ctx, func(tx *Tx) error {
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
		return tx.Answer(200, out)
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
func (db *DB) UpdateKBEntry(ctx context.Context, name string, p *kura.KBPatch) (*kura.KBEntry, error) {
	if err := validKBName(name); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var e *kura.KBEntry
	err := db.Update(ctx, func(tx *Tx) error {
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
			if err := tx.rekey(s.sp, old.eid, old.Keys, p.Keys); err != nil {
				return err
			}
			e.Keys = p.Keys
		}
		if _, err := tx.Exec(qKBUpdateEntry, jsonList(e.Keys), e.Value, e.Version, e.UpdatedAt, old.eid); err != nil {
			return err
		}
		if err := tx.kbHistory(s, e.Identifier, e.Version, op, e.ID, e.Keys, &e.Value); err != nil {
			return err
		}
		if err := tx.kbChanged(s, e.ID); err != nil {
			return err
		}
		return tx.Answer(200, e)
	})
	if err != nil {
		return nil, mapErr(err)
	}
	return e, nil
}

// DeleteKBEntry deletes the entry with this exact identifier; its history
// stays and gains a tombstone. It answers 1, or not_found.
func (db *DB) DeleteKBEntry(ctx context.Context, name, scope, identifier string) (int, error) {
	if err := validKBName(name); err != nil {
		return 0, err
	}
	if err := kura.ValidKBIdentifier("identifier", identifier); err != nil {
		return 0, err
	}
	if !kura.ValidKBScope(scope) {
		return 0, kura.Invalid("scope", "scope must be empty (the default scope) or a slug")
	}
	err := db.Update(ctx, func(tx *Tx) error {
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
		if _, err := tx.Exec(qKBDeleteWords, s.sp, jsonList(kb.Words(identifier)), old.eid); err != nil {
			return err
		}
		if _, err := tx.Exec(qKBDeleteKeys, s.sp, jsonList(kb.FoldKeys(old.Keys)), old.eid); err != nil {
			return err
		}
		for _, q := range []string{qKBDeleteEntry, qKBDeleteFwd} {
			if _, err := tx.Exec(q, old.eid); err != nil {
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
		if err := tx.kbChanged(s, old.ID); err != nil {
			return err
		}
		return tx.Answer(200, kura.KBDeleted{Deleted: 1})
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
func (db *DB) ClearKB(ctx context.Context, name, scope string) (int, error) {
	if err := validKBName(name); err != nil {
		return 0, err
	}
	if !kura.ValidKBScope(scope) {
		return 0, kura.Invalid("scope", "scope must be empty (the default scope) or a slug")
	}
	var n int
	err := db.Update(ctx, func(tx *Tx) error {
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
		return tx.Answer(200, kura.KBDeleted{Deleted: n})
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
		if err := tx.kbChanged(s, g.id); err != nil {
			return 0, err
		}
	}
	if err := kbRows["history"].exec(tx, history); err != nil {
		return 0, err
	}
	for _, q := range []string{qKBClearWords, qKBClearKeys, qKBClearFwd, qKBClearEntries, qKBZeroCount, qKBClearDF} {
		if _, err := tx.Exec(q, s.sp); err != nil {
			return 0, err
		}
	}
	return len(all), nil
}

// readKBSpace finds a space for a read; ok is false when it was never
// written (so it holds nothing).
func readKBSpace(ctx context.Context, q queryer, name, scope string) (sp int64, entries int, ok bool, err error) {
	sp, entries, _, ok, err = readKBSpaceGen(ctx, q, name, scope)
	return sp, entries, ok, err
}

// readKBSpaceGen also reads the generation of the space's postings.
func readKBSpaceGen(ctx context.Context, q queryer, name, scope string) (sp int64, entries int, gen int64, ok bool, err error) {
	err = q.QueryRowContext(ctx, "SELECT sp, entries, gen FROM kb_spaces WHERE kb = ? AND scope = ?", name, scope).Scan(&sp, &entries, &gen)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, 0, false, nil
	}
	return sp, entries, gen, err == nil, err
}

// queryer is a read pool or a read transaction.
type queryer interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}

// stmtCache keeps the prepared statements of knowledge-base reads by SQL
// text. A query's text depends only on its shape (how many words and keys
// of which kind), so a handful of statements serve every query, and
// preparing one costs as much as running a small query.
type stmtCache struct {
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// maxKBStmts bounds the cache: shapes beyond it run unprepared.
const maxKBStmts = 256

func (c *stmtCache) get(q string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[q]
}

// kbTx is one read snapshot of the knowledge-base routes.
type kbTx struct {
	db   *DB
	tx   *sql.Tx
	miss []string
}

func (db *DB) kbRead(ctx context.Context) (*kbTx, error) {
	tx, err := db.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, mapErr(err)
	}
	return &kbTx{db: db, tx: tx}, nil
}

func (r *kbTx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if s := r.db.kbStmts.get(q); s != nil {
		return r.tx.StmtContext(ctx, s).QueryContext(ctx, args...)
	}
	r.miss = append(r.miss, q)
	return r.tx.QueryContext(ctx, q, args...)
}

func (r *kbTx) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	if s := r.db.kbStmts.get(q); s != nil {
		return r.tx.StmtContext(ctx, s).QueryRowContext(ctx, args...)
	}
	r.miss = append(r.miss, q)
	return r.tx.QueryRowContext(ctx, q, args...)
}

// end closes the snapshot, then prepares the statements it missed. It
// prepares only once its own connection is back in the pool: preparing
// takes a connection, and a reader that held one while waiting for
// another could wait forever once every reader did.
func (r *kbTx) end() {
	r.tx.Rollback()
	if len(r.miss) == 0 {
		return
	}
	c := &r.db.kbStmts
	for _, q := range r.miss {
		c.mu.Lock()
		_, have := c.m[q]
		full := len(c.m) >= maxKBStmts
		c.mu.Unlock()
		if have || full {
			continue
		}
		s, err := r.db.rdb.PrepareContext(context.Background(), q)
		if err != nil {
			continue // it runs unprepared, as it did now
		}
		c.mu.Lock()
		if c.m == nil {
			c.m = map[string]*sql.Stmt{}
		}
		if _, have := c.m[q]; have || len(c.m) >= maxKBStmts {
			s.Close()
		} else {
			c.m[q] = s
		}
		c.mu.Unlock()
	}
}

const kbEntryCols = "e.eid, e.id, e.identifier, e.keys, e.value, e.version, e.created_at, e.updated_at"

func scanKBEntry(row rowScanner, scope string) (*kura.KBEntry, int64, error) {
	e := kura.KBEntry{Scope: scope}
	var eid int64
	var keys string
	if err := row.Scan(&eid, &e.ID, &e.Identifier, &keys, &e.Value, &e.Version, &e.CreatedAt, &e.UpdatedAt); err != nil {
		return nil, 0, err
	}
	var err error
	if e.Keys, err = decodeKeys(keys); err != nil {
		return nil, 0, fmt.Errorf("kb entry %s: keys: %w", e.ID, err)
	}
	return &e, eid, nil
}

// decodeKeys reads a stored key list. A page decodes a hundred of them,
// and most hold no escape, so those are split by hand; anything else goes
// through encoding/json.
func decodeKeys(s string) ([]string, error) {
	if len(s) >= 2 && s[0] == '[' && s[len(s)-1] == ']' && !strings.ContainsRune(s, '\\') {
		body := s[1 : len(s)-1]
		if body == "" {
			return []string{}, nil
		}
		// Without escapes a quote only delimits, so the keys are the
		// quoted runs between "," separators.
		if body[0] == '"' && body[len(body)-1] == '"' {
			parts := strings.Split(body[1:len(body)-1], `","`)
			ok := true
			for _, p := range parts {
				if strings.ContainsRune(p, '"') {
					ok = false
					break
				}
			}
			if ok {
				return parts, nil
			}
		}
	}
	var keys []string
	err := json.Unmarshal([]byte(s), &keys)
	return keys, err
}

// kbPosting is one condition of a query as a set of index rows: the
// postings of one word or key, or the union of several keys (any_keys).
type kbPosting struct {
	table, col string
	kind       int // its kb_df kind
	vals       []string
	size       int // rows, from kb_df: exact for one value, a bound for a union
}

func (p *kbPosting) in() string { return p.col + " IN (?" + strings.Repeat(",?", len(p.vals)-1) + ")" }

func (p *kbPosting) args(sp int64) []any {
	a := make([]any, 0, len(p.vals)+1)
	a = append(a, sp)
	for _, v := range p.vals {
		a = append(a, v)
	}
	return a
}

// kbPlan turns a query into postings, or reports that nothing can match.
func kbPlan(q *kura.KBQuery) (ps []*kbPosting, none bool) {
	seen := map[string]bool{}
	add := func(table, col string, kind int, vals ...string) {
		key := table + "\x00" + strings.Join(vals, "\x00")
		if !seen[key] {
			seen[key] = true
			ps = append(ps, &kbPosting{table: table, col: col, kind: kind, vals: vals})
		}
	}
	if q.Identifier != nil {
		for _, w := range kb.Words(*q.Identifier) {
			add("kb_words", "word", dfWord, w)
		}
	}
	if q.Key != nil {
		add("kb_keys", "key", dfKey, kb.Fold(*q.Key))
	}
	if q.AnyKeys != nil {
		keys := kb.FoldKeys(q.AnyKeys)
		if len(keys) == 0 {
			return nil, true
		}
		add("kb_keys", "key", dfKey, keys...)
	}
	for _, k := range kb.FoldKeys(q.AllKeys) {
		add("kb_keys", "key", dfKey, k)
	}
	return ps, false
}

// QueryKB answers GET /v1/kb/{kb}/entries: the matching entries of one
// scope in insertion order, one page, and the number of matches. The
// rarest condition (its size is kept in kb_df) drives the scan; the other
// words or keys of its table are first tested against the driving row's
// signature, then every condition is confirmed with an index lookup. So a
// query reads the postings of its most selective word or key, never every
// entry. Count and page come from one read snapshot.
func (db *DB) QueryKB(ctx context.Context, name string, q kura.KBQuery) (*kura.KBPage, error) {
	if err := validKBName(name); err != nil {
		return nil, err
	}
	if !kura.ValidKBScope(q.Scope) {
		return nil, kura.Invalid("scope", "scope must be empty (the default scope) or a slug")
	}
	rtx, err := db.kbRead(ctx)
	if err != nil {
		return nil, err
	}
	defer rtx.end()
	page, err := queryKB(ctx, rtx, name, &q)
	return page, mapErr(err)
}

// kbSizes reads the size of every posting from kb_df: one statement per
// kind of term, whatever the number of words and keys.
func kbSizes(ctx context.Context, rtx *kbTx, sp int64, ps []*kbPosting) error {
	for kind := range 2 {
		var terms []string
		for _, p := range ps {
			if p.kind == kind {
				terms = append(terms, p.vals...)
			}
		}
		if len(terms) == 0 {
			continue
		}
		rows, err := rtx.QueryContext(ctx, "SELECT term, n FROM kb_df WHERE sp = ? AND kind = ? AND term IN (SELECT value FROM json_each(?))", sp, kind, jsonList(terms))
		if err != nil {
			return err
		}
		n := map[string]int{}
		for rows.Next() {
			var t string
			var c int
			if err := rows.Scan(&t, &c); err != nil {
				rows.Close()
				return err
			}
			n[t] = c
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, p := range ps {
			if p.kind == kind {
				for _, v := range p.vals {
					p.size += n[v]
				}
			}
		}
	}
	return nil
}

// kbStatements are the statements that answer a query: one page, and the
// count of every match when it is not known without counting (count < 0).
type kbStatements struct {
	count, page         string
	countArgs, pageArgs []any
	known               int // the count when no statement is needed, else -1

	// What the cached plan needs (kbcache.go): the space, the generation
	// of its postings in this snapshot, and every condition.
	sp, gen  int64
	postings []*kbPosting
}

// prepareKB plans q: it finds the space, turns the conditions into index
// postings, reads their sizes and builds the statements with the rarest
// driving. done is set (with page) when the answer is known without them:
// no such space, or a condition nothing meets.
func prepareKB(ctx context.Context, rtx *kbTx, name string, q *kura.KBQuery, limit int) (st *kbStatements, page *kura.KBPage, done bool, err error) {
	page = &kura.KBPage{Entries: []kura.KBEntry{}}
	sp, total, gen, ok, err := readKBSpaceGen(ctx, rtx, name, q.Scope)
	if err != nil || !ok {
		return nil, page, true, err
	}
	ps, none := kbPlan(q)
	if none {
		return nil, page, true, nil
	}
	if err := kbSizes(ctx, rtx, sp, ps); err != nil {
		return nil, nil, true, err
	}
	for _, p := range ps {
		if p.size == 0 {
			return nil, page, true, nil // a condition no entry meets
		}
	}
	slices.SortStableFunc(ps, func(a, b *kbPosting) int { return a.size - b.size })
	st = &kbStatements{known: -1, sp: sp, gen: gen, postings: slices.Clone(ps)}
	plain := q.ExactIdentifier == nil && len(ps) == 0
	switch {
	case plain:
		st.known = total // the space keeps its size
	case q.ExactIdentifier == nil && len(ps) == 1 && len(ps[0].vals) == 1:
		st.known = ps[0].size
	}
	if st.known == 0 {
		return nil, page, true, nil
	}

	// from and where select the candidates; eid names their entry column.
	var from, eid string
	var where []string
	var args []any
	switch {
	case q.ExactIdentifier != nil:
		from, eid = "kb_entries e", "e.eid"
		where = append(where, "e.sp = ?", "e.identifier = ?")
		args = append(args, sp, *q.ExactIdentifier)
	case plain:
		from, eid = "kb_entries e", "e.eid"
		where = append(where, "e.sp = ?")
		args = append(args, sp)
	case len(ps[0].vals) == 1:
		from, eid = ps[0].table+" d", "d.eid"
		where = append(where, "d.sp = ?", "d."+ps[0].col+" = ?")
		args = append(args, ps[0].args(sp)...)
		// The other words (or keys) of the driving table are in the
		// driving row's signature: a row missing one of their bits is
		// skipped before any lookup, and the lookups below confirm the
		// rest exactly.
		var same []string
		for _, p := range ps[1:] {
			if p.table == ps[0].table && len(p.vals) == 1 {
				same = append(same, p.vals[0])
			}
		}
		if lo, hi := kb.Signature(same); lo|hi != 0 {
			where = append(where, "(d.sig & ?) = ?", "(d.sig2 & ?) = ?")
			args = append(args, lo, lo, hi, hi)
		}
		ps = ps[1:]
	default:
		// A union of keys: an entry holding two of them counts once.
		from, eid = "(SELECT DISTINCT eid FROM "+ps[0].table+" WHERE sp = ? AND "+ps[0].in()+") d", "d.eid"
		args = append(args, ps[0].args(sp)...)
		ps = ps[1:]
	}
	// Words are confirmed in the entry's word row (kb_entry_words), keys
	// with an index lookup each (a key may hold any character, so it has
	// no delimited form to search).
	wordJoin := ""
	for _, p := range ps {
		if p.table == "kb_words" {
			where = append(where, "instr(w.words, ?) > 0")
			args = append(args, wordSep+p.vals[0]+wordSep)
			wordJoin = " CROSS JOIN kb_entry_words w ON w.eid = " + eid
		}
	}
	for _, p := range ps {
		if p.table != "kb_words" {
			where = append(where, "EXISTS (SELECT 1 FROM "+p.table+" x WHERE x.sp = ? AND x."+p.in()+" AND x.eid = "+eid+")")
			args = append(args, p.args(sp)...)
		}
	}
	join := ""
	if eid != "e.eid" {
		join = " CROSS JOIN kb_entries e ON e.eid = d.eid"
	}
	if st.known < 0 {
		// The count may start after the page's last match (see queryKB):
		// the last argument is the eid to count from, 0 for all.
		st.count = "SELECT count(*) FROM " + from + wordJoin + " WHERE " + strings.Join(append(slices.Clone(where), eid+" > ?"), " AND ")
		st.countArgs = args
	}
	st.page = "SELECT " + kbEntryCols + " FROM " + from + wordJoin + join
	pageArgs := slices.Clone(args)
	if q.After > 0 {
		where = append(where, eid+" > ?")
		pageArgs = append(pageArgs, q.After)
	}
	if len(where) > 0 {
		st.page += " WHERE " + strings.Join(where, " AND ")
	}
	st.page += " ORDER BY " + eid + " LIMIT ?"
	st.pageArgs = append(pageArgs, limit+1)
	return st, page, false, nil
}

func queryKB(ctx context.Context, rtx *kbTx, name string, q *kura.KBQuery) (*kura.KBPage, error) {
	limit := q.Limit
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	st, page, done, err := prepareKB(ctx, rtx, name, q, limit)
	if err != nil || done {
		return page, err
	}
	if st.cached(q, rtx.db.kbPostings.minSize()) {
		if page, ok, err := cachedQueryKB(ctx, rtx, st, q, limit); err != nil || ok {
			return page, err
		}
	}
	rows, err := rtx.QueryContext(ctx, st.page, st.pageArgs...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var last int64
	for rows.Next() {
		e, id, err := scanKBEntry(rows, q.Scope)
		if err != nil {
			return nil, err
		}
		if len(page.Entries) == limit {
			page.NextCursor = strconv.FormatInt(last, 10)
			break
		}
		page.Entries = append(page.Entries, *e)
		last = id
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	switch {
	case st.known >= 0:
		page.Count = st.known
	case q.After == 0 && page.NextCursor == "":
		// The first page holds every match: nothing more to count.
		page.Count = len(page.Entries)
	case q.After == 0:
		// A full first page: its matches are counted already, so the
		// count reads on from its last one instead of reading them again.
		var rest int
		if err := rtx.QueryRowContext(ctx, st.count, append(st.countArgs, last)...).Scan(&rest); err != nil {
			return nil, err
		}
		page.Count = len(page.Entries) + rest
	default:
		if err := rtx.QueryRowContext(ctx, st.count, append(st.countArgs, 0)...).Scan(&page.Count); err != nil {
			return nil, err
		}
	}
	return page, nil
}

// LookupKB runs kb.LookupQueries for q in one snapshot and returns the
// first that matches anything (Count says how many matched in all).
func (db *DB) LookupKB(ctx context.Context, name, scope, q string, limit int) (*kura.KBPage, error) {
	if err := validKBName(name); err != nil {
		return nil, err
	}
	if !kura.ValidKBScope(scope) {
		return nil, kura.Invalid("scope", "scope must be empty (the default scope) or a slug")
	}
	rtx, err := db.kbRead(ctx)
	if err != nil {
		return nil, err
	}
	defer rtx.end()
	var page *kura.KBPage
	for _, lq := range kb.LookupQueries(scope, q) {
		lq.Limit = limit
		if page, err = queryKB(ctx, rtx, name, &lq); err != nil || page.Count > 0 {
			break
		}
	}
	return page, mapErr(err)
}

// KBStats answers GET /v1/kb/{kb}/stats: the number of entries of a scope
// and one page of its identifiers, in insertion order.
func (db *DB) KBStats(ctx context.Context, name, scope string, after int64, limit int) (*kura.KBStats, error) {
	if err := validKBName(name); err != nil {
		return nil, err
	}
	if !kura.ValidKBScope(scope) {
		return nil, kura.Invalid("scope", "scope must be empty (the default scope) or a slug")
	}
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	st := &kura.KBStats{Identifiers: []string{}}
	rtx, err := db.kbRead(ctx)
	if err != nil {
		return nil, err
	}
	defer rtx.end()
	sp, n, ok, err := readKBSpace(ctx, rtx, name, scope)
	if err != nil || !ok {
		return st, mapErr(err)
	}
	st.Count = n
	rows, err := rtx.QueryContext(ctx, "SELECT eid, identifier FROM kb_entries WHERE sp = ? AND eid > ? ORDER BY eid LIMIT ?", sp, after, limit+1)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	var last int64
	for rows.Next() {
		var eid int64
		var ident string
		if err := rows.Scan(&eid, &ident); err != nil {
			return nil, mapErr(err)
		}
		if len(st.Identifiers) == limit {
			st.NextCursor = strconv.FormatInt(last, 10)
			break
		}
		st.Identifiers = append(st.Identifiers, ident)
		last = eid
	}
	return st, mapErr(rows.Err())
}

// KBHistory answers GET /v1/kb/{kb}/history: the versions of an identifier
// in a scope after version after, oldest first; not_found when the
// identifier never existed there.
func (db *DB) KBHistory(ctx context.Context, name, scope, identifier string, after, limit int) (*kura.KBHistory, error) {
	if err := validKBName(name); err != nil {
		return nil, err
	}
	if !kura.ValidKBScope(scope) {
		return nil, kura.Invalid("scope", "scope must be empty (the default scope) or a slug")
	}
	if err := kura.ValidKBIdentifier("identifier", identifier); err != nil {
		return nil, err
	}
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	h := &kura.KBHistory{Identifier: identifier, Versions: []kura.KBVersion{}}
	rtx, err := db.kbRead(ctx)
	if err != nil {
		return nil, err
	}
	defer rtx.end()
	sp, _, ok, err := readKBSpace(ctx, rtx, name, scope)
	if err != nil {
		return nil, mapErr(err)
	}
	var one int
	if ok {
		err = rtx.QueryRowContext(ctx, "SELECT 1 FROM kb_history WHERE sp = ? AND identifier = ? LIMIT 1", sp, identifier).Scan(&one)
	}
	if !ok || errors.Is(err, sql.ErrNoRows) {
		return nil, kura.Errorf(kura.ENotFound, "identifier %q never existed in knowledge base %s%s", identifier, name, scopeText(scope))
	}
	if err != nil {
		return nil, mapErr(err)
	}
	rows, err := rtx.QueryContext(ctx, "SELECT version, op, entry_id, keys, value, at FROM kb_history WHERE sp = ? AND identifier = ? AND version > ? ORDER BY version LIMIT ?",
		sp, identifier, after, limit+1)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		var v kura.KBVersion
		var keys, value sql.NullString
		if err := rows.Scan(&v.Version, &v.Op, &v.ID, &keys, &value, &v.At); err != nil {
			return nil, mapErr(err)
		}
		if len(h.Versions) == limit {
			h.NextCursor = strconv.Itoa(h.Versions[limit-1].Version)
			break
		}
		if keys.Valid {
			if err := json.Unmarshal([]byte(keys.String), &v.Keys); err != nil {
				return nil, fmt.Errorf("kb history %q v%d: keys: %w", identifier, v.Version, err)
			}
		}
		if value.Valid {
			v.Value = &value.String
		}
		h.Versions = append(h.Versions, v)
	}
	return h, mapErr(rows.Err())
}
