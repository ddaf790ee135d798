package api

import (
	"context"
	"net/http"
	"sync"

	"github.com/kura-memory/kura/internal/kura"
)

// MCPOptions is what the MCP server is built with: the API's own handler,
// which every tool call goes through in process, and the facts tools
// describe themselves with.
type MCPOptions struct {
	API          http.Handler
	Version      string
	RecordTypes  []string
	NodeKinds    []string
	MaxBodyBytes int64
}

// mcpHandler serves Kura's MCP tools over Streamable HTTP at /mcp,
// behind the same middleware as every route. Each tool call is sent
// in-process to s.Handler() (looked up per call, so whatever wraps the
// router wraps tool calls too) with the MCP request's Authorization: the
// caller, the limits and the errors of a tool are those of the HTTP API.
// The MCP server itself comes from Config.MCP (the daemon wires package
// mcp in: adapters do not import each other).
//
// The MCP server (its tools' JSON schemas, built by reflection) is made on
// the first call: a kurad nobody speaks MCP to does not carry it, which on
// a Pi is a megabyte or two of idle memory.
func (s *Server) mcpHandler() http.HandlerFunc {
	if s.cfg.MCP == nil {
		return func(w http.ResponseWriter, r *http.Request) {
			s.writeError(w, r, kura.Errorf(kura.ENotFound, "this kurad serves no MCP"))
		}
	}
	// A tool call's request is marked as one: the MCP request it comes
	// from holds the body budget for its whole body already.
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.Handler().ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), innerKey{}, true)))
	})
	h := sync.OnceValue(func() http.Handler {
		return s.cfg.MCP(MCPOptions{
			API:          inner,
			Version:      s.cfg.Version,
			RecordTypes:  s.cfg.RecordTypes,
			NodeKinds:    s.store.NodeKinds(),
			MaxBodyBytes: mcpBodyLimit(s.cfg.MaxBodyBytes),
		})
	})
	return func(w http.ResponseWriter, r *http.Request) { h().ServeHTTP(w, r) }
}

// mcpBodyLimit bounds an MCP request: the MCP envelope around an API body.
// The body limit itself is the API's to enforce, with its too_large answer.
func mcpBodyLimit(apiLimit int64) int64 { return 2*apiLimit + 64<<10 }
