// Package auth says who is calling kurad and what that caller may do: the
// principal behind a bearer token (identity, role, scopes, projects), carried
// on the request context from the authentication middleware to every handler
// and to the MCP tools.
package auth

import (
	"context"
	"slices"
)

// Role orders what a caller may do: a reader reads, a writer also writes
// under its own identity, an admin may do everything.
type Role int

const (
	RoleReader Role = iota + 1
	RoleWriter
	RoleAdmin
)

func (r Role) String() string {
	switch r {
	case RoleReader:
		return "reader"
	case RoleWriter:
		return "writer"
	case RoleAdmin:
		return "admin"
	}
	return "none"
}

// ParseRole reads a role name as written in the tokens file.
func ParseRole(s string) (Role, bool) {
	switch s {
	case "reader":
		return RoleReader, true
	case "writer":
		return RoleWriter, true
	case "admin":
		return RoleAdmin, true
	}
	return 0, false
}

// All is the wildcard in a scope or project list.
const All = "*"

// Principal is an authenticated caller. Scopes and Projects hold names or
// the single wildcard All.
type Principal struct {
	Identity string // author id form: agent:bmo, user:oles
	Role     Role
	Scopes   []string
	Projects []string
	// Anonymous is set for the tokenless loopback mode's user:local.
	Anonymous bool
}

// Local is the caller of a kurad configured without tokens: the single
// user of a loopback-only daemon, with every right.
var Local = Principal{Identity: "user:local", Role: RoleAdmin, Scopes: []string{All}, Projects: []string{All}, Anonymous: true}

// AllowsScope reports whether the principal may touch memory, context and
// knowledge bases in scope.
func (p Principal) AllowsScope(scope string) bool { return allows(p.Scopes, scope) }

// AllowsProject reports whether the principal may touch sessions, turns and
// events of project.
func (p Principal) AllowsProject(project string) bool { return allows(p.Projects, project) }

// AllScopes reports whether the principal's scopes are unrestricted.
func (p Principal) AllScopes() bool { return slices.Contains(p.Scopes, All) }

// AllProjects reports whether the principal's projects are unrestricted.
func (p Principal) AllProjects() bool { return slices.Contains(p.Projects, All) }

// Equal reports whether p and q are the same caller with the same rights.
func (p Principal) Equal(q Principal) bool {
	return p.Identity == q.Identity && p.Role == q.Role && p.Anonymous == q.Anonymous &&
		slices.Equal(p.Scopes, q.Scopes) && slices.Equal(p.Projects, q.Projects)
}

// Can reports whether the principal holds at least role r.
func (p Principal) Can(r Role) bool { return p.Role >= r }

func allows(list []string, name string) bool {
	for _, s := range list {
		if s == All || s == name {
			return true
		}
	}
	return false
}

type ctxKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, ctxKey{}, p)
}

// FromContext returns the principal on ctx, or Local when none was set (a
// kurad without tokens, and in-process callers such as kurad's own jobs).
func FromContext(ctx context.Context) Principal {
	if p, ok := ctx.Value(ctxKey{}).(Principal); ok {
		return p
	}
	return Local
}
