package reliability_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// turnSession opens a session, runs one turn whose output holds recs, and
// returns the session id, the output ledger id and the head hash after it.
func turnSession(t *testing.T, base, name string, recs []string) (sid, ledger, headHash string) {
	t.Helper()
	var s struct{ ID string }
	mustCall(t, "POST", base+"/v1/sessions", fmt.Sprintf(`{"project":"rel","name":%q}`, name), 201, &s)
	var turn struct{ ID string }
	mustCall(t, "POST", base+"/v1/sessions/"+s.ID+"/turns", `{"instruction":{"type":"task.instruction","content":"corruption","author_id":"user:rel"}}`, 201, &turn)
	mustCall(t, "POST", base+"/v1/turns/"+turn.ID+"/records", `{"records":[`+strings.Join(recs, ",")+`]}`, 200, nil)
	var closed struct {
		OutputLedgerID string `json:"output_ledger_id"`
	}
	mustCall(t, "POST", base+"/v1/turns/"+turn.ID+"/close", `{"status":"complete"}`, 200, &closed)
	var sess struct {
		HeadHash string `json:"head_hash"`
	}
	mustCall(t, "GET", base+"/v1/sessions/"+s.ID, nil, 200, &sess)
	return s.ID, closed.OutputLedgerID, sess.HeadHash
}

type verification struct {
	OK         bool              `json:"ok"`
	Mismatches []json.RawMessage `json:"mismatches"`
	Problems   []json.RawMessage `json:"problems"`
}

// TestCorruption_RecordContentChanged changes record content behind kurad's
// back, once by flipping a byte in the database file and once by an UPDATE
// through SQLite: the file stays structurally sound, so kurad starts, and
// verification names the records whose content no longer matches.
func TestCorruption_RecordContentChanged(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	p := start(t, dataDir)
	var recs []string
	for i := range 20 {
		recs = append(recs, fmt.Sprintf(`{"type":"agent.thought","content":{"i":%d,"text":"MARKER-%02d-untouched"},"author_id":"agent:rel"}`, i, i))
	}
	sid, ledger, _ := turnSession(t, p.Base, "corrupt", recs)
	var out struct {
		Records []struct{ ID string } `json:"records"`
	}
	mustCall(t, "GET", p.Base+"/v1/ledgers/"+ledger+"/records?limit=1000", nil, 200, &out)
	var v verification
	mustCall(t, "GET", p.Base+"/v1/sessions/"+sid+"/verify", nil, 200, &v)
	if !v.OK {
		t.Fatalf("session does not verify before the damage: %+v", v)
	}
	p.Stop(t) // the clean stop checkpoints the WAL into kura.db

	// A bit flip on the medium: "untouched" → "untouchee" in record 3.
	dbPath := filepath.Join(dataDir, "kura.db")
	raw, err := os.ReadFile(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	// SQLite may keep a stale copy in free space (a split page); flip the
	// byte in every copy, so the live one is hit whichever it is.
	marker := []byte("MARKER-03-untouched")
	if bytes.Count(raw, marker) == 0 {
		t.Fatalf("record 3's content is not in kura.db")
	}
	for off := 0; ; {
		at := bytes.Index(raw[off:], marker)
		if at < 0 {
			break
		}
		raw[off+at+len(marker)-1] ^= 0x01
		off += at + len(marker)
	}
	if err := os.WriteFile(dbPath, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	// A rewrite through SQLite, as someone with the file could do.
	db, err := sql.Open("sqlite", "file:"+dbPath)
	if err != nil {
		t.Fatal(err)
	}
	res, err := db.Exec(`UPDATE records SET content = replace(content, 'MARKER-07-untouched', 'MARKER-07-rewritten') WHERE content LIKE '%MARKER-07-%'`)
	if n, _ := res.RowsAffected(); err != nil || n != 1 {
		t.Fatalf("update: %v (%d rows)", err, n)
	}
	db.Close()

	p = start(t, dataDir)
	var lv struct {
		OK         bool `json:"ok"`
		Mismatches []struct {
			RecordID string `json:"record_id"`
		} `json:"mismatches"`
	}
	mustCall(t, "GET", p.Base+"/v1/ledgers/"+ledger+"/verify", nil, 200, &lv)
	bad := map[string]bool{}
	for _, m := range lv.Mismatches {
		if m.RecordID != "" { // the root hash's own entry names no record
			bad[m.RecordID] = true
		}
	}
	// Output position 0 is the first appended record (the instruction is
	// in the context ledger).
	if lv.OK || !bad[out.Records[3].ID] || !bad[out.Records[7].ID] || len(bad) != 2 {
		t.Errorf("ledger verify after the damage: ok=%v, mismatches %v; want records %s and %s", lv.OK, bad, out.Records[3].ID, out.Records[7].ID)
	}
	raw2 := mustCall(t, "GET", p.Base+"/v1/sessions/"+sid+"/verify", nil, 200, &v)
	if v.OK {
		t.Errorf("session verifies after its records were changed: %s", raw2)
	}
	t.Logf("kurad started on the changed file; ledger verify names %d changed records, session verify ok=%v", len(bad), v.OK)
}

// TestCorruption_DamagedPageStopsStart damages a b-tree page of the records
// table while kurad is stopped: the startup check finds it and kurad exits
// with status 1 and SQLite's findings instead of serving.
func TestCorruption_DamagedPageStopsStart(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	p := start(t, dataDir)
	for i := range 10 {
		var recs []string
		for j := range 50 {
			recs = append(recs, fmt.Sprintf(`{"type":"agent.thought","content":{"i":%d,"j":%d,"pad":%q},"author_id":"agent:rel"}`, i, j, strings.Repeat("p", 300)))
		}
		mustCall(t, "POST", p.Base+"/v1/records/batch", `{"records":[`+strings.Join(recs, ",")+`]}`, 201, nil)
	}
	p.Stop(t)

	dbPath := filepath.Join(dataDir, "kura.db")
	db := openRO(t, dataDir)
	var root, pageSize int64
	if err := db.QueryRow("SELECT rootpage FROM sqlite_schema WHERE name = 'records'").Scan(&root); err != nil {
		t.Fatal(err)
	}
	db.QueryRow("PRAGMA page_size").Scan(&pageSize)
	db.Close()
	f, err := os.OpenFile(dbPath, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Page type 0x00 is no b-tree page at all.
	if _, err := f.WriteAt([]byte{0x00, 0xde, 0xad, 0xbe, 0xef}, (root-1)*pageSize); err != nil {
		t.Fatal(err)
	}
	f.Close()

	p = launch(t, dataDir)
	select {
	case <-p.Done():
	case <-time.After(30 * time.Second):
		t.Fatalf("kurad kept running on a damaged database\n%s", p.Log)
	}
	if code := p.Cmd.ProcessState.ExitCode(); code != 1 {
		t.Errorf("kurad exited %d on a damaged database, want 1", code)
	}
	if log := p.Log.String(); !strings.Contains(log, "database is damaged") && !strings.Contains(log, "failed its quick check") {
		t.Errorf("kurad's log does not say the database is damaged:\n%s", log)
	} else {
		t.Logf("kurad refused to start: %s", strings.TrimSpace(log[strings.LastIndex(strings.TrimSpace(log), "\n")+1:]))
	}
	if _, err := os.Stat(filepath.Join(dataDir, "kurad.addr")); err == nil {
		t.Error("kurad wrote kurad.addr for a database it refused")
	}
}

// TestCorruption_TruncatedWAL cuts the WAL short after a crash, as a torn
// write on power loss would: SQLite recovers the commits whose frames are
// whole (its frame checksums end the log at the first bad frame), so kurad
// starts on a consistent older state: the file checks out, every session
// verifies, batches are whole or absent, and a client holding the lost head
// hash is told the chain was cut.
func TestCorruption_TruncatedWAL(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	p := start(t, dataDir)
	sid, _, _ := turnSession(t, p.Base, "wal", []string{`{"type":"agent.thought","content":"before","author_id":"agent:rel"}`})

	// Hold a read snapshot from another process so that the checkpointer
	// cannot copy what follows into kura.db: it stays in the WAL only.
	reader := openRO(t, dataDir)
	conn, err := reader.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), "BEGIN"); err != nil {
		t.Fatal(err)
	}
	var n int
	conn.QueryRowContext(context.Background(), "SELECT count(*) FROM records").Scan(&n)

	type sent struct {
		tag string
		n   int
	}
	var batches []sent
	for i := range 60 {
		tag := fmt.Sprintf("wal-%d", i)
		var recs []string
		for j := range 30 {
			recs = append(recs, fmt.Sprintf(`{"type":"agent.thought","content":{"batch":%q,"j":%d,"pad":%q},"author_id":"agent:rel"}`, tag, j, strings.Repeat("w", 200)))
		}
		mustCall(t, "POST", p.Base+"/v1/records/batch", `{"records":[`+strings.Join(recs, ",")+`]}`, 201, nil)
		batches = append(batches, sent{tag, 30})
	}
	// The last head: a second turn on the session.
	var turn struct{ ID string }
	mustCall(t, "POST", p.Base+"/v1/sessions/"+sid+"/turns", `{"instruction":{"type":"task.instruction","content":"after","author_id":"user:rel"}}`, 201, &turn)
	mustCall(t, "POST", p.Base+"/v1/turns/"+turn.ID+"/close", `{"status":"complete"}`, 200, nil)
	var sess struct {
		HeadHash string `json:"head_hash"`
	}
	mustCall(t, "GET", p.Base+"/v1/sessions/"+sid, nil, 200, &sess)
	var info struct {
		LastEventSeq int64 `json:"last_event_seq"`
	}
	mustCall(t, "GET", p.Base+"/v1/info", nil, 200, &info)
	p.Kill(t)
	conn.ExecContext(context.Background(), "ROLLBACK")
	conn.Close()
	reader.Close()

	wal := filepath.Join(dataDir, "kura.db-wal")
	st, err := os.Stat(wal)
	if err != nil {
		t.Fatal(err)
	}
	cut := st.Size()*6/10 - 1000 // mid-frame, well inside the batches
	if err := os.Truncate(wal, cut); err != nil {
		t.Fatal(err)
	}

	p = start(t, dataDir)
	var after struct {
		LastEventSeq int64 `json:"last_event_seq"`
	}
	mustCall(t, "GET", p.Base+"/v1/info", nil, 200, &after)
	if after.LastEventSeq >= info.LastEventSeq {
		t.Fatalf("the cut WAL lost nothing (seq %d → %d): the test did not cut into commits", info.LastEventSeq, after.LastEventSeq)
	}
	var v struct {
		OK                  bool  `json:"ok"`
		ExpectHeadHashFound *bool `json:"expect_head_hash_found"`
	}
	raw := mustCall(t, "GET", p.Base+"/v1/sessions/"+sid+"/verify", nil, 200, &v)
	if !v.OK {
		t.Errorf("the older state does not verify: %s", raw)
	}
	raw = mustCall(t, "GET", p.Base+"/v1/sessions/"+sid+"/verify?expect_head_hash="+sess.HeadHash, nil, 200, &v)
	if v.OK || v.ExpectHeadHashFound == nil || *v.ExpectHeadHashFound {
		t.Errorf("verify with the lost head hash does not report the cut: %s", raw)
	}
	p.Stop(t)
	db := openRO(t, dataDir)
	integrityCheck(t, db)
	whole := 0
	for _, b := range batches {
		var got int
		db.QueryRow("SELECT count(*) FROM records WHERE json_extract(content, '$.batch') = ?", b.tag).Scan(&got)
		if got != 0 && got != b.n {
			t.Errorf("batch %s is half there after the cut: %d of %d", b.tag, got, b.n)
		}
		if got == b.n {
			whole++
		}
	}
	t.Logf("WAL cut to %d of %d bytes: last seq %d → %d, %d of %d batches kept whole, the rest absent; integrity ok; verify reports the lost head",
		cut, st.Size(), info.LastEventSeq, after.LastEventSeq, whole, len(batches))
}
