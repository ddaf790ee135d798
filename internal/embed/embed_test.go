package embed_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/embed"
	"github.com/kura-memory/kura/internal/embed/embedtest"
)

func TestEndpoint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want, err string
	}{
		{in: "http://127.0.0.1:11434", want: "http://127.0.0.1:11434/v1/embeddings"},
		{in: "http://127.0.0.1:11434/", want: "http://127.0.0.1:11434/v1/embeddings"},
		{in: "http://127.0.0.1:11434/v1", want: "http://127.0.0.1:11434/v1/embeddings"},
		{in: "http://127.0.0.1:11434/v1/", want: "http://127.0.0.1:11434/v1/embeddings"},
		{in: "https://api.openai.com/v1/embeddings", want: "https://api.openai.com/v1/embeddings"},
		{in: "http://gpu.lan:8000/proxy", want: "http://gpu.lan:8000/proxy/v1/embeddings"},
		{in: " http://h:1/v1?x=y#z ", want: "http://h:1/v1/embeddings"},
		{in: "", err: "not an http or https URL"},
		{in: "127.0.0.1:11434", err: "not an http or https URL"},
		{in: "ftp://h/v1", err: "not an http or https URL"},
		{in: "http:///v1", err: "names no host"},
		{in: "http://user:secret@h/v1", err: "token"},
	}
	for _, tc := range tests {
		got, err := embed.Endpoint(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Endpoint(%q) = %q, %v; want an error with %q", tc.in, got, err, tc.err)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("Endpoint(%q): the error repeats the password: %v", tc.in, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Endpoint(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestClient_Embed(t *testing.T) {
	t.Parallel()
	srv := embedtest.Start(t, 16)
	srv.Token = "sekrit"
	for _, base := range []string{srv.URL, srv.URL + "/v1", srv.URL + "/v1/embeddings"} {
		c, err := embed.New(embed.Config{URL: base, Model: "m1", Token: "sekrit", Batch: 2})
		if err != nil {
			t.Fatal(err)
		}
		before := srv.Calls()
		texts := []string{"a car", "the doctor", "dogs", "billing", "five"}
		vs, err := c.Embed(t.Context(), texts)
		if err != nil {
			t.Fatalf("%s: %v", base, err)
		}
		if got := srv.Calls() - before; got != 3 {
			t.Errorf("%s: %d requests for 5 texts in batches of 2, want 3", base, got)
		}
		for i, v := range vs {
			if want := embedtest.Vector("m1", texts[i], 16); !slices.Equal(v, want) {
				t.Errorf("%s: vector %d is not the one of %q", base, i, texts[i])
			}
		}
	}
	t.Run("BadToken", func(t *testing.T) {
		c, _ := embed.New(embed.Config{URL: srv.URL, Model: "m1", Token: "wrong"})
		_, err := c.Embed(t.Context(), []string{"x"})
		var e *embed.Error
		if !errors.As(err, &e) || e.Kind != embed.KindStatus || e.Status != 401 || e.Temporary() {
			t.Fatalf("got %v, want a non-temporary 401 status error", err)
		}
		if !strings.Contains(err.Error(), "bad token") || strings.Contains(err.Error(), "wrong") {
			t.Errorf("error %q: want the server's message and never the token", err)
		}
	})
	t.Run("Down", func(t *testing.T) {
		srv.SetDown(true)
		defer srv.SetDown(false)
		c, _ := embed.New(embed.Config{URL: srv.URL, Model: "m1", Token: "sekrit"})
		_, err := c.Embed(t.Context(), []string{"x"})
		var e *embed.Error
		if !errors.As(err, &e) || e.Status != 503 || !e.Temporary() {
			t.Fatalf("got %v, want a temporary 503", err)
		}
	})
}

func TestClient_Failures(t *testing.T) {
	t.Parallel()
	answer := func(body string) string {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(body))
		}))
		t.Cleanup(s.Close)
		return s.URL
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); slow.Close() })
	tests := []struct {
		name string
		url  string
		n    int
		kind embed.Kind
		msg  string
	}{
		{"Unreachable", closed.URL, 1, embed.KindUnreachable, "request failed"},
		{"Timeout", slow.URL, 1, embed.KindTimeout, ""},
		{"NotJSON", answer("<html>"), 1, embed.KindBadAnswer, "not an embeddings list"},
		{"TooFew", answer(`{"data":[{"index":0,"embedding":[1,2]}]}`), 2, embed.KindBadAnswer, "1 vectors for 2 texts"},
		{"IndexTwice", answer(`{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[1]}]}`), 2, embed.KindBadAnswer, "appears twice"},
		{"IndexOutside", answer(`{"data":[{"index":5,"embedding":[1]}]}`), 1, embed.KindBadAnswer, "outside"},
		{"MixedDims", answer(`{"data":[{"index":0,"embedding":[1]},{"index":1,"embedding":[1,2]}]}`), 2, embed.KindBadAnswer, "dimensions"},
		{"Empty", answer(`{"data":[{"index":0,"embedding":[]}]}`), 1, embed.KindBadAnswer, "empty"},
		{"NotFinite", answer(`{"data":[{"index":0,"embedding":[1e300]}]}`), 1, embed.KindBadAnswer, "not finite"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := embed.New(embed.Config{URL: tc.url, Model: "m", Timeout: 200 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Embed(t.Context(), make([]string, tc.n))
			var e *embed.Error
			if !errors.As(err, &e) || e.Kind != tc.kind || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v, want a %s error with %q", err, tc.kind, tc.msg)
			}
		})
	}
	t.Run("Canceled", func(t *testing.T) {
		c, _ := embed.New(embed.Config{URL: slow.URL, Model: "m"})
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(20*time.Millisecond, cancel)
		_, err := c.Embed(ctx, []string{"x"})
		var e *embed.Error
		if !errors.As(err, &e) || e.Kind != embed.KindCanceled {
			t.Fatalf("got %v, want canceled", err)
		}
	})
}

func TestClient_OrderAndErrorBody(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			// Answers in another order than asked, index says where.
			w.Write([]byte(`{"data":[{"index":1,"embedding":[0,1]},{"index":0,"embedding":[1,0]}],"model":"m"}`))
			return
		}
		w.WriteHeader(404)
		w.Write([]byte(`{"error":{"message":"model \"m\" not found, try pulling it first","type":"api_error"}}`))
	}))
	defer s.Close()
	c, _ := embed.New(embed.Config{URL: s.URL, Model: "m"})
	vs, err := c.Embed(t.Context(), []string{"first", "second"})
	if err != nil || vs[0][0] != 1 || vs[1][1] != 1 {
		t.Fatalf("got %v, %v; want the vectors in input order", vs, err)
	}
	_, err = c.Embed(t.Context(), []string{"x"})
	if err == nil || !strings.Contains(err.Error(), `HTTP 404`) || !strings.Contains(err.Error(), `model "m" not found`) {
		t.Fatalf("got %v, want the 404 and the server's message", err)
	}
}

func TestNew_Refuses(t *testing.T) {
	t.Parallel()
	if _, err := embed.New(embed.Config{URL: "http://h", Model: " "}); err == nil {
		t.Error("an empty model was accepted")
	}
	if _, err := embed.New(embed.Config{URL: "h:1", Model: "m"}); err == nil {
		t.Error("a URL without scheme was accepted")
	}
}

func FuzzEndpoint(f *testing.F) {
	f.Add("http://127.0.0.1:11434/v1/")
	f.Fuzz(func(t *testing.T, raw string) {
		ep, err := embed.Endpoint(raw)
		if err != nil {
			return
		}
		if !strings.HasSuffix(ep, "/embeddings") {
			t.Fatalf("Endpoint(%q) = %q: not an embeddings path", raw, ep)
		}
		// Normalising is idempotent.
		if again, err := embed.Endpoint(ep); err != nil || again != ep {
			t.Fatalf("Endpoint(%q) = %q, but Endpoint(%q) = %q, %v", raw, ep, ep, again, err)
		}
	})
}

func TestError_RefusedAndTemporary(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err                *embed.Error
		refused, temporary bool
	}{
		{&embed.Error{Kind: embed.KindUnreachable}, false, true},
		{&embed.Error{Kind: embed.KindTimeout}, false, true},
		{&embed.Error{Kind: embed.KindCanceled}, false, false},
		{&embed.Error{Kind: embed.KindBadAnswer, Status: 200}, true, false},
		{&embed.Error{Kind: embed.KindStatus, Status: 400}, true, false},
		{&embed.Error{Kind: embed.KindStatus, Status: 401}, true, false},
		{&embed.Error{Kind: embed.KindStatus, Status: 413}, true, false},
		{&embed.Error{Kind: embed.KindStatus, Status: 500}, true, true}, // llama.cpp: input too large
		{&embed.Error{Kind: embed.KindStatus, Status: 408}, false, true},
		{&embed.Error{Kind: embed.KindStatus, Status: 429}, false, true},
		{&embed.Error{Kind: embed.KindStatus, Status: 502}, false, true},
		{&embed.Error{Kind: embed.KindStatus, Status: 503}, false, true},
		{&embed.Error{Kind: embed.KindStatus, Status: 504}, false, true},
	}
	for _, tc := range tests {
		if got := tc.err.Refused(); got != tc.refused {
			t.Errorf("%v: Refused() = %v, want %v", tc.err, got, tc.refused)
		}
		if got := tc.err.Temporary(); got != tc.temporary {
			t.Errorf("%v: Temporary() = %v, want %v", tc.err, got, tc.temporary)
		}
	}
}

func TestError_Public(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  *embed.Error
		want string
	}{
		{&embed.Error{Kind: embed.KindUnreachable, Message: "request failed", Err: errors.New(`Post "http://10.0.0.5:11434/v1/embeddings": dial tcp 10.0.0.5:11434: connection refused`)}, "embedder unreachable"},
		{&embed.Error{Kind: embed.KindTimeout, Err: context.DeadlineExceeded}, "embedder timeout"},
		{&embed.Error{Kind: embed.KindStatus, Status: 500, Message: "input is too large to process: my secret text"}, "embedder status (HTTP 500)"},
		{&embed.Error{Kind: embed.KindBadAnswer, Status: 200, Message: "3 vectors for 2 texts", Err: errors.New("invalid character 's'")}, "embedder bad_answer: 3 vectors for 2 texts"},
	}
	for _, tc := range tests {
		if got := tc.err.Public(); got != tc.want {
			t.Errorf("Public() = %q, want %q (Error() is %q)", got, tc.want, tc.err.Error())
		}
	}
}
