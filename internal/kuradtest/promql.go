package kuradtest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kura-memory/kura/client"
)

// What the deploy/ tests need to hold a dashboard's queries and the alert
// rules to the metrics a real kurad exports.

// Exercise writes records, a ledger, a session with a closed turn and a
// memory node, so that every metric family of kurad has samples.
func Exercise(t testing.TB, c *client.Client) {
	t.Helper()
	ctx := t.Context()
	recs, err := c.PutRecords(ctx, []client.RecordInput{
		{Type: "agent.thought", AuthorID: "agent:bmo", Content: json.RawMessage(`{"text":"one"}`)},
		{Type: "memory.fact", AuthorID: "agent:bmo", Content: json.RawMessage(`{"text":"two"}`)},
	})
	if err != nil {
		t.Fatalf("put records: %v", err)
	}
	if _, err := c.CreateLedger(ctx, client.LedgerInput{Label: "metrics", RecordIDs: []string{recs[0].ID, recs[1].ID}}); err != nil {
		t.Fatalf("create ledger: %v", err)
	}
	s, err := c.CreateSession(ctx, client.SessionInput{Project: "metrics", Name: "dash"})
	if err != nil {
		t.Fatalf("create session: %v", err)
	}
	tu, err := c.OpenTurn(ctx, s.ID, client.TurnOpenInput{Instruction: &client.RecordInput{Type: "task.instruction", AuthorID: "user:oles", Content: json.RawMessage(`"go"`)}})
	if err != nil {
		t.Fatalf("open turn: %v", err)
	}
	if _, err := c.CloseTurn(ctx, tu.ID, client.TurnClose{Status: client.TurnComplete}); err != nil {
		t.Fatalf("close turn: %v", err)
	}
	summary := "the gateway times out after 30s"
	if _, _, err := c.PutNode(ctx, "metrics", client.NodeInput{Kind: "fact", ID: "gw.timeout", Summary: &summary, DerivedFrom: []string{"record:" + recs[1].ID}}); err != nil {
		t.Fatalf("put node: %v", err)
	}
}

// ScrapeKinds reads kurad's /metrics (the Prometheus text format) and
// returns every exported series name (histograms as their _bucket, _sum
// and _count series) with its kind: counter, gauge, untyped, or
// histogram_bucket/_sum/_count.
func ScrapeKinds(t testing.TB, base string) map[string]string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: got HTTP %d, want 200", resp.StatusCode)
	}
	types := map[string]string{}
	out := map[string]string{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if f, ok := strings.CutPrefix(line, "# TYPE "); ok {
			if name, typ, ok := strings.Cut(f, " "); ok {
				types[name] = typ
			}
			continue
		}
		if line == "" || line[0] == '#' {
			continue
		}
		end := strings.IndexAny(line, "{ ")
		if end <= 0 {
			t.Fatalf("scrape: got line %q, want a sample", line)
		}
		name := line[:end]
		kind := types[name]
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if fam, ok := strings.CutSuffix(name, suf); ok && (types[fam] == "histogram" || types[fam] == "summary") {
				kind = types[fam] + suf
			}
		}
		out[name] = kind
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("scrape: %v", err)
	}
	if len(out) == 0 {
		t.Fatal("scrape: got no series, want kurad's metrics")
	}
	return out
}

var rateArgRE = regexp.MustCompile(`\b(rate|irate|increase)\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)`)
var byRE = regexp.MustCompile(`\b(by|without)\s*\(([^)]*)\)`)

// PromQLProblems lists what is wrong with a PromQL expression (a dashboard
// query, an alert rule) against the series ScrapeKinds found: names kurad
// does not export, rate() over a gauge, a histogram_quantile that drops le.
func PromQLProblems(expr string, exported map[string]string) []string {
	names, err := PromQLMetricNames(expr)
	if err != nil {
		return []string{err.Error()}
	}
	if len(names) == 0 {
		return []string{"names no metric"}
	}
	var out []string
	buckets := false
	for _, n := range names {
		kind, ok := exported[n]
		if !ok {
			out = append(out, fmt.Sprintf("names %s, which kurad does not export", n))
			continue
		}
		buckets = buckets || kind == "histogram_bucket"
	}
	bare := stripStrings(expr)
	for _, m := range rateArgRE.FindAllStringSubmatch(bare, -1) {
		if kind, ok := exported[m[2]]; ok && kind != "counter" && !strings.HasPrefix(kind, "histogram_") {
			out = append(out, fmt.Sprintf("%s() over %s, a %s", m[1], m[2], kind))
		}
	}
	if buckets {
		if !strings.Contains(bare, "histogram_quantile(") {
			out = append(out, "reads _bucket series outside histogram_quantile")
		}
		for _, m := range byRE.FindAllStringSubmatch(bare, -1) {
			labels := strings.Split(m[2], ",")
			for i := range labels {
				labels[i] = strings.TrimSpace(labels[i])
			}
			if (m[1] == "by") != slices.Contains(labels, "le") {
				out = append(out, fmt.Sprintf("aggregates buckets %s (%s), losing le", m[1], m[2]))
			}
		}
	}
	return out
}

// stripStrings blanks PromQL string literals, keeping the quotes.
func stripStrings(expr string) string {
	b := []byte(expr)
	for i := 0; i < len(b); i++ {
		if q := b[i]; q == '"' || q == '\'' || q == '`' {
			for i++; i < len(b) && b[i] != q; i++ {
				if b[i] == '\\' && q != '`' && i+1 < len(b) {
					b[i] = ' '
					i++
				}
				b[i] = ' '
			}
		}
	}
	return string(b)
}

// Words that are PromQL syntax, not metric names: keywords, and the
// aggregation operators, which may be followed by by (...) before their (.
var promKeywords = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"bool": true, "and": true, "or": true, "unless": true, "offset": true, "inf": true, "nan": true, "atan2": true,
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true, "count": true,
	"count_values": true, "bottomk": true, "topk": true, "quantile": true, "limitk": true, "limit_ratio": true,
}

// PromQLMetricNames returns the metric names a PromQL expression (with
// Grafana variables) selects: identifiers outside strings, label matchers ({...}),
// ranges ([...]) and grouping lists (by (...)), that are neither a
// function or aggregation call nor a keyword.
func PromQLMetricNames(expr string) ([]string, error) {
	var names []string
	var open []byte
	skipString := func(i int) (int, error) {
		q := expr[i]
		for i++; i < len(expr); i++ {
			switch {
			case expr[i] == '\\' && q != '`':
				i++
			case expr[i] == q:
				return i + 1, nil
			}
		}
		return 0, fmt.Errorf("unterminated string")
	}
	// skipTo skips past the closing byte, stepping over strings.
	skipTo := func(i int, closing byte) (int, error) {
		opening := expr[i]
		for i++; i < len(expr); {
			switch c := expr[i]; {
			case c == '"' || c == '\'' || c == '`':
				var err error
				if i, err = skipString(i); err != nil {
					return 0, err
				}
			case c == closing:
				return i + 1, nil
			default:
				i++
			}
		}
		return 0, fmt.Errorf("unbalanced %q", opening)
	}
	isIdent := func(c byte, first bool) bool {
		return c == '_' || c == ':' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || !first && '0' <= c && c <= '9'
	}
	nextNonSpace := func(i int) int {
		for i < len(expr) && (expr[i] == ' ' || expr[i] == '\t' || expr[i] == '\n') {
			i++
		}
		return i
	}
	for i := 0; i < len(expr); {
		c := expr[i]
		var err error
		switch {
		case c == '"' || c == '\'' || c == '`':
			i, err = skipString(i)
		case c == '$': // a Grafana variable: $name or ${name...}
			if i++; i < len(expr) && expr[i] == '{' {
				i, err = skipTo(i, '}')
			} else {
				for i < len(expr) && isIdent(expr[i], false) {
					i++
				}
			}
		case c == '{':
			i, err = skipTo(i, '}')
		case c == '[':
			i, err = skipTo(i, ']')
		case c == '}' || c == ']':
			return nil, fmt.Errorf("unbalanced %q", c)
		case c == '(':
			open = append(open, c)
			i++
		case c == ')':
			if len(open) == 0 {
				return nil, fmt.Errorf("unbalanced ')'")
			}
			open = open[:len(open)-1]
			i++
		case '0' <= c && c <= '9' || c == '.': // numbers and durations
			for i < len(expr) && (isIdent(expr[i], false) || expr[i] == '.') {
				i++
			}
		case isIdent(c, true):
			j := i
			for j < len(expr) && isIdent(expr[j], false) {
				j++
			}
			word := expr[i:j]
			k := nextNonSpace(j)
			switch {
			case word == "by" || word == "without" || word == "on" || word == "ignoring" || word == "group_left" || word == "group_right":
				// A label list, not metric names.
				if k < len(expr) && expr[k] == '(' {
					j, err = skipTo(k, ')')
				}
			case k < len(expr) && expr[k] == '(':
				// A function or aggregation call.
			case promKeywords[strings.ToLower(word)]:
			default:
				if !slices.Contains(names, word) {
					names = append(names, word)
				}
			}
			i = j
		default:
			i++
		}
		if err != nil {
			return nil, err
		}
	}
	if len(open) > 0 {
		return nil, fmt.Errorf("unbalanced '('")
	}
	return names, nil
}
