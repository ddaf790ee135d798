package main_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/kura-memory/kura/internal/pgtest"
	"github.com/kura-memory/kura/internal/testwait"
	_ "modernc.org/sqlite"
)

var kuradBin string

// TestMain builds the real kurad binary once; the tests run it as a
// separate process so that SIGKILL and SIGTERM are real.
func TestMain(m *testing.M) {
	bin, err := kuradtest.BuildKurad()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	kuradBin = bin
	os.Exit(pgtest.Main(m)) // stops the PostgreSQL server of KURA_TEST_STORE=postgres
}

type proc = kuradtest.Proc

// startKurad runs kurad on dataDir with ports picked by the OS and waits
// for kurad.addr and /readyz.
func startKurad(t *testing.T, dataDir string, extra ...string) *proc {
	t.Helper()
	return startKuradEnv(t, dataDir, nil, extra...)
}

func startKuradEnv(t *testing.T, dataDir string, env []string, extra ...string) *proc {
	t.Helper()
	return kuradtest.StartBinary(t, kuradBin, dataDir, env, extra...)
}

type ack struct {
	id, seal string
}

// TestKurad_SIGKILLKeepsAcknowledgedWrites kills kurad during a concurrent
// write load, restarts it and checks that every acknowledged record is
// there, byte for byte, and that the database passes integrity_check.
func TestKurad_SIGKILLKeepsAcknowledgedWrites(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	var all []ack
	client := &http.Client{Timeout: 10 * time.Second}
	for cycle := 0; cycle < 3; cycle++ {
		p := startKurad(t, dataDir)
		var mu sync.Mutex
		var acked []ack
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := 0; w < 12; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					var body string
					path := "/v1/records"
					if i%5 == 4 {
						path = "/v1/records/batch"
						var recs []string
						for j := 0; j < 20; j++ {
							recs = append(recs, fmt.Sprintf(`{"type":"agent.thought","content":{"c":%d,"w":%d,"i":%d,"j":%d},"author_id":"agent:load"}`, cycle, w, i, j))
						}
						body = `{"records":[` + strings.Join(recs, ",") + `]}`
					} else {
						body = fmt.Sprintf(`{"type":"agent.thought","content":{"c":%d,"w":%d,"i":%d},"author_id":"agent:load"}`, cycle, w, i)
					}
					resp, err := client.Post(p.Base+path, "application/json", strings.NewReader(body))
					if err != nil {
						return // the process died mid-request: not acknowledged
					}
					raw, rerr := io.ReadAll(resp.Body)
					resp.Body.Close()
					if rerr != nil || resp.StatusCode != 201 {
						continue
					}
					var got []ack
					if path == "/v1/records" {
						var r struct{ ID, Seal string }
						if json.Unmarshal(raw, &r) == nil {
							got = append(got, ack{r.ID, r.Seal})
						}
					} else {
						var out struct{ Records []struct{ ID, Seal string } }
						if json.Unmarshal(raw, &out) == nil {
							for _, r := range out.Records {
								got = append(got, ack{r.ID, r.Seal})
							}
						}
					}
					mu.Lock()
					acked = append(acked, got...)
					mu.Unlock()
				}
			}(w)
		}
		// Kill once a fair number of writes has been acknowledged.
		testwait.Until(15*time.Second, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(acked) >= 300*(cycle+1)
		})
		p.Cmd.Process.Signal(syscall.SIGKILL)
		p.Wait(t, 10*time.Second)
		close(stop)
		wg.Wait()
		mu.Lock()
		all = append(all, acked...)
		mu.Unlock()
		if len(acked) == 0 {
			t.Fatalf("cycle %d: no write was acknowledged before the kill\n%s", cycle, p.Log)
		}

		// Restart and look for every record ever acknowledged.
		p2 := startKurad(t, dataDir)
		for _, a := range all {
			resp, err := client.Get(p2.Base + "/v1/records/" + a.id)
			if err != nil {
				t.Fatal(err)
			}
			var r struct{ Seal string }
			json.NewDecoder(resp.Body).Decode(&r)
			resp.Body.Close()
			if resp.StatusCode != 200 || r.Seal != a.seal {
				t.Fatalf("cycle %d: acknowledged record %s: status %d seal %q, want 200 and %s", cycle, a.id, resp.StatusCode, r.Seal, a.seal)
			}
		}
		t.Logf("cycle %d: %d acknowledged before SIGKILL, %d checked after restart", cycle, len(acked), len(all))
		p2.Cmd.Process.Signal(syscall.SIGTERM)
		if code := p2.Wait(t, 20*time.Second); code != 0 {
			t.Fatalf("graceful stop: exit %d\n%s", code, p2.Log)
		}
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dataDir, "kura.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var res string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&res); err != nil || res != "ok" {
		t.Fatalf("integrity_check: %q %v", res, err)
	}
	var n int
	db.QueryRow("SELECT count(*) FROM records").Scan(&n)
	if n < len(all) {
		t.Fatalf("records: %d in the file, %d acknowledged", n, len(all))
	}
}

func TestKurad_GracefulShutdown(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	p := startKurad(t, dataDir)
	resp, err := http.Post(p.Base+"/v1/records", "application/json", strings.NewReader(`{"type":"agent.thought","content":"bye","author_id":"agent:bmo"}`))
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("write: %v %v", err, resp)
	}
	resp.Body.Close()
	p.Cmd.Process.Signal(syscall.SIGTERM)
	if code := p.Wait(t, 20*time.Second); code != 0 {
		t.Fatalf("exit code %d, want 0\n%s", code, p.Log)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "kurad.addr")); !os.IsNotExist(err) {
		t.Errorf("kurad.addr left behind after a clean stop")
	}
	// The WAL was checkpointed and the key file is private.
	if st, err := os.Stat(filepath.Join(dataDir, "kura.db-wal")); err == nil && st.Size() > 0 {
		t.Errorf("WAL holds %d bytes after a clean stop", st.Size())
	}
	if st, err := os.Stat(filepath.Join(dataDir, "kurad.key")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v mode %v, want 0600", err, st.Mode().Perm())
	}
}

func TestKurad_CommandLine(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		args     []string
		env      []string
		wantCode int
		wantOut  string
	}{
		{"version", []string{"-version"}, nil, 0, "kurad "},
		{"bad http addr", []string{"--http-addr", "nope"}, nil, 2, "http-addr"},
		{"bad synchronous from env", nil, []string{"KURA_SYNCHRONOUS=SOMETIMES"}, 2, "synchronous"},
		{"bad flag", []string{"--no-such-flag"}, nil, 2, "no-such-flag"},
		{"non-loopback http without tokens", []string{"--http-addr", "0.0.0.0:7700"}, nil, 2, "loopback"},
		{"non-loopback nats without tokens", []string{"--nats-addr", "192.0.2.1:4222"}, nil, 2, "loopback"},
		{"missing config file", []string{"--config", "/nonexistent/kurad.env"}, nil, 2, "config file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, kuradBin, tc.args...)
			cmd.Env = append(os.Environ(), tc.env...)
			out, _ := cmd.CombinedOutput()
			if code := cmd.ProcessState.ExitCode(); code != tc.wantCode {
				t.Fatalf("exit %d, want %d: %s", code, tc.wantCode, out)
			}
			if !strings.Contains(string(out), tc.wantOut) {
				t.Errorf("output %q does not mention %q", out, tc.wantOut)
			}
		})
	}
}

// TestKurad_SystemdNotify runs kurad the way systemd does with Type=notify
// and WatchdogSec: READY=1 after it serves, WATCHDOG=1 pings, STOPPING=1 on
// SIGTERM, all as datagrams on NOTIFY_SOCKET.
func TestKurad_SystemdNotify(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "sdn") // short: socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	msgs := make(chan string, 64)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(msgs)
				return
			}
			msgs <- string(buf[:n])
		}
	}()
	next := func(want string) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case m, ok := <-msgs:
				if !ok {
					t.Fatalf("socket closed before %q", want)
				}
				if strings.Contains(m, want) {
					return
				}
			case <-deadline:
				t.Fatalf("no %q within 10s", want)
			}
		}
	}
	p := startKuradEnv(t, t.TempDir(), []string{"NOTIFY_SOCKET=" + sock, "WATCHDOG_USEC=200000"})
	next("READY=1")
	next("WATCHDOG=1")
	p.Cmd.Process.Signal(syscall.SIGTERM)
	next("STOPPING=1")
	if code := p.Wait(t, 20*time.Second); code != 0 {
		t.Fatalf("exit %d\n%s", code, p.Log)
	}
}

// TestKurad_IdempotencySurvivesRestart retries a turn open with the same
// Idempotency-Key after kurad was stopped and started again: the first
// answer comes back and nothing is written twice.
func TestKurad_IdempotencySurvivesRestart(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	p := startKurad(t, dataDir)
	post := func(base, path, key, body string) (int, string) {
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	st, body := post(p.Base, "/v1/sessions", "", `{"project":"hashi","name":"restart"}`)
	if st != 201 {
		t.Fatalf("session: %d %s", st, body)
	}
	var s struct{ ID string }
	json.Unmarshal([]byte(body), &s)
	open := `{"instruction":{"content":"only once","author_id":"user:oles"}}`
	st1, first := post(p.Base, "/v1/sessions/"+s.ID+"/turns", "open-1", open)
	if st1 != 201 {
		t.Fatalf("open: %d %s", st1, first)
	}
	p.Cmd.Process.Signal(syscall.SIGKILL)
	p.Wait(t, 10*time.Second)

	p2 := startKurad(t, dataDir)
	st2, again := post(p2.Base, "/v1/sessions/"+s.ID+"/turns", "open-1", open)
	if st2 != st1 || again != first {
		t.Fatalf("retry after restart: %d %s, want %d %s", st2, again, st1, first)
	}
	resp, err := http.Get(p2.Base + "/v1/turns?session_id=" + s.ID)
	if err != nil {
		t.Fatal(err)
	}
	var list struct{ Turns []json.RawMessage }
	json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if len(list.Turns) != 1 {
		t.Fatalf("turns after the retry: %d, want 1", len(list.Turns))
	}
}

// kurad keygen creates the key a systemd credential will hold, 0600, and
// never replaces an existing one.
func TestKurad_Keygen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "etc", "kurad.key")
	out, err := exec.Command(kuradBin, "keygen", path).CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "ed25519:") || !strings.Contains(string(out), "created") {
		t.Fatalf("keygen: %v %s", err, out)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", st, err)
	}
	again, err := exec.Command(kuradBin, "keygen", path).CombinedOutput()
	if err != nil || strings.Fields(string(again))[0] != strings.Fields(string(out))[0] || !strings.Contains(string(again), "kept") {
		t.Fatalf("keygen on an existing key: %v %s (first %s)", err, again, out)
	}
	if err := exec.Command(kuradBin, "keygen").Run(); err == nil {
		t.Error("keygen without a path succeeded")
	}
}
