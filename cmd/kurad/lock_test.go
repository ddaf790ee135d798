package main_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestKurad_OneKuradPerDataDir starts a second kurad on the data directory
// of a running one: it must exit at once, non-zero, naming the directory
// and the first one's pid, without touching kurad.addr, while the first
// keeps serving. Once the first is SIGKILLed, the kernel has dropped its
// lock and a new kurad starts on the directory.
func TestKurad_OneKuradPerDataDir(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	first := startKurad(t, dataDir)
	addrFile := filepath.Join(dataDir, "kurad.addr")
	addrBefore, err := os.ReadFile(addrFile)
	if err != nil {
		t.Fatal(err)
	}

	// Not through the harness: it clears kurad.addr before a launch.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	second := exec.CommandContext(ctx, kuradBin, "--data-dir", dataDir, "--http-addr", "127.0.0.1:0", "--nats-addr", "127.0.0.1:0")
	start := time.Now()
	out, _ := second.CombinedOutput()
	took := time.Since(start)
	if code := second.ProcessState.ExitCode(); code == 0 || code == -1 {
		t.Fatalf("second kurad: got exit %d after %s, want a non-zero exit at once\n%s", code, took, out)
	}
	if took > 5*time.Second {
		t.Errorf("second kurad took %s to give up, want it at once", took)
	}
	pid := strconv.Itoa(first.Cmd.Process.Pid)
	for _, want := range []string{dataDir, "pid " + pid} {
		if !strings.Contains(string(out), want) {
			t.Errorf("second kurad's output %q does not name %q", out, want)
		}
	}
	if got, _ := os.ReadFile(addrFile); string(got) != string(addrBefore) {
		t.Errorf("kurad.addr: got %q, want the first kurad's %q untouched", got, addrBefore)
	}

	// The first one still serves, reads and writes.
	resp, err := http.Post(first.Base+"/v1/records", "application/json", strings.NewReader(`{"type":"agent.thought","content":"still here","author_id":"agent:bmo"}`))
	if err != nil {
		t.Fatalf("first kurad after the second's attempt: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("first kurad after the second's attempt: got HTTP %d, want 201", resp.StatusCode)
	}
	if code := status(t, first.Base, "/readyz", ""); code != http.StatusOK {
		t.Errorf("first kurad /readyz: got %d, want 200", code)
	}

	first.Kill(t)
	next := startKurad(t, dataDir)
	if code := status(t, next.Base, "/readyz", ""); code != http.StatusOK {
		t.Errorf("kurad after the first was killed: /readyz %d, want 200", code)
	}
}
