package bus

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/nats-io/nats-server/v2/server"
)

// DefaultClusterName is the NATS cluster name when none is configured.
const DefaultClusterName = "kura"

// Cluster joins the embedded server to other kurads' through NATS's own
// routes, so a subscriber on any of them hears every event. The zero value
// (no Addr) runs the server alone.
type Cluster struct {
	// Addr is the host:port the server listens on for routes from its
	// peers; port 0 picks a free one. Empty: no cluster.
	Addr string
	// Name is the cluster's name (DefaultClusterName when empty); every
	// peer must use the same.
	Name string
	// Routes are the peers this server dials (nats-route://host:port,
	// without credentials). Listing the server itself is harmless:
	// nats-server drops a route to itself.
	Routes []*url.URL
	// User and Password authenticate routes both ways: the server refuses
	// an incoming route without them, and presents them on every route it
	// dials, including those it learns from its peers. Every peer shares
	// them. Required when Addr is not loopback or a route leaves it.
	User, Password string
}

// Enabled reports whether the server joins a cluster.
func (c Cluster) Enabled() bool { return c.Addr != "" }

// ParseRoutes reads a comma-separated list of nats-route://host:port URLs.
// Credentials in a URL are refused: the cluster shares one user and
// password (Cluster.User, Cluster.Password), which nats-server also uses
// for the routes it learns from its peers, and a password in a URL would
// show in process lists and logs.
func ParseRoutes(s string) ([]*url.URL, error) {
	var out []*url.URL
	for _, r := range strings.Split(s, ",") {
		r = strings.TrimSpace(r)
		if r == "" {
			continue
		}
		u, err := url.Parse(r)
		if err != nil {
			return nil, fmt.Errorf("%q is not a URL (want nats-route://host:port)", r)
		}
		if u.Scheme != "nats-route" {
			return nil, fmt.Errorf("%q: scheme %q, want nats-route://host:port", u.Redacted(), u.Scheme)
		}
		if u.User != nil {
			return nil, fmt.Errorf("%q: give the route credentials with the cluster user and password file, not in the URL", u.Redacted())
		}
		if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
			return nil, fmt.Errorf("%q: want nats-route://host:port and nothing more", r)
		}
		host, port, err := net.SplitHostPort(u.Host)
		if err != nil || host == "" {
			return nil, fmt.Errorf("%q: want nats-route://host:port", r)
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			return nil, fmt.Errorf("%q: port %q is not 1..65535", r, port)
		}
		out = append(out, &url.URL{Scheme: u.Scheme, Host: u.Host})
	}
	return out, nil
}

// CheckCluster reports why c cannot run: a malformed address, a listener
// or a route beyond loopback without credentials, routes with nowhere to
// listen. It is the rule Open applies; the daemon's config validation
// calls it too, so kurad refuses before it opens anything.
func CheckCluster(c Cluster) error {
	if !c.Enabled() {
		if len(c.Routes) > 0 {
			return fmt.Errorf("nats-cluster-addr: nats-routes are set but no cluster address; give --nats-cluster-addr (the peers' routes come back to it)")
		}
		return nil
	}
	host, _, err := splitAddr(c.Addr)
	if err != nil {
		return fmt.Errorf("nats-cluster-addr: %w", err)
	}
	if host == "" {
		return fmt.Errorf("nats-cluster-addr: %q: give a host (127.0.0.1 for loopback only)", c.Addr)
	}
	if c.Name != "" && !ValidServerName(c.Name) {
		return fmt.Errorf("nats-cluster-name: %q: letters, digits, '.', '_' and '-' only, at most 64", c.Name)
	}
	if (c.User == "") != (c.Password == "") {
		return fmt.Errorf("nats-cluster-user: give both nats-cluster-user and nats-cluster-password-file, or neither")
	}
	if c.User != "" && !natsUserRE.MatchString(c.User) {
		return fmt.Errorf("nats-cluster-user: %q is not a user name (^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$)", c.User)
	}
	if c.Password != "" && len(c.Password) < minClusterPassword {
		return fmt.Errorf("nats-cluster-password-file: the password has %d characters, want at least %d (openssl rand -hex 24)", len(c.Password), minClusterPassword)
	}
	if c.User != "" {
		return nil
	}
	// Without credentials any process that reaches the route port joins
	// the cluster and hears every project's doorbell, with no NATS user's
	// permissions in its way.
	if !loopbackHost(host) {
		return fmt.Errorf("nats-cluster-addr: %q: %s is not a loopback address and no cluster credentials are configured; kurad requires route authentication beyond loopback (--nats-cluster-user and --nats-cluster-password-file)", c.Addr, host)
	}
	for _, r := range c.Routes {
		if !loopbackHost(r.Hostname()) {
			return fmt.Errorf("nats-routes: %s: %s is not a loopback address and no cluster credentials are configured; peers beyond loopback require route authentication (--nats-cluster-user and --nats-cluster-password-file)", r.Redacted(), r.Hostname())
		}
	}
	return nil
}

// minClusterPassword is the shortest route password accepted: a route port
// faces the network and nats-server does not slow down guessing.
const minClusterPassword = 16

// ValidServerName reports whether s may name a NATS server or cluster:
// nats-server refuses spaces in either, and the name shows in logs.
func ValidServerName(s string) bool {
	if len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return s != ""
}

// splitAddr splits host:port and checks the port (0 allowed).
func splitAddr(addr string) (host string, port int, err error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("%q is not host:port", addr)
	}
	port, err = strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("%q: port %q is not 0..65535", addr, portStr)
	}
	return host, port, nil
}

// clusterOptions sets the server's cluster listener and routes.
func (b *Bus) clusterOptions(opts *server.Options) error {
	c := b.cfg.Cluster
	if err := CheckCluster(c); err != nil {
		return err
	}
	if !c.Enabled() {
		return nil
	}
	host, port, _ := splitAddr(c.Addr)
	if port == 0 {
		port = server.RANDOM_PORT
	}
	name := c.Name
	if name == "" {
		name = DefaultClusterName
	}
	opts.Cluster = server.ClusterOpts{
		Name:     name,
		Host:     host,
		Port:     port,
		Username: c.User,
		Password: c.Password,
		// Clients connect to their own kurad: the peers' client addresses
		// (often loopback) mean nothing on another host.
		NoAdvertise: true,
	}
	for _, r := range c.Routes {
		u := *r
		if c.User != "" {
			u.User = url.UserPassword(c.User, c.Password)
		}
		opts.Routes = append(opts.Routes, &u)
	}
	return nil
}

// serverName is the configured name, else "kurad" alone, else one unique
// among the peers (nats-server drops a route between two servers of the
// same name): the host name and the route port, or a random suffix while
// the port is left to the OS.
func (b *Bus) serverName() (string, error) {
	if b.cfg.ServerName != "" {
		if !ValidServerName(b.cfg.ServerName) {
			return "", fmt.Errorf("nats-server-name: %q: letters, digits, '.', '_' and '-' only, at most 64", b.cfg.ServerName)
		}
		return b.cfg.ServerName, nil
	}
	if !b.cfg.Cluster.Enabled() {
		return "kurad", nil
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	host = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return '_'
	}, host)
	_, port, _ := splitAddr(b.cfg.Cluster.Addr)
	if port != 0 {
		return "kurad-" + host + "-" + strconv.Itoa(port), nil
	}
	var r [4]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", fmt.Errorf("nats server name: %w", err)
	}
	return "kurad-" + host + "-" + hex.EncodeToString(r[:]), nil
}

// ClusterAddr is the host:port the server listens on for routes; "" when
// it joins no cluster.
func (b *Bus) ClusterAddr() string {
	if b.srv == nil {
		return ""
	}
	a := b.srv.ClusterAddr()
	if a == nil {
		return ""
	}
	return net.JoinHostPort(a.IP.String(), strconv.Itoa(a.Port))
}

// NumRoutes is the number of peer servers connected by at least one route
// (nats-server pools several connections per peer; they count once).
func (b *Bus) NumRoutes() int {
	if b.srv == nil || !b.cfg.Cluster.Enabled() {
		return 0
	}
	rz, err := b.srv.Routez(nil)
	if err != nil {
		return 0
	}
	peers := map[string]struct{}{}
	for _, r := range rz.Routes {
		peers[r.RemoteID] = struct{}{}
	}
	return len(peers)
}

// ClusterInfo is what /v1/info says about the cluster; nil when the server
// joins none.
func (b *Bus) ClusterInfo() *kura.NATSClusterInfo {
	if b.srv == nil || !b.cfg.Cluster.Enabled() {
		return nil
	}
	return &kura.NATSClusterInfo{
		Name:       b.srv.ClusterName(),
		ServerName: b.srv.Name(),
		Addr:       b.ClusterAddr(),
		Routes:     b.NumRoutes(),
	}
}
