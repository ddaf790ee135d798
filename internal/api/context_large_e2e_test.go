package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/kuradtest"
)

// TestContext_LargeBundleReadsBackExactly: a compile answer over 64 KiB
// is stored gzipped (store/context.go) and GET .../bundles/{id} returns it
// byte for byte, on either store (PostgreSQL once refused the gzip bytes
// in a text column).
func TestContext_LargeBundleReadsBackExactly(t *testing.T) {
	t.Parallel()
	d := kuradtest.StartMain(t, kuradtest.Options{})
	c := &apiClient{tb: t, base: d.BaseURL()}
	var nodes []string
	for i := range 6 {
		summary := strings.Repeat(fmt.Sprintf("payments retry budget %d ", i), 600) // ~15 KiB each
		nodes = append(nodes, fmt.Sprintf(`{"kind":"fact","id":"big-%d","title":"payments %d","summary":%q}`, i, i, summary))
	}
	c.ctxNodes("large", nodes...)
	st, _, raw := c.ctxSend(ctxPath("large", "compile"), "", `{"query":"payments","budget_bytes":1000000,"max_per_bucket":50}`)
	if st != 200 {
		t.Fatalf("compile: %d %s", st, raw)
	}
	if len(raw) < 64<<10 {
		t.Fatalf("the compile answer is %d bytes; the test needs one over 64 KiB", len(raw))
	}
	var b struct {
		BundleID string `json:"bundle_id"`
	}
	if err := json.Unmarshal(raw, &b); err != nil || b.BundleID == "" {
		t.Fatalf("compile answer without a bundle id: %v", err)
	}
	st, _, back := c.get("/v1/scopes/large/context/bundles/" + b.BundleID)
	if st != 200 || !bytes.Equal(bytes.TrimSpace(back), bytes.TrimSpace(raw)) {
		t.Fatalf("bundle read back: %d, %d bytes, want the %d bytes compile answered", st, len(back), len(raw))
	}
}
