package api_test

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/daemon"
	"github.com/kura-memory/kura/internal/embed/embedtest"
	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/kura-memory/kura/internal/testwait"
)

// startEmbedKurad runs a real kurad whose embedder is the stand-in srv,
// serving model, on the store of prev (a new one when nil): its data
// directory and, on PostgreSQL, its database.
func startEmbedKurad(t *testing.T, srv *embedtest.Server, model string, prev *kuradtest.Daemon) (*apiClient, *kuradtest.Daemon) {
	t.Helper()
	d := kuradtest.StartMain(t, kuradtest.Options{Configure: func(c *daemon.Config) {
		if prev != nil {
			c.DataDir, c.KeyFile = prev.Config.DataDir, prev.Config.KeyFile
			c.DatabaseURL = prev.Config.DatabaseURL
		}
		c.EmbedderURL = srv.URL + "/v1"
		c.EmbedderModel = model
		c.EmbedRetry = 20 * time.Millisecond
	}})
	return &apiClient{tb: t, base: d.BaseURL()}, d
}

// metricsText is the /metrics page.
func (c *apiClient) metricsText() string {
	c.tb.Helper()
	resp, err := http.Get(c.base + "/metrics")
	if err != nil {
		c.tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		c.tb.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
	}
	return string(b)
}

// embedderInfo is /v1/info's embedder.
func (c *apiClient) embedderInfo() *kura.EmbedderInfo {
	c.tb.Helper()
	return decode[kura.Info](c.tb, c.mustGet("/v1/info")).Embedder
}

// search runs a memory search and returns its answer.
func (c *apiClient) search(scope, query string) kura.SearchAnswer {
	c.tb.Helper()
	return decode[kura.SearchAnswer](c.tb, c.mustGet("/v1/scopes/"+scope+"/memory/search?"+query))
}

func refsOf(ans kura.SearchAnswer) []string {
	var out []string
	for _, r := range ans.Results {
		out = append(out, r.Ref)
	}
	return out
}

func reasonOf(ans kura.SearchAnswer, ref, code string) (kura.SearchReason, bool) {
	for _, r := range ans.Results {
		if r.Ref == ref {
			for _, why := range r.Reasons {
				if why.Code == code {
					return why, true
				}
			}
		}
	}
	return kura.SearchReason{}, false
}

// waitEmbedded waits until the worker has nothing pending and has stored
// at least n vectors.
func (c *apiClient) waitEmbedded(t *testing.T, n int64) {
	t.Helper()
	testwait.For(t, 10*time.Second, "vectors for every node", func() bool {
		i := c.embedderInfo()
		return i != nil && i.State == "ok" && i.Pending == 0 && i.Embedded >= n
	})
}

const meaningNodes = `{"nodes":[
	{"kind":"fact","id":"car","title":"Car maintenance","summary":"the car gets its maintenance in spring"},
	{"kind":"fact","id":"dog","title":"Dog walking","summary":"walk the dog before the standup"},
	{"kind":"decision","id":"billing","title":"Billing day","summary":"billing runs on the first of the month"},
	{"kind":"fact","id":"garage","title":"Automobile garage","summary":"the garage by the station opens at eight"}]}`

func TestEmbed_E2E_HybridSearch(t *testing.T) {
	t.Parallel()
	srv := embedtest.Start(t, 64)
	c, _ := startEmbedKurad(t, srv, "m1", nil)
	c.mustPost(acmeMem+"/nodes/batch", meaningNodes, 201)
	c.waitEmbedded(t, 4)
	if i := c.embedderInfo(); i.Model != "m1" || i.Dims != 64 || i.Errors != 0 || i.LastError != "" {
		t.Fatalf("info embedder %+v; want m1, 64 dims, no errors", i)
	}

	// The default mode with an embedder is hybrid: the car node shares no
	// word with the query, and is found by meaning.
	ans := c.search("acme", "q=automobile+servicing&limit=10")
	if len(ans.Warnings) != 0 || len(ans.Results) == 0 || ans.Results[0].Ref != "fact:garage" || !slices.Contains(refsOf(ans), "fact:car") {
		t.Fatalf("hybrid: %v %q; want fact:garage first and fact:car found", refsOf(ans), ans.Warnings)
	}
	sm, ok := reasonOf(ans, "fact:car", "semantic_match")
	if !ok || !strings.HasSuffix(sm.Detail, " m1") || len(strings.SplitN(sm.Detail, " ", 2)[0]) != 5 {
		t.Fatalf("fact:car semantic_match %+v; want \"<cosine, 3 decimals> m1\"", sm)
	}
	for i := 1; i < len(ans.Results); i++ {
		if ans.Results[i].Score > ans.Results[i-1].Score {
			t.Fatalf("scores rise in the order: %g after %g", ans.Results[i].Score, ans.Results[i-1].Score)
		}
	}
	// By words alone, only the garage.
	if lex := c.search("acme", "q=automobile+servicing&mode=lexical"); !slices.Equal(refsOf(lex), []string{"fact:garage"}) {
		t.Fatalf("lexical: %v", refsOf(lex))
	}
	// By meaning alone, the car is the nearest.
	if sem := c.search("acme", "q=automobile+servicing&mode=semantic&limit=1"); !slices.Equal(refsOf(sem), []string{"fact:car"}) {
		t.Fatalf("semantic: %v", refsOf(sem))
	}
	// Filters hold for hits by meaning.
	if f := c.search("acme", "q=automobile+servicing&kind=decision"); !slices.Equal(refsOf(f), []string{"decision:billing"}) {
		t.Fatalf("kind=decision: %v", refsOf(f))
	}
	// A bad mode is refused with the field named.
	st, m, raw := c.get(acmeMem + "/search?q=car&mode=fuzzy")
	if st != 400 || !strings.Contains(string(raw), `"field":"mode"`) {
		t.Fatalf("mode=fuzzy: %d %v", st, m)
	}
	// A new version with new words is embedded again and found by them.
	c.mustPost(acmeMem+"/nodes", `{"kind":"fact","id":"dog","summary":"the physician visits on tuesdays"}`, 200)
	testwait.For(t, 10*time.Second, "the new text embedded", func() bool { return srv.Count("Dog walking\nthe physician visits on tuesdays") == 1 })
	testwait.For(t, 10*time.Second, "the node found by its new meaning", func() bool {
		ans := c.search("acme", "q=doctor&mode=semantic&limit=1")
		return slices.Equal(refsOf(ans), []string{"fact:dog"})
	})

	// The worker counts a batch just after committing its vectors: the
	// gauges follow the vector the search saw, a moment later.
	var metrics string
	want := []string{"kura_embed_pending 0", "kura_embed_vectors_total", "kura_embed_errors_total 0", "kura_embed_up 1"}
	testwait.Until(10*time.Second, func() bool {
		metrics = c.metricsText()
		return !slices.ContainsFunc(want, func(name string) bool { return !strings.Contains(metrics, name) })
	})
	for _, name := range want {
		if !strings.Contains(metrics, name) {
			t.Errorf("/metrics lacks %q", name)
		}
	}
}

func TestEmbed_E2E_EmbedderDown(t *testing.T) {
	t.Parallel()
	srv := embedtest.Start(t, 64)
	srv.SetDown(true)
	c, _ := startEmbedKurad(t, srv, "m1", nil)
	// Writes never wait for, nor fail on, the embedder.
	c.mustPost(acmeMem+"/nodes/batch", meaningNodes, 201)
	testwait.For(t, 10*time.Second, "the embedder seen failing", func() bool {
		i := c.embedderInfo()
		return i.State == "failing" && strings.Contains(i.LastError, "503") && i.Pending == 4
	})
	// A search by meaning answers by words, with a warning, never an error.
	ans := c.search("acme", "q=automobile+servicing")
	if !slices.Equal(refsOf(ans), []string{"fact:garage"}) || len(ans.Warnings) != 1 || !strings.Contains(ans.Warnings[0], "by words only") {
		t.Fatalf("hybrid with the embedder down: %v %q; want the lexical answer and one warning", refsOf(ans), ans.Warnings)
	}
	if _, ok := reasonOf(ans, "fact:garage", "semantic_match"); ok {
		t.Fatal("a semantic_match while the embedder is down")
	}
	if metrics := c.metricsText(); !strings.Contains(metrics, "kura_embed_up 0") || !strings.Contains(metrics, "kura_embed_pending 4") {
		t.Error("/metrics does not show the failing embedder and the 4 nodes waiting")
	}
	// Back up: the vectors appear without another write.
	srv.SetDown(false)
	c.waitEmbedded(t, 4)
	ans = c.search("acme", "q=automobile+servicing")
	if _, ok := reasonOf(ans, "fact:car", "semantic_match"); !ok || len(ans.Warnings) != 0 {
		t.Fatalf("after the embedder came back: %v %q", refsOf(ans), ans.Warnings)
	}
}

func TestEmbed_E2E_ModelChange(t *testing.T) {
	t.Parallel()
	srv := embedtest.Start(t, 64)
	c, d := startEmbedKurad(t, srv, "m1", nil)
	c.mustPost(acmeMem+"/nodes/batch", meaningNodes, 201)
	c.waitEmbedded(t, 4)
	if err := d.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Restarted with another model, kurad re-embeds every node in the
	// background; hits name the new model only.
	c2, _ := startEmbedKurad(t, srv, "m2", d)
	c2.waitEmbedded(t, 4)
	for _, text := range []string{"Car maintenance\nthe car gets its maintenance in spring", "Dog walking\nwalk the dog before the standup"} {
		if n := srv.Count(text); n != 2 {
			t.Errorf("%q embedded %d times; want twice, once per model", text, n)
		}
	}
	ans := c2.search("acme", "q=automobile+servicing&mode=semantic")
	if len(ans.Results) != 4 {
		t.Fatalf("semantic after the change: %v", refsOf(ans))
	}
	for _, r := range ans.Results {
		if sm, ok := reasonOf(ans, r.Ref, "semantic_match"); !ok || !strings.HasSuffix(sm.Detail, " m2") {
			t.Fatalf("%s: %+v; want a semantic_match of m2", r.Ref, sm)
		}
	}
}

func TestEmbed_E2E_NoEmbedder(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	c.mustPost(acmeMem+"/nodes", `{"kind":"fact","id":"car","title":"Car maintenance","summary":"service the car"}`, 201)
	// Without an embedder, nothing changes: no embedder in /v1/info, no
	// embed metrics, no warnings, the lexical answer.
	if _, m, _ := c.get("/v1/info"); m["embedder"] != nil {
		t.Fatalf("/v1/info embedder %v without one", m["embedder"])
	}
	if strings.Contains(c.metricsText(), "kura_embed_") {
		t.Fatal("embed metrics without an embedder")
	}
	_, m, _ := c.get(acmeMem + "/search?q=car")
	if _, ok := m["warnings"]; ok || len(m["results"].([]any)) != 1 {
		t.Fatalf("search: %v", m)
	}
	ans := c.search("acme", "q=car&mode=hybrid")
	if !slices.Equal(refsOf(ans), []string{"fact:car"}) || len(ans.Warnings) != 1 || !strings.Contains(ans.Warnings[0], "none is configured") {
		t.Fatalf("mode=hybrid without an embedder: %v %q", refsOf(ans), ans.Warnings)
	}
}
