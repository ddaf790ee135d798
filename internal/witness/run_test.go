package witness_test

import (
	"context"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/testwait"
	"github.com/kura-memory/kura/internal/witness"
)

// Run follows while readers fetch the served checkpoint: every answer
// verifies and sizes never go back; cancelling stops it cleanly.
func TestWitness_RunConcurrentReadsWhileFollowing(t *testing.T) {
	t.Parallel()
	const origin = "kura.test/run"
	k := newLogKey(t, origin)
	fl := newFakeLog(t, origin, k)
	fl.grow("a", 1)
	w, _ := openWitness(t, witness.Config{StateDir: t.TempDir(), Logs: []witness.Log{{URL: fl.srv.URL}}, Poll: 2 * time.Millisecond})
	base := "http://" + w.Addr()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()

	const rounds, per = 20, 5
	final := uint64(1 + rounds*per)
	cpURL := base + "/v1/witness/checkpoint?origin=" + url.QueryEscape(origin)
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var last uint64
			for last < final {
				resp, err := http.Get(cpURL)
				if err != nil {
					errs <- err.Error()
					return
				}
				body := readAll(resp)
				if resp.StatusCode == http.StatusNotFound {
					continue // not cosigned yet
				}
				cp := checkCosigned(t, body, []string{k.vkey}, w.VKey())
				if cp.Size < last {
					errs <- "served size went back"
					return
				}
				last = cp.Size
			}
		}()
	}
	for range rounds {
		fl.grow("a", per)
		size := fl.size
		testwait.For(t, testwait.Default, "the witness to cosign the grown log", func() bool {
			return servedSize(base, origin) >= uint64(size)
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(testwait.Default):
		t.Fatal("Run did not return after cancel")
	}
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Fatal("still serving after Run returned")
	}
}

// BenchmarkWitness_Follow1000 measures one poll that cosigns 1,000 new
// leaves (checkpoint, consistency proof, cosignature, fsync'd state): under
// a second means a witness polling every second keeps up with 1,000 writes/s.
func BenchmarkWitness_Follow1000(b *testing.B) {
	const origin = "kura.test/bench"
	fl := newFakeLog(b, origin, newLogKey(b, origin))
	fl.grow("a", 1)
	w, _ := openWitness(b, witness.Config{StateDir: b.TempDir(), Logs: []witness.Log{{URL: fl.srv.URL}}})
	w.Poll(context.Background())
	for b.Loop() {
		b.StopTimer()
		fl.grow("a", 1000)
		b.StartTimer()
		if out := w.Poll(context.Background()); out[0].Action != witness.ActionCosigned {
			b.Fatalf("%+v", out)
		}
	}
}
