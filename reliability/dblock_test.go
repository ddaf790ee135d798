package reliability_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestDatabaseLock_TwoDataDirsOneFile starts kurad on one data directory,
// then a second kurad on another directory whose kura.db is the same file
// (a symlink to it, and a hard link): each second kurad must refuse to
// start, naming the file, the first kurad's pid and its data directory,
// while the first goes on writing and stays ready. Once the first stops,
// the second starts on the same link: the refusal was the lock.
func TestDatabaseLock_TwoDataDirsOneFile(t *testing.T) {
	t.Parallel()
	first := t.TempDir()
	p := start(t, first)
	mustCall(t, "POST", p.Base+"/v1/records", `{"type":"agent.thought","content":"first","author_id":"agent:rel"}`, 201, nil)
	db := filepath.Join(first, "kura.db")

	links := map[string]func(dir string) error{
		"Symlink":  func(dir string) error { return os.Symlink(db, filepath.Join(dir, "kura.db")) },
		"HardLink": func(dir string) error { return os.Link(db, filepath.Join(dir, "kura.db")) },
	}
	var symlinked string
	for _, name := range []string{"Symlink", "HardLink"} {
		dir := t.TempDir()
		if err := links[name](dir); err != nil {
			t.Fatal(err)
		}
		if name == "Symlink" {
			symlinked = dir
		}
		second := launch(t, dir)
		if code := second.Wait(t, 30e9); code != 1 {
			t.Fatalf("%s: the second kurad exited %d, want 1\n%s", name, code, second.Log)
		}
		log := second.Log.String()
		// A symlink resolves to the first's path; a hard link is a path of
		// its own to the same file.
		file := db
		if name == "HardLink" {
			file = filepath.Join(dir, "kura.db")
		}
		for _, want := range []string{"database file " + file + " is in use by kurad (pid " + strconv.Itoa(p.Cmd.Process.Pid) + ") with data directory " + first} {
			if !strings.Contains(log, want) {
				t.Errorf("%s: the second kurad's log does not say %q:\n%s", name, want, log)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "kurad.addr")); err == nil {
			t.Errorf("%s: the refused kurad wrote kurad.addr", name)
		}
		// The first kurad never noticed.
		mustCall(t, "POST", p.Base+"/v1/records", `{"type":"agent.thought","content":"after `+name+`","author_id":"agent:rel"}`, 201, nil)
		var ready struct{ Status string }
		mustCall(t, "GET", p.Base+"/readyz", nil, 200, &ready)
		if ready.Status != "ready" {
			t.Errorf("%s: the first kurad's /readyz says %q, want ready", name, ready.Status)
		}
	}

	p.Stop(t)
	second := start(t, symlinked)
	var info struct{ Counts map[string]int64 }
	mustCall(t, "GET", second.Base+"/v1/info", nil, 200, &info)
	if info.Counts["records"] != 3 {
		t.Errorf("the second kurad, started once the first stopped, serves %d records, want the first's 3", info.Counts["records"])
	}
	second.Stop(t)
}
