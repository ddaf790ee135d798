package ui_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestConsole_RequireChromium: without a Chromium the console's tests
// skip, saying how to make that a failure; with KURA_REQUIRE_CHROMIUM=1
// they fail. The test runs its own binary as a child with KURA_CHROMIUM
// naming a browser that is not there.
func TestConsole_RequireChromium(t *testing.T) {
	t.Parallel()
	if os.Getenv("KURA_TEST_NEED_BROWSER_CHILD") == "1" {
		needBrowser(t)
		return
	}
	missing := filepath.Join(t.TempDir(), "no-chromium")
	run := func(require string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestConsole_RequireChromium$", "-test.v", "-test.count=1")
		// The last of duplicate variables wins: these override the parent's.
		cmd.Env = append(os.Environ(), "KURA_TEST_NEED_BROWSER_CHILD=1", "KURA_CHROMIUM="+missing, "KURA_REQUIRE_CHROMIUM="+require)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("")
	if err != nil || !strings.Contains(out, "--- SKIP") || !strings.Contains(out, "KURA_REQUIRE_CHROMIUM=1 makes this a failure") {
		t.Errorf("without KURA_REQUIRE_CHROMIUM: err %v, want a skip that names the variable; output:\n%s", err, out)
	}
	out, err = run("1")
	if err == nil || !strings.Contains(out, "--- FAIL") || !strings.Contains(out, "no headless Chromium") {
		t.Errorf("with KURA_REQUIRE_CHROMIUM=1: err %v, want a failure saying there is no Chromium; output:\n%s", err, out)
	}
}
