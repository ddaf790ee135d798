package main_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestREADME_Walkthrough runs the README's curl walkthrough, as written,
// against a real kurad: the first thing a newcomer tries must work.
func TestREADME_Walkthrough(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is needed for the README walkthrough (.ci/run installs it)")
	}
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	begin := strings.Index(s, "<!-- walkthrough:begin -->")
	end := strings.Index(s, "<!-- walkthrough:end -->")
	if begin < 0 || end < begin {
		t.Fatal("README has no walkthrough markers")
	}
	block := s[begin:end]
	block = block[strings.Index(block, "```sh")+len("```sh") : strings.LastIndex(block, "```")]
	const addr = "KURA=http://127.0.0.1:7700"
	if !strings.Contains(block, addr) {
		t.Fatalf("walkthrough does not start from %s", addr)
	}
	p := startKurad(t, t.TempDir())
	script := "set -eu\n" + strings.Replace(block, addr, "KURA="+p.Base, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "bash", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("walkthrough failed: %v\n%s", err, out)
	}
	for _, want := range []string{
		`"status":"ready"`,
		`"deduplicated":true`,
		`"label":"morning"`,
		`"next_cursor"`,
		`"ok":true`,
		`"audit_path"`,
		`"code":"invalid_argument"`,
		`"public_key":"ed25519:`,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("walkthrough output lacks %s:\n%s", want, out)
		}
	}
}
