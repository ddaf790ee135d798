// Package scripts_test runs the shell functions .ci/run sources, with
// stand-ins for the programs they call (apt-get, node) first on PATH.
package scripts_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// standIn writes an executable shell script called name into a new
// directory and returns the directory.
func standIn(t *testing.T, name, script string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// source runs call in bash after sourcing the script file, with env added
// to the environment; it returns the exit code and stderr.
func source(t *testing.T, file, call string, env ...string) (int, string) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bash, "-c", `set -eu; source "$1"; `+call, "bash", abs)
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}

// fakeAptGet answers as apt-get does: a busy lock ("Could not get lock",
// exit 100) on the tries listed in $LOCKED_TRIES, another error on
// $FAIL_TRIES, success otherwise. It logs each try's arguments and
// environment to $STATE/log and counts tries in $STATE/n.
const fakeAptGet = `n=$(($(cat "$STATE/n" 2>/dev/null || echo 0) + 1))
echo "$n" >"$STATE/n"
echo "LC_ALL=$LC_ALL DEBIAN_FRONTEND=$DEBIAN_FRONTEND $*" >>"$STATE/log"
case " $LOCKED_TRIES " in *" $n "*)
	echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 4242 (apt-get)" >&2
	echo "E: Unable to lock directory /var/lib/apt/lists/" >&2
	exit 100
esac
case " $FAIL_TRIES " in *" $n "*)
	echo "E: Unable to locate package no-such-package" >&2
	exit 100
esac
echo "Reading package lists..."
`

// TestAptGetWait runs apt_get (scripts/apt-get-wait.sh) against a
// stand-in apt-get: a busy lock is waited for, anything else fails at
// once, and the wait ends at its deadline.
func TestAptGetWait(t *testing.T) {
	t.Parallel()
	bin := standIn(t, "apt-get", fakeAptGet)
	run := func(t *testing.T, locked, failed string, env ...string) (code int, stderr string, tries []string, took time.Duration) {
		t.Helper()
		state := t.TempDir()
		env = append(env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "STATE="+state,
			"LOCKED_TRIES="+locked, "FAIL_TRIES="+failed)
		start := time.Now()
		code, stderr = source(t, "apt-get-wait.sh", "apt_get update -qq", env...)
		took = time.Since(start)
		log, _ := os.ReadFile(filepath.Join(state, "log"))
		return code, stderr, strings.Split(strings.TrimSpace(string(log)), "\n"), took
	}

	t.Run("LockedOnceThenFree", func(t *testing.T) {
		t.Parallel()
		code, stderr, tries, took := run(t, "1", "", "KURA_APT_LOCK_RETRY=0.2")
		if code != 0 {
			t.Fatalf("got exit %d, want 0; stderr %q", code, stderr)
		}
		want := "LC_ALL=C DEBIAN_FRONTEND=noninteractive -o DPkg::Lock::Timeout=600 update -qq"
		if len(tries) != 2 || tries[0] != want || tries[1] != want {
			t.Errorf("got tries %q, want two of %q", tries, want)
		}
		if stderr != "apt-get update: another apt or dpkg holds the lock; waiting\n" {
			t.Errorf("got stderr %q, want the one waiting line", stderr)
		}
		if took < 200*time.Millisecond {
			t.Errorf("took %v, want at least the 0.2 s retry wait", took)
		}
	})

	t.Run("OtherFailureFailsAtOnce", func(t *testing.T) {
		t.Parallel()
		code, stderr, tries, _ := run(t, "", "1", "KURA_APT_LOCK_RETRY=0")
		if code != 1 || len(tries) != 1 {
			t.Errorf("got exit %d after %d tries, want 1 after 1", code, len(tries))
		}
		if !strings.Contains(stderr, "Unable to locate package no-such-package") || strings.Contains(stderr, "waiting") {
			t.Errorf("got stderr %q, want apt-get's error and no wait", stderr)
		}
	})

	t.Run("FailureAfterWaiting", func(t *testing.T) {
		t.Parallel()
		code, stderr, tries, _ := run(t, "1 2", "3", "KURA_APT_LOCK_RETRY=0")
		if code != 1 || len(tries) != 3 || !strings.Contains(stderr, "Unable to locate package") {
			t.Errorf("got exit %d after %d tries, stderr %q; want 1 after 3 with apt-get's error", code, len(tries), stderr)
		}
	})

	t.Run("LockedPastTheDeadline", func(t *testing.T) {
		t.Parallel()
		code, stderr, tries, _ := run(t, "1 2 3 4 5", "", "KURA_APT_LOCK_WAIT=0", "KURA_APT_LOCK_RETRY=0")
		if code != 1 || len(tries) != 1 {
			t.Errorf("got exit %d after %d tries, want 1 after 1 (no time left)", code, len(tries))
		}
		if !strings.Contains(tries[0], "-o DPkg::Lock::Timeout=0 ") {
			t.Errorf("got try %q, want dpkg's lock timeout to be the wait", tries[0])
		}
		if !strings.Contains(stderr, "Could not get lock") {
			t.Errorf("got stderr %q, want apt-get's lock error shown", stderr)
		}
	})
}

// TestNeedNode runs need_node (scripts/need-node.sh) with stand-in nodes
// of several versions, and with none.
func TestNeedNode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, version string // version "": no node on PATH
		ok            bool
		stderr        []string
	}{
		{"Node20", "v20.20.2", true, nil},
		{"Node22", "v22.11.0", true, nil},
		{"Node18", "v18.19.0", false, []string{"Node.js 20 or later is needed", "is v18.19.0", "bookworm's nodejs is 18"}},
		{"NotANode", "node: cannot execute", false, []string{"Node.js 20 or later is needed", "node: cannot execute"}},
		{"NoNode", "", false, []string{"Node.js 20 or later is needed", "no node on PATH"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if tc.version != "" {
				dir = standIn(t, "node", "echo '"+tc.version+"'\n")
			}
			// need_node uses only bash's builtins and node: the stand-in's
			// directory is the whole PATH, so the machine's node is hidden.
			code, stderr := source(t, "need-node.sh", "need_node 20", "PATH="+dir)
			if (code == 0) != tc.ok {
				t.Fatalf("got exit %d, want ok %v; stderr %q", code, tc.ok, stderr)
			}
			if tc.ok && stderr != "" {
				t.Errorf("got stderr %q, want nothing", stderr)
			}
			for _, want := range tc.stderr {
				if !strings.Contains(stderr, want) {
					t.Errorf("got stderr %q, want it to say %q", stderr, want)
				}
			}
		})
	}
}
