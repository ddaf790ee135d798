package store_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/dirlock"
	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/internal/sqlitetest"
	"github.com/kura-memory/kura/internal/store"
	"github.com/kura-memory/kura/internal/testwait"
)

// ackLog collects writes in the order their callers heard they were
// durable.
type ackLog struct {
	mu      sync.Mutex
	records []string
	ledgers []string
	turns   []string
}

func (a *ackLog) add(dst *[]string, id string) {
	a.mu.Lock()
	*dst = append(*dst, id)
	a.mu.Unlock()
}

func (a *ackLog) snapshot() (records, ledgers, turns []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.records...), append([]string(nil), a.ledgers...), append([]string(nil), a.turns...)
}

// writeLoad runs writers until stop is closed: records, ledgers over them,
// and turns on sessions of their own (open, append, close).
func writeLoad(t *testing.T, db *store.DB, acks *ackLog, stop <-chan struct{}) *sync.WaitGroup {
	t.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				r, err := db.CreateRecord(ctx, &kura.RecordInput{Type: "agent.thought", AuthorID: "agent:load",
					Content: json.RawMessage(fmt.Sprintf(`{"w":%d,"i":%d}`, w, i))})
				if err != nil {
					t.Errorf("record: %v", err)
					return
				}
				acks.add(&acks.records, r.ID)
				if i%5 == 4 {
					l, err := db.CreateLedger(ctx, &kura.LedgerInput{Label: "load", RecordIDs: []string{r.ID}})
					if err != nil {
						t.Errorf("ledger: %v", err)
						return
					}
					acks.add(&acks.ledgers, l.ID)
				}
			}
		}(w)
	}
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			s, err := db.CreateSession(ctx, &kura.SessionInput{Project: "load", Name: fmt.Sprintf("s%d", w)})
			if err != nil {
				t.Errorf("session: %v", err)
				return
			}
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				instr := kura.RecordInput{Type: "task.instruction", AuthorID: "user:oles", Content: json.RawMessage(fmt.Sprintf(`"step %d"`, i))}
				turn, err := db.OpenTurn(ctx, s.ID, &kura.TurnOpenInput{Instruction: &instr}, time.Minute)
				if err != nil {
					t.Errorf("open turn: %v", err)
					return
				}
				if _, err := db.AppendTurn(ctx, turn.ID, &kura.TurnAppend{Records: []kura.RecordRef{{RecordInput: kura.RecordInput{
					Type: "agent.thought", AuthorID: "agent:bmo", Content: json.RawMessage(fmt.Sprintf(`"thinking %d %d"`, w, i))}}}}); err != nil {
					t.Errorf("append: %v", err)
					return
				}
				if _, err := db.CloseTurn(ctx, turn.ID, &kura.TurnClose{Status: "complete"}); err != nil {
					t.Errorf("close turn: %v", err)
					return
				}
				acks.add(&acks.turns, turn.ID)
			}
		}(w)
	}
	return &wg
}

func TestStore_BackupDuringWrites(t *testing.T) {
	t.Parallel()
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	db := mustOpenAt(t, sqlitetest.File(t), key)
	ctx := context.Background()
	acks := &ackLog{}
	stop := make(chan struct{})
	wg := writeLoad(t, db, acks, stop)
	testwait.For(t, testwait.Default, "writes before the backup", func() bool {
		r, _, tu := acks.snapshot()
		return len(r) >= 60 && len(tu) >= 4
	})
	records, ledgers, turns := acks.snapshot()
	dir := filepath.Join(t.TempDir(), "backups", "one")
	m, err := db.Backup(ctx, dir)
	if err != nil {
		close(stop)
		wg.Wait()
		t.Fatal(err)
	}
	// Let writes carry on past the snapshot: they must not be in it.
	after, _, _ := acks.snapshot()
	testwait.For(t, testwait.Default, "writes after the backup", func() bool { r, _, _ := acks.snapshot(); return len(r) > len(after)+20 })
	close(stop)
	wg.Wait()

	snap := rawDB(t, filepath.Join(dir, store.BackupDatabase))
	var integrity string
	if err := snap.QueryRow("PRAGMA integrity_check").Scan(&integrity); err != nil || integrity != "ok" {
		t.Fatalf("integrity_check: got %q, %v, want ok", integrity, err)
	}
	for _, c := range []struct {
		table string
		ids   []string
	}{{"records", records}, {"ledgers", ledgers}, {"turns", turns}} {
		for _, id := range c.ids {
			var n int
			if err := snap.QueryRow("SELECT count(*) FROM "+c.table+" WHERE id = ?", id).Scan(&n); err != nil || n != 1 {
				t.Fatalf("%s %s, acknowledged before the backup, is not in it (%v)", c.table, id, err)
			}
		}
	}
	var turnState string
	if err := snap.QueryRow("SELECT state FROM turns WHERE id = ?", turns[len(turns)-1]).Scan(&turnState); err != nil || turnState != "complete" {
		t.Errorf("got turn state %q, %v, want complete: the close was acknowledged before the backup", turnState, err)
	}
	var maxSeq, nRecords int64
	snap.QueryRow("SELECT max(seq) FROM events").Scan(&maxSeq)
	snap.QueryRow("SELECT count(*) FROM records").Scan(&nRecords)
	if m.LastEventSeq != maxSeq || m.Counts["records"] != nRecords {
		t.Errorf("got manifest last_event_seq %d, records %d; the snapshot holds %d, %d", m.LastEventSeq, m.Counts["records"], maxSeq, nRecords)
	}
	if m.LastEventSeq >= db.LastEventSeq() {
		t.Errorf("got last_event_seq %d in the backup, the store is at %d: writes after the backup should not be in it", m.LastEventSeq, db.LastEventSeq())
	}
	if m.PublicKey != "ed25519:"+hex.EncodeToString(key.Public().(ed25519.PublicKey)) {
		t.Errorf("got public key %s", m.PublicKey)
	}
	b, err := os.ReadFile(filepath.Join(dir, store.BackupDatabase))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if len(m.Files) != 1 || m.Files[0].Name != store.BackupDatabase || m.Files[0].Bytes != int64(len(b)) || m.Files[0].SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("got files %+v, want kura.db with %d bytes and sha256 %x", m.Files, len(b), sum)
	}
	if strings.Contains(string(b), hex.EncodeToString(key.Seed())) {
		t.Error("the backup holds the private key")
	}
	onDisk, err := store.CheckBackup(dir, key.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatalf("check backup: %v", err)
	}
	if onDisk.Signature != m.Signature || onDisk.LastEventSeq != m.LastEventSeq {
		t.Errorf("got manifest.json %+v, want what Backup returned %+v", onDisk, m)
	}
	if st, _ := os.Stat(filepath.Join(dir, store.BackupDatabase)); st.Mode().Perm() != 0o600 {
		t.Errorf("got kura.db mode %o, want 600", st.Mode().Perm())
	}
}

func TestStore_BackupRefuses(t *testing.T) {
	t.Parallel()
	db := MustOpenStore(t)
	ctx := context.Background()
	mustRecords(t, db, 3)
	full := t.TempDir()
	os.WriteFile(filepath.Join(full, "x"), []byte("x"), 0o600)
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	for _, tt := range []struct {
		name, path, code string
	}{
		{"Empty", "", kura.EInvalid},
		{"Relative", "backups/x", kura.EInvalid},
		{"NotEmpty", full, kura.EConflict},
		{"AFile", file, kura.EConflict},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := db.Backup(ctx, tt.path)
			if got := kura.ErrorCode(err); got != tt.code {
				t.Errorf("got %v, want code %s", err, tt.code)
			}
		})
	}
	t.Run("EmptyDirIsFine", func(t *testing.T) {
		dir := t.TempDir()
		if _, err := db.Backup(ctx, dir); err != nil {
			t.Fatal(err)
		}
		// The same path again: it holds a backup now.
		if _, err := db.Backup(ctx, dir); kura.ErrorCode(err) != kura.EConflict {
			t.Errorf("got %v, want conflict", err)
		}
	})
	t.Run("CancelledLeavesNothing", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "b")
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := db.Backup(cctx, dir); err == nil {
			t.Fatal("got a backup with a cancelled context")
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("got %v, want the directory made for the backup removed", err)
		}
	})
}

// mustBackup writes a backup of a small store with a session and returns
// the store's key and the backup directory.
func mustBackup(t *testing.T) (ed25519.PrivateKey, string, *store.DB) {
	t.Helper()
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	db := mustOpenAt(t, sqlitetest.File(t), key)
	ctx := context.Background()
	s, err := db.CreateSession(ctx, &kura.SessionInput{Project: "hashi", Name: "morning"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		instr := kura.RecordInput{Type: "task.instruction", AuthorID: "user:oles", Content: json.RawMessage(fmt.Sprint(i))}
		turn, err := db.OpenTurn(ctx, s.ID, &kura.TurnOpenInput{Instruction: &instr}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.CloseTurn(ctx, turn.ID, &kura.TurnClose{Status: "complete"}); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(t.TempDir(), "backup")
	if _, err := db.Backup(ctx, dir); err != nil {
		t.Fatal(err)
	}
	return key, dir, db
}

func TestStore_Restore(t *testing.T) {
	t.Parallel()
	key, backup, _ := mustBackup(t)
	pub := key.Public().(ed25519.PublicKey)
	ctx := context.Background()

	t.Run("IntoEmptyDir", func(t *testing.T) {
		data := filepath.Join(t.TempDir(), "data")
		rep, err := store.Restore(ctx, store.RestoreOptions{BackupDir: backup, DataDir: data, PublicKey: pub})
		if err != nil {
			t.Fatal(err)
		}
		v := rep.Verification
		if !v.OK || v.Integrity != "ok" || v.Sessions != 1 || v.Ledgers != 6 || v.LastEventSeq != rep.Manifest.LastEventSeq {
			t.Errorf("got verification %+v, want ok with 1 session and 6 ledgers", v)
		}
		if got := dirNames(t, data); !slices.Equal(got, []string{"kura.db", dirlock.File}) {
			t.Errorf("got %v in the data dir, want kura.db and the lock file alone", got)
		}
		// The restored database opens as kurad would open it, and verifies.
		db := mustOpenAt(t, filepath.Join(data, "kura.db"), key)
		sessions, _, err := db.ListSessions(ctx, "", "", 10)
		if err != nil || len(sessions) != 1 {
			t.Fatalf("got %v, %v", sessions, err)
		}
		if sv, err := db.VerifySession(ctx, sessions[0].ID, ""); err != nil || !sv.OK {
			t.Errorf("got %+v, %v, want the restored session to verify", sv, err)
		}
		if db.LastEventSeq() != rep.Manifest.LastEventSeq {
			t.Errorf("got last event seq %d, want %d", db.LastEventSeq(), rep.Manifest.LastEventSeq)
		}
	})

	t.Run("NonEmptyNeedsForce", func(t *testing.T) {
		data := t.TempDir()
		os.WriteFile(filepath.Join(data, "kura.db"), []byte("old"), 0o600)
		os.WriteFile(filepath.Join(data, "kurad.key"), []byte("key"), 0o600)
		_, err := store.Restore(ctx, store.RestoreOptions{BackupDir: backup, DataDir: data, PublicKey: pub, Keep: []string{"kurad.key"}})
		if err == nil || !strings.Contains(err.Error(), "not empty") {
			t.Fatalf("got %v, want a refusal of a non-empty directory", err)
		}
		if b, _ := os.ReadFile(filepath.Join(data, "kura.db")); string(b) != "old" {
			t.Fatal("a refused restore changed the data dir")
		}
		rep, err := store.Restore(ctx, store.RestoreOptions{BackupDir: backup, DataDir: data, PublicKey: pub, Keep: []string{"kurad.key"}, Force: true})
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(filepath.Join(rep.MovedAside, "kura.db")); string(b) != "old" {
			t.Errorf("got %q in %s, want the old kura.db moved aside", b, rep.MovedAside)
		}
		if b, _ := os.ReadFile(filepath.Join(data, "kurad.key")); string(b) != "key" {
			t.Error("the kept key file was moved")
		}
	})

	// A restore holds the data directory's lock: it refuses a directory a
	// kurad holds, and leaves it as it was.
	t.Run("HeldByKurad", func(t *testing.T) {
		data := t.TempDir()
		os.WriteFile(filepath.Join(data, "kura.db"), []byte("live"), 0o600)
		held, err := dirlock.Acquire(data, "kurad")
		if err != nil {
			t.Fatal(err)
		}
		_, err = store.Restore(ctx, store.RestoreOptions{BackupDir: backup, DataDir: data, PublicKey: pub, Force: true})
		held.Release()
		if want := fmt.Sprintf("in use by kurad (pid %d)", os.Getpid()); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), data) {
			t.Fatalf("got %v, want a refusal naming %s and %q", err, data, want)
		}
		if got := dirNames(t, data); !slices.Equal(got, []string{"kura.db", dirlock.File}) {
			t.Errorf("got %v in the data dir, want it untouched", got)
		}
		if b, _ := os.ReadFile(filepath.Join(data, "kura.db")); string(b) != "live" {
			t.Errorf("got kura.db %q, want the live database untouched", b)
		}
		// The lock file a stopped kurad left is not old state to move aside.
		os.Remove(filepath.Join(data, "kura.db"))
		if _, err := store.Restore(ctx, store.RestoreOptions{BackupDir: backup, DataDir: data, PublicKey: pub}); err != nil {
			t.Fatalf("got %v, want a restore into a directory holding only the lock file", err)
		}
	})

	t.Run("WrongKey", func(t *testing.T) {
		other, _, _ := ed25519.GenerateKey(rand.Reader)
		data := t.TempDir()
		_, err := store.Restore(ctx, store.RestoreOptions{BackupDir: backup, DataDir: data, PublicKey: other})
		if err == nil || !strings.Contains(err.Error(), "use the original key") {
			t.Fatalf("got %v, want a refusal naming the key", err)
		}
	})

	tamper := func(t *testing.T, name string, edit func([]byte) []byte) string {
		t.Helper()
		dir := t.TempDir()
		for _, n := range []string{store.BackupDatabase, store.BackupManifest} {
			b, err := os.ReadFile(filepath.Join(backup, n))
			if err != nil {
				t.Fatal(err)
			}
			if n == name {
				b = edit(b)
			}
			os.WriteFile(filepath.Join(dir, n), b, 0o600)
		}
		return dir
	}
	for _, tt := range []struct {
		name, file, want string
		edit             func([]byte) []byte
	}{
		{"FlippedByte", store.BackupDatabase, "SHA-256", func(b []byte) []byte { b[len(b)/2] ^= 0x01; return b }},
		{"Truncated", store.BackupDatabase, "bytes", func(b []byte) []byte { return b[:len(b)-1] }},
		{"EditedManifest", store.BackupManifest, "signature", func(b []byte) []byte {
			return []byte(strings.Replace(string(b), `"last_event_seq": `, `"last_event_seq": 1`, 1))
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := tamper(t, tt.file, tt.edit)
			data := filepath.Join(t.TempDir(), "data")
			_, err := store.Restore(ctx, store.RestoreOptions{BackupDir: dir, DataDir: data, PublicKey: pub})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error about %s", err, tt.want)
			}
			if _, err := os.Stat(data); !os.IsNotExist(err) {
				t.Errorf("a refused backup touched the data dir: %v", err)
			}
		})
	}
}

// dirNames lists a directory's entries by name, sorted.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// A backup rewritten by someone who holds the key passes the manifest
// check; verifying the copy before it is used still catches the change.
func TestStore_RestoreVerifiesBeforeUse(t *testing.T) {
	t.Parallel()
	key, backup, _ := mustBackup(t)
	pub := key.Public().(ed25519.PublicKey)
	ctx := context.Background()
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join(backup, store.BackupDatabase))
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, store.BackupDatabase)
	os.WriteFile(db, b, 0o600)
	raw := rawDB(t, db)
	if _, err := raw.Exec(`UPDATE records SET content = '"rewritten"' WHERE type = 'task.instruction'`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	var m kura.BackupManifest
	mb, _ := os.ReadFile(filepath.Join(backup, store.BackupManifest))
	json.Unmarshal(mb, &m)
	b, _ = os.ReadFile(db)
	sum := sha256.Sum256(b)
	m.Files = []kura.BackupFile{{Name: store.BackupDatabase, Bytes: int64(len(b)), SHA256: hex.EncodeToString(sum[:])}}
	m.Signature = ""
	unsigned, _ := json.Marshal(m)
	msg, err := store.ManifestSigningMessage(unsigned)
	if err != nil {
		t.Fatal(err)
	}
	m.Signature = hex.EncodeToString(ed25519.Sign(key, msg))
	mb, _ = json.Marshal(m)
	os.WriteFile(filepath.Join(dir, store.BackupManifest), mb, 0o600)

	data := filepath.Join(t.TempDir(), "data")
	rep, err := store.Restore(ctx, store.RestoreOptions{BackupDir: dir, DataDir: data, PublicKey: pub})
	if err == nil || !strings.Contains(err.Error(), "does not verify") {
		t.Fatalf("got %v, want a backup that does not verify", err)
	}
	if rep == nil || rep.Verification.OK || len(rep.Verification.FailedSessions) != 1 || len(rep.Verification.FailedLedgers) != 3 {
		t.Errorf("got %+v, want the session and the 3 context ledgers failing", rep.Verification)
	}
	if got := dirNames(t, data); !slices.Equal(got, []string{dirlock.File}) {
		t.Errorf("got %v in the data dir, want it left empty but for the lock file", got)
	}
}
