package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kura-memory/kura/bench/internal/evalset"
	"github.com/kura-memory/kura/internal/kb"
	"github.com/kura-memory/kura/internal/kura"
)

// embedReply is the part of an embeddings answer the tests read.
type embedReply struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float64 `json:"embedding"`
	} `json:"data"`
	Model string `json:"model"`
}

func postEmbed(t *testing.T, u, body string) (int, embedReply) {
	t.Helper()
	resp, err := http.Post(u, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out embedReply
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode, out
}

func norm(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
}

func dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func TestEmbedServer_StandIn(t *testing.T) {
	t.Parallel()
	e, err := startEmbedServer("")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	st, out := postEmbed(t, e.URL(), `{"model":"m","input":["Caroline went to the support group","the support group was powerful","sunsets over a lake"]}`)
	if st != http.StatusOK || len(out.Data) != 3 || out.Model != "m" {
		t.Fatalf("got %d with %d vectors of model %q; want 200, 3, m", st, len(out.Data), out.Model)
	}
	for i, d := range out.Data {
		if d.Index != i || len(d.Embedding) != standInDims || math.Abs(norm(d.Embedding)-1) > 1e-4 {
			t.Errorf("vector %d: index %d, %d dimensions, norm %.5f; want %d, %d, 1", i, d.Index, len(d.Embedding), norm(d.Embedding), i, standInDims)
		}
	}
	// Shared words point the same way; no shared word, nearly orthogonal.
	if near, far := dot(out.Data[0].Embedding, out.Data[1].Embedding), dot(out.Data[0].Embedding, out.Data[2].Embedding); near < 0.3 || math.Abs(far) > 0.2 {
		t.Errorf("cosine of texts sharing words %.3f, of unrelated texts %.3f", near, far)
	}
	// One string is an input too, and the same text gets the same vector.
	st, one := postEmbed(t, "http://"+e.ln.Addr().String()+"/embeddings", `{"input":"sunsets over a lake"}`)
	if st != http.StatusOK || len(one.Data) != 1 || !slices.Equal(one.Data[0].Embedding, out.Data[2].Embedding) || one.Model != standInModel {
		t.Errorf("single input: status %d, %d vectors, model %q, same vector %v", st, len(one.Data), one.Model, len(one.Data) == 1 && slices.Equal(one.Data[0].Embedding, out.Data[2].Embedding))
	}
	if st, _ := postEmbed(t, e.URL(), `{"input":[1,2]}`); st != http.StatusBadRequest {
		t.Errorf("token ids: got %d, want 400", st)
	}
	if st, _ := postEmbed(t, "http://"+e.ln.Addr().String()+"/v1/chat", `{"input":"x"}`); st != http.StatusNotFound {
		t.Errorf("another path: got %d, want 404", st)
	}
	if s := e.stats(); s.Requests != 2 || s.Inputs != 4 || s.Errors != 2 || s.Busy <= 0 || s.LastEnd.IsZero() {
		t.Errorf("stats %+v: want 2 requests served, 4 inputs, 2 errors, busy time and a last end", s)
	}
}

func TestEmbedServer_Proxy(t *testing.T) {
	t.Parallel()
	up, err := startEmbedServer("")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	p, err := startEmbedServer(up.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	st, out := postEmbed(t, p.URL(), `{"input":["a b","c"]}`)
	if st != http.StatusOK || len(out.Data) != 2 {
		t.Fatalf("through the proxy: %d, %d vectors", st, len(out.Data))
	}
	if ps, us := p.stats(), up.stats(); ps.Inputs != 2 || us.Inputs != 2 || ps.Requests != 1 {
		t.Errorf("proxy counted %d inputs in %d requests, upstream %d inputs; want 2, 1, 2", ps.Inputs, ps.Requests, us.Inputs)
	}
	up.Close()
	if st, _ := postEmbed(t, p.URL(), `{"input":"x"}`); st != http.StatusBadGateway {
		t.Errorf("upstream gone: got %d, want 502", st)
	}
}

// Not parallel: waitEmbedded tells idleness by time, which other tests
// loading the machine would blur.
func TestWaitEmbedded(t *testing.T) {
	b := &bench{cfg: &config{}}
	k := &kuradProc{exited: make(chan struct{})}
	t.Run("NoRequest", func(t *testing.T) {
		e, err := startEmbedServer("")
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		if _, err := b.waitEmbedded(context.Background(), k, e, 10, 300*time.Millisecond, time.Second, 10*time.Second); !errors.Is(err, errNoEmbedder) {
			t.Errorf("got %v, want errNoEmbedder", err)
		}
	})
	t.Run("Complete", func(t *testing.T) {
		e, err := startEmbedServer("")
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				resp, err := http.Post(e.URL(), "application/json", bytes.NewReader([]byte(`{"input":["a","b","c","d"]}`)))
				if err == nil {
					resp.Body.Close()
				}
			}
		}()
		p, err := b.waitEmbedded(context.Background(), k, e, 20, 5*time.Second, 5*time.Second, 20*time.Second)
		wg.Wait()
		if err != nil || !p.Complete || p.Inputs != 20 || p.Requests != 5 {
			t.Errorf("got %+v, %v; want complete after 20 inputs in 5 requests", p, err)
		}
	})
	// Fewer inputs than nodes (kurad embeds equal texts once): done when
	// the requests stop, not complete; short of half the nodes, only after
	// six times as long a pause.
	for _, tt := range []struct {
		name  string
		nodes int
		least time.Duration
	}{{"Partial", 6, 500 * time.Millisecond}, {"FarShort", 100, 3 * time.Second}} {
		t.Run(tt.name, func(t *testing.T) {
			e, err := startEmbedServer("")
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			resp, err := http.Post(e.URL(), "application/json", strings.NewReader(`{"input":["a","b","c","d"]}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			t0 := time.Now()
			p, err := b.waitEmbedded(context.Background(), k, e, tt.nodes, 5*time.Second, 500*time.Millisecond, 20*time.Second)
			if err != nil || p.Complete || p.Inputs != 4 || time.Since(t0) < tt.least-200*time.Millisecond {
				t.Errorf("got %+v, %v after %s; want 4 inputs, not complete, after at least %s", p, err, time.Since(t0), tt.least)
			}
		})
	}
	t.Run("KuradExited", func(t *testing.T) {
		e, err := startEmbedServer("")
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		dead := &kuradProc{exited: make(chan struct{})}
		close(dead.exited)
		if _, err := b.waitEmbedded(context.Background(), dead, e, 10, 5*time.Second, time.Second, 10*time.Second); err == nil || errors.Is(err, errNoEmbedder) {
			t.Errorf("got %v, want kurad's exit", err)
		}
	})
}

// The lookup text is parsed the way kurad writes it (kb.FormatLookup).
func TestLookupIdentifiers(t *testing.T) {
	t.Parallel()
	entries := []kura.KBEntry{
		{Identifier: "Uniswap V3 SwapRouter contract address on Base", Value: "0xabc\n--- not an entry ---"},
		{Identifier: "Billing service log location (production)", Value: "/var/log/billing"},
		{Identifier: "Someone else's entry", Value: "x"},
	}
	known := map[string]bool{entries[0].Identifier: true, entries[1].Identifier: true}
	got := lookupIdentifiers(kb.FormatLookup("q", entries, 4), known)
	if !slices.Equal(got, []string{entries[0].Identifier, entries[1].Identifier}) {
		t.Errorf("got %q", got)
	}
	if got := lookupIdentifiers(kb.NoKnowledge("what is the uniswap router address"), known); len(got) != 0 {
		t.Errorf("no knowledge: got %q", got)
	}
}

func TestScoreMemory(t *testing.T) {
	t.Parallel()
	qs := []evalset.Question{
		{Evidence: []string{"a"}},      // found first
		{Evidence: []string{"b"}},      // found 6th
		{Evidence: []string{"c", "d"}}, // one of two, 3rd
		{Evidence: []string{"e"}},      // not found
	}
	e := &Engine{ranked: [][]string{
		{"a", "x"},
		{"x1", "x2", "x3", "x4", "x5", "b"},
		{"x", "y", "d"},
		nil,
	}}
	scoreMemory(e, qs)
	want := map[string]float64{
		"recall@1": 0.25, "recall@5": round((1 + 0.5) / 4.0), "recall@10": round((1 + 1 + 0.5) / 4.0),
		"hit@1": 0.25, "hit@5": 0.5, "hit@10": 0.75,
	}
	for m, w := range want {
		if got := e.Metrics[m]; got != w {
			t.Errorf("%s: got %.3f, want %.3f", m, got, w)
		}
	}
}

func TestKuradEnv(t *testing.T) {
	t.Setenv("KURA_EMBEDDER_URL", "http://example.invalid/v1/embeddings")
	t.Setenv("KURA_EMBEDDER_TOKEN", "secret")
	t.Setenv("KURA_LOG_LEVEL", "warn")
	env := kuradEnv([]string{"KURA_EMBEDDER_URL=http://127.0.0.1:1/v1/embeddings"})
	var embed []string
	for _, kv := range env {
		if strings.HasPrefix(kv, "KURA_EMBEDDER_") {
			embed = append(embed, kv)
		}
	}
	if !slices.Equal(embed, []string{"KURA_EMBEDDER_URL=http://127.0.0.1:1/v1/embeddings"}) || !slices.Contains(env, "KURA_LOG_LEVEL=warn") {
		t.Errorf("embedder variables %q (want only the one given), KURA_LOG_LEVEL kept: %v", embed, slices.Contains(env, "KURA_LOG_LEVEL=warn"))
	}
}

func TestInfoMentions(t *testing.T) {
	t.Parallel()
	var info map[string]any
	_ = json.Unmarshal([]byte(`{"version":"x","recall":{"embedder":{"model":"m"}},"list":[{"a":1}]}`), &info)
	if !infoMentions(info, "embed") || infoMentions(info, "vector") || infoMentions(nil, "embed") {
		t.Error("infoMentions: want a nested key found, an absent one not")
	}
}
