package main_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/kura-memory/kura/internal/testwait"
)

// TestKurad_DoorbellAfterSIGKILL kills kurad under write load while a NATS
// subscriber listens. Whatever the subscriber heard before the kill must be
// committed data (never published before commit); after the restart the
// publisher republishes exactly the events after its saved cursor, so every
// committed event is published at least once.
func TestKurad_DoorbellAfterSIGKILL(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	p := startKurad(t, dataDir)
	natsAddr := readNATSAddr(t, dataDir)
	nc, err := nats.Connect("nats://"+natsAddr, nats.MaxReconnects(0))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var mu sync.Mutex
	heard := map[int64]string{} // seq → record_id
	if _, err := nc.Subscribe("oclaw.v1.>", func(m *nats.Msg) {
		if strings.HasPrefix(m.Subject, "oclaw.v1._log.") {
			return // the log's checkpoints: no event, no seq
		}
		var ptr struct {
			Seq      int64  `json:"seq"`
			RecordID string `json:"record_id"`
		}
		json.Unmarshal(m.Data, &ptr)
		mu.Lock()
		heard[ptr.Seq] = ptr.RecordID
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	nc.Flush()

	client := &http.Client{Timeout: 10 * time.Second}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var recs []string
				for j := range 10 {
					recs = append(recs, fmt.Sprintf(`{"type":"agent.thought","content":{"w":%d,"i":%d,"j":%d},"author_id":"agent:load"}`, w, i, j))
				}
				resp, err := client.Post(p.Base+"/v1/records/batch", "application/json", strings.NewReader(`{"records":[`+strings.Join(recs, ",")+`]}`))
				if err != nil {
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	// Run long enough for the cursor to have been saved a few times, so the
	// kill lands between a save and the newest publishes.
	start := time.Now()
	testwait.Until(15*time.Second, func() bool {
		mu.Lock()
		n := len(heard)
		mu.Unlock()
		return n >= 2000 && time.Since(start) > 800*time.Millisecond
	})
	p.Cmd.Process.Signal(syscall.SIGKILL)
	p.Wait(t, 10*time.Second)
	close(stop)
	wg.Wait()
	nc.Close()

	// What the file says at the moment of the crash.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dataDir, "kura.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var lastSeq, cursor int64
	db.QueryRow("SELECT coalesce(max(seq), 0) FROM events").Scan(&lastSeq)
	var cur string
	if err := db.QueryRow("SELECT value FROM meta WHERE key = 'outbox_published_seq'").Scan(&cur); err == nil {
		cursor, _ = strconv.ParseInt(cur, 10, 64)
	}
	mu.Lock()
	for seq, id := range heard {
		var refs string
		if err := db.QueryRow("SELECT refs FROM events WHERE seq = ?", seq).Scan(&refs); err != nil {
			t.Fatalf("the subscriber heard seq %d, which is not committed: %v", seq, err)
		}
		var got struct {
			RecordID string `json:"record_id"`
		}
		json.Unmarshal([]byte(refs), &got)
		if got.RecordID != id {
			t.Fatalf("seq %d was published as record %s, committed as %s", seq, id, got.RecordID)
		}
	}
	heardN := len(heard)
	mu.Unlock()
	if cursor > lastSeq {
		t.Fatalf("saved cursor %d is past the last committed seq %d", cursor, lastSeq)
	}
	t.Logf("at the kill: %d events committed, cursor saved at %d, %d heard live", lastSeq, cursor, heardN)
	db.Close()

	p2 := startKurad(t, dataDir)
	var info struct {
		LastEventSeq int64 `json:"last_event_seq"`
		Outbox       struct {
			PublishedSeq int64 `json:"published_seq"`
		} `json:"outbox"`
	}
	testwait.Until(20*time.Second, func() bool {
		resp, err := client.Get(p2.Base + "/v1/info")
		if err != nil {
			t.Fatal(err)
		}
		json.NewDecoder(resp.Body).Decode(&info)
		resp.Body.Close()
		return info.Outbox.PublishedSeq == lastSeq
	})
	if info.LastEventSeq != lastSeq || info.Outbox.PublishedSeq != lastSeq {
		t.Fatalf("after restart: last seq %d, published %d; want both %d", info.LastEventSeq, info.Outbox.PublishedSeq, lastSeq)
	}
	resp, err := client.Get(p2.Base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := fmt.Sprintf("kura_outbox_published_events_total %d\n", lastSeq-cursor)
	if !strings.Contains(string(body), want) {
		t.Errorf("metrics lack %q: the restart must republish exactly the events after the cursor", strings.TrimSpace(want))
	}
}

func readNATSAddr(t *testing.T, dataDir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "kurad.addr"))
	if err != nil {
		t.Fatal(err)
	}
	var a struct{ NATS string }
	if err := json.Unmarshal(b, &a); err != nil || a.NATS == "" {
		t.Fatalf("kurad.addr %q: %v", b, err)
	}
	return a.NATS
}
