package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/kura-memory/kura/internal/testwait"
)

// TestAPI_RedactPurgesOnPostgresOnceReadersLeave is the PostgreSQL side of
// TestAPI_RedactPurgesWhileASlowClientReads: the purge (VACUUM FULL
// records) cannot start while a reader holds the records table, so the
// redaction answers purge "pending" and /v1/info says so; once the reader
// leaves, the background retry finishes and the content is gone from
// every row version the table's files hold.
func TestAPI_RedactPurgesOnPostgresOnceReadersLeave(t *testing.T) {
	if kuradtest.Store() != kuradtest.StorePostgres {
		t.Skip("PostgreSQL's purge; SQLite's is TestAPI_RedactPurgesWhileASlowClientReads")
	}
	d := kuradtest.StartMain(t, kuradtest.Options{})
	c := &apiClient{tb: t, base: d.BaseURL()}
	st, m, raw := c.post("/v1/records", `{"type":"agent.thought","author_id":"agent:bmo","content":{"text":"PG-SECRET-purge-me"}}`)
	if st != 201 {
		t.Fatalf("create: %d %s", st, raw)
	}
	id := m["id"].(string)

	// A reader in the middle of a read of the records table.
	db := d.RawDB(t)
	ctx := context.Background()
	filenode := func() int64 {
		var f int64
		if err := db.QueryRowContext(ctx, "SELECT pg_relation_filenode('records')").Scan(&f); err != nil {
			t.Fatal(err)
		}
		return f
	}
	before := filenode()
	reader, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := reader.QueryRowContext(ctx, "SELECT count(*) FROM records").Scan(&n); err != nil {
		t.Fatal(err)
	}
	st, m, raw = c.post("/v1/records/"+id+"/redact", `{"reason":"leaked"}`)
	if st != 200 || m["purge"] != "pending" {
		t.Fatalf("redact while a reader holds the table: %d %s, want 200 with purge pending", st, raw)
	}
	info := func() string {
		_, _, b := c.get("/v1/info")
		var i struct {
			RedactionPurge string `json:"redaction_purge"`
		}
		json.Unmarshal(b, &i)
		return i.RedactionPurge
	}
	if got := info(); got != "pending" {
		t.Fatalf("/v1/info redaction_purge = %q while the reader stays, want pending", got)
	}
	reader.Rollback()
	testwait.For(t, testwait.Default, "the purge to finish once the reader left", func() bool { return info() == "complete" })
	// VACUUM FULL wrote the table into a new file and dropped the old one,
	// which held the row's old version with the content.
	if after := filenode(); after == before {
		t.Fatalf("records still in file %d: the table was not rewritten", after)
	}
	var content *string
	if err := db.QueryRowContext(ctx, "SELECT content FROM records WHERE id = ?", id).Scan(&content); err != nil || content != nil {
		t.Fatalf("content after the purge: %v, %v", content, err)
	}
}

// TestAPI_RedactLeavesNoContentOnPostgres: on PostgreSQL a redacted
// record's content must be readable nowhere in the database's files:
// not in the records table's, not in the stored answer of the write that
// created it (kept under its Idempotency-Key), not in the planner's
// statistics (ANALYZE samples column values) nor their table's file. The
// test reads every file of every relation of the database, as someone
// with the server's files would, after a CHECKPOINT has written out what
// was in memory.
func TestAPI_RedactLeavesNoContentOnPostgres(t *testing.T) {
	if kuradtest.Store() != kuradtest.StorePostgres {
		t.Skip("PostgreSQL's files; SQLite's are TestStore_RedactRecord's")
	}
	d := kuradtest.StartMain(t, kuradtest.Options{})
	c := &apiClient{tb: t, base: d.BaseURL()}
	const marker = "PG-SECRET-7f3a9c-everywhere"
	req, _ := http.NewRequest("POST", d.BaseURL()+"/v1/records", strings.NewReader(`{"type":"agent.thought","author_id":"agent:bmo","content":"`+marker+`"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "write-the-secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var rec struct{ ID string }
	json.NewDecoder(resp.Body).Decode(&rec)
	resp.Body.Close()
	if resp.StatusCode != 201 || rec.ID == "" {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	// Other short contents, so that the statistics hold a sample of the
	// column's values, the secret among them.
	for i := range 20 {
		if st, _, raw := c.post("/v1/records", fmt.Sprintf(`{"type":"agent.thought","author_id":"agent:bmo","content":"filler %d"}`, i)); st != 201 {
			t.Fatalf("filler: %d %s", st, raw)
		}
	}
	db := d.RawDB(t)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	// Where the content is before the redaction: the check finds it.
	holding := func() []string {
		t.Helper()
		if _, err := db.ExecContext(ctx, "CHECKPOINT"); err != nil {
			t.Fatal(err)
		}
		rows, err := db.QueryContext(ctx, `SELECT c.relname, pg_relation_filepath(c.oid) FROM pg_class c
			WHERE pg_relation_filepath(c.oid) IS NOT NULL AND c.relkind IN ('r', 't', 'i', 'm')
			AND (c.relnamespace = current_schema()::regnamespace OR c.relname IN ('pg_statistic', 'pg_statistic_ext_data')
				OR c.oid IN (SELECT reltoastrelid FROM pg_class WHERE relnamespace = current_schema()::regnamespace))`)
		if err != nil {
			t.Fatal(err)
		}
		type rel struct{ name, path string }
		var rels []rel
		for rows.Next() {
			var r rel
			if err := rows.Scan(&r.name, &r.path); err != nil {
				t.Fatal(err)
			}
			rels = append(rels, r)
		}
		rows.Close()
		var found []string
		for _, r := range rels {
			// A relation's file, then its 1 GB segments, if any.
			for seg := 0; ; seg++ {
				p := r.path
				if seg > 0 {
					p += "." + strconv.Itoa(seg)
				}
				var data []byte
				if err := db.QueryRowContext(ctx, "SELECT pg_read_binary_file(?, 0, (pg_stat_file(?, true)).size, true)", p, p).Scan(&data); err != nil || data == nil {
					break
				}
				if bytes.Contains(data, []byte(marker)) {
					found = append(found, r.name)
				}
			}
		}
		var stats int
		db.QueryRowContext(ctx, "SELECT count(*) FROM pg_stats WHERE strpos(coalesce(most_common_vals::text, '') || coalesce(histogram_bounds::text, ''), ?) > 0", marker).Scan(&stats)
		if stats > 0 {
			found = append(found, "pg_stats")
		}
		return found
	}
	if got := holding(); !slices.Contains(got, "records") || !slices.Contains(got, "idempotency") {
		t.Fatalf("before the redaction the content is in %v; the check must find it in records and idempotency", got)
	}
	st, m, raw := c.post("/v1/records/"+rec.ID+"/redact", `{"reason":"leaked"}`)
	if st != 200 {
		t.Fatalf("redact: %d %s", st, raw)
	}
	if m["purge"] != "complete" {
		testwait.For(t, testwait.Default, "the purge to finish", func() bool {
			_, info, _ := c.get("/v1/info")
			return info["redaction_purge"] == "complete"
		})
	}
	if got := holding(); len(got) > 0 {
		t.Fatalf("after the redaction the content is still readable in %v", got)
	}
}
