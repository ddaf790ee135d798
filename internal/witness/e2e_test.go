package witness_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	tlogfmt "github.com/transparency-dev/formats/log"
	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/auth"
	"github.com/kura-memory/kura/internal/daemon"
	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/kura-memory/kura/internal/testwait"
	"github.com/kura-memory/kura/internal/witness"
)

// kuradLog reads what a real kurad says of its log.
type kuradLog struct {
	t     *testing.T
	base  string
	token string // "": a kurad without tokens
}

func (k kuradLog) get(path string) *http.Response {
	k.t.Helper()
	req, err := http.NewRequest(http.MethodGet, k.base+path, nil)
	if err != nil {
		k.t.Fatal(err)
	}
	if k.token != "" {
		req.Header.Set("Authorization", "Bearer "+k.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		k.t.Fatal(err)
	}
	return resp
}

func (k kuradLog) info() (origin, vkey string) {
	k.t.Helper()
	resp := k.get("/v1/info")
	var info struct {
		LogOrigin string `json:"log_origin"`
		LogVKey   string `json:"log_vkey"`
	}
	if err := json.Unmarshal([]byte(readAll(resp)), &info); err != nil {
		k.t.Fatal(err)
	}
	if info.LogOrigin == "" || info.LogVKey == "" {
		k.t.Fatalf("/v1/info has no log_origin or log_vkey: %+v", info)
	}
	return info.LogOrigin, info.LogVKey
}

// checkpoint is kurad's current checkpoint, checked with its key.
func (k kuradLog) checkpoint(vkey string) (size uint64, text string) {
	k.t.Helper()
	resp := k.get("/v1/log/checkpoint")
	text = readAll(resp)
	if resp.StatusCode != http.StatusOK {
		k.t.Fatalf("kurad checkpoint: %d %s", resp.StatusCode, text)
	}
	return checkLogSigned(k.t, text, vkey).Size, text
}

func putRecords(t *testing.T, c *client.Client, n int, tag string) {
	t.Helper()
	in := make([]client.RecordInput, n)
	for i := range in {
		in[i] = client.RecordInput{Type: "agent.thought", AuthorID: "agent:witness-test", Content: json.RawMessage(fmt.Sprintf(`{"n":%d,"tag":%q}`, i, tag))}
	}
	if _, err := c.PutRecords(context.Background(), in); err != nil {
		t.Fatal(err)
	}
}

// runWitness runs w until the test ends and checks it stops cleanly.
func runWitness(t *testing.T, w *witness.Witness) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("witness Run: %v", err)
			}
		case <-time.After(testwait.Default):
			t.Error("witness Run did not return after cancel")
		}
	})
}

// A witness follows a real kurad: it cosigns the current checkpoint, then
// each larger one, and what it serves verifies with kurad's log key and the
// witness's cosignature key, by x/mod's note alone.
func TestWitness_E2E_RealKurad(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		poll   time.Duration
		nats   bool // wake on kurad's NATS notice; the poll alone would not come in time
		tokens bool // kurad has tokens: its NATS takes the witness's reader token
	}{
		{"polling", 20 * time.Millisecond, false, false},
		{"woken by NATS", time.Hour, true, false},
		{"woken by NATS with tokens", time.Hour, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var o kuradtest.Options
			var k kuradLog
			var copts []client.Option
			if tt.tokens {
				const admin, reader = "witness-admin", "witness-reader"
				tokens := filepath.Join(t.TempDir(), "tokens")
				lines := auth.HashToken(admin) + " user:root admin * *\n" + auth.HashToken(reader) + " agent:witness reader * *\n"
				if err := os.WriteFile(tokens, []byte(lines), 0o600); err != nil {
					t.Fatal(err)
				}
				o.Configure = func(c *daemon.Config) { c.TokensFile = tokens }
				k.token, copts = reader, []client.Option{client.WithToken(admin)}
			}
			d := kuradtest.StartMain(t, o)
			k.t, k.base = t, d.BaseURL()
			c := client.New(d.BaseURL(), copts...)
			putRecords(t, c, 5, "before")
			origin, vkey := k.info()

			cfg := witness.Config{StateDir: t.TempDir(), Logs: []witness.Log{{URL: d.BaseURL()}}, Poll: tt.poll, Token: k.token}
			if tt.nats {
				cfg.NATSURL = "nats://" + d.NATSAddr()
			}
			w, _ := openWitness(t, cfg)
			runWitness(t, w)
			base := "http://" + w.Addr()

			for round := range 3 {
				want, _ := k.checkpoint(vkey)
				testwait.For(t, testwait.Default, fmt.Sprintf("round %d: the witness to cosign size %d", round, want), func() bool {
					return servedSize(base, origin) >= want
				})
				_, body := get(t, base+"/v1/witness/checkpoint?origin="+origin)
				cp := checkCosigned(t, body, []string{vkey}, w.VKey())
				if cp.Origin != origin || cp.Size < want {
					t.Fatalf("served %s size %d, want %s ≥ %d", cp.Origin, cp.Size, origin, want)
				}
				putRecords(t, c, 3, fmt.Sprintf("round-%d", round))
			}
			if m := metric(t, base, "kura_witness_refused_total"); m != "" {
				t.Fatalf("refusals against an honest kurad: %s", m)
			}
		})
	}
}

// kurad started with KURA_WITNESSES naming a running witness serves its
// checkpoint with the witness's cosignature and says its log is "ok".
func TestWitness_E2E_KuradAttachesCosignature(t *testing.T) {
	t.Parallel()
	// kurad must know the witness's address when it starts, and the
	// witness kurad's: the witness's port is reserved first.
	waddr := kuradtest.FreeAddr(t)
	d := kuradtest.StartMain(t, kuradtest.Options{Configure: func(c *daemon.Config) {
		c.Witnesses = []string{"http://" + waddr}
		c.WitnessPoll = 20 * time.Millisecond
	}})
	k := kuradLog{t: t, base: d.BaseURL()}
	putRecords(t, client.New(d.BaseURL()), 4, "cosigned")
	_, vkey := k.info()
	w, _ := openWitness(t, witness.Config{StateDir: t.TempDir(), Listen: waddr, Logs: []witness.Log{{URL: d.BaseURL(), VKey: vkey}}, Poll: 20 * time.Millisecond})
	runWitness(t, w)

	logV, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	witV, err := fnote.NewVerifierForCosignatureV1(w.VKey())
	if err != nil {
		t.Fatal(err)
	}
	var last string
	testwait.For(t, testwait.Default, "kurad to serve its checkpoint cosigned by the witness", func() bool {
		_, last = k.checkpoint(vkey)
		n, err := note.Open([]byte(last), note.VerifierList(logV, witV))
		return err == nil && len(n.Sigs) == 2
	})
	resp, err := http.Get(d.BaseURL() + "/v1/info")
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Log struct {
			State     string `json:"state"`
			Witnesses []struct {
				URL   string `json:"url"`
				State string `json:"state"`
			} `json:"witnesses"`
		} `json:"log"`
	}
	if err := json.Unmarshal([]byte(readAll(resp)), &info); err != nil {
		t.Fatal(err)
	}
	if info.Log.State != "ok" || len(info.Log.Witnesses) != 1 {
		t.Fatalf("/v1/info log: %+v\ncheckpoint:\n%s", info.Log, last)
	}
}

// BenchmarkWitness_FollowRealKurad writes 1,000 records to a real kurad
// (ten batches of 100) per iteration and measures until the witness, woken
// by kurad's NATS notice and polling every second, has cosigned them all.
// Under a second per iteration means the witness keeps up with 1,000
// writes/s; cosign_lag_ms is the wait after the last write was acknowledged.
func BenchmarkWitness_FollowRealKurad(b *testing.B) {
	d := kuradtest.StartMain(b, kuradtest.Options{})
	c := client.New(d.BaseURL())
	w, err := witness.New(witness.Config{StateDir: b.TempDir(), Listen: "127.0.0.1:0", Logs: []witness.Log{{URL: d.BaseURL()}}, NATSURL: "nats://" + d.NATSAddr()})
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Open(context.Background()); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() { cancel(); <-done; w.Close() }()
	base := "http://" + w.Addr()
	origin := ""
	var lag time.Duration
	batch := make([]client.RecordInput, 100)
	n := 0
	for b.Loop() {
		for range 10 {
			for i := range batch {
				n++
				batch[i] = client.RecordInput{Type: "agent.thought", AuthorID: "agent:bench", Content: json.RawMessage(fmt.Sprintf(`{"n":%d}`, n))}
			}
			if _, err := c.PutRecords(context.Background(), batch); err != nil {
				b.Fatal(err)
			}
		}
		written := time.Now()
		if origin == "" {
			resp, err := http.Get(d.BaseURL() + "/v1/info")
			if err != nil {
				b.Fatal(err)
			}
			var info struct {
				LogOrigin string `json:"log_origin"`
			}
			json.Unmarshal([]byte(readAll(resp)), &info)
			origin = info.LogOrigin
		}
		resp, err := http.Get(d.BaseURL() + "/v1/log/checkpoint")
		if err != nil {
			b.Fatal(err)
		}
		var cp tlogfmt.Checkpoint
		if _, err := cp.Unmarshal([]byte(readAll(resp))); err != nil {
			b.Fatal(err)
		}
		if !testwait.Until(testwait.Default, func() bool { return servedSize(base, origin) >= cp.Size }) {
			b.Fatalf("witness did not cosign size %d", cp.Size)
		}
		lag += time.Since(written)
	}
	b.ReportMetric(float64(lag.Milliseconds())/float64(b.N), "cosign_lag_ms")
}
