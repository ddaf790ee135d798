package main_test

import (
	"context"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestKurad_PortTaken: an HTTP or NATS address another listener holds
// stops kurad at once, non-zero, with the address in its output; a taken
// NATS port used to cost a 10-second wait and a bare "not ready".
func TestKurad_PortTaken(t *testing.T) {
	t.Parallel()
	for _, flag := range []string{"--nats-addr", "--http-addr"} {
		t.Run(strings.TrimPrefix(flag, "--"), func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			addr := ln.Addr().String()
			args := []string{"--data-dir", t.TempDir(), "--http-addr", "127.0.0.1:0", "--nats-addr", "127.0.0.1:0", flag, addr}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, kuradBin, args...)
			start := time.Now()
			out, _ := cmd.CombinedOutput()
			took := time.Since(start)
			if code := cmd.ProcessState.ExitCode(); code == 0 || code == -1 {
				t.Fatalf("got exit %d after %s, want a non-zero exit\n%s", code, took, out)
			}
			// The start itself (opening and checking a new database) takes
			// a fraction of this; the old NATS wait alone was 10s.
			if took > 5*time.Second {
				t.Errorf("kurad took %s to fail, want it at once", took)
			}
			t.Logf("kurad failed after %s", took)
			for _, want := range []string{addr, "address already in use"} {
				if !strings.Contains(string(out), want) {
					t.Errorf("output %q does not name %q", out, want)
				}
			}
		})
	}
}
