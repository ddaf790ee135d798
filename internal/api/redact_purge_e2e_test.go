package api_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/kura-memory/kura/internal/testwait"
)

// slowClient is an HTTP client that reads nothing of an answer after its
// headers, with a small receive buffer, so that kurad's writes of a large
// answer stall the way they do for a client on a slow link.
func slowClient() *http.Client {
	d := &net.Dialer{Control: func(network, address string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
}

// filesHolding names which of the database's files hold marker.
func filesHolding(t *testing.T, dataDir, marker string) []string {
	t.Helper()
	var in []string
	for _, name := range []string{"kura.db", "kura.db-wal"} {
		b, err := os.ReadFile(filepath.Join(dataDir, name))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(marker)) {
			in = append(in, name)
		}
	}
	return in
}

// TestAPI_RedactPurgesWhileASlowClientReads: a client reading a large
// ledger page slowly must not keep redacted content in the files. While
// it stalls mid-page, POST /v1/records/{id}/redact answers within seconds
// with "purge":"complete", and the marker is in neither kura.db nor
// kura.db-wal; /v1/info and /metrics say nothing is pending. kurad runs
// with a tokens file: the admin's token redacts; a writer's is refused
// first and changes nothing.
func TestAPI_RedactPurgesWhileASlowClientReads(t *testing.T) {
	if kuradtest.Store() == kuradtest.StorePostgres {
		// It reads the content back from kura.db and its WAL; PostgreSQL's
		// purge (VACUUM FULL records) is tested in the store.
		t.Skip("reads SQLite's files")
	}
	e := startAuthKurad(t, nil)
	d := e.d
	c := &apiClient{tb: t, base: d.BaseURL(), tok: tRoot}
	nonce := make([]byte, 8)
	rand.Read(nonce)
	marker := "KURA-SECRET-" + hex.EncodeToString(nonce)
	// A page of 1,000 records of 12 KiB: far more than the socket buffers
	// between kurad and a client that does not read hold (about 3 MB
	// here). A ledger may list a record more than once: 100 records, each
	// 10 times, make the 12 MB page for a tenth of the writes. The secret
	// is one of them, listed once, in the middle.
	const n, distinct = 1000, 100
	pad := strings.Repeat("p", 12<<10)
	var recs []string
	for i := 0; i < distinct; i++ {
		text := fmt.Sprintf("record %d %s", i, pad)
		if i == distinct/2 {
			text = "the key is " + marker + " " + pad
		}
		recs = append(recs, fmt.Sprintf(`{"type":"agent.thought","content":{"text":%q},"author_id":"agent:bmo"}`, text))
	}
	out := decode[struct{ Records []struct{ ID string } }](t, c.mustPost("/v1/records/batch", `{"records":[`+strings.Join(recs, ",")+`]}`, 201))
	secret := out.Records[distinct/2].ID
	var ids []string
	for i := 0; i < n; i++ {
		id := out.Records[i%distinct].ID
		if id == secret {
			id = out.Records[0].ID
		}
		ids = append(ids, id)
	}
	ids[n/2] = secret
	l := decode[struct{ ID string }](t, c.mustPost("/v1/ledgers", `{"label":"big","record_ids":["`+strings.Join(ids, `","`)+`"]}`, 201))
	if got := filesHolding(t, d.Config.DataDir, marker); len(got) == 0 {
		t.Fatal("the marker is in no file before the redaction; the test would prove nothing")
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", d.BaseURL()+"/v1/ledgers/"+l.ID+"/records?limit=1000", nil)
	req.Header.Set("Authorization", "Bearer "+tRoot)
	resp, err := slowClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// The page has begun: its first bytes are here; the rest waits.
	if _, err := io.ReadFull(resp.Body, make([]byte, 64)); err != nil || resp.StatusCode != 200 {
		t.Fatalf("page: %d, %v", resp.StatusCode, err)
	}

	wantRedactRefused(t, e, tWA, secret, d.Config.DataDir, marker)

	start := time.Now()
	st, m, raw := c.post("/v1/records/"+secret+"/redact", `{"reason":"leaked a key"}`)
	took := time.Since(start)
	if st != 200 {
		t.Fatalf("redact: %d %s", st, raw)
	}
	if got := filesHolding(t, d.Config.DataDir, marker); len(got) > 0 {
		t.Fatalf("with a slow client mid-page, the marker is still in %v after the redaction answered (%s): %s", got, took, raw)
	}
	if m["purge"] != "complete" || took > 5*time.Second {
		t.Errorf("got purge %v after %s, want complete within seconds", m["purge"], took)
	}
	if _, info, _ := c.get("/v1/info"); info["redaction_purge"] != "complete" {
		t.Errorf("got /v1/info redaction_purge %v, want complete", info["redaction_purge"])
	}
	if got := gaugeAs(t, d.BaseURL(), tRoot, "kura_store_redaction_purge_pending"); got != 0 {
		t.Errorf("got kura_store_redaction_purge_pending %v, want 0", got)
	}

	// The slow client still gets a whole page, the record in it redacted
	// or not depending on whether its piece was read before.
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(bytes.TrimSpace(body), []byte("]}")) {
		t.Fatalf("the slow page ends %q, want a whole answer", body[max(0, len(body)-40):])
	}
}

// wantRedactRefused redacts id with tok, which must be refused 403 without
// changing anything: the event log and counts, the record as served, and
// (on SQLite) the content still in the files.
func wantRedactRefused(t *testing.T, e *authEnv, tok, id, dataDir, marker string) {
	t.Helper()
	before := e.state()
	if code, b := e.do(tok, "POST", "/v1/records/"+id+"/redact", `{"reason":"not mine to redact"}`); code != 403 || !bytes.Contains(b, []byte(`"permission_denied"`)) {
		t.Errorf("redact with a writer's token: %d %s, want 403 permission_denied", code, b)
	}
	if after := e.state(); after != before {
		t.Errorf("a refused redaction changed the database: %s -> %s", before, after)
	}
	if rec := e.must(tRoot, "GET", "/v1/records/"+id, ""); rec["redacted"] == true {
		t.Errorf("after a refused redaction the record reads redacted: %v", rec)
	}
	if e.d.Config.DatabaseURL == "" && len(filesHolding(t, dataDir, marker)) == 0 {
		t.Errorf("after a refused redaction the content left the files")
	}
}

// TestAPI_RedactPurgePendingThenDone: a read transaction another process
// holds on kura.db (a sqlite3 shell, a copying tool) keeps the WAL from
// being truncated. A redaction then answers within its bound with
// "purge":"pending", /v1/info says redaction_purge pending and the metric
// is 1; once the reader lets go, kurad finishes the purge in the
// background: the marker leaves kura.db and kura.db-wal and /v1/info says
// complete. kurad runs with a tokens file: the admin's token redacts, a
// writer's is refused and changes nothing.
func TestAPI_RedactPurgePendingThenDone(t *testing.T) {
	if kuradtest.Store() == kuradtest.StorePostgres {
		t.Skip("holds a reader on SQLite's files")
	}
	e := startAuthKurad(t, nil)
	dataDir := e.d.Config.DataDir
	c := &apiClient{tb: t, base: e.base, tok: tRoot}
	nonce := make([]byte, 8)
	rand.Read(nonce)
	marker := "KURA-SECRET-" + hex.EncodeToString(nonce)
	var recs []string
	for i := 0; i < 50; i++ {
		text := fmt.Sprintf("record %d %s", i, strings.Repeat("p", 1000))
		if i == 12 {
			text = "the key is " + marker + " " + strings.Repeat("p", 1000)
		}
		recs = append(recs, fmt.Sprintf(`{"type":"agent.thought","content":{"text":%q},"author_id":"user:root"}`, text))
	}
	out := decode[struct{ Records []struct{ ID string } }](t, c.mustPost("/v1/records/batch", `{"records":[`+strings.Join(recs, ",")+`]}`, 201))
	secret := out.Records[12].ID
	if got := filesHolding(t, dataDir, marker); len(got) == 0 {
		t.Fatal("the marker is in no file before the redaction; the test would prove nothing")
	}

	// A reader of kura.db outside kurad: a read transaction on its own
	// connection, its snapshot taken by the SELECT and kept until Rollback.
	ctx := context.Background()
	conn, err := e.d.RawDB(t).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRow("SELECT count(*) FROM records").Scan(&n); err != nil || n < 50 {
		t.Fatalf("the reader's snapshot: %d records, %v", n, err)
	}

	wantRedactRefused(t, e, tWA, secret, dataDir, marker)

	start := time.Now()
	st, m, raw := c.post("/v1/records/"+secret+"/redact", `{"reason":"leaked a key"}`)
	took := time.Since(start)
	if st != 200 || m["purge"] != "pending" {
		t.Fatalf("redact while a reader holds a snapshot: got %d %s, want 200 with purge pending", st, raw)
	}
	if rd, _ := m["redaction"].(map[string]any); rd["by"] != "user:root" {
		t.Errorf("got %s, want the redaction by the admin's identity user:root", raw)
	}
	if took > 10*time.Second {
		t.Errorf("the redaction answered after %s, want within its bound (3 s of retries)", took)
	}
	if _, info, _ := c.get("/v1/info"); info["redaction_purge"] != "pending" {
		t.Errorf("got /v1/info redaction_purge %v, want pending", info["redaction_purge"])
	}
	if got := gaugeAs(t, e.base, tRoot, "kura_store_redaction_purge_pending"); got != 1 {
		t.Errorf("got kura_store_redaction_purge_pending %v, want 1", got)
	}
	if got := filesHolding(t, dataDir, marker); len(got) == 0 {
		t.Fatal("the marker left the files while the reader held its snapshot; the test would prove nothing")
	}
	if rec := c.mustGet("/v1/records/" + secret); bytes.Contains(rec, []byte(marker)) || !bytes.Contains(rec, []byte(`"redacted":true`)) {
		t.Errorf("the record while the purge is pending: %s, want it served redacted", rec)
	}

	// The reader lets go: kurad's background retry finishes the purge.
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	testwait.For(t, testwait.Default, "the purge to finish once the reader let go", func() bool {
		_, info, _ := c.get("/v1/info")
		return info["redaction_purge"] == "complete" && len(filesHolding(t, dataDir, marker)) == 0
	})
	if got := gaugeAs(t, e.base, tRoot, "kura_store_redaction_purge_pending"); got != 0 {
		t.Errorf("got kura_store_redaction_purge_pending %v after the purge, want 0", got)
	}
}
