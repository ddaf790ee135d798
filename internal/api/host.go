package api

import (
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/kura-memory/kura/internal/kura"
)

// checkHost guards the tokenless mode against DNS rebinding. Without
// tokens every caller is the local admin, and a loopback listener alone
// does not make a caller local: a web page on evil.example whose name the
// attacker then points at 127.0.0.1 has the local user's browser send
// requests to kurad that carry "Host: evil.example". Such a request is
// refused on every route (health checks and /mcp included: one rule, no
// list of exceptions to keep right). With tokens the Host is not checked:
// a rebinding page holds no token, and a reverse proxy may pass any name.
func (s *Server) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Tokens == nil && !loopbackHost(r.Host) {
			s.writeError(w, r, kura.Errorf(kura.EDenied, "without tokens kurad answers only requests addressed to a loopback name (127.0.0.1, [::1] or localhost), not Host %q", abbrevHost(r.Host)))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// loopbackHost reports whether a Host header (host or host:port) names
// only this machine: localhost in any case, or a loopback IP literal
// (127.0.0.0/8, ::1). Names that merely start or end like one
// (localhost.evil.example, 127.0.0.1.nip.io) and an empty Host are not.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	} else if strings.HasPrefix(hostport, "[") && strings.HasSuffix(hostport, "]") {
		host = hostport[1 : len(hostport)-1]
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Zone() == "" && ip.Unmap().IsLoopback()
}

// abbrevHost keeps a hostile Host header from filling the error body.
func abbrevHost(h string) string {
	if len(h) > 100 {
		return h[:100] + "…"
	}
	return h
}
