package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/kuradtest"
)

// TestE2E_RestoreRefusedWhileKuradHoldsTheDir: kura restore must not swap
// the database of a running kurad even when kurad.addr does not lead to it
// (a kurad still starting, or an address file someone removed): the data
// directory's lock refuses it. Once kurad stops, the same restore works.
func TestE2E_RestoreRefusedWhileKuradHoldsTheDir(t *testing.T) {
	t.Setenv("KURA_DATA_DIR", "")
	t.Setenv("KURA_KEY_FILE", "")
	t.Setenv("KURA_BACKUP_DIR", "")
	ctx := context.Background()
	d := kuradtest.StartMain(t, kuradtest.Options{Store: kuradtest.StoreSQLite}) // a SQLite backup into its data dir
	dir, keyFile := d.Config.DataDir, d.Config.KeyFile
	c := client.New(d.BaseURL())
	if _, err := c.PutRecord(ctx, client.RecordInput{Type: "agent.thought", AuthorID: "agent:bmo", Content: json.RawMessage(`"before"`)}); err != nil {
		t.Fatal(err)
	}
	b, err := c.Backup(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutRecord(ctx, client.RecordInput{Type: "agent.thought", AuthorID: "agent:bmo", Content: json.RawMessage(`"after"`)}); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "kurad.addr")); err != nil {
		t.Fatal(err)
	}

	_, errOut, code := runKura(t, "", nil, "restore", b.Path, "--data-dir", dir, "--key-file", keyFile, "--force")
	if want := fmt.Sprintf("in use by kurad (pid %d)", os.Getpid()); code != exitFail || !strings.Contains(errOut, want) || !strings.Contains(errOut, dir) {
		t.Fatalf("got exit %d, stderr %q, want a refusal naming %s and %q", code, errOut, dir, want)
	}
	// kurad still serves its own database, the record written after the
	// backup included.
	info, err := c.Info(ctx)
	if err != nil || info.Counts["records"] != 2 {
		t.Fatalf("got %+v, %v, want kurad serving its 2 records", info, err)
	}
	if entries, _ := filepath.Glob(filepath.Join(dir, "pre-restore-*")); len(entries) > 0 {
		t.Errorf("a refused restore moved files aside: %v", entries)
	}

	if err := d.Close(ctx); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runKura(t, "", nil, "restore", b.Path, "--data-dir", dir, "--key-file", keyFile, "--force")
	if code != exitOK {
		t.Fatalf("restore after kurad stopped: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
