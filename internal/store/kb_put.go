package store

import (
	"github.com/google/uuid"
	"github.com/kura-memory/kura/internal/kb"
	"github.com/kura-memory/kura/internal/kura"
)

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
	if err := p.tx.kbChanged(s, st.e.ID, kbDigest(st.e.Identifier, st.e.Version, kura.KBOpPut, st.e.ID, st.e.Keys, &st.e.Value)); err != nil {
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
		fts = p.tx.kbFTSRow(fts, rowid, e)
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
		if err := p.tx.updateKBFTS(rowid, e); err != nil {
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
		rows *multiRow
		args []any
	}{{kbRows["terms"], terms}, {p.tx.kbFTSRows(), fts}, {kbRows["history"], p.history}} {
		if err := r.rows.exec(p.tx, r.args); err != nil {
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
