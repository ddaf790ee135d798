package api_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/daemon"
	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/kura-memory/kura/internal/pgtest"
	"github.com/kura-memory/kura/internal/testwait"
)

// realPGDump is the pg_dump the host has, as kurad would find it.
func realPGDump(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("pg_dump"); err == nil {
		return p
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "pg_dump")); err == nil {
			return filepath.Join(d, "pg_dump")
		}
	}
	t.Fatal("no pg_dump on this host")
	return ""
}

// script writes an executable shell script and returns its path.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

// backupEntries lists what the backup directory holds.
func backupEntries(t *testing.T, d *kuradtest.Daemon) []string {
	t.Helper()
	entries, err := os.ReadDir(d.Config.BackupPath())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestAPI_BackupPostgres: a backup of a kurad on PostgreSQL runs pg_dump.
// Without one it answers 503 naming what to install, and creates nothing;
// the database password reaches pg_dump in its environment, never in its
// argv; a pg_dump that fails leaves no files; and a redaction while
// pg_dump runs abandons the backup (503), leaving no files either.
func TestAPI_BackupPostgres(t *testing.T) {
	t.Parallel()
	real := realPGDumpIfAny(t)
	tools := t.TempDir()
	const password = "s3cret-Pw"
	cases := []struct {
		name     string
		pgDump   string // a path in tools, or "" for the real one
		body     string // the fake pg_dump's script
		password bool   // the database URL carries a password
		want     int
		wantMsg  string
	}{
		{name: "Missing", pgDump: filepath.Join(tools, "no-such-pg_dump"), want: 503, wantMsg: "pg_dump"},
		{name: "PasswordOnlyInTheEnvironment", pgDump: "argv", password: true, want: 200,
			body: `printf '%s\n' "$@" > "$0.argv"; printf '%s' "$PGPASSWORD" > "$0.env"; exec ` + real + ` "$@"` + "\n"},
		{name: "Fails", pgDump: "fails", want: 500, body: "echo 'pg_dump: error: no space' >&2; exit 1\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.pgDump
			if tc.body != "" {
				path = script(t, tools, tc.pgDump, tc.body)
			}
			url := pgtest.URL(t)
			if tc.password {
				// The test server trusts local connections: the password
				// travels, and is ignored.
				url = strings.Replace(url, "postgres://kura@", "postgres://kura:"+password+"@", 1)
			}
			d := kuradtest.StartMain(t, kuradtest.Options{Configure: func(cfg *daemon.Config) {
				cfg.DatabaseURL = url
				cfg.PGDump = path
			}})
			c := &apiClient{tb: t, base: d.BaseURL()}
			if st, _, raw := c.post("/v1/records", `{"type":"agent.thought","content":"x","author_id":"agent:bmo"}`); st != 201 {
				t.Fatalf("setup: %d %s", st, raw)
			}
			code, m, raw := c.post("/v1/admin/backup", `{"path":"b"}`)
			if code != tc.want || !strings.Contains(string(raw), tc.wantMsg) {
				t.Fatalf("got %d %s, want %d naming %q", code, raw, tc.want, tc.wantMsg)
			}
			if code != 200 {
				if got := backupEntries(t, d); len(got) != 0 {
					t.Errorf("a failed backup left %v", got)
				}
				return
			}
			if m["format"] != "kura-backup-pg-1" {
				t.Errorf("got format %v, want kura-backup-pg-1", m["format"])
			}
			argv, err := os.ReadFile(path + ".argv")
			if err != nil {
				t.Fatal(err)
			}
			env, _ := os.ReadFile(path + ".env")
			if strings.Contains(string(argv), password) || !strings.Contains(string(argv), "--snapshot=") || string(env) != password {
				t.Errorf("pg_dump ran with argv %q and PGPASSWORD %q, want the password only in its environment", argv, env)
			}
		})
	}

	t.Run("RedactionAbandonsIt", func(t *testing.T) {
		// pg_dump announces it runs, then waits for the test.
		started, release := filepath.Join(tools, "started"), filepath.Join(tools, "release")
		path := script(t, tools, "waits", `touch `+started+`; while [ ! -e `+release+` ]; do sleep 0.02; done; exec `+real+` "$@"`+"\n")
		d := kuradtest.StartMain(t, kuradtest.Options{Configure: func(cfg *daemon.Config) {
			cfg.DatabaseURL = pgtest.URL(t)
			cfg.PGDump = path
		}})
		c := &apiClient{tb: t, base: d.BaseURL()}
		st, rec, raw := c.post("/v1/records", `{"type":"agent.thought","content":"to be redacted","author_id":"agent:bmo"}`)
		if st != 201 {
			t.Fatalf("setup: %d %s", st, raw)
		}
		type answer struct {
			code int
			raw  []byte
		}
		done := make(chan answer, 1)
		go func() {
			code, _, raw := c.post("/v1/admin/backup", `{"path":"r"}`)
			done <- answer{code, raw}
		}()
		testwait.For(t, 30*time.Second, "pg_dump to start", func() bool { _, err := os.Stat(started); return err == nil })
		if st, _, raw := c.post("/v1/records/"+rec["id"].(string)+"/redact", `{"reason":"test"}`); st != 200 {
			t.Fatalf("redact: %d %s", st, raw)
		}
		os.WriteFile(release, nil, 0o600)
		var got answer
		select {
		case got = <-done:
		case <-time.After(60 * time.Second):
			t.Fatal("the backup did not answer")
		}
		if got.code != 503 || !strings.Contains(string(got.raw), "redacted") {
			t.Errorf("got %d %s, want 503 saying a record was redacted", got.code, got.raw)
		}
		if names := backupEntries(t, d); len(names) != 0 {
			t.Errorf("an abandoned backup left %v", names)
		}
	})
}

// realPGDumpIfAny skips (or fails, under KURA_REQUIRE_POSTGRES) as pgtest
// does when PostgreSQL is not installed.
func realPGDumpIfAny(t *testing.T) string {
	t.Helper()
	if !pgtest.Available() {
		pgtest.URL(t) // skips or fails, saying why
	}
	return realPGDump(t)
}
