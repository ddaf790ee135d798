package api_test

import (
	"bytes"
	"context"
	"crypto/rand"
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
// kura.db-wal; /v1/info and /metrics say nothing is pending.
func TestAPI_RedactPurgesWhileASlowClientReads(t *testing.T) {
	if kuradtest.Store() == kuradtest.StorePostgres {
		// It reads the content back from kura.db and its WAL; PostgreSQL's
		// purge (VACUUM FULL records) is tested in the store.
		t.Skip("reads SQLite's files")
	}
	d := kuradtest.StartMain(t, kuradtest.Options{})
	c := &apiClient{tb: t, base: d.BaseURL()}
	nonce := make([]byte, 8)
	rand.Read(nonce)
	marker := "KURA-SECRET-" + hex.EncodeToString(nonce)
	// A page of 1,000 records of 12 KiB: far more than the socket buffers
	// between kurad and a client that does not read hold.
	const n, per = 1000, 200
	pad := strings.Repeat("p", 12<<10)
	var ids []string
	var secret string
	for b := 0; b < n/per; b++ {
		var recs []string
		for i := 0; i < per; i++ {
			text := fmt.Sprintf("record %d %s", b*per+i, pad)
			if b*per+i == n/2 {
				text = "the key is " + marker + " " + pad
			}
			recs = append(recs, fmt.Sprintf(`{"type":"agent.thought","content":{"text":%q},"author_id":"agent:bmo"}`, text))
		}
		out := decode[struct{ Records []struct{ ID string } }](t, c.mustPost("/v1/records/batch", `{"records":[`+strings.Join(recs, ",")+`]}`, 201))
		for i, r := range out.Records {
			ids = append(ids, r.ID)
			if b*per+i == n/2 {
				secret = r.ID
			}
		}
	}
	l := decode[struct{ ID string }](t, c.mustPost("/v1/ledgers", `{"label":"big","record_ids":["`+strings.Join(ids, `","`)+`"]}`, 201))
	if got := filesHolding(t, d.Config.DataDir, marker); len(got) == 0 {
		t.Fatal("the marker is in no file before the redaction; the test would prove nothing")
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", d.BaseURL()+"/v1/ledgers/"+l.ID+"/records?limit=1000", nil)
	resp, err := slowClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// The page has begun: its first bytes are here; the rest waits.
	if _, err := io.ReadFull(resp.Body, make([]byte, 64)); err != nil || resp.StatusCode != 200 {
		t.Fatalf("page: %d, %v", resp.StatusCode, err)
	}

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
	if got := gauge(t, d.BaseURL(), "kura_store_redaction_purge_pending"); got != 0 {
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
