package api_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/daemon"
	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/kura-memory/kura/internal/testwait"
)

// gauge reads one unlabelled sample from /metrics; -1 when it is absent.
func gauge(t *testing.T, base, name string) float64 {
	t.Helper()
	return gaugeAs(t, base, "", name)
}

// bodyCall is one POST /v1/records whose body the test feeds.
type bodyCall struct {
	pw   *io.PipeWriter
	rest string
	done chan *http.Response
	err  chan error
}

// recordBody is a record write of size bytes, its content ending in tag
// (so that no two are the same record).
func recordBody(size int, tag string) string {
	head, tail := `{"type":"agent.thought","content":"`, tag+`","author_id":"agent:bmo"}`
	return head + strings.Repeat("x", size-len(head)-len(tail)) + tail
}

// startBody sends body to POST /v1/records, declaring its length (or none:
// chunked), but holds back the last hold bytes until finish.
func startBody(t *testing.T, base, body string, hold int, chunked bool) *bodyCall {
	return startBodyAs(t, base, "", body, hold, chunked)
}

// startBodyAs is startBody with a bearer token.
func startBodyAs(t *testing.T, base, tok, body string, hold int, chunked bool) *bodyCall {
	t.Helper()
	pr, pw := io.Pipe()
	req, err := http.NewRequest("POST", base+"/v1/records", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	req.ContentLength = int64(len(body))
	if chunked {
		req.ContentLength = -1
	}
	c := &bodyCall{pw: pw, rest: body[len(body)-hold:], done: make(chan *http.Response, 1), err: make(chan error, 1)}
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			c.err <- err
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		c.done <- resp
	}()
	go pw.Write([]byte(body[:len(body)-hold]))
	return c
}

// finish sends the rest of the body and returns the answer's status.
func (c *bodyCall) finish(t *testing.T) *http.Response {
	t.Helper()
	go func() {
		c.pw.Write([]byte(c.rest))
		c.pw.Close()
	}()
	return c.answer(t)
}

func (c *bodyCall) answer(t *testing.T) *http.Response {
	t.Helper()
	select {
	case resp := <-c.done:
		return resp
	case err := <-c.err:
		t.Fatalf("request failed: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("no answer in 20 s")
	}
	return nil
}

// TestAPI_InflightBodyBudget: the bytes of request bodies held at once are
// bounded. A request reserves its declared Content-Length (the body limit
// when chunked) before anything reads its body, and holds it until it is
// answered; when the budget is spent it waits a bounded time, then gets 503
// unavailable with Retry-After. kura_http_inflight_body_bytes never passes
// the budget, and small requests pass again once the large ones are done.
func TestAPI_InflightBodyBudget(t *testing.T) {
	const (
		maxBody = 64 << 10
		budget  = 2 * maxBody
		size    = 60 << 10
	)
	wait := 1500 * time.Millisecond
	d := kuradtest.StartMain(t, kuradtest.Options{Configure: func(c *daemon.Config) {
		c.MaxBodyBytes = maxBody
		c.MaxInflightBodyBytes = budget
		c.MaxInflightBodyWait = wait
	}})
	base := d.BaseURL()
	inflight := func() float64 { return gauge(t, base, "kura_http_inflight_body_bytes") }
	waiting := func() float64 { return gauge(t, base, "kura_http_inflight_body_waiting") }
	if got := inflight(); got != 0 {
		t.Fatalf("got kura_http_inflight_body_bytes %v at rest, want 0", got)
	}
	n := 0
	body := func() string { n++; return recordBody(size, strconv.Itoa(n)) }

	// Two bodies fill the budget; their senders stall before the end.
	h1 := startBody(t, base, body(), 10, false)
	h2 := startBody(t, base, body(), 10, false)
	testwait.For(t, 10*time.Second, "two bodies in flight", func() bool { return inflight() == 2*size })

	t.Run("WaitsForRoom", func(t *testing.T) {
		c := startBody(t, base, body(), 0, false)
		testwait.For(t, 10*time.Second, "a request waiting for room", func() bool { return waiting() == 1 })
		if got := inflight(); got != 2*size {
			t.Fatalf("got %v bytes in flight while one waits, want %d", got, 2*size)
		}
		if resp := h1.finish(t); resp.StatusCode != 201 {
			t.Fatalf("first body: got %d, want 201", resp.StatusCode)
		}
		if resp := c.answer(t); resp.StatusCode != 201 {
			t.Fatalf("the waiting request: got %d, want 201 once room was made", resp.StatusCode)
		}
	})

	t.Run("RefusedAfterTheWait", func(t *testing.T) {
		// h2 holds size bytes; a chunked body reserves the whole body limit.
		h3 := startBody(t, base, body(), 10, true)
		testwait.For(t, 10*time.Second, "a chunked body in flight", func() bool { return inflight() == size+maxBody })
		var refused []*bodyCall
		for i := 0; i < 3; i++ {
			refused = append(refused, startBody(t, base, body(), 0, false))
		}
		testwait.For(t, 10*time.Second, "three requests waiting", func() bool { return waiting() == 3 })
		for i, c := range refused {
			testwait.For(t, testwait.Default, fmt.Sprintf("request %d answered", i), func() bool {
				if got := inflight(); got > budget {
					t.Fatalf("%v body bytes in flight, over the budget %d", got, budget)
				}
				return len(c.done) > 0 || len(c.err) > 0
			})
			resp := c.answer(t)
			if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
				t.Errorf("request %d: got %d, Retry-After %q; want 503 with Retry-After", i, resp.StatusCode, resp.Header.Get("Retry-After"))
			}
		}
		for _, h := range []*bodyCall{h2, h3} {
			if resp := h.finish(t); resp.StatusCode != 201 {
				t.Errorf("held body: got %d, want 201", resp.StatusCode)
			}
		}
	})

	testwait.For(t, 10*time.Second, "the budget to empty", func() bool { return inflight() == 0 && waiting() == 0 })
	for i := 0; i < 3; i++ {
		resp, err := http.Post(base+"/v1/records", "application/json", strings.NewReader(fmt.Sprintf(`{"type":"agent.thought","content":%d,"author_id":"agent:bmo"}`, i)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 201 {
			t.Fatalf("small request after the load: got %d, want 201", resp.StatusCode)
		}
	}
}

// TestAPI_InflightBodyBudgetNeedsAToken: with tokens, the budget is taken
// only once the caller is known. A request without a valid token is
// answered 401 at once, even while the budget is spent, and reserves
// nothing: a client without a token cannot spend or queue for the budget.
func TestAPI_InflightBodyBudgetNeedsAToken(t *testing.T) {
	const maxBody = 64 << 10
	e := startAuthKurad(t, func(c *daemon.Config) {
		c.MaxBodyBytes = maxBody
		c.MaxInflightBodyBytes = 2 * maxBody
		c.MaxInflightBodyWait = 3 * time.Second
	})
	inflight := func() float64 { return gaugeAs(t, e.base, tRoot, "kura_http_inflight_body_bytes") }
	var holders []*bodyCall
	for i := 0; i < 2; i++ {
		holders = append(holders, startBodyAs(t, e.base, tRoot, recordBody(60<<10, "root"+strconv.Itoa(i)), 10, false))
	}
	testwait.For(t, 10*time.Second, "the budget spent by the admin", func() bool { return inflight() == 2*60<<10 })
	for i, tok := range []string{"", tBad} {
		start := time.Now()
		resp := startBodyAs(t, e.base, tok, recordBody(60<<10, "anon"+strconv.Itoa(i)), 0, false).answer(t)
		if took := time.Since(start); resp.StatusCode != 401 || took > 2*time.Second {
			t.Fatalf("request %d without a valid token while the budget is spent: got %d after %s, want 401 at once", i, resp.StatusCode, took)
		}
		if got := inflight(); got != 2*60<<10 {
			t.Fatalf("got %v body bytes in flight, want only the admin's", got)
		}
	}
	for _, h := range holders {
		if resp := h.finish(t); resp.StatusCode != 201 {
			t.Fatalf("admin write: got %d, want 201", resp.StatusCode)
		}
	}
}

// gaugeAs is gauge for a kurad that wants a token for /metrics.
func gaugeAs(t *testing.T, base, tok, name string) float64 {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	return -1
}
