package witness_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/testwait"
	"github.com/kura-memory/kura/internal/witness"
)

// Bad requests to a running witness get kurad's error body and change
// nothing it serves.
func TestWitness_BadRequests(t *testing.T) {
	t.Parallel()
	const origin = "kura.test/bad"
	k := newLogKey(t, origin)
	fl := newFakeLog(t, origin, k)
	fl.grow("a", 1)
	w, _ := openWitness(t, witness.Config{StateDir: t.TempDir(), Logs: []witness.Log{{URL: fl.srv.URL}}, Poll: time.Hour})
	base := "http://" + w.Addr()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	testwait.For(t, 10*time.Second, "the witness cosigns the log's first checkpoint", func() bool {
		code, _ := get(t, base+"/v1/witness/checkpoint?origin="+origin)
		return code == 200
	})
	_, before := get(t, base+"/v1/witness/checkpoints")
	cases := []struct {
		method, path string
		code         int
		errCode      string
	}{
		{"GET", "/v1/witness/checkpoint", 400, "invalid_argument"},
		{"GET", "/v1/witness/checkpoint?origin=kura.test/unknown", 404, "not_found"},
		{"GET", "/v1/witness/nothing", 404, "not_found"},
		{"POST", "/v1/witness/checkpoint?origin=" + origin, 405, "method_not_allowed"},
		{"DELETE", "/v1/witness/checkpoints", 405, "method_not_allowed"},
		{"PUT", "/metrics", 405, "method_not_allowed"},
	}
	for _, c := range cases {
		req, _ := http.NewRequest(c.method, base+c.path, strings.NewReader(`{"x":1}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e struct {
			Error struct{ Code, Message string }
		}
		json.Unmarshal(b, &e)
		if resp.StatusCode != c.code || e.Error.Code != c.errCode || e.Error.Message == "" {
			t.Errorf("%s %s: %d %s, want %d %s", c.method, c.path, resp.StatusCode, b, c.code, c.errCode)
		}
	}
	if _, after := get(t, base+"/v1/witness/checkpoints"); after != before {
		t.Errorf("bad requests changed what the witness serves:\n%s\n%s", before, after)
	}
}
