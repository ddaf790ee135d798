package client_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/kurahash"
	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// fakeLog is a log server built from tlog over in-memory hashes: the
// endpoints of shared/API.md "Log, checkpoints and witnesses", answering
// what a kurad would, and whatever a test makes it lie about.
type fakeLog struct {
	mu      sync.Mutex
	origin  string
	signers []note.Signer // all sign the checkpoint
	vkey    string        // what /v1/info advertises
	leaves  [][]byte
	hashes  []tlog.Hash // stored hashes, tlog's layout
	// lies
	serveSize int64 // >0: serve checkpoints of this size instead of the whole tree
	badProof  bool  // flip a byte of every proof
	cosigner  note.Signer
	state     string // /v1/info log.state
}

func newSigner(t *testing.T, name string) (note.Signer, string) {
	t.Helper()
	skey, vkey, err := note.GenerateKey(rand.Reader, name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	return s, vkey
}

func newEd25519(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return priv
}

// keyedSigner signs notes with priv under name: one server key naming
// several origins, as kurad's key does after its origin changes.
func keyedSigner(t *testing.T, name string, priv ed25519.PrivateKey) ([]note.Signer, string) {
	t.Helper()
	vkey, err := note.NewEd25519VerifierKey(name, priv.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return []note.Signer{ed25519Signer{name: name, hash: v.KeyHash(), key: priv}}, vkey
}

type ed25519Signer struct {
	name string
	hash uint32
	key  ed25519.PrivateKey
}

func (s ed25519Signer) Name() string                    { return s.name }
func (s ed25519Signer) KeyHash() uint32                 { return s.hash }
func (s ed25519Signer) Sign(msg []byte) ([]byte, error) { return ed25519.Sign(s.key, msg), nil }

func newFakeLog(t *testing.T, origin string, n int) *fakeLog {
	t.Helper()
	s, vkey := newSigner(t, origin)
	f := &fakeLog{origin: origin, signers: []note.Signer{s}, vkey: vkey, state: client.LogStateUnwitnessed}
	f.add(t, "a", n)
	return f
}

func (f *fakeLog) ReadHashes(idx []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(idx))
	for i, x := range idx {
		if x >= int64(len(f.hashes)) {
			return nil, fmt.Errorf("no stored hash %d", x)
		}
		out[i] = f.hashes[x]
	}
	return out, nil
}

// add appends n leaves whose data starts with tag (two logs with different
// tags fork).
func (f *fakeLog) add(t *testing.T, tag string, n int) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for range n {
		seq := int64(len(f.leaves) + 1)
		data, err := kurahash.LogLeafData(kurahash.LogLeaf{Seq: seq, ID: tag + strconv.FormatInt(seq, 10), Type: "record.written", Project: "p", Subject: "s", At: "2026-01-01T00:00:00Z"})
		if err != nil {
			t.Fatal(err)
		}
		hs, err := tlog.StoredHashes(int64(len(f.leaves)), data, f)
		if err != nil {
			t.Fatal(err)
		}
		f.leaves = append(f.leaves, data)
		f.hashes = append(f.hashes, hs...)
	}
}

func (f *fakeLog) size() int64 {
	if f.serveSize > 0 {
		return f.serveSize
	}
	return int64(len(f.leaves))
}

func (f *fakeLog) checkpoint(t testing.TB) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.checkpointLocked(t)
}

func (f *fakeLog) checkpointLocked(t testing.TB) []byte {
	n := f.size()
	root, err := tlog.TreeHash(n, f)
	if err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf("%s\n%d\n%s\n", f.origin, n, base64.StdEncoding.EncodeToString(root[:]))
	signers := f.signers
	if f.cosigner != nil {
		signers = append(append([]note.Signer{}, signers...), f.cosigner)
	}
	b, err := note.Sign(&note.Note{Text: body}, signers...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func b64s(hs []tlog.Hash) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = base64.StdEncoding.EncodeToString(h[:])
	}
	return out
}

func (f *fakeLog) server(t *testing.T) *httptest.Server {
	t.Helper()
	bad := func(w http.ResponseWriter, msg string) {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":{"code":"invalid_argument","message":%q}}`, msg)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/info", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"log_origin": f.origin, "log_vkey": f.vkey,
			"log": map[string]any{"state": f.state, "size": f.size(), "witnesses": []any{}}})
	})
	mux.HandleFunc("GET /v1/log/checkpoint", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write(f.checkpointLocked(t))
	})
	mux.HandleFunc("GET /v1/log/consistency", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		old, err1 := strconv.ParseInt(r.URL.Query().Get("old"), 10, 64)
		nw, err2 := strconv.ParseInt(r.URL.Query().Get("new"), 10, 64)
		if err1 != nil || err2 != nil || old < 0 || old > nw || nw > int64(len(f.leaves)) {
			bad(w, "out of range")
			return
		}
		var p tlog.TreeProof
		if old > 0 && old < nw {
			var err error
			if p, err = tlog.ProveTree(nw, old, f); err != nil {
				t.Error(err)
			}
		}
		if f.badProof && len(p) > 0 {
			p[0][0] ^= 1
		}
		json.NewEncoder(w).Encode(map[string]any{"old": old, "new": nw, "proof": b64s(p)})
	})
	mux.HandleFunc("GET /v1/log/inclusion", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		seq, err1 := strconv.ParseInt(r.URL.Query().Get("seq"), 10, 64)
		size, err2 := strconv.ParseInt(r.URL.Query().Get("size"), 10, 64)
		if err2 != nil {
			size = int64(len(f.leaves))
		}
		if err1 != nil || seq < 1 || seq > size || size > int64(len(f.leaves)) {
			bad(w, "out of range")
			return
		}
		p, err := tlog.ProveRecord(size, seq-1, f)
		if err != nil {
			t.Error(err)
		}
		if f.badProof && len(p) > 0 {
			p[0][0] ^= 1
		}
		lh := tlog.RecordHash(f.leaves[seq-1])
		json.NewEncoder(w).Encode(map[string]any{"seq": seq, "size": size, "leaf_hash": base64.StdEncoding.EncodeToString(lh[:]), "proof": b64s(p)})
	})
	mux.HandleFunc("GET /v1/log/leaves", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		start, _ := strconv.ParseInt(r.URL.Query().Get("start"), 10, 64)
		end, _ := strconv.ParseInt(r.URL.Query().Get("end"), 10, 64)
		var ls []map[string]any
		for i := start; i < end && i < int64(len(f.leaves)); i++ {
			lh := tlog.RecordHash(f.leaves[i])
			ls = append(ls, map[string]any{"index": i, "seq": i + 1, "leaf_hash": base64.StdEncoding.EncodeToString(lh[:]), "data": base64.StdEncoding.EncodeToString(f.leaves[i])})
		}
		json.NewEncoder(w).Encode(map[string]any{"start": start, "end": end, "leaves": ls})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestVerifyCheckpoint(t *testing.T) {
	t.Parallel()
	f := newFakeLog(t, "kura.test/log", 5)
	text := f.checkpoint(t)
	_, otherVKey := newSigner(t, "kura.test/log")
	_, strangerVKey := newSigner(t, "someone.else")

	cp, err := client.VerifyCheckpoint(text, f.vkey)
	if err != nil {
		t.Fatal(err)
	}
	root, _ := tlog.TreeHash(5, f)
	if cp.Origin != "kura.test/log" || cp.Size != 5 || cp.Root != root {
		t.Errorf("got %s %d %s, want kura.test/log 5 %s", cp.Origin, cp.Size, cp.Root, root)
	}
	tampered := strings.Replace(string(text), "\n5\n", "\n6\n", 1)
	for name, tc := range map[string]struct {
		text string
		keys []string
	}{
		"OtherKeySameName": {string(text), []string{otherVKey}},
		"KeyOfAnotherName": {string(text), []string{strangerVKey}},
		"SizeEdited":       {tampered, []string{f.vkey}},
		"NoKey":            {string(text), nil},
		"NotANote":         {"kura.test/log\n5\n", []string{f.vkey}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := client.VerifyCheckpoint([]byte(tc.text), tc.keys...); !client.IsLogCheckError(err, client.LogBadSignature) {
				t.Errorf("got %v, want a bad_signature error", err)
			}
		})
	}
	t.Run("SignedOnlyByAnotherName", func(t *testing.T) {
		s, vk := newSigner(t, "not.the.origin")
		b, err := note.Sign(&note.Note{Text: "kura.test/log\n5\n" + base64.StdEncoding.EncodeToString(root[:]) + "\n"}, s)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.VerifyCheckpoint(b, vk); !client.IsLogCheckError(err, client.LogBadSignature) {
			t.Errorf("got %v, want refused: a key not named after the origin is no log key", err)
		}
	})
}

func TestVerifyCosignatures(t *testing.T) {
	t.Parallel()
	f := newFakeLog(t, "kura.test/cosig", 3)
	skey, wvkey, err := note.GenerateKey(rand.Reader, "witness.test")
	if err != nil {
		t.Fatal(err)
	}
	ws, err := fnote.NewSignerForCosignatureV1(skey)
	if err != nil {
		t.Fatal(err)
	}
	plain := f.checkpoint(t)
	f.cosigner = ws
	cosigned := f.checkpoint(t)
	cv, err := fnote.VKeyToCosignatureV1(wvkey)
	if err != nil {
		t.Fatal(err)
	}
	names, err := client.VerifyCosignatures(cosigned, f.vkey, cv)
	if err != nil || len(names) != 1 || names[0] != "witness.test" {
		t.Errorf("got %v %v, want the witness", names, err)
	}
	if _, err := client.VerifyCheckpoint(cosigned, f.vkey); err != nil {
		t.Errorf("a cosigned checkpoint must still verify with the log key alone: %v", err)
	}
	if _, err := client.VerifyCosignatures(plain, f.vkey, cv); !client.IsLogCheckError(err, client.LogBadSignature) {
		t.Errorf("got %v, want refused: the witness did not cosign", err)
	}
}

func TestCheckConsistencyAndInclusion(t *testing.T) {
	t.Parallel()
	f := newFakeLog(t, "kura.test/cons", 7)
	srv := f.server(t)
	c := client.New(srv.URL)
	ctx := context.Background()
	old, err := client.VerifyCheckpoint(f.checkpoint(t), f.vkey)
	if err != nil {
		t.Fatal(err)
	}
	f.add(t, "a", 6)
	cur, err := client.VerifyCheckpoint(f.checkpoint(t), f.vkey)
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.LogConsistency(ctx, old.Size, cur.Size)
	if err != nil {
		t.Fatal(err)
	}
	if err := client.CheckConsistency(old, cur, p.Proof); err != nil {
		t.Errorf("a grown tree: %v", err)
	}
	if err := client.CheckConsistency(cur, old, nil); !client.IsLogCheckError(err, client.LogSmaller) {
		t.Errorf("got %v, want smaller", err)
	}
	bad := append([]string{}, p.Proof...)
	bad[0] = base64.StdEncoding.EncodeToString(make([]byte, 32))
	if err := client.CheckConsistency(old, cur, bad); !client.IsLogCheckError(err, client.LogInconsistent) {
		t.Errorf("got %v, want inconsistent for a wrong proof", err)
	}
	if err := client.CheckConsistency(old, cur, []string{"!!"}); !client.IsLogCheckError(err, client.LogBadProof) {
		t.Errorf("got %v, want bad_proof for an undecodable proof", err)
	}

	for seq := int64(1); seq <= cur.Size; seq++ {
		ip, err := c.LogInclusion(ctx, seq, cur.Size)
		if err != nil {
			t.Fatal(err)
		}
		lh, err := client.DecodeLeafHash(ip.LeafHash)
		if err != nil {
			t.Fatal(err)
		}
		if err := client.CheckInclusion(cur, seq, lh, ip.Proof); err != nil {
			t.Errorf("seq %d: %v", seq, err)
		}
		if err := client.CheckInclusion(cur, seq, tlog.RecordHash([]byte("other")), ip.Proof); !client.IsLogCheckError(err, client.LogBadProof) {
			t.Errorf("seq %d, another leaf: got %v, want bad_proof", seq, err)
		}
	}
	leaves, err := c.LogLeaves(ctx, 2, 5)
	if err != nil || len(leaves) != 3 || leaves[0].Seq != 3 {
		t.Fatalf("got %+v %v, want leaves 2..4", leaves, err)
	}
	data, err := client.DecodeLeafData(leaves[0].Data)
	if err != nil || base64.StdEncoding.EncodeToString(func() []byte { h := kurahash.LogLeafHash(data); return h[:] }()) != leaves[0].LeafHash {
		t.Errorf("leaf data does not hash to its leaf hash (%v)", err)
	}
}

// TestCheckpointState walks one client's kept state through what a server
// may do to it.
func TestCheckpointState(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	type setup struct {
		f     *fakeLog
		c     *client.Client
		state *client.CheckpointState
	}
	start := func(t *testing.T, origin string) setup {
		f := newFakeLog(t, origin, 4)
		srv := f.server(t)
		st := &client.CheckpointState{Dir: t.TempDir()}
		up, err := st.Update(ctx, client.New(srv.URL), f.checkpoint(t), f.vkey)
		if err != nil {
			t.Fatal(err)
		}
		if !up.FirstUse || up.Old != nil || up.New.Size != 4 {
			t.Fatalf("first use: got %+v", up)
		}
		return setup{f, client.New(srv.URL), st}
	}
	keptSize := func(t *testing.T, s setup) int64 {
		t.Helper()
		k, err := s.state.Load(s.f.origin)
		if err != nil {
			t.Fatal(err)
		}
		return k.Checkpoint.Size
	}

	t.Run("GrowthWithValidProofIsSaved", func(t *testing.T) {
		s := start(t, "kura.test/grow")
		s.f.add(t, "a", 9)
		up, err := s.state.Update(ctx, s.c, s.f.checkpoint(t), s.f.vkey)
		if err != nil {
			t.Fatal(err)
		}
		if up.FirstUse || up.Old.Size != 4 || up.New.Size != 13 || keptSize(t, s) != 13 {
			t.Errorf("got %+v, kept %d, want 4 -> 13 kept", up, keptSize(t, s))
		}
		// The same checkpoint again is fine.
		if _, err := s.state.Update(ctx, s.c, s.f.checkpoint(t), s.f.vkey); err != nil {
			t.Error(err)
		}
	})
	t.Run("SmallerTreeRefused", func(t *testing.T) {
		s := start(t, "kura.test/smaller")
		s.f.serveSize = 2
		_, err := s.state.Update(ctx, s.c, s.f.checkpoint(t), s.f.vkey)
		if !client.IsLogCheckError(err, client.LogSmaller) || !strings.Contains(err.Error(), "size 2") || !strings.Contains(err.Error(), "4") {
			t.Errorf("got %v, want smaller naming 2 and 4", err)
		}
		if keptSize(t, s) != 4 {
			t.Error("the kept checkpoint changed")
		}
	})
	t.Run("ForkRefused", func(t *testing.T) {
		s := start(t, "kura.test/fork")
		// Another history under the same key: same origin, other leaves.
		fork := &fakeLog{origin: s.f.origin, signers: s.f.signers, vkey: s.f.vkey, state: "ok"}
		fork.add(t, "b", 4)
		if _, err := s.state.Update(ctx, s.c, fork.checkpoint(t), s.f.vkey); !client.IsLogCheckError(err, client.LogInconsistent) {
			t.Errorf("same size, other root: got %v, want inconsistent", err)
		}
		fork.add(t, "b", 3)
		forkSrv := fork.server(t)
		if _, err := s.state.Update(ctx, client.New(forkSrv.URL), fork.checkpoint(t), s.f.vkey); !client.IsLogCheckError(err, client.LogInconsistent) {
			t.Errorf("larger fork: got %v, want inconsistent", err)
		}
		if keptSize(t, s) != 4 {
			t.Error("the kept checkpoint changed")
		}
	})
	t.Run("BadProofRefused", func(t *testing.T) {
		s := start(t, "kura.test/badproof")
		s.f.add(t, "a", 5)
		s.f.badProof = true
		if _, err := s.state.Update(ctx, s.c, s.f.checkpoint(t), s.f.vkey); !client.IsLogCheckError(err, client.LogInconsistent) {
			t.Errorf("got %v, want refused", err)
		}
		if keptSize(t, s) != 4 {
			t.Error("the kept checkpoint changed")
		}
	})
	t.Run("BadSignatureRefused", func(t *testing.T) {
		s := start(t, "kura.test/badsig")
		// An impostor with its own key for the same origin, advertising it.
		imp, impVKey := newSigner(t, s.f.origin)
		s.f.add(t, "a", 2)
		s.f.signers, s.f.vkey = []note.Signer{imp}, impVKey
		_, err := s.state.Update(ctx, s.c, s.f.checkpoint(t), impVKey)
		if !client.IsLogCheckError(err, client.LogBadSignature) || !strings.Contains(err.Error(), "signed by both") {
			t.Errorf("got %v, want bad_signature explaining rotation", err)
		}
		if keptSize(t, s) != 4 {
			t.Error("the kept checkpoint changed")
		}
	})
	t.Run("KeyRotation", func(t *testing.T) {
		s := start(t, "kura.test/rotate")
		oldSigner := s.f.signers[0]
		next, nextVKey := newSigner(t, s.f.origin)
		// The transition checkpoint: both keys sign; kurad names the new one.
		s.f.add(t, "a", 1)
		s.f.signers, s.f.vkey = []note.Signer{oldSigner, next}, nextVKey
		up, err := s.state.Update(ctx, s.c, s.f.checkpoint(t), nextVKey)
		if err != nil || up.KeyAdded != nextVKey {
			t.Fatalf("got %+v %v, want the new key added", up, err)
		}
		// From now on the new key alone is enough.
		s.f.add(t, "a", 1)
		s.f.signers = []note.Signer{next}
		if up, err := s.state.Update(ctx, s.c, s.f.checkpoint(t), nextVKey); err != nil || up.New.Size != 6 {
			t.Errorf("got %+v %v, want size 6 under the rotated key", up, err)
		}
	})
	t.Run("OriginChangedUnderTheSameKey", func(t *testing.T) {
		priv := newEd25519(t)
		x := &fakeLog{origin: "kura.test/x", state: "ok"}
		x.signers, x.vkey = keyedSigner(t, x.origin, priv)
		x.add(t, "a", 4)
		st := &client.CheckpointState{Dir: t.TempDir()}
		xc := client.New(x.server(t).URL)
		if _, err := st.Update(ctx, xc, x.checkpoint(t), x.vkey); err != nil {
			t.Fatal(err)
		}
		// The same key, the same history cut short, another origin: an
		// older copy with its origin renamed.
		y := &fakeLog{origin: "kura.test/y", state: "ok"}
		y.signers, y.vkey = keyedSigner(t, y.origin, priv)
		y.add(t, "a", 2)
		yc := client.New(y.server(t).URL)
		_, err := st.Update(ctx, yc, y.checkpoint(t), y.vkey)
		var le *client.LogCheckError
		if !errors.As(err, &le) || le.Reason != client.LogOriginChanged || le.Previous != x.origin || le.Origin != y.origin {
			t.Fatalf("got %v, want origin_changed from %s", err, x.origin)
		}
		if k, _ := st.Load(y.origin); k != nil {
			t.Fatal("the refused origin was kept")
		}
		// Kept by an older kura (no key files): still refused.
		if err := os.RemoveAll(filepath.Join(st.Dir, "+keys")); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Update(ctx, yc, y.checkpoint(t), y.vkey); !client.IsLogCheckError(err, client.LogOriginChanged) {
			t.Fatalf("state without key files: got %v, want origin_changed", err)
		}
		// Another key under another origin is another log.
		other := newFakeLog(t, "kura.test/other", 1)
		if up, err := st.Update(ctx, client.New(other.server(t).URL), other.checkpoint(t), other.vkey); err != nil || !up.FirstUse {
			t.Fatalf("another key: got %+v %v, want first use", up, err)
		}
		// Accepted by name, it is pinned; then the old origin is the
		// stranger.
		accepting := &client.CheckpointState{Dir: st.Dir, AcceptOrigin: y.origin}
		up, err := accepting.Update(ctx, yc, y.checkpoint(t), y.vkey)
		if err != nil || !up.FirstUse || up.OriginChangedFrom != x.origin {
			t.Fatalf("accepted: got %+v %v, want first use, changed from %s", up, err, x.origin)
		}
		if _, err := st.Update(ctx, yc, y.checkpoint(t), y.vkey); err != nil {
			t.Fatalf("after acceptance: %v", err)
		}
		x.add(t, "a", 1)
		if _, err := st.Update(ctx, xc, x.checkpoint(t), x.vkey); !client.IsLogCheckError(err, client.LogOriginChanged) {
			t.Fatalf("back to the old origin: got %v, want origin_changed", err)
		}
	})
	t.Run("CorruptStateReportedNotReplaced", func(t *testing.T) {
		s := start(t, "kura.test/corrupt")
		entries, err := os.ReadDir(s.state.Dir)
		if err != nil || len(entries) != 2 || entries[0].Name() != "+keys" {
			t.Fatalf("got %v %v, want the key directory and one origin directory", entries, err)
		}
		path := filepath.Join(s.state.Dir, entries[1].Name(), "checkpoint")
		garbage := []byte("kura.test/corrupt\n99\nnot base64\n\n— kura.test/corrupt AAAA\n")
		if err := os.WriteFile(path, garbage, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err = s.state.Update(ctx, s.c, s.f.checkpoint(t), s.f.vkey)
		if err == nil || !strings.Contains(err.Error(), "corrupt") || !strings.Contains(err.Error(), path) {
			t.Errorf("got %v, want an error naming the corrupt file", err)
		}
		if b, _ := os.ReadFile(path); string(b) != string(garbage) {
			t.Error("the corrupt file was replaced")
		}
	})
}

// FuzzVerifyCheckpoint: any text, against a real key, is refused or
// verified, never a panic; what verifies is the checkpoint that was signed.
func FuzzVerifyCheckpoint(f *testing.F) {
	skey, vkey, err := note.GenerateKey(rand.Reader, "kura.test/fuzz")
	if err != nil {
		f.Fatal(err)
	}
	s, _ := note.NewSigner(skey)
	signed, err := note.Sign(&note.Note{Text: "kura.test/fuzz\n3\n" + base64.StdEncoding.EncodeToString(make([]byte, 32)) + "\n"}, s)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(signed)
	f.Add([]byte("kura.test/fuzz\n-1\n\n\n— kura.test/fuzz AAAA\n"))
	f.Fuzz(func(t *testing.T, text []byte) {
		client.CheckpointOrigin(text)
		cp, err := client.VerifyCheckpoint(text, vkey)
		if err == nil && (cp.Origin != "kura.test/fuzz" || cp.Size != 3) {
			t.Errorf("verified %+v, which the key never signed", cp)
		}
	})
}
