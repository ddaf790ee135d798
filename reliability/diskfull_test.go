package reliability_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/kura-memory/kura/internal/testwait"
)

// fillUntilFull writes batches of records until kurad refuses one with
// 507. It returns the ids of every acknowledged record and the refusal.
func fillUntilFull(t *testing.T, base string, limit int) (map[string]string, []byte) {
	t.Helper()
	acked := map[string]string{}
	pad := strings.Repeat("x", 2000)
	for i := range limit {
		var recs []string
		for j := range 20 {
			recs = append(recs, fmt.Sprintf(`{"type":"agent.thought","content":{"fill":%d,"j":%d,"pad":%q},"author_id":"agent:rel"}`, i, j, pad))
		}
		var out struct{ Records []recordOut }
		code, raw, err := call(context.Background(), "POST", base+"/v1/records/batch", `{"records":[`+strings.Join(recs, ",")+`]}`, &out)
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		switch code {
		case 201:
			for _, r := range out.Records {
				acked[r.ID] = r.ContentHash
			}
		case 507:
			if !strings.Contains(string(raw), `"code":"insufficient_storage"`) {
				t.Fatalf("507 without the insufficient_storage body: %s", raw)
			}
			// Use up what is left with single records, so that any larger
			// write cannot fit either.
			for k := 0; ; k++ {
				var r recordOut
				code, raw2, err := call(context.Background(), "POST", base+"/v1/records", fmt.Sprintf(`{"type":"agent.thought","content":{"top":%d,"pad":%q},"author_id":"agent:rel"}`, k, pad), &r)
				if err != nil || (code != 201 && code != 507) || k > 1000 {
					t.Fatalf("topping up: %d %v %s", code, err, raw2)
				}
				if code == 507 {
					break
				}
				acked[r.ID] = r.ContentHash
			}
			return acked, raw
		default:
			t.Fatalf("batch %d on a filling disk answered %d: %s", i, code, raw)
		}
	}
	t.Fatalf("%d batches written and the storage never filled", limit)
	return nil, nil
}

// checkFullBehaviour checks kurad while its storage is full: every kind of
// write answers 507, /readyz says why while staying up for readers, and
// every acknowledged record reads back.
func checkFullBehaviour(t *testing.T, base string, acked map[string]string) {
	t.Helper()
	big := strings.Repeat("y", 16000)
	for _, w := range []struct{ path, body string }{
		{"/v1/records", `{"type":"agent.thought","content":{"big":"` + big + `"},"author_id":"agent:rel"}`},
		{"/v1/scopes/rel/memory/nodes", `{"kind":"note","summary":"` + big + `"}`},
	} {
		code, raw, err := call(context.Background(), "POST", base+w.path, w.body, nil)
		if err != nil || code != 507 || !strings.Contains(string(raw), "insufficient_storage") {
			t.Errorf("POST %s on a full disk: %d %v %s", w.path, code, err, raw)
		}
	}
	var ready struct {
		Status string            `json:"status"`
		Checks map[string]string `json:"checks"`
	}
	raw := mustCall(t, "GET", base+"/readyz", nil, 200, &ready)
	if ready.Status != "degraded" || !strings.Contains(ready.Checks["storage"], "disk is full") {
		t.Errorf("/readyz on a full disk: %s", raw)
	}
	for id, hash := range acked {
		var r recordOut
		mustCall(t, "GET", base+"/v1/records/"+id, nil, 200, &r)
		if r.ContentHash != hash {
			t.Fatalf("record %s reads back with content_hash %s, acknowledged %s", id, r.ContentHash, hash)
		}
	}
	mustCall(t, "GET", base+"/v1/records?limit=10", nil, 200, nil)
	mustCall(t, "GET", base+"/v1/events?after=0&limit=10", nil, 200, nil)
}

// checkWritesAgain checks that kurad writes again, without a restart, and
// that /readyz no longer reports the storage.
func checkWritesAgain(t *testing.T, base string, acked map[string]string) {
	t.Helper()
	var r recordOut
	var code int
	var raw []byte
	// The first write after the space came back may still race the checkpoint.
	testwait.Until(10*time.Second, func() bool {
		code, raw, _ = call(context.Background(), "POST", base+"/v1/records", `{"type":"agent.thought","content":{"after":"space freed"},"author_id":"agent:rel"}`, &r)
		return code == 201
	})
	if code != 201 {
		t.Fatalf("write after freeing space: %d %s", code, raw)
	}
	acked[r.ID] = r.ContentHash
	var ready struct {
		Status string            `json:"status"`
		Checks map[string]string `json:"checks"`
	}
	raw = mustCall(t, "GET", base+"/readyz", nil, 200, &ready)
	if ready.Checks["storage"] != "ok" {
		t.Errorf("/readyz after space came back: %s", raw)
	}
	mustCall(t, "POST", base+"/v1/records/batch", `{"records":[{"type":"agent.thought","content":{"again":1},"author_id":"agent:rel"},{"type":"agent.thought","content":{"again":2},"author_id":"agent:rel"}]}`, 201, nil)
}

// TestDiskFull_PageLimit fills the database through SQLite's own page limit
// (PRAGMA max_page_count): SQLite answers SQLITE_FULL from its pager, the
// same code a full disk gives, without filling the machine. It always runs.
func TestDiskFull_PageLimit(t *testing.T) {
	t.Parallel()
	d := kuradtest.StartMain(t, kuradtest.Options{})
	base := d.BaseURL()
	mustCall(t, "POST", base+"/v1/records", `{"type":"agent.thought","content":{"before":"the limit"},"author_id":"agent:rel"}`, 201, nil)
	ctx := context.Background()
	pages, err := d.Store().PageCount(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := d.Store().SetMaxPages(ctx, pages+60); err != nil || got != pages+60 {
		t.Fatalf("SetMaxPages: %d %v", got, err)
	}
	acked, refusal := fillUntilFull(t, base, 200)
	t.Logf("page limit %d: %d records acknowledged, then %s", pages+60, len(acked), refusal)
	checkFullBehaviour(t, base, acked)
	if _, err := d.Store().SetMaxPages(ctx, 1<<30); err != nil {
		t.Fatal(err)
	}
	checkWritesAgain(t, base, acked)
	mustCall(t, "GET", base+"/readyz", nil, 200, nil)
	for id, hash := range acked {
		var r recordOut
		mustCall(t, "GET", base+"/v1/records/"+id, nil, 200, &r)
		if r.ContentHash != hash {
			t.Fatalf("record %s: content_hash %s, acknowledged %s", id, r.ContentHash, hash)
		}
	}
}

// TestDiskFull_Tmpfs runs the kurad binary on a real, small tmpfs and fills
// the file system with another file: SQLite meets ENOSPC in write(),
// ftruncate and its shared memory, as on a full SD card. Mounting needs
// root (CAP_SYS_ADMIN); elsewhere the test skips and says why.
func TestDiskFull_Tmpfs(t *testing.T) {
	t.Parallel()
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=16m,mode=0700", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a size-limited tmpfs here (needs root and CAP_SYS_ADMIN): %v %s; TestDiskFull_PageLimit covers the storage boundary", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", mnt, err, out)
		}
	})
	dataDir := filepath.Join(mnt, "data")
	p := start(t, dataDir)
	t.Cleanup(func() { p.Kill(t) }) // runs before the umount
	mustCall(t, "POST", p.Base+"/v1/records", `{"type":"agent.thought","content":{"before":"the filler"},"author_id":"agent:rel"}`, 201, nil)

	// Leave about 600 KB: room for a few batches, not for many.
	var st syscall.Statfs_t
	if err := syscall.Statfs(mnt, &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail) * st.Bsize
	filler := filepath.Join(mnt, "filler")
	if err := os.WriteFile(filler, make([]byte, free-600<<10), 0o600); err != nil {
		t.Fatalf("filler: %v", err)
	}
	acked, refusal := fillUntilFull(t, p.Base, 2000)
	t.Logf("tmpfs full: %d records acknowledged, then %s", len(acked), refusal)
	checkFullBehaviour(t, p.Base, acked)
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	checkWritesAgain(t, p.Base, acked)

	// A clean stop on the freed disk, then every acknowledged record is in
	// a sound file.
	p.Stop(t)
	db := openRO(t, dataDir)
	integrityCheck(t, db)
	for id, hash := range acked {
		var got string
		if err := db.QueryRow("SELECT content_hash FROM records WHERE id = ?", id).Scan(&got); err != nil || got != hash {
			t.Fatalf("record %s after the full disk: %q %v, acknowledged %s", id, got, err, hash)
		}
	}
	db.Close()
}

// TestDiskFull_RestartOnFullDisk stops and restarts the kurad binary while
// its tmpfs is full: SIGTERM exits 0; the restart comes up read-only
// (/readyz 200 degraded naming the full disk, every acknowledged record
// reads back, writes answer 507) instead of exiting, and takes writes again
// once space is freed, without another restart. kurad listens on addresses
// the test chose, since a full disk may keep it from writing kurad.addr.
func TestDiskFull_RestartOnFullDisk(t *testing.T) {
	t.Parallel()
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=16m,mode=0700", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a size-limited tmpfs here (needs root and CAP_SYS_ADMIN): %v %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", mnt, err, out)
		}
	})
	dataDir := filepath.Join(mnt, "data")
	httpAddr, natsAddr := kuradtest.FreeAddr(t), kuradtest.FreeAddr(t)
	base := "http://" + httpAddr
	p := start(t, dataDir, "--http-addr", httpAddr, "--nats-addr", natsAddr)
	t.Cleanup(func() { p.Kill(t) }) // before the umount
	mustCall(t, "POST", base+"/v1/records", `{"type":"agent.thought","content":{"before":"the filler"},"author_id":"agent:rel"}`, 201, nil)

	var st syscall.Statfs_t
	if err := syscall.Statfs(mnt, &st); err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(mnt, "filler")
	if err := os.WriteFile(filler, make([]byte, int64(st.Bavail)*st.Bsize-600<<10), 0o600); err != nil {
		t.Fatalf("filler: %v", err)
	}
	acked, _ := fillUntilFull(t, base, 2000)
	// Whatever bytes are left go to a second filler, so nothing fits.
	topUp(t, mnt)

	p.Cmd.Process.Signal(syscall.SIGTERM)
	if code := p.Wait(t, 30*time.Second); code != 0 {
		t.Errorf("SIGTERM on a full disk: exit %d, want 0\n%s", code, p.Log)
	}

	p = launch(t, dataDir, "--http-addr", httpAddr, "--nats-addr", natsAddr)
	t.Cleanup(func() { p.Kill(t) })
	up := testwait.Until(30*time.Second, func() bool {
		select {
		case <-p.Done():
			return true
		default:
		}
		code, _, err := call(context.Background(), "GET", base+"/readyz", nil, nil)
		return err == nil && code == 200
	})
	select {
	case <-p.Done():
		t.Fatalf("kurad restarted on a full disk exited %d instead of serving reads\n%s", p.Cmd.ProcessState.ExitCode(), p.Log)
	default:
	}
	if !up {
		t.Fatalf("kurad restarted on a full disk never answered /readyz 200\n%s", p.Log)
	}
	// Writes are refused with 507 and reads served; /readyz says why.
	checkFullBehaviour(t, base, acked)
	if log := p.Log.String(); !strings.Contains(log, "kurad starts read-only") {
		t.Errorf("the restart's log does not say it started read-only:\n%s", log)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(mnt, "filler-2"))
	checkWritesAgain(t, base, acked)
	testwait.For(t, testwait.Default, "kurad.addr written once there was room", func() bool {
		_, err := os.Stat(filepath.Join(dataDir, "kurad.addr"))
		return err == nil
	})

	// Stopped cleanly with room, SQLite removes the WAL and its index
	// (kura.db-shm); a disk filled before the next start leaves no room to
	// make the index again, without which SQLite reads nothing. kurad then
	// exits, saying what to do (not promised: docs/durability.md).
	p.Stop(t)
	if err := os.WriteFile(filler, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	topUp(t, mnt)
	p = launch(t, dataDir, "--http-addr", httpAddr, "--nats-addr", natsAddr)
	if code := p.Wait(t, 30*time.Second); code != 1 || !strings.Contains(p.Log.String(), "the disk is full: SQLite cannot make the WAL index") {
		t.Errorf("started on a disk filled after a clean stop: exit %d, want 1 saying the disk is full\n%s", code, p.Log)
	}
	os.Remove(filler)
	os.Remove(filepath.Join(mnt, "filler-2"))
	db := openRO(t, dataDir)
	integrityCheck(t, db)
	for id, hash := range acked {
		var got string
		if err := db.QueryRow("SELECT content_hash FROM records WHERE id = ?", id).Scan(&got); err != nil || got != hash {
			t.Fatalf("record %s after the restart on a full disk: %q %v, acknowledged %s", id, got, err, hash)
		}
	}
	db.Close()
}

// topUp fills what is left of the file system at mnt with a second filler.
func topUp(t *testing.T, mnt string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(mnt, "filler-2"), os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return // not even an inode's worth of room
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			return
		}
	}
}
