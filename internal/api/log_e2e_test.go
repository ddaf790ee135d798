package api_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/kura-memory/kura/internal/testwait"
)

// The checks in this file use net/http, encoding/json and golang.org/x/mod
// alone: what kurad serves must verify with no Kura code (issue 20).

func httpGet(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func b64hashes(t *testing.T, in []string) []tlog.Hash {
	t.Helper()
	out := make([]tlog.Hash, len(in))
	for i, s := range in {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(b) != 32 {
			t.Fatalf("proof hash %q", s)
		}
		copy(out[i][:], b)
	}
	return out
}

// openCheckpoint verifies a checkpoint note with the verifier key /v1/info
// names and parses origin, size and root.
func openCheckpoint(t *testing.T, text []byte, vkey string) (string, int64, tlog.Hash) {
	t.Helper()
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatalf("log_vkey %q: %v", vkey, err)
	}
	n, err := note.Open(text, note.VerifierList(v))
	if err != nil {
		t.Fatalf("checkpoint does not verify: %v\n%s", err, text)
	}
	lines := strings.Split(n.Text, "\n")
	if len(lines) != 4 || lines[3] != "" {
		t.Fatalf("checkpoint body %q is not origin, size, root", n.Text)
	}
	var size int64
	if _, err := fmt.Sscan(lines[1], &size); err != nil {
		t.Fatal(err)
	}
	root := b64hashes(t, []string{lines[2]})[0]
	return lines[0], size, root
}

func TestLog_CheckpointAndProofsVerifyWithXMod(t *testing.T) {
	t.Parallel()
	d := kuradtest.StartMain(t, kuradtest.Options{})
	base := d.BaseURL()
	for i := 0; i < 5; i++ {
		if code, b := httpPost(t, base+"/v1/records", fmt.Sprintf(`{"type":"agent.thought","content":"log %d","author_id":"agent:bmo"}`, i)); code != 201 {
			t.Fatalf("record: %d %s", code, b)
		}
	}
	var info struct {
		LogOrigin string `json:"log_origin"`
		LogVKey   string `json:"log_vkey"`
		Log       struct {
			State string `json:"state"`
			Size  int64  `json:"size"`
		} `json:"log"`
		LastEventSeq int64 `json:"last_event_seq"`
	}
	_, b := httpGet(t, base+"/v1/info")
	if err := json.Unmarshal(b, &info); err != nil {
		t.Fatal(err)
	}
	if info.LogOrigin == "" || info.Log.State != "unwitnessed" || info.Log.Size != info.LastEventSeq {
		t.Fatalf("info: %s", b)
	}
	code, cp5 := httpGet(t, base+"/v1/log/checkpoint")
	if code != 200 {
		t.Fatalf("checkpoint: %d %s", code, cp5)
	}
	origin, size5, root5 := openCheckpoint(t, cp5, info.LogVKey)
	if origin != info.LogOrigin || size5 != 5 {
		t.Fatalf("checkpoint of %q size %d", origin, size5)
	}
	// No witness: nothing cosigned, but an answer all the same.
	if code, b := httpGet(t, base+"/v1/log/cosigned"); code != 200 || string(b) != `{"origin":"`+origin+`","checkpoints":[]}`+"\n" {
		t.Fatalf("cosigned without witnesses: %d %q", code, b)
	}

	// The leaves rebuild the root.
	var leaves struct {
		Leaves []struct {
			Index    int64  `json:"index"`
			Seq      int64  `json:"seq"`
			LeafHash string `json:"leaf_hash"`
			Data     string `json:"data"`
		} `json:"leaves"`
	}
	_, b = httpGet(t, base+"/v1/log/leaves?start=0&end=5")
	if err := json.Unmarshal(b, &leaves); err != nil || len(leaves.Leaves) != 5 {
		t.Fatalf("leaves: %s", b)
	}
	stored := map[int64]tlog.Hash{}
	reader := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			out[i] = stored[x]
		}
		return out, nil
	})
	for _, l := range leaves.Leaves {
		data, err := base64.StdEncoding.DecodeString(l.Data)
		if err != nil || len(data) == 0 {
			t.Fatalf("leaf %d data %q", l.Index, l.Data)
		}
		if tlog.RecordHash(data) != b64hashes(t, []string{l.LeafHash})[0] {
			t.Errorf("leaf %d: data does not hash to leaf_hash", l.Index)
		}
		var ev map[string]any
		if err := json.Unmarshal(data, &ev); err != nil || ev["type"] != "record.written" || ev["seq"] != float64(l.Seq) {
			t.Errorf("leaf %d data %s", l.Index, data)
		}
		hs, err := tlog.StoredHashes(l.Index, data, reader)
		if err != nil {
			t.Fatal(err)
		}
		for j, h := range hs {
			stored[tlog.StoredHashIndex(0, l.Index)+int64(j)] = h
		}
	}
	if got, _ := tlog.TreeHash(5, reader); got != root5 {
		t.Fatal("the served leaves do not rebuild the checkpoint's root")
	}

	for i := 5; i < 12; i++ {
		httpPost(t, base+"/v1/records", fmt.Sprintf(`{"type":"agent.thought","content":"log %d","author_id":"agent:bmo"}`, i))
	}
	_, cp12 := httpGet(t, base+"/v1/log/checkpoint")
	_, size12, root12 := openCheckpoint(t, cp12, info.LogVKey)
	if size12 != 12 {
		t.Fatalf("size %d after 12 records", size12)
	}
	var cons struct {
		Old, New int64
		Proof    []string
	}
	_, b = httpGet(t, base+"/v1/log/consistency?old=5&new=12")
	if err := json.Unmarshal(b, &cons); err != nil || cons.Old != 5 || cons.New != 12 {
		t.Fatalf("consistency: %s", b)
	}
	if err := tlog.CheckTree(b64hashes(t, cons.Proof), 12, root12, 5, root5); err != nil {
		t.Fatalf("consistency proof: %v", err)
	}
	var incl struct {
		Seq, Size int64
		LeafHash  string `json:"leaf_hash"`
		Proof     []string
	}
	for seq := int64(1); seq <= 12; seq++ {
		_, b = httpGet(t, fmt.Sprintf("%s/v1/log/inclusion?seq=%d&size=12", base, seq))
		if err := json.Unmarshal(b, &incl); err != nil {
			t.Fatal(err)
		}
		leaf := b64hashes(t, []string{incl.LeafHash})[0]
		if err := tlog.CheckRecord(b64hashes(t, incl.Proof), 12, root12, seq-1, leaf); err != nil {
			t.Errorf("inclusion of seq %d: %v", seq, err)
		}
	}
}

func TestLog_BadInputs(t *testing.T) {
	t.Parallel()
	d := kuradtest.StartMain(t, kuradtest.Options{})
	base := d.BaseURL()
	httpPost(t, base+"/v1/records", `{"type":"agent.thought","content":"x","author_id":"agent:bmo"}`)
	cases := []struct {
		method, path, body string
		code               int
		errCode            string
	}{
		{"GET", "/v1/log/consistency", "", 400, "invalid_argument"},
		{"GET", "/v1/log/consistency?old=-1", "", 400, "invalid_argument"},
		{"GET", "/v1/log/consistency?old=x", "", 400, "invalid_argument"},
		{"GET", "/v1/log/consistency?old=2", "", 400, "invalid_argument"},
		{"GET", "/v1/log/consistency?old=1&new=9", "", 400, "invalid_argument"},
		{"GET", "/v1/log/inclusion", "", 400, "invalid_argument"},
		{"GET", "/v1/log/inclusion?seq=0", "", 400, "invalid_argument"},
		{"GET", "/v1/log/inclusion?seq=2", "", 400, "invalid_argument"},
		{"GET", "/v1/log/inclusion?seq=1&size=5", "", 400, "invalid_argument"},
		{"GET", "/v1/log/inclusion?seq=1&ledger_id=0190c4f2-0000-7000-8000-000000000001", "", 400, "invalid_argument"},
		{"GET", "/v1/log/inclusion?ledger_id=nope", "", 400, "invalid_argument"},
		{"GET", "/v1/log/inclusion?ledger_id=0190c4f2-0000-7000-8000-000000000001", "", 404, "not_found"},
		{"GET", "/v1/log/leaves", "", 400, "invalid_argument"},
		{"GET", "/v1/log/leaves?start=0", "", 400, "invalid_argument"},
		{"GET", "/v1/log/leaves?start=1&end=0", "", 400, "invalid_argument"},
		{"GET", "/v1/log/leaves?start=0&end=2", "", 400, "invalid_argument"},
		{"GET", "/v1/log/leaves?start=0&end=1001", "", 400, "invalid_argument"},
		{"POST", "/v1/admin/log/acknowledge", `{"reason":"nothing happened"}`, 409, "conflict"},
		{"POST", "/v1/admin/log/acknowledge", `{"reason":""}`, 400, "invalid_argument"},
		{"POST", "/v1/admin/log/acknowledge", `{"reason":7}`, 400, "invalid_argument"},
		{"POST", "/v1/admin/log/acknowledge", `{"reason":"x","extra":1}`, 400, "invalid_argument"},
		{"POST", "/v1/admin/log/acknowledge", `{`, 400, "invalid_argument"},
	}
	_, before := httpGet(t, base+"/v1/log/checkpoint")
	for _, c := range cases {
		var code int
		var b []byte
		if c.method == "GET" {
			code, b = httpGet(t, base+c.path)
		} else {
			code, b = httpPost(t, base+c.path, c.body)
		}
		var e struct {
			Error struct{ Code, Message string }
		}
		json.Unmarshal(b, &e)
		if code != c.code || e.Error.Code != c.errCode || e.Error.Message == "" {
			t.Errorf("%s %s %s: %d %s, want %d %s", c.method, c.path, c.body, code, b, c.code, c.errCode)
		}
	}
	if _, after := httpGet(t, base+"/v1/log/checkpoint"); !bytes.Equal(before, after) {
		t.Errorf("bad requests moved the log:\n%s\n%s", before, after)
	}
}

// A subscriber to oclaw.v1._log.evt.checkpoint hears a signed checkpoint
// after commits.
func TestLog_CheckpointOnNATS(t *testing.T) {
	t.Parallel()
	d := kuradtest.StartMain(t, kuradtest.Options{})
	base := d.BaseURL()
	nc, err := nats.Connect("nats://" + d.NATSAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync("oclaw.v1._log.evt.checkpoint")
	if err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	var info struct {
		LogVKey string `json:"log_vkey"`
	}
	_, b := httpGet(t, base+"/v1/info")
	json.Unmarshal(b, &info)
	for i := 0; i < 3; i++ {
		httpPost(t, base+"/v1/records", fmt.Sprintf(`{"type":"agent.thought","content":"nats %d","author_id":"agent:bmo"}`, i))
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		msg, err := sub.NextMsg(time.Until(deadline))
		if err != nil {
			t.Fatalf("no checkpoint of size 3 on NATS: %v", err)
		}
		var payload struct {
			Type       string `json:"type"`
			Size       int64  `json:"size"`
			Checkpoint string `json:"checkpoint"`
		}
		if err := json.Unmarshal(msg.Data, &payload); err != nil || payload.Type != "log.checkpoint" || len(msg.Data) >= 512 {
			t.Fatalf("checkpoint payload (%d bytes): %s", len(msg.Data), msg.Data)
		}
		if _, size, _ := openCheckpoint(t, []byte(payload.Checkpoint), info.LogVKey); size != payload.Size {
			t.Fatalf("payload size %d, its note's %d", payload.Size, size)
		} else if size == 3 {
			break
		}
	}
}

// Checkpoints on NATS are coalesced: a burst of commits from concurrent
// writers is a few checkpoints a second (kurad's pace is one per 250 ms),
// not one per commit, and the last one is of the final tree.
func TestLog_CheckpointsOnNATSAreCoalesced(t *testing.T) {
	t.Parallel()
	d := kuradtest.StartMain(t, kuradtest.Options{})
	base := d.BaseURL()
	nc, err := nats.Connect("nats://" + d.NATSAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var (
		mu    sync.Mutex
		at    []time.Time
		sizes []int64
	)
	if _, err := nc.Subscribe("oclaw.v1._log.evt.checkpoint", func(m *nats.Msg) {
		var p struct{ Size int64 }
		json.Unmarshal(m.Data, &p)
		mu.Lock()
		at, sizes = append(at, time.Now()), append(sizes, p.Size)
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	nc.Flush()

	var commits atomic.Int64
	var wg sync.WaitGroup
	end := time.Now().Add(1500 * time.Millisecond)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; time.Now().Before(end); i++ {
				if code, b := httpPost(t, base+"/v1/records", fmt.Sprintf(`{"type":"agent.thought","content":"burst %d %d","author_id":"agent:bmo"}`, w, i)); code != 201 {
					t.Errorf("write: %d %s", code, b)
					return
				}
				commits.Add(1)
			}
		}(w)
	}
	wg.Wait()
	var info struct {
		Log struct{ Size int64 } `json:"log"`
	}
	_, b := httpGet(t, base+"/v1/info")
	json.Unmarshal(b, &info)
	testwait.For(t, testwait.Default, "a checkpoint of the final tree on NATS", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(sizes) > 0 && sizes[len(sizes)-1] == info.Log.Size
	})
	mu.Lock()
	defer mu.Unlock()
	span := at[len(at)-1].Sub(at[0])
	// One at once, then at most one per 250 ms; one more for the jitter of
	// delivery.
	limit := int(span/(250*time.Millisecond)) + 2
	if n := commits.Load(); n < int64(4*limit) {
		t.Fatalf("only %d commits in the burst: too few to tell %d checkpoints from one per commit", n, limit)
	}
	if len(at) > limit {
		t.Fatalf("%d checkpoints in %v for %d commits, want at most %d", len(at), span, commits.Load(), limit)
	}
	t.Logf("%d checkpoints in %v for %d commits", len(at), span, commits.Load())
}

func httpPost(t *testing.T, url, body string) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// A token limited to some projects gets every leaf hash (a monitor still
// rebuilds the tree) but only the data of events it may read; the admin
// acknowledgement needs an unlimited admin. Bodies past the limit or of
// another type are refused before anything is decided.
func TestLog_LeavesFollowTheFeedsScopes(t *testing.T) {
	t.Parallel()
	e := startAuthKurad(t, nil)
	for _, p := range []string{"alpha", "beta"} {
		if code, b := e.do(tRoot, "POST", "/v1/records", `{"type":"agent.thought","content":"in `+p+`","author_id":"user:root","metadata":{"project_id":"`+p+`"}}`); code != 201 {
			t.Fatalf("record in %s: %d %s", p, code, b)
		}
	}
	var all, limited struct {
		Leaves []struct {
			Seq      int64  `json:"seq"`
			LeafHash string `json:"leaf_hash"`
			Data     string `json:"data"`
		} `json:"leaves"`
	}
	_, b := e.do(tRoot, "GET", "/v1/log/leaves?start=0&end=2", "")
	if err := json.Unmarshal(b, &all); err != nil || len(all.Leaves) != 2 {
		t.Fatalf("root: %s", b)
	}
	_, b = e.do(tRA, "GET", "/v1/log/leaves?start=0&end=2", "")
	if err := json.Unmarshal(b, &limited); err != nil || len(limited.Leaves) != 2 {
		t.Fatalf("reader of alpha: %s", b)
	}
	for i := range all.Leaves {
		data, _ := base64.StdEncoding.DecodeString(all.Leaves[i].Data)
		inAlpha := strings.Contains(string(data), `"project":"alpha"`)
		if all.Leaves[i].Data == "" || limited.Leaves[i].LeafHash != all.Leaves[i].LeafHash {
			t.Errorf("leaf %d: root sees %q; hashes %s / %s", i, all.Leaves[i].Data, all.Leaves[i].LeafHash, limited.Leaves[i].LeafHash)
		}
		if (limited.Leaves[i].Data != "") != inAlpha {
			t.Errorf("leaf %d (%s): the reader of alpha sees data %v", i, data, limited.Leaves[i].Data != "")
		}
	}
	if code, b := e.do(tRA, "POST", "/v1/admin/log/acknowledge", `{"reason":"x"}`); code != 403 {
		t.Errorf("acknowledge as a reader: %d %s", code, b)
	}
	if code, b := e.do(tRoot, "POST", "/v1/admin/log/acknowledge", `{"reason":"`+strings.Repeat("x", 5<<20)+`"}`); code != 413 || !strings.Contains(string(b), `"too_large"`) {
		t.Errorf("acknowledge with an oversized body: %d %.200s", code, b)
	}
}

// A record.redacted leaf commits to the redaction: its digest is hex
// SHA-256 of the JCS of record_id, seal, by, reason and at, rebuilt here
// from what kurad answered, with encoding/json and crypto/sha256 alone (for
// these plain ASCII strings, json.Marshal of a map is the JCS form).
func TestLog_RedactionLeafCommitsToTheRedaction(t *testing.T) {
	t.Parallel()
	base := kuradtest.StartMain(t, kuradtest.Options{}).BaseURL()
	code, b := httpPost(t, base+"/v1/records", `{"type":"agent.thought","content":"a phone number","author_id":"agent:bmo"}`)
	var rec struct{ ID, Seal string }
	if code != 201 || json.Unmarshal(b, &rec) != nil {
		t.Fatalf("record: %d %s", code, b)
	}
	code, b = httpPost(t, base+"/v1/records/"+rec.ID+"/redact", `{"reason":"personal data"}`)
	var red struct {
		Redaction struct {
			RecordID string `json:"record_id"`
			By       string `json:"by"`
			Reason   string `json:"reason"`
			At       string `json:"at"`
			Seq      int64  `json:"seq"`
		} `json:"redaction"`
	}
	if code != 200 || json.Unmarshal(b, &red) != nil || red.Redaction.Seq == 0 {
		t.Fatalf("redact: %d %s", code, b)
	}
	rd := red.Redaction
	obj, _ := json.Marshal(map[string]string{"record_id": rd.RecordID, "seal": rec.Seal, "by": rd.By, "reason": rd.Reason, "at": rd.At})
	sum := sha256.Sum256(obj)
	want := hex.EncodeToString(sum[:])

	_, b = httpGet(t, fmt.Sprintf("%s/v1/log/leaves?start=%d&end=%d", base, rd.Seq-1, rd.Seq))
	var leaves struct {
		Leaves []struct {
			Data string `json:"data"`
		} `json:"leaves"`
	}
	if err := json.Unmarshal(b, &leaves); err != nil || len(leaves.Leaves) != 1 || leaves.Leaves[0].Data == "" {
		t.Fatalf("leaves: %s", b)
	}
	data, _ := base64.StdEncoding.DecodeString(leaves.Leaves[0].Data)
	var leaf struct{ Type, Digest string }
	if err := json.Unmarshal(data, &leaf); err != nil || leaf.Type != "record.redacted" || leaf.Digest != want {
		t.Fatalf("redaction leaf %s, want type record.redacted and digest %s (of %s)", data, want, obj)
	}
}
