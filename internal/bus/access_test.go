package bus

import (
	"slices"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/nats-io/nats-server/v2/server"
)

// hears reports whether a client with p receives a message on the literal
// subject: some allow entry matches it and no deny entry does (how
// nats-server filters a wildcard subscription at delivery).
func hears(p *server.Permissions, subject string) bool {
	if p.Subscribe == nil {
		return true
	}
	allowed := p.Subscribe.Allow == nil
	for _, a := range p.Subscribe.Allow {
		allowed = allowed || server.SubjectMatchesFilter(subject, a)
	}
	for _, d := range p.Subscribe.Deny {
		allowed = allowed && !server.SubjectMatchesFilter(subject, d)
	}
	return allowed
}

// feedShows is the feed's rule (store.ListEvents with a restricted
// token): memory, context and knowledge-base events by scope, the others
// by project.
func feedShows(g Grant, typ, project string) bool {
	if strings.HasPrefix(typ, "memory.") || strings.HasPrefix(typ, "context.") || typ == kura.EventKBChanged {
		return g.Scopes == nil || slices.Contains(g.Scopes, project)
	}
	return g.Projects == nil || slices.Contains(g.Projects, project)
}

func subjectOf(typ, project string) string {
	if typ == kura.EventDispatch {
		return kura.CommandSubject(project, "builder", typ)
	}
	return kura.EventSubject(project, typ)
}

// TestGrant_Permissions checks that a token hears on NATS exactly the
// events the feed shows it, for every event type, in the projects and
// scopes it holds and others, and that it may publish nothing.
func TestGrant_Permissions(t *testing.T) {
	t.Parallel()
	grants := []Grant{
		{Identity: "user:all"},
		{Identity: "agent:a", Projects: []string{"alpha"}, Scopes: []string{"alpha"}},
		{Identity: "agent:b", Projects: []string{"alpha"}, Scopes: []string{"mem"}},
		{Identity: "agent:c", Projects: []string{"alpha", "beta"}},
		{Identity: "agent:d", Scopes: []string{"mem", "alpha"}},
		{Identity: "agent:e", Projects: []string{"alpha"}, Scopes: []string{"beta", "alpha"}},
	}
	names := []string{"alpha", "beta", "mem", "other", kura.LogProject}
	for _, g := range grants {
		p := g.Permissions()
		for _, typ := range kura.EventTypes {
			for _, n := range names {
				subj := subjectOf(typ, n)
				want := feedShows(g, typ, n)
				if got := hears(p, subj); got != want {
					t.Errorf("%s (projects %v, scopes %v) on %s: got hears %v, want %v", g.Identity, g.Projects, g.Scopes, subj, got, want)
				}
			}
		}
		if !hears(p, kura.CheckpointSubject) {
			t.Errorf("%s: does not hear the checkpoint notices every token may read", g.Identity)
		}
		if p.Publish == nil || !slices.Equal(p.Publish.Deny, []string{">"}) || p.Publish.Allow != nil {
			t.Errorf("%s: publish permissions %+v, want every subject denied", g.Identity, p.Publish)
		}
	}
}

// TestGrant_CoversEveryEventType fails for an event type that is neither
// scoped nor a project's: a token limited in projects or scopes would not
// hear it at all.
func TestGrant_CoversEveryEventType(t *testing.T) {
	t.Parallel()
	for _, typ := range kura.EventTypes {
		subj := subjectOf(typ, "p")
		var in []string
		for _, s := range append(slices.Clone(scopedEvents), projectEvents...) {
			if server.SubjectMatchesFilter(subj, SubjectRoot+".p."+s) {
				in = append(in, s)
			}
		}
		if len(in) != 1 {
			t.Errorf("event type %s (%s) falls under %v, want exactly one of scopedEvents and projectEvents", typ, subj, in)
		}
	}
}

func TestLocalPermissions(t *testing.T) {
	t.Parallel()
	p := localPermissions()
	if p.Subscribe != nil {
		t.Errorf("got subscribe permissions %+v, want none (the local user hears everything)", p.Subscribe)
	}
	if p.Publish == nil || !slices.Equal(p.Publish.Deny, []string{"oclaw.v1.>"}) || p.Publish.Allow != nil {
		t.Errorf("got publish permissions %+v, want all but oclaw.v1.>", p.Publish)
	}
}
