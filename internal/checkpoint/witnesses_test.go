package checkpoint

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/kura-memory/kura/internal/kura"
)

// fakeLog is the store as the checkpointer sees it, with failures a test
// switches on.
type fakeLog struct {
	mu          sync.Mutex
	origin      string
	size        int64 // what Log says
	caughtUp    int64 // what LogCaughtUp says
	caughtErr   error
	treeHashErr error
	ackErr      error
	refused     *kura.Error
}

// root is the fake tree hash of size leaves: any value both sides agree on.
func root(size int64) tlog.Hash { return sha256.Sum256([]byte{byte(size)}) }

func (f *fakeLog) Log() kura.LogHead {
	f.mu.Lock()
	defer f.mu.Unlock()
	return kura.LogHead{Size: f.size, Root: root(f.size)}
}

func (f *fakeLog) LogCaughtUp(context.Context) (kura.LogHead, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.caughtErr != nil {
		return kura.LogHead{Size: f.size, Root: root(f.size)}, f.caughtErr
	}
	return kura.LogHead{Size: f.caughtUp, Root: root(f.caughtUp)}, nil
}

func (f *fakeLog) LogOrigin() string { return f.origin }

func (f *fakeLog) LogTreeHash(_ context.Context, size int64) (tlog.Hash, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.treeHashErr != nil {
		return tlog.Hash{}, f.treeHashErr
	}
	return root(size), nil
}

func (f *fakeLog) LogAcknowledged(context.Context, string, int64, string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return false, f.ackErr
}

func (f *fakeLog) AcknowledgeLog(context.Context, kura.LogAcknowledgement) (string, error) {
	return "", errors.New("not in this test")
}

func (f *fakeLog) RefuseWrites(err *kura.Error) { f.mu.Lock(); f.refused = err; f.mu.Unlock() }
func (f *fakeLog) AllowWrites()                 { f.mu.Lock(); f.refused = nil; f.mu.Unlock() }

// fakeWitness holds one checkpoint signed with key, of origin at size
// (size 0: none), and serves it at GET /v1/witness/checkpoints.
type fakeWitness struct {
	mu     sync.Mutex
	key    ed25519.PrivateKey
	origin string
	size   int64
}

func (fw *fakeWitness) set(origin string, size int64) {
	fw.mu.Lock()
	fw.origin, fw.size = origin, size
	fw.mu.Unlock()
}

func (fw *fakeWitness) serve(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fw.mu.Lock()
		origin, n := fw.origin, fw.size
		fw.mu.Unlock()
		var l witnessList
		l.Witness = "test"
		if n > 0 {
			s, err := NewSigner(origin, fw.key)
			if err != nil {
				t.Error(err)
			}
			msg, err := note.Sign(&note.Note{Text: Body(origin, n, root(n))}, s)
			if err != nil {
				t.Error(err)
			}
			l.Checkpoints = append(l.Checkpoints, struct {
				Origin     string `json:"origin"`
				Size       int64  `json:"size"`
				Checkpoint string `json:"checkpoint"`
			}{origin, n, string(msg)})
		}
		json.NewEncoder(w).Encode(l)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A check that could not read the log says nothing about the witness or
// the log: the last conclusive status stands (with the reason), and no
// rollback is reported from a log that was not caught up. A check that
// could read it judges as before.
func TestCheckWitnesses_FailedReadsAreInconclusive(t *testing.T) {
	t.Parallel()
	dbDown := errors.New("database unavailable")
	cases := []struct {
		name        string
		witnessSize int64 // what the witness cosigned at the second check
		foreign     bool  // the witness's checkpoint is of another origin
		fail        func(f *fakeLog)
		state       string // the witness's state after the second check
		errPart     string
		refused     bool
	}{
		{"tree hash fails", 8, false, func(f *fakeLog) { f.treeHashErr = dbDown }, kura.LogOK, "check not completed", false},
		{"log not caught up, witness ahead of this instance", 12, false, func(f *fakeLog) { f.caughtErr = dbDown }, kura.LogOK, "reading the log", false},
		{"acknowledgements unreadable", 8, true, func(f *fakeLog) { f.ackErr = dbDown }, kura.LogOK, "check not completed", false},
		{"witness ahead of the caught-up log (control)", 12, false, func(f *fakeLog) {}, kura.LogRollback, "", true},
		{"no failure (control)", 8, false, func(f *fakeLog) {}, kura.LogOK, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, key, _ := ed25519.GenerateKey(rand.Reader)
			f := &fakeLog{origin: "kura/test", size: 10, caughtUp: 10}
			fw := &fakeWitness{key: key, origin: f.origin, size: 8}
			srv := fw.serve(t)
			c := New(Config{Log: f, Key: key, Witnesses: []string{srv.URL}})
			c.CheckWitnesses(context.Background())
			if st := c.Status(); st.State != kura.LogOK || st.Witnesses[0].Size != 8 {
				t.Fatalf("first check: %+v", st)
			}
			origin := f.origin
			if tc.foreign {
				origin = "kura/older"
			}
			fw.set(origin, tc.witnessSize)
			f.mu.Lock()
			tc.fail(f)
			f.mu.Unlock()
			c.CheckWitnesses(context.Background())
			st := c.Status()
			w := st.Witnesses[0]
			if w.State != tc.state || !strings.Contains(w.Error, tc.errPart) || (tc.errPart == "") != (w.Error == "") {
				t.Errorf("witness after the second check: %+v, want state %q, error with %q", w, tc.state, tc.errPart)
			}
			f.mu.Lock()
			refused := f.refused != nil
			f.mu.Unlock()
			if refused != tc.refused || (len(st.Detected) > 0) != tc.refused {
				t.Errorf("writes refused %v, detected %+v; want refused %v", refused, st.Detected, tc.refused)
			}
		})
	}
}
