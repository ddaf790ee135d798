package scaleout_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/daemon"
	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/kura-memory/kura/internal/pgtest"
	"github.com/kura-memory/kura/internal/testwait"
)

// A witness check kurad cannot finish on its own side (here: the table of
// the log's hashes is gone from under it for a while) is no finding: the
// witness keeps its last finished status ("ok"), its error says the check
// was not completed, kurad stays ready, and the next check once the table
// is back clears the error. Before, such a check read as no_checkpoint and
// the log as unwitnessed.
func TestScaleOut_WitnessCheckThatCannotReadTheLogIsInconclusive(t *testing.T) {
	url := pgtest.URL(t)
	addr, w := followedAddr(t, 20*time.Millisecond)
	d := kuradtest.StartMain(t, kuradtest.Options{Configure: func(c *daemon.Config) {
		c.DatabaseURL, c.KeyFile, c.HTTPAddr = url, filepath.Join(t.TempDir(), "kurad.key"), addr
		c.Witnesses, c.WitnessPoll = []string{"http://" + w.Addr()}, 50*time.Millisecond
	}})
	witnessState := func() (state, witnessErr string) {
		_, info := call(t, d, "GET", "/v1/info", "")
		l, _ := info["log"].(map[string]any)
		state, _ = l["state"].(string)
		if ws, _ := l["witnesses"].([]any); len(ws) == 1 {
			m, _ := ws[0].(map[string]any)
			witnessErr, _ = m["error"].(string)
		}
		return state, witnessErr
	}
	for i := 0; i < 3; i++ {
		mustCall(t, d, "POST", "/v1/records", fmt.Sprintf(`{"type":"agent.thought","author_id":"agent:bmo","content":{"n":%d}}`, i), 201)
	}
	testwait.For(t, testwait.Default, "the log witnessed", func() bool { s, _ := witnessState(); return s == "ok" })

	db := d.RawDB(t)
	if _, err := db.Exec("ALTER TABLE log_hashes RENAME TO log_hashes_away"); err != nil {
		t.Fatal(err)
	}
	var state, werr string
	testwait.For(t, testwait.Default, "a check that could not read the log", func() bool {
		state, werr = witnessState()
		return strings.Contains(werr, "check not completed") || state != "ok"
	})
	if state != "ok" || !strings.Contains(werr, "check not completed") {
		t.Fatalf("log state %q, witness error %q; want ok with the check not completed", state, werr)
	}
	if st, _ := call(t, d, "GET", "/readyz", ""); st != 200 {
		t.Fatalf("/readyz %d while checks cannot read the log, want 200", st)
	}
	if _, err := db.Exec("ALTER TABLE log_hashes_away RENAME TO log_hashes"); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, testwait.Default, "the next check to finish", func() bool {
		state, werr = witnessState()
		return state == "ok" && werr == ""
	})
	mustCall(t, d, "POST", "/v1/records", `{"type":"agent.thought","author_id":"agent:bmo","content":{"after":true}}`, 201)
}
