package daemon_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/kuradtest"
)

// series is one scrape of /metrics: every sample by its name and labels as
// printed (`kura_store_written_total{kind="records"}`).
type series map[string]float64

func scrapeMetrics(t *testing.T, base string) series {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: got HTTP %d, want 200", resp.StatusCode)
	}
	out := series{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if i < 0 || err != nil {
			t.Fatalf("scrape: got line %q, want a sample", line)
		}
		out[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("scrape: %v", err)
	}
	return out
}

// scrapeSettled scrapes until the writer's families agree with each other:
// a transaction bumps its counters and its histograms one after another, and
// the doorbell's cursor saves commit in the background, so one scrape can
// land between them. It gives up after about two seconds and returns the
// last scrape for the caller to judge.
func scrapeSettled(t *testing.T, base string) series {
	t.Helper()
	var s series
	for range 100 {
		s = scrapeMetrics(t, base)
		tx := s.sum("kura_writer_transactions_total")
		settled := s.sum("kura_writer_batch_size_count") == tx &&
			s.sum("kura_writer_batch_size_sum") == s.sum("kura_writer_jobs_total")
		if _, ok := s["kura_writer_lock_hold_duration_seconds_count"]; ok {
			settled = settled && s.sum("kura_writer_lock_hold_duration_seconds_count") == tx &&
				s.sum("kura_writer_lock_wait_duration_seconds_count") == tx
		}
		if settled {
			return s
		}
		time.Sleep(20 * time.Millisecond)
	}
	return s
}

// sum adds every series of a family whose labels contain all of match.
func (s series) sum(name string, match ...string) float64 {
	var total float64
	for k, v := range s {
		n, labels, _ := strings.Cut(k, "{")
		if n != name {
			continue
		}
		ok := true
		for _, m := range match {
			ok = ok && strings.Contains(labels, m)
		}
		if ok {
			total += v
		}
	}
	return total
}

func TestMetrics_MoveWithWrites(t *testing.T) {
	t.Parallel()
	base := kuradtest.Start(t)
	c := client.New(base)
	ctx := t.Context()
	before := scrapeSettled(t, base)

	for _, name := range []string{
		"kura_writer_batch_size_count", "kura_writer_commit_duration_seconds_count",
		"kura_writer_commit_sync_duration_seconds_count", "kura_store_db_size_bytes", "kura_store_wal_size_bytes",
		"kura_writer_queue_depth", "kura_outbox_lag_events", "kura_nats_connections",
	} {
		if _, ok := before[name]; !ok {
			t.Errorf("got no %s before any write, want every unlabelled family exported from the start", name)
		}
	}
	for _, kind := range []string{"records", "ledgers", "sessions", "turns_opened", "turns_closed", "nodes", "relations", "feedback", "kb_entries", "bundles"} {
		if _, ok := before[`kura_store_written_total{kind="`+kind+`"}`]; !ok {
			t.Errorf("got no kura_store_written_total{kind=%q}, want every kind exported from the start", kind)
		}
	}

	const batches, perBatch = 4, 10
	var inputs [][]client.RecordInput
	for b := range batches {
		var in []client.RecordInput
		for i := range perBatch {
			in = append(in, client.RecordInput{Type: "agent.thought", AuthorID: "agent:bmo",
				Content: json.RawMessage(fmt.Sprintf(`{"batch":%d,"i":%d}`, b, i))})
		}
		if _, err := c.PutRecords(ctx, in); err != nil {
			t.Fatalf("put batch %d: %v", b, err)
		}
		inputs = append(inputs, in)
	}
	// The same records again are deduplicated: requests, not writes.
	if _, err := c.PutRecords(ctx, inputs[0]); err != nil {
		t.Fatalf("put a batch again: %v", err)
	}
	after := scrapeSettled(t, base)

	delta := func(name string, match ...string) float64 {
		return after.sum(name, match...) - before.sum(name, match...)
	}
	const n = batches * perBatch
	if got := delta("kura_store_written_total", `kind="records"`); got != n {
		t.Errorf("kura_store_written_total{kind=\"records\"}: got +%v, want +%d", got, n)
	}
	if got := delta("kura_store_written_total", `kind="ledgers"`); got != 0 {
		t.Errorf("kura_store_written_total{kind=\"ledgers\"}: got +%v, want +0", got)
	}
	// Each batch request is one write job; the doorbell's cursor saves
	// may add more.
	if got := delta("kura_writer_batch_size_count"); got < 1 {
		t.Errorf("kura_writer_batch_size_count: got +%v, want at least +1", got)
	}
	if got := delta("kura_writer_batch_size_sum"); got < batches+1 {
		t.Errorf("kura_writer_batch_size_sum: got +%v, want at least +%d jobs", got, batches+1)
	}
	if got, want := delta("kura_writer_batch_size_sum"), delta("kura_writer_jobs_total"); got != want {
		t.Errorf("kura_writer_batch_size_sum: got +%v, want +%v like kura_writer_jobs_total", got, want)
	}
	if got, want := delta("kura_writer_batch_size_count"), delta("kura_writer_transactions_total"); got != want {
		t.Errorf("kura_writer_batch_size_count: got +%v, want +%v like kura_writer_transactions_total", got, want)
	}
	if got := delta("kura_writer_batch_size_bucket", `le="+Inf"`); got != delta("kura_writer_batch_size_count") {
		t.Errorf("kura_writer_batch_size_bucket{le=\"+Inf\"}: got +%v, want +count", got)
	}
	for _, h := range []string{"kura_writer_commit_duration_seconds", "kura_writer_commit_sync_duration_seconds"} {
		if got := delta(h + "_count"); got < batches+1 {
			t.Errorf("%s_count: got +%v, want at least +%d transactions", h, got, batches+1)
		}
		if got := delta(h + "_sum"); got <= 0 {
			t.Errorf("%s_sum: got +%v, want time spent committing", h, got)
		}
	}
	// The write lock the kurads on one database share is PostgreSQL's
	// alone: every committed transaction waited for it and held it.
	for _, h := range []string{"kura_writer_lock_wait_duration_seconds", "kura_writer_lock_hold_duration_seconds"} {
		_, exported := after[h+"_count"]
		if kuradtest.Store() != kuradtest.StorePostgres {
			if exported {
				t.Errorf("%s exported on SQLite, which has no shared write lock", h)
			}
			continue
		}
		if got, want := delta(h+"_count"), delta("kura_writer_transactions_total"); got != want || got < batches+1 {
			t.Errorf("%s_count: got +%v, want +%v like kura_writer_transactions_total (at least %d)", h, got, want, batches+1)
		}
	}
	if kuradtest.Store() == kuradtest.StorePostgres {
		if got := delta("kura_writer_lock_hold_duration_seconds_sum"); got <= 0 || got > delta("kura_writer_commit_duration_seconds_sum") {
			t.Errorf("write lock held +%vs: want more than 0, at most the transactions' +%vs", got, delta("kura_writer_commit_duration_seconds_sum"))
		}
	}
	if got := after.sum("kura_writer_commit_sync_duration_seconds_sum"); got > after.sum("kura_writer_commit_duration_seconds_sum") {
		t.Errorf("COMMIT alone took %vs, longer than whole transactions (%vs)", got, after.sum("kura_writer_commit_duration_seconds_sum"))
	}
	if got := delta("kura_http_requests_total", `route="/v1/records/batch"`, `method="POST"`); got != batches+1 {
		t.Errorf("kura_http_requests_total{route=\"/v1/records/batch\"}: got +%v, want +%d", got, batches+1)
	}
	if got := delta("kura_http_request_duration_seconds_count", `route="/v1/records/batch"`); got != batches+1 {
		t.Errorf("kura_http_request_duration_seconds_count{route=\"/v1/records/batch\"}: got +%v, want +%d", got, batches+1)
	}
	if got := after.sum("kura_store_db_size_bytes"); got <= 0 {
		t.Errorf("kura_store_db_size_bytes: got %v, want > 0", got)
	}
	if got := after.sum("kura_store_db_size_bytes") + after.sum("kura_store_wal_size_bytes"); got < before.sum("kura_store_db_size_bytes") {
		t.Errorf("database and WAL: got %v bytes after writing, want at least the %v before", got, before.sum("kura_store_db_size_bytes"))
	}
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		if after.sum(name) <= 0 {
			t.Errorf("%s: got %v, want the runtime and process collectors", name, after.sum(name))
		}
	}
	for k := range after {
		if strings.HasPrefix(k, "kura_") && uuidRE.MatchString(k) {
			t.Errorf("got series %s, want no ids in labels", k)
		}
	}
}

var uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-`)
