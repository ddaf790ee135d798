package bus

import (
	"context"
	"crypto/subtle"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/nats-io/nats-server/v2/server"
)

// Without a users file kurad decides itself who may connect to its NATS
// server (clientAuth): kurad's own in-process publisher always; any local
// process while kurad has no tokens (the local user is trusted with
// everything, as over HTTP), but never as a publisher on the doorbell's
// subjects; and, once kurad has tokens, only a client presenting one of
// them, which then hears what that token may read from the event feed.

// Grant is what a Kura token may hear on NATS: the events the feed
// (GET /v1/events) shows it. Projects and Scopes nil mean all (the tokens
// file's *).
type Grant struct {
	Identity string // for logs and the server's connection list
	Projects []string
	Scopes   []string
}

// Equal reports whether g and h grant the same subjects.
func (g Grant) Equal(h Grant) bool {
	return g.Identity == h.Identity && sameNames(g.Projects, h.Projects) && sameNames(g.Scopes, h.Scopes)
}

func sameNames(a, b []string) bool { return (a == nil) == (b == nil) && slices.Equal(a, b) }

// Tokens looks up a Kura bearer token a NATS client presents. The daemon
// hands the bus kurad's tokens table, so the HTTP API and NATS accept the
// same tokens, and a reload (SIGHUP) applies to both: Changed is closed at
// the next reload.
type Tokens interface {
	Grant(token string) (Grant, bool)
	Changed() <-chan struct{}
}

// The event types whose events carry a scope, not a project, in their
// subject's project place (the feed's rule in store.ListEvents): memory.*,
// context.* and kb.changed.
var scopedEvents = []string{"evt.memory.>", "evt.context.>", "evt.kb.changed"}

// projectEvents are the subjects under a project that are not scoped:
// every event type's first word but those above, and the dispatch
// commands. A new event type must be added here or to scopedEvents
// (TestGrant_CoversEveryEventType).
var projectEvents = []string{"evt.record.>", "evt.ledger.>", "evt.session.>", "evt.turn.>", "evt.log.>", "cmd.>"}

// Permissions are what the server enforces for a client holding g: it may
// subscribe (plainly or in a queue group) to the events the feed would
// show the token (its projects' events, its scopes' memory, context and
// knowledge-base events) and to the log's checkpoint notices, which every
// token may read over HTTP; it may publish nothing, as users of the users
// file may not.
func (g Grant) Permissions() *server.Permissions {
	root := SubjectRoot + "."
	var allow, deny []string
	switch {
	case g.Projects == nil && g.Scopes == nil:
		allow = []string{root + ">"}
	case g.Projects == nil:
		// Every project's tree but the scoped events, which NATS cannot
		// deny for all but a few names: list the others instead.
		for _, s := range projectEvents {
			allow = append(allow, root+"*."+s)
		}
	default:
		for _, p := range g.Projects {
			allow = append(allow, root+p+".>")
			if g.Scopes != nil && !slices.Contains(g.Scopes, p) {
				// The name is a project of the token but not a scope: its
				// tree's scoped events are another scope's.
				for _, s := range scopedEvents {
					deny = append(deny, root+p+"."+s)
				}
			}
		}
	}
	switch {
	case g.Scopes == nil && g.Projects != nil:
		for _, s := range scopedEvents {
			allow = append(allow, root+"*."+s)
		}
	case g.Scopes != nil:
		for _, sc := range g.Scopes {
			if g.Projects == nil || !slices.Contains(g.Projects, sc) {
				for _, s := range scopedEvents {
					allow = append(allow, root+sc+"."+s)
				}
			}
		}
	}
	if g.Projects != nil || g.Scopes != nil {
		allow = append(allow, kura.CheckpointSubject)
	}
	return &server.Permissions{
		Publish:   &server.SubjectPermission{Deny: []string{">"}},
		Subscribe: &server.SubjectPermission{Allow: allow, Deny: deny},
	}
}

// localPermissions are the local user's without tokens: everything but
// publishing on the doorbell's subjects, which only kurad does. Other
// subjects stay open to local tools (kurabench's floor measurement
// publishes on its own).
func localPermissions() *server.Permissions {
	return &server.Permissions{Publish: &server.SubjectPermission{Deny: []string{SubjectRoot + ".>"}}}
}

// clientAuth authenticates every client connection when no users file is
// given (nats-server's CustomClientAuthentication).
type clientAuth struct {
	internalPass string
	tokens       Tokens // nil: every local client is the local user
	log          *slog.Logger
	srv          *server.Server // set once the server runs; for disconnects

	mu    sync.Mutex
	conns map[uint64]tokenConn // connections authenticated by a token
}

type tokenConn struct {
	token string
	grant Grant
	at    time.Time // when it was authenticated
}

// Check decides one connection. It runs before the client may do
// anything, so what it registers holds from the first SUB or PUB on.
func (a *clientAuth) Check(c server.ClientAuthentication) bool {
	o := c.GetOpts()
	if inProcess(c.RemoteAddress()) {
		// Only kurad's publisher connects in-process.
		ok := o.Username == internalUser && subtle.ConstantTimeCompare([]byte(o.Password), []byte(a.internalPass)) == 1
		if ok {
			c.RegisterUser(&server.User{Username: internalUser})
		}
		return ok
	}
	if a.tokens == nil {
		c.RegisterUser(&server.User{Username: "local", Permissions: localPermissions()})
		return true
	}
	for {
		changed := a.tokens.Changed()
		g, ok := a.tokens.Grant(o.Token)
		if !ok {
			a.log.Warn("nats client refused: no Kura token, or one kurad does not hold", "remote", addrString(c.RemoteAddress()))
			return false
		}
		a.mu.Lock()
		a.conns[c.GetID()] = tokenConn{token: o.Token, grant: g, at: time.Now()}
		a.mu.Unlock()
		select {
		case <-changed:
			// A reload came between the lookup and the tracking, and its
			// recheck may have missed this connection: look again.
			continue
		default:
		}
		c.RegisterUser(&server.User{Username: g.Identity, Permissions: g.Permissions()})
		return true
	}
}

// inProcess reports whether addr is the far end of an in-process
// connection (a net.Pipe): no network client can present one.
func inProcess(addr net.Addr) bool { return addr != nil && addr.Network() == "pipe" }

func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}

// watch disconnects, at every reload of the tokens, each connection whose
// token is gone or now grants something else, as the HTTP API ends the
// event streams of such tokens: a revoked token hears nothing more, and a
// client whose rights changed reconnects under the new ones. It also
// forgets, now and then, connections that closed by themselves.
func (a *clientAuth) watch(ctx context.Context) {
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	changed := a.tokens.Changed()
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
			changed = a.tokens.Changed()
			a.recheck()
		case <-tick.C:
			a.prune()
		}
	}
}

func (a *clientAuth) recheck() {
	stale := map[uint64]string{}
	a.mu.Lock()
	for id, tc := range a.conns {
		if g, ok := a.tokens.Grant(tc.token); !ok || !g.Equal(tc.grant) {
			stale[id] = tc.grant.Identity
			delete(a.conns, id)
		}
	}
	a.mu.Unlock()
	// Outside the lock: closing a connection takes the server's locks,
	// which a connection being authenticated may hold while it waits for
	// ours.
	for id, who := range stale {
		if a.srv.DisconnectClientByID(id) == nil {
			a.log.Info("nats client disconnected: its token was revoked or its rights changed", "identity", who, "cid", id)
		}
	}
}

// prune drops the connections the server no longer has. One
// authenticated while the server's list was taken may be missing from it
// and is kept.
func (a *clientAuth) prune() {
	a.mu.Lock()
	n := len(a.conns)
	a.mu.Unlock()
	if n == 0 {
		return
	}
	listed := time.Now()
	cz, err := a.srv.Connz(&server.ConnzOptions{Limit: n + a.srv.NumClients()})
	if err != nil {
		return
	}
	open := make(map[uint64]bool, len(cz.Conns))
	for _, c := range cz.Conns {
		open[c.Cid] = true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for id, tc := range a.conns {
		if !open[id] && tc.at.Before(listed) {
			delete(a.conns, id)
		}
	}
}
