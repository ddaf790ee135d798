package main_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/kuradtest"
)

// underUmask022 is a script that runs kurad under umask 022, the common
// default that made files 0644, whatever the umask of the test process.
func underUmask022(t *testing.T) string {
	t.Helper()
	script := filepath.Join(t.TempDir(), "kurad-umask-022")
	body := "#!/bin/sh\numask 022\nexec '" + strings.ReplaceAll(kuradBin, "'", `'\''`) + "' \"$@\"\n"
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	return script
}

// TestKurad_DatabaseFilesPrivate: the real kurad, started under umask 022
// on a data directory that already exists with mode 0755, creates
// kura.db, kura.db-wal and kura.db-shm 0600, leaves the directory's mode
// alone and warns that it is open to other users.
func TestKurad_DatabaseFilesPrivate(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dataDir, 0o755); err != nil { // whatever the test's umask
		t.Fatal(err)
	}
	p := kuradtest.StartBinary(t, underUmask022(t), dataDir, []string{"KURA_DATABASE_URL="})

	// The script execs kurad: its pid is kurad's, and so is its umask.
	status, err := os.ReadFile("/proc/" + strconv.Itoa(p.Cmd.Process.Pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "Umask:"); ok && strings.TrimSpace(v) != "0022" {
			t.Fatalf("kurad runs with umask %s, want 0022: the test would prove nothing", strings.TrimSpace(v))
		}
	}

	// A write, so that the WAL holds frames and every file is in use.
	resp, err := http.Post(p.Base+"/v1/records", "application/json",
		strings.NewReader(`{"type":"agent.thought","content":"private","author_id":"agent:bmo"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("write: got %d, want 201", resp.StatusCode)
	}
	for _, name := range []string{"kura.db", "kura.db-wal", "kura.db-shm"} {
		st, err := os.Stat(filepath.Join(dataDir, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got := st.Mode().Perm(); got != 0o600 {
			t.Errorf("%s: got mode %04o, want 0600", name, got)
		}
	}
	if st, err := os.Stat(dataDir); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("data directory: got %v %v, want its mode 0755 left as it was", st, err)
	}
	if !strings.Contains(p.Log.String(), "the data directory is open to other users") {
		t.Errorf("kurad's log does not warn about the 0755 data directory:\n%s", p.Log)
	}
}
