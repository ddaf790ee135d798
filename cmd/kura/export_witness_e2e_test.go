package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/daemon"
	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/kura-memory/kura/internal/testwait"
)

// TestE2E_ExportCosignedOffline: with a real kura witness cosigning and
// kurad serving the cosignature, an export carries the cosigned checkpoint
// and kura verify --pubkey --witness-key checks the witness signed it, with
// no kurad and no witness running.
func TestE2E_ExportCosignedOffline(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sameData := func(cfg *daemon.Config) { cfg.DataDir, cfg.KeyFile = dir, dir+"/kurad.key" }
	d := kuradtest.StartMain(t, kuradtest.Options{Configure: sameData})
	addr, url := d.HTTPAddr(), d.BaseURL()
	s, _ := driveSession(t, url, "hashi", "cosigned", 1)
	var info client.Info
	kuraJSON(t, url, "", &info, "info")

	var stderr kuradtest.SyncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, []string{"witness", url, "--state", t.TempDir(), "--listen", "127.0.0.1:0", "--poll", "20ms"},
			strings.NewReader(""), io.Discard, &stderr, func(string) string { return "" })
	}()
	t.Cleanup(func() {
		cancel()
		<-exit
	})
	addrRE := regexp.MustCompile(`addr=(127\.0\.0\.1:\d+)`)
	var wbase string
	testwait.For(t, testwait.Default, "kura witness to say where it listens", func() bool {
		if m := addrRE.FindStringSubmatch(stderr.String()); m != nil {
			wbase = "http://" + m[1]
		}
		return wbase != ""
	})
	var wi struct{ Name, VKey string }
	if _, body := httpGet(t, wbase+"/v1/witness/info", ""); json.Unmarshal([]byte(body), &wi) != nil || wi.VKey == "" {
		t.Fatalf("/v1/witness/info: %s", body)
	}

	// kurad again, same data and address, now asking the witness.
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	kuradtest.StartMain(t, kuradtest.Options{Configure: func(cfg *daemon.Config) {
		sameData(cfg)
		cfg.HTTPAddr, cfg.Witnesses, cfg.WitnessPoll = addr, []string{wbase}, 20*time.Millisecond
	}})
	testwait.For(t, testwait.Default, "kurad to serve the witness's cosignature", func() bool {
		_, body := httpGet(t, url+"/v1/log/checkpoint", "")
		return strings.Contains(body, "— "+wi.Name+" ")
	})

	p := filepath.Join(t.TempDir(), "x.jsonl")
	if _, errOut, code := runKura(t, url, nil, "export", s.ID, "--format=jsonl", "--out", p); code != exitOK {
		t.Fatalf("export: %q", errOut)
	}
	offline := deadURL(t)
	out, errOut, code := runKura(t, offline, nil, "verify", "--pubkey", info.PublicKey, "--witness-key", wi.VKey, p)
	if code != exitOK || !strings.Contains(out, "cosigned by "+wi.Name) {
		t.Errorf("with the witness key: exit %d, %q %q", code, out, errOut)
	}
	_, otherVKey := newWitnessKey(t)
	out, _, code = runKura(t, offline, nil, "verify", "--pubkey", info.PublicKey, "--witness-key", otherVKey, p)
	if code != exitFail || !strings.Contains(out, "log_cosignature: ") {
		t.Errorf("with another witness's key: exit %d, %q, want log_cosignature", code, out)
	}
	b, _ := os.ReadFile(p)
	if !strings.Contains(string(b), wi.Name) {
		t.Errorf("the export does not carry the cosignature line")
	}
}
