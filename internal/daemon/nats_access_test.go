package daemon_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/auth"
	"github.com/kura-memory/kura/internal/daemon"
	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/kura-memory/kura/internal/testwait"
	"github.com/nats-io/nats.go"
)

// These tests run a real kurad (SQLite or PostgreSQL, its embedded NATS
// server, HTTP on 127.0.0.1) and talk to its NATS server over TCP with
// nats.go, as a worker or the nats CLI would, in each configuration.

// natsErrs collects a connection's asynchronous errors (permission
// violations arrive that way).
type natsErrs struct {
	mu   sync.Mutex
	errs []error
}

func (e *natsErrs) add(_ *nats.Conn, _ *nats.Subscription, err error) {
	e.mu.Lock()
	e.errs = append(e.errs, err)
	e.mu.Unlock()
}

// violations are the permission violations reported so far.
func (e *natsErrs) violations() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, err := range e.errs {
		if errors.Is(err, nats.ErrPermissionViolation) || strings.Contains(strings.ToLower(err.Error()), "permissions violation") {
			out = append(out, err.Error())
		}
	}
	return out
}

func dialNATS(addr string, opts ...nats.Option) (*nats.Conn, *natsErrs, error) {
	e := &natsErrs{}
	opts = append([]nats.Option{nats.NoReconnect(), nats.Timeout(5 * time.Second), nats.ErrorHandler(e.add)}, opts...)
	nc, err := nats.Connect("nats://"+addr, opts...)
	return nc, e, err
}

func mustDialNATS(t *testing.T, addr string, opts ...nats.Option) (*nats.Conn, *natsErrs) {
	t.Helper()
	nc, e, err := dialNATS(addr, opts...)
	if err != nil {
		t.Fatalf("connect to kurad's NATS: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc, e
}

func subscribeChan(t *testing.T, nc *nats.Conn, subject string) chan *nats.Msg {
	t.Helper()
	ch := make(chan *nats.Msg, 64)
	if _, err := nc.ChanSubscribe(subject, ch); err != nil {
		t.Fatalf("subscribe %s: %v", subject, err)
	}
	return ch
}

func flush(t *testing.T, ncs ...*nats.Conn) {
	t.Helper()
	for _, nc := range ncs {
		if err := nc.FlushTimeout(5 * time.Second); err != nil {
			t.Fatalf("flush: %v", err)
		}
	}
}

func nextMsg(t *testing.T, ch chan *nats.Msg, what string) *nats.Msg {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(20 * time.Second):
		t.Fatalf("no message for %s within 20s", what)
		return nil
	}
}

// nextEvent is the next message that is not one of the log's checkpoint
// notices, which come after commits at their own pace.
func nextEvent(t *testing.T, ch chan *nats.Msg, what string) *nats.Msg {
	t.Helper()
	for {
		if m := nextMsg(t, ch, what); m.Subject != "oclaw.v1._log.evt.checkpoint" {
			return m
		}
	}
}

// callAPI sends one JSON request to kurad and fails the test unless it
// answers want.
func callAPI(t *testing.T, d *kuradtest.Daemon, token, method, path, body string, want int) []byte {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, d.BaseURL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: got %d %s, want %d", method, path, resp.StatusCode, b, want)
	}
	return b
}

func putRecordIn(t *testing.T, d *kuradtest.Daemon, token, project string) {
	t.Helper()
	body := fmt.Sprintf(`{"type":"agent.thought","author_id":"agent:bmo","content":{"n":"%d"},"metadata":{"project_id":%q}}`, time.Now().UnixNano(), project)
	callAPI(t, d, token, http.MethodPost, "/v1/records", body, http.StatusCreated)
}

func putNodeIn(t *testing.T, d *kuradtest.Daemon, token, scope string) {
	t.Helper()
	body := fmt.Sprintf(`{"kind":"note","id":"n%d","title":"a note","summary":"in %s"}`, time.Now().UnixNano(), scope)
	callAPI(t, d, token, http.MethodPost, "/v1/scopes/"+scope+"/memory/nodes", body, http.StatusCreated)
}

// lastSeq is the feed's newest seq.
func lastSeq(t *testing.T, d *kuradtest.Daemon, token string) int64 {
	t.Helper()
	var p struct {
		LastSeq int64 `json:"last_seq"`
	}
	if err := json.Unmarshal(callAPI(t, d, token, http.MethodGet, "/v1/events?after=0&limit=1", "", http.StatusOK), &p); err != nil {
		t.Fatal(err)
	}
	return p.LastSeq
}

// forgedPointer is what an attacker would publish: a record.written
// pointer whose seq lies far past anything kurad wrote.
const forgedPointer = `{"seq":1000000000000,"type":"record.written","project":"default","at":"2026-01-01T00:00:00.000000000Z","record_id":"01900000-0000-7000-8000-000000000000"}`

// TestMain_NATSTokenlessNobodyElsePublishes: without tokens (the default,
// and the systemd unit's) any local client may connect and hear every
// project, but a publish on oclaw.v1.> is refused with a permissions
// violation and reaches no subscriber; other subjects stay open (the
// bench's floor measurement publishes on its own).
func TestMain_NATSTokenlessNobodyElsePublishes(t *testing.T) {
	t.Parallel()
	d := kuradtest.StartMain(t, kuradtest.Options{})
	sub, _ := mustDialNATS(t, d.NATSAddr())
	all := subscribeChan(t, sub, "oclaw.v1.>")
	floor := subscribeChan(t, sub, "kurabench.floor.>")
	flush(t, sub)

	forger, ferrs := mustDialNATS(t, d.NATSAddr())
	if err := forger.Publish("oclaw.v1.default.evt.record.written", []byte(forgedPointer)); err != nil {
		t.Fatal(err)
	}
	if err := forger.Publish("oclaw.v1.default.cmd.builder.dispatch", []byte(forgedPointer)); err != nil {
		t.Fatal(err)
	}
	// Wildcards in a published subject slip past the deny rule, but only
	// reach subscriptions with wildcards in those places: none under
	// oclaw.v1.
	for _, subj := range []string{"oclaw.*.default.evt.record.written", "*.v1.default.evt.record.written", ">"} {
		if err := forger.Publish(subj, []byte(forgedPointer)); err != nil {
			t.Fatal(err)
		}
	}
	if err := forger.Publish("kurabench.floor.test", []byte("floor")); err != nil {
		t.Fatal(err)
	}
	// The round trip proves the server took them all before the record
	// below is written.
	flush(t, forger)
	testwait.For(t, 10*time.Second, "two permission violations for the forger", func() bool { return len(ferrs.violations()) >= 2 })

	putRecordIn(t, d, "", "default")
	m := nextEvent(t, all, "the genuine event")
	var ptr struct{ Seq int64 }
	if err := json.Unmarshal(m.Data, &ptr); err != nil {
		t.Fatal(err)
	}
	// The forged pointers were taken first: had the server passed them on,
	// they would come before kurad's own.
	if want := lastSeq(t, d, ""); m.Subject != "oclaw.v1.default.evt.record.written" || ptr.Seq != want {
		t.Fatalf("first message on oclaw.v1.>: %s %s, want kurad's record.written with seq %d (a forged one got through)", m.Subject, m.Data, want)
	}
	if f := nextMsg(t, floor, "the floor message"); string(f.Data) != "floor" {
		t.Errorf("got %q on the floor subject, want %q", f.Data, "floor")
	}
	if !strings.Contains(strings.Join(ferrs.violations(), "\n"), "oclaw.v1.default.evt.record.written") {
		t.Errorf("violations %v do not name the refused subject", ferrs.violations())
	}
}

// writeTokens writes a tokens file of the given token -> "identity role
// scopes projects" lines.
func writeTokens(t *testing.T, path string, lines map[string]string) {
	t.Helper()
	var b strings.Builder
	for tok, rest := range lines {
		b.WriteString(auth.HashToken(tok) + " " + rest + "\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestMain_NATSTokens: with HTTP tokens and no NATS users file, a NATS
// client needs a Kura token; it hears what the feed shows that token and
// publishes nothing; a reload that revokes the token, or changes its
// rights, disconnects it.
func TestMain_NATSTokens(t *testing.T) {
	t.Parallel()
	tokens := filepath.Join(t.TempDir(), "tokens")
	lines := map[string]string{
		"tok-admin": "user:root admin * *",
		"tok-alpha": "agent:alpha reader mem alpha", // scopes mem, projects alpha
		"tok-gone":  "agent:gone reader * alpha",
		"tok-moved": "agent:moved reader * alpha",
	}
	writeTokens(t, tokens, lines)
	d := kuradtest.StartMain(t, kuradtest.Options{Configure: func(c *daemon.Config) { c.TokensFile = tokens; c.RateLimit = 0 }})
	addr := d.NATSAddr()

	for name, opts := range map[string][]nats.Option{
		"NoCredentials": nil,
		"UnknownToken":  {nats.Token("tok-nope")},
		"UserPassword":  {nats.UserInfo("alice", "tok-admin")}, // a token is no password
		"InternalUser":  {nats.UserInfo("kurad-internal", "x")},
	} {
		if nc, _, err := dialNATS(addr, opts...); err == nil {
			nc.Close()
			t.Errorf("%s: connected to kurad's NATS, want an authorization violation", name)
		} else if !errors.Is(err, nats.ErrAuthorization) && !strings.Contains(strings.ToLower(err.Error()), "authorization") {
			t.Errorf("%s: got %v, want an authorization violation", name, err)
		}
	}

	admin, aerrs := mustDialNATS(t, addr, nats.Token("tok-admin"))
	adminAll := subscribeChan(t, admin, "oclaw.v1.>")
	alpha, perrs := mustDialNATS(t, addr, nats.Token("tok-alpha"))
	alphaTree := subscribeChan(t, alpha, "oclaw.v1.alpha.>")
	memTree := subscribeChan(t, alpha, "oclaw.v1.mem.evt.memory.>")
	checkpoints := subscribeChan(t, alpha, "oclaw.v1._log.evt.checkpoint")
	for _, s := range []string{"oclaw.v1.beta.>", "oclaw.v1.>", "oclaw.v1.mem.>"} {
		subscribeChan(t, alpha, s) // refused by the server
	}
	// The URL form the nats CLI and nats.go read: the token as the user.
	viaURL, err := nats.Connect("nats://tok-alpha@"+addr, nats.NoReconnect(), nats.Timeout(5*time.Second))
	if err != nil {
		t.Fatalf("token in the URL refused: %v", err)
	}
	viaURL.Close()
	if err := alpha.Publish("oclaw.v1.alpha.evt.record.written", []byte(forgedPointer)); err != nil {
		t.Fatal(err)
	}
	if err := admin.Publish("oclaw.v1.alpha.evt.record.written", []byte(forgedPointer)); err != nil {
		t.Fatal(err)
	}
	flush(t, admin, alpha)
	testwait.For(t, 10*time.Second, "the limited token's four refusals", func() bool { return len(perrs.violations()) >= 4 })
	testwait.For(t, 10*time.Second, "the admin's refused publish", func() bool { return len(aerrs.violations()) >= 1 })

	// In order: a record in another project, memory in the scope named like
	// the token's project (not its scope), memory in its scope, a record in
	// its project.
	putRecordIn(t, d, "tok-admin", "beta")
	putNodeIn(t, d, "tok-admin", "alpha")
	putNodeIn(t, d, "tok-admin", "mem")
	putRecordIn(t, d, "tok-admin", "alpha")
	want := []string{"oclaw.v1.beta.evt.record.written", "oclaw.v1.alpha.evt.memory.node", "oclaw.v1.mem.evt.memory.node", "oclaw.v1.alpha.evt.record.written"}
	for i, w := range want {
		if m := nextEvent(t, adminAll, w); m.Subject != w {
			t.Fatalf("admin's message %d: got %s, want %s (a forged one, or out of order)", i, m.Subject, w)
		}
	}
	if m := nextMsg(t, memTree, "memory in scope mem"); m.Subject != want[2] {
		t.Errorf("limited token on its scope: got %s, want %s", m.Subject, want[2])
	}
	// Its project's record was published last: anything denied before it
	// would have arrived first.
	if m := nextMsg(t, alphaTree, "a record in project alpha"); m.Subject != want[3] {
		t.Errorf("limited token on its project: got %s %s, want %s alone (another scope's memory, or a forged event, got through)", m.Subject, m.Data, want[3])
	}
	select {
	case m := <-checkpoints:
		if !strings.Contains(string(m.Data), "checkpoint") {
			t.Errorf("checkpoint notice %s", m.Data)
		}
	case <-time.After(20 * time.Second):
		t.Error("the limited token heard no checkpoint notice")
	}

	// Revocation and a change of rights, at a reload.
	gone, _ := mustDialNATS(t, addr, nats.Token("tok-gone"))
	moved, _ := mustDialNATS(t, addr, nats.Token("tok-moved"))
	delete(lines, "tok-gone")
	lines["tok-moved"] = "agent:moved reader * beta"
	writeTokens(t, tokens, lines)
	if err := d.ReloadTokens(); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "the revoked token's connection closed", gone.IsClosed)
	testwait.For(t, 10*time.Second, "the moved token's connection closed", moved.IsClosed)
	flush(t, alpha, admin)
	if !alpha.IsConnected() || !admin.IsConnected() {
		t.Error("a reload disconnected tokens it did not change")
	}
	if nc, _, err := dialNATS(addr, nats.Token("tok-gone")); err == nil {
		nc.Close()
		t.Error("a revoked token connected again")
	}
	again, _ := mustDialNATS(t, addr, nats.Token("tok-moved"))
	beta := subscribeChan(t, again, "oclaw.v1.beta.>")
	flush(t, again)
	putRecordIn(t, d, "tok-admin", "beta")
	if m := nextMsg(t, beta, "beta under the new rights"); m.Subject != want[0] {
		t.Errorf("got %s, want %s", m.Subject, want[0])
	}
}

// TestMain_NATSAnonymousOptOut: nats-anonymous on lets local clients
// connect without a token, as without tokens; still no client publishes
// on oclaw.v1.>.
func TestMain_NATSAnonymousOptOut(t *testing.T) {
	t.Parallel()
	tokens := filepath.Join(t.TempDir(), "tokens")
	writeTokens(t, tokens, map[string]string{"tok-admin": "user:root admin * *"})
	d := kuradtest.StartMain(t, kuradtest.Options{Configure: func(c *daemon.Config) { c.TokensFile = tokens; c.NATSAnonymous = true }})
	sub, _ := mustDialNATS(t, d.NATSAddr())
	all := subscribeChan(t, sub, "oclaw.v1.>")
	flush(t, sub)
	forger, ferrs := mustDialNATS(t, d.NATSAddr(), nats.Token("tok-admin"))
	if err := forger.Publish("oclaw.v1.default.evt.record.written", []byte(forgedPointer)); err != nil {
		t.Fatal(err)
	}
	flush(t, forger)
	testwait.For(t, 10*time.Second, "a permission violation", func() bool { return len(ferrs.violations()) >= 1 })
	putRecordIn(t, d, "tok-admin", "hashi")
	if m := nextEvent(t, all, "the genuine event"); m.Subject != "oclaw.v1.hashi.evt.record.written" {
		t.Fatalf("got %s %s first, want kurad's event", m.Subject, m.Data)
	}
}

func TestConfig_NATSAnonymous(t *testing.T) {
	t.Parallel()
	users := writeUsersFile(t, hashLine(t, "alice", "pw", "alpha"))
	for _, tt := range []struct {
		name string
		args []string
		env  map[string]string
		want string // "" accepted, else a substring of the error
		anon bool
	}{
		{"Default", nil, nil, "", false},
		{"Flag", []string{"--nats-anonymous", "on"}, nil, "", true},
		{"Env", nil, map[string]string{"KURA_NATS_ANONYMOUS": "true"}, "", true},
		{"Off", []string{"--nats-anonymous", "off"}, map[string]string{"KURA_NATS_ANONYMOUS": "on"}, "", false},
		{"NotABool", []string{"--nats-anonymous", "maybe"}, nil, "nats-anonymous", false},
		{"WithUsersFile", []string{"--nats-anonymous", "on", "--nats-users-file", users}, nil, "nats-anonymous", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, _, err := daemon.LoadConfig(tt.args, env(tt.env), devNull(t))
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("got %v, want an error naming %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.NATSAnonymous != tt.anon {
				t.Errorf("got NATSAnonymous %v, want %v", c.NATSAnonymous, tt.anon)
			}
		})
	}
}
