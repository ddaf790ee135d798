package api_test

import (
	"context"
	"encoding/json"
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
