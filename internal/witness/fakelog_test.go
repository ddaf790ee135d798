package witness_test

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	tlogfmt "github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// fakeLog is a Kura log as the witness sees it (/v1/log/checkpoint,
// /v1/log/consistency, /v1/info), built from tlog over in-memory hashes and
// signed with note keys, with knobs to make it lie.
type fakeLog struct {
	t      testing.TB
	origin string
	srv    *httptest.Server

	mu      sync.Mutex
	hashes  []tlog.Hash // tlog's stored hashes of the current tree
	size    int64
	signers []note.Signer
	vkey    string // what /v1/info names
	token   string // when set, the bearer token every request must carry

	down      bool  // answer 503 to everything
	showSize  int64 // when > 0, the checkpoint shows this size instead of the current one
	proofMode string
}

// Proof modes.
const (
	proofGood      = ""
	proofTampered  = "tampered"  // a well-formed proof with one hash changed
	proofMalformed = "malformed" // not base64 hashes
)

type logKey struct {
	signer note.Signer
	vkey   string
}

func newLogKey(t testing.TB, origin string) logKey {
	t.Helper()
	skey, vkey, err := note.GenerateKey(rand.Reader, origin)
	if err != nil {
		t.Fatal(err)
	}
	s, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	return logKey{signer: s, vkey: vkey}
}

func newFakeLog(t testing.TB, origin string, key logKey) *fakeLog {
	t.Helper()
	fl := &fakeLog{t: t, origin: origin, signers: []note.Signer{key.signer}, vkey: key.vkey}
	fl.srv = httptest.NewServer(http.HandlerFunc(fl.serve))
	t.Cleanup(fl.srv.Close)
	return fl
}

func (fl *fakeLog) reader() tlog.HashReader {
	return tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			if x < 0 || x >= int64(len(fl.hashes)) {
				return nil, fmt.Errorf("no stored hash %d", x)
			}
			out[i] = fl.hashes[x]
		}
		return out, nil
	})
}

// grow appends n leaves whose data starts with prefix, so that two logs
// grown with different prefixes fork.
func (fl *fakeLog) grow(prefix string, n int) {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	for range n {
		hs, err := tlog.StoredHashes(fl.size, fmt.Appendf(nil, "%s-%d", prefix, fl.size), fl.reader())
		if err != nil {
			fl.t.Error(err)
			return
		}
		fl.hashes = append(fl.hashes, hs...)
		fl.size++
	}
}

// reset throws the tree away: the log starts again from nothing, as a
// restored old copy followed by other writes would.
func (fl *fakeLog) reset() {
	fl.mu.Lock()
	fl.hashes, fl.size = nil, 0
	fl.mu.Unlock()
}

func (fl *fakeLog) set(f func(*fakeLog)) {
	fl.mu.Lock()
	f(fl)
	fl.mu.Unlock()
}

func (fl *fakeLog) treeHash(size int64) tlog.Hash {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	h, err := tlog.TreeHash(size, fl.reader())
	if err != nil {
		fl.t.Fatal(err)
	}
	return h
}

func (fl *fakeLog) serve(w http.ResponseWriter, r *http.Request) {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if fl.down {
		http.Error(w, `{"error":{"code":"unavailable","message":"down","details":{}}}`, http.StatusServiceUnavailable)
		return
	}
	if fl.token != "" && r.Header.Get("Authorization") != "Bearer "+fl.token {
		http.Error(w, `{"error":{"code":"unauthorized","message":"no token","details":{}}}`, http.StatusUnauthorized)
		return
	}
	switch r.URL.Path {
	case "/v1/info":
		json.NewEncoder(w).Encode(map[string]any{"log_origin": fl.origin, "log_vkey": fl.vkey})
	case "/v1/log/checkpoint":
		size := fl.size
		if fl.showSize > 0 {
			size = fl.showSize
		}
		h, err := tlog.TreeHash(size, fl.reader())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		text := tlogfmt.Checkpoint{Origin: fl.origin, Size: uint64(size), Hash: h[:]}.Marshal()
		msg, err := note.Sign(&note.Note{Text: string(text)}, fl.signers...)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write(msg)
	case "/v1/log/consistency":
		old, err1 := strconv.ParseInt(r.URL.Query().Get("old"), 10, 64)
		nw, err2 := strconv.ParseInt(r.URL.Query().Get("new"), 10, 64)
		if err1 != nil || err2 != nil || old < 0 || old > nw || nw > fl.size {
			http.Error(w, `{"error":{"code":"invalid","message":"range","details":{}}}`, http.StatusBadRequest)
			return
		}
		proof := []string{}
		if old > 0 && old < nw {
			p, err := tlog.ProveTree(nw, old, fl.reader())
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			for _, h := range p {
				proof = append(proof, h.String())
			}
		}
		switch fl.proofMode {
		case proofTampered:
			if len(proof) > 0 {
				proof[0] = tlog.RecordHash([]byte("forged")).String()
			}
		case proofMalformed:
			proof = append(proof, "not a hash!")
		}
		json.NewEncoder(w).Encode(map[string]any{"old": old, "new": nw, "proof": proof})
	default:
		http.NotFound(w, r)
	}
}
