// Package mcp serves Kura's memory to agents as Model Context Protocol
// tools and resources, with the official Go SDK.
//
// Every tool is a thin adapter over the HTTP API: a call becomes one API
// request, sent through a Doer, and the API's answer becomes the tool's
// result. kurad sends it in-process to its own router (Local), so that the
// authentication, the validation limits and the error codes of a tool call
// are those of the HTTP API by construction; "kura mcp" sends it over the
// network with the Go client (client.Client is a Doer). There is no second
// implementation of any operation here, only the mapping from arguments to
// requests.
package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Doer sends one request to Kura's HTTP API. The request's URL holds only
// the path and query (/v1/records/...); the Doer knows where kurad is.
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

// maxAnswer bounds how much of an API answer a tool reads. Answers are
// bounded by the API's own limits (pages of at most 1000 items); this
// only protects against a misbehaving server or proxy.
const maxAnswer = 64 << 20

// Options configure an MCP server.
type Options struct {
	// Version is reported to clients.
	Version string
	// RecordTypes and NodeKinds are the vocabularies the API behind the
	// server accepts (both are configurable); the input schemas list them
	// as enums. Empty: not known, and the arguments are free strings.
	RecordTypes, NodeKinds []string
}

// NewServer returns an MCP server whose tools and resources send their
// requests through d.
func NewServer(d Doer, o Options) *sdk.Server {
	version := o.Version
	if version == "" {
		version = "dev"
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "kura", Title: "Kura memory", Version: version}, &sdk.ServerOptions{
		Instructions: "Kura is a durable, verifiable memory: records (raw entries) sealed into ledgers, sessions " +
			"whose turns are context and output ledgers, a memory graph of nodes per scope with provenance, " +
			"admission-checked context bundles and knowledge bases. Tool errors carry Kura's error body " +
			`{"error":{"code","message","details"}}`,
	})
	enums := enumValues(o)
	for i := range tools {
		sp := &tools[i]
		s.AddTool(sp.tool(enums), func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return callTool(ctx, d, sp, req)
		})
	}
	addResources(s, d)
	return s
}

func callTool(ctx context.Context, d Doer, sp *spec, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	var raw json.RawMessage
	if req.Params != nil {
		raw = req.Params.Arguments
	}
	c, err := decodeArgs(sp, raw)
	if err != nil {
		return errorResult(err), nil
	}
	a, err := send(ctx, d, c, extraHeader(req.Extra))
	if err != nil {
		return errorResult(err), nil
	}
	if sp.text {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(a.body)}}}, nil
	}
	body := bytes.TrimSpace(a.body)
	if !json.Valid(body) || len(body) == 0 || body[0] != '{' {
		return errorResult(kura.Errorf(kura.EUnavailable, "kurad answered %s %s with a body that is not a JSON object", c.method, c.target)), nil
	}
	return &sdk.CallToolResult{
		Content:           []sdk.Content{&sdk.TextContent{Text: string(body)}},
		StructuredContent: json.RawMessage(body),
	}, nil
}

// errorResult is a tool error carrying Kura's error body, as the HTTP API
// would have written it: the same code, message and details.
func errorResult(err error) *sdk.CallToolResult {
	b, _ := json.Marshal(map[string]any{"error": asKuraError(err)})
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}}
}

func asKuraError(err error) *kura.Error {
	if ke, ok := err.(*kura.Error); ok {
		return ke
	}
	return &kura.Error{Code: kura.EUnavailable, Message: err.Error()}
}

func extraHeader(e *sdk.RequestExtra) http.Header {
	if e == nil {
		return nil
	}
	return e.Header
}

// answer is a 2xx answer of the API.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// send makes the API request of c. outer is the header of the MCP request
// that carried the call (nil over stdio): its Authorization goes with the
// inner request, so the caller is the same principal it would be over HTTP.
// A non-2xx answer is returned as the *kura.Error the API wrote.
func send(ctx context.Context, d Doer, c *call, outer http.Header) (*answer, error) {
	var body io.Reader
	if c.body != nil {
		body = bytes.NewReader(c.body)
	}
	u, err := url.Parse(c.target)
	if err != nil {
		return nil, kura.Invalid("", "the arguments make a bad request path: %v", err)
	}
	req, err := http.NewRequestWithContext(ctx, c.method, "", body)
	if err != nil {
		return nil, kura.Invalid("", "the arguments make a bad request: %v", err)
	}
	req.URL = u
	req.Host = ""
	for k, v := range c.header {
		req.Header[k] = v
	}
	if a := outer.Get("Authorization"); a != "" {
		req.Header.Set("Authorization", a)
	}
	resp, err := d.Do(req)
	if err != nil {
		return nil, kura.Errorf(kura.EUnavailable, "cannot reach kurad: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return nil, kura.Errorf(kura.EUnavailable, "read kurad's answer: %v", err)
	}
	if len(b) > maxAnswer {
		return nil, kura.Errorf(kura.ETooLarge, "kurad's answer is larger than %d bytes", maxAnswer)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, apiError(resp, b)
	}
	return &answer{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// apiError reads the API's error body; anything else (a proxy's page) is
// reported by its status only.
func apiError(resp *http.Response, b []byte) error {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "application/json" {
		var eb struct {
			Error *kura.Error `json:"error"`
		}
		if json.Unmarshal(b, &eb) == nil && eb.Error != nil && eb.Error.Code != "" {
			return eb.Error
		}
	}
	return kura.Errorf(kura.EUnavailable, "kurad answered %s without an error body", resp.Status)
}

// resourceError maps an API error to the JSON-RPC error of a resource
// read, with the API's error body as its data.
func resourceError(uri string, err error) error {
	ke := asKuraError(err)
	if ke.Code == kura.ENotFound {
		return sdk.ResourceNotFoundError(uri)
	}
	code := int64(jsonrpc.CodeInternalError)
	if ke.Code == kura.EInvalid {
		code = jsonrpc.CodeInvalidParams
	}
	data, _ := json.Marshal(map[string]any{"error": ke})
	return &jsonrpc.Error{Code: code, Message: fmt.Sprintf("%s: %s", ke.Code, ke.Message), Data: data}
}
