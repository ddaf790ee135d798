package mcp

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// resource is a read-only resource template and the API route it reads.
type resource struct {
	template, name, title, description string
	// route builds the API path from the URI's segments after kura://.
	route func(seg []string) (string, bool)
}

var resources = []resource{
	{
		template: "kura://records/{id}", name: "record", title: "Record",
		description: "A record (raw entry) by id, as GET /v1/records/{id} returns it.",
		route: func(seg []string) (string, bool) {
			if len(seg) != 2 || seg[0] != "records" {
				return "", false
			}
			return "/v1/records/" + url.PathEscape(seg[1]), true
		},
	},
	{
		template: "kura://ledgers/{id}", name: "ledger", title: "Ledger",
		description: "A ledger by id with its record ids, as GET /v1/ledgers/{id} returns it.",
		route: func(seg []string) (string, bool) {
			if len(seg) != 2 || seg[0] != "ledgers" {
				return "", false
			}
			return "/v1/ledgers/" + url.PathEscape(seg[1]), true
		},
	},
	{
		// {+ref}, RFC 6570's reserved expansion: a ref's colon is part of
		// the URI as written (kura://scopes/s/nodes/fact:x); with {ref} the
		// template would match only the escaped fact%3Ax, and a client
		// reading the URI it was told about would be told it does not
		// exist. Both spellings name the same node.
		template: "kura://scopes/{scope}/nodes/{+ref}", name: "memory-node", title: "Memory node",
		description: "A memory node of a scope by ref, kind:id (kura://scopes/hashi/nodes/fact:x; fact%3Ax works too), as GET /v1/scopes/{scope}/memory/nodes/{ref} returns it.",
		route: func(seg []string) (string, bool) {
			if len(seg) != 4 || seg[0] != "scopes" || seg[2] != "nodes" {
				return "", false
			}
			return "/v1/scopes/" + url.PathEscape(seg[1]) + "/memory/nodes/" + url.PathEscape(seg[3]), true
		},
	},
}

func addResources(s *sdk.Server, d Doer) {
	for i := range resources {
		rs := &resources[i]
		s.AddResourceTemplate(&sdk.ResourceTemplate{
			URITemplate: rs.template, Name: rs.name, Title: rs.title, Description: rs.description,
			MIMEType: "application/json",
		}, func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return readResource(ctx, d, rs, req)
		})
	}
}

func readResource(ctx context.Context, d Doer, rs *resource, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	path, ok := resourcePath(rs, uri)
	if !ok {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	a, err := send(ctx, d, &call{method: http.MethodGet, target: path}, extraHeader(req.Extra))
	if err != nil {
		return nil, resourceError(uri, err)
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{
		URI: uri, MIMEType: "application/json", Text: strings.TrimSpace(string(a.body)),
	}}}, nil
}

// resourcePath maps a kura:// URI to its API path; each segment is
// unescaped once, so that kura://scopes/s/nodes/belief%3Ab1 and
// .../belief:b1 name the same node.
func resourcePath(rs *resource, uri string) (string, bool) {
	rest, ok := strings.CutPrefix(uri, "kura://")
	if !ok || strings.ContainsAny(rest, "?#") {
		return "", false
	}
	seg := strings.Split(rest, "/")
	for i, s := range seg {
		u, err := url.PathUnescape(s)
		if err != nil || u == "" {
			return "", false
		}
		seg[i] = u
	}
	return rs.route(seg)
}
