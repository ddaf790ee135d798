package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/internal/kura"
)

// TestEvents_ChangedEventIsNotServed changes event rows in the database
// after their commit (a record.written pointed at another record, a
// session.head at another ledger): their log leaves no longer match, so
// the feed, a long poll and the stream serve them marked mismatch, without
// their ids, never with the changed ones; every other event is served as
// it was.
func TestEvents_ChangedEventIsNotServed(t *testing.T) {
	t.Parallel()
	c, d := newDaemon(t)
	r1 := decode[kura.Record](t, c.mustPost("/v1/records", `{"type":"agent.thought","content":"one","author_id":"agent:bmo","metadata":{"project_id":"hashi"}}`, 201))
	r2 := decode[kura.Record](t, c.mustPost("/v1/records", `{"type":"agent.thought","content":"two","author_id":"agent:bmo","metadata":{"project_id":"hashi"}}`, 201))
	s := decode[kura.Session](t, c.mustPost("/v1/sessions", `{"project":"hashi","name":"ev"}`, 201))
	l1 := decode[kura.Ledger](t, c.mustPost("/v1/ledgers", `{"label":"a","parent_ids":[],"record_ids":["`+r1.ID+`"]}`, 201))
	l2 := decode[kura.Ledger](t, c.mustPost("/v1/ledgers", `{"label":"b","parent_ids":[],"record_ids":["`+r2.ID+`"]}`, 201))
	c.mustPost("/v1/sessions/"+s.ID+"/head", `{"ledger_id":"`+l1.ID+`","expected_head":null}`, 200)

	type page struct {
		Events []map[string]any `json:"events"`
	}
	feed := func(q string) []map[string]any {
		t.Helper()
		return decode[page](t, c.mustGet("/v1/events?after=0&limit=1000"+q)).Events
	}
	before := feed("")
	seqOf := func(typ, key, id string) int64 {
		for _, e := range before {
			if e["type"] == typ && e[key] == id {
				return int64(e["seq"].(float64))
			}
		}
		t.Fatalf("no %s event naming %s in %v", typ, id, before)
		return 0
	}
	written, head := seqOf("record.written", "record_id", r1.ID), seqOf("session.head", "ledger_id", l1.ID)
	for _, e := range before {
		if e["mismatch"] != nil {
			t.Fatalf("untouched feed: %v", e)
		}
	}

	raw := d.RawDB(t)
	for _, q := range []string{
		`UPDATE events SET refs = '{"record_id":"` + r2.ID + `"}' WHERE seq = ?`,
		`UPDATE events SET refs = '{"head_hash":"` + l2.Hash + `","ledger_id":"` + l2.ID + `","session_id":"` + s.ID + `"}' WHERE seq = ?`,
	} {
		seq := written
		if strings.Contains(q, "head_hash") {
			seq = head
		}
		if _, err := raw.Exec(q, seq); err != nil {
			t.Fatal(err)
		}
	}
	bySeq := map[int64]map[string]any{}
	for _, e := range before {
		bySeq[int64(e["seq"].(float64))] = e
	}
	check := func(where string, got []map[string]any) {
		t.Helper()
		if len(got) != len(before) {
			t.Fatalf("%s: %d events, want %d", where, len(got), len(before))
		}
		for _, e := range got {
			seq := int64(e["seq"].(float64))
			if seq != written && seq != head {
				if fmt.Sprint(e) != fmt.Sprint(bySeq[seq]) {
					t.Errorf("%s: untouched event %d served as %v, was %v", where, seq, e, bySeq[seq])
				}
				continue
			}
			want := map[string]any{"seq": float64(seq), "type": bySeq[seq]["type"], "project": bySeq[seq]["project"], "at": bySeq[seq]["at"], "mismatch": true}
			if fmt.Sprint(e) != fmt.Sprint(want) {
				t.Errorf("%s: changed event %d served as %v, want %v", where, seq, e, want)
			}
		}
	}
	check("feed", feed(""))
	check("feed by type", append(feed("&type=record.written,ledger.written"), feed("&type=session.created,session.head")...))
	// A long poll that finds them at once answers the same.
	check("long poll", feed("&wait=1s"))
	check("stream", streamEvents(t, c.base+"/v1/events/stream?after=0", len(before)))
}

// streamEvents reads n data lines of an event stream.
func streamEvents(t *testing.T, url string, n int) []map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []map[string]any
	sc := bufio.NewScanner(resp.Body)
	for len(out) < n && sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("data line %q: %v", line, err)
			}
			out = append(out, m)
		}
	}
	return out
}

// TestRecords_ChangedRecordIsFlagged changes stored records after their
// commit (a record in no ledger, and one in a ledger): every read serves
// them with the stored value that no longer follows named in mismatches,
// and content that no longer hashes to its content_hash as null; the
// records around them are served as they were.
func TestRecords_ChangedRecordIsFlagged(t *testing.T) {
	t.Parallel()
	c, d := newDaemon(t)
	var recs []kura.Record
	for i := range 4 {
		recs = append(recs, decode[kura.Record](t, c.mustPost("/v1/records",
			fmt.Sprintf(`{"type":"agent.thought","content":{"n":%d,"s":"\"q\" é"},"author_id":"agent:bmo","metadata":{"project_id":"hashi","k":"v\n"}}`, i), 201)))
	}
	l := decode[kura.Ledger](t, c.mustPost("/v1/ledgers", `{"label":"l","parent_ids":[],"record_ids":["`+recs[2].ID+`","`+recs[3].ID+`"]}`, 201))
	type page struct {
		Records []map[string]any `json:"records"`
	}
	ledgerPage := func() []map[string]any {
		t.Helper()
		return decode[page](t, c.mustGet("/v1/ledgers/"+l.ID+"/records?limit=1000")).Records
	}
	get := func(path string) map[string]any {
		t.Helper()
		var m map[string]any
		json.Unmarshal(c.mustGet(path), &m)
		return m
	}
	untouched := get("/v1/records/" + recs[1].ID)
	if untouched["mismatches"] != nil || len(ledgerPage()) != 2 {
		t.Fatalf("untouched: %v", untouched)
	}
	for _, r := range ledgerPage() {
		if r["mismatches"] != nil {
			t.Fatalf("untouched ledger page: %v", r)
		}
	}

	raw := d.RawDB(t)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := raw.Exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	forged := strings.Repeat("f", 64)
	exec("UPDATE records SET hash = ? WHERE id = ?", forged, recs[0].ID)
	exec("UPDATE records SET content = ? WHERE id = ?", `{"n":3,"s":"forged"}`, recs[3].ID)
	exec("UPDATE records SET metadata = ? WHERE id = ?", `{"project_id":"elsewhere"}`, recs[2].ID)

	named := func(where string, m map[string]any, field string) {
		t.Helper()
		mm, _ := m["mismatches"].([]any)
		for _, x := range mm {
			if x.(map[string]any)["field"] == field {
				return
			}
		}
		t.Errorf("%s: %v, want mismatches naming %s", where, m, field)
	}
	// A record in no ledger, its hash changed: by id, by the changed hash,
	// in its author's listing.
	named("by id", get("/v1/records/"+recs[0].ID), "hash")
	named("by hash", get("/v1/records/by-hash/"+forged), "hash")
	for _, r := range decode[page](t, c.mustGet("/v1/records?author_id=agent:bmo")).Records {
		switch r["id"] {
		case recs[0].ID:
			named("listing", r, "hash")
		case recs[1].ID:
			if fmt.Sprint(r) != fmt.Sprint(untouched) {
				t.Errorf("listing: untouched record served as %v, was %v", r, untouched)
			}
		}
	}
	// Records of a ledger: their changed metadata and content, by id and
	// on the ledger's page; the changed content is not served.
	named("by id", get("/v1/records/"+recs[2].ID), "seal")
	gone := get("/v1/records/" + recs[3].ID)
	named("by id", gone, "content_hash")
	if gone["content"] != nil {
		t.Errorf("changed content served: %v", gone)
	}
	p := ledgerPage()
	named("ledger page", p[0], "seal")
	named("ledger page", p[1], "content_hash")
	if p[1]["content"] != nil {
		t.Errorf("ledger page: changed content served: %v", p[1])
	}
	// A write of the changed record's content deduplicates onto it, and
	// says so too.
	st, m, _ := c.post("/v1/records", `{"type":"agent.thought","content":{"n":3,"s":"\"q\" é"},"author_id":"agent:bmo"}`)
	if st != 200 {
		t.Fatalf("write of the record's content: %d %v", st, m)
	}
	named("deduplicated write", m, "content_hash")
}
