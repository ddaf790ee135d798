package bus

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/testwait"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"golang.org/x/crypto/bcrypt"
)

func bcryptLine(tb testing.TB, name, password, projects string) string {
	tb.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		tb.Fatal(err)
	}
	return name + " " + string(h) + " " + projects + "\n"
}

// openAuthBus opens a bus listening on every interface with users, or
// skips when this machine cannot bind there.
func openAuthBus(tb testing.TB, users []User) *Bus {
	tb.Helper()
	if ln, err := net.Listen("tcp", "0.0.0.0:0"); err != nil {
		tb.Skipf("cannot bind 0.0.0.0 here (%v); the non-loopback rule needs it", err)
	} else {
		ln.Close()
	}
	b := New(Config{Addr: "0.0.0.0:0", Users: users})
	if err := b.Open(context.Background()); err != nil {
		tb.Fatalf("open bus: %v", err)
	}
	tb.Cleanup(func() { b.Close(context.Background()) })
	return b
}

// loopbackURL reaches the bus through 127.0.0.1 whatever it listens on.
func loopbackURL(b *Bus) string {
	_, port, _ := net.SplitHostPort(b.Addr())
	return "nats://" + net.JoinHostPort("127.0.0.1", port)
}

func TestBus_NonLoopbackWithoutUsersRefused(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:0", "[::]:0"} {
		b := New(Config{Addr: addr})
		err := b.Open(context.Background())
		if err == nil {
			b.Close(context.Background())
			t.Fatalf("%s: Open without users succeeded, want a refusal", addr)
		}
		if !strings.Contains(err.Error(), "nats-users-file") || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("%s: error %q does not say why or what to do", addr, err)
		}
		if b.Running() {
			t.Errorf("%s: running after a refusal", addr)
		}
	}
}

// collector gathers messages and the async errors of one connection.
type collector struct {
	mu   sync.Mutex
	msgs map[string][]string // subscription subject -> message subjects
	errs []error
}

func (c *collector) handler(sub string) nats.MsgHandler {
	return func(m *nats.Msg) {
		c.mu.Lock()
		c.msgs[sub] = append(c.msgs[sub], m.Subject)
		c.mu.Unlock()
	}
}

func (c *collector) got(sub string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.msgs[sub]...)
}

func (c *collector) permErrors() []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []error
	for _, e := range c.errs {
		if errors.Is(e, nats.ErrPermissionViolation) || strings.Contains(strings.ToLower(e.Error()), "permissions violation") {
			out = append(out, e)
		}
	}
	return out
}

func connectAs(tb testing.TB, url string, opts ...nats.Option) (*nats.Conn, *collector) {
	tb.Helper()
	c := &collector{msgs: map[string][]string{}}
	opts = append(opts, nats.NoReconnect(), nats.Timeout(5*time.Second),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			c.mu.Lock()
			c.errs = append(c.errs, err)
			c.mu.Unlock()
		}))
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		tb.Fatalf("connect: %v", err)
	}
	tb.Cleanup(nc.Close)
	return nc, c
}

func TestBus_AuthBeyondLoopback(t *testing.T) {
	t.Parallel()
	nk, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	nkPub, _ := nk.PublicKey()
	file := bcryptLine(t, "alice", "alice-secret", "alpha") +
		nkPub + " - beta\n" +
		bcryptLine(t, "ops", "ops-secret", "*")
	users, err := ParseUsers(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	b := openAuthBus(t, users)
	if !b.AuthRequired() {
		t.Fatal("AuthRequired() false with users configured")
	}
	url := loopbackURL(b)

	t.Run("NoCredentials", func(t *testing.T) {
		nc, err := nats.Connect(url, nats.NoReconnect(), nats.Timeout(5*time.Second))
		if err == nil {
			nc.Close()
			t.Fatal("connected without credentials")
		}
		if !errors.Is(err, nats.ErrAuthorization) && !strings.Contains(strings.ToLower(err.Error()), "authorization") {
			t.Errorf("error %v, want an authorization violation", err)
		}
	})
	t.Run("WrongPassword", func(t *testing.T) {
		nc, err := nats.Connect(url, nats.UserInfo("alice", "ops-secret"), nats.NoReconnect(), nats.Timeout(5*time.Second))
		if err == nil {
			nc.Close()
			t.Fatal("connected with another user's password")
		}
	})
	t.Run("InternalUserOverTCP", func(t *testing.T) {
		nc, err := nats.Connect(url, nats.UserInfo(internalUser, b.internalPass), nats.NoReconnect(), nats.Timeout(5*time.Second))
		if err == nil {
			nc.Close()
			t.Fatal("kurad's in-process identity was accepted over TCP")
		}
	})

	// kurad's in-process publisher rings for two projects; each client must
	// see only its own.
	ctx := context.Background()
	db := openStore(t, filepath.Join(t.TempDir(), "kura.db"), newKey(t))
	t.Cleanup(func() { db.Close(context.Background()) })
	pub := b.NewPublisher(db, PublisherConfig{})
	t.Cleanup(func() { pub.Close(context.Background()) })
	db.OnCommit(pub.Notify)
	if err := pub.Open(ctx); err != nil {
		t.Fatalf("kurad's publisher cannot connect with auth on: %v", err)
	}

	alice, ac := connectAs(t, url, nats.UserInfo("alice", "alice-secret"))
	nkc, nc := connectAs(t, url, nats.Nkey(nkPub, func(nonce []byte) ([]byte, error) { return nk.Sign(nonce) }))
	ops, oc := connectAs(t, url, nats.UserInfo("ops", "ops-secret"))
	for _, s := range []struct {
		conn *nats.Conn
		col  *collector
		subj string
	}{
		{alice, ac, "oclaw.v1.alpha.>"}, {alice, ac, "oclaw.v1.beta.>"}, {alice, ac, "oclaw.v1.>"},
		{nkc, nc, "oclaw.v1.beta.>"}, {nkc, nc, "oclaw.v1.alpha.>"},
		{ops, oc, "oclaw.v1.>"},
	} {
		if _, err := s.conn.Subscribe(s.subj, s.col.handler(s.subj)); err != nil {
			t.Fatalf("subscribe %s: %v", s.subj, err)
		}
	}
	// A worker takes dispatches in a queue group under its project.
	if _, err := alice.QueueSubscribe("oclaw.v1.alpha.cmd.summarizer.dispatch", "workers", ac.handler("queue")); err != nil {
		t.Fatal(err)
	}
	// A client may not ring the doorbell itself.
	if err := alice.Publish("oclaw.v1.alpha.evt.record.written", []byte(`{"seq":999999}`)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*nats.Conn{alice, nkc, ops} {
		if err := c.Flush(); err != nil {
			t.Fatal(err)
		}
	}

	for _, p := range []string{"alpha", "beta"} {
		in := kura.RecordInput{Type: "agent.thought", AuthorID: "agent:bmo",
			Content: json.RawMessage(`{"p":"` + p + `"}`), Metadata: map[string]string{"project_id": p}}
		if _, err := db.CreateRecord(ctx, &in); err != nil {
			t.Fatal(err)
		}
	}
	// ops sees everything, so once it holds both events the others have had
	// their chance too.
	if !testwait.Until(20*time.Second, func() bool { return len(oc.got("oclaw.v1.>")) >= 2 }) {
		t.Fatalf("ops received %v, want both projects' events: kurad's publisher does not get through", oc.got("oclaw.v1.>"))
	}
	for _, c := range []*nats.Conn{alice, nkc, ops} {
		c.Flush()
	}
	want := []string{"oclaw.v1.alpha.evt.record.written", "oclaw.v1.beta.evt.record.written"}
	if got := oc.got("oclaw.v1.>"); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("ops got %v, want %v (a forged doorbell would show as a third)", got, want)
	}
	if got := ac.got("oclaw.v1.alpha.>"); len(got) != 1 || got[0] != want[0] {
		t.Errorf("alice on her project got %v, want %v", got, want[:1])
	}
	for _, s := range []string{"oclaw.v1.beta.>", "oclaw.v1.>"} {
		if got := ac.got(s); len(got) != 0 {
			t.Errorf("alice subscribed to %s received %v: another project leaked", s, got)
		}
	}
	if got := nc.got("oclaw.v1.beta.>"); len(got) != 1 || got[0] != want[1] {
		t.Errorf("nkey user on its project got %v, want %v", got, want[1:])
	}
	if got := nc.got("oclaw.v1.alpha.>"); len(got) != 0 {
		t.Errorf("nkey user subscribed to alpha received %v", got)
	}
	// Two refused subscriptions and one refused publish for alice, one
	// refused subscription for the nkey user.
	if n := len(ac.permErrors()); n < 3 {
		t.Errorf("alice saw %d permission violations (%v), want 3", n, ac.errs)
	}
	if n := len(nc.permErrors()); n < 1 {
		t.Errorf("nkey user saw %d permission violations (%v), want 1", n, nc.errs)
	}
	if n := len(oc.permErrors()); n != 0 {
		t.Errorf("ops saw permission violations: %v", oc.errs)
	}
}

func TestBus_LoopbackWithoutUsersIsOpen(t *testing.T) {
	t.Parallel()
	b := openBus(t)
	defer b.Close(context.Background())
	if b.AuthRequired() {
		t.Fatal("AuthRequired() true without users")
	}
	nc, err := nats.Connect("nats://"+b.Addr(), nats.NoReconnect())
	if err != nil {
		t.Fatalf("anonymous loopback client refused: %v", err)
	}
	nc.Close()
}

func TestBus_LoopbackWithUsersRequiresAuth(t *testing.T) {
	t.Parallel()
	users, err := ParseUsers(strings.NewReader(bcryptLine(t, "alice", "pw", "alpha")))
	if err != nil {
		t.Fatal(err)
	}
	b := New(Config{Addr: "127.0.0.1:0", Users: users})
	if err := b.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	if nc, err := nats.Connect("nats://"+b.Addr(), nats.NoReconnect()); err == nil {
		nc.Close()
		t.Fatal("anonymous client connected although users are configured")
	}
	nc, err := nats.Connect("nats://alice:pw@"+b.Addr(), nats.NoReconnect())
	if err != nil {
		t.Fatalf("alice refused: %v", err)
	}
	nc.Close()
}
