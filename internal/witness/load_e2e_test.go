package witness_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/daemon"
	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/kura-memory/kura/internal/testwait"
	"github.com/kura-memory/kura/internal/witness"
)

// slowProxy forwards to base after delay: a witness on a slow link, so
// that it cosigns newer trees while kurad's request to it is on the way.
func slowProxy(t *testing.T, base string, delay time.Duration) string {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// liveLog is a kurad with KURA_WITNESSES naming a real witness behind a
// slow proxy, the witness following kurad directly and fast.
type liveLog struct {
	kbase, wbase string
	w            *witness.Witness
}

func startLiveLog(t *testing.T, delay time.Duration) liveLog {
	t.Helper()
	kaddr := kuradtest.FreeAddr(t)
	kbase := "http://" + kaddr
	w, _ := openWitness(t, witness.Config{StateDir: t.TempDir(), Logs: []witness.Log{{URL: kbase}}, Poll: 10 * time.Millisecond})
	runWitness(t, w)
	wbase := "http://" + w.Addr()
	proxied := slowProxy(t, wbase, delay)
	kuradtest.StartMain(t, kuradtest.Options{Configure: func(c *daemon.Config) {
		// The poll is also each check's deadline: longer than the delay.
		c.HTTPAddr, c.Witnesses, c.WitnessPoll = kaddr, []string{proxied}, 250*time.Millisecond
	}})
	return liveLog{kbase: kbase, wbase: wbase, w: w}
}

// writeUnderLoad runs writers concurrent writers for d and returns how many
// writes succeeded and every failure.
func writeUnderLoad(t *testing.T, base string, writers int, d time.Duration) (int64, []string) {
	t.Helper()
	var (
		ok       atomic.Int64
		mu       sync.Mutex
		failures []string
		wg       sync.WaitGroup
	)
	c := client.New(base)
	end := time.Now().Add(d)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; time.Now().Before(end); i++ {
				_, err := c.PutRecord(context.Background(), client.RecordInput{Type: "agent.thought", AuthorID: "agent:load",
					Content: json.RawMessage(fmt.Sprintf(`{"w":%d,"i":%d}`, w, i))})
				if err != nil {
					mu.Lock()
					failures = append(failures, err.Error())
					mu.Unlock()
					return
				}
				ok.Add(1)
			}
		}(w)
	}
	wg.Wait()
	return ok.Load(), failures
}

type logInfo struct {
	Origin string `json:"log_origin"`
	Log    struct {
		State     string            `json:"state"`
		Size      int64             `json:"size"`
		Detected  []json.RawMessage `json:"detected"`
		Witnesses []struct {
			URL   string `json:"url"`
			Size  int64  `json:"size"`
			State string `json:"state"`
		} `json:"witnesses"`
	} `json:"log"`
}

func readLogInfo(t *testing.T, base string) logInfo {
	t.Helper()
	_, body := get(t, base+"/v1/info")
	var info logInfo
	if err := json.Unmarshal([]byte(body), &info); err != nil {
		t.Fatalf("/v1/info: %v: %s", err, body)
	}
	return info
}

// A live kurad that nobody attacked, whose witness cosigns newer trees
// while kurad's question to it is on a slow link, must not take the
// witness's newer tree for a rollback: the log grew meanwhile. Before the
// fix kurad compared with its size from before the question and refused
// writes within a second.
func TestWitness_E2E_SlowWitnessUnderLoad(t *testing.T) {
	t.Parallel()
	l := startLiveLog(t, 100*time.Millisecond)
	if !testwait.Until(testwait.Default, func() bool { return readLogInfo(t, l.kbase).Log.State == "ok" }) {
		_, body := get(t, l.kbase+"/v1/info")
		t.Fatalf("kurad never heard from its witness: %s", body)
	}
	n, failures := writeUnderLoad(t, l.kbase, 8, 3*time.Second)
	if len(failures) > 0 {
		t.Fatalf("%d writes failed under load (after %d succeeded), first: %s", len(failures), n, failures[0])
	}
	info := readLogInfo(t, l.kbase)
	if info.Log.State != "ok" || len(info.Log.Detected) > 0 {
		t.Fatalf("after %d writes: log state %q, detected %s; want ok and nothing", n, info.Log.State, info.Log.Detected)
	}
	if code, body := get(t, l.kbase+"/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz after the load: %d %s", code, body)
	}
	if got := servedSize(l.wbase, info.Origin); got < 2 {
		t.Fatalf("the witness cosigned only a tree of %d during the load", got)
	}
	t.Logf("%d writes; witness at %d of %d", n, servedSize(l.wbase, info.Origin), info.Log.Size)
}

// Under writes kurad's current checkpoint seldom carries a cosignature (the
// witness cosigned a tree of a moment ago), so a client asks for what the
// witnesses cosigned and checks that the current tree extends it: it must
// get a witnessed checkpoint nearly every time, while the plain checkpoint
// stays kurad's signed note of its current tree.
func TestWitness_E2E_CosignedCheckpointUnderLoad(t *testing.T) {
	t.Parallel()
	l := startLiveLog(t, 20*time.Millisecond)
	origin, vkey := kuradLog{t: t, base: l.kbase}.info()
	putRecords(t, client.New(l.kbase), 3, "before")
	testwait.For(t, testwait.Default, "kurad to keep a cosigned checkpoint", func() bool {
		_, cps, err := client.New(l.kbase).WitnessedCheckpoints(context.Background(), vkey)
		return err == nil && len(cps) > 0
	})
	done := make(chan struct{})
	type result struct{ tries, witnessed, behind int }
	res := make(chan result, 1)
	go func() {
		var r result
		c := client.New(l.kbase)
		defer func() { res <- r }()
		for {
			select {
			case <-done:
				return
			default:
			}
			r.tries++
			cur, cps, err := c.WitnessedCheckpoints(context.Background(), vkey)
			if err != nil {
				t.Errorf("witnessed checkpoints under load: %v", err)
				return
			}
			if cur.Origin != origin {
				t.Errorf("current checkpoint of origin %q, want %q", cur.Origin, origin)
			}
			for _, w := range cps {
				if _, err := client.VerifyCosignatures(w.Text, vkey, l.w.VKey()); err == nil {
					r.witnessed++
					if w.Size < cur.Size {
						r.behind++
					}
					break
				}
			}
		}
	}()
	n, failures := writeUnderLoad(t, l.kbase, 4, 2*time.Second)
	close(done)
	r := <-res
	if len(failures) > 0 {
		t.Fatalf("%d writes failed under load, first: %s", len(failures), failures[0])
	}
	if r.tries < 10 || r.witnessed < r.tries*9/10 {
		t.Fatalf("a witnessed checkpoint in %d of %d tries during %d writes, want nearly all", r.witnessed, r.tries, n)
	}
	t.Logf("%d writes; witnessed checkpoints in %d of %d tries, %d of them older than the current tree", n, r.witnessed, r.tries, r.behind)
}
