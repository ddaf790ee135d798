package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/kura"
)

// benchRecords writes n records (about 300 bytes of content each) in
// batches and a ledger over them; it returns the ledger.
func benchRecords(b *testing.B, n int) (*kura.Ledger, func() *bytes.Buffer) {
	db := MustOpenStore(b)
	ctx := context.Background()
	var ids []string
	for len(ids) < n {
		ins := make([]kura.RecordInput, min(1000, n-len(ids)))
		for i := range ins {
			ins[i] = kura.RecordInput{Type: "agent.thought", AuthorID: "agent:bmo",
				Content: json.RawMessage(fmt.Sprintf(`{"n":%d,"text":"%0280d"}`, len(ids)+i, len(ids)+i))}
		}
		recs, err := db.CreateRecords(ctx, ins)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range recs {
			ids = append(ids, r.ID)
		}
	}
	l, err := db.CreateLedger(ctx, &kura.LedgerInput{Label: "bench", ParentIDs: []string{}, RecordIDs: ids})
	if err != nil {
		b.Fatal(err)
	}
	return l, func() *bytes.Buffer {
		var buf bytes.Buffer
		for after := -1; after >= -1; {
			next := -1
			if err := db.HydrateLedger(ctx, l.ID, after, 1000, nil, &buf, func(n int) error { next = n; return nil }); err != nil {
				b.Fatal(err)
			}
			if next < 0 {
				break
			}
			after = next
		}
		return &buf
	}
}

// cpuTime is the CPU time this process has used: on a shared machine the
// wall time of a benchmark says more about the neighbours than the code.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time per op from start on.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

// BenchmarkHydrate_10k reads a 10,000-record ledger in pages of 1,000, as
// GET /v1/ledgers/{id}/records does.
func BenchmarkHydrate_10k(b *testing.B) {
	_, hydrate := benchRecords(b, 10000)
	hydrate()
	b.ResetTimer()
	start := cpuTime()
	for range b.N {
		hydrate()
	}
	reportCPU(b, start)
}

// BenchmarkListEvents_1000 reads pages of 1,000 events of the feed.
func BenchmarkListEvents_1000(b *testing.B) {
	db := MustOpenStore(b)
	ctx := context.Background()
	for i := range 3 {
		ins := make([]kura.RecordInput, 1000)
		for j := range ins {
			ins[j] = thought(i*1000 + j)
		}
		if _, err := db.CreateRecords(ctx, ins); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	start := cpuTime()
	defer reportCPU(b, start)
	for i := range b.N {
		p, err := db.ListEvents(ctx, kura.EventFilter{After: int64(i%2) * 1000, Limit: 1000})
		if err != nil || len(p.Events) != 1000 {
			b.Fatal(err, len(p.Events))
		}
	}
}

// BenchmarkCreateRecords_1000 writes batches of 1,000 new records, as
// POST /v1/records/batch does.
func BenchmarkCreateRecords_1000(b *testing.B) {
	db := MustOpenStore(b)
	ctx := context.Background()
	ins := make([]kura.RecordInput, 1000)
	b.ResetTimer()
	start := cpuTime()
	defer reportCPU(b, start)
	for i := range b.N {
		for j := range ins {
			ins[j] = kura.RecordInput{Type: "agent.thought", AuthorID: "agent:bmo",
				Content: json.RawMessage(fmt.Sprintf(`{"n":%d,"text":"%0200d"}`, i*1000+j, j))}
		}
		if _, err := db.CreateRecords(ctx, ins); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCreateRecord writes single new records one after another.
func BenchmarkCreateRecord(b *testing.B) {
	db := MustOpenStore(b)
	ctx := context.Background()
	b.ResetTimer()
	start := cpuTime()
	defer reportCPU(b, start)
	for i := range b.N {
		in := kura.RecordInput{Type: "agent.thought", AuthorID: "agent:bmo", Content: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}
		if _, err := db.CreateRecord(ctx, &in); err != nil {
			b.Fatal(err)
		}
	}
}
