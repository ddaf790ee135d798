package daemon_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/daemon"
)

// TestConfig_BackupDir: --backup-dir and KURA_BACKUP_DIR set the backup
// directory; without them it is <data-dir>/backups.
func TestConfig_BackupDir(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"Default", []string{"--data-dir", "/srv/kura"}, nil, "/srv/kura/backups"},
		{"Flag", []string{"--backup-dir", "/srv/kura-backups"}, nil, "/srv/kura-backups"},
		{"Env", nil, map[string]string{"KURA_BACKUP_DIR": "/mnt/b"}, "/mnt/b"},
		{"FlagOverEnv", []string{"--backup-dir", "/a"}, map[string]string{"KURA_BACKUP_DIR": "/b"}, "/a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _, err := daemon.LoadConfig(tc.args, env(tc.env), devNull(t))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.BackupPath(); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// TestMain_BackupDirMayNotHoldTheDataDir: a backup directory that is the
// data directory, or one of its parents, would let a backup's path name the
// data directory's own entries; kurad refuses to start on it.
func TestMain_BackupDirMayNotHoldTheDataDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	for _, backup := range []string{data, dir, data + "/."} {
		cfg := daemon.DefaultConfig()
		cfg.DataDir = data
		cfg.HTTPAddr, cfg.NATSAddr = "127.0.0.1:0", "127.0.0.1:0"
		cfg.KeyFile = filepath.Join(dir, "kurad.key")
		cfg.BackupDir = backup
		m := daemon.NewMain(cfg, "test", io.Discard)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := m.Run(ctx)
		if err == nil {
			m.Close(ctx)
		}
		cancel()
		if err == nil || !strings.Contains(err.Error(), "backup-dir") {
			t.Errorf("backup dir %s: got %v, want a refusal naming backup-dir", backup, err)
		}
	}
	if _, err := os.Stat(filepath.Join(data, "backups")); !os.IsNotExist(err) {
		t.Errorf("got %v, want no default backup directory made beside a refused one", err)
	}
}
