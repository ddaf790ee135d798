package reliability_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/testwait"
	"github.com/kura-memory/kura/kurahash"
	"github.com/nats-io/nats.go"
)

// book is what the clients were told: every acknowledged write, and every
// write sent whose answer never came (unknown: it may or may not be there,
// but never half).
type book struct {
	mu       sync.Mutex
	records  map[string]string // acked record id → content_hash
	batches  map[string]*batch // tag → batch sent
	opened   map[string]bool   // acked turn opens
	appended map[string][]string
	closed   map[string]bool
	nodes    map[string]string // acked node id → summary
	cycle    []string          // acked record ids of the current cycle (spot-checked over HTTP)

	seen     map[int64]bool // event seqs a consumer has had, by NATS or catch-up
	heard    map[int64]pointer
	natsN    int
	catchupN int
}

type batch struct {
	n     int
	acked bool
}

type pointer struct {
	Seq  int64  `json:"seq"`
	Type string `json:"type"`
	raw  map[string]any
}

func newBook() *book {
	return &book{records: map[string]string{}, batches: map[string]*batch{}, opened: map[string]bool{},
		appended: map[string][]string{}, closed: map[string]bool{}, nodes: map[string]string{},
		seen: map[int64]bool{}, heard: map[int64]pointer{}}
}

// load is one cycle's client side: writers of every kind until ctx ends.
type load struct {
	t     *testing.T
	base  string
	cycle int
	b     *book
}

// fail reports an answer a correct client must never get. Transport errors
// are expected (the kill) and end the worker.
func (l *load) check(what string, code int, raw []byte, err error, want ...int) bool {
	if err != nil || code == 0 {
		return false
	}
	for _, w := range want {
		if code == w {
			return true
		}
	}
	l.t.Errorf("cycle %d: %s answered %d: %s", l.cycle, what, code, raw)
	return false
}

type recordOut struct {
	ID          string `json:"id"`
	ContentHash string `json:"content_hash"`
}

func (l *load) records(ctx context.Context, w int) {
	for i := 0; ctx.Err() == nil; i++ {
		body := fmt.Sprintf(`{"type":"agent.thought","content":{"k":"single","c":%d,"w":%d,"i":%d,"r":%d},"author_id":"agent:rel"}`, l.cycle, w, i, rand.Int32())
		var out recordOut
		code, raw, err := call(ctx, "POST", l.base+"/v1/records", body, &out)
		if !l.check("POST /v1/records", code, raw, err, 201) {
			return
		}
		l.b.mu.Lock()
		l.b.records[out.ID] = out.ContentHash
		l.b.cycle = append(l.b.cycle, out.ID)
		l.b.mu.Unlock()
	}
}

func (l *load) batches(ctx context.Context, w int) {
	for i := 0; ctx.Err() == nil; i++ {
		n := 2 + rand.IntN(40)
		tag := fmt.Sprintf("c%d-w%d-b%d", l.cycle, w, i)
		var recs []string
		for j := range n {
			recs = append(recs, fmt.Sprintf(`{"type":"agent.thought","content":{"batch":%q,"j":%d,"r":%d},"author_id":"agent:rel"}`, tag, j, rand.Int32()))
		}
		l.b.mu.Lock()
		l.b.batches[tag] = &batch{n: n}
		l.b.mu.Unlock()
		var out struct{ Records []recordOut }
		code, raw, err := call(ctx, "POST", l.base+"/v1/records/batch", `{"records":[`+strings.Join(recs, ",")+`]}`, &out)
		if !l.check("POST /v1/records/batch", code, raw, err, 201) {
			return
		}
		if len(out.Records) != n {
			l.t.Errorf("batch %s: %d records back, sent %d", tag, len(out.Records), n)
		}
		l.b.mu.Lock()
		l.b.batches[tag].acked = true
		for _, r := range out.Records {
			l.b.records[r.ID] = r.ContentHash
		}
		l.b.mu.Unlock()
	}
}

func (l *load) turns(ctx context.Context, w int) {
	var sess struct{ ID string }
	code, raw, err := call(ctx, "POST", l.base+"/v1/sessions", fmt.Sprintf(`{"project":"rel","name":"c%d-w%d"}`, l.cycle, w), &sess)
	if !l.check("POST /v1/sessions", code, raw, err, 201) {
		return
	}
	for i := 0; ctx.Err() == nil; i++ {
		var turn struct{ ID string }
		body := fmt.Sprintf(`{"instruction":{"type":"task.instruction","content":{"c":%d,"w":%d,"i":%d},"author_id":"user:rel"}}`, l.cycle, w, i)
		code, raw, err := call(ctx, "POST", l.base+"/v1/sessions/"+sess.ID+"/turns", body, &turn)
		if !l.check("open turn", code, raw, err, 201) {
			return
		}
		l.b.mu.Lock()
		l.b.opened[turn.ID] = true
		l.b.mu.Unlock()
		for a := range 2 {
			var recs []string
			for j := range 3 {
				typ := "agent.thought"
				if a == 1 && j == 2 {
					typ = "memory.fact" // extracted into a memory node at close
				}
				recs = append(recs, fmt.Sprintf(`{"type":%q,"content":{"turn":%q,"a":%d,"j":%d,"r":%d},"author_id":"agent:rel"}`, typ, turn.ID, a, j, rand.Int32()))
			}
			var out struct{ Records []recordOut }
			code, raw, err := call(ctx, "POST", l.base+"/v1/turns/"+turn.ID+"/records", `{"records":[`+strings.Join(recs, ",")+`]}`, &out)
			if !l.check("append to turn", code, raw, err, 200) {
				return
			}
			l.b.mu.Lock()
			for _, r := range out.Records {
				l.b.records[r.ID] = r.ContentHash
				l.b.appended[turn.ID] = append(l.b.appended[turn.ID], r.ID)
			}
			l.b.mu.Unlock()
		}
		var closed struct {
			State          string `json:"state"`
			OutputLedgerID string `json:"output_ledger_id"`
		}
		code, raw, err = call(ctx, "POST", l.base+"/v1/turns/"+turn.ID+"/close", `{"status":"complete"}`, &closed)
		if !l.check("close turn", code, raw, err, 200) {
			return
		}
		if closed.State != "complete" || closed.OutputLedgerID == "" {
			l.t.Errorf("close answered %s", raw)
		}
		l.b.mu.Lock()
		l.b.closed[turn.ID] = true
		l.b.mu.Unlock()
	}
}

func (l *load) nodes(ctx context.Context, w int) {
	for i := 0; ctx.Err() == nil; i++ {
		id := fmt.Sprintf("c%d-w%d-n%d", l.cycle, w, i)
		summary := fmt.Sprintf("reliability note %d", rand.Int32())
		var out struct{ Ref string }
		code, raw, err := call(ctx, "POST", l.base+"/v1/scopes/rel/memory/nodes", map[string]any{"kind": "note", "id": id, "summary": summary}, &out)
		if !l.check("POST memory node", code, raw, err, 201) {
			return
		}
		l.b.mu.Lock()
		l.b.nodes[id] = summary
		l.b.mu.Unlock()
	}
}

// subscribe listens on the doorbell like a consumer on the host would.
func (b *book) subscribe(t *testing.T, natsAddr string) *nats.Conn {
	nc, err := nats.Connect("nats://"+natsAddr, nats.MaxReconnects(0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Subscribe("oclaw.v1.>", func(m *nats.Msg) {
		if strings.HasPrefix(m.Subject, "oclaw.v1._log.") {
			return // the log's checkpoints: no event, no seq
		}
		var p pointer
		if err := json.Unmarshal(m.Data, &p); err != nil || p.Seq == 0 {
			t.Errorf("doorbell payload %s: %v", m.Data, err)
			return
		}
		json.Unmarshal(m.Data, &p.raw)
		b.mu.Lock()
		if !b.seen[p.Seq] {
			b.natsN++
		}
		b.seen[p.Seq] = true
		b.heard[p.Seq] = p
		b.mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	return nc
}

// TestCrash_SIGKILLUnderMixedLoad kills kurad at a random moment of a mixed
// write load (single records, batches, turns opened, appended and closed,
// memory nodes), cycle after cycle on one data directory, and after every
// kill checks what is on disk and, after the restart, what kurad serves.
//
// Not parallel: its kill lands at a moment of its own load; other tests
// sharing the machine would thin that load out.
func TestCrash_SIGKILLUnderMixedLoad(t *testing.T) {
	cycles := envInt("KURA_RELIABILITY_CYCLES", crashCycles)
	dataDir := t.TempDir()
	b := newBook()
	p := start(t, dataDir)
	var checks, maxKillMS, minKillMS int
	minKillMS = 1 << 30
	started := time.Now()
	for c := 1; c <= cycles; c++ {
		nc := b.subscribe(t, p.NATS)
		l := &load{t: t, base: p.Base, cycle: c, b: b}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for w := range 2 {
			wg.Go(func() { l.records(ctx, w) })
			wg.Go(func() { l.batches(ctx, w) })
			wg.Go(func() { l.turns(ctx, w) })
			wg.Go(func() { l.nodes(ctx, w) })
		}
		killAfter := 300 + rand.IntN(900)
		maxKillMS, minKillMS = max(maxKillMS, killAfter), min(minKillMS, killAfter)
		// The kill lands at a random moment of the load, not on any
		// condition: letting time pass is the point here.
		time.Sleep(time.Duration(killAfter) * time.Millisecond)
		p.Kill(t)
		cancel()
		wg.Wait()
		nc.Close()
		if t.Failed() {
			t.Fatalf("cycle %d: wrong answers under load\n%s", c, p.Log)
		}

		lastSeq, n := checkDisk(t, dataDir, b, c)
		checks += n

		p = start(t, dataDir)
		checkServed(t, p, b, c, lastSeq)
		b.mu.Lock()
		b.cycle = b.cycle[:0]
		b.heard = map[int64]pointer{}
		b.mu.Unlock()
		if t.Failed() {
			t.Fatalf("cycle %d failed\n%s", c, p.Log)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	nBatches := 0
	for _, bt := range b.batches {
		if bt.acked {
			nBatches++
		}
	}
	t.Logf("%d SIGKILL/restart cycles in %s (kill after %d..%d ms of load): %d acknowledged records (%d in acknowledged batches of %d sent), %d turns opened, %d closed, %d memory nodes; %d acknowledged-write checks, 0 lost; %d events, %d heard on NATS, %d by catch-up",
		cycles, time.Since(started).Round(time.Second), minKillMS, maxKillMS, len(b.records), nBatches, len(b.batches),
		len(b.opened), len(b.closed), len(b.nodes), checks, len(b.seen), b.natsN, b.catchupN)
}

// checkDisk reads the database kurad left behind (kurad is dead): the
// file is sound, every acknowledged write is there with its content hash,
// and nothing is half there. It returns the last committed seq and the
// number of acknowledged writes it checked.
func checkDisk(t *testing.T, dataDir string, b *book, cycle int) (int64, int) {
	db := openRO(t, dataDir)
	defer db.Close()
	integrityCheck(t, db)
	b.mu.Lock()
	defer b.mu.Unlock()
	checks := 0

	type row struct{ hash, content string }
	have := map[string]row{}
	rows, err := db.Query("SELECT id, content_hash, coalesce(content, '') FROM records")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		var r row
		rows.Scan(&id, &r.hash, &r.content)
		have[id] = r
	}
	rows.Close()
	for id, hash := range b.records {
		checks++
		r, ok := have[id]
		if !ok {
			t.Errorf("cycle %d: acknowledged record %s is missing", cycle, id)
			continue
		}
		got, _, err := kurahash.ContentHash([]byte(r.content))
		if r.hash != hash || err != nil || got != hash {
			t.Errorf("cycle %d: record %s: acknowledged content_hash %s, stored %s, content hashes to %s", cycle, id, hash, r.hash, got)
		}
	}

	counts := map[string]int{}
	rows, err = db.Query("SELECT json_extract(content, '$.batch') AS tag, count(*) FROM records WHERE tag IS NOT NULL GROUP BY tag")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var tag string
		var n int
		rows.Scan(&tag, &n)
		counts[tag] = n
	}
	rows.Close()
	for tag, bt := range b.batches {
		got := counts[tag]
		switch {
		case bt.acked && got != bt.n:
			t.Errorf("cycle %d: acknowledged batch %s: %d of %d records on disk", cycle, tag, got, bt.n)
		case !bt.acked && got != 0 && got != bt.n:
			t.Errorf("cycle %d: unacknowledged batch %s is half there: %d of %d records", cycle, tag, got, bt.n)
		}
		if bt.acked {
			checks++
		}
	}

	type turnRow struct {
		state  string
		output sql.NullString
	}
	turns := map[string]turnRow{}
	rows, err = db.Query("SELECT id, state, output_ledger_id FROM turns")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		var tr turnRow
		rows.Scan(&id, &tr.state, &tr.output)
		turns[id] = tr
		if (tr.state == "open") == tr.output.Valid {
			t.Errorf("cycle %d: turn %s is %s with output ledger %v", cycle, id, tr.state, tr.output)
		}
	}
	rows.Close()
	var stray int
	db.QueryRow(`SELECT count(*) FROM turn_output o JOIN turns t ON t.id = o.turn_id WHERE t.output_ledger_id IS NOT NULL
		AND NOT EXISTS (SELECT 1 FROM ledger_records lr WHERE lr.ledger_id = t.output_ledger_id AND lr.record_id = o.record_id)`).Scan(&stray)
	if stray != 0 {
		t.Errorf("cycle %d: %d output records of closed turns are missing from their output ledgers", cycle, stray)
	}
	db.QueryRow(`SELECT count(*) FROM sessions s WHERE s.head_ledger_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM ledgers l WHERE l.id = s.head_ledger_id)`).Scan(&stray)
	if stray != 0 {
		t.Errorf("cycle %d: %d sessions point at a missing head", cycle, stray)
	}
	output := map[string]map[string]bool{}
	rows, err = db.Query("SELECT turn_id, record_id FROM turn_output")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var tid, rid string
		rows.Scan(&tid, &rid)
		if output[tid] == nil {
			output[tid] = map[string]bool{}
		}
		output[tid][rid] = true
	}
	rows.Close()
	for id := range b.opened {
		checks++
		if _, ok := turns[id]; !ok {
			t.Errorf("cycle %d: acknowledged turn %s is missing", cycle, id)
		}
	}
	for id, recs := range b.appended {
		for _, r := range recs {
			checks++
			if !output[id][r] {
				t.Errorf("cycle %d: acknowledged append of record %s to turn %s is missing", cycle, r, id)
			}
		}
	}
	for id := range b.closed {
		checks++
		if turns[id].state != "complete" {
			t.Errorf("cycle %d: acknowledged close of turn %s: state %q", cycle, id, turns[id].state)
		}
	}

	summaries := map[string]string{}
	rows, err = db.Query("SELECT n.id, n.summary FROM nodes n JOIN scopes s ON s.sid = n.sid WHERE s.name = 'rel' AND n.kind = 'note'")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, s string
		rows.Scan(&id, &s)
		summaries[id] = s
	}
	rows.Close()
	for id, s := range b.nodes {
		checks++
		if summaries[id] != s {
			t.Errorf("cycle %d: acknowledged node note:%s: summary %q, want %q", cycle, id, summaries[id], s)
		}
	}

	// Whatever the doorbell rang before the kill was committed: the
	// publisher never runs ahead of the commit.
	for seq, p := range b.heard {
		var typ, refs string
		if err := db.QueryRow("SELECT type, refs FROM events WHERE seq = ?", seq).Scan(&typ, &refs); err != nil {
			t.Errorf("cycle %d: NATS carried seq %d, which is not committed: %v", cycle, seq, err)
			continue
		}
		var m map[string]string
		json.Unmarshal([]byte(refs), &m)
		for k, v := range m {
			if p.raw[k] != v || typ != p.Type {
				t.Errorf("cycle %d: seq %d was published as %v, committed as %s %s", cycle, seq, p.raw, typ, refs)
				break
			}
		}
	}
	var lastSeq int64
	db.QueryRow("SELECT coalesce(max(seq), 0) FROM events").Scan(&lastSeq)
	return lastSeq, checks
}

// checkServed checks the restarted kurad: the outbox catches up to the
// last committed event, a consumer that missed events on NATS gets every
// one from /v1/events, every session verifies, and acknowledged records
// read back with their hashes.
func checkServed(t *testing.T, p *proc, b *book, cycle int, lastSeq int64) {
	var info struct {
		LastEventSeq int64 `json:"last_event_seq"`
		Outbox       struct {
			PublishedSeq int64 `json:"published_seq"`
		} `json:"outbox"`
	}
	testwait.Until(20*time.Second, func() bool {
		mustCall(t, "GET", p.Base+"/v1/info", nil, 200, &info)
		return info.Outbox.PublishedSeq >= lastSeq
	})
	if info.LastEventSeq != lastSeq || info.Outbox.PublishedSeq < lastSeq {
		t.Errorf("cycle %d: after restart last_event_seq %d, published_seq %d; on disk %d", cycle, info.LastEventSeq, info.Outbox.PublishedSeq, lastSeq)
	}

	// A consumer resumes from the end of what it has without a gap.
	b.mu.Lock()
	after := int64(0)
	for b.seen[after+1] {
		after++
	}
	b.mu.Unlock()
	for after < lastSeq {
		var page struct {
			Events []struct {
				Seq int64 `json:"seq"`
			} `json:"events"`
		}
		mustCall(t, "GET", fmt.Sprintf("%s/v1/events?after=%d&limit=1000", p.Base, after), nil, 200, &page)
		if len(page.Events) == 0 {
			t.Errorf("cycle %d: /v1/events after %d is empty, last seq %d", cycle, after, lastSeq)
			break
		}
		b.mu.Lock()
		for _, e := range page.Events {
			if e.Seq != after+1 && e.Seq <= lastSeq {
				t.Errorf("cycle %d: /v1/events jumps from %d to %d", cycle, after, e.Seq)
			}
			if !b.seen[e.Seq] {
				b.catchupN++
			}
			b.seen[e.Seq] = true
			after = e.Seq
		}
		b.mu.Unlock()
	}
	b.mu.Lock()
	for s := int64(1); s <= lastSeq; s++ {
		if !b.seen[s] {
			t.Errorf("cycle %d: committed event %d never reached the consumer", cycle, s)
			break
		}
	}
	ids := append([]string(nil), b.cycle...)
	want := make([]string, len(ids))
	for i, id := range ids {
		want[i] = b.records[id]
	}
	b.mu.Unlock()

	var sessions struct {
		Sessions []struct{ ID string } `json:"sessions"`
		Next     string                `json:"next_cursor"`
	}
	n := 0
	for cursor := ""; ; cursor = sessions.Next {
		mustCall(t, "GET", p.Base+"/v1/sessions?limit=1000&cursor="+cursor, nil, 200, &sessions)
		for _, s := range sessions.Sessions {
			var v struct {
				OK bool `json:"ok"`
			}
			raw := mustCall(t, "GET", p.Base+"/v1/sessions/"+s.ID+"/verify", nil, 200, &v)
			if !v.OK {
				t.Errorf("cycle %d: session %s does not verify: %s", cycle, s.ID, raw)
			}
			n++
		}
		if sessions.Next == "" {
			break
		}
	}
	for i, id := range ids {
		var r recordOut
		mustCall(t, "GET", p.Base+"/v1/records/"+id, nil, 200, &r)
		if r.ContentHash != want[i] {
			t.Errorf("cycle %d: record %s served with content_hash %s, acknowledged %s", cycle, id, r.ContentHash, want[i])
		}
	}
	if cycle == 1 || testing.Verbose() {
		t.Logf("cycle %d: last seq %d, %d sessions verified, %d records of the cycle read back", cycle, lastSeq, n, len(ids))
	}
}
