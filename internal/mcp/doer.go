package mcp

import (
	"bytes"
	"context"
	"io"
	"net/http"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Local returns a Doer that serves each request in-process with the
// handler api returns, kurad's own root handler with its whole middleware
// chain. api is called per request, so the Doer can be made before the
// handler that will serve it exists (kurad mounts /mcp inside that very
// handler).
func Local(api func() http.Handler) Doer { return localDoer(api) }

type localDoer func() http.Handler

func (d localDoer) Do(req *http.Request) (*http.Response, error) {
	// The server side of a request: no scheme or host, the path as sent.
	req.RequestURI = req.URL.RequestURI()
	req.RemoteAddr = remoteAddr(req.Context())
	// The Host the MCP request was addressed to, which kurad's Host check
	// already accepted for it: the tool call is that same request.
	req.Host = outerHost(req.Context())
	// The inner request starts clean, like one off the wire: it keeps the
	// call's cancellation but none of the outer request's context values
	// (the router's own routing state among them, which would make the
	// router route the inner request as the outer POST /mcp).
	req = req.WithContext(valueless{req.Context()})
	if req.Body == nil {
		req.Body = http.NoBody
	}
	rec := &recorder{header: http.Header{}}
	d().ServeHTTP(rec, req)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return &http.Response{
		Status:        http.StatusText(rec.status),
		StatusCode:    rec.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        rec.header,
		Body:          io.NopCloser(&rec.body),
		ContentLength: int64(rec.body.Len()),
		Request:       req,
	}, nil
}

// valueless is a context with its parent's deadline and cancellation and
// no values.
type valueless struct{ context.Context }

func (valueless) Value(any) any { return nil }

// recorder is the ResponseWriter of an in-process request: the API writes
// complete answers (no streaming route is a tool), so buffering is enough.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}

type ctxKey int

const (
	keyRemoteAddr ctxKey = iota
	keyHost
)

func remoteAddr(ctx context.Context) string {
	if a, ok := ctx.Value(keyRemoteAddr).(string); ok {
		return a
	}
	return ""
}

func outerHost(ctx context.Context) string {
	h, _ := ctx.Value(keyHost).(string)
	return h
}

// HTTPOptions configure the Streamable HTTP handler.
type HTTPOptions struct {
	Options
	// MaxBodyBytes bounds an MCP request. Tool arguments are API bodies, so
	// kurad sets it above its API body limit, leaving that limit (and its
	// too_large answer) to the API.
	MaxBodyBytes int64
}

// NewHTTPHandler serves the tools over Streamable HTTP. It is stateless:
// every MCP request stands alone and carries its own Authorization, which
// each tool call forwards to the API, so there is no session to hijack and
// nothing to keep between requests.
func NewHTTPHandler(d Doer, o HTTPOptions) http.Handler {
	srv := NewServer(d, o.Options)
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{
		Stateless:           true,
		JSONResponse:        true,
		MaxRequestBodyBytes: o.MaxBodyBytes,
		// kurad checks the Host of every request, /mcp included, before
		// it gets here, with one rule for the whole API (internal/api's
		// checkHost: loopback names only, and only without tokens). The
		// SDK's own check would add a second rule that refuses a reverse
		// proxy's Host on /mcp alone.
		DisableLocalhostProtection: true,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The SDK hands tool handlers a context derived from the request's:
		// the inner API request then comes from the same address, to the
		// same Host.
		ctx := context.WithValue(r.Context(), keyRemoteAddr, r.RemoteAddr)
		ctx = context.WithValue(ctx, keyHost, r.Host)
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}
