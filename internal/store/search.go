package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/kura-memory/kura/internal/admission"
	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/recall"
)

// Memory search runs on SQLite FTS5 (migration 0012): node_fts indexes
// what node_text says search reads of a node, one column per field, and
// bm25() ranks with a weight per column. A node needs only some of the
// query's words: the match expression is an OR of them.

// ftsColumns are node_fts's columns (and node_text's) in order, with the
// weight bm25() gives a word found there and the reason code it reports,
// in the order reasons are listed. A title names the thing, so a word
// there counts three times one in the summary; the id and the target
// files are names too.
var ftsColumns = []struct {
	name   string
	code   string
	weight float64
}{
	{"title", "title_match", 3},
	{"ident", "id_match", 2},
	{"files", "target_file_match", 2},
	{"summary", "summary_match", 1},
	{"payload", "payload_match", 1},
	{"meta", "metadata_match", 0.5},
}

// textCols selects node_text's columns, in ftsColumns order, from t.
var textCols = func() string {
	cols := make([]string, len(ftsColumns))
	for i, c := range ftsColumns {
		cols[i] = "t." + c.name
	}
	return strings.Join(cols, ", ")
}()

// ftsWeights are the column weights, in column order.
var ftsWeights = func() []float64 {
	w := make([]float64, len(ftsColumns))
	for i, c := range ftsColumns {
		w[i] = c.weight
	}
	return w
}()

// bm25Expr is the ranking expression: bm25() is negative, better is lower.
var bm25Expr = func() string {
	var b strings.Builder
	b.WriteString("bm25(node_fts")
	for _, c := range ftsColumns {
		b.WriteString(", " + strconv.FormatFloat(c.weight, 'f', -1, 64))
	}
	return b.String() + ")"
}()

// nidBits: a node's index rowid is sid<<nidBits | nid, so a scope is one
// rowid range (migration 0012).
const nidBits = 40

// scopeRows is the rowid range of scope sid's nodes in node_fts.
func scopeRows(sid int64) (lo, hi int64) {
	return sid << nidBits, sid<<nidBits | (1<<nidBits - 1)
}

// searchQueryer is a read transaction or the read pool.
type searchQueryer interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}

// hit is a ranked node: its key and its score (-bm25: higher is better).
type hit struct {
	nid   int64
	score float64
}

// nodeFilter is SQL on the node row n that a hit must pass, with its
// arguments.
type nodeFilter struct {
	where string // " AND n.kind = ?..."
	args  []any
}

// queryWords are the words of a query search matches: recall.QueryTerms
// (stop words dropped unless there is nothing else), without the words the
// engine reads as nothing (no token) and without a word whose tokens an
// earlier one already has ("addresses" after "address": one word, counted
// once).
func queryWords(q string) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range recall.QueryTerms(q) {
		p := strings.Join(recall.Phrase(w), " ")
		if p == "" || seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, w)
	}
	return out
}

// lexicalSearch ranks the nodes of scope sid that hold any of words (as
// the engine matches them: stemmed, folded) and pass f, best first, ties
// to the older node (lower nid), at most limit of them (all for limit <
// 0). It is the lexical ranking every search path shares.
func lexicalSearch(ctx context.Context, q searchQueryer, sid int64, words []string, f nodeFilter, limit int) ([]hit, error) {
	if len(words) == 0 {
		return nil, nil
	}
	lo, hi := scopeRows(sid)
	var sqlq string
	if f.where == "" {
		sqlq = "SELECT rowid, " + bm25Expr + " AS r FROM node_fts WHERE node_fts MATCH ? AND rowid BETWEEN ? AND ? ORDER BY r, rowid LIMIT ?"
	} else {
		// CROSS JOIN keeps the index outermost: the planner must not start
		// from a scan of the scope's nodes.
		sqlq = "SELECT f.rowid, " + bm25Expr + " AS r FROM node_fts f CROSS JOIN nodes n ON n.nid = f.rowid & " +
			strconv.FormatInt(1<<nidBits-1, 10) + " WHERE node_fts MATCH ? AND f.rowid BETWEEN ? AND ?" + f.where +
			" ORDER BY r, f.rowid LIMIT ?"
	}
	args := append([]any{recall.MatchExpr(words), lo, hi}, f.args...)
	rows, err := q.QueryContext(ctx, sqlq, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	defer rows.Close()
	var out []hit
	for rows.Next() {
		var h hit
		if err := rows.Scan(&h.nid, &h.score); err != nil {
			return nil, err
		}
		h.nid &= 1<<nidBits - 1
		h.score = -h.score
		out = append(out, h)
	}
	return out, rows.Err()
}

// nidList is the hits' node keys as a JSON array, for json_each.
func nidList(hits []hit) string {
	b := make([]byte, 0, 2+8*len(hits))
	b = append(b, '[')
	for i, h := range hits {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, h.nid, 10)
	}
	return string(append(b, ']'))
}

// nodeFields are a node's searchable texts as node_text holds them, one
// per index column, with the reason code of each.
type nodeFields [6]string

func (t *nodeFields) fields() []recall.Field {
	fs := make([]recall.Field, len(ftsColumns))
	for i, c := range ftsColumns {
		fs[i] = recall.Field{Code: c.code, Text: t[i]}
	}
	return fs
}

// scanText scans node_text's six text columns (NULL for nothing).
func scanText(dst []any) *nodeFields {
	var t nodeFields
	for i := range t {
		dst[i] = &nullText{&t[i]}
	}
	return &t
}

// nullText scans a nullable text as "".
type nullText struct{ s *string }

func (n nullText) Scan(v any) error {
	var ns sql.NullString
	if err := ns.Scan(v); err != nil {
		return err
	}
	*n.s = ns.String
	return nil
}

// explain names the fields of a node in which the words occur: what the
// engine matched, found again by tokenizing the node's indexed text the
// way the engine does (recall.Tokens is held to it by the tests), so it
// costs nothing to the index and agrees with it.
func explain(t *nodeFields, words []string) []kura.SearchReason {
	rs := recall.Explain(t.fields(), words)
	out := make([]kura.SearchReason, len(rs))
	for i, r := range rs {
		out[i] = kura.SearchReason{Code: r.Code, Detail: r.Detail}
	}
	return out
}

// SearchNodes answers GET .../memory/search. With query words, the index
// ranks the scope's nodes (lexicalSearch), a misspelt word is looked up
// among the words the index holds (typoFallback), and each result's
// reasons name the fields and words that matched. Without words, the
// filters alone select, newest first. Search writes nothing; its queries
// share one read transaction, so the ranking and the nodes shown come from
// the same snapshot.
func (db *DB) SearchNodes(ctx context.Context, scope string, q kura.SearchQuery) ([]kura.SearchResult, error) {
	out := []kura.SearchResult{}
	sid, ok, err := db.readScope(ctx, scope)
	if err != nil || !ok {
		return out, err
	}
	words := queryWords(q.Q)
	if q.Q != "" && len(words) == 0 {
		return out, nil
	}
	var f nodeFilter
	var filters []kura.SearchReason
	for _, c := range []struct{ col, v, code string }{
		{"kind", q.Kind, "kind_filter"}, {"lifecycle", q.Lifecycle, "lifecycle_filter"},
		{"authority", q.Authority, "authority_filter"}, {"owner", q.Owner, "owner_filter"},
	} {
		if c.v != "" {
			f.where += " AND n." + c.col + " = ?"
			f.args = append(f.args, c.v)
			filters = append(filters, kura.SearchReason{Code: c.code, Detail: c.v})
		}
	}
	if q.TargetFile != "" {
		f.where += " AND EXISTS (SELECT 1 FROM json_each(n.target_files) WHERE value = ?)"
		f.args = append(f.args, q.TargetFile)
		filters = append(filters, kura.SearchReason{Code: "target_file_filter", Detail: q.TargetFile})
	}
	if q.MinConfidence != nil {
		f.where += " AND n.confidence >= ?"
		f.args = append(f.args, *q.MinConfidence)
	}
	tx, err := db.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, mapErr(err)
	}
	defer tx.Rollback()
	var hits []hit
	var typos []typo
	if len(words) > 0 {
		if hits, err = lexicalSearch(ctx, tx, sid, words, f, q.Limit); err != nil {
			return nil, mapErr(err)
		}
		if hits, typos, err = db.typoFallback(ctx, tx, sid, words, f, q.Limit, hits); err != nil {
			return nil, mapErr(err)
		}
		if len(hits) == 0 {
			return out, nil
		}
	}
	var rows *sql.Rows
	if len(words) > 0 {
		rows, err = tx.QueryContext(ctx, "SELECT "+nodeCols+", "+textCols+
			" FROM json_each(?) j CROSS JOIN nodes n ON n.nid = j.value CROSS JOIN node_text t ON t.nid = n.nid ORDER BY j.key",
			nidList(hits))
	} else {
		rows, err = tx.QueryContext(ctx, "SELECT "+nodeCols+" FROM nodes n WHERE n.sid = ?"+f.where+
			" ORDER BY n.updated_at DESC, n.kind, n.id LIMIT "+strconv.Itoa(q.Limit), append([]any{sid}, f.args...)...)
	}
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	matchWords := words
	for _, t := range typos {
		matchWords = append(matchWords, t.near)
	}
	for i := 0; rows.Next(); i++ {
		var n *nodeRow
		var reasons []kura.SearchReason
		score := 0.0
		if len(words) > 0 {
			extra := make([]any, len(ftsColumns))
			text := scanText(extra)
			if n, err = scanNode(rows, scope, extra...); err != nil {
				return nil, mapErr(err)
			}
			score = recall.RoundScore(hits[i].score)
			reasons = explain(text, matchWords)
			reasons = append(reasons, typoReasons(typos, reasons)...)
		} else if n, err = scanNode(rows, scope); err != nil {
			return nil, mapErr(err)
		}
		reasons = append(reasons, filters...)
		if q.MinConfidence != nil {
			reasons = append(reasons, kura.SearchReason{Code: "min_confidence_filter",
				Detail: strconv.FormatFloat(n.Confidence, 'f', -1, 64) + " >= " + strconv.FormatFloat(*q.MinConfidence, 'f', -1, 64)})
		}
		if reasons == nil {
			reasons = []kura.SearchReason{}
		}
		node := n.Node
		out = append(out, kura.SearchResult{Ref: n.Ref, Score: score, Reasons: reasons, Node: &node})
	}
	return out, mapErr(rows.Err())
}

// compileRanking is how a compile's query ranks the nodes of scope that
// match it, from the index, in the compile's snapshot: every matching
// node's score and reasons, by ref. nil for a query without words
// (nothing is scored).
func compileRanking(ctx context.Context, q searchQueryer, scope, query string) (admission.Ranking, error) {
	words := queryWords(query)
	if len(words) == 0 {
		return nil, nil
	}
	out := admission.Ranking{}
	var sid int64
	err := q.QueryRowContext(ctx, "SELECT sid FROM scopes WHERE name = ?", scope).Scan(&sid)
	if errors.Is(err, sql.ErrNoRows) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	hits, err := lexicalSearch(ctx, q, sid, words, nodeFilter{}, -1)
	if err != nil || len(hits) == 0 {
		return out, err
	}
	rows, err := q.QueryContext(ctx, "SELECT n.kind, n.id, "+textCols+
		" FROM json_each(?) j CROSS JOIN nodes n ON n.nid = j.value CROSS JOIN node_text t ON t.nid = n.nid ORDER BY j.key",
		nidList(hits))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for i := 0; rows.Next(); i++ {
		var kind, id string
		dst := make([]any, 2+len(ftsColumns))
		dst[0], dst[1] = &kind, &id
		text := scanText(dst[2:])
		if err := rows.Scan(dst...); err != nil {
			return nil, err
		}
		out[kind+":"+id] = admission.Match{Score: hits[i].score, Why: explain(text, words)}
	}
	return out, rows.Err()
}

// rankPast ranks nodes as they were at some past instant for query, the
// way the index ranks today's nodes (the same tokens, weights and bm25),
// over their own text: the index holds only the current text. Its
// statistics (how rare a word is, how long a node) are those of these
// nodes.
func rankPast(nodes []kura.Node, query string) admission.Ranking {
	words := queryWords(query)
	if len(words) == 0 {
		return nil
	}
	phrases := make([][]string, len(words))
	for i, w := range words {
		phrases[i] = recall.Phrase(w)
	}
	texts := make([]nodeFields, len(nodes))
	docs := make([]recall.Doc, len(nodes))
	for i := range nodes {
		texts[i] = textOf(&nodes[i])
		docs[i] = make(recall.Doc, len(ftsColumns))
		for c, t := range texts[i] {
			docs[i][c] = recall.Tokens(t)
		}
	}
	scores := recall.BM25(docs, phrases, ftsWeights)
	out := admission.Ranking{}
	for i, s := range scores {
		if s > 0 {
			out[nodes[i].Ref] = admission.Match{Score: s, Why: explain(&texts[i], words)}
		}
	}
	return out
}

// textOf is node_text (migration 0012) for a node held in memory: its
// searchable texts, as the view derives them from the node's row.
func textOf(n *kura.Node) nodeFields {
	ident := n.Kind
	if !kura.ValidID(n.ID) {
		ident += " " + n.ID
	}
	var payload []string
	for _, p := range []*string{n.PayloadRef, n.Owner} {
		if p != nil && *p != "" {
			payload = append(payload, *p)
		}
	}
	var t nodeFields
	for i, c := range ftsColumns {
		switch c.name {
		case "title":
			t[i] = n.Title
		case "ident":
			t[i] = ident
		case "files":
			t[i] = strings.Join(n.TargetFiles, "\n")
		case "summary":
			t[i] = n.Summary
		case "payload":
			t[i] = strings.Join(payload, "\n")
		case "meta":
			t[i] = strings.Join(metadataValues(n.Metadata), "\n")
		}
	}
	return t
}

// metadataValues are the values in a JSON document, in document order, as
// node_text reads them: strings as they read, numbers and booleans as
// written (1e21, 100.0, true). Object keys and nulls are left out.
func metadataValues(doc json.RawMessage) []string {
	if len(doc) <= 2 { // "{}" holds nothing
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var out []string
	inObject := []bool{}
	expectKey := false
	for {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				inObject = append(inObject, true)
				expectKey = true
				continue
			case '[':
				inObject = append(inObject, false)
			case '}', ']':
				inObject = inObject[:len(inObject)-1]
			}
		case string:
			if expectKey {
				expectKey = false
				continue
			}
			out = append(out, v)
		case json.Number:
			out = append(out, string(v))
		case bool:
			out = append(out, strconv.FormatBool(v))
		}
		// After a value inside an object, the next string is a key.
		expectKey = len(inObject) > 0 && inObject[len(inObject)-1]
	}
}
