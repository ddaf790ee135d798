package reliability_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/testwait"
)

// damageHashIndex takes the row of record id out of the records table's
// UNIQUE(hash) index of the stopped kurad's database and puts an entry of
// another hash in its place, leaving every page and b-tree sound and the
// index as long as the table: quick_check passes, integrity_check does
// not. It builds the index once while the record's hash is another, hides
// that b-tree from the schema while the hash is put back, then swaps it
// in for the real index and drops the real one. It returns the index's
// name.
func damageHashIndex(t *testing.T, dbPath, id string) string {
	t.Helper()
	var index string
	var stale, real int64
	steps := [][]string{
		{fmt.Sprintf("UPDATE records SET hash = 'stale-' || hash WHERE id = '%s'", id),
			"CREATE UNIQUE INDEX damage ON records(hash)"},
		{"PRAGMA writable_schema = ON", "DELETE FROM sqlite_schema WHERE name = 'damage'", "PRAGMA writable_schema = OFF"},
		{fmt.Sprintf("UPDATE records SET hash = substr(hash, 7) WHERE id = '%s'", id)},
		{"PRAGMA writable_schema = ON", "UPDATE sqlite_schema SET rootpage = %[1]d WHERE name = '%[3]s'",
			"INSERT INTO sqlite_schema VALUES('index', 'damage', 'records', %[2]d, 'CREATE UNIQUE INDEX damage ON records(hash)')",
			"PRAGMA writable_schema = OFF"},
		{"DROP INDEX damage"},
	}
	// Each step on a connection of its own, so that it reads the schema
	// as the step before left it.
	for n, step := range steps {
		db, err := sql.Open("sqlite", "file:"+dbPath)
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		if n == 0 {
			if err := db.QueryRow(`SELECT l.name FROM pragma_index_list('records') l JOIN pragma_index_info(l.name) i
				WHERE l.origin = 'u' AND i.name = 'hash'`).Scan(&index); err != nil {
				t.Fatalf("the UNIQUE(hash) index of records: %v", err)
			}
			db.QueryRow("SELECT rootpage FROM sqlite_schema WHERE name = ?", index).Scan(&real)
		}
		for _, q := range step {
			if strings.Contains(q, "%[") {
				q = fmt.Sprintf(q, stale, real, index)
			}
			if _, err := db.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if n == 0 {
			db.QueryRow("SELECT rootpage FROM sqlite_schema WHERE name = 'damage'").Scan(&stale)
		}
		db.Close()
	}
	db, err := sql.Open("sqlite", "file:"+dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	check := func(pragma string) string {
		var out []string
		rows, err := db.Query("PRAGMA " + pragma)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var s string
			rows.Scan(&s)
			out = append(out, s)
		}
		return strings.Join(out, "; ")
	}
	if got := check("quick_check"); got != "ok" {
		t.Fatalf("quick_check after the damage: %s, want ok (the damage is one only the full check sees)", got)
	}
	if got := check("integrity_check"); !strings.Contains(got, index) {
		t.Fatalf("integrity_check after the damage: %s, want it to name %s", got, index)
	}
	return index
}

// TestStartCheck_DamagedIndexStopsServing: a database whose UNIQUE(hash)
// index misses one record's row passes the quick check, and a write of that
// record again used to answer 201 with a second record of the same hash.
// Now kurad (default --startup-check=quick) comes up, refuses writes with
// 503 until its full check in the background has passed, finds the damage,
// says what it is and exits 1; no second record is ever written. Started
// again, it checks in full before serving (kurad.damaged) and exits 1
// without ever listening.
func TestStartCheck_DamagedIndexStopsServing(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	p := start(t, dataDir)
	body := `{"type":"agent.thought","content":{"text":"written once"},"author_id":"agent:rel"}`
	var rec recordOut
	mustCall(t, "POST", p.Base+"/v1/records", body, 201, &rec)
	for i := range 20 {
		mustCall(t, "POST", p.Base+"/v1/records", fmt.Sprintf(`{"type":"agent.thought","content":{"i":%d},"author_id":"agent:rel"}`, i), 201, nil)
	}
	var full struct {
		Hash string `json:"hash"`
	}
	mustCall(t, "GET", p.Base+"/v1/records/"+rec.ID, nil, 200, &full)
	p.Stop(t)
	dbPath := filepath.Join(dataDir, "kura.db")
	index := damageHashIndex(t, dbPath, rec.ID)

	p = launch(t, dataDir)
	var answers []string
	testwait.Until(30*time.Second, func() bool {
		select {
		case <-p.Done():
			return true
		default:
		}
		b, err := os.ReadFile(filepath.Join(dataDir, "kurad.addr"))
		if err != nil {
			return false
		}
		base := "http://" + strings.Split(strings.Split(string(b), `"http":"`)[1], `"`)[0]
		code, raw, err := call(context.Background(), "POST", base+"/v1/records", body, nil)
		if err != nil {
			return false // kurad stopping
		}
		answers = append(answers, fmt.Sprint(code))
		if code != 503 {
			t.Errorf("a write on a database whose full check has not passed answered %d: %s", code, raw)
			return true
		}
		if !strings.Contains(string(raw), `"code":"unavailable"`) {
			t.Errorf("503 without the error body: %s", raw)
		}
		return false
	})
	select {
	case <-p.Done():
	default:
		t.Fatalf("kurad kept serving a database its full check must find damaged (answers %v)\n%s", answers, p.Log)
	}
	if code := p.Cmd.ProcessState.ExitCode(); code != 1 {
		t.Errorf("kurad exited %d on a damaged index, want 1\n%s", code, p.Log)
	}
	log := p.Log.String()
	if !strings.Contains(log, "full integrity check") || !strings.Contains(log, index) {
		t.Errorf("kurad's log does not say the full check found %s damaged:\n%s", index, log)
	}
	db := openRO(t, dataDir)
	// Counted row by row in the table itself: the content column is in no
	// index, so no (damaged) index answers for it.
	rows, err := db.Query("SELECT hash, content FROM records")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		var h string
		var content sql.NullString
		if err := rows.Scan(&h, &content); err != nil {
			t.Fatal(err)
		}
		if h == full.Hash {
			n++
		}
	}
	rows.Close()
	if n != 1 {
		t.Errorf("records of hash %s after the start: %d, want the one written before", full.Hash, n)
	}
	db.Close()
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, index) {
			t.Logf("kurad exited %d (writes while its full check ran answered %v): %s", p.Cmd.ProcessState.ExitCode(), answers, line)
			break
		}
	}

	// Restarted (a supervisor would), it checks in full before it serves.
	if _, err := os.Stat(filepath.Join(dataDir, "kurad.damaged")); err != nil {
		t.Fatalf("kurad.damaged: %v", err)
	}
	p = launch(t, dataDir)
	if code := p.Wait(t, 30*time.Second); code != 1 {
		t.Errorf("restarted on the damaged database: exit %d, want 1\n%s", code, p.Log)
	}
	if log := p.Log.String(); !strings.Contains(log, "checking it in full before serving") || !strings.Contains(log, index) {
		t.Errorf("the restart's log does not say it checked in full before serving and found %s:\n%s", index, log)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "kurad.addr")); err == nil {
		t.Error("the restart on a database known damaged listened (wrote kurad.addr)")
	}
}
