package store_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/sqlitetest"
	"github.com/kura-memory/kura/internal/store"
	"github.com/kura-memory/kura/internal/testwait"
	"github.com/kura-memory/kura/kurahash"
)

// clock is the store's time source in tests (Config.Now). Unpinned it runs
// with the wall clock plus an offset that advance moves forward, so a test
// makes time pass without sleeping and everything else behaves as in
// production; set pins it at an instant, for as_of tests.
type clock struct {
	mu     sync.Mutex
	pinned time.Time
	off    time.Duration
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.pinned.IsZero() {
		return c.pinned.Add(c.off)
	}
	return time.Now().Add(c.off)
}

func (c *clock) set(t time.Time) { c.mu.Lock(); c.pinned, c.off = t, 0; c.mu.Unlock() }

func (c *clock) advance(d time.Duration) { c.mu.Lock(); c.off += d; c.mu.Unlock() }

// MustOpenStore opens a store on a fresh file in t.TempDir, on a fake clock
// that runs with the wall clock (mustOpenClocked hands it out).
func MustOpenStore(tb testing.TB) *store.DB {
	tb.Helper()
	db, _ := mustOpenClocked(tb)
	return db
}

// mustOpenClocked is MustOpenStore with the clock, for tests that move time.
func mustOpenClocked(tb testing.TB) (*store.DB, *clock) {
	tb.Helper()
	c := &clock{}
	return openAt(tb, sqlitetest.File(tb), nil, c), c
}

func mustOpenAt(tb testing.TB, path string, key ed25519.PrivateKey) *store.DB {
	tb.Helper()
	return openAt(tb, path, key, &clock{})
}

func openAt(tb testing.TB, path string, key ed25519.PrivateKey, c *clock) *store.DB {
	tb.Helper()
	return openConfig(tb, store.Config{Path: path, Signer: key, Now: c.now})
}

// mustOpenConfig is MustOpenStore with the settings of cfg (its test
// knobs): a file in a temp dir, a new key and a fake clock where cfg has
// none.
func mustOpenConfig(tb testing.TB, cfg store.Config) *store.DB {
	tb.Helper()
	if cfg.Path == "" {
		cfg.Path = sqlitetest.File(tb)
	}
	if cfg.Now == nil {
		cfg.Now = (&clock{}).now
	}
	return openConfig(tb, cfg)
}

func openConfig(tb testing.TB, cfg store.Config) *store.DB {
	tb.Helper()
	if cfg.Signer == nil {
		_, cfg.Signer, _ = ed25519.GenerateKey(rand.Reader)
	}
	db := store.New(cfg)
	if err := db.Open(context.Background()); err != nil {
		tb.Fatalf("open store: %v", err)
	}
	tb.Cleanup(func() { db.Close(context.Background()) })
	return db
}

// rawDB opens the database file the way an attacker with file access would.
func rawDB(tb testing.TB, path string) *sql.DB {
	tb.Helper()
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { raw.Close() })
	return raw
}

func thought(i int) kura.RecordInput {
	return kura.RecordInput{Type: "agent.thought", Content: json.RawMessage(fmt.Sprintf(`{"text":"thought %d"}`, i)), AuthorID: "agent:bmo"}
}

func mustRecords(tb testing.TB, db *store.DB, n int) []kura.Record {
	tb.Helper()
	ins := make([]kura.RecordInput, n)
	for i := range ins {
		ins[i] = thought(i)
	}
	recs, err := db.CreateRecords(context.Background(), ins)
	if err != nil {
		tb.Fatal(err)
	}
	return recs
}

func ids(recs []kura.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.ID
	}
	return out
}

func TestStore_RecordHashesAreRecomputable(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	r, err := db.CreateRecord(context.Background(), &kura.RecordInput{Type: "agent.thought",
		Content: json.RawMessage(`{"text": "REST feels clean"}`), AuthorID: "agent:bmo",
		Metadata: map[string]string{"project_id": "hashi", "trace_id": "t-1"}})
	if err != nil {
		t.Fatal(err)
	}
	// The vector in shared/vectors/hashes.json for the same type, content and author.
	if want := "af2150a63edf5d82a3b1a55322212bc5397a6749feb9b4a90e83e186a1ede70a"; r.Hash != want {
		t.Errorf("hash: got %s, want %s", r.Hash, want)
	}
	ch, _, _ := kurahash.ContentHash(r.Content)
	if ch != r.ContentHash {
		t.Errorf("content_hash: got %s, recomputed %s", r.ContentHash, ch)
	}
	if s := kurahash.Seal(r.Hash, kurahash.MetadataJSON(r.Metadata), r.CreatedAt); s != r.Seal {
		t.Errorf("seal: got %s, recomputed %s", r.Seal, s)
	}
	if len(r.CreatedAt) != len("2026-11-21T09:00:00.120000000Z") {
		t.Errorf("created_at %q does not have nine fractional digits", r.CreatedAt)
	}
}

func TestStore_Dedup(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	in := thought(1)
	a, err := db.CreateRecord(ctx, &in)
	if err != nil {
		t.Fatal(err)
	}
	// Same content written with other whitespace and key order is the same record.
	in2 := kura.RecordInput{Type: "agent.thought", Content: json.RawMessage(`{ "text" : "thought 1" }`), AuthorID: "agent:bmo"}
	b, err := db.CreateRecord(ctx, &in2)
	if err != nil {
		t.Fatal(err)
	}
	if !b.Deduplicated || b.ID != a.ID {
		t.Fatalf("got id %s dedup %v, want id %s dedup true", b.ID, b.Deduplicated, a.ID)
	}
	if got := db.Counts()["records"]; got != 1 {
		t.Errorf("records: got %d, want 1", got)
	}
	if got := db.LastEventSeq(); got != 1 {
		t.Errorf("events: got %d, want 1 (a duplicate writes no event)", got)
	}
}

func TestStore_BatchIsAllOrNothing(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	mustRecords(t, db, 2)
	before := db.Counts()
	ins := []kura.RecordInput{thought(10), thought(11), {Type: "agent.thought", Content: json.RawMessage(`{"a":1,"a":2}`), AuthorID: "agent:bmo"}}
	if _, err := db.CreateRecords(ctx, ins); !kura.IsCode(err, kura.EInvalid) {
		t.Fatalf("got %v, want invalid_argument", err)
	}
	// A failure inside the transaction (a missing parent after valid inserts)
	// rolls back everything the job wrote.
	err := db.Update(ctx, func(tx *store.Tx) error {
		for i := 20; i < 25; i++ {
			p, err := db.PrepareRecord(&[]kura.RecordInput{thought(i)}[0], "")
			if err != nil {
				return err
			}
			if _, err := tx.InsertRecord(p); err != nil {
				return err
			}
		}
		return kura.Errorf(kura.EConflict, "injected failure")
	})
	if !kura.IsCode(err, kura.EConflict) {
		t.Fatalf("got %v, want the injected conflict", err)
	}
	after := db.Counts()
	for k := range before {
		if before[k] != after[k] {
			t.Errorf("%s: got %d after failed writes, want %d", k, after[k], before[k])
		}
	}
	recs, _, err := db.ListRecords(ctx, kura.RecordFilter{Limit: 100})
	if err != nil || len(recs) != 2 {
		t.Fatalf("listing after failed writes: %d records, err %v; want 2", len(recs), err)
	}
}

func TestStore_GroupCommit(t *testing.T) {
	t.Parallel()
	// The sweeper's first pass (expired turns, old idempotency keys) is a
	// job of its own, a second after Open: keep it out of the count.
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	db := store.New(store.Config{Path: sqlitetest.File(t), Signer: key, SweepInterval: time.Hour})
	if err := db.Open(context.Background()); err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { db.Close(context.Background()) })
	ctx := context.Background()
	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			in := thought(i)
			if _, err := db.CreateRecord(ctx, &in); err != nil {
				errs <- err
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st := db.Stats()
	if st.Jobs.Load() != n {
		t.Fatalf("jobs: got %d, want %d", st.Jobs.Load(), n)
	}
	if st.Transactions.Load() >= n {
		t.Errorf("transactions: got %d for %d concurrent writes, want fewer (group commit)", st.Transactions.Load(), n)
	}
	if got := db.Counts()["records"]; got != n {
		t.Errorf("records: got %d, want %d", got, n)
	}
	// Seqs are dense and in commit order.
	if db.LastEventSeq() != n {
		t.Errorf("last seq: got %d, want %d", db.LastEventSeq(), n)
	}
}

func TestStore_ListRecordsFiltersAndPages(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	recs := mustRecords(t, db, 25)
	other, err := db.CreateRecord(ctx, &kura.RecordInput{Type: "sys.error", Content: json.RawMessage(`"x"`), AuthorID: "sys:kurad"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	after := ""
	for pages := 0; pages < 10; pages++ {
		page, next, err := db.ListRecords(ctx, kura.RecordFilter{Type: "agent.thought", Limit: 10, After: after})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ids(page)...)
		if next == "" {
			break
		}
		after = next
	}
	if strings.Join(got, ",") != strings.Join(ids(recs), ",") {
		t.Fatalf("paged listing: got %d ids, want the %d thoughts in order", len(got), len(recs))
	}
	page, _, err := db.ListRecords(ctx, kura.RecordFilter{AuthorID: "sys:kurad", Limit: 10})
	if err != nil || len(page) != 1 || page[0].ID != other.ID {
		t.Fatalf("author filter: got %v %v", page, err)
	}
	page, _, err = db.ListRecords(ctx, kura.RecordFilter{Since: other.CreatedAt, Limit: 100})
	if err != nil || len(page) != 1 {
		t.Fatalf("since filter: got %d records, err %v; want 1", len(page), err)
	}
}

func TestStore_LedgerVerifyAndProof(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	recs := mustRecords(t, db, 7)
	parent, err := db.CreateLedger(ctx, &kura.LedgerInput{Label: "ctx", RecordIDs: ids(recs[:3])})
	if err != nil {
		t.Fatal(err)
	}
	l, err := db.CreateLedger(ctx, &kura.LedgerInput{Label: "out", ParentIDs: []string{parent.ID}, RecordIDs: append(ids(recs), recs[0].ID)})
	if err != nil {
		t.Fatal(err)
	}
	// The client-side recomputation from the API's own values.
	seals := make([]string, 0, len(recs)+1)
	for _, r := range append(recs, recs[0]) {
		seals = append(seals, r.Seal)
	}
	root, _ := kurahash.MerkleRootHex(seals)
	if root != l.RootHash {
		t.Fatalf("root: got %s, recomputed %s", l.RootHash, root)
	}
	if h := kurahash.LedgerHash(root, []string{parent.Hash}, "out", l.CreatedAt); h != l.Hash {
		t.Fatalf("ledger hash: got %s, recomputed %s", l.Hash, h)
	}
	v, err := db.VerifyLedger(ctx, l.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !v.OK || v.RecordsChecked != 8 || !v.SignatureOK {
		t.Fatalf("verify: %+v", v)
	}
	p, err := db.Proof(ctx, l.ID, recs[4].ID)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := kurahash.DecodeHash(recs[4].Seal)
	rootB, _ := kurahash.DecodeHash(p.RootHash)
	path := make([][32]byte, len(p.AuditPath))
	for i, h := range p.AuditPath {
		path[i], _ = kurahash.DecodeHash(h)
	}
	if !kurahash.VerifyInclusion(leaf, p.LeafIndex, p.TreeSize, path, rootB) {
		t.Fatalf("proof %+v does not verify", p)
	}
	d, err := db.Diff(ctx, parent.ID, l.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d.Common != 3 || len(d.Added) != 4 || len(d.Removed) != 0 {
		t.Fatalf("diff: %+v", d)
	}
	if _, err := db.CreateLedger(ctx, &kura.LedgerInput{RecordIDs: []string{"01a1fdca-0000-7000-8000-000000000000"}}); !kura.IsCode(err, kura.EInvalid) {
		t.Fatalf("missing record: got %v, want invalid_argument", err)
	}
}

// TestStore_VerifyFindsFileEdits makes each edit an attacker with write
// access to the SQLite file might make and checks that verify names it.
func TestStore_VerifyFindsFileEdits(t *testing.T) {
	t.Parallel()
	type edit struct {
		name      string
		sql       func(l *kura.Ledger, recs []kura.Record) []string
		wantField string
		wantPos   int // -1: no position expected
	}
	edits := []edit{
		{"content changed", func(l *kura.Ledger, r []kura.Record) []string {
			return []string{fmt.Sprintf(`UPDATE records SET content = '{"text":"forged"}' WHERE id = '%s'`, r[2].ID)}
		}, "content_hash", 2},
		{"metadata changed", func(l *kura.Ledger, r []kura.Record) []string {
			return []string{fmt.Sprintf(`UPDATE records SET metadata = '{"label":"x"}' WHERE id = '%s'`, r[1].ID)}
		}, "seal", 1},
		{"created_at changed", func(l *kura.Ledger, r []kura.Record) []string {
			return []string{fmt.Sprintf(`UPDATE records SET created_at = '2020-01-01T00:00:00.000000000Z' WHERE id = '%s'`, r[3].ID)}
		}, "seal", 3},
		{"record removed from the middle", func(l *kura.Ledger, r []kura.Record) []string {
			return []string{fmt.Sprintf(`DELETE FROM ledger_records WHERE ledger_id = '%s' AND pos = 2`, l.ID)}
		}, "position", 2},
		{"two records swapped", func(l *kura.Ledger, r []kura.Record) []string {
			return []string{
				fmt.Sprintf(`UPDATE ledger_records SET record_id = '%s' WHERE ledger_id = '%s' AND pos = 1`, r[3].ID, l.ID),
				fmt.Sprintf(`UPDATE ledger_records SET record_id = '%s' WHERE ledger_id = '%s' AND pos = 3`, r[1].ID, l.ID),
			}
		}, "leaf", 1},
		{"forged record inserted", func(l *kura.Ledger, r []kura.Record) []string {
			return []string{
				`INSERT INTO records(id, hash, content_hash, seal, type, content, author_id, metadata, created_at) VALUES('01a1fdca-0000-7000-8000-0000000000ff', 'h', 'c', 's', 'agent.thought', '"forged"', 'agent:evil', '{}', '2026-01-01T00:00:00.000000000Z')`,
				fmt.Sprintf(`INSERT INTO ledger_records(ledger_id, pos, record_id, leaf) VALUES('%s', 5, '01a1fdca-0000-7000-8000-0000000000ff', 's')`, l.ID),
			}
		}, "content_hash", 5},
		{"record type changed", func(l *kura.Ledger, r []kura.Record) []string {
			return []string{fmt.Sprintf(`UPDATE records SET type = 'sys.error' WHERE id = '%s'`, r[0].ID)}
		}, "hash", 0},
	}
	for _, e := range edits {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			path := sqlitetest.File(t)
			db := mustOpenAt(t, path, nil)
			ctx := context.Background()
			recs := mustRecords(t, db, 5)
			l, err := db.CreateLedger(ctx, &kura.LedgerInput{Label: "l", RecordIDs: ids(recs)})
			if err != nil {
				t.Fatal(err)
			}
			if v, _ := db.VerifyLedger(ctx, l.ID); !v.OK {
				t.Fatalf("fresh ledger does not verify: %+v", v)
			}
			raw := rawDB(t, path)
			for _, q := range e.sql(l, recs) {
				if _, err := raw.Exec(q); err != nil {
					t.Fatalf("edit %q: %v", q, err)
				}
			}
			v, err := db.VerifyLedger(ctx, l.ID)
			if err != nil {
				t.Fatal(err)
			}
			if v.OK {
				t.Fatalf("verify: got ok after %s, want ok:false", e.name)
			}
			found := false
			for _, m := range v.Mismatches {
				if m.Field == e.wantField && (e.wantPos < 0 || (m.Position != nil && *m.Position == e.wantPos)) {
					found = true
				}
			}
			if !found {
				b, _ := json.Marshal(v.Mismatches)
				t.Fatalf("verify did not name %s at position %d: %s", e.wantField, e.wantPos, b)
			}
		})
	}
}

func TestStore_RefusesNewerSchema(t *testing.T) {
	t.Parallel()
	path := sqlitetest.File(t)
	db := mustOpenAt(t, path, nil)
	mustRecords(t, db, 1)
	if err := db.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	raw := rawDB(t, path)
	if _, err := raw.Exec(fmt.Sprintf("PRAGMA user_version = %d", store.SchemaVersion+1)); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	db2 := store.New(store.Config{Path: path, Signer: key})
	err := db2.Open(context.Background())
	if err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("open newer schema: got %v, want a refusal", err)
	}
}

func TestStore_CloseDrainsAndRefuses(t *testing.T) {
	t.Parallel()
	path := sqlitetest.File(t)
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	db := mustOpenAt(t, path, key)
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	acked := 0
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			in := thought(i)
			if _, err := db.CreateRecord(ctx, &in); err == nil {
				mu.Lock()
				acked++
				mu.Unlock()
			} else if !kura.IsCode(err, kura.EUnavailable) {
				t.Errorf("write during close: got %v, want success or unavailable", err)
			}
		}(i)
	}
	if err := db.Close(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if err := db.Close(ctx); err != nil {
		t.Fatalf("second close: %v", err)
	}
	in := thought(99)
	if _, err := db.CreateRecord(ctx, &in); !kura.IsCode(err, kura.EUnavailable) {
		t.Fatalf("write after close: got %v, want unavailable", err)
	}
	// Everything acknowledged is there after a reopen, nothing more.
	db2 := mustOpenAt(t, path, key)
	if got := db2.Counts()["records"]; got != int64(acked) {
		t.Fatalf("records after reopen: got %d, want the %d acknowledged", got, acked)
	}
}

// TestStore_HydrateJSONMatchesRecordJSON holds the SQL-assembled record
// JSON of hydrate to the bytes kura.Record.AppendJSON writes for the same
// record read by id.
func TestStore_HydrateJSONMatchesRecordJSON(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	recs, err := db.CreateRecords(ctx, []kura.RecordInput{
		thought(1),
		{Type: "tool.call", Content: json.RawMessage(`{"tool_name":"gh \"q\" \\ é","arguments":{"x":[1,2.5,null]},"status":"pending"}`), AuthorID: "tool:gh",
			Metadata: map[string]string{"project_id": "hashi", "note": "line\nbreak \"quoted\" ☃"}},
		{Type: "task.instruction", Content: json.RawMessage(`"just text"`), AuthorID: "user:oles"},
	})
	if err != nil {
		t.Fatal(err)
	}
	l, err := db.CreateLedger(ctx, &kura.LedgerInput{RecordIDs: ids(recs)})
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	next := 0
	if err := db.HydrateLedger(ctx, l.ID, -1, 10, nil, &body, func(n int) error { next = n; return nil }); err != nil || next != -1 {
		t.Fatalf("hydrate: next %d, err %v", next, err)
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(append(append([]byte{'['}, body.Bytes()...), ']'), &raws); err != nil || len(raws) != 3 {
		t.Fatalf("hydrate: %d records, err %v", len(raws), err)
	}
	for i, raw := range raws {
		r, err := db.GetRecord(ctx, recs[i].ID)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(r)
		var buf bytes.Buffer
		json.Compact(&buf, raw)
		if buf.String() != string(want) {
			t.Errorf("record %d:\nhydrate %s\nby id   %s", i, raw, want)
		}
	}
}

func TestStore_HydratePagesAcrossSplit(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	recs := mustRecords(t, db, 700)
	l, err := db.CreateLedger(ctx, &kura.LedgerInput{RecordIDs: ids(recs)})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	after := -1
	for page := 0; page < 10; page++ {
		rs, next, err := db.LedgerRecords(ctx, l.ID, after, 300)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			got = append(got, r.ID)
		}
		if next < 0 {
			break
		}
		after = next
	}
	if strings.Join(got, ",") != strings.Join(ids(recs), ",") {
		t.Fatalf("hydrate: got %d ids, want the %d in ledger order", len(got), len(recs))
	}
}

// TestStore_FailedJobInSharedBatch puts good jobs, failing jobs (after
// they wrote) and a panicking job into one batch: the good ones commit,
// the others leave nothing behind.
func TestStore_FailedJobInSharedBatch(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	const n = 30
	release := make(chan struct{})
	started := make(chan struct{})
	gateDone := make(chan error, 1)
	go func() {
		gateDone <- db.Update(ctx, func(tx *store.Tx) error { close(started); <-release; return nil })
	}()
	<-started // the writer is busy with the gate job: what follows queues up
	var wg sync.WaitGroup
	errs := make([]error, n)
	wantIDs := make([]string, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			p, err := db.PrepareRecord(&[]kura.RecordInput{thought(1000 + i)}[0], "")
			if err != nil {
				errs[i] = err
				return
			}
			errs[i] = db.Update(ctx, func(tx *store.Tx) error {
				r, err := tx.InsertRecord(p)
				if err != nil {
					return err
				}
				wantIDs[i] = r.ID
				switch i % 10 {
				case 3:
					return kura.Errorf(kura.EConflict, "job %d fails after writing", i)
				case 7:
					panic("job panics after writing")
				}
				return nil
			})
		}(i)
	}
	testwait.For(t, 10*time.Second, "every job queued behind the gate", func() bool { return db.QueueDepth() >= n })
	close(release)
	wg.Wait()
	if err := <-gateDone; err != nil {
		t.Fatal(err)
	}
	ok := 0
	for i, err := range errs {
		want := i%10 != 3 && i%10 != 7
		if (err == nil) != want {
			t.Fatalf("job %d: got err %v, want success %v", i, err, want)
		}
		_, gerr := db.GetRecord(ctx, wantIDs[i])
		if want {
			ok++
			if gerr != nil {
				t.Errorf("job %d: committed record %s not found: %v", i, wantIDs[i], gerr)
			}
		} else if gerr == nil {
			t.Errorf("job %d failed but its record %s is stored", i, wantIDs[i])
		}
	}
	if got := db.Counts()["records"]; got != int64(ok) {
		t.Errorf("records: got %d, want %d", got, ok)
	}
	if got := db.LastEventSeq(); got != int64(ok) {
		t.Errorf("events: got %d, want %d (failed jobs leave no event)", got, ok)
	}
	if tx := db.Stats().Transactions.Load(); tx > 3 {
		t.Errorf("transactions: got %d, want the %d jobs in very few batches", tx, n)
	}
}

// TestStore_WriterStatementsPrepare: every statement the writer keeps
// prepared parses against the migrated schema. The writer prepares them as
// it first runs them, so Open no longer finds a broken one.
func TestStore_WriterStatementsPrepare(t *testing.T) {
	t.Parallel()
	if err := MustOpenStore(t).PrepareWriterStatements(); err != nil {
		t.Fatal(err)
	}
}

// TestStore_WriterPreparesWhatItRuns: a store starts with no writer
// statement prepared; the statements a write runs are prepared on the
// writer's connection once it has committed, and the next write of the
// same kind adds none.
func TestStore_WriterPreparesWhatItRuns(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	prepared := func() int {
		t.Helper()
		n, err := db.WriterStatementsPrepared(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := prepared(); n != 0 {
		t.Fatalf("%d statements prepared before any write, want 0", n)
	}
	if _, err := db.CreateRecords(ctx, []kura.RecordInput{thought(1)}); err != nil {
		t.Fatal(err)
	}
	after := prepared()
	if after == 0 {
		t.Fatal("no statement prepared after a record write")
	}
	if _, err := db.CreateRecords(ctx, []kura.RecordInput{thought(2)}); err != nil {
		t.Fatal(err)
	}
	if n := prepared(); n != after {
		t.Errorf("a second record write changed the prepared statements: %d, want %d", n, after)
	}
}
