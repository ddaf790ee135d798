package grafana_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/deploy/grafana"
	"github.com/kura-memory/kura/internal/kuradtest"
)

// The dashboard's JSON, as far as these tests read it.
type dashboard struct {
	Inputs        []input `json:"__inputs"`
	ID            *int    `json:"id"`
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []variable `json:"list"`
	} `json:"templating"`
}

type input struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	PluginID string `json:"pluginId"`
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type panel struct {
	ID         int         `json:"id"`
	Type       string      `json:"type"`
	Title      string      `json:"title"`
	Datasource *datasource `json:"datasource"`
	GridPos    struct {
		X, Y, W, H int
	} `json:"gridPos"`
	Targets []struct {
		Expr       string      `json:"expr"`
		RefID      string      `json:"refId"`
		Datasource *datasource `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's panels
}

type variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Datasource *datasource     `json:"datasource"`
	Query      json.RawMessage `json:"query"`
}

// inputDS is the data source every query must use: the import input, so
// that Grafana asks for a Prometheus when the dashboard is imported.
const inputDS = "${DS_PROMETHEUS}"

func loadDashboard(t *testing.T) *dashboard {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(grafana.Dashboard))
	var d dashboard
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("kura-dashboard.json: got %v, want valid JSON", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("kura-dashboard.json: got trailing data after the dashboard, want none")
	}
	return &d
}

// allPanels flattens rows, collapsed or not.
func allPanels(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

// query is one PromQL expression of the dashboard and where it sits.
type query struct{ where, expr string }

var labelValuesRE = regexp.MustCompile(`^\s*label_values\(\s*(.+?)\s*,\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*$`)

// queries lists every panel target's expr and every query variable's
// series selector (label_values(selector, label)).
func queries(t *testing.T, d *dashboard) []query {
	t.Helper()
	var qs []query
	for _, p := range allPanels(d.Panels) {
		for _, tg := range p.Targets {
			qs = append(qs, query{fmt.Sprintf("panel %d %q target %s", p.ID, p.Title, tg.RefID), tg.Expr})
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q string
		if err := json.Unmarshal(v.Query, &q); err != nil {
			var obj struct {
				Query string `json:"query"`
			}
			if err := json.Unmarshal(v.Query, &obj); err != nil {
				t.Fatalf("variable %s: got query %s, want a string or {\"query\": ...}", v.Name, v.Query)
			}
			q = obj.Query
		}
		m := labelValuesRE.FindStringSubmatch(q)
		if m == nil {
			t.Fatalf("variable %s: got query %q, want label_values(metric, label)", v.Name, q)
		}
		qs = append(qs, query{"variable " + v.Name, m[1]})
	}
	return qs
}

func TestDashboard_Structure(t *testing.T) {
	d := loadDashboard(t)
	if d.Title != "Kura" || d.UID == "" {
		t.Errorf("got title %q uid %q, want title Kura and a uid", d.Title, d.UID)
	}
	if d.ID != nil {
		t.Errorf("got id %d, want null: an id would clash with the importing Grafana's own", *d.ID)
	}
	if d.SchemaVersion < 36 {
		t.Errorf("got schemaVersion %d, want at least 36 (data source references by uid)", d.SchemaVersion)
	}
	if !slices.ContainsFunc(d.Inputs, func(in input) bool {
		return in.Name == "DS_PROMETHEUS" && in.Type == "datasource" && in.PluginID == "prometheus"
	}) {
		t.Errorf("got __inputs %+v, want a prometheus datasource input DS_PROMETHEUS", d.Inputs)
	}
	checkDS := func(where string, ds *datasource) {
		if ds == nil || ds.Type != "prometheus" || ds.UID != inputDS {
			t.Errorf("%s: got datasource %+v, want {prometheus %s}", where, ds, inputDS)
		}
	}
	ids := map[int]string{}
	var boxes []panel
	for _, p := range allPanels(d.Panels) {
		where := fmt.Sprintf("panel %d %q", p.ID, p.Title)
		if p.ID <= 0 {
			t.Errorf("%s: got id %d, want a positive id", where, p.ID)
		}
		if other, dup := ids[p.ID]; dup {
			t.Errorf("%s: id also used by %q, want unique panel ids", where, other)
		}
		ids[p.ID] = p.Title
		if p.Title == "" {
			t.Errorf("%s: got no title, want one", where)
		}
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.Y < 0 || g.X+g.W > 24 {
			t.Errorf("%s: got gridPos %+v, want it inside the 24-column grid", where, g)
		}
		for _, b := range boxes {
			o := b.GridPos
			if g.X < o.X+o.W && o.X < g.X+g.W && g.Y < o.Y+o.H && o.Y < g.Y+g.H {
				t.Errorf("%s: overlaps panel %d %q", where, b.ID, b.Title)
			}
		}
		boxes = append(boxes, p)
		if p.Type == "row" {
			continue
		}
		checkDS(where, p.Datasource)
		if len(p.Targets) == 0 {
			t.Errorf("%s: got no targets, want at least one query", where)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("%s target %s: got an empty expr", where, tg.RefID)
			}
			if tg.RefID == "" || refs[tg.RefID] {
				t.Errorf("%s: got refId %q, want unique non-empty refIds", where, tg.RefID)
			}
			refs[tg.RefID] = true
			if tg.Datasource != nil {
				checkDS(where+" target "+tg.RefID, tg.Datasource)
			}
		}
	}
	if len(ids) < 10 {
		t.Errorf("got %d panels, want the full dashboard", len(ids))
	}
	for _, v := range d.Templating.List {
		if v.Type == "query" {
			checkDS("variable "+v.Name, v.Datasource)
		}
	}
	for _, q := range queries(t, d) {
		if _, err := metricNames(q.expr); err != nil {
			t.Errorf("%s: %v in %q", q.where, err, q.expr)
		}
	}
}

// TestDashboard_QueriesNameExportedMetrics starts a real kurad, writes
// something of every kind, scrapes /metrics and checks every dashboard
// query against what kurad exports.
func TestDashboard_QueriesNameExportedMetrics(t *testing.T) {
	d := loadDashboard(t)
	base := kuradtest.Start(t)
	exercise(t, client.New(base))
	exported := scrape(t, base)

	t.Run("Dashboard", func(t *testing.T) {
		qs := queries(t, d)
		if len(qs) == 0 {
			t.Fatal("got no queries, want the dashboard's")
		}
		for _, q := range qs {
			for _, p := range problems(q.expr, exported) {
				t.Errorf("%s: %s\n\texpr: %s", q.where, p, q.expr)
			}
		}
	})

	// The check itself: it must catch a query naming a metric kurad does
	// not export, and must not be fooled by label names, strings,
	// functions or keywords.
	for _, tc := range []struct {
		name, expr string
		want       string // a problem containing this; "" for none
	}{
		{"Counter", `sum(rate(kura_writer_jobs_total{instance=~"$instance"}[$__rate_interval]))`, ""},
		{"Histogram", `histogram_quantile(0.99, sum by (le, route) (rate(kura_http_request_duration_seconds_bucket[5m])))`, ""},
		{"LabelsAndStrings", `sum without (kura_fake) (label_replace(kura_writer_queue_depth{kura_other="kura_nope"}, "kura_dst", "kura_x", "instance", "(.*)"))`, ""},
		{"Keywords", `kura_writer_jobs_total offset 5m / on (instance) group_left kura_writer_transactions_total > bool 1e3`, ""},
		{"BogusMetric", `sum(rate(kura_bogus_requests_total[5m]))`, "kura_bogus_requests_total"},
		{"OneOfTwoBogus", `sum(rate(kura_writer_jobs_total[5m])) / sum(rate(kura_writer_transaction_total[5m]))`, "kura_writer_transaction_total"},
		{"HistogramWithoutSuffix", `kura_writer_batch_size`, "kura_writer_batch_size"},
		{"RateOverGauge", `rate(kura_writer_queue_depth[5m])`, "gauge"},
		{"QuantileWithoutLe", `histogram_quantile(0.5, sum by (route) (rate(kura_http_request_duration_seconds_bucket[5m])))`, "le"},
		{"NoMetric", `vector(1)`, "names no metric"},
		{"Unbalanced", `sum(rate(kura_writer_jobs_total[5m])`, "unbalanced"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := problems(tc.expr, exported)
			if tc.want == "" {
				if len(got) > 0 {
					t.Errorf("got problems %q, want none", got)
				}
				return
			}
			if !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, tc.want) }) {
				t.Errorf("got problems %q, want one mentioning %q", got, tc.want)
			}
		})
	}
}

// exercise writes records, a ledger, a session with a closed turn and a
// memory node, so that every metric family has samples.
func exercise(t *testing.T, c *client.Client) {
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

// scrape reads kurad's /metrics and returns every exported series name
// (histograms as their _bucket, _sum and _count series) with its kind:
// counter, gauge, untyped, or histogram_bucket/_sum/_count.
func scrape(t *testing.T, base string) map[string]string {
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

// problems lists what is wrong with a dashboard expression against the
// exported series: names kurad does not export, rate() over a gauge, a
// histogram_quantile that drops le.
func problems(expr string, exported map[string]string) []string {
	names, err := metricNames(expr)
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

// metricNames returns the metric names a PromQL expression (with Grafana
// variables) selects: identifiers outside strings, label matchers ({...}),
// ranges ([...]) and grouping lists (by (...)), that are neither a
// function or aggregation call nor a keyword.
func metricNames(expr string) ([]string, error) {
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
