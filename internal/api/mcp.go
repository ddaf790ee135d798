package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/kura-memory/kura/internal/mcp"
)

// registerMCPRoutes serves Kura's MCP tools over Streamable HTTP at /mcp,
// behind the same middleware as every route. Each tool call is sent
// in-process to s.Handler() (looked up per call, so whatever wraps the
// router wraps tool calls too) with the MCP request's Authorization: the
// caller, the limits and the errors of a tool are those of the HTTP API.
// The handler is stateless, so only POST is served; GET and DELETE (the
// session stream and session end of stateful servers) answer 405.
func (s *Server) registerMCPRoutes(r chi.Router) {
	h := mcp.NewHTTPHandler(mcp.Local(s.Handler), mcp.HTTPOptions{
		Version: s.cfg.Version,
		// The MCP envelope around an API body: the body limit itself is
		// the API's to enforce, with its too_large answer.
		MaxBodyBytes: 2*s.cfg.MaxBodyBytes + 64<<10,
	})
	r.Method(http.MethodPost, "/mcp", h)
}
