package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/daemon"
	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/kura-memory/kura/internal/testwait"
)

// cosigningKurad is a kurad whose log a real kura witness follows, with
// KURA_WITNESSES naming that witness, and a session of one turn.
type cosigningKurad struct {
	url     string
	session client.Session
	info    client.Info
	wname   string
	wvkey   string
}

func startCosigningKurad(t *testing.T) cosigningKurad {
	t.Helper()
	dir := t.TempDir()
	sameData := func(cfg *daemon.Config) { cfg.DataDir, cfg.KeyFile = dir, dir+"/kurad.key" }
	d := kuradtest.StartMain(t, kuradtest.Options{Configure: sameData})
	addr, url := d.HTTPAddr(), d.BaseURL()
	k := cosigningKurad{url: url}
	k.session, _ = driveSession(t, url, "hashi", "cosigned", 1)
	kuraJSON(t, url, "", &k.info, "info")

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
	k.wname, k.wvkey = wi.Name, wi.VKey

	// kurad again, same data and address, now asking the witness.
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	kuradtest.StartMain(t, kuradtest.Options{Configure: func(cfg *daemon.Config) {
		sameData(cfg)
		cfg.HTTPAddr, cfg.Witnesses, cfg.WitnessPoll = addr, []string{wbase}, 20*time.Millisecond
	}})
	return k
}

// TestE2E_ExportCosignedOffline: with a real kura witness cosigning and
// kurad serving the cosignature, an export carries the cosigned checkpoint
// and kura verify --pubkey --witness-key checks the witness signed it, with
// no kurad and no witness running.
func TestE2E_ExportCosignedOffline(t *testing.T) {
	t.Parallel()
	k := startCosigningKurad(t)
	url, s, info := k.url, k.session, k.info
	testwait.For(t, testwait.Default, "kurad to serve the witness's cosignature", func() bool {
		_, body := httpGet(t, url+"/v1/log/checkpoint", "")
		return strings.Contains(body, "— "+k.wname+" ")
	})

	p := filepath.Join(t.TempDir(), "x.jsonl")
	if _, errOut, code := runKura(t, url, nil, "export", s.ID, "--format=jsonl", "--out", p); code != exitOK {
		t.Fatalf("export: %q", errOut)
	}
	offline := deadURL(t)
	out, errOut, code := runKura(t, offline, nil, "verify", "--pubkey", info.PublicKey, "--witness-key", k.wvkey, p)
	if code != exitOK || !strings.Contains(out, "cosigned by "+k.wname) {
		t.Errorf("with the witness key: exit %d, %q %q", code, out, errOut)
	}
	_, otherVKey := newWitnessKey(t)
	out, _, code = runKura(t, offline, nil, "verify", "--pubkey", info.PublicKey, "--witness-key", otherVKey, p)
	if code != exitFail || !strings.Contains(out, "log_cosignature: ") {
		t.Errorf("with another witness's key: exit %d, %q, want log_cosignature", code, out)
	}
	b, _ := os.ReadFile(p)
	if !strings.Contains(string(b), k.wname) {
		t.Errorf("the export does not carry the cosignature line")
	}
}

// TestE2E_ExportCosignedUnderLoad: while writers keep the log moving, the
// current checkpoint is newer than anything the witness cosigned; the
// export still carries the witness's newest cosigned checkpoint with the
// proof that the exported checkpoint extends it, and kura verify --pubkey
// --witness-key accepts it offline. Before, such an export had no
// cosignature and the verification failed.
func TestE2E_ExportCosignedUnderLoad(t *testing.T) {
	t.Parallel()
	k := startCosigningKurad(t)
	testwait.For(t, testwait.Default, "kurad to keep what the witness cosigned", func() bool {
		_, body := httpGet(t, k.url+"/v1/log/cosigned", "")
		return strings.Contains(body, "— "+k.wname+" ")
	})
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var writeErr atomic.Value
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := client.New(k.url)
			for i := 0; ctx.Err() == nil; i++ {
				_, err := c.PutRecord(ctx, client.RecordInput{Type: "agent.thought", AuthorID: "agent:load",
					Content: json.RawMessage(fmt.Sprintf(`{"w":%d,"i":%d}`, w, i))})
				if err != nil && ctx.Err() == nil {
					writeErr.Store(err.Error())
					return
				}
			}
		}(w)
	}
	defer func() { stop(); wg.Wait() }()

	offline := deadURL(t)
	older := 0
	for i := 0; i < 3; i++ {
		p := filepath.Join(t.TempDir(), "x.jsonl")
		if _, errOut, code := runKura(t, k.url, nil, "export", k.session.ID, "--format=jsonl", "--out", p); code != exitOK {
			t.Fatalf("export under load: %q", errOut)
		}
		out, errOut, code := runKura(t, offline, nil, "verify", "--pubkey", k.info.PublicKey, "--witness-key", k.wvkey, p)
		if code != exitOK || !strings.Contains(out, "cosigned by "+k.wname) {
			t.Fatalf("export %d under load, with the witness key: exit %d, %q %q", i, code, out, errOut)
		}
		if strings.Contains(out, "which it extends") {
			older++
		}
	}
	stop()
	wg.Wait()
	if e := writeErr.Load(); e != nil {
		t.Fatalf("a write failed under load: %v", e)
	}
	t.Logf("%d of 3 exports were witnessed through an older cosigned checkpoint", older)
}
