package store

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

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
	qKBDeleteTerms  = wsql("DELETE FROM kb_terms WHERE rowid = ?")
	qKBDeleteFTS    = wsql("DELETE FROM kb_fts WHERE rowid = ?")
	qKBUpdateTerms  = wsql("UPDATE kb_terms SET terms = ? WHERE rowid = ?")
	qKBUpdateFTS    = wsql("UPDATE kb_fts SET identifier = ?, keys = ?, value = ? WHERE rowid = ?")
	qKBScopeEntries = wsql("SELECT id, identifier, version FROM kb_entries WHERE sp = ? ORDER BY eid")
	qKBClearTerms   = wsql("DELETE FROM kb_terms WHERE rowid BETWEEN ? AND ?")
	qKBClearFTS     = wsql("DELETE FROM kb_fts WHERE rowid BETWEEN ? AND ?")
	qKBClearEntries = wsql("DELETE FROM kb_entries WHERE sp = ?")
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

// Multi-row inserts: a batch of 1,000 entries writes some 5,000 entry,
// index and history rows, and one statement per row would cost the writer
// more in calls than SQLite spends inserting. Full chunks use a statement
// prepared at Open; the remainder one prepared for the transaction.
var kbRows = map[string]*multiRow{
	"entries": newMultiRow("INSERT INTO kb_entries(eid, sp, id, identifier, keys, value, version, created_at, updated_at) VALUES ", 9, 100),
	"terms":   newMultiRow("INSERT INTO kb_terms(rowid, terms) VALUES ", 2, 250),
	"fts":     newMultiRow("INSERT INTO kb_fts(rowid, identifier, keys, value) VALUES ", 4, 100),
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
	return tx.AddEvent(kura.EventKBChanged, kura.KBScopeName(s.scope), map[string]string{"kb": s.kb, "entry_id": entryID})
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

// An entry's rows in kb_terms and kb_fts have the rowid sp<<kbSpaceBits |
// eid (migration 0013): a space is one rowid range, in insertion order.
const kbSpaceBits = 40

// maxKBEID bounds eids so that they fit beside the space in a rowid.
const maxKBEID = 1<<kbSpaceBits - 1

func kbRowid(sp, eid int64) int64 { return sp<<kbSpaceBits | eid }

// kbRange is the rowid range of a space's rows.
func kbRange(sp int64) (lo, hi int64) { return sp << kbSpaceBits, sp<<kbSpaceBits | maxKBEID }

// Token prefixes of kb_terms: a folded identifier word, a folded key.
const (
	tokWord = "w"
	tokKey  = "k"
)

// kbToken is the kb_terms token of a folded word or key: its UTF-8 bytes
// in hex behind the prefix of its kind. The tokenizer finds nothing in it
// to fold or split, so tokens are equal exactly when the terms are.
func kbToken(kind int, term string) string {
	p := tokWord
	if kind == dfKey {
		p = tokKey
	}
	return p + hex.EncodeToString([]byte(term))
}

// termsColumn is the kb_terms text of an entry: the tokens of its words
// and of its folded keys.
func termsColumn(words, keys []string) string {
	var b strings.Builder
	b.Grow(3 * (len(words) + len(keys)) * 8)
	for _, w := range words {
		b.WriteString(tokWord)
		b.WriteString(hex.EncodeToString([]byte(w)))
		b.WriteByte(' ')
	}
	for _, k := range keys {
		b.WriteString(tokKey)
		b.WriteString(hex.EncodeToString([]byte(k)))
		b.WriteByte(' ')
	}
	return b.String()
}

// keysText is the keys column of kb_fts: the keys, one a line.
func keysText(keys []string) string { return strings.Join(keys, "\n") }

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

// rekey rewrites an entry's strict-index row when its key set changed.
func (tx *Tx) rekey(sp, eid int64, identifier string, from, to []string) error {
	if sameKeys(from, to) {
		return nil
	}
	if _, err := tx.Exec(qKBUpdateTerms, termsColumn(kb.Words(identifier), kb.FoldKeys(to)), kbRowid(sp, eid)); err != nil {
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

// eid hands out the next entry position.
func (p *kbPut) eid() (int64, error) {
	if p.nextEID > maxKBEID {
		return 0, kura.Errorf(kura.EInternal, "knowledge-base entry positions are exhausted")
	}
	p.nextEID++
	return p.nextEID - 1, nil
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
		eid, err := p.eid()
		if err != nil {
			return kura.KBEntry{}, false, err
		}
		st.live, st.fresh, st.eid = true, true, eid
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
	var entries, terms, fts []any
	df := dfDelta{}
	for _, st := range p.inserts {
		e := &st.e
		ws, ks := kb.Words(e.Identifier), kb.FoldKeys(e.Keys)
		rowid := kbRowid(st.s.sp, st.eid)
		entries = append(entries, st.eid, st.s.sp, e.ID, e.Identifier, jsonList(e.Keys), e.Value, e.Version, e.CreatedAt, e.UpdatedAt)
		terms = append(terms, rowid, termsColumn(ws, ks))
		fts = append(fts, rowid, e.Identifier, keysText(e.Keys), e.Value)
		df.add(st.s.sp, dfWord, ws, 1)
		df.add(st.s.sp, dfKey, ks, 1)
	}
	if err := kbRows["entries"].exec(p.tx, entries); err != nil {
		return err
	}
	for _, st := range p.updates {
		e := &st.e
		rowid := kbRowid(st.s.sp, st.eid)
		if _, err := p.tx.Exec(qKBUpdateEntry, jsonList(e.Keys), e.Value, e.Version, e.UpdatedAt, st.eid); err != nil {
			return err
		}
		if _, err := p.tx.Exec(qKBUpdateFTS, e.Identifier, keysText(e.Keys), e.Value, rowid); err != nil {
			return err
		}
		if sameKeys(st.origKeys, e.Keys) {
			continue
		}
		if _, err := p.tx.Exec(qKBUpdateTerms, termsColumn(kb.Words(e.Identifier), kb.FoldKeys(e.Keys)), rowid); err != nil {
			return err
		}
		df.rekey(st.s.sp, st.origKeys, e.Keys)
	}
	if err := df.write(p.tx); err != nil {
		return err
	}
	for _, r := range []struct {
		table string
		args  []any
	}{{"terms", terms}, {"fts", fts}, {"history", p.history}} {
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
		if _, err := tx.Exec(qKBUpdateFTS, e.Identifier, keysText(e.Keys), e.Value, kbRowid(s.sp, old.eid)); err != nil {
			return err
		}
		if err := tx.kbHistory(s, e.Identifier, e.Version, op, e.ID, e.Keys, &e.Value); err != nil {
			return err
		}
		if err := tx.kbChanged(s, e.ID); err != nil {
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
		if err := tx.kbChanged(s, old.ID); err != nil {
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
		if err := tx.kbChanged(s, g.id); err != nil {
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
