package daemon

import (
	"net"
	"net/http"
	"sync"
)

// freshConns tracks the HTTP connections that have not sent a byte of a
// request yet. http.Server.Shutdown treats such a connection as busy until
// it is five seconds old, and browsers open them ahead of need (the
// console's Chromium keeps one per origin), so a stop would wait five
// seconds for a request that never comes. At shutdown they are closed at
// once: no request was begun on them, so none is lost.
type freshConns struct {
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// track is the server's ConnState hook.
func (f *freshConns) track(c net.Conn, s http.ConnState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s == http.StateNew {
		if f.conns == nil {
			f.conns = map[net.Conn]struct{}{}
		}
		f.conns[c] = struct{}{}
		return
	}
	delete(f.conns, c)
}

// closeAll closes every connection still waiting for its first request.
func (f *freshConns) closeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.conns {
		c.Close()
	}
	clear(f.conns)
}
