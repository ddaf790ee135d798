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

	"github.com/kura-memory/kura/internal/kb"
	"github.com/kura-memory/kura/internal/kura"
)

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

// kbPosting is one condition of a query: the entries holding one word or
// one key, or any of several keys (any_keys).
type kbPosting struct {
	kind int      // dfWord or dfKey
	vals []string // folded; more than one is a union
	size int      // entries, from kb_df: exact for one term, a bound for a union
}

// expr is the posting as an FTS5 expression over kb_terms. Tokens are
// quoted: a hex token is never FTS5 syntax, but quoting keeps it so.
func (p *kbPosting) expr() string {
	if len(p.vals) == 1 {
		return `"` + kbToken(p.kind, p.vals[0]) + `"`
	}
	parts := make([]string, len(p.vals))
	for i, v := range p.vals {
		parts[i] = `"` + kbToken(p.kind, v) + `"`
	}
	return "(" + strings.Join(parts, " OR ") + ")"
}

// kbPlan turns a query into postings, or reports that nothing can match.
func kbPlan(q *kura.KBQuery) (ps []*kbPosting, none bool) {
	seen := map[string]bool{}
	add := func(kind int, vals ...string) {
		key := strconv.Itoa(kind) + "\x00" + strings.Join(vals, "\x00")
		if !seen[key] {
			seen[key] = true
			ps = append(ps, &kbPosting{kind: kind, vals: vals})
		}
	}
	if q.Identifier != nil {
		for _, w := range kb.Words(*q.Identifier) {
			add(dfWord, w)
		}
	}
	if q.Key != nil {
		add(dfKey, kb.Fold(*q.Key))
	}
	if q.AnyKeys != nil {
		keys := kb.FoldKeys(q.AnyKeys)
		if len(keys) == 0 {
			return nil, true
		}
		add(dfKey, keys...)
	}
	for _, k := range kb.FoldKeys(q.AllKeys) {
		add(dfKey, k)
	}
	return ps, false
}

// QueryKB answers GET /v1/kb/{kb}/entries: the matching entries of one
// scope in insertion order, one page, and the number of matches. The
// conditions are one FTS5 expression over kb_terms restricted to the
// scope's rowid range, so a query reads the postings of its words and
// keys, never every entry; kb_df says up front when a condition holds for
// no entry, and counts a one-condition query without counting. Count and
// page come from one read snapshot.
func (db *DB) QueryKB(ctx context.Context, name string, q kura.KBQuery) (*kura.KBPage, error) {
	if err := validKBName(name); err != nil {
		return nil, err
	}
	if !kura.ValidKBScope(q.Scope) {
		return nil, kura.Invalid("scope", "scope must be empty (the default scope) or a slug")
	}
	rtx, err := db.readSnapshot(ctx, &db.kbStmts)
	if err != nil {
		return nil, err
	}
	defer rtx.end()
	page, err := queryKB(ctx, rtx, name, &q)
	return page, mapErr(err)
}

// kbSizes reads the size of every posting from kb_df: one statement per
// kind of term, whatever the number of words and keys.
func kbSizes(ctx context.Context, rtx *snapshot, sp int64, ps []*kbPosting) error {
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
		n, err := dfCounts(ctx, rtx, sp, kind, terms)
		if err != nil {
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

// dfCounts reads how many entries of a space hold each of terms (absent:
// none).
func dfCounts(ctx context.Context, q queryer, sp int64, kind int, terms []string) (map[string]int, error) {
	rows, err := q.QueryContext(ctx, "SELECT term, n FROM kb_df WHERE sp = ? AND kind = ? AND term IN (SELECT value FROM json_each(?))", sp, kind, jsonList(terms))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	n := map[string]int{}
	for rows.Next() {
		var t string
		var c int
		if err := rows.Scan(&t, &c); err != nil {
			return nil, err
		}
		n[t] = c
	}
	return n, rows.Err()
}

// kbStatements are the statements that answer a query: one page, and the
// count of every match when it is not known without counting (known < 0).
type kbStatements struct {
	page     string
	pageArgs []any
	count    string // counts the matches after an eid (the last argument)
	countArg []any
	known    int  // the count when no statement is needed, else -1
	exact    bool // exact_identifier: the page is at most its entry, checked by kb.Match

	// What the cached plan needs (kbcache.go): the space, the generation
	// of its postings in this snapshot, and every condition.
	sp, gen  int64
	postings []*kbPosting
}

// countArgs are the count statement's arguments for the matches after eid.
func (st *kbStatements) countArgs(after int64) []any {
	return append(slices.Clone(st.countArg), kbRowid(st.sp, after))
}

// Statements of the strict queries. The matches of an expression are read
// as rowids in the scope's range, in order, and the page's entries by eid.
const (
	qKBPlainPage  = "SELECT " + kbEntryCols + " FROM kb_entries e WHERE e.sp = ? AND e.eid > ? ORDER BY e.eid LIMIT ?"
	qKBExactPage  = "SELECT " + kbEntryCols + " FROM kb_entries e WHERE e.sp = ? AND e.identifier = ? AND e.eid > ?"
	qKBTermsPage  = "SELECT " + kbEntryCols + " FROM kb_entries e WHERE e.eid IN (SELECT rowid - ? FROM kb_terms WHERE kb_terms MATCH ? AND rowid > ? AND rowid <= ? ORDER BY rowid LIMIT ?) ORDER BY e.eid"
	qKBTermsCount = "SELECT count(*) FROM kb_terms WHERE kb_terms MATCH ? AND rowid <= ? AND rowid > ?"
)

// prepareKB plans q: it finds the space, turns the conditions into
// postings, reads their sizes and builds the statements. done is set (with
// page) when the answer is known without them: no such space, or a
// condition nothing meets.
func prepareKB(ctx context.Context, rtx *snapshot, name string, q *kura.KBQuery, limit int) (st *kbStatements, page *kura.KBPage, done bool, err error) {
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
	switch {
	case q.ExactIdentifier != nil:
		// One identifier is at most one entry: read it and check the
		// other conditions on it.
		st.exact = true
		st.page, st.pageArgs = qKBExactPage, []any{sp, *q.ExactIdentifier, q.After}
		return st, page, false, nil
	case len(ps) == 0:
		st.known = total // the space keeps its size
		st.page, st.pageArgs = qKBPlainPage, []any{sp, q.After, limit + 1}
	default:
		if len(ps) == 1 && len(ps[0].vals) == 1 {
			st.known = ps[0].size
		}
		exprs := make([]string, len(ps))
		for i, p := range ps {
			exprs[i] = p.expr()
		}
		pg := rtx.db.pg != nil
		expr := kbTermsMatch(pg, strings.Join(exprs, " AND "))
		lo, hi := kbRange(sp)
		st.page, st.pageArgs = qKBTermsPage, []any{lo, expr, kbRowid(sp, q.After), hi, limit + 1}
		st.count, st.countArg = qKBTermsCount, []any{expr, hi}
		if pg {
			st.page, st.count = qPGKBTermsPage, qPGKBTermsCount
		}
	}
	if st.known == 0 {
		return nil, page, true, nil
	}
	return st, page, false, nil
}

func queryKB(ctx context.Context, rtx *snapshot, name string, q *kura.KBQuery) (*kura.KBPage, error) {
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
		if st.exact && !kb.Match(e, q) {
			continue
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
	case st.exact:
		// The identifier's entry matches or not; a later page holds
		// nothing, and says so by a count of what this one found.
		page.Count = len(page.Entries)
		if q.After > 0 && page.Count == 0 {
			page.Count, err = exactCount(ctx, rtx, st, q)
		}
	case st.known >= 0:
		page.Count = st.known
	case q.After == 0 && page.NextCursor == "":
		// The first page holds every match: nothing more to count.
		page.Count = len(page.Entries)
	case q.After == 0:
		// A full first page: its matches are counted already, so the
		// count reads on from its last one instead of reading them again.
		var rest int
		if err := rtx.QueryRowContext(ctx, st.count, st.countArgs(last)...).Scan(&rest); err != nil {
			return nil, err
		}
		page.Count = len(page.Entries) + rest
	default:
		if err := rtx.QueryRowContext(ctx, st.count, st.countArgs(0)...).Scan(&page.Count); err != nil {
			return nil, err
		}
	}
	return page, err
}

// exactCount counts the matches of an exact_identifier query whatever the
// cursor: 1 when the identifier's entry meets every condition.
func exactCount(ctx context.Context, rtx *snapshot, st *kbStatements, q *kura.KBQuery) (int, error) {
	e, _, err := scanKBEntry(rtx.QueryRowContext(ctx, qKBExactPage, st.sp, *q.ExactIdentifier, 0), q.Scope)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil || !kb.Match(e, q) {
		return 0, err
	}
	return 1, nil
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
	rtx, err := db.readSnapshot(ctx, &db.kbStmts)
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
	rtx, err := db.readSnapshot(ctx, &db.kbStmts)
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
