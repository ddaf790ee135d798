package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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

// qIndexNodeText (re)indexes the nodes a JSON array of nids names, from
// node_text, replacing what the index held for them.
var qIndexNodeText = "INSERT OR REPLACE INTO node_fts(rowid, " + strings.ReplaceAll(textCols, "t.", "") + ") SELECT (t.sid << " +
	strconv.Itoa(nidBits) + ") | t.nid, " + textCols + " FROM json_each(?) j CROSS JOIN node_text t ON t.nid = j.value"

// indexNodeText indexes the nodes whose searchable text a batch wrote, in
// one statement just before the batch commits. One statement per batch,
// not one per node (as a trigger on nodes would be): FTS5 writes out what
// it holds in memory at every savepoint, and SQLite opens one for each
// statement of a transaction that has written to the index, so indexing
// node by node left a segment per node to merge, and merging was most of
// the cost of a write (ingest ran at a third of this speed). On
// PostgreSQL the write goes into pipe, to be sent with the COMMIT.
func (db *DB) indexNodeText(ctx context.Context, tx *sql.Tx, nids []int64, pipe *pgPipe) error {
	if len(nids) == 0 {
		return nil
	}
	slices.Sort(nids)
	nids = slices.Compact(nids)
	b := make([]byte, 0, 2+8*len(nids))
	b = append(b, '[')
	for i, nid := range nids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, nid, 10)
	}
	if db.pg != nil {
		return indexNodeTextPG(ctx, tx, string(append(b, ']')), pipe)
	}
	st, err := db.wstmts.bind(ctx, tx, qIndexNodeText)
	if err != nil {
		return err
	}
	_, err = st.ExecContext(ctx, string(append(b, ']')))
	return err
}

// searchTextChanged reports whether a new version of a node changes the
// text search reads of it (node_text): a lifecycle or confidence change
// leaves the index alone.
func searchTextChanged(old, n *kura.Node) bool {
	return old.Title != n.Title || old.Summary != n.Summary || !slices.Equal(old.TargetFiles, n.TargetFiles) ||
		!equalPtr(old.PayloadRef, n.PayloadRef) || !equalPtr(old.Owner, n.Owner) || !bytes.Equal(old.Metadata, n.Metadata)
}

func equalPtr(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// nidList is the hits' node keys as a JSON array, for json_each.
func nidList(hits []hit) string { return keyList(hits, '[', ']') }

// nidArray is the hits' node keys as PostgreSQL array text.
func nidArray(hits []hit) string { return keyList(hits, '{', '}') }

func keyList(hits []hit, open, end byte) string {
	b := make([]byte, 0, 2+8*len(hits))
	b = append(b, open)
	for i, h := range hits {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, h.nid, 10)
	}
	return string(append(b, end))
}

// nodeFields are a node's searchable texts as node_text holds them, one
// per index column.
type nodeFields [6]string

// fields are the texts with the reason code of each.
func (t *nodeFields) fields() []recall.Field {
	fs := make([]recall.Field, len(ftsColumns))
	for i, c := range ftsColumns {
		fs[i] = recall.Field{Code: c.code, Text: t[i]}
	}
	return fs
}

// scanText scans node_text's columns (NULL for nothing).
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
// ranks the scope's nodes (lexical.search), a misspelt word is looked up
// among the words the index holds (rankWithTypos), and each result's
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
	tx, err := db.readSnapshot(ctx, &db.searchStmts)
	if err != nil {
		return nil, err
	}
	defer tx.end()
	var hits []hit
	var typos []typo
	if len(words) > 0 {
		counts, err := db.lexical().wordCounts(ctx, tx, sid, words)
		if err != nil {
			return nil, mapErr(err)
		}
		if hits, typos, err = db.rankWithTypos(ctx, tx, sid, words, counts, f, q.Limit); err != nil {
			return nil, mapErr(err)
		}
		if len(hits) == 0 {
			return out, nil
		}
	}
	var nodes []*nodeRow
	if len(words) > 0 {
		nodes, err = hitNodes(ctx, tx, db.pg != nil, scope, hits)
	} else {
		rows, qerr := tx.QueryContext(ctx, "SELECT "+nodeCols+" FROM nodes n WHERE n.sid = ?"+f.where+
			" ORDER BY n.updated_at DESC, n.kind, n.id LIMIT ?", append(append([]any{sid}, f.args...), q.Limit)...)
		nodes, err = scanNodes(rows, qerr, scope)
	}
	if err != nil {
		return nil, mapErr(err)
	}
	matchWords := words
	for _, t := range typos {
		matchWords = append(matchWords, t.near)
	}
	for i, n := range nodes {
		var reasons []kura.SearchReason
		score := 0.0
		if len(words) > 0 {
			// The reasons are found in the node's text as node_text
			// derives it (textOf, held to the view by the tests): the view
			// itself costs PostgreSQL tens of microseconds a node.
			text := textOf(&n.Node)
			score = recall.RoundScore(hits[i].score)
			reasons = explain(&text, matchWords)
			reasons = append(reasons, typoReasons(typos, reasons)...)
		}
		reasons = append(reasons, filters...)
		if q.MinConfidence != nil {
			reasons = append(reasons, kura.SearchReason{Code: "min_confidence_filter",
				Detail: strconv.FormatFloat(n.Confidence, 'f', -1, 64) + " >= " + strconv.FormatFloat(*q.MinConfidence, 'f', -1, 64)})
		}
		if reasons == nil {
			reasons = []kura.SearchReason{}
		}
		out = append(out, kura.SearchResult{Ref: n.Ref, Score: score, Reasons: reasons, Node: &n.Node})
	}
	return out, nil
}

// compileRanking is how a compile's query ranks the nodes of scope that
// match it, from the index (PostgreSQL's when pg), in the compile's snapshot: every matching
// node's score and reasons, by ref. nil for a query without words
// (nothing is scored).
func compileRanking(ctx context.Context, q queryer, pg bool, scope, query string) (admission.Ranking, error) {
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
	// Every match is ranked (rankAll): a compile decides every node
	// anyway, and a score shown for each must be the exact one.
	var idf map[string]float64
	if pg {
		if idf, err = (lexical{pg: true, RankBounds: RankBounds{}.withDefaults()}).pgWordIDF(ctx, q, sid, words); err != nil {
			return nil, err
		}
	}
	hits, err := rankAll(ctx, q, pg, sid, words, idf, nodeFilter{}, -1)
	if err != nil || len(hits) == 0 {
		return out, err
	}
	// The reasons need each match's text: read a few hundred nodes at a
	// time, so that a query matching a whole scope of long summaries
	// never holds all of them, and only the columns the text is made of.
	sqlq := "SELECT " + rankTextCols + " FROM json_each(?) j CROSS JOIN nodes n ON n.nid = j.value"
	if pg {
		sqlq = "SELECT " + rankTextCols + " FROM nodes n WHERE n.nid = ANY(CAST(CAST(? AS TEXT) AS BIGINT[]))"
	}
	for len(hits) > 0 {
		chunk := hits[:min(len(hits), rankTextBatch)]
		hits = hits[len(chunk):]
		keys := nidList(chunk)
		if pg {
			keys = nidArray(chunk)
		}
		score := make(map[int64]float64, len(chunk))
		for _, h := range chunk {
			score[h.nid] = h.score
		}
		rows, err := q.QueryContext(ctx, sqlq, keys)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			nid, n, err := scanRankText(rows)
			if err != nil {
				rows.Close()
				return nil, err
			}
			text := textOf(n)
			out[n.Ref] = admission.Match{Score: score[nid], Why: explain(&text, words)}
			delete(score, nid)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		if len(score) > 0 {
			// Nodes are never deleted: a hit without its node is damage.
			return nil, fmt.Errorf("search hit: %d nodes are missing", len(score))
		}
	}
	return out, nil
}

// rankTextBatch is how many matches' texts a compile reads at once: 256
// nodes of at most 16 KiB of summary and 16 KiB of metadata.
const rankTextBatch = 256

// rankTextCols are the columns of a node textOf reads, after its nid.
const rankTextCols = "n.nid, n.kind, n.id, n.title, n.summary, n.target_files, n.payload_ref, n.owner, n.metadata"

// scanRankText scans a row of rankTextCols into a node that holds just
// them.
func scanRankText(rows *sql.Rows) (int64, *kura.Node, error) {
	var n kura.Node
	var nid int64
	var files, meta string
	var payload, owner sql.NullString
	if err := rows.Scan(&nid, &n.Kind, &n.ID, &n.Title, &n.Summary, &files, &payload, &owner, &meta); err != nil {
		return 0, nil, err
	}
	n.Ref = n.Kind + ":" + n.ID
	if payload.Valid {
		n.PayloadRef = &payload.String
	}
	if owner.Valid {
		n.Owner = &owner.String
	}
	if files != "[]" {
		if err := json.Unmarshal([]byte(files), &n.TargetFiles); err != nil {
			return 0, nil, fmt.Errorf("node %s: target_files: %w", n.Ref, err)
		}
	}
	n.Metadata = json.RawMessage(meta)
	return nid, &n, nil
}

// hitNodes reads the nodes of hits, in the hits' order. On PostgreSQL the
// keys go as an array (= ANY), which the planner counts and probes the
// primary key for, with no JSON to take apart.
func hitNodes(ctx context.Context, q queryer, pg bool, scope string, hits []hit) ([]*nodeRow, error) {
	sqlq, keys := "SELECT "+nodeCols+" FROM json_each(?) j CROSS JOIN nodes n ON n.nid = j.value", nidList(hits)
	if pg {
		sqlq, keys = "SELECT "+nodeCols+" FROM nodes n WHERE n.nid = ANY(CAST(CAST(? AS TEXT) AS BIGINT[]))", nidArray(hits)
	}
	rows, err := q.QueryContext(ctx, sqlq, keys)
	nodes, err := scanNodes(rows, err, scope)
	if err != nil {
		return nil, err
	}
	byNID := make(map[int64]*nodeRow, len(nodes))
	for _, n := range nodes {
		byNID[n.nid] = n
	}
	out := make([]*nodeRow, len(hits))
	for i, h := range hits {
		if out[i] = byNID[h.nid]; out[i] == nil {
			// Nodes are never deleted: a hit without its node is damage.
			return nil, fmt.Errorf("search hit: node %d is missing", h.nid)
		}
	}
	return out, nil
}

// scanNodes scans the nodes of scope a query of nodeCols returned (rows,
// or err).
func scanNodes(rows *sql.Rows, err error, scope string) ([]*nodeRow, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*nodeRow
	for rows.Next() {
		n, err := scanNode(rows, scope)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// pastRanker ranks nodes as they were at some past instant for a query,
// the way the index ranks today's nodes (the same tokens, weights and
// bm25), over their own text: the index holds only the current text. Its
// statistics (how rare a word is, how long a node) are those of these
// nodes. It reads the nodes one at a time and keeps only what BM25 needs
// of each and the reasons of those that match, so that a compile as of a
// past time does not hold the text of every node of its scope.
type pastRanker struct {
	words   []string
	phrases [][]string
	refs    []string
	stats   []recall.DocStats
	why     map[int][]kura.SearchReason
}

// newPastRanker is nil for a query without words: nothing is ranked.
func newPastRanker(query string) *pastRanker {
	words := queryWords(query)
	if len(words) == 0 {
		return nil
	}
	p := &pastRanker{words: words, phrases: make([][]string, len(words)), why: map[int][]kura.SearchReason{}}
	for i, w := range words {
		p.phrases[i] = recall.Phrase(w)
	}
	return p
}

// add reads one node's text.
func (p *pastRanker) add(n *kura.Node) {
	text := textOf(n)
	doc := make(recall.Doc, len(ftsColumns))
	for c, t := range text {
		doc[c] = recall.Tokens(t)
	}
	st := recall.Stats(doc, p.phrases, ftsWeights)
	if len(st.Hits) > 0 {
		p.why[len(p.refs)] = explain(&text, p.words)
	}
	p.refs = append(p.refs, n.Ref)
	p.stats = append(p.stats, st)
}

// ranking is the ranking of the nodes added.
func (p *pastRanker) ranking() admission.Ranking {
	if p == nil {
		return nil
	}
	out := admission.Ranking{}
	for i, s := range recall.BM25Stats(p.stats, len(p.phrases)) {
		if s > 0 {
			out[p.refs[i]] = admission.Match{Score: s, Why: p.why[i]}
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
