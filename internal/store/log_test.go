package store_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"sync"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/kura-memory/kura/internal/admission"
	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/sqlitetest"
	"github.com/kura-memory/kura/internal/store"
	"github.com/kura-memory/kura/kurahash"
)

// treeFromLeaves rebuilds the log's tree from the leaf data it serves, with
// tlog alone: what a monitor does.
func treeFromLeaves(t *testing.T, db *store.DB, size int64) (tlog.Hash, map[int64]tlog.Hash) {
	t.Helper()
	hashes := map[int64]tlog.Hash{}
	r := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			out[i] = hashes[x]
		}
		return out, nil
	})
	leaves, err := db.LogLeaves(context.Background(), 0, size, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range leaves {
		if l.Data == nil {
			t.Fatalf("leaf %d has no data", i)
		}
		hs, err := tlog.StoredHashes(int64(i), l.Data, r)
		if err != nil {
			t.Fatal(err)
		}
		for j, h := range hs {
			hashes[tlog.StoredHashIndex(0, int64(i))+int64(j)] = h
		}
	}
	root, err := tlog.TreeHash(size, r)
	if err != nil {
		t.Fatal(err)
	}
	return root, hashes
}

func TestLog_EveryEventIsALeaf(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	if h := db.Log(); h.Size != 0 {
		t.Fatalf("new store: log size %d", h.Size)
	}
	mustHistory(t, db)
	// Events whose digest is of an object, not of a hash the object has.
	kbe, _, err := db.PutKBEntry(ctx, "facts", &kura.KBEntryInput{Identifier: "deploy window", Keys: []string{"deploy"}, Value: "after 18:00"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.PutNode(ctx, "s", &kura.NodeInput{Kind: "fact", ID: "f1", Summary: ptr("deploy after 18:00")}); err != nil {
		t.Fatal(err)
	}
	body, err := db.CompileContext(ctx, "s", &admission.Request{Query: "deploy"})
	if err != nil {
		t.Fatal(err)
	}
	var bundle struct {
		BundleID string `json:"bundle_id"`
		Digest   string `json:"digest"`
	}
	if err := json.Unmarshal(body, &bundle); err != nil || bundle.Digest == "" {
		t.Fatalf("bundle %s: %v", body, err)
	}
	red, err := db.CreateRecord(ctx, recIn(thought(77)))
	if err != nil {
		t.Fatal(err)
	}
	redacted, err := db.RedactRecord(ctx, red.ID, "user:admin", &kura.RedactInput{Reason: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	head := db.Log()
	if head.Size != db.LastEventSeq() || head.Size < 30 {
		t.Fatalf("log size %d, last event seq %d: every event must be a leaf", head.Size, db.LastEventSeq())
	}
	root, _ := treeFromLeaves(t, db, head.Size)
	if root != tlog.Hash(head.Root) {
		t.Fatalf("root from the served leaves %v != the log's root %v", root, head.Root)
	}
	// Each leaf commits to what its event names: a record's leaf to its seal.
	leaves, err := db.LogLeaves(ctx, 0, head.Size, nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, l := range leaves {
		leaf, err := kurahash.ParseLogLeaf(l.Data)
		if err != nil {
			t.Fatal(err)
		}
		seen[leaf.Type] = true
		if leaf.Digest == "" {
			t.Errorf("leaf %d (%s) commits to no digest", l.Index, leaf.Type)
		}
		switch leaf.Type {
		case kura.EventRecordWritten:
			r, err := db.GetRecord(ctx, leaf.Refs["record_id"])
			if err != nil || r.Seal != leaf.Digest {
				t.Errorf("record leaf %d digest %s, record seal %v (%v)", l.Index, leaf.Digest, r, err)
			}
		case kura.EventLedgerWritten:
			lg, err := db.GetLedger(ctx, leaf.Refs["ledger_id"], false)
			if err != nil || lg.Hash != leaf.Digest {
				t.Errorf("ledger leaf %d digest %s, ledger %v (%v)", l.Index, leaf.Digest, lg, err)
			}
		case kura.EventSessionHead:
			if leaf.Digest != leaf.Refs["head_hash"] {
				t.Errorf("head leaf %d digest %s, head hash %s", l.Index, leaf.Digest, leaf.Refs["head_hash"])
			}
		case kura.EventKBChanged:
			// The entry version as its history shows it.
			want := jcsDigest(t, map[string]any{"identifier": kbe.Identifier, "version": kbe.Version, "op": kura.KBOpPut,
				"entry_id": kbe.ID, "keys": kbe.Keys, "value": kbe.Value})
			if leaf.Refs["entry_id"] != kbe.ID || leaf.Digest != want {
				t.Errorf("kb leaf %d digest %s refs %v, want %s of entry %s", l.Index, leaf.Digest, leaf.Refs, want, kbe.ID)
			}
		case "memory.node":
			// The node version as it is served.
			n, err := db.GetNode(ctx, "s", leaf.Refs["ref"], "")
			if err != nil {
				t.Fatal(err)
			}
			if want := jcsDigest(t, n); leaf.Digest != want {
				t.Errorf("node leaf %d digest %s, want %s of %s", l.Index, leaf.Digest, want, leaf.Refs["ref"])
			}
		case kura.EventContextCompiled:
			if leaf.Refs["bundle_id"] != bundle.BundleID || leaf.Digest != bundle.Digest {
				t.Errorf("bundle leaf %d digest %s refs %v, want the bundle's digest %s", l.Index, leaf.Digest, leaf.Refs, bundle.Digest)
			}
		case kura.EventRecordRedacted:
			rd := redacted.Redaction
			want := jcsDigest(t, map[string]string{"record_id": red.ID, "seal": red.Seal, "by": rd.By, "reason": rd.Reason, "at": rd.At})
			if leaf.Refs["record_id"] != red.ID || leaf.Digest != want {
				t.Errorf("redaction leaf %d digest %s, want %s", l.Index, leaf.Digest, want)
			}
		}
	}
	for _, typ := range []string{kura.EventRecordWritten, kura.EventLedgerWritten, kura.EventSessionHead, kura.EventTurnOpened, kura.EventTurnComplete,
		kura.EventKBChanged, "memory.node", kura.EventContextCompiled, kura.EventRecordRedacted} {
		if !seen[typ] {
			t.Errorf("no %s leaf", typ)
		}
	}
}

// jcsDigest is hex SHA-256 of the RFC 8785 form of v, as encoding/json
// writes it: the digest docs/log.md gives an object's event.
func jcsDigest(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	c, err := kurahash.Canonical(b)
	if err != nil {
		t.Fatal(err)
	}
	return kurahash.SumHex(c)
}

func TestLog_ProofsCheckWithTlog(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	logRecords(t, db, 0, 11)
	small := db.Log()
	logRecords(t, db, 100, 6)
	big := db.Log()
	if small.Size != 11 || big.Size != 17 {
		t.Fatalf("sizes %d, %d", small.Size, big.Size)
	}
	for seq := int64(1); seq <= big.Size; seq++ {
		leaf, proof, size, err := db.LogInclusion(ctx, seq, 0)
		if err != nil || size != big.Size {
			t.Fatalf("inclusion %d: %v (size %d)", seq, err, size)
		}
		if err := tlog.CheckRecord(proof, big.Size, tlog.Hash(big.Root), seq-1, leaf); err != nil {
			t.Errorf("inclusion of %d does not check: %v", seq, err)
		}
	}
	if leaf, proof, _, err := db.LogInclusion(ctx, 3, small.Size); err != nil || tlog.CheckRecord(proof, small.Size, tlog.Hash(small.Root), 2, leaf) != nil {
		t.Errorf("inclusion in the older tree: %v", err)
	}
	for old := int64(0); old <= big.Size; old++ {
		oldRoot, err := db.LogTreeHash(ctx, old)
		if err != nil {
			t.Fatal(err)
		}
		p, _, err := db.LogConsistency(ctx, old, big.Size)
		if err != nil {
			t.Fatal(err)
		}
		if old == 0 {
			continue // every tree extends the empty one; tlog needs no proof
		}
		if err := tlog.CheckTree(p, big.Size, tlog.Hash(big.Root), old, oldRoot); err != nil {
			t.Errorf("consistency %d -> %d: %v", old, big.Size, err)
		}
	}
	bad := []struct {
		name      string
		seq, size int64
	}{{"seq 0", 0, 0}, {"seq past size", 18, 0}, {"size past log", 1, 99}, {"seq past given size", 12, 11}, {"negative", -1, 0}}
	for _, c := range bad {
		if _, _, _, err := db.LogInclusion(ctx, c.seq, c.size); kura.ErrorCode(err) != kura.EInvalid {
			t.Errorf("inclusion %s: got %v, want invalid_argument", c.name, err)
		}
	}
	if _, _, err := db.LogConsistency(ctx, 18, 17); kura.ErrorCode(err) != kura.EInvalid {
		t.Errorf("consistency old > new: %v", err)
	}
	if _, err := db.LogLeaves(ctx, 5, 4, nil); kura.ErrorCode(err) != kura.EInvalid {
		t.Errorf("leaves end < start: %v", err)
	}
	if _, err := db.LogLeaves(ctx, 0, 18, nil); kura.ErrorCode(err) != kura.EInvalid {
		t.Errorf("leaves past the log: %v", err)
	}
}

// Concurrent writers share batches, and a failed job's event is rolled
// back with its savepoint: the tree must still hold exactly the committed
// events, in seq order.
func TestLog_ConcurrentWritesAndFailedJobs(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				in := thought(w*100 + i)
				db.CreateRecord(ctx, &in)
				// A ledger naming a record that does not exist fails inside
				// the batch, after other jobs wrote events.
				db.CreateLedger(ctx, &kura.LedgerInput{Label: "bad", RecordIDs: []string{"01900000-0000-7000-8000-000000000000"}})
			}
		}(w)
	}
	wg.Wait()
	head := db.Log()
	if head.Size != db.LastEventSeq() || head.Size != 40 {
		t.Fatalf("log size %d, last seq %d, want 40 and equal", head.Size, db.LastEventSeq())
	}
	if root, _ := treeFromLeaves(t, db, head.Size); root != tlog.Hash(head.Root) {
		t.Fatal("the tree does not match its leaves after concurrent batches")
	}
}

// Reopening keeps the tree; a store opened with the log off writes no
// leaves, and the next open with it on appends what it missed; compacting
// the feed keeps the leaf hashes (the leaves just lose their data).
func TestLog_ReopenBackfillAndCompaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	path := sqlitetest.File(t)
	db := mustOpenAt(t, path, key)
	mustRecords(t, db, 5)
	before := db.Log()
	origin := db.LogOrigin()
	if !store.ValidOrigin(origin) {
		t.Fatalf("origin %q", origin)
	}
	db.Close(ctx)

	off := store.New(store.Config{Path: path, Signer: key, LogOff: true})
	if err := off.Open(ctx); err != nil {
		t.Fatal(err)
	}
	logRecords(t, off, 100, 4)
	if off.Log() != before {
		t.Errorf("log off: the tree moved from %d to %d", before.Size, off.Log().Size)
	}
	off.Close(ctx)

	db = mustOpenAt(t, path, key)
	if db.LogOrigin() != origin {
		t.Errorf("origin changed across opens: %q -> %q", origin, db.LogOrigin())
	}
	head := db.Log()
	if head.Size != 9 || head.Size != db.LastEventSeq() {
		t.Fatalf("after backfill: size %d, last seq %d", head.Size, db.LastEventSeq())
	}
	root, _ := treeFromLeaves(t, db, head.Size)
	if root != tlog.Hash(head.Root) {
		t.Fatal("backfilled tree does not match its leaves")
	}
	p, _, err := db.LogConsistency(ctx, before.Size, head.Size)
	if err != nil || tlog.CheckTree(p, head.Size, tlog.Hash(head.Root), before.Size, tlog.Hash(before.Root)) != nil {
		t.Fatalf("the backfilled tree does not extend the old one: %v", err)
	}

	if err := db.SavePublishedSeq(ctx, head.Size); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CompactEvents(ctx, 5); err != nil {
		t.Fatal(err)
	}
	leaves, err := db.LogLeaves(ctx, 0, head.Size, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range leaves {
		if (i < 4) != (l.Data == nil) {
			t.Errorf("leaf %d: data present %v after compacting seqs 1..4", i, l.Data != nil)
		}
	}
	if db.Log() != head {
		t.Error("compaction moved the tree")
	}
	if _, _, _, err := db.LogInclusion(ctx, 2, 0); err != nil {
		t.Errorf("a compacted event's leaf is still provable: %v", err)
	}
}

func TestLog_RefusedWritesAndAcknowledgement(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	mustRecords(t, db, 2)
	db.RefuseWrites(kura.Errorf(kura.EUnavailable, "rolled back"))
	if _, err := db.CreateRecord(ctx, recIn(thought(9))); kura.ErrorCode(err) != kura.EUnavailable {
		t.Fatalf("write while refused: %v", err)
	}
	if db.Log().Size != 2 {
		t.Fatal("a refused write reached the log")
	}
	origin := db.LogOrigin()
	newOrigin, err := db.AcknowledgeLog(ctx, store.LogAcknowledgement{Origin: origin, Size: 7, Root: "AAAA", Witness: "http://w", Reason: "restored", By: "user:admin"})
	if err != nil {
		t.Fatal(err)
	}
	if newOrigin == origin || newOrigin != origin+"/g2" || db.LogOrigin() != newOrigin {
		t.Errorf("origin after acknowledgement %q (was %q)", db.LogOrigin(), origin)
	}
	if ok, err := db.LogAcknowledged(ctx, origin, 7, "AAAA"); !ok || err != nil {
		t.Errorf("acknowledged: %v %v", ok, err)
	}
	db.AllowWrites()
	if _, err := db.CreateRecord(ctx, recIn(thought(9))); err != nil {
		t.Fatal(err)
	}
	if db.Log().Size != 4 {
		t.Errorf("log size %d, want 4 (two records, the acknowledgement, one more)", db.Log().Size)
	}
}

func recIn(in kura.RecordInput) *kura.RecordInput { return &in }

// logRecords writes n new records (thoughts start.. start+n-1), each one
// event.
func logRecords(tb testing.TB, db *store.DB, start, n int) {
	tb.Helper()
	for i := start; i < start+n; i++ {
		if _, err := db.CreateRecord(context.Background(), recIn(thought(i))); err != nil {
			tb.Fatal(err)
		}
	}
}

// A batch of more leaves than one multi-row insert holds (and a remainder)
// lands whole: the tree still matches its leaves, across two batches.
func TestLog_LargeBatches(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	for b := 0; b < 2; b++ {
		ins := make([]kura.RecordInput, 150)
		for i := range ins {
			ins[i] = thought(1000*b + i)
		}
		if _, err := db.CreateRecords(ctx, ins); err != nil {
			t.Fatal(err)
		}
	}
	head := db.Log()
	if head.Size != 300 || head.Size != db.LastEventSeq() {
		t.Fatalf("size %d, last seq %d", head.Size, db.LastEventSeq())
	}
	if root, _ := treeFromLeaves(t, db, head.Size); root != tlog.Hash(head.Root) {
		t.Fatal("the tree does not match its leaves after large batches")
	}
	leaf, proof, _, err := db.LogInclusion(ctx, 200, 0)
	if err != nil || tlog.CheckRecord(proof, head.Size, tlog.Hash(head.Root), 199, leaf) != nil {
		t.Fatalf("inclusion in a large batch: %v", err)
	}
}
