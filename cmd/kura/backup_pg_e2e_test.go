package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/daemon"
	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/kura-memory/kura/internal/pgtest"
	"github.com/kura-memory/kura/internal/store"
	"github.com/kura-memory/kura/internal/testwait"
)

// pgObjects counts the tables (and every other relation) of the database
// at url: 0 for an empty one.
func pgObjects(t *testing.T, url string) int {
	t.Helper()
	return pgCount(t, url, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")
}

// pgStats counts the columns of table that PostgreSQL's planner holds
// statistics of (ANALYZE made them).
func pgStats(t *testing.T, url, table string) int {
	t.Helper()
	return pgCount(t, url, "SELECT count(*) FROM pg_stats WHERE schemaname = 'public' AND tablename = ?", table)
}

// pgCount runs a count on the database at url.
func pgCount(t *testing.T, url, q string, args ...any) int {
	t.Helper()
	db, err := sql.Open(store.PGDriverName, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestE2E_BackupRestorePostgres takes a backup of a kurad on PostgreSQL
// with kura backup while writes go on, restores it with kura restore
// --database-url into a new database, starts kurad on that and checks that
// every write acknowledged before the backup is there with the same hash,
// that every session and ledger verifies, and that the backup's feed ends
// where its manifest says. Tampered archives, occupied databases and
// backups of the other engine are refused.
func TestE2E_BackupRestorePostgres(t *testing.T) {
	t.Setenv("KURA_DATA_DIR", "")
	t.Setenv("KURA_KEY_FILE", "")
	t.Setenv("KURA_DATABASE_URL", "")
	ctx := context.Background()
	srcURL := pgtest.URL(t)
	src := kuradtest.StartMain(t, kuradtest.Options{Configure: func(cfg *daemon.Config) { cfg.DatabaseURL = srcURL }})
	keyFile := src.Config.KeyFile
	c := client.New(src.BaseURL())
	a := &acked{}
	stop := make(chan struct{})
	wg := load(t, c, a, stop)
	testwait.For(t, 60*time.Second, "writes before the backup", func() bool {
		s := a.copy()
		return len(s.records) >= 20 && len(s.turns) >= 2
	})
	before := a.copy()
	out, errOut, code := runKura(t, src.BaseURL(), nil, "backup")
	backup, _ := strings.CutPrefix(strings.SplitN(out, "\n", 2)[0], "backup written to ")
	if code != exitOK || backup == "" {
		close(stop)
		wg.Wait()
		t.Fatalf("kura backup: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// Acknowledged after the backup answered: not in it.
	late, err := c.PutRecord(ctx, client.RecordInput{Type: "agent.thought", AuthorID: "agent:bmo", Content: json.RawMessage(`"after the backup"`)})
	if err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	var manifest kura.BackupManifest
	b, err := os.ReadFile(filepath.Join(backup, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &manifest); err != nil {
		t.Fatal(err)
	}
	if manifest.Format != kura.BackupFormatPostgres || len(manifest.Files) != 1 || manifest.Files[0].Name != "kura.pgdump" ||
		manifest.SchemaVersion != store.PGSchemaVersion || manifest.Counts["records"] < int64(len(before.records)) {
		t.Fatalf("got manifest %s, want format %s with kura.pgdump, schema %d and at least %d records", b, kura.BackupFormatPostgres, store.PGSchemaVersion, len(before.records))
	}
	if _, err := os.Stat(filepath.Join(backup, "kura.db")); !os.IsNotExist(err) {
		t.Errorf("a PostgreSQL backup holds kura.db: %v", err)
	}
	// What the source said of each record acknowledged before the backup.
	hashes := map[string]string{}
	for _, id := range before.records {
		r, err := c.GetRecord(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		hashes[id] = r.Hash + " " + r.Seal
	}
	if err := src.Close(ctx); err != nil {
		t.Fatal(err)
	}

	target := pgtest.URL(t)
	t.Run("TamperedArchiveIsRefused", func(t *testing.T) {
		bad := t.TempDir()
		for _, n := range []string{"kura.pgdump", "manifest.json"} {
			b, err := os.ReadFile(filepath.Join(backup, n))
			if err != nil {
				t.Fatal(err)
			}
			if n == "kura.pgdump" {
				b[len(b)/2] ^= 0x40
			}
			if err := os.WriteFile(filepath.Join(bad, n), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		_, errOut, code := runKura(t, "", nil, "restore", bad, "--database-url", target, "--key-file", keyFile)
		if code != exitFail || !strings.Contains(errOut, "kura.pgdump has SHA-256") {
			t.Errorf("got exit %d, stderr %q, want a manifest mismatch of kura.pgdump", code, errOut)
		}
		if n := pgObjects(t, target); n != 0 {
			t.Errorf("a refused restore made %d tables", n)
		}
	})

	t.Run("IntoADataDirectoryIsRefused", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "data")
		_, errOut, code := runKura(t, "", nil, "restore", backup, "--data-dir", dir, "--key-file", keyFile)
		if code != exitFail || !strings.Contains(errOut, "PostgreSQL store") || !strings.Contains(errOut, "--database-url") {
			t.Errorf("got exit %d, stderr %q, want a refusal naming --database-url", code, errOut)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("a refused restore made %s", dir)
		}
	})

	t.Run("NonEmptyDatabaseIsRefused", func(t *testing.T) {
		_, errOut, code := runKura(t, "", nil, "restore", backup, "--database-url", srcURL, "--key-file", keyFile)
		if code != exitFail || !strings.Contains(errOut, "is not empty") {
			t.Errorf("got exit %d, stderr %q, want a refusal of a database that holds tables", code, errOut)
		}
	})

	t.Run("SQLiteBackupIsRefused", func(t *testing.T) {
		lite := kuradtest.StartMain(t, kuradtest.Options{Store: kuradtest.StoreSQLite, Configure: func(cfg *daemon.Config) {
			cfg.KeyFile = keyFile
		}})
		bk, err := client.New(lite.BaseURL()).Backup(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		_, errOut, code := runKura(t, "", nil, "restore", bk.Path, "--database-url", target, "--key-file", keyFile)
		if code != exitFail || !strings.Contains(errOut, "SQLite store") || !strings.Contains(errOut, "--data-dir") {
			t.Errorf("got exit %d, stderr %q, want a refusal naming --data-dir", code, errOut)
		}
		if n := pgObjects(t, target); n != 0 {
			t.Errorf("a refused restore made %d tables", n)
		}
	})

	out, errOut, code = runKura(t, "", nil, "restore", backup, "--database-url", target, "--key-file", keyFile)
	if code != exitOK {
		t.Fatalf("kura restore: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	for label, want := range map[string]string{
		"integrity":         "ok",
		"sessions verified": fmt.Sprintf("%d (0 failing)", manifest.Counts["sessions"]),
		"last event seq":    fmt.Sprint(manifest.LastEventSeq),
	} {
		if got := humanField(out, label); got != want {
			t.Errorf("got %s %q, want %q in %q", label, got, want, out)
		}
	}
	if !strings.Contains(out, "start kurad with --database-url") {
		t.Errorf("the report does not say how to start kurad: %q", out)
	}
	// pg_restore brings no planner statistics: without them the first
	// searches read whole tables.
	if n := pgStats(t, target, "records"); n == 0 {
		t.Errorf("the restored database has no planner statistics of records")
	}

	dst := kuradtest.StartMain(t, kuradtest.Options{Configure: func(cfg *daemon.Config) {
		cfg.DatabaseURL = target
		cfg.KeyFile = keyFile
	}})
	rc := client.New(dst.BaseURL())

	t.Run("AcknowledgedBeforeTheBackupIsThere", func(t *testing.T) {
		for id, want := range hashes {
			r, err := rc.GetRecord(ctx, id)
			if err != nil || r.Hash+" "+r.Seal != want {
				t.Errorf("record %s: got %+v, %v, want hash and seal %s", id, r, err, want)
			}
		}
		for _, id := range before.turns {
			if tu, err := rc.GetTurn(ctx, id); err != nil || tu.State != "complete" {
				t.Errorf("turn %s: got %+v, %v, want it complete", id, tu, err)
			}
		}
		if _, err := rc.GetRecord(ctx, late.ID); !client.IsCode(err, kura.ENotFound) {
			t.Errorf("record %s written after the backup: got %v, want not found", late.ID, err)
		}
	})

	t.Run("EverySessionAndLedgerVerifies", func(t *testing.T) {
		for _, id := range before.sessions {
			if v, err := rc.VerifySession(ctx, id, ""); err != nil || !v.OK {
				t.Errorf("session %s: got %+v, %v, want it to verify", id, v, err)
			}
		}
		for _, id := range before.ledgers {
			if v, err := rc.VerifyLedger(ctx, id); err != nil || !v.OK {
				t.Errorf("ledger %s: got %+v, %v, want it to verify", id, v, err)
			}
		}
		info, err := rc.Info(ctx)
		if err != nil || info.LastEventSeq != manifest.LastEventSeq || info.PublicKey != manifest.PublicKey {
			t.Fatalf("got %+v, %v, want last event seq %d and key %s", info, err, manifest.LastEventSeq, manifest.PublicKey)
		}
	})

	t.Run("RestoreOverItIsRefused", func(t *testing.T) {
		_, errOut, code := runKura(t, "", nil, "restore", backup, "--database-url", target, "--key-file", keyFile)
		if code != exitFail || !strings.Contains(errOut, "is not empty") {
			t.Errorf("got exit %d, stderr %q, want a refusal of the restored database", code, errOut)
		}
	})
}
