// Package embed is a client for an OpenAI-compatible embeddings endpoint
// (POST {url}/v1/embeddings), the one Ollama, the llama.cpp server, vLLM
// and OpenAI all speak. Kura does not ship a model: the embedder is an
// outside service, and everything that uses it must work on without it.
package embed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Defaults of Config.
const (
	DefaultBatch   = 32
	DefaultTimeout = 30 * time.Second
	// maxResponseBytes bounds an answer: a batch of 32 vectors of 4,096
	// dimensions is about 3 MB of JSON.
	maxResponseBytes = 64 << 20
	// maxErrorText bounds what an error repeats of the endpoint's answer.
	maxErrorText = 200
)

// Config is how a Client reaches its endpoint.
type Config struct {
	// URL is the endpoint's base (http://127.0.0.1:11434), its /v1
	// (https://api.openai.com/v1) or the full embeddings path; all three
	// are accepted.
	URL   string
	Model string
	// Token, when set, is sent as a bearer token (OpenAI; a proxy in
	// front of a local server).
	Token string
	// Batch is the most texts sent in one request (DefaultBatch).
	Batch int
	// Timeout bounds each request (DefaultTimeout); a shorter deadline
	// on the caller's context wins.
	Timeout time.Duration
	// HTTPClient is the transport (tests); nil: a client of its own.
	HTTPClient *http.Client
}

// Client embeds texts with one model.
type Client struct {
	cfg      Config
	endpoint string
	hc       *http.Client
}

// New checks cfg and returns a client. It does not contact the endpoint.
func New(cfg Config) (*Client, error) {
	ep, err := Endpoint(cfg.URL)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("embedder model: must not be empty")
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			MaxIdleConnsPerHost: 4,
			IdleConnTimeout:     90 * time.Second,
		}}
	}
	return &Client{cfg: cfg, endpoint: ep, hc: hc}, nil
}

// Endpoint is the embeddings URL for a configured one: the base of a
// server, its /v1, or the embeddings path itself.
func Endpoint(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("embedder url: %q is not an http or https URL", raw)
	}
	if u.Host == "" {
		return "", fmt.Errorf("embedder url: %q names no host", raw)
	}
	if u.User != nil {
		// A password in a URL ends up in logs and process listings; the
		// token setting exists for credentials.
		return "", fmt.Errorf("embedder url: give credentials as the embedder token, not in the URL")
	}
	u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = "", false, "", ""
	p := strings.TrimRight(u.Path, "/")
	switch {
	case strings.HasSuffix(p, "/embeddings"):
	case strings.HasSuffix(p, "/v1"):
		p += "/embeddings"
	default:
		p += "/v1/embeddings"
	}
	u.Path, u.RawPath = p, ""
	return u.String(), nil
}

// Model is the model every vector of this client comes from.
func (c *Client) Model() string { return c.cfg.Model }

// Endpoint is the URL the client posts to.
func (c *Client) Endpoint() string { return c.endpoint }

// Embed returns one vector per text, in order, sending at most Batch texts
// a request. Every vector has the same dimensions; an answer that breaks
// that, or the request's shape, is an *Error like a failed request.
func (c *Client) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += c.cfg.Batch {
		vs, err := c.embedBatch(ctx, texts[start:min(start+c.cfg.Batch, len(texts))])
		if err != nil {
			return nil, err
		}
		if len(out) > 0 && len(vs[0]) != len(out[0]) {
			return nil, &Error{Kind: KindBadAnswer, Message: fmt.Sprintf("vectors of %d and %d dimensions in one answer", len(out[0]), len(vs[0]))}
		}
		out = append(out, vs...)
	}
	return out, nil
}

type request struct {
	Model string   `json:"model"`
	Input []string `json:"input"`
}

type response struct {
	Data []struct {
		Index     *int      `json:"index"`
		Embedding []float64 `json:"embedding"`
	} `json:"data"`
	Model string `json:"model"`
}

func (c *Client) embedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	body, err := json.Marshal(request{Model: c.cfg.Model, Input: texts})
	if err != nil {
		return nil, fmt.Errorf("embed: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("embed: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, &Error{Kind: failKind(ctx, err), Message: "request failed", Err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, &Error{Kind: failKind(ctx, err), Status: resp.StatusCode, Message: "reading the answer failed", Err: err}
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &Error{Kind: KindStatus, Status: resp.StatusCode, Message: errorText(raw)}
	}
	if len(raw) > maxResponseBytes {
		return nil, &Error{Kind: KindBadAnswer, Status: resp.StatusCode, Message: fmt.Sprintf("answer larger than %d bytes", maxResponseBytes)}
	}
	var r response
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, &Error{Kind: KindBadAnswer, Status: resp.StatusCode, Message: "answer is not an embeddings list", Err: err}
	}
	return vectors(&r, len(texts))
}

// failKind tells a request the caller gave up on from one that ran out
// of time and from a server that could not be reached.
func failKind(ctx context.Context, err error) Kind {
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		return KindCanceled
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		return KindTimeout
	}
	return KindUnreachable
}

// vectors checks an answer against the request (one vector per input,
// each index once, one dimension count, finite numbers) and orders it.
func vectors(r *response, n int) ([][]float32, error) {
	bad := func(format string, a ...any) error {
		return &Error{Kind: KindBadAnswer, Status: http.StatusOK, Message: fmt.Sprintf(format, a...)}
	}
	if len(r.Data) != n {
		return nil, bad("%d vectors for %d texts", len(r.Data), n)
	}
	out := make([][]float32, n)
	dims := -1
	for i, d := range r.Data {
		at := i // a server that leaves index out answers in order
		if d.Index != nil {
			at = *d.Index
		}
		if at < 0 || at >= n {
			return nil, bad("vector index %d is outside 0..%d", at, n-1)
		}
		if out[at] != nil {
			return nil, bad("vector index %d appears twice", at)
		}
		if len(d.Embedding) == 0 {
			return nil, bad("vector %d is empty", at)
		}
		if dims >= 0 && len(d.Embedding) != dims {
			return nil, bad("vectors of %d and %d dimensions in one answer", dims, len(d.Embedding))
		}
		dims = len(d.Embedding)
		v := make([]float32, dims)
		for j, x := range d.Embedding {
			if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > math.MaxFloat32 {
				return nil, bad("vector %d holds a number that is not finite", at)
			}
			v[j] = float32(x)
		}
		out[at] = v
	}
	return out, nil
}

// errorText is what an error answer says: the OpenAI error body's message
// ({"error":{"message"}} or {"error":"..."}), else the start of the body.
func errorText(raw []byte) string {
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	msg := ""
	if json.Unmarshal(raw, &e) == nil && len(e.Error) > 0 {
		var obj struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(e.Error, &obj) == nil && obj.Message != "" {
			msg = obj.Message
		} else {
			json.Unmarshal(e.Error, &msg)
		}
	}
	if msg == "" {
		msg = string(raw)
	}
	msg = strings.Join(strings.Fields(msg), " ")
	if len(msg) > maxErrorText {
		cut := maxErrorText
		for cut > 0 && msg[cut]&0xC0 == 0x80 {
			cut--
		}
		msg = msg[:cut] + "..."
	}
	return msg
}

// Kind says how an embeddings request failed.
type Kind string

// Kinds of failure.
const (
	KindUnreachable Kind = "unreachable" // no connection, or it broke
	KindTimeout     Kind = "timeout"     // no answer in time
	KindCanceled    Kind = "canceled"    // the caller gave up
	KindStatus      Kind = "status"      // the endpoint answered an error status
	KindBadAnswer   Kind = "bad_answer"  // a 200 that is not the answer asked for
)

// Error is a failed embeddings request. It never holds the token.
type Error struct {
	Kind    Kind
	Status  int // HTTP status, 0 when there was no answer
	Message string
	Err     error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("embedder ")
	b.WriteString(string(e.Kind))
	if e.Status != 0 && e.Kind != KindBadAnswer {
		fmt.Fprintf(&b, " (HTTP %d)", e.Status)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Public is the error without what the endpoint said and without where it
// is, for what other callers read (kurad's /v1/info, a search's warnings):
// an endpoint's message may quote the texts it was sent, and its address
// is the operator's business. Error has it all, for the log.
func (e *Error) Public() string {
	s := "embedder " + string(e.Kind)
	switch e.Kind {
	case KindStatus:
		s += fmt.Sprintf(" (HTTP %d)", e.Status)
	case KindBadAnswer:
		s += ": " + e.Message // kurad's own words, never the answer's
	}
	return s
}

// Refused reports whether the endpoint answered, and refused what it was
// sent (an error status other than an outage's, or an answer that is not
// one), rather than being down, slow or overloaded: then the texts may be
// the cause, and one of them alone may be refused while the others are
// not.
func (e *Error) Refused() bool {
	switch e.Kind {
	case KindBadAnswer:
		return true
	case KindStatus:
		switch e.Status {
		case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusBadGateway,
			http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return false
		}
		return true
	}
	return false
}

// Temporary reports whether trying again later may succeed: a server that
// is down, slow, overloaded or restarting. A 4xx other than 408 and 429
// (a wrong model name, a bad token) needs a configuration change, though
// kurad retries those too, more slowly.
func (e *Error) Temporary() bool {
	switch e.Kind {
	case KindUnreachable, KindTimeout:
		return true
	case KindStatus:
		return e.Status >= 500 || e.Status == http.StatusTooManyRequests || e.Status == http.StatusRequestTimeout
	}
	return false
}
