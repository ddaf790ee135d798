package reliability_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/kura-memory/kura/internal/testwait"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// TestNATSLoss_WritesGoOnAndEveryEventFollowsInOrder cuts the doorbell's
// connection to the embedded NATS server (the server drops it, again each
// time it comes back) while clients write: writes keep answering 201,
// /readyz reports the degraded doorbell, and once the connection stays up
// a subscriber receives every event it missed, in seq order, each once.
func TestNATSLoss_WritesGoOnAndEveryEventFollowsInOrder(t *testing.T) {
	t.Parallel()
	d := kuradtest.StartMain(t, kuradtest.Options{})
	base := d.BaseURL()
	srv := d.Bus().Server()

	nc, err := nats.Connect("nats://" + d.NATSAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var mu sync.Mutex
	var got []int64
	if _, err := nc.Subscribe("oclaw.v1.>", func(m *nats.Msg) {
		if strings.HasPrefix(m.Subject, "oclaw.v1._log.") {
			return // the log's checkpoints: no event, no seq
		}
		var p pointer
		json.Unmarshal(m.Data, &p)
		mu.Lock()
		got = append(got, p.Seq)
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	heard := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(got)
	}
	write := func(i int) {
		t.Helper()
		mustCall(t, "POST", base+"/v1/records", fmt.Sprintf(`{"type":"agent.thought","content":{"nats":%d},"author_id":"agent:rel"}`, i), 201, nil)
	}
	for i := range 20 {
		write(i)
	}
	testwait.For(t, 5*time.Second, "the first 20 events", func() bool { return heard() == 20 })

	// The cut: drop the doorbell's connection whenever it is up.
	doorbellCID := func() uint64 {
		cz, err := srv.Connz(&server.ConnzOptions{})
		if err != nil {
			return 0
		}
		for _, c := range cz.Conns {
			if c.Name == "kurad-doorbell" {
				return c.Cid
			}
		}
		return 0
	}
	stopCut := make(chan struct{})
	cutDone := make(chan int)
	go func() {
		cuts := 0
		for {
			select {
			case <-stopCut:
				cutDone <- cuts
				return
			case <-time.After(2 * time.Millisecond):
			}
			if cid := doorbellCID(); cid != 0 && srv.DisconnectClientByID(cid) == nil {
				cuts++
			}
		}
	}()
	var ready struct {
		Status string            `json:"status"`
		Checks map[string]string `json:"checks"`
	}
	testwait.For(t, 5*time.Second, "/readyz to report the doorbell", func() bool {
		mustCall(t, "GET", base+"/readyz", nil, 200, &ready)
		return ready.Status == "degraded"
	})
	if !strings.Contains(ready.Checks["doorbell"], "NATS") {
		t.Errorf("/readyz while NATS is cut: %+v", ready)
	}
	before := heard()
	for i := 20; i < 120; i++ {
		write(i)
		if i%20 == 0 {
			mustCall(t, "POST", base+"/v1/records/batch", fmt.Sprintf(`{"records":[{"type":"agent.thought","content":{"nb":%d},"author_id":"agent:rel"}]}`, i), 201, nil)
		}
	}
	mustCall(t, "GET", base+"/readyz", nil, 200, &ready)
	if ready.Status != "degraded" {
		t.Errorf("/readyz during the cut: %+v", ready)
	}
	missed := heard() - before
	close(stopCut)
	cuts := <-cutDone

	var info struct {
		LastEventSeq int64 `json:"last_event_seq"`
		Outbox       struct {
			PublishedSeq int64 `json:"published_seq"`
			Lag          int64 `json:"lag"`
		} `json:"outbox"`
	}
	testwait.For(t, 15*time.Second, "the doorbell to catch up", func() bool {
		mustCall(t, "GET", base+"/v1/info", nil, 200, &info)
		return info.Outbox.Lag == 0 && int64(heard()) == info.LastEventSeq
	})
	testwait.For(t, 5*time.Second, "/readyz to be ready again", func() bool {
		mustCall(t, "GET", base+"/readyz", nil, 200, &ready)
		return ready.Status == "ready"
	})
	mu.Lock()
	defer mu.Unlock()
	for i, s := range got {
		if s != int64(i+1) {
			t.Fatalf("subscriber got seq %d at position %d: events out of order or repeated (%v)", s, i, got[max(0, i-3):min(len(got), i+3)])
		}
	}
	if missed > 50 {
		t.Errorf("the subscriber heard %d of 105 events while NATS was cut: the cut did not hold", missed)
	}
	t.Logf("doorbell cut %d times; %d of 105 events heard during the cut, all %d delivered in order after it", cuts, missed, len(got))
}
