package witness_test

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/daemon"
	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/kura-memory/kura/internal/testwait"
	"github.com/kura-memory/kura/internal/witness"
)

// The attack a witness exists for: kurad's data directory is put back to
// an older copy (genuinely signed). The witness, which cosigned the newer
// tree, refuses the older one and keeps serving the newer; kurad, started
// with KURA_WITNESSES, finds the witness's tree larger than its own log and
// says rollback_detected.
func TestWitness_E2E_RollbackOfTheDataDirectory(t *testing.T) {
	t.Parallel()
	kaddr := kuradtest.FreeAddr(t) // kurad comes back on the same address after each restart
	kbase := "http://" + kaddr
	dataDir, oldCopy, keyDir := t.TempDir(), t.TempDir(), t.TempDir()

	w, _ := openWitness(t, witness.Config{StateDir: t.TempDir(), Logs: []witness.Log{{URL: kbase}}, Poll: 20 * time.Millisecond})
	runWitness(t, w)
	wbase := "http://" + w.Addr()

	start := func() *kuradtest.Daemon {
		return kuradtest.StartMain(t, kuradtest.Options{Configure: func(c *daemon.Config) {
			c.DataDir, c.KeyFile, c.HTTPAddr = dataDir, filepath.Join(keyDir, "kurad.key"), kaddr
			c.Witnesses, c.WitnessPoll = []string{wbase}, 20*time.Millisecond
		}})
	}
	stop := func(d *kuradtest.Daemon) {
		ctx, cancel := context.WithTimeout(context.Background(), testwait.Default)
		defer cancel()
		if err := d.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	k := kuradLog{t: t, base: kbase}
	waitCosigned := func(what string) uint64 {
		origin, vkey := k.info()
		size, _ := k.checkpoint(vkey)
		testwait.For(t, testwait.Default, what, func() bool { return servedSize(wbase, origin) >= size })
		return size
	}

	d := start()
	putRecords(t, client.New(kbase), 3, "old")
	oldSize := waitCosigned("the witness to cosign the old tree")
	origin, _ := k.info()
	stop(d)
	kuradtest.CopyDataDir(t, dataDir, oldCopy)

	d = start()
	putRecords(t, client.New(kbase), 4, "new")
	newSize := waitCosigned("the witness to cosign the newer tree")
	if newSize <= oldSize {
		t.Fatalf("newer tree %d not larger than the old %d", newSize, oldSize)
	}
	stop(d)

	kuradtest.CopyDataDir(t, oldCopy, dataDir) // the rollback
	start()
	testwait.For(t, testwait.Default, "the witness to refuse the rolled-back tree", func() bool {
		return metric(t, wbase, `kura_witness_refused_total{origin="`+origin+`",reason="smaller"}`) != ""
	})
	if got := servedSize(wbase, origin); got != newSize {
		t.Fatalf("witness serves size %d after the rollback, want the newer %d kept", got, newSize)
	}
	testwait.For(t, testwait.Default, "kurad to report rollback_detected", func() bool {
		resp, err := http.Get(kbase + "/v1/info")
		if err != nil {
			return false
		}
		var info struct {
			Log struct {
				State string `json:"state"`
			} `json:"log"`
		}
		json.Unmarshal([]byte(readAll(resp)), &info)
		return info.Log.State == "rollback_detected"
	})
	resp, err := http.Get(kbase + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(resp); resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "rollback_detected") {
		t.Fatalf("/readyz after the rollback: %d %s", resp.StatusCode, body)
	}

	// Recovery without the newer copy: an admin acknowledges the loss,
	// kurad moves to a new origin, the witness follows that one from its
	// first checkpoint and keeps the old origin's as the evidence.
	resp, err = http.Post(kbase+"/v1/admin/log/acknowledge", "application/json", strings.NewReader(`{"reason":"test: the newer copy is lost"}`))
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(resp); resp.StatusCode/100 != 2 {
		t.Fatalf("acknowledge: %d %s", resp.StatusCode, body)
	}
	putRecords(t, client.New(kbase), 2, "after")
	newOrigin, _ := k.info()
	if newOrigin == origin {
		t.Fatalf("origin unchanged after the acknowledgement: %s", origin)
	}
	waitCosigned("the witness to cosign the new origin")
	if got := servedSize(wbase, origin); got != newSize {
		t.Fatalf("old origin served at %d after the acknowledgement, want %d kept", got, newSize)
	}
	if m := metric(t, wbase, `kura_witness_origin_changes_total{log="`+kbase+`"} 1`); m == "" {
		t.Fatal("the move to a new origin was not counted")
	}
}

// A real kurad rotates its key: restarted with a new key and the old one as
// its previous key, it signs checkpoints with both; the witness, which
// pinned the old key on first contact, pins the new one and keeps following
// the same origin once kurad signs with the new key alone.
func TestWitness_E2E_KuradKeyRotation(t *testing.T) {
	t.Parallel()
	kaddr := kuradtest.FreeAddr(t)
	kbase := "http://" + kaddr
	dataDir, keyDir := t.TempDir(), t.TempDir()
	oldKey, newKey := filepath.Join(keyDir, "old.key"), filepath.Join(keyDir, "new.key")

	w, logs := openWitness(t, witness.Config{StateDir: t.TempDir(), Logs: []witness.Log{{URL: kbase}}, Poll: 20 * time.Millisecond})
	runWitness(t, w)
	wbase := "http://" + w.Addr()
	start := func(key, previous string) *kuradtest.Daemon {
		return kuradtest.StartMain(t, kuradtest.Options{Configure: func(c *daemon.Config) {
			c.DataDir, c.KeyFile, c.PreviousKeyFile, c.HTTPAddr = dataDir, key, previous, kaddr
		}})
	}
	stop := func(d *kuradtest.Daemon) {
		ctx, cancel := context.WithTimeout(context.Background(), testwait.Default)
		defer cancel()
		if err := d.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	k := kuradLog{t: t, base: kbase}
	round := func(d *kuradtest.Daemon, tag string) (origin, vkey string) {
		putRecords(t, client.New(kbase), 2, tag)
		origin, vkey = k.info()
		size, _ := k.checkpoint(vkey)
		testwait.For(t, testwait.Default, tag+": the witness to cosign", func() bool { return servedSize(wbase, origin) >= size })
		_, body := get(t, wbase+"/v1/witness/checkpoint?origin="+origin)
		checkCosigned(t, body, []string{vkey}, w.VKey())
		return origin, vkey
	}

	d := start(oldKey, "")
	origin1, vkey1 := round(d, "old key")
	stop(d)
	d = start(newKey, oldKey)
	origin2, vkey2 := round(d, "both keys")
	stop(d)
	if origin2 != origin1 || vkey2 == vkey1 {
		t.Fatalf("rotation: origin %s -> %s, vkey %s -> %s; want the same origin, another key", origin1, origin2, vkey1, vkey2)
	}
	d = start(newKey, "")
	round(d, "new key alone")
	if strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "log key rotated") {
		t.Fatalf("witness log:\n%s", logs.String())
	}
}
