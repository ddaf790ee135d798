package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/daemon"
	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/kura-memory/kura/internal/testwait"
)

// acked collects the ids of writes whose 2xx answer has arrived.
type acked struct {
	mu                                sync.Mutex
	records, ledgers, sessions, turns []string
}

func (a *acked) add(dst *[]string, id string) {
	a.mu.Lock()
	*dst = append(*dst, id)
	a.mu.Unlock()
}

func (a *acked) copy() acked {
	a.mu.Lock()
	defer a.mu.Unlock()
	return acked{records: slices.Clone(a.records), ledgers: slices.Clone(a.ledgers), sessions: slices.Clone(a.sessions), turns: slices.Clone(a.turns)}
}

// humanField returns what a tabwriter line of out says after label.
func humanField(out, label string) string {
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, label+"  "); ok {
			return strings.TrimSpace(rest)
		}
	}
	return ""
}

// load writes records, ledgers and sessions with turns through the API
// until stop is closed.
func load(t *testing.T, c *client.Client, a *acked, stop <-chan struct{}) *sync.WaitGroup {
	t.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				r, err := c.PutRecord(ctx, client.RecordInput{Type: "agent.thought", AuthorID: "agent:load", Content: json.RawMessage(fmt.Sprintf(`{"w":%d,"i":%d}`, w, i))})
				if err != nil {
					t.Errorf("put record: %v", err)
					return
				}
				a.add(&a.records, r.ID)
				if i%4 == 3 {
					l, err := c.CreateLedger(ctx, client.LedgerInput{Label: "load", RecordIDs: []string{r.ID}})
					if err != nil {
						t.Errorf("create ledger: %v", err)
						return
					}
					a.add(&a.ledgers, l.ID)
				}
			}
		}(w)
	}
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for n := 0; ; n++ {
				s, err := c.CreateSession(ctx, client.SessionInput{Project: "load", Name: fmt.Sprintf("w%d-%d", w, n)})
				if err != nil {
					t.Errorf("create session: %v", err)
					return
				}
				a.add(&a.sessions, s.ID)
				for i := 0; i < 3; i++ {
					select {
					case <-stop:
						return
					default:
					}
					instr := client.RecordInput{Type: "task.instruction", AuthorID: "user:oles", Content: json.RawMessage(fmt.Sprintf(`"step %d"`, i))}
					turn, err := c.OpenTurn(ctx, s.ID, client.TurnOpenInput{Instruction: &instr})
					if err != nil {
						t.Errorf("open turn: %v", err)
						return
					}
					out := client.RecordRef{RecordInput: client.RecordInput{Type: "agent.thought", AuthorID: "agent:bmo", Content: json.RawMessage(fmt.Sprintf(`"w%d n%d i%d"`, w, n, i))}}
					if _, err := c.AppendTurn(ctx, turn.ID, client.TurnAppend{Records: []client.RecordRef{out}}); err != nil {
						t.Errorf("append: %v", err)
						return
					}
					if _, err := c.CloseTurn(ctx, turn.ID, client.TurnClose{Status: "complete"}); err != nil {
						t.Errorf("close turn: %v", err)
						return
					}
					a.add(&a.turns, turn.ID)
				}
			}
		}(w)
	}
	return &wg
}

// TestE2E_BackupRestore takes a backup with kura backup while writes go on,
// restores it with kura restore into a new data directory, starts kurad on
// it and checks that every session and ledger verifies there and that every
// write acknowledged before the backup call is present.
func TestE2E_BackupRestore(t *testing.T) {
	// restore reads these as kurad does; the test names everything itself.
	t.Setenv("KURA_DATA_DIR", "")
	t.Setenv("KURA_KEY_FILE", "")
	t.Setenv("KURA_DATABASE_URL", "")
	ctx := context.Background()
	src := kuradtest.StartMain(t, kuradtest.Options{Store: kuradtest.StoreSQLite})
	keyFile := src.Config.KeyFile
	c := client.New(src.BaseURL())
	a := &acked{}
	stop := make(chan struct{})
	wg := load(t, c, a, stop)
	testwait.For(t, 30*time.Second, "writes before the backup", func() bool {
		s := a.copy()
		return len(s.records) >= 40 && len(s.turns) >= 4
	})
	before := a.copy()
	// Without a directory kurad names one from the time, inside its
	// backup directory (<data-dir>/backups by default).
	backups, err := filepath.EvalSymlinks(filepath.Join(src.Config.DataDir, "backups"))
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runKura(t, src.BaseURL(), nil, "backup")
	backup, _ := strings.CutPrefix(strings.SplitN(out, "\n", 2)[0], "backup written to ")
	if code != exitOK || filepath.Dir(backup) != backups {
		close(stop)
		wg.Wait()
		t.Fatalf("kura backup: exit %d, stdout %q, stderr %q, want a backup inside %s", code, out, errOut, backups)
	}
	// A relative directory is taken inside the backup directory, an
	// absolute one must lie inside it.
	for _, dir := range []string{"nightly/1", filepath.Join(backups, "nightly", "2")} {
		want := dir
		if !filepath.IsAbs(dir) {
			want = filepath.Join(backups, dir)
		}
		out, errOut, code := runKura(t, src.BaseURL(), nil, "backup", dir)
		if code != exitOK || !strings.HasPrefix(out, "backup written to "+want+"\n") {
			t.Errorf("kura backup %s: exit %d, stdout %q, stderr %q, want it written to %s", dir, code, out, errOut, want)
		}
	}
	outside := filepath.Join(t.TempDir(), "b")
	if _, errOut, code := runKura(t, src.BaseURL(), nil, "backup", outside); code != exitFail || !strings.Contains(errOut, "inside kurad's backup directory") {
		t.Errorf("kura backup %s: exit %d, stderr %q, want a refusal of a path outside the backup directory", outside, code, errOut)
	}
	if _, err := os.Stat(outside); !os.IsNotExist(err) {
		t.Errorf("a refused backup made %s", outside)
	}
	testwait.For(t, 30*time.Second, "writes after the backup", func() bool { return len(a.copy().records) >= len(before.records)+15 })
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
	if err := src.Close(ctx); err != nil {
		t.Fatal(err)
	}

	target := filepath.Join(t.TempDir(), "restored")
	t.Run("TamperedBackupIsRefused", func(t *testing.T) {
		bad := t.TempDir()
		for _, n := range []string{"kura.db", "manifest.json"} {
			b, err := os.ReadFile(filepath.Join(backup, n))
			if err != nil {
				t.Fatal(err)
			}
			if n == "kura.db" {
				b[len(b)/3] ^= 0x40
			}
			os.WriteFile(filepath.Join(bad, n), b, 0o600)
		}
		_, errOut, code := runKura(t, "", nil, "restore", bad, "--data-dir", target, "--key-file", keyFile)
		if code != exitFail || !strings.Contains(errOut, "manifest says") {
			t.Errorf("got exit %d, stderr %q, want a manifest mismatch", code, errOut)
		}
		if _, err := os.Stat(target); !os.IsNotExist(err) {
			t.Errorf("a refused restore touched the target: %v", err)
		}
	})

	t.Run("NoKeyIsRefused", func(t *testing.T) {
		_, errOut, code := runKura(t, "", nil, "restore", backup, "--data-dir", target)
		if code != exitFail || !strings.Contains(errOut, "no signing key") {
			t.Errorf("got exit %d, stderr %q, want a refusal naming the missing key", code, errOut)
		}
	})

	out, errOut, code = runKura(t, "", nil, "restore", backup, "--data-dir", target, "--key-file", keyFile)
	if code != exitOK {
		t.Fatalf("kura restore: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if got, want := humanField(out, "sessions verified"), fmt.Sprintf("%d (0 failing)", manifest.Counts["sessions"]); got != want {
		t.Errorf("got sessions verified %q, want %q in %q", got, want, out)
	}
	if got, want := humanField(out, "last event seq"), fmt.Sprint(manifest.LastEventSeq); got != want {
		t.Errorf("got last event seq %q, want %q in %q", got, want, out)
	}

	dst := kuradtest.StartMain(t, kuradtest.Options{Store: kuradtest.StoreSQLite, Configure: func(cfg *daemon.Config) {
		cfg.DataDir = target
		cfg.KeyFile = keyFile
	}})
	rc := client.New(dst.BaseURL())

	t.Run("EverySessionAndLedgerVerifies", func(t *testing.T) {
		var sessions int64
		for cursor := ""; ; {
			p, err := rc.ListSessions(ctx, client.SessionListOptions{Limit: 1000, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range p.Sessions {
				sessions++
				v, err := rc.VerifySession(ctx, s.ID, "")
				if err != nil || !v.OK {
					t.Errorf("session %s: got %+v, %v, want it to verify", s.ID, v, err)
				}
			}
			if cursor = p.NextCursor; cursor == "" {
				break
			}
		}
		raw, err := sql.Open("sqlite", "file:"+filepath.Join(target, "kura.db")+"?mode=ro")
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		rows, err := raw.Query("SELECT id FROM ledgers")
		if err != nil {
			t.Fatal(err)
		}
		var ledgers []string
		for rows.Next() {
			var id string
			rows.Scan(&id)
			ledgers = append(ledgers, id)
		}
		rows.Close()
		for _, id := range ledgers {
			v, err := rc.VerifyLedger(ctx, id)
			if err != nil || !v.OK {
				t.Errorf("ledger %s: got %+v, %v, want it to verify", id, v, err)
			}
		}
		if sessions != manifest.Counts["sessions"] || int64(len(ledgers)) != manifest.Counts["ledgers"] {
			t.Errorf("got %d sessions and %d ledgers, the manifest says %d and %d", sessions, len(ledgers), manifest.Counts["sessions"], manifest.Counts["ledgers"])
		}
	})

	t.Run("AcknowledgedBeforeTheBackupIsThere", func(t *testing.T) {
		for _, id := range before.records {
			if _, err := rc.GetRecord(ctx, id); err != nil {
				t.Errorf("record %s: %v", id, err)
			}
		}
		for _, id := range before.ledgers {
			if _, err := rc.GetLedger(ctx, id); err != nil {
				t.Errorf("ledger %s: %v", id, err)
			}
		}
		for _, id := range before.sessions {
			if _, err := rc.GetSession(ctx, id); err != nil {
				t.Errorf("session %s: %v", id, err)
			}
		}
		for _, id := range before.turns {
			if tu, err := rc.GetTurn(ctx, id); err != nil || tu.State != "complete" {
				t.Errorf("turn %s: got %+v, %v, want it complete", id, tu, err)
			}
		}
	})

	t.Run("ServesWrites", func(t *testing.T) {
		info, err := rc.Info(ctx)
		if err != nil || info.LastEventSeq != manifest.LastEventSeq || info.PublicKey != manifest.PublicKey {
			t.Fatalf("got %+v, %v, want last event seq %d and key %s", info, err, manifest.LastEventSeq, manifest.PublicKey)
		}
		if _, err := rc.PutRecord(ctx, client.RecordInput{Type: "agent.thought", AuthorID: "agent:bmo", Content: json.RawMessage(`"after the restore"`)}); err != nil {
			t.Fatal(err)
		}
		if info, _ := rc.Info(ctx); info.LastEventSeq != manifest.LastEventSeq+1 {
			t.Errorf("got last event seq %d, want %d", info.LastEventSeq, manifest.LastEventSeq+1)
		}
	})

	t.Run("RunningKuradIsRefused", func(t *testing.T) {
		_, errOut, code := runKura(t, "", nil, "restore", backup, "--data-dir", target, "--key-file", keyFile, "--force")
		if code != exitFail || !strings.Contains(errOut, "a kurad is running") {
			t.Errorf("got exit %d, stderr %q, want a refusal while kurad runs", code, errOut)
		}
	})

	if err := dst.Close(ctx); err != nil {
		t.Fatal(err)
	}

	t.Run("NonEmptyNeedsForce", func(t *testing.T) {
		_, errOut, code := runKura(t, "", nil, "restore", backup, "--data-dir", target, "--key-file", keyFile)
		if code != exitFail || !strings.Contains(errOut, "not empty") {
			t.Fatalf("got exit %d, stderr %q, want a refusal of a non-empty data dir", code, errOut)
		}
		out, errOut, code := runKura(t, "", nil, "restore", backup, "--data-dir", target, "--key-file", keyFile, "--force", "--json")
		if code != exitOK {
			t.Fatalf("got exit %d, stderr %q", code, errOut)
		}
		var rep kura.RestoreReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		if !rep.Verification.OK || rep.MovedAside == "" {
			t.Fatalf("got %s, want a verified restore with the old files moved aside", out)
		}
		// The database the restored kurad wrote to is kept, not deleted.
		if _, err := os.Stat(filepath.Join(rep.MovedAside, "kura.db")); err != nil {
			t.Errorf("the replaced database is not in %s: %v", rep.MovedAside, err)
		}
	})
}

func TestRun_BackupCommandLine(t *testing.T) {
	t.Setenv("KURA_DATA_DIR", "")
	url := deadURL(t)
	for _, tt := range []struct {
		name       string
		args       []string
		wantCode   int
		wantErrOut string
	}{
		{"BackupTwoDirs", []string{"backup", "a", "b"}, exitUsage, "backup takes at most one directory"},
		{"RestoreNoDir", []string{"restore", "--data-dir", "/tmp/x"}, exitUsage, "restore takes one backup directory"},
		{"RestoreNoDataDir", []string{"restore", "/tmp/b"}, exitUsage, "--data-dir (or KURA_DATA_DIR) is required"},
		{"RestoreTwoKeys", []string{"restore", "/tmp/b", "--data-dir", "/tmp/x", "--key-file", "k", "--public-key", "ed25519:00"}, exitUsage, "not both"},
		{"RestoreBadPublicKey", []string{"restore", t.TempDir(), "--data-dir", t.TempDir(), "--public-key", "ed25519:zz"}, exitUsage, "--public-key must be"},
		{"CompactNoSeq", []string{"compact-events"}, exitUsage, "compact-events takes one seq"},
		{"CompactBadSeq", []string{"compact-events", "-3"}, exitUsage, "flag provided but not defined"},
		{"CompactZero", []string{"compact-events", "0"}, exitUsage, "not a positive event seq"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := runKura(t, url, nil, tt.args...)
			if code != tt.wantCode || !strings.Contains(errOut, tt.wantErrOut) {
				t.Errorf("got exit %d, stderr %q, want %d and %q", code, errOut, tt.wantCode, tt.wantErrOut)
			}
		})
	}
}

func TestE2E_CompactEvents(t *testing.T) {
	t.Parallel()
	url := kuradtest.Start(t)
	for i := 0; i < 5; i++ {
		putJSON(t, url, "", "--type", "agent.thought", "--author", "agent:bmo", "--content", fmt.Sprint(i))
	}
	// The doorbell saves its published cursor a moment after publishing,
	// and compaction never passes it: repeat (it is idempotent) until done.
	var res client.EventCompaction
	testwait.For(t, 30*time.Second, "compaction through seq 4", func() bool {
		out, errOut, code := runKura(t, url, nil, "compact-events", "5", "--json")
		if code != exitOK {
			t.Fatalf("got exit %d, stderr %q", code, errOut)
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatal(err)
		}
		return res.CompactedThrough == 4
	})
	if res.FirstSeq != 5 || res.LastSeq != 5 || res.RemovedTotal != 4 {
		t.Errorf("got %+v, want seqs 1..4 removed and 5 kept", res)
	}
	out, _, code := runKura(t, url, nil, "compact-events", "100")
	if code != exitOK || !strings.Contains(out, "the newest event (5) is always kept") {
		t.Errorf("got exit %d, stdout %q, want it to say why it stopped short", code, out)
	}
	out, errOut, code := runKura(t, url, nil, "events", "--after", "1")
	if code != exitOK || !strings.Contains(errOut, "events through seq 4 were compacted away") || !strings.HasPrefix(out, "5 ") {
		t.Errorf("got exit %d, stdout %q, stderr %q, want event 5 and a note of the compaction", code, out, errOut)
	}
	out, _, _ = runKura(t, url, nil, "info", "--json")
	var info client.Info
	if json.Unmarshal([]byte(out), &info); info.CompactedThrough != 4 {
		t.Errorf("got %s, want compacted_through 4", out)
	}
}
