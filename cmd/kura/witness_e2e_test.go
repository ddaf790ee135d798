package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
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
)

func httpGet(t *testing.T, u, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// kura witness against a real kurad with tokens: it follows the log with a
// reader token (flags after the positional URL), cosigns each new
// checkpoint, and what it serves verifies with kurad's log key and the
// witness's key using x/mod's note alone. SIGTERM (the context) stops it
// with exit 0.
func TestWitnessCommand_E2E_RealKurad(t *testing.T) {
	t.Parallel()
	const admin, reader = "witness-test-admin", "witness-test-reader"
	tokens := filepath.Join(t.TempDir(), "tokens")
	lines := auth.HashToken(admin) + " user:root admin * *\n" + auth.HashToken(reader) + " agent:witness reader * *\n"
	if err := os.WriteFile(tokens, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	d := kuradtest.StartMain(t, kuradtest.Options{Configure: func(c *daemon.Config) { c.TokensFile = tokens }})
	c := client.New(d.BaseURL(), client.WithToken(admin))
	put := func(n int) {
		for i := range n {
			if _, err := c.PutRecord(context.Background(), client.RecordInput{Type: "agent.thought", AuthorID: "agent:w", Content: json.RawMessage(fmt.Sprintf("%d", i))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	put(3)
	_, infoBody := httpGet(t, d.BaseURL()+"/v1/info", reader)
	var info struct {
		LogOrigin string `json:"log_origin"`
		LogVKey   string `json:"log_vkey"`
	}
	if err := json.Unmarshal([]byte(infoBody), &info); err != nil || info.LogVKey == "" {
		t.Fatalf("/v1/info: %v %s", err, infoBody)
	}
	kuradSize := func() uint64 {
		code, body := httpGet(t, d.BaseURL()+"/v1/log/checkpoint", reader)
		if code != http.StatusOK {
			t.Fatalf("kurad checkpoint: %d %s", code, body)
		}
		var cp tlogfmt.Checkpoint
		if _, err := cp.Unmarshal([]byte(body)); err != nil {
			t.Fatal(err)
		}
		return cp.Size
	}

	state := t.TempDir()
	var stderr kuradtest.SyncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	exit := make(chan int, 1)
	go func() {
		args := []string{"witness", d.BaseURL() + "=" + info.LogVKey, "--state", state, "--listen", "127.0.0.1:0", "--poll", "20ms", "--token", reader}
		exit <- run(ctx, args, strings.NewReader(""), io.Discard, &stderr, func(string) string { return "" })
	}()
	addrRE := regexp.MustCompile(`addr=(127\.0\.0\.1:\d+)`)
	var base string
	testwait.For(t, testwait.Default, "kura witness to say where it listens", func() bool {
		m := addrRE.FindStringSubmatch(stderr.String())
		if m != nil {
			base = "http://" + m[1]
		}
		return m != nil
	})
	_, wInfo := httpGet(t, base+"/v1/witness/info", "")
	var wi struct{ Name, VKey string }
	if err := json.Unmarshal([]byte(wInfo), &wi); err != nil || wi.VKey == "" {
		t.Fatalf("/v1/witness/info: %v %s", err, wInfo)
	}
	logV, err := note.NewVerifier(info.LogVKey)
	if err != nil {
		t.Fatal(err)
	}
	witV, err := fnote.NewVerifierForCosignatureV1(wi.VKey)
	if err != nil {
		t.Fatal(err)
	}

	for round := range 2 {
		want := kuradSize()
		var served string
		testwait.For(t, testwait.Default, fmt.Sprintf("round %d: the witness to cosign size %d", round, want), func() bool {
			code, body := httpGet(t, base+"/v1/witness/checkpoint?origin="+url.QueryEscape(info.LogOrigin), "")
			var cp tlogfmt.Checkpoint
			if _, err := cp.Unmarshal([]byte(body)); code != http.StatusOK || err != nil || cp.Size < want {
				return false
			}
			served = body
			return true
		})
		n, err := note.Open([]byte(served), note.VerifierList(logV, witV))
		if err != nil || len(n.Sigs) != 2 {
			t.Fatalf("round %d: served checkpoint does not carry both signatures: %v\n%s", round, err, served)
		}
		put(2)
	}
	cancel()
	select {
	case code := <-exit:
		if code != exitOK {
			t.Fatalf("kura witness exited %d\n%s", code, stderr.String())
		}
	case <-time.After(testwait.Default):
		t.Fatalf("kura witness did not stop when its context ended\n%s", stderr.String())
	}
	if strings.Contains(stderr.String(), "level=ERROR") {
		t.Fatalf("errors against an honest kurad:\n%s", stderr.String())
	}
	if fi, err := os.Stat(filepath.Join(state, "witness.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("witness.key: %v %v", fi, err)
	}
}
