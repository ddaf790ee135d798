package prometheus_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/deploy/prometheus"
	"github.com/kura-memory/kura/internal/kuradtest"
)

// rule is one alerting rule as far as these tests read it.
type rule struct{ alert, expr string }

// parseRules reads the alert names and expressions of a rules file without
// a YAML library: "- alert: X" starts a rule, "expr:" holds a one-line
// expression, plain or quoted, or a block (| or >) of deeper-indented
// lines. promtool check rules (below) reads the file as YAML proper.
func parseRules(t *testing.T, text string) []rule {
	t.Helper()
	lines := strings.Split(text, "\n")
	var rules []rule
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		if name, ok := strings.CutPrefix(trimmed, "- alert:"); ok {
			rules = append(rules, rule{alert: strings.TrimSpace(name)})
			continue
		}
		v, ok := strings.CutPrefix(trimmed, "expr:")
		if !ok {
			continue
		}
		if len(rules) == 0 || rules[len(rules)-1].expr != "" {
			t.Fatalf("line %d: got an expr outside an alert rule (or two in one)", i+1)
		}
		v = strings.TrimSpace(v)
		switch {
		case strings.HasPrefix(v, "|") || strings.HasPrefix(v, ">"):
			indent := len(line) - len(strings.TrimLeft(line, " "))
			var block []string
			for i+1 < len(lines) {
				next := lines[i+1]
				if strings.TrimSpace(next) != "" && len(next)-len(strings.TrimLeft(next, " ")) <= indent {
					break
				}
				block = append(block, strings.TrimSpace(next))
				i++
			}
			v = strings.TrimSpace(strings.Join(block, " "))
		case len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0]:
			quote := v[0]
			v = v[1 : len(v)-1]
			if quote == '"' {
				v = strings.ReplaceAll(v, `\"`, `"`)
			}
		}
		if v == "" {
			t.Fatalf("line %d: got an empty expr", i+1)
		}
		rules[len(rules)-1].expr = v
	}
	return rules
}

// prometheusOwn are the series Prometheus records itself for every scrape
// target; a rule may use them although kurad does not export them.
var prometheusOwn = map[string]string{"up": "gauge"}

// postgresOnly reports whether s names a metric only a kurad on PostgreSQL
// exports (the write lock the kurads on one database share).
func postgresOnly(s string) bool { return strings.Contains(s, "kura_writer_lock_") }

// TestRules_NameExportedMetrics starts a real kurad, writes something of
// every kind, scrapes /metrics and checks every rule's expression against
// what kurad exports, and every series the promtool unit tests feed in too
// (so that they test the rules on series kurad really has).
func TestRules_NameExportedMetrics(t *testing.T) {
	t.Parallel()
	rules := parseRules(t, string(prometheus.Rules))
	if len(rules) < 8 {
		t.Fatalf("got %d rules, want the full set", len(rules))
	}
	base := kuradtest.StartMain(t, kuradtest.Options{Store: kuradtest.StoreSQLite}).BaseURL()
	kuradtest.Exercise(t, client.New(base))
	exported := kuradtest.ScrapeKinds(t, base)
	for name, kind := range prometheusOwn {
		exported[name] = kind
	}
	seen := map[string]bool{}
	var onPostgres []rule
	for _, r := range rules {
		if r.expr == "" {
			t.Errorf("alert %s: got no expr", r.alert)
		}
		if seen[r.alert] {
			t.Errorf("alert %s: defined twice", r.alert)
		}
		seen[r.alert] = true
		if postgresOnly(r.expr) {
			onPostgres = append(onPostgres, r)
			continue
		}
		for _, p := range kuradtest.PromQLProblems(r.expr, exported) {
			t.Errorf("alert %s: %s\n\texpr: %s", r.alert, p, r.expr)
		}
	}
	tests, err := os.ReadFile("kura-alerts.test.yml")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	pgSeries := map[string]bool{}
	for _, line := range strings.Split(string(tests), "\n") {
		s, ok := strings.CutPrefix(strings.TrimSpace(line), "- series:")
		if !ok {
			continue
		}
		n++
		s = strings.Trim(strings.TrimSpace(s), `'"`)
		name, _, _ := strings.Cut(s, "{")
		if postgresOnly(name) {
			pgSeries[name] = true
			continue
		}
		if _, ok := exported[name]; !ok {
			t.Errorf("kura-alerts.test.yml feeds series %s, which kurad does not export", name)
		}
	}
	if n == 0 {
		t.Error("got no input series in kura-alerts.test.yml, want the unit tests' series")
	}

	// The shared write lock's alert names what only a kurad on PostgreSQL
	// exports: it is checked against one.
	t.Run("PostgreSQL", func(t *testing.T) {
		if len(onPostgres) == 0 {
			t.Fatal("got no rule of the shared write lock, want KuraWriteLockSaturated")
		}
		pg := kuradtest.StartMain(t, kuradtest.Options{Store: kuradtest.StorePostgres}).BaseURL()
		kuradtest.Exercise(t, client.New(pg))
		exported := kuradtest.ScrapeKinds(t, pg)
		for _, r := range onPostgres {
			for _, p := range kuradtest.PromQLProblems(r.expr, exported) {
				t.Errorf("alert %s: %s\n\texpr: %s", r.alert, p, r.expr)
			}
		}
		for name := range pgSeries {
			if _, ok := exported[name]; !ok {
				t.Errorf("kura-alerts.test.yml feeds series %s, which kurad on PostgreSQL does not export", name)
			}
		}
	})

	// The parser itself: block and quoted expressions come out whole.
	got := parseRules(t, "groups:\n  - name: x\n    rules:\n      - alert: A\n        expr: |\n          sum(rate(kura_writer_jobs_total[5m]))\n            > 1\n        for: 5m\n      - alert: B\n        expr: \"kura_writer_queue_depth{x=\\\"y\\\"} > 3\"\n")
	want := []rule{{"A", "sum(rate(kura_writer_jobs_total[5m])) > 1"}, {"B", `kura_writer_queue_depth{x="y"} > 3`}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("parseRules: got %q, want %q", got, want)
	}
}

// TestRules_Promtool checks the rules' syntax and runs their unit tests
// with promtool, Prometheus's own checker (Debian's prometheus package;
// .ci/run installs it).
func TestRules_Promtool(t *testing.T) {
	t.Parallel()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not installed (Debian: apt-get install --no-install-recommends prometheus): kura-alerts.yml's syntax and unit tests are not checked; TestRules_NameExportedMetrics still checks its metric names")
	}
	for _, args := range [][]string{
		{"check", "rules", "kura-alerts.yml"},
		{"test", "rules", "kura-alerts.test.yml"},
	} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
