package main

import (
	"strings"
	"testing"
)

func TestWitnessCommand_Usage(t *testing.T) {
	t.Parallel()
	dead := deadURL(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no state", []string{"witness", "--log", "http://127.0.0.1:1"}, "--state is required"},
		{"no log", []string{"witness", "--state", t.TempDir()}, "at least one --log"},
		{"not a URL", []string{"witness", "--state", t.TempDir(), "--log", "kurad:7700"}, "must start with http://"},
		{"bad pinned key", []string{"witness", "--state", t.TempDir(), "--log", "http://127.0.0.1:1=not-a-key"}, "verifier key"},
		{"poll too short", []string{"witness", "--state", t.TempDir(), "--log", "http://127.0.0.1:1", "--poll", "1ms"}, "--poll"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := runKura(t, dead, nil, tt.args...)
			if code != exitUsage || !strings.Contains(errOut, tt.want) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, errOut, exitUsage, tt.want)
			}
		})
	}
}
