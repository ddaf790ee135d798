package scaleout_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/daemon"
	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/kura-memory/kura/internal/pgtest"
	"github.com/kura-memory/kura/internal/testwait"
)

// Failover: a PostgreSQL primary with a streaming standby, kurad pointed at
// both (target_session_attrs=read-write, as docs/scale-out.md says), the
// primary killed and the standby promoted.

// failoverURL names both servers; pgx connects to the one that is writable.
func failoverURL(nodes ...*pgtest.Node) string {
	hosts := make([]string, len(nodes))
	for i, n := range nodes {
		hosts[i] = fmt.Sprintf("127.0.0.1:%d", n.Port)
	}
	return "postgres://kura@" + strings.Join(hosts, ",") + "/kura?sslmode=disable&target_session_attrs=read-write"
}

func failoverKurad(t *testing.T, url, key string) *kuradtest.Daemon {
	return kuradtest.StartMain(t, kuradtest.Options{Configure: func(c *daemon.Config) {
		c.DatabaseURL = url
		c.KeyFile = key
		c.ReadPool = 2
	}})
}

func writeRecords(t *testing.T, d *kuradtest.Daemon, label string, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		m := mustCall(t, d, "POST", "/v1/records", fmt.Sprintf(`{"type":"agent.thought","author_id":"agent:bmo","content":{"text":"%s %d"}}`, label, i), 201)
		ids[i] = m["id"].(string)
	}
	return ids
}

// postUntil posts records to d until done accepts an answer (its status
// and error message), and returns that answer.
func postUntil(t *testing.T, d *kuradtest.Daemon, label, what string, done func(code int, msg string) bool) (int, map[string]any) {
	t.Helper()
	var code int
	var m map[string]any
	i := 0
	testwait.For(t, time.Minute, what, func() bool {
		code, m = call(t, d, "POST", "/v1/records", fmt.Sprintf(`{"type":"agent.thought","author_id":"agent:bmo","content":{"text":"%s %d"}}`, label, i))
		i++
		_, msg := errOf(m)
		return done(code, msg)
	})
	return code, m
}

// untilWrite posts records until one is answered otherwise than "the
// database is unreachable" (kurad reconnecting), and returns that answer.
func untilWrite(t *testing.T, d *kuradtest.Daemon, label string) (int, map[string]any) {
	t.Helper()
	return postUntil(t, d, label, "an answer other than \"the database is unreachable\"", func(code int, msg string) bool {
		return code != http.StatusServiceUnavailable || strings.Contains(msg, "lost commits") || strings.Contains(msg, "another history")
	})
}

// errOf is the code and message of an error body.
func errOf(m map[string]any) (code, msg string) {
	e, _ := m["error"].(map[string]any)
	code, _ = e["code"].(string)
	msg, _ = e["message"].(string)
	return code, msg
}

// readyz is /readyz's status and its database check.
func readyz(t *testing.T, d *kuradtest.Daemon) (int, string) {
	t.Helper()
	code, m := call(t, d, "GET", "/readyz", "")
	checks, _ := m["checks"].(map[string]any) // 200
	if e, ok := m["error"].(map[string]any); ok {
		det, _ := e["details"].(map[string]any) // 503
		checks, _ = det["checks"].(map[string]any)
	}
	db, _ := checks["database"].(string)
	return code, db
}

// TestFailover_SynchronousStandbyLosesNothing: with synchronous
// replication every acknowledged write is on the standby, so after the
// promotion kurad carries on from the same feed and the same tree.
func TestFailover_SynchronousStandbyLosesNothing(t *testing.T) {
	primary := pgtest.NewPrimary(t, "kura", true)
	standby := primary.NewStandby(t)
	d := failoverKurad(t, failoverURL(primary, standby), filepath.Join(t.TempDir(), "kurad.key"))

	ids := writeRecords(t, d, "before", 12)
	before := mustCall(t, d, "GET", "/v1/records/"+ids[11], "", 200)
	seqBefore := feed(t, d)

	primary.Kill(t)
	standby.Promote(t)

	// The new primary inherited synchronous_standby_names and has no
	// standby: its commits wait. The write waits with them, and /readyz
	// says the writer is stuck.
	type answer struct {
		code int
		m    map[string]any
	}
	first := make(chan answer, 1)
	go func() { // not the test's goroutine: no t.Fatal here
		var a answer
		testwait.Until(time.Minute, func() bool {
			r, err := http.Post(d.BaseURL()+"/v1/records", "application/json",
				strings.NewReader(`{"type":"agent.thought","author_id":"agent:bmo","content":{"text":"after"}}`))
			if err != nil {
				a = answer{0, map[string]any{"err": err.Error()}}
				return true
			}
			defer r.Body.Close()
			a = answer{code: r.StatusCode}
			_ = json.NewDecoder(r.Body).Decode(&a.m)
			_, msg := errOf(a.m)
			return r.StatusCode != http.StatusServiceUnavailable || !strings.Contains(msg, "unreachable")
		})
		first <- a
	}()
	testwait.For(t, time.Minute, "/readyz naming the stuck writer", func() bool {
		select {
		case a := <-first:
			t.Fatalf("a write answered while the primary waits for a synchronous standby: %d %v", a.code, a.m)
		default:
		}
		code, m := call(t, d, "GET", "/readyz", "")
		e, _ := m["error"].(map[string]any)
		det, _ := e["details"].(map[string]any)
		checks, _ := det["checks"].(map[string]any)
		w, _ := checks["writer"].(string)
		return code == http.StatusServiceUnavailable && strings.Contains(w, "waited")
	})
	// As a failover tool does: no standby to wait for.
	standby.Exec(t, "postgres", "ALTER SYSTEM RESET synchronous_standby_names")
	standby.Exec(t, "postgres", "SELECT pg_reload_conf()")
	if a := <-first; a.code != http.StatusCreated {
		t.Fatalf("first write after the failover: %d %v", a.code, a.m)
	}
	writeRecords(t, d, "after more", 5)
	for _, id := range ids {
		mustCall(t, d, "GET", "/v1/records/"+id, "", 200)
	}
	if back := mustCall(t, d, "GET", "/v1/records/"+ids[11], "", 200); back["hash"] != before["hash"] || back["seal"] != before["seal"] {
		t.Fatalf("record after the failover: %v, before: %v", back, before)
	}
	seqAfter := feed(t, d) // no gap, no repeat
	if seqAfter != seqBefore+6 {
		t.Fatalf("feed ends at %d after the failover; %d before and 6 writes since", seqAfter, seqBefore)
	}
	if c, db := readyz(t, d); c != 200 {
		t.Fatalf("/readyz after the failover: %d, database %q", c, db)
	}
	// The tree kurad signs is the one its leaves make.
	var info struct {
		Log struct {
			Size int64 `json:"size"`
		} `json:"log"`
	}
	getJSON(t, d.BaseURL()+"/v1/info", &info)
	cp := strings.Split(checkpointBody(t, d), "\n")
	if info.Log.Size != seqAfter || cp[1] != fmt.Sprint(seqAfter) || cp[2] != rebuiltRoot(t, d, seqAfter) {
		t.Fatalf("checkpoint %q (log size %d) after the failover; feed at %d", cp[:3], info.Log.Size, seqAfter)
	}
}

// TestFailover_AsynchronousStandbyBehindIsCaught: the standby misses the
// last acknowledged writes. kurad must not number new events from the
// promoted standby's shorter feed (it would give out seqs and sign tree
// sizes twice): it refuses writes and fails /readyz until the database
// holds what it saw again (the old primary back), while a kurad started
// on the shorter history (which knows no better) writes there, and is
// refused in turn once the old primary is back.
func TestFailover_AsynchronousStandbyBehindIsCaught(t *testing.T) {
	primary := pgtest.NewPrimary(t, "kura", false)
	standby := primary.NewStandby(t)
	key := filepath.Join(t.TempDir(), "kurad.key")
	url := failoverURL(primary, standby)
	d := failoverKurad(t, url, key)

	kept := writeRecords(t, d, "replicated", 10)
	primary.WaitReplayed(t, standby)
	keptSeq := feed(t, d)
	standby.Kill(t) // it hears nothing more
	lost := writeRecords(t, d, "acknowledged, never replicated", 5)
	seenSeq := feed(t, d)
	primary.Kill(t)
	standby.Start(t)
	standby.Promote(t)
	if n := standby.QueryInt(t, "kura", "SELECT count(*) FROM events"); n != keptSeq {
		t.Fatalf("the promoted standby holds %d events, want the %d replicated", n, keptSeq)
	}

	code, m := untilWrite(t, d, "after the failover")
	if ec, msg := errOf(m); code != http.StatusServiceUnavailable || ec != "unavailable" || !strings.Contains(msg, "lost commits") {
		t.Fatalf("a write onto the database that lost acknowledged commits: %d %v", code, m)
	}
	for range 3 {
		if code, m := call(t, d, "POST", "/v1/ledgers", fmt.Sprintf(`{"label":"x","record_ids":[%q]}`, kept[0])); code != http.StatusServiceUnavailable {
			t.Fatalf("ledger write while behind: %d %v", code, m)
		}
	}
	if c, db := readyz(t, d); c != http.StatusServiceUnavailable || !strings.Contains(db, "lost commits") {
		t.Fatalf("/readyz while the database is behind: %d, database %q", c, db)
	}
	if n := standby.QueryInt(t, "kura", "SELECT coalesce(max(seq), 0) FROM events"); n != keptSeq {
		t.Fatalf("the refused writes left the feed at %d, want %d", n, keptSeq)
	}
	for _, id := range kept {
		mustCall(t, d, "GET", "/v1/records/"+id, "", 200) // reads go on
	}

	// Another kurad, started on the shorter history, writes past what d
	// saw: the database grows again, but with another tree.
	other := failoverKurad(t, url, key)
	writeRecords(t, other, "another history", int(seenSeq-keptSeq)+2)
	code, m = postUntil(t, d, "on another history", "d's poller to find the other history", func(code int, msg string) bool {
		return code != http.StatusServiceUnavailable || strings.Contains(msg, "another history")
	})
	if _, msg := errOf(m); code != http.StatusServiceUnavailable || !strings.Contains(msg, "another history") {
		t.Fatalf("a write onto a database with another history: %d %v", code, m)
	}

	// The old primary back (it holds everything d saw): d resumes where
	// it stopped; the other kurad, which saw the other history, is now
	// the one refused.
	standby.Kill(t)
	primary.Start(t)
	code, m = postUntil(t, d, "after the old primary came back", "d writing again", func(code int, _ string) bool {
		return code != http.StatusServiceUnavailable // unreachable, then refused until the poller sees the database whole
	})
	if code != http.StatusCreated {
		t.Fatalf("write once the database holds every commit again: %d %v", code, m)
	}
	if c, db := readyz(t, d); c != 200 {
		t.Fatalf("/readyz once the database holds every commit again: %d, database %q", c, db)
	}
	for _, id := range append(kept, lost...) {
		mustCall(t, d, "GET", "/v1/records/"+id, "", 200)
	}
	if got := feed(t, d); got != seenSeq+1 {
		t.Fatalf("feed ends at %d, want %d: every event d saw and its one new write", got, seenSeq+1)
	}
	code, m = untilWrite(t, other, "the other kurad after the old primary came back")
	if code != http.StatusServiceUnavailable {
		t.Fatalf("the kurad that saw the other history writes onto the old primary: %d %v", code, m)
	}
}

// TestFailover_LossAcceptedWitnessed: the loss accepted by restarting
// kurad (docs/scale-out.md, "Recovering", 2). A witness had cosigned the
// tree with the lost commits, so the restarted kurad, which knows only
// the database, finds the rollback at start and holds writes until an
// admin acknowledges it; the log then goes on under a new origin.
func TestFailover_LossAcceptedWitnessed(t *testing.T) {
	primary := pgtest.NewPrimary(t, "kura", false)
	standby := primary.NewStandby(t)
	key := filepath.Join(t.TempDir(), "kurad.key")
	addr, w := followedAddr(t, 20*time.Millisecond)
	start := func() *kuradtest.Daemon {
		return kuradtest.StartMain(t, kuradtest.Options{Configure: func(c *daemon.Config) {
			c.DatabaseURL, c.KeyFile, c.ReadPool, c.HTTPAddr = failoverURL(primary, standby), key, 2, addr
			c.Witnesses, c.WitnessPoll = []string{"http://" + w.Addr()}, 100*time.Millisecond
		}})
	}
	logInfo := func(d *kuradtest.Daemon) (state, origin string, witnessed int64) {
		var info struct {
			Origin string `json:"log_origin"`
			Log    struct {
				State     string `json:"state"`
				Witnesses []struct {
					Size int64 `json:"size"`
				} `json:"witnesses"`
			} `json:"log"`
		}
		getJSON(t, d.BaseURL()+"/v1/info", &info)
		if len(info.Log.Witnesses) == 1 {
			witnessed = info.Log.Witnesses[0].Size
		}
		return info.Log.State, info.Origin, witnessed
	}

	d := start()
	writeRecords(t, d, "replicated", 10)
	primary.WaitReplayed(t, standby)
	standby.Kill(t)
	writeRecords(t, d, "acknowledged, never replicated", 5)
	testwait.For(t, testwait.Default, "the witness cosigning the tree of 15", func() bool {
		st, _, n := logInfo(d)
		return st == "ok" && n == 15
	})
	_, origin, _ := logInfo(d)
	primary.Kill(t)
	standby.Start(t)
	standby.Promote(t)
	if code, m := untilWrite(t, d, "after the failover"); code != http.StatusServiceUnavailable {
		t.Fatalf("a write onto the database that lost acknowledged commits: %d %v", code, m)
	}

	// Accept the loss: restart.
	if err := d.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	d = start()
	if st, _, _ := logInfo(d); st != "rollback_detected" {
		t.Fatalf("restarted on the shorter history: log state %q, want rollback_detected", st)
	}
	if code, m := call(t, d, "POST", "/v1/records", `{"type":"agent.thought","author_id":"agent:bmo","content":{"text":"x"}}`); code != http.StatusServiceUnavailable {
		t.Fatalf("a write before the rollback is acknowledged: %d %v", code, m)
	}
	mustCall(t, d, "POST", "/v1/admin/log/acknowledge", `{"reason":"failover to an asynchronous standby lost the last five writes"}`, 200)
	st, newOrigin, _ := logInfo(d)
	if st == "rollback_detected" || newOrigin == origin || !strings.HasPrefix(newOrigin, origin) {
		t.Fatalf("after the acknowledgement: state %q, origin %q (was %q)", st, newOrigin, origin)
	}
	writeRecords(t, d, "after the acknowledgement", 2)
	if c, db := readyz(t, d); c != 200 {
		t.Fatalf("/readyz after the acknowledgement: %d, database %q", c, db)
	}
}

// TestFailover_DatabaseDown: while no server answers, every request that
// needs the database answers 503 unavailable (retry), never a 500, and
// /readyz fails; kurad carries on once the server is back.
func TestFailover_DatabaseDown(t *testing.T) {
	primary := pgtest.NewPrimary(t, "kura", false)
	d := failoverKurad(t, failoverURL(primary), filepath.Join(t.TempDir(), "kurad.key"))
	ids := writeRecords(t, d, "before", 2)
	sid := mustCall(t, d, "POST", "/v1/sessions", `{"project":"default","name":"up"}`, 201)["id"].(string)
	lid := mustCall(t, d, "POST", "/v1/ledgers", fmt.Sprintf(`{"label":"up","record_ids":[%q]}`, ids[0]), 201)["id"].(string)
	mustCall(t, d, "POST", "/v1/scopes/alpha/memory/nodes", `{"kind":"fact","id":"n1","title":"launch","summary":"the launch is on friday"}`, 201)
	mustCall(t, d, "PUT", "/v1/kb/knowledge/entries", `{"scope":"s","identifier":"router","value":"x"}`, 201)
	primary.Kill(t)
	for _, r := range []struct{ method, path, body string }{
		{"POST", "/v1/records", `{"type":"agent.thought","author_id":"agent:bmo","content":{"text":"down"}}`},
		{"GET", "/v1/records/" + ids[0], ""},
		{"GET", "/v1/records", ""},
		{"GET", "/v1/events?after=0", ""},
		{"POST", "/v1/sessions", `{"project":"default","name":"down"}`},
		{"GET", "/v1/sessions/" + sid, ""},
		{"GET", "/v1/sessions/" + sid + "/log", ""},
		{"GET", "/v1/ledgers/" + lid, ""},
		{"GET", "/v1/ledgers/" + lid + "/verify", ""},
		{"POST", "/v1/ledgers", fmt.Sprintf(`{"label":"down","record_ids":[%q]}`, ids[1])},
		{"GET", "/v1/scopes/alpha/memory/nodes/fact:n1", ""},
		{"GET", "/v1/scopes/alpha/memory/search?q=launch", ""},
		{"POST", "/v1/scopes/alpha/context/compile", `{"query":"launch"}`},
		{"GET", "/v1/kb/knowledge/lookup?q=router&scope=s", ""},
		{"PUT", "/v1/kb/knowledge/entries", `{"scope":"s","identifier":"other","value":"y"}`},
		{"GET", "/v1/turns", ""},
		{"GET", "/v1/log/leaves?start=0&end=2", ""},
		{"GET", "/v1/info", ""},
	} {
		for i := range 2 { // the first on a pooled connection, the next connecting
			code, m := call(t, d, r.method, r.path, r.body)
			if ec, _ := errOf(m); code/100 != 2 && (code != http.StatusServiceUnavailable || ec != "unavailable") {
				t.Errorf("%s %s (try %d) with the database down: %d %v, want 503 unavailable", r.method, r.path, i, code, m)
			}
			if code/100 == 2 && r.method != "GET" {
				t.Errorf("%s %s (try %d) with the database down: %d, a write acknowledged", r.method, r.path, i, code)
			}
		}
	}
	if c, db := readyz(t, d); c != http.StatusServiceUnavailable || db == "ok" {
		t.Errorf("/readyz with the database down: %d, database %q", c, db)
	}
	primary.Start(t)
	code, m := untilWrite(t, d, "back")
	if code != http.StatusCreated {
		t.Fatalf("a write once the database is back: %d %v", code, m)
	}
	mustCall(t, d, "GET", "/v1/records/"+ids[1], "", 200)
	mustCall(t, d, "GET", "/v1/scopes/alpha/memory/search?q=launch", "", 200)
}
