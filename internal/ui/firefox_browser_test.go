package ui_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/kuradtest"
)

// The console's other tests drive Chromium; people open it in Firefox as
// often. TestConsole_Firefox opens every main view in a headless Firefox
// (Debian's firefox-esr, which .ci/run installs), driven over WebDriver
// BiDi by puppeteer-core (testdata/firefox, installed from its committed
// lock by make test). Without either it skips, saying so;
// KURA_REQUIRE_FIREFOX=1 (make test sets it) makes that a failure.

// firefox finds the browser: KURA_FIREFOX, else the usual names.
func firefox() string {
	if p := os.Getenv("KURA_FIREFOX"); p != "" {
		return p
	}
	for _, name := range []string{"firefox-esr", "firefox"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// needFirefox returns Firefox's path and node's, or skips (fails under
// KURA_REQUIRE_FIREFOX=1) saying what is missing.
func needFirefox(t *testing.T) (ff, node string) {
	t.Helper()
	var missing []string
	if ff = firefox(); ff == "" {
		missing = append(missing, "no Firefox (install Debian's firefox-esr, as .ci/run does, or set KURA_FIREFOX)")
	} else if _, err := os.Stat(ff); err != nil {
		missing = append(missing, "no Firefox at "+ff)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing = append(missing, "no node")
	}
	if _, err := os.Stat(filepath.Join("testdata", "firefox", "node_modules", "puppeteer-core", "package.json")); err != nil {
		missing = append(missing, "no puppeteer-core (make firefox-deps: npm ci in internal/ui/testdata/firefox)")
	}
	if len(missing) == 0 {
		return ff, node
	}
	if os.Getenv("KURA_REQUIRE_FIREFOX") == "1" {
		t.Fatalf("%s, and KURA_REQUIRE_FIREFOX=1", strings.Join(missing, "; "))
	}
	t.Skipf("%s; KURA_REQUIRE_FIREFOX=1 makes this a failure", strings.Join(missing, "; "))
	return "", ""
}

func TestConsole_Firefox(t *testing.T) {
	t.Parallel()
	ff, node := needFirefox(t)
	base := kuradtest.Start(t)
	views := consoleViews(seedScreenshotData(t, base))
	var err error

	type jsView struct {
		Name  string     `json:"name"`
		Route string     `json:"route"`
		Ready string     `json:"ready"`
		Dark  bool       `json:"dark"`
		Steps []viewStep `json:"steps"`
	}
	in := struct {
		Firefox string   `json:"firefox"`
		Base    string   `json:"base"`
		Ready   string   `json:"ready"`
		Shots   string   `json:"shots,omitempty"`
		Views   []jsView `json:"views"`
	}{Firefox: ff, Base: base, Ready: viewReady, Shots: os.Getenv("KURA_FIREFOX_SCREENSHOTS")}
	if in.Shots != "" {
		// A PNG of each view as Firefox draws it, to compare with
		// Chromium's (make console-screenshots) by eye.
		if err := os.MkdirAll(in.Shots, 0o755); err != nil {
			t.Fatal(err)
		}
		if in.Shots, err = filepath.Abs(in.Shots); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range views {
		in.Views = append(in.Views, jsView{Name: v.name, Route: v.route, Ready: v.ready, Dark: v.dark, Steps: v.steps})
	}
	body, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "check.mjs")
	cmd.Dir = filepath.Join("testdata", "firefox")
	cmd.Stdin = bytes.NewReader(body)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()

	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var r struct {
			Name     string   `json:"name"`
			OK       bool     `json:"ok"`
			MS       int      `json:"ms"`
			Problems []string `json:"problems"`
			Shows    string   `json:"shows"`
			Browser  string   `json:"browser"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Errorf("check.mjs wrote %q: %v", sc.Text(), err)
			continue
		}
		if r.Browser != "" {
			t.Logf("browser: %s", r.Browser)
			continue
		}
		seen[r.Name] = true
		if !r.OK {
			t.Errorf("%s in Firefox: %s\npage shows: %s", r.Name, strings.Join(r.Problems, "; "), r.Shows)
			continue
		}
		t.Logf("%s: drawn in %d ms", r.Name, r.MS)
	}
	for _, v := range views {
		if !seen[v.name] {
			t.Errorf("%s: no answer from check.mjs (exit: %v)\nstderr: %s", v.name, runErr, stderr.String())
		}
	}
	if runErr != nil && !t.Failed() {
		t.Errorf("check.mjs: %v, though every view passed\nstderr: %s", runErr, stderr.String())
	}
}
