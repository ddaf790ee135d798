package reliability_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/kuradtest"
	_ "modernc.org/sqlite"
)

var kuradBin string

// TestMain builds the real kurad once per test binary; every test runs it
// as a separate process so that SIGKILL, a full disk and a damaged file
// hit the shipped program.
func TestMain(m *testing.M) {
	bin, err := kuradtest.BuildKurad()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	kuradBin = bin
	os.Exit(m.Run())
}

type proc = kuradtest.Proc

// launch starts kurad on dataDir without waiting for it.
func launch(t testing.TB, dataDir string, extra ...string) *proc {
	t.Helper()
	return kuradtest.Launch(t, kuradBin, dataDir, nil, extra...)
}

// start runs kurad on dataDir and waits until /readyz answers 200.
func start(t testing.TB, dataDir string, extra ...string) *proc {
	t.Helper()
	return kuradtest.StartBinary(t, kuradBin, dataDir, nil, extra...)
}

// client is a correct API client: short timeouts, keep-alive.
var client = &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

// call sends a JSON request and decodes a JSON answer into out (when not
// nil). It returns the status, 0 when no answer came.
func call(ctx context.Context, method, url string, body any, out any) (int, []byte, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	case string:
		rd = bytes.NewReader([]byte(b))
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, nil, err
	}
	if rd != nil || method != http.MethodGet {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, err
	}
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(raw, out); err != nil {
			return resp.StatusCode, raw, fmt.Errorf("decode %s %s: %w: %s", method, url, err, raw)
		}
	}
	return resp.StatusCode, raw, nil
}

// mustCall is call for steps that must succeed with want.
func mustCall(t testing.TB, method, url string, body any, want int, out any) []byte {
	t.Helper()
	code, raw, err := call(context.Background(), method, url, body, out)
	if err != nil || code != want {
		t.Fatalf("%s %s: %d %v (want %d): %s", method, url, code, err, want, raw)
	}
	return raw
}

// openRO opens the database file read-only, as an operator's sqlite3
// would, to see what is on disk.
func openRO(t testing.TB, dataDir string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dataDir, "kura.db")+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

// integrityCheck runs PRAGMA integrity_check (the full one, indexes too).
func integrityCheck(t testing.TB, db *sql.DB) {
	t.Helper()
	rows, err := db.Query("PRAGMA integrity_check")
	if err != nil {
		t.Fatalf("integrity_check: %v", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		rows.Scan(&s)
		out = append(out, s)
	}
	if len(out) != 1 || out[0] != "ok" {
		t.Fatalf("integrity_check: %v", out)
	}
}

// metric reads one unlabelled series from /metrics.
func metric(base, name string) (float64, error) {
	_, raw, err := call(context.Background(), "GET", base+"/metrics", nil, nil)
	if err != nil {
		return 0, err
	}
	for _, line := range bytes.Split(raw, []byte("\n")) {
		f := bytes.Fields(line)
		if len(f) == 2 && string(f[0]) == name {
			return strconv.ParseFloat(string(f[1]), 64)
		}
	}
	return 0, fmt.Errorf("metric %s not found", name)
}

// percentile is the nearest-rank percentile of ds (sorted in place).
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	i := int(float64(len(ds))*p+0.999999) - 1
	return ds[max(0, min(i, len(ds)-1))]
}

// envInt reads a positive integer override from the environment.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
