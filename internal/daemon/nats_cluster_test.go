package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/daemon"
	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/kura-memory/kura/internal/testwait"
	"github.com/nats-io/nats.go"
)

// writePasswordFile writes a route password file.
func writePasswordFile(tb testing.TB, password string) string {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), "nats-cluster-password")
	if err := os.WriteFile(p, []byte(password+"\n"), 0o600); err != nil {
		tb.Fatal(err)
	}
	return p
}

// clusterNode starts a kurad whose NATS server listens for routes on a
// loopback port the OS picks and dials routes (another node's
// ClusterAddr); configure adds to it.
func clusterNode(t *testing.T, routes []string, configure func(*daemon.Config)) *kuradtest.Daemon {
	t.Helper()
	return kuradtest.StartMain(t, kuradtest.Options{Configure: func(c *daemon.Config) {
		c.NATSClusterAddr = "127.0.0.1:0"
		c.NATSRoutes = routes
		c.WriterMaxBatch = 8
		c.ReadPool = 2
		if configure != nil {
			configure(c)
		}
	}})
}

func routeTo(d *kuradtest.Daemon) string { return "nats-route://" + d.Bus().ClusterAddr() }

// waitRoutes waits until every node is connected to want peers.
func waitRoutes(t *testing.T, want int, nodes ...*kuradtest.Daemon) {
	t.Helper()
	testwait.For(t, testwait.Default, "the NATS routes between the kurads", func() bool {
		for _, n := range nodes {
			if n.Bus().NumRoutes() != want {
				return false
			}
		}
		return true
	})
}

// waitInterest waits until subject has at least n subscriptions on d's
// NATS server, counting those its peers forwarded over routes: only then
// does an event d publishes reach the peers' subscribers.
func waitInterest(t *testing.T, d *kuradtest.Daemon, subject string, n int) {
	t.Helper()
	testwait.For(t, testwait.Default, "interest in "+subject+" on "+d.NATSAddr(), func() bool {
		return d.Bus().Server().GlobalAccount().Interest(subject) >= n
	})
}

// postRecord writes a record in project over HTTP and returns its id.
func postRecord(t *testing.T, d *kuradtest.Daemon, project, token string) string {
	t.Helper()
	body := `{"type":"agent.thought","author_id":"agent:bmo","content":{"p":"` + project + `","t":"` + t.Name() + `"},"metadata":{"project_id":"` + project + `"}}`
	req, _ := http.NewRequest("POST", d.BaseURL()+"/v1/records", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rec struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&rec); err != nil || resp.StatusCode != http.StatusCreated || rec.ID == "" {
		t.Fatalf("create record in %s: got HTTP %d (%v), want 201 with an id", project, resp.StatusCode, err)
	}
	return rec.ID
}

// subscriber counts what one NATS subscription hears.
type subscriber struct {
	name string
	ch   chan *nats.Msg
}

func subscribe(t *testing.T, d *kuradtest.Daemon, name, subject string, opts ...nats.Option) *subscriber {
	t.Helper()
	opts = append(opts, nats.NoReconnect(), nats.Timeout(5*time.Second),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	nc, err := nats.Connect("nats://"+d.NATSAddr(), opts...)
	if err != nil {
		t.Fatalf("%s: connect: %v", name, err)
	}
	t.Cleanup(nc.Close)
	s := &subscriber{name: name, ch: make(chan *nats.Msg, 64)}
	if _, err := nc.ChanSubscribe(subject, s.ch); err != nil {
		t.Fatalf("%s: subscribe: %v", name, err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatalf("%s: flush: %v", name, err)
	}
	return s
}

// heardOnce waits for the record's event, then listens a while longer
// and fails unless it came exactly once.
func (s *subscriber) heardOnce(t *testing.T, subject, recordID string) {
	t.Helper()
	n := 0
	first := time.NewTimer(testwait.Default)
	defer first.Stop()
	var after <-chan time.Time
	for {
		select {
		case m := <-s.ch:
			if m.Subject != subject || !bytes.Contains(m.Data, []byte(recordID)) {
				continue // another event: the other node's checkpoint, say
			}
			n++
			if n == 1 {
				// Long enough for a duplicate sent round the cluster to
				// arrive: the first copy took one route hop at most.
				after = time.After(500 * time.Millisecond)
			}
		case <-after:
			if n != 1 {
				t.Errorf("%s: heard %s of %s %d times, want once", s.name, subject, recordID, n)
			}
			return
		case <-first.C:
			if n == 0 {
				t.Fatalf("%s: heard no %s of %s within %v", s.name, subject, recordID, testwait.Default)
			}
		}
	}
}

// heardNothing fails if s hears anything in project before a bounded wait ends.
func (s *subscriber) heardNothing(t *testing.T, within time.Duration) {
	t.Helper()
	timer := time.NewTimer(within)
	defer timer.Stop()
	select {
	case m := <-s.ch:
		t.Errorf("%s: heard %s, want nothing", s.name, m.Subject)
	case <-timer.C:
	}
}

// Three kurads, each with its own SQLite file: the second and third name
// only the first in their routes and find each other through it (a route
// nats-server learns from a peer, authenticated with the cluster's
// credentials). A record written on the second is heard exactly once by a
// subscriber on each node.
func TestMain_NATSClusterEventHeardOnceOnEveryNode(t *testing.T) {
	t.Parallel()
	pw := writePasswordFile(t, "route-secret-0123456789abcdef")
	creds := func(c *daemon.Config) {
		c.NATSClusterUser = "kura-route"
		c.NATSClusterPasswordFile = pw
	}
	a := clusterNode(t, nil, creds)
	b := clusterNode(t, []string{routeTo(a)}, creds)
	c := clusterNode(t, []string{routeTo(a)}, creds)
	waitRoutes(t, 2, a, b, c)

	const subject = "oclaw.v1.alpha.evt.record.written"
	onA := subscribe(t, a, "subscriber on a", "oclaw.v1.alpha.>")
	onC := subscribe(t, c, "subscriber on c", "oclaw.v1.alpha.>")
	waitInterest(t, b, subject, 2)
	onB := subscribe(t, b, "subscriber on b", "oclaw.v1.alpha.>")

	id := postRecord(t, b, "alpha", "")
	for _, s := range []*subscriber{onA, onB, onC} {
		s.heardOnce(t, subject, id)
	}

	// /v1/info and /metrics count the peers.
	resp, err := http.Get(c.BaseURL() + "/v1/info")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var info kura.Info
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil {
		t.Fatal(err)
	}
	if cl := info.NATS.Cluster; cl == nil || cl.Routes != 2 || cl.Name != "kura" || cl.Addr != c.Bus().ClusterAddr() || cl.ServerName == "" {
		t.Errorf("info.nats.cluster %+v, want name kura, 2 routes, addr %s", cl, c.Bus().ClusterAddr())
	}
	names := map[string]bool{}
	for _, n := range []*kuradtest.Daemon{a, b, c} {
		names[n.Bus().Server().Name()] = true
	}
	if len(names) != 3 {
		t.Errorf("server names %v, want three different ones", names)
	}
	if got := scrapeMetrics(t, a.BaseURL())["kura_nats_routes"]; got != 2 {
		t.Errorf("kura_nats_routes on a: got %v, want 2", got)
	}
}

// NATS users hold across the cluster: a user limited to alpha on one
// kurad hears alpha's events written on another and not beta's, which an
// unrestricted user next to it does hear. Every kurad's own publisher
// (an in-process user with a password of its own) still publishes.
func TestMain_NATSClusterUsersPermissions(t *testing.T) {
	t.Parallel()
	users := writeUsersFile(t, hashLine(t, "alice", "alice-pw", "alpha"), hashLine(t, "ops", "ops-pw", "*"))
	withUsers := func(c *daemon.Config) { c.NATSUsersFile = users }
	a := clusterNode(t, nil, withUsers)
	b := clusterNode(t, []string{routeTo(a)}, withUsers)
	waitRoutes(t, 1, a, b)

	alice := subscribe(t, b, "alice on b", "oclaw.v1.alpha.>", nats.UserInfo("alice", "alice-pw"))
	aliceBeta := subscribe(t, b, "alice on b, beta", "oclaw.v1.beta.>", nats.UserInfo("alice", "alice-pw"))
	ops := subscribe(t, b, "ops on b", "oclaw.v1.beta.>", nats.UserInfo("ops", "ops-pw"))
	waitInterest(t, a, "oclaw.v1.alpha.evt.record.written", 1)
	waitInterest(t, a, "oclaw.v1.beta.evt.record.written", 1)

	beta := postRecord(t, a, "beta", "")
	alpha := postRecord(t, a, "alpha", "")
	ops.heardOnce(t, "oclaw.v1.beta.evt.record.written", beta)
	alice.heardOnce(t, "oclaw.v1.alpha.evt.record.written", alpha)
	// beta's event crossed first (ops heard it), on the same route as
	// alpha's: had alice's beta subscription been live, it would be here.
	aliceBeta.heardNothing(t, 200*time.Millisecond)

	// And the other way round, through b's own publisher.
	onA := subscribe(t, a, "alice on a", "oclaw.v1.alpha.>", nats.UserInfo("alice", "alice-pw"))
	waitInterest(t, b, "oclaw.v1.alpha.evt.record.written", 2)
	back := postRecord(t, b, "alpha", "")
	onA.heardOnce(t, "oclaw.v1.alpha.evt.record.written", back)
}

// A kurad presenting the wrong route password is refused: no route, and
// its subscribers never hear the other's events.
func TestMain_NATSClusterWrongPasswordNotJoined(t *testing.T) {
	t.Parallel()
	logA := &kuradtest.SyncBuffer{}
	a := kuradtest.StartMain(t, kuradtest.Options{LogOutput: logA, Configure: func(c *daemon.Config) {
		c.NATSClusterAddr = "127.0.0.1:0"
		c.NATSClusterUser = "kura-route"
		c.NATSClusterPasswordFile = writePasswordFile(t, "the-right-password-0123456789")
	}})
	b := clusterNode(t, []string{routeTo(a)}, func(c *daemon.Config) {
		c.NATSClusterUser = "kura-route"
		c.NATSClusterPasswordFile = writePasswordFile(t, "a-wrong-password-0123456789")
	})
	onB := subscribe(t, b, "subscriber on b", "oclaw.v1.alpha.>")
	testwait.For(t, testwait.Default, "a's log of the refused route", func() bool {
		return strings.Contains(logA.String(), "authentication error")
	})
	if n := a.Bus().NumRoutes() + b.Bus().NumRoutes(); n != 0 {
		t.Fatalf("routes: got %d, want none with a wrong password", n)
	}
	if n := a.Bus().Server().GlobalAccount().Interest("oclaw.v1.alpha.evt.record.written"); n != 0 {
		t.Errorf("a sees %d subscriptions from b, want none", n)
	}
	postRecord(t, a, "alpha", "")
	onB.heardNothing(t, 500*time.Millisecond)
}

func TestConfig_NATSCluster(t *testing.T) {
	t.Parallel()
	pw := writePasswordFile(t, "route-secret-0123456789abcdef")
	short := writePasswordFile(t, "short")
	empty := writePasswordFile(t, "")
	tokens := writeTokensFile(t)
	creds := []string{"--nats-cluster-user", "kura-route", "--nats-cluster-password-file", pw}
	with := func(args ...[]string) []string {
		var out []string
		for _, a := range args {
			out = append(out, a...)
		}
		return out
	}
	for _, tt := range []struct {
		name string
		args []string
		env  map[string]string
		want string // "" accepted; else what the error says
	}{
		{"LoopbackWithoutCredentials", []string{"--nats-cluster-addr", "127.0.0.1:6222", "--nats-routes", "nats-route://127.0.0.1:6223,nats-route://localhost:6224"}, nil, ""},
		{"SeedWithoutRoutes", []string{"--nats-cluster-addr", "127.0.0.1:0"}, nil, ""},
		{"Env", nil, map[string]string{"KURA_NATS_CLUSTER_ADDR": "0.0.0.0:6222", "KURA_NATS_ROUTES": "nats-route://10.0.0.2:6222, nats-route://kura-3:6222",
			"KURA_NATS_CLUSTER_USER": "kura-route", "KURA_NATS_CLUSTER_PASSWORD_FILE": pw, "KURA_TOKENS_FILE": tokens, "KURA_NATS_CLUSTER_NAME": "prod-1"}, ""},
		{"BeyondLoopbackWithCredentials", with([]string{"--nats-cluster-addr", "0.0.0.0:6222", "--tokens-file", tokens}, creds), nil, ""},
		{"BeyondLoopbackWithoutCredentials", []string{"--nats-cluster-addr", "0.0.0.0:6222", "--tokens-file", tokens}, nil, "nats-cluster-addr: \"0.0.0.0:6222\": 0.0.0.0 is not a loopback address and no cluster credentials"},
		{"BeyondLoopbackWithoutTokens", with([]string{"--nats-cluster-addr", "0.0.0.0:6222"}, creds), nil, "nats-cluster-addr: 0.0.0.0 is not a loopback address; without tokens"},
		{"RouteBeyondLoopbackWithoutCredentials", []string{"--nats-cluster-addr", "127.0.0.1:6222", "--nats-routes", "nats-route://10.0.0.2:6222"}, nil, "nats-routes: nats-route://10.0.0.2:6222: 10.0.0.2 is not a loopback address"},
		{"RoutesWithoutClusterAddr", []string{"--nats-routes", "nats-route://127.0.0.1:6222"}, nil, "nats-cluster-addr: nats-routes are set but no cluster address"},
		{"CredentialsWithoutClusterAddr", creds, nil, "nats-cluster-addr: nats-cluster-user or nats-cluster-password-file is set"},
		{"ClusterAddrNotHostPort", []string{"--nats-cluster-addr", "6222"}, nil, "nats-cluster-addr: \"6222\" is not host:port"},
		{"ClusterAddrBadPort", []string{"--nats-cluster-addr", "127.0.0.1:70000"}, nil, "nats-cluster-addr: \"127.0.0.1:70000\": port \"70000\" is not 0..65535"},
		{"ClusterAddrNoHost", []string{"--nats-cluster-addr", ":6222"}, nil, "nats-cluster-addr: \":6222\": give a host"},
		{"RouteNotURL", []string{"--nats-cluster-addr", "127.0.0.1:0", "--nats-routes", "127.0.0.1:6222"}, nil, "--nats-routes: nats-routes: \"127.0.0.1:6222\""},
		{"RouteWrongScheme", []string{"--nats-cluster-addr", "127.0.0.1:0", "--nats-routes", "nats://127.0.0.1:6222"}, nil, "scheme \"nats\", want nats-route://host:port"},
		{"RouteNoPort", []string{"--nats-cluster-addr", "127.0.0.1:0", "--nats-routes", "nats-route://127.0.0.1"}, nil, "want nats-route://host:port"},
		{"RoutePortZero", []string{"--nats-cluster-addr", "127.0.0.1:0", "--nats-routes", "nats-route://127.0.0.1:0"}, nil, "port \"0\" is not 1..65535"},
		{"RouteWithPath", []string{"--nats-cluster-addr", "127.0.0.1:0", "--nats-routes", "nats-route://127.0.0.1:6222/x"}, nil, "want nats-route://host:port and nothing more"},
		{"RouteWithCredentials", []string{"--nats-cluster-addr", "127.0.0.1:0", "--nats-routes", "nats-route://u:secret@127.0.0.1:6222"}, nil, "not in the URL"},
		{"UserWithoutPassword", []string{"--nats-cluster-addr", "127.0.0.1:0", "--nats-cluster-user", "kura-route"}, nil, "nats-cluster-user: give both"},
		{"PasswordWithoutUser", []string{"--nats-cluster-addr", "127.0.0.1:0", "--nats-cluster-password-file", pw}, nil, "nats-cluster-user: give both"},
		{"BadUser", []string{"--nats-cluster-addr", "127.0.0.1:0", "--nats-cluster-user", "kura route", "--nats-cluster-password-file", pw}, nil, "nats-cluster-user: \"kura route\" is not a user name"},
		{"ShortPassword", []string{"--nats-cluster-addr", "127.0.0.1:0", "--nats-cluster-user", "kura-route", "--nats-cluster-password-file", short}, nil, "nats-cluster-password-file: the password has 5 characters, want at least 16"},
		{"EmptyPasswordFile", []string{"--nats-cluster-addr", "127.0.0.1:0", "--nats-cluster-user", "kura-route", "--nats-cluster-password-file", empty}, nil, "must hold the password on one line"},
		{"MissingPasswordFile", []string{"--nats-cluster-addr", "127.0.0.1:0", "--nats-cluster-user", "kura-route", "--nats-cluster-password-file", filepath.Join(t.TempDir(), "none")}, nil, "nats-cluster-password-file: open"},
		{"BadClusterName", []string{"--nats-cluster-addr", "127.0.0.1:0", "--nats-cluster-name", "my cluster"}, nil, "nats-cluster-name: \"my cluster\""},
		{"BadServerName", []string{"--nats-server-name", "kurad 1"}, nil, "nats-server-name: \"kurad 1\""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := daemon.LoadConfig(tt.args, env(tt.env), devNull(t))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("got %v, want accepted", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
	c, _, err := daemon.LoadConfig(nil, env(map[string]string{"KURA_NATS_CLUSTER_ADDR": "127.0.0.1:6222",
		"KURA_NATS_ROUTES": " nats-route://127.0.0.1:6223 ,,nats-route://[::1]:6224/"}), devNull(t))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"nats-route://127.0.0.1:6223", "nats-route://[::1]:6224"}; !slices.Equal(c.NATSRoutes, want) || c.NATSClusterName != "kura" {
		t.Errorf("routes %q cluster name %q, want %q and kura", c.NATSRoutes, c.NATSClusterName, want)
	}
}

// A kurad whose peers are all down still starts: routes are retried in
// the background.
func TestMain_NATSClusterStartsWithPeersDown(t *testing.T) {
	t.Parallel()
	a := clusterNode(t, nil, nil)
	route := routeTo(a)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	b := clusterNode(t, []string{route}, nil)
	if !b.Bus().Running() || b.Bus().NumRoutes() != 0 {
		t.Errorf("running %v with %d routes, want running with none", b.Bus().Running(), b.Bus().NumRoutes())
	}
}
