package grafana_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
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
	t.Parallel()
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
		if _, err := kuradtest.PromQLMetricNames(q.expr); err != nil {
			t.Errorf("%s: %v in %q", q.where, err, q.expr)
		}
	}
}

// postgresOnly reports whether expr names a metric only a kurad on
// PostgreSQL exports (the write lock the kurads on one database share).
func postgresOnly(expr string) bool { return strings.Contains(expr, "kura_writer_lock_") }

// TestDashboard_QueriesNameExportedMetrics starts a real kurad, writes
// something of every kind, scrapes /metrics and checks every dashboard
// query against what kurad exports.
func TestDashboard_QueriesNameExportedMetrics(t *testing.T) {
	t.Parallel()
	d := loadDashboard(t)
	base := kuradtest.StartMain(t, kuradtest.Options{Store: kuradtest.StoreSQLite}).BaseURL()
	kuradtest.Exercise(t, client.New(base))
	exported := kuradtest.ScrapeKinds(t, base)

	t.Run("Dashboard", func(t *testing.T) {
		qs := queries(t, d)
		if len(qs) == 0 {
			t.Fatal("got no queries, want the dashboard's")
		}
		for _, q := range qs {
			if postgresOnly(q.expr) {
				continue // checked on PostgreSQL, below
			}
			for _, p := range kuradtest.PromQLProblems(q.expr, exported) {
				t.Errorf("%s: %s\n\texpr: %s", q.where, p, q.expr)
			}
		}
	})
	// The shared write lock's panel names what only a kurad on PostgreSQL
	// exports: its queries are checked against one.
	t.Run("PostgreSQL", func(t *testing.T) {
		pg := kuradtest.StartMain(t, kuradtest.Options{Store: kuradtest.StorePostgres}).BaseURL()
		kuradtest.Exercise(t, client.New(pg))
		exported := kuradtest.ScrapeKinds(t, pg)
		n := 0
		for _, q := range queries(t, d) {
			if !postgresOnly(q.expr) {
				continue
			}
			n++
			for _, p := range kuradtest.PromQLProblems(q.expr, exported) {
				t.Errorf("%s: %s\n\texpr: %s", q.where, p, q.expr)
			}
		}
		if n == 0 {
			t.Error("got no query of the shared write lock, want the panel's")
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
			got := kuradtest.PromQLProblems(tc.expr, exported)
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
