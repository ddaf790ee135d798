// Package client is the Go client of kurad's HTTP/JSON API (v1). It mirrors
// the API one method per endpoint, turns error bodies back into *Error values
// and carries the helpers that let a caller verify records and ledgers
// locally, with kurahash, without trusting the server.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/kura-memory/kura/internal/kura"
)

// DefaultURL is where kurad listens unless configured otherwise.
const DefaultURL = "http://127.0.0.1:7700"

// maxErrorBody bounds how much of an error answer is read: an error body is
// small, and a misbehaving proxy must not make the client buffer a page.
const maxErrorBody = 64 << 10

// Client talks to one kurad. It is safe for concurrent use.
type Client struct {
	base  string
	token string
	http  *http.Client
}

// Option configures a Client.
type Option func(*Client)

// WithToken makes every request carry "Authorization: Bearer <token>".
func WithToken(token string) Option {
	return func(c *Client) { c.token = token }
}

// WithHTTPClient replaces http.DefaultClient, e.g. to set timeouts or a
// custom transport. The client uses a copy of hc whose redirects never
// carry the token to another origin (hc's own CheckRedirect, if any, is
// called after that).
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) {
		if hc != nil {
			c.http = tokenStaysHome(hc)
		}
	}
}

// defaultHTTP is http.DefaultClient with the token kept to kurad's origin.
var defaultHTTP = tokenStaysHome(http.DefaultClient)

// tokenStaysHome returns a copy of hc that drops Authorization from a
// redirect to another origin (scheme, host or port). Go's own rule drops
// it only for another host name: another port of 127.0.0.1, or http after
// https, would still receive the token.
func tokenStaysHome(hc *http.Client) *http.Client {
	cp := *hc
	next := hc.CheckRedirect
	cp.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) > 0 && origin(req.URL) != origin(via[0].URL) {
			req.Header.Del("Authorization")
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 { // net/http's own default
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &cp
}

// origin is a URL's scheme://host:port, the port spelled out.
func origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	return scheme + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

// New returns a client for the kurad at baseURL (e.g. "http://127.0.0.1:7700").
// An empty baseURL means DefaultURL. New does no I/O.
func New(baseURL string, opts ...Option) *Client {
	if baseURL == "" {
		baseURL = DefaultURL
	}
	c := &Client{base: strings.TrimRight(baseURL, "/"), http: defaultHTTP}
	for _, o := range opts {
		o(c)
	}
	return c
}

// BaseURL returns the URL the client talks to, without a trailing slash.
func (c *Client) BaseURL() string { return c.base }

type ctxKey int

const (
	keyRawResponse ctxKey = iota
	keyIdempotency
	keyStatus // *int: the HTTP status of a successful answer (kb.go)
)

// WithRawResponse returns a context that makes every successful call made
// with it copy the server's answer body, byte for byte, into dst (the last
// call wins). The CLI uses it to print exactly what kurad said, fields this
// package does not know about included.
func WithRawResponse(ctx context.Context, dst *json.RawMessage) context.Context {
	return context.WithValue(ctx, keyRawResponse, dst)
}

// MaxIdempotencyKey is the longest Idempotency-Key kurad accepts.
const MaxIdempotencyKey = 128

// WithIdempotencyKey returns a context that makes every write (POST) made
// with it carry "Idempotency-Key: key". kurad answers a key it has already
// applied with the first answer, same status and body, and writes nothing,
// so a caller that did not hear back can send the same call again. Use one
// key per logical write: two different writes sent with the same key get
// the first one's answer. An empty key sends no header.
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, keyIdempotency, key)
}

// do sends one request and decodes a 2xx answer into out (unless out is
// nil). A non-2xx answer is returned as *Error, unwrapped, so that callers
// can switch on its code directly; transport and decoding failures are
// wrapped with op.
func (c *Client) do(ctx context.Context, op, method, path string, query url.Values, body, out any) error {
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		// Content is hashed after canonicalization, so escaping would not
		// change a hash, but sending what the caller wrote is easier to debug.
		enc.SetEscapeHTML(false)
		if err := enc.Encode(body); err != nil {
			return fmt.Errorf("%s: encode request: %w", op, err)
		}
		rd = &buf
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	req.Header.Set("Accept", "application/json")
	// A write says JSON even without a body: kurad refuses any other
	// type, which is what a web page can send it without asking.
	if body != nil || (method != http.MethodGet && method != http.MethodHead) {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	// Reads are safe to repeat anyway; only writes carry the key.
	if key, _ := ctx.Value(keyIdempotency).(string); key != "" && method != http.MethodGet && method != http.MethodHead {
		// Checked here too so that a key kurad would refuse fails before
		// anything is sent; kurad stays the judge of everything else.
		if n := utf8.RuneCountInString(key); n > MaxIdempotencyKey {
			return kura.Invalid("Idempotency-Key", "%s: idempotency key has %d characters, at most %d allowed", op, n, MaxIdempotencyKey)
		}
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	defer resp.Body.Close()

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return decodeError(resp)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s: read answer: %w", op, err)
	}
	if dst, ok := ctx.Value(keyRawResponse).(*json.RawMessage); ok && dst != nil {
		*dst = append((*dst)[:0], b...)
	}
	if st, ok := ctx.Value(keyStatus).(*int); ok && st != nil {
		*st = resp.StatusCode
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s: decode answer: %w", op, err)
	}
	return nil
}

// decodeError turns a non-2xx answer into an *Error. Anything that is not
// the documented error body (a proxy's HTML page, an empty 502) becomes an
// internal error naming the HTTP status, so callers always get a code.
func decodeError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	// Drain what is left so the connection can be reused.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
	var env struct {
		Error *kura.Error `json:"error"`
	}
	if err := json.Unmarshal(b, &env); err == nil && env.Error != nil && env.Error.Code != "" {
		return env.Error
	}
	e := kura.Errorf(kura.EInternal, "kurad answered HTTP %s without an error body", resp.Status)
	e = e.WithDetail("status", resp.StatusCode)
	if s := strings.TrimSpace(string(b)); s != "" {
		if len(s) > 200 {
			s = s[:200] + "..."
		}
		e = e.WithDetail("body", s)
	}
	return e
}

// esc escapes one path segment, so that a mistyped id holding "/" or "?"
// stays one segment and the server answers it with a clear invalid_argument.
func esc(s string) string { return url.PathEscape(s) }

// Info returns what kurad says about itself (GET /v1/info).
func (c *Client) Info(ctx context.Context) (*Info, error) {
	var out Info
	if err := c.do(ctx, "info", http.MethodGet, "/v1/info", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Health reports whether the kurad process is alive (GET /healthz).
func (c *Client) Health(ctx context.Context) error {
	return c.do(ctx, "health", http.MethodGet, "/healthz", nil, nil, nil)
}

// Ready reports whether kurad is ready to serve: database open, writer and
// NATS running (GET /readyz).
func (c *Client) Ready(ctx context.Context) error {
	return c.do(ctx, "ready", http.MethodGet, "/readyz", nil, nil, nil)
}

// errMissingID is returned before any I/O when a method is called with an
// empty id, which would otherwise address the collection route instead.
func errMissingID(what string) error {
	return kura.Invalid(what, "%s is required", what)
}

// isEmpty reports whether s is empty once trimmed; ids never carry spaces.
func isEmpty(s string) bool { return strings.TrimSpace(s) == "" }
