package api_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/daemon"
)

// backupName is how kurad names a backup made without a path: the UTC time,
// fixed width, so that names sort as the backups were taken.
var backupName = regexp.MustCompile(`^\d{8}T\d{6}\.\d{9}Z$`)

// TestAPI_BackupDirectory: backups go into the configured backup directory
// (default <data-dir>/backups, created 0700). Without a path kurad names a
// new subdirectory from the time; a given path must resolve (symlinks and
// .. followed) inside the backup directory, else 400 naming the field,
// with nothing created; and no error repeats a path or a file name. kurad
// runs with a tokens file: the admin's token backs up; a writer's and a
// reader's are refused 403 and make nothing, whatever path they name.
func TestAPI_BackupDirectory(t *testing.T) {
	t.Parallel()
	e := startAuthKurad(t, nil)
	d := e.d
	c := &apiClient{tb: t, base: d.BaseURL(), tok: tRoot}
	if st, _, raw := c.post("/v1/records", `{"type":"agent.thought","content":"x","author_id":"agent:bmo"}`); st != 201 {
		t.Fatalf("setup: %d %s", st, raw)
	}
	root := filepath.Join(d.Config.DataDir, "backups")
	st, err := os.Stat(root)
	if err != nil || !st.IsDir() || st.Mode().Perm() != 0o700 {
		t.Fatalf("got %v %v, want the backup directory %s made 0700 at start", st, err, root)
	}
	// The backup directory may be reached through a symlinked parent:
	// answers name the resolved path.
	root, _ = filepath.EvalSymlinks(root)

	t.Run("NeedsAdmin", func(t *testing.T) {
		outside := t.TempDir()
		for _, tok := range []string{tWA, tRA} {
			for _, body := range []string{`{}`, fmt.Sprintf(`{"path":%q}`, filepath.Join(root, "mine")), fmt.Sprintf(`{"path":%q}`, filepath.Join(outside, "b"))} {
				before := c.state()
				code, raw := e.do(tok, "POST", "/v1/admin/backup", body)
				if code != 403 || !strings.Contains(string(raw), `"permission_denied"`) {
					t.Errorf("backup %s with %s: got %d %s, want 403 permission_denied", body, tok, code, raw)
				}
				if strings.Contains(string(raw), root) || strings.Contains(string(raw), outside) {
					t.Errorf("the refusal repeats a path: %s", raw)
				}
				if c.state() != before {
					t.Errorf("a refused backup changed the store")
				}
			}
		}
		if entries, err := os.ReadDir(root); err != nil || len(entries) != 0 {
			t.Errorf("after refused backups the backup directory holds %v (%v), want nothing", entries, err)
		}
		if entries, _ := os.ReadDir(outside); len(entries) != 0 {
			t.Errorf("a refused backup made %v outside", entries)
		}
	})

	mustBackup := func(t *testing.T, body string) string {
		t.Helper()
		code, m, raw := c.post("/v1/admin/backup", body)
		if code != 200 {
			t.Fatalf("backup %s: got %d %s, want 200", body, code, raw)
		}
		p, _ := m["path"].(string)
		if _, err := os.Stat(filepath.Join(p, "manifest.json")); err != nil {
			t.Fatalf("backup %s: answered path %q holds no manifest: %v", body, p, err)
		}
		return p
	}

	t.Run("NoPathNamesItFromTheTime", func(t *testing.T) {
		var got []string
		for _, body := range []string{`{}`, `{"path":""}`, ``} {
			code, m, raw := c.do("POST", "/v1/admin/backup", "application/json", []byte(body))
			if code != 200 {
				t.Fatalf("body %q: got %d %s, want 200", body, code, raw)
			}
			p, _ := m["path"].(string)
			if filepath.Dir(p) != root || !backupName.MatchString(filepath.Base(p)) {
				t.Fatalf("body %q: got path %q, want %s/<UTC time>", body, p, root)
			}
			if _, err := os.Stat(filepath.Join(p, "manifest.json")); err != nil {
				t.Fatal(err)
			}
			got = append(got, filepath.Base(p))
		}
		if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
			t.Errorf("got names %v, want distinct names sorted in the order taken", got)
		}
	})

	t.Run("PathInside", func(t *testing.T) {
		if p := mustBackup(t, fmt.Sprintf(`{"path":%q}`, filepath.Join(root, "nightly", "1"))); p != filepath.Join(root, "nightly", "1") {
			t.Errorf("got %s", p)
		}
		// A relative path is taken inside the backup directory.
		if p := mustBackup(t, `{"path":"weekly/2"}`); p != filepath.Join(root, "weekly", "2") {
			t.Errorf("got %s, want it inside %s", p, root)
		}
		// .. that stays inside is fine.
		if p := mustBackup(t, fmt.Sprintf(`{"path":%q}`, root+"/nightly/../nightly/3")); p != filepath.Join(root, "nightly", "3") {
			t.Errorf("got %s", p)
		}
	})

	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "private-notes.txt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "escape-link")); err != nil {
		t.Fatal(err)
	}
	full := filepath.Join(root, "full")
	os.Mkdir(full, 0o700)
	if err := os.WriteFile(filepath.Join(full, "secret-name.txt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}

	t.Run("Refused", func(t *testing.T) {
		for _, tc := range []struct {
			name, path string
			status     int
			created    string // must not exist afterwards
		}{
			{"Outside", filepath.Join(outside, "b"), 400, filepath.Join(outside, "b")},
			{"DataDir", d.Config.DataDir, 400, ""},
			{"BesideTheDatabase", filepath.Join(d.Config.DataDir, "b"), 400, filepath.Join(d.Config.DataDir, "b")},
			{"DotDotOut", root + "/../b", 400, filepath.Join(d.Config.DataDir, "b")},
			{"RelativeDotDotOut", "../b", 400, filepath.Join(d.Config.DataDir, "b")},
			{"SymlinkOut", filepath.Join(root, "escape-link", "b"), 400, filepath.Join(outside, "b")},
			{"TheSymlinkItself", filepath.Join(root, "escape-link"), 400, ""},
			{"TheBackupDirectoryItself", root, 400, ""},
			{"Root", "/", 400, ""},
			{"NotEmpty", full, 409, ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				before := c.state()
				code, m, raw := c.post("/v1/admin/backup", fmt.Sprintf(`{"path":%q}`, tc.path))
				e, _ := m["error"].(map[string]any)
				d, _ := e["details"].(map[string]any)
				if code != tc.status || d["field"] != "path" {
					t.Fatalf("got %d %s, want %d naming the field path", code, raw, tc.status)
				}
				for _, leak := range []string{"secret-name", "private-notes", outside, root, "kura.db", "kurad.key"} {
					if strings.Contains(string(raw), leak) {
						t.Errorf("the error repeats %q: %s", leak, raw)
					}
				}
				if tc.created != "" {
					if _, err := os.Lstat(tc.created); !os.IsNotExist(err) {
						t.Errorf("a refused backup made %s", tc.created)
					}
				}
				if c.state() != before {
					t.Error("a refused backup changed the store")
				}
			})
		}
		if entries, _ := os.ReadDir(outside); len(entries) != 1 {
			t.Errorf("the directory outside now holds %d entries, want only its own file", len(entries))
		}
	})
}

// TestAPI_BackupDirectoryConfigured: --backup-dir (KURA_BACKUP_DIR) moves the
// backup directory; kurad creates it 0700 at start, parents included, and
// backups without a path land there.
func TestAPI_BackupDirectoryConfigured(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "srv", "kura-backups")
	e := startAuthKurad(t, func(c *daemon.Config) { c.BackupDir = dir })
	d := e.d
	c := &apiClient{tb: t, base: d.BaseURL(), tok: tRoot}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("got %v %v, want %s made 0700", st, err, dir)
	}
	if code, raw := e.do(tWA, "POST", "/v1/admin/backup", `{}`); code != 403 {
		t.Errorf("backup with a writer's token: got %d %s, want 403", code, raw)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a refused backup made %v", entries)
	}
	code, m, raw := c.post("/v1/admin/backup", `{}`)
	if p, _ := m["path"].(string); code != 200 || filepath.Dir(p) != dir {
		t.Fatalf("got %d %s, want a backup inside %s", code, raw, dir)
	}
	if _, err := os.Stat(filepath.Join(d.Config.DataDir, "backups")); !os.IsNotExist(err) {
		t.Errorf("got %v, want no default backup directory when another is configured", err)
	}
}
