// Package scaleout_test runs several kurads on one PostgreSQL database with
// their embedded NATS servers joined as a cluster (shared/API.md,
// "Scale-out: PostgreSQL and NATS clusters"), end to end: real PostgreSQL,
// real NATS routes, real HTTP.
package scaleout_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/daemon"
	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/kura-memory/kura/internal/pgtest"
	"github.com/kura-memory/kura/internal/store"
	"github.com/kura-memory/kura/internal/testwait"
	"github.com/kura-memory/kura/internal/witness"
	"github.com/nats-io/nats.go"
	"golang.org/x/mod/sumdb/tlog"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// pair is two kurads sharing a database, a signing key and a NATS cluster.
type pair struct {
	a, b *kuradtest.Daemon
	url  string // the database's
}

func startPair(t *testing.T) *pair {
	t.Helper()
	url := pgtest.URL(t)
	key := filepath.Join(t.TempDir(), "kurad.key")
	node := func(routes []string) *kuradtest.Daemon {
		return kuradtest.StartMain(t, kuradtest.Options{Configure: func(c *daemon.Config) {
			c.DatabaseURL = url
			c.KeyFile = key
			c.NATSClusterAddr = "127.0.0.1:0"
			c.NATSRoutes = routes
			c.ReadPool = 3
		}})
	}
	a := node(nil)
	b := node([]string{"nats-route://" + a.Bus().ClusterAddr()})
	testwait.For(t, testwait.Default, "the NATS route between the two kurads", func() bool {
		return a.Bus().NumRoutes() == 1 && b.Bus().NumRoutes() == 1
	})
	return &pair{a: a, b: b, url: url}
}

func call(t *testing.T, d *kuradtest.Daemon, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, d.BaseURL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" || method != http.MethodGet {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, raw, err)
		}
	}
	return resp.StatusCode, m
}

func mustCall(t *testing.T, d *kuradtest.Daemon, method, path, body string, want int) map[string]any {
	t.Helper()
	code, m := call(t, d, method, path, body)
	if code != want {
		t.Fatalf("%s %s: %d %v, want %d", method, path, code, m, want)
	}
	return m
}

// hearer counts the events one NATS subscription hears, by seq.
type hearer struct {
	mu   sync.Mutex
	seqs map[int64]int
}

func hear(t *testing.T, natsAddr string) *hearer {
	t.Helper()
	nc, err := nats.Connect("nats://"+natsAddr, nats.NoReconnect())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	h := &hearer{seqs: map[int64]int{}}
	if _, err := nc.Subscribe("oclaw.v1.>", func(m *nats.Msg) {
		var p struct {
			Seq int64 `json:"seq"`
		}
		if json.Unmarshal(m.Data, &p) == nil && p.Seq > 0 {
			h.mu.Lock()
			h.seqs[p.Seq]++
			h.mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return h
}

// heardAllOnce reports whether every seq in 1..last was heard, none twice.
func (h *hearer) heardAllOnce(last int64) (bool, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := int64(1); s <= last; s++ {
		if h.seqs[s] != 1 {
			return false, fmt.Sprintf("seq %d heard %d times", s, h.seqs[s])
		}
	}
	return true, ""
}

// feed reads the whole event feed of d and checks it is 1..n with no gap.
func feed(t *testing.T, d *kuradtest.Daemon) int64 {
	t.Helper()
	var after, n int64
	for {
		m := mustCall(t, d, "GET", fmt.Sprintf("/v1/events?after=%d&limit=500", after), "", 200)
		evs, _ := m["events"].([]any)
		if len(evs) == 0 {
			return n
		}
		for _, e := range evs {
			seq := int64(e.(map[string]any)["seq"].(float64))
			if seq != n+1 {
				t.Fatalf("feed of %s: seq %d after %d: a gap or a repeat", d.BaseURL(), seq, n)
			}
			n = seq
		}
		after = n
	}
}

func TestScaleOut_TwoKuradsOneDatabase(t *testing.T) {
	p := startPair(t)
	onA, onB := hear(t, p.a.NATSAddr()), hear(t, p.b.NATSAddr())
	// Every subscription, local or across the route, is in place on the
	// node that publishes (either may lead the outbox).
	for _, d := range []*kuradtest.Daemon{p.a, p.b} {
		testwait.For(t, testwait.Default, "interest across the cluster", func() bool {
			return d.Bus().Server().GlobalAccount().Interest("oclaw.v1.default.evt.record.written") >= 2
		})
	}

	// A record written on one reads back on the other, same hash and seal.
	rec := mustCall(t, p.a, "POST", "/v1/records", `{"type":"agent.thought","author_id":"agent:bmo","content":{"text":"written on a"}}`, 201)
	back := mustCall(t, p.b, "GET", "/v1/records/"+rec["id"].(string), "", 200)
	for _, k := range []string{"hash", "seal", "content_hash", "created_at"} {
		if back[k] != rec[k] {
			t.Fatalf("%s read on b: %v, written on a: %v", k, back[k], rec[k])
		}
	}
	recB := mustCall(t, p.b, "POST", "/v1/records", `{"type":"agent.thought","author_id":"agent:bmo","content":{"text":"written on b"}}`, 201)
	mustCall(t, p.a, "GET", "/v1/records/"+recB["id"].(string), "", 200)

	// 20 claim races: one turn, a claim from each kurad at once.
	nodes := [2]*kuradtest.Daemon{p.a, p.b}
	for i := range 20 {
		s := mustCall(t, nodes[i%2], "POST", "/v1/sessions", fmt.Sprintf(`{"project":"default","name":"claim-%d"}`, i), 201)
		turn := mustCall(t, nodes[(i+1)%2], "POST", "/v1/sessions/"+s["id"].(string)+"/turns",
			`{"instruction":{"type":"task.instruction","content":{"text":"race"},"author_id":"user:oles"}}`, 201)
		codes := race(t, nodes, func(j int) (string, string) {
			return "/v1/turns/" + turn["id"].(string) + "/claim", fmt.Sprintf(`{"worker":"agent:w%d","lease_seconds":60}`, j)
		})
		if !oneWinner(codes) {
			t.Fatalf("claim race %d: statuses %v, want one 200 and one 409", i, codes)
		}
	}

	// 20 head compare-and-swap races: both move the head from the same
	// expected value to a ledger of their own.
	for i := range 20 {
		s := mustCall(t, nodes[i%2], "POST", "/v1/sessions", fmt.Sprintf(`{"project":"default","name":"head-%d"}`, i), 201)
		var ledgers [2]string
		for j, d := range nodes {
			l := mustCall(t, d, "POST", "/v1/ledgers", fmt.Sprintf(`{"label":"head-%d-%d","record_ids":["%s"]}`, i, j, rec["id"]), 201)
			ledgers[j] = l["id"].(string)
		}
		codes := race(t, nodes, func(j int) (string, string) {
			return "/v1/sessions/" + s["id"].(string) + "/head", fmt.Sprintf(`{"ledger_id":"%s","expected_head":null}`, ledgers[j])
		})
		if !oneWinner(codes) {
			t.Fatalf("head race %d: statuses %v, want one 200 and one 409", i, codes)
		}
	}

	// 20 idempotency races: the same key and body on both at once write
	// one ledger (a ledger is not deduplicated: without the key each
	// would be a new one); both answer with it.
	for i := range 20 {
		body := fmt.Sprintf(`{"label":"idem-%d","record_ids":["%s"]}`, i, rec["id"])
		var ids [2]string
		var wg sync.WaitGroup
		start := make(chan struct{})
		for j, d := range nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequest("POST", d.BaseURL()+"/v1/ledgers", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Idempotency-Key", fmt.Sprintf("race-%d", i))
				<-start
				r, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				defer r.Body.Close()
				var rec struct{ ID string }
				if json.NewDecoder(r.Body).Decode(&rec) != nil || r.StatusCode/100 != 2 {
					t.Errorf("idempotent write %d on node %d: %d", i, j, r.StatusCode)
				}
				ids[j] = rec.ID
			}()
		}
		close(start)
		wg.Wait()
		if ids[0] == "" || ids[0] != ids[1] {
			t.Fatalf("idempotency race %d: answers name %q and %q, want one ledger", i, ids[0], ids[1])
		}
	}

	// A burst on one kurad where half the writes fail (a head move from a
	// head the session does not have): failed jobs share group
	// transactions with good ones and must leave no gap in the seqs.
	burst := mustCall(t, p.a, "POST", "/v1/sessions", `{"project":"default","name":"burst"}`, 201)
	l := mustCall(t, p.a, "POST", "/v1/ledgers", fmt.Sprintf(`{"label":"burst","record_ids":["%s"]}`, rec["id"]), 201)
	var bw sync.WaitGroup
	for i := range 40 {
		bw.Add(1)
		go func() {
			defer bw.Done()
			path, body, want := "/v1/records", fmt.Sprintf(`{"type":"agent.thought","author_id":"agent:bmo","content":{"burst":%d}}`, i), 201
			if i%2 == 1 {
				path, body, want = "/v1/sessions/"+burst["id"].(string)+"/head", fmt.Sprintf(`{"ledger_id":"%s","expected_head":"%s"}`, l["id"], l["id"]), 409
			}
			r, err := http.Post(p.a.BaseURL()+path, "application/json", strings.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			r.Body.Close()
			if r.StatusCode != want {
				t.Errorf("burst %d: %d, want %d", i, r.StatusCode, want)
			}
		}()
	}
	// And pairs of one Idempotency-Key at once: the second runs its write,
	// takes seqs, then finds the key kept and is undone.
	for i := range 20 {
		bw.Add(1)
		go func() {
			defer bw.Done()
			req, _ := http.NewRequest("POST", p.a.BaseURL()+"/v1/ledgers", strings.NewReader(fmt.Sprintf(`{"label":"burst-%d","record_ids":["%s"]}`, i/2, rec["id"])))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", fmt.Sprintf("burst-%d", i/2))
			r, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			r.Body.Close()
			if r.StatusCode != 201 && r.StatusCode != 200 {
				t.Errorf("idempotent burst %d: %d", i, r.StatusCode)
			}
		}()
	}
	bw.Wait()

	// Record writes run before their batch takes the write lock. Both
	// kurads write the same ten contents at once, as batches in opposite
	// orders (the inserts wait for each other's rows, and PostgreSQL breaks
	// the deadlock that makes) and as single records, some under an
	// Idempotency-Key shared across the kurads: every write succeeds,
	// every content is stored once, and the feeds below have no gap.
	contents := make([]string, 10)
	for k := range contents {
		contents[k] = fmt.Sprintf(`{"type":"agent.thought","author_id":"agent:bmo","content":{"shared":%d}}`, k)
	}
	var rw sync.WaitGroup
	var idsMu sync.Mutex
	ids := map[string]map[string]bool{} // content hash → record ids answered
	note := func(r map[string]any) {
		idsMu.Lock()
		defer idsMu.Unlock()
		h, _ := r["hash"].(string)
		if ids[h] == nil {
			ids[h] = map[string]bool{}
		}
		ids[h][r["id"].(string)] = true
	}
	for i := range 40 {
		rw.Add(1)
		go func() {
			defer rw.Done()
			d := nodes[i%2]
			k := i % 10
			var path, body, key string
			switch {
			case i%4 < 2:
				first, second := contents[k], contents[(k+1)%10]
				if i%2 == 1 {
					first, second = second, first
				}
				path, body = "/v1/records/batch", `{"records":[`+first+`,`+second+`]}`
			default:
				path, body = "/v1/records", contents[k]
				if i%8 >= 6 {
					key = fmt.Sprintf("shared-%d", k)
				}
			}
			req, _ := http.NewRequest("POST", d.BaseURL()+path, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			if key != "" {
				req.Header.Set("Idempotency-Key", key)
			}
			r, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer r.Body.Close()
			var out struct {
				Records []map[string]any `json:"records"`
			}
			raw, _ := io.ReadAll(r.Body)
			if r.StatusCode/100 != 2 {
				t.Errorf("shared write %d (%s on node %d): %d %s", i, path, i%2, r.StatusCode, raw)
				return
			}
			if path == "/v1/records" {
				var one map[string]any
				json.Unmarshal(raw, &one)
				out.Records = append(out.Records, one)
			} else {
				json.Unmarshal(raw, &out)
			}
			for _, rec := range out.Records {
				note(rec)
			}
		}()
	}
	rw.Wait()
	if len(ids) != len(contents) {
		t.Fatalf("the shared writes answered %d distinct hashes, want %d", len(ids), len(contents))
	}
	for h, set := range ids {
		if len(set) != 1 {
			t.Fatalf("content %s stored as %d records: %v", h, len(set), set)
		}
	}

	// The last writes land on a alone, so b learns of them only from the
	// database (its poller), not from a write of its own.
	for i := range 3 {
		mustCall(t, p.a, "POST", "/v1/records", fmt.Sprintf(`{"type":"agent.thought","author_id":"agent:bmo","content":{"text":"last on a %d"}}`, i), 201)
	}
	// Both feeds list every event in order with no gap, the same count;
	// a subscriber on each node hears every event exactly once.
	last := feed(t, p.a)
	if lb := feed(t, p.b); lb != last {
		t.Fatalf("feed on b ends at %d, on a at %d", lb, last)
	}
	waitHeard(t, last, onA, onB)
	// Both serve the one log: each checkpoint comes to the whole feed
	// (the same size and root), whichever kurad wrote the events.
	var notes [2]string
	for i, d := range nodes {
		testwait.For(t, testwait.Default, "the checkpoint of "+d.BaseURL()+" covers every event", func() bool {
			notes[i] = checkpointBody(t, d)
			return strings.Split(notes[i], "\n")[1] == fmt.Sprint(last)
		})
	}
	if a, b := strings.Split(notes[0], "\n")[2], strings.Split(notes[1], "\n")[2]; a != b {
		t.Fatalf("roots differ at size %d: %s on a, %s on b", last, a, b)
	}
	// And that root is the tree of the leaves themselves, rebuilt here
	// from their data: each kurad took up the other's leaves from what the
	// write lock handed it (kura_write_lock), and a wrong frontier would
	// have stored wrong interior hashes both kurads then agree on.
	if got, want := rebuiltRoot(t, p.b, last), strings.Split(notes[0], "\n")[2]; got != want {
		t.Fatalf("the leaves of the log hash to %s; both kurads sign %s", got, want)
	}
	// One more event, written on b, as a barrier: once it is heard,
	// nothing published before it can still arrive a second time.
	mustCall(t, p.b, "POST", "/v1/records", `{"type":"agent.thought","author_id":"agent:bmo","content":{"text":"barrier"}}`, 201)
	waitHeard(t, last+1, onA, onB)

	// Every record in the database came with its record.written event,
	// and no event names a record that is not there: the records written
	// ahead of their jobs (record_batch.go), the duplicates, the batches
	// run again with savepoints after a failed job, all left none alone.
	db, err := sql.Open(store.PGDriverName, p.url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var orphans, dangling, records int
	if err := db.QueryRow(`SELECT count(*) FROM records r WHERE NOT EXISTS
		(SELECT 1 FROM events e WHERE e.type = 'record.written' AND json_extract(e.refs, '$.record_id') = r.id)`).Scan(&orphans); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT count(*) FROM events e WHERE e.type = 'record.written' AND NOT EXISTS
		(SELECT 1 FROM records r WHERE r.id = json_extract(e.refs, '$.record_id'))`).Scan(&dangling); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow("SELECT count(*) FROM records").Scan(&records); err != nil {
		t.Fatal(err)
	}
	if orphans != 0 || dangling != 0 {
		t.Fatalf("%d records without their event, %d events naming no record (of %d records)", orphans, dangling, records)
	}
	// Each kurad counts what the other committed too (it learns of it
	// when it takes the write lock, or from its poller): /v1/info's
	// counts are the database's, whichever kurad is asked.
	var events, ledgers int
	if err := db.QueryRow("SELECT count(*), count(*) FILTER (WHERE type = 'ledger.written') FROM events").Scan(&events, &ledgers); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("records %d, ledgers %d, events %d", records, ledgers, events)
	for _, d := range nodes {
		var got string
		counted := testwait.Until(testwait.Default, func() bool {
			var info struct{ Counts map[string]int64 }
			getJSON(t, d.BaseURL()+"/v1/info", &info)
			got = fmt.Sprintf("records %d, ledgers %d, events %d", info.Counts["records"], info.Counts["ledgers"], info.Counts["events"])
			return got == want
		})
		if !counted {
			t.Fatalf("%s counts %s; the database holds %s", d.BaseURL(), got, want)
		}
	}
}

// waitHeard waits until each subscriber has heard every seq up to last
// exactly once (a repeat fails at once: it cannot be taken back).
func waitHeard(t *testing.T, last int64, hs ...*hearer) {
	t.Helper()
	for i, h := range hs {
		testwait.For(t, testwait.Default, fmt.Sprintf("subscriber %d hears events 1..%d once each", i, last), func() bool {
			ok, why := h.heardAllOnce(last)
			if !ok && strings.Contains(why, "times") && !strings.HasSuffix(why, " 0 times") {
				t.Fatalf("subscriber %d: %s", i, why)
			}
			return ok
		})
	}
}

// race sends one POST from each node at once and returns their statuses.
func race(t *testing.T, nodes [2]*kuradtest.Daemon, req func(j int) (path, body string)) [2]int {
	t.Helper()
	var codes [2]int
	var wg sync.WaitGroup
	start := make(chan struct{})
	for j := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path, body := req(j)
			<-start
			r, err := http.Post(nodes[j].BaseURL()+path, "application/json", strings.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, r.Body)
			r.Body.Close()
			codes[j] = r.StatusCode
		}()
	}
	close(start)
	wg.Wait()
	return codes
}

func oneWinner(codes [2]int) bool {
	return (codes[0] == 200 && codes[1] == 409) || (codes[0] == 409 && codes[1] == 200)
}

// TestScaleOut_OutboxLeaderKilledLosesNoEvent kills (SIGKILL) the kurad
// that publishes the events while writes go on at the other: the other
// takes the outbox lease once it lapses and publishes from the cursor the
// dead one saved, so a subscriber hears every event (some twice: delivery
// is at least once).
func TestScaleOut_OutboxLeaderKilledLosesNoEvent(t *testing.T) {
	bin, err := kuradtest.BuildKurad()
	if err != nil {
		t.Fatal(err)
	}
	url := pgtest.URL(t)
	dirA, dirB := t.TempDir(), t.TempDir()
	key := filepath.Join(dirA, "kurad.key")
	env := []string{"KURA_DATABASE_URL=" + url, "KURA_KEY_FILE=" + key, "KURA_OUTBOX_LEASE=1s", "KURA_NATS_CLUSTER_ADDR=127.0.0.1:0"}
	a := kuradtest.StartBinary(t, bin, dirA, env)
	var info struct {
		NATS struct {
			Cluster struct{ Addr string } `json:"cluster"`
		} `json:"nats"`
		Outbox struct{ Leading bool } `json:"outbox"`
	}
	getJSON(t, a.Base+"/v1/info", &info)
	if !info.Outbox.Leading {
		t.Fatal("the first kurad on the database does not lead the outbox")
	}
	b := kuradtest.StartBinary(t, bin, dirB, append(env, "KURA_NATS_ROUTES=nats-route://"+info.NATS.Cluster.Addr))
	testwait.For(t, testwait.Default, "the NATS route between the kurads", func() bool {
		var i struct {
			NATS struct {
				Cluster struct{ Routes int } `json:"cluster"`
			} `json:"nats"`
		}
		getJSON(t, b.Base+"/v1/info", &i)
		return i.NATS.Cluster.Routes == 1
	})
	getJSON(t, b.Base+"/v1/info", &info)
	if info.Outbox.Leading {
		t.Fatal("both kurads lead the outbox")
	}

	h := hear(t, b.NATS)
	write := func(n int) {
		for i := range n {
			r, err := http.Post(b.Base+"/v1/records", "application/json",
				strings.NewReader(fmt.Sprintf(`{"type":"agent.thought","author_id":"agent:bmo","content":{"n":"%s-%d"}}`, t.Name(), i+n*1000)))
			if err != nil {
				t.Fatal(err)
			}
			r.Body.Close()
			if r.StatusCode != 201 {
				t.Fatalf("write on b: %d", r.StatusCode)
			}
		}
	}
	heardAll := func(last int64) func() bool {
		return func() bool {
			h.mu.Lock()
			defer h.mu.Unlock()
			for s := int64(1); s <= last; s++ {
				if h.seqs[s] == 0 {
					return false
				}
			}
			return true
		}
	}
	// Written on b, published by a across the route.
	write(10)
	testwait.For(t, testwait.Default, "the first events, published by a", heardAll(10))
	a.Kill(t)
	write(15)
	testwait.For(t, 20*time.Second, "every event after the leader died", heardAll(25))
	getJSON(t, b.Base+"/v1/info", &info)
	if !info.Outbox.Leading {
		t.Fatal("b publishes but does not say it leads")
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	r, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	if r.StatusCode != 200 {
		t.Fatalf("GET %s: %d", url, r.StatusCode)
	}
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// rebuiltRoot is the base64 root of the tree of d's first size leaves,
// each hashed from its data (GET /v1/log/leaves).
func rebuiltRoot(t *testing.T, d *kuradtest.Daemon, size int64) string {
	t.Helper()
	var stored memHashes
	for start := int64(0); start < size; start += store.MaxLogLeaves {
		end := min(size, start+store.MaxLogLeaves)
		var page struct {
			Leaves []struct {
				Index int64  `json:"index"`
				Data  []byte `json:"data"`
			} `json:"leaves"`
		}
		getJSON(t, fmt.Sprintf("%s/v1/log/leaves?start=%d&end=%d", d.BaseURL(), start, end), &page)
		if int64(len(page.Leaves)) != end-start {
			t.Fatalf("leaves [%d, %d): %d answered", start, end, len(page.Leaves))
		}
		for _, l := range page.Leaves {
			if l.Index != int64(len(stored.leaves)) || len(l.Data) == 0 {
				t.Fatalf("leaf %d (want %d) without data", l.Index, len(stored.leaves))
			}
			hs, err := tlog.StoredHashes(l.Index, l.Data, &stored)
			if err != nil {
				t.Fatal(err)
			}
			stored.hashes = append(stored.hashes, hs...)
			stored.leaves = append(stored.leaves, l.Data)
		}
	}
	root, err := tlog.TreeHash(size, &stored)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(root[:])
}

// memHashes is a tree's stored hashes in memory, in tlog's order.
type memHashes struct {
	hashes []tlog.Hash
	leaves [][]byte
}

func (m *memHashes) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		if x >= int64(len(m.hashes)) {
			return nil, fmt.Errorf("stored hash %d not yet computed", x)
		}
		out[i] = m.hashes[x]
	}
	return out, nil
}

// checkpointBody is d's current signed checkpoint: origin, size, root, ...
func checkpointBody(t *testing.T, d *kuradtest.Daemon) string {
	t.Helper()
	r, err := http.Get(d.BaseURL() + "/v1/log/checkpoint")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	if r.StatusCode != 200 || strings.Count(string(b), "\n") < 3 {
		t.Fatalf("checkpoint of %s: %d %q", d.BaseURL(), r.StatusCode, b)
	}
	return string(b)
}

// TestScaleOut_WitnessFollowingTheOtherKurad: both kurads of one database
// name a witness that follows kurad a alone. Its cosigned tree runs ahead
// of what b has read of the shared log (b sees a's leaves only under the
// write lock), which is no rollback: b, idle while a takes writes, must
// stay ready and keep accepting writes.
func TestScaleOut_WitnessFollowingTheOtherKurad(t *testing.T) {
	url := pgtest.URL(t)
	key := filepath.Join(t.TempDir(), "kurad.key")
	aAddr, w := followedAddr(t, 10*time.Millisecond)
	node := func(addr string) *kuradtest.Daemon {
		return kuradtest.StartMain(t, kuradtest.Options{Configure: func(c *daemon.Config) {
			c.DatabaseURL, c.KeyFile, c.ReadPool = url, key, 3
			if addr != "" {
				c.HTTPAddr = addr
			}
			c.Witnesses, c.WitnessPoll = []string{"http://" + w.Addr()}, 100*time.Millisecond
		}})
	}
	a, b := node(aAddr), node("")
	logState := func(d *kuradtest.Daemon) string {
		_, info := call(t, d, "GET", "/v1/info", "")
		l, _ := info["log"].(map[string]any)
		s, _ := l["state"].(string)
		return s
	}
	for _, d := range []*kuradtest.Daemon{a, b} {
		mustCall(t, d, "POST", "/v1/records", `{"type":"agent.thought","author_id":"agent:bmo","content":{"first_on":"`+d.BaseURL()+`"}}`, 201)
		testwait.For(t, testwait.Default, "the log of "+d.BaseURL()+" witnessed", func() bool { return logState(d) == "ok" })
	}
	// Writes on a for two seconds; b is asked about its log meanwhile.
	end := time.Now().Add(2 * time.Second)
	for i := 0; time.Now().Before(end); i++ {
		mustCall(t, a, "POST", "/v1/records", fmt.Sprintf(`{"type":"agent.thought","author_id":"agent:bmo","content":{"on_a":%d}}`, i), 201)
		if s := logState(b); s != "ok" {
			t.Fatalf("b's log state %q while the witness follows a: %v", s, call2(t, b))
		}
	}
	mustCall(t, b, "POST", "/v1/records", `{"type":"agent.thought","author_id":"agent:bmo","content":{"text":"b still writes"}}`, 201)
	if st, _ := call(t, b, "GET", "/readyz", ""); st != 200 {
		t.Fatalf("b /readyz %d, want 200", st)
	}
}

// followedAddr reserves an address for a kurad to listen on and runs a
// witness that follows the kurad there (its HTTP address), polling every
// poll: a kurad names its witness when it starts, so the witness comes
// first, with the kurad's port known.
func followedAddr(t *testing.T, poll time.Duration) (string, *witness.Witness) {
	t.Helper()
	addr := kuradtest.FreeAddr(t)
	w, err := witness.New(witness.Config{StateDir: t.TempDir(), Listen: "127.0.0.1:0",
		Logs: []witness.Log{{URL: "http://" + addr}}, Poll: poll})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return addr, w
}

// call2 is b's /v1/info log section, for a failure message.
func call2(t *testing.T, d *kuradtest.Daemon) any {
	_, info := call(t, d, "GET", "/v1/info", "")
	return info["log"]
}

// TestScaleOut_LogOffThenOn: a kurad on PostgreSQL with the Merkle log off
// (a benchmark's baseline) takes the write lock without reading the log
// (kura_write_lock's with_log false) and still numbers its events with no
// gap and counts them; the next start with the log on appends every event
// it missed, and the tree is the one the leaves' data make.
func TestScaleOut_LogOffThenOn(t *testing.T) {
	url := pgtest.URL(t)
	key := filepath.Join(t.TempDir(), "kurad.key")
	start := func(off bool) *kuradtest.Daemon {
		return kuradtest.StartMain(t, kuradtest.Options{Configure: func(c *daemon.Config) {
			c.DatabaseURL, c.KeyFile, c.ReadPool, c.LogOff = url, key, 3, off
		}})
	}
	off := start(true)
	for i := range 5 {
		mustCall(t, off, "POST", "/v1/records", fmt.Sprintf(`{"type":"agent.thought","author_id":"agent:bmo","content":{"text":"log off %d"}}`, i), 201)
	}
	last := feed(t, off)
	var info struct{ Counts map[string]int64 }
	getJSON(t, off.BaseURL()+"/v1/info", &info)
	if info.Counts["records"] != 5 || info.Counts["events"] != last {
		t.Fatalf("with the log off: counts %v, feed ends at %d; want 5 records and every event", info.Counts, last)
	}
	if err := off.Close(t.Context()); err != nil {
		t.Fatal(err)
	}

	on := start(false)
	mustCall(t, on, "POST", "/v1/records", `{"type":"agent.thought","author_id":"agent:bmo","content":{"text":"log on"}}`, 201)
	last = feed(t, on)
	note := checkpointBody(t, on)
	if size := strings.Split(note, "\n")[1]; size != fmt.Sprint(last) {
		t.Fatalf("checkpoint of size %s after the log came back on; the feed ends at %d", size, last)
	}
	if got, want := rebuiltRoot(t, on, last), strings.Split(note, "\n")[2]; got != want {
		t.Fatalf("the leaves hash to %s; the kurad signs %s", got, want)
	}
}
