package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/kura-memory/kura/internal/recall"
)

// Search on PostgreSQL (migrations_pg/0002_search.sql): the statements
// that differ from SQLite's FTS5 ones, and the tsvector and tsquery text
// they read. The ranking code is the same for both engines; only what
// reads postings and ranks is swapped here.
//
// kurad makes the terms (recall.Tokens, SQLite's tokenizer), so both
// engines index the same terms and search explains, corrects and scores
// by the same tokens. A document's fields keep their positions (a phrase
// never spans two fields) and a weight class (A to D) for ts_rank.

// pgMaxLexeme is the longest term PostgreSQL keeps (2 KB less a byte);
// SQLite indexes a longer one, PostgreSQL refuses the whole document.
const pgMaxLexeme = 2046

// pgMaxPositions is how many positions PostgreSQL keeps of one term.
const pgMaxPositions = 255

// pgNever is a lexeme no document holds: the query of a phrase holding no
// term (which FTS5 matches to nothing).
const pgNever = `'-'`

// pgDoc is the tsvector text of fields: each field's terms at their
// positions, labelled[i] the weight class of fields[i].
func pgDoc(fields []string, labels []byte) string {
	type posting struct {
		pos []string
	}
	terms := map[string]*posting{}
	pos := 0
	for i, f := range fields {
		for _, t := range recall.Tokens(f) {
			pos++
			if len(t) > pgMaxLexeme {
				continue
			}
			p := terms[t]
			if p == nil {
				p = &posting{}
				terms[t] = p
			}
			if len(p.pos) < pgMaxPositions {
				// PostgreSQL keeps positions up to 16383 (later ones
				// become 16383): a term still matches, a phrase that far
				// into a long text may not.
				p.pos = append(p.pos, strconv.Itoa(min(pos, 16383))+string(labels[i]))
			}
		}
		pos++ // a gap: no phrase across fields
	}
	keys := make([]string, 0, len(terms))
	for t := range terms {
		keys = append(keys, t)
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, t := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(pgLexeme(t))
		b.WriteByte(':')
		b.WriteString(strings.Join(slices.Compact(terms[t].pos), ","))
	}
	return b.String()
}

// pgLexeme quotes a term for tsvector or tsquery text.
func pgLexeme(t string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(t, `\`, `\\`), `'`, `''`) + "'"
}

// pgTSQuery turns an FTS5 match expression as the store writes them
// (quoted phrases, OR, AND, binary NOT, parentheses, a {column} filter in
// front of a parenthesised group) into tsquery text. A phrase is split
// into terms by tokens (recall.Tokens for the stemmed indexes; for
// kb_terms, whose tokens are exact, the phrase itself); a column filter
// restricts the terms inside to the columns' weight classes.
func pgTSQuery(expr string, tokens func(string) []string, labels map[string]byte) string {
	var b strings.Builder
	type filter struct {
		depth  int
		labels string
	}
	var filters []filter
	depth := 0
	pending := "" // a filter's labels, waiting for its group to open
	for i := 0; i < len(expr); i++ {
		c := expr[i]
		switch {
		case c == '"':
			var s strings.Builder
			j := i + 1
			for ; j < len(expr); j++ {
				if expr[j] == '"' {
					if j+1 < len(expr) && expr[j+1] == '"' {
						s.WriteByte('"')
						j++
						continue
					}
					break
				}
				s.WriteByte(expr[j])
			}
			i = j
			suffix := ""
			if len(filters) > 0 {
				suffix = ":" + filters[len(filters)-1].labels
			}
			var ts []string
			for _, t := range tokens(s.String()) {
				if len(t) > pgMaxLexeme {
					ts = nil
					break
				}
				ts = append(ts, pgLexeme(t)+suffix)
			}
			switch len(ts) {
			case 0:
				b.WriteString(pgNever)
			case 1:
				b.WriteString(ts[0])
			default:
				b.WriteString("(" + strings.Join(ts, " <-> ") + ")")
			}
		case c == '{':
			j := strings.IndexByte(expr[i:], '}')
			if j < 0 {
				return pgNever
			}
			pending = ""
			for _, col := range strings.Fields(expr[i+1 : i+j]) {
				pending += string(labels[col])
			}
			i += j
			for i+1 < len(expr) && (expr[i+1] == ' ' || expr[i+1] == ':') {
				i++
			}
		case c == '(':
			depth++
			if pending != "" {
				filters = append(filters, filter{depth, pending})
				pending = ""
			}
			b.WriteByte('(')
		case c == ')':
			if len(filters) > 0 && filters[len(filters)-1].depth == depth {
				filters = filters[:len(filters)-1]
			}
			depth--
			b.WriteByte(')')
		case strings.HasPrefix(expr[i:], "OR "):
			b.WriteString("| ")
			i += 2
		case strings.HasPrefix(expr[i:], "AND "):
			b.WriteString("& ")
			i += 3
		case strings.HasPrefix(expr[i:], "NOT "):
			// FTS5's binary NOT binds tighter than AND, as ! does.
			b.WriteString("& !")
			i += 3
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// ftsExact reads a kb_terms phrase: its one token, as it is.
func ftsExact(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// pgWeights is ts_rank's weights array ({D, C, B, A}) for weights by
// class, scaled to at most 1 as ts_rank requires.
func pgWeights(byClass map[byte]float64) string {
	top := 0.0
	for _, w := range byClass {
		top = max(top, w)
	}
	var b strings.Builder
	b.WriteString("'{")
	for i, c := range []byte("DCBA") {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatFloat(byClass[c]/top, 'f', -1, 64))
	}
	return b.String() + "}'"
}

// Memory search's classes: each of node_fts's fields gets the class of
// its weight, the heaviest A (4 distinct weights at most); nodeWeights is
// ts_rank's weights array for them.
var nodeLabels, nodeWeights = func() ([]byte, string) {
	var ws []float64
	for _, c := range ftsColumns {
		if !slices.Contains(ws, c.weight) {
			ws = append(ws, c.weight)
		}
	}
	slices.Sort(ws)
	slices.Reverse(ws)
	if len(ws) > 4 {
		panic("store: node_fts has more than 4 weights; tsvector has 4 classes")
	}
	labels := make([]byte, len(ftsColumns))
	byClass := map[byte]float64{}
	for i, c := range ftsColumns {
		l := byte('A' + slices.Index(ws, c.weight))
		labels[i] = l
		byClass[l] = c.weight
	}
	return labels, pgWeights(byClass)
}()

// pgScoreSQL is the ranking expression over n words: each word's ts_rank
// in the document (by field weight; normalisation 1 divides by the log of
// the document's length, as bm25() discounts long ones) times the word's
// IDF in the scope (pgIDF), added up, as bm25() adds up its words. ts_rank
// alone weighs every word alike, so a question's common words ("what",
// "did", "about") outranked its one rare word: recall@10 on the bench's
// conversations was 0.40 against 0.67 on SQLite. Negated: the ranking
// reads bm25()'s sense, lower is better. The arguments are pgScoreArgs.
func pgScoreSQL(n int) string {
	terms := make([]string, n)
	for i := range terms {
		terms[i] = "CAST(? AS float8) * ts_rank(" + nodeWeights + ", f.doc, CAST(? AS tsquery), 1)"
	}
	return "-(" + strings.Join(terms, " + ") + ")"
}

// pgScoreArgs are pgScoreSQL's arguments for words: each one's IDF and
// tsquery.
func pgScoreArgs(words []string, idf map[string]float64) []any {
	args := make([]any, 0, 2*len(words))
	for _, w := range words {
		args = append(args, idf[w], pgMatch(matchWords([]string{w})))
	}
	return args
}

// pgWordIDF is pgIDF for a ranking that has not counted the words yet
// (a compile's).
func (l lexical) pgWordIDF(ctx context.Context, q queryer, sid int64, words []string) (map[string]float64, error) {
	counts, err := l.wordCounts(ctx, q, sid, words)
	if err != nil {
		return nil, err
	}
	return l.pgIDF(ctx, q, sid, words, counts)
}

// pgIDF is each word's inverse document frequency in scope sid: counts are
// wordCounts (exact below CommonWord), against the scope's node count
// (exact below ten times that; past it, only how much rarer one word is
// than another matters). SQLite's bm25() weighs by the same (over the
// whole index, in FTS5).
func (l lexical) pgIDF(ctx context.Context, q queryer, sid int64, words []string, counts []int) (map[string]float64, error) {
	lo, hi := scopeRows(sid)
	var n int
	err := q.QueryRowContext(ctx, "SELECT count(*) FROM (SELECT 1 FROM node_fts WHERE rowid BETWEEN ? AND ? LIMIT "+
		strconv.Itoa(10*l.CommonWord)+") c", lo, hi).Scan(&n)
	if err != nil {
		return nil, fmt.Errorf("search: count the scope: %w", err)
	}
	idf := make(map[string]float64, len(words))
	for i, w := range words {
		c := float64(counts[i])
		all := max(float64(n), c)
		idf[w] = math.Log(1 + (all-c+0.5)/(c+0.5))
	}
	return idf, nil
}

// pgMatch is the tsquery text of memory search's match expression.
func pgMatch(expr string) string { return pgTSQuery(expr, recall.Tokens, nil) }

// ftsMatch is the match argument of words for the engine's statements.
func ftsMatch(pg bool, expr string) string {
	if pg {
		return pgMatch(expr)
	}
	return expr
}

// Memory search statements on PostgreSQL, in the argument order of
// SQLite's (the match expression first, then the scope's rowid range).
func pgCountWordSQL(commonWord int) string {
	return "(SELECT count(*) FROM (SELECT 1 FROM node_fts WHERE doc @@ CAST(? AS tsquery) AND rowid BETWEEN ? AND ? LIMIT " +
		strconv.Itoa(commonWord) + ") c)"
}

// pgRankSQL ranks the scope's matches, joined to their nodes when a
// filter (where) reads them.
func pgRankSQL(where string, words int) string {
	return "SELECT f.rowid, " + pgScoreSQL(words) + " AS r FROM CAST(? AS tsquery) q, node_fts f" + pgNodeJoin(where) +
		" WHERE f.doc @@ q AND f.rowid BETWEEN ? AND ?" + where
}

func pgNodeJoin(where string) string {
	if where == "" {
		return ""
	}
	return " JOIN nodes n ON n.nid = f.rowid & " + nidMask
}

// pgRecentSQL ranks the newest recent matches of the scope.
func pgRecentSQL(where string, recent, words int) string {
	q := "SELECT f.rowid, f.r FROM (SELECT f.rowid, " + pgScoreSQL(words) + " AS r FROM CAST(? AS tsquery) q, node_fts f" +
		" WHERE f.doc @@ q AND f.rowid BETWEEN ? AND ? ORDER BY f.rowid DESC LIMIT " + strconv.Itoa(recent) + ") f" + pgNodeJoin(where)
	if where != "" {
		q += " WHERE true" + where
	}
	return q
}

// pgLimit is a LIMIT argument: PostgreSQL reads "no limit" as NULL, not -1.
func pgLimit(limit int) any {
	if limit < 0 {
		return nil
	}
	return limit
}

const (
	// pgNodeTexts reads the searchable text of the nodes a JSON array
	// names, for indexing.
	pgNodeTexts = "SELECT t.sid, t.nid, t.title, t.ident, t.files, t.summary, t.payload, t.meta" +
		" FROM json_each(?) j JOIN node_text t ON t.nid = CAST(j.value AS BIGINT)"
	// pgIndexNodes writes index rows from a JSON array of [rowid, doc].
	pgIndexNodes = "INSERT INTO node_fts(rowid, doc) SELECT (e->>0)::bigint, (e->>1)::tsvector FROM json_array_elements(CAST(? AS json)) e" +
		" ON CONFLICT (rowid) DO UPDATE SET doc = excluded.doc"
	// pgVocabulary is node_fts_vocab: every term and how many nodes hold
	// it, in byte order.
	pgVocabulary = `SELECT word, ndoc FROM ts_stat('SELECT doc FROM node_fts') ORDER BY word COLLATE "C"`
)

// indexNodeTextPG is indexNodeText on PostgreSQL: the nodes' text read
// back from node_text, turned into documents here, written in one
// statement (queued in pipe).
func indexNodeTextPG(ctx context.Context, tx *sql.Tx, nids string, pipe *pgPipe) error {
	rows, err := tx.QueryContext(ctx, pgNodeTexts, nids)
	if err != nil {
		return fmt.Errorf("index node text: %w", err)
	}
	defer rows.Close()
	var docs [][2]any
	for rows.Next() {
		var sid, nid int64
		dst := make([]any, 2+len(ftsColumns))
		dst[0], dst[1] = &sid, &nid
		text := scanText(dst[2:])
		if err := rows.Scan(dst...); err != nil {
			return fmt.Errorf("index node text: %w", err)
		}
		docs = append(docs, [2]any{sid<<nidBits | nid, pgDoc(text[:], nodeLabels)})
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("index node text: %w", err)
	}
	rows.Close()
	if len(docs) == 0 {
		return nil
	}
	b, err := json.Marshal(docs)
	if err != nil {
		return fmt.Errorf("index node text: %w", err)
	}
	if err := pipe.send(ctx, tx, pgIndexNodes, []any{string(b)}); err != nil {
		return fmt.Errorf("index node text: %w", err)
	}
	return nil
}
