package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/kuradtest"
)

// These tests run against a real kurad started in-process on port 0 with a
// temporary data directory.

func newClient(t *testing.T) (*client.Client, context.Context) {
	t.Helper()
	return client.New(kuradtest.Start(t)), t.Context()
}

func mustPut(t *testing.T, c *client.Client, ctx context.Context, typ, author, content string) *client.Record {
	t.Helper()
	r, err := c.PutRecord(ctx, client.RecordInput{Type: typ, AuthorID: author, Content: json.RawMessage(content)})
	if err != nil {
		t.Fatalf("put record: %v", err)
	}
	return r
}

func wantCode(t *testing.T, err error, code string) *client.Error {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) {
		t.Fatalf("got %T (%v), want *client.Error %s", err, err, code)
	}
	if e.Code != code {
		t.Fatalf("got code %q (%s), want %q", e.Code, e.Message, code)
	}
	return e
}

func TestE2E_Operations(t *testing.T) {
	t.Parallel()
	c, ctx := newClient(t)
	if err := c.Health(ctx); err != nil {
		t.Errorf("health: %v", err)
	}
	if err := c.Ready(ctx); err != nil {
		t.Errorf("ready: %v", err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatalf("info: %v", err)
	}
	if info.Version == "" || info.SchemaVersion < 1 {
		t.Errorf("got version %q schema %d, want both set", info.Version, info.SchemaVersion)
	}
}

func TestE2E_Records(t *testing.T) {
	t.Parallel()
	c, ctx := newClient(t)
	in := client.RecordInput{
		Type:     "agent.thought",
		AuthorID: "agent:bmo",
		Content:  json.RawMessage(`{"text":"REST feels clean","n":1.0}`),
		Metadata: map[string]string{"project_id": "hashi"},
	}

	var created *client.Record
	t.Run("Created", func(t *testing.T) {
		r, err := c.PutRecord(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if r.Deduplicated || r.ID == "" || r.Type != in.Type || r.AuthorID != in.AuthorID || r.Metadata["project_id"] != "hashi" {
			t.Errorf("got %+v, want a new record echoing the input", r)
		}
		if err := client.VerifyRecord(r); err != nil {
			t.Errorf("the server's record does not verify locally: %v", err)
		}
		created = r
	})
	if created == nil {
		t.FailNow()
	}

	t.Run("Deduplicated", func(t *testing.T) {
		// Same type, content (in another spelling) and author: same hash.
		again := in
		again.Content = json.RawMessage(`{ "n": 1, "text": "REST feels clean" }`)
		r, err := c.PutRecord(ctx, again)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Deduplicated || r.ID != created.ID {
			t.Errorf("got id %s deduplicated %v, want %s true", r.ID, r.Deduplicated, created.ID)
		}
	})

	t.Run("Get", func(t *testing.T) {
		r, err := c.GetRecord(ctx, created.ID)
		if err != nil {
			t.Fatal(err)
		}
		if r.Hash != created.Hash || r.Seal != created.Seal || r.CreatedAt != created.CreatedAt {
			t.Errorf("got %+v, want %+v", r, created)
		}
		byHash, err := c.GetRecordByHash(ctx, created.Hash)
		if err != nil {
			t.Fatal(err)
		}
		if byHash.ID != created.ID {
			t.Errorf("by hash: got id %s, want %s", byHash.ID, created.ID)
		}
	})

	t.Run("NotFound", func(t *testing.T) {
		_, err := c.GetRecord(ctx, "0193a000-0000-7000-8000-000000000000")
		wantCode(t, err, client.ENotFound)
		_, err = c.GetRecordByHash(ctx, strings.Repeat("0", 64))
		wantCode(t, err, client.ENotFound)
	})

	t.Run("Invalid", func(t *testing.T) {
		bad := in
		bad.Type = "no.such.type"
		_, err := c.PutRecord(ctx, bad)
		e := wantCode(t, err, client.EInvalid)
		if e.Details["field"] != "type" {
			t.Errorf("got details %v, want field type", e.Details)
		}
		bad = in
		bad.AuthorID = "bmo"
		_, err = c.PutRecord(ctx, bad)
		wantCode(t, err, client.EInvalid)
	})

	var batch []client.Record
	t.Run("Batch", func(t *testing.T) {
		ins := make([]client.RecordInput, 5)
		for i := range ins {
			ins[i] = client.RecordInput{Type: "memory.fact", AuthorID: "agent:batch", Content: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}
		}
		recs, err := c.PutRecords(ctx, ins)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != len(ins) {
			t.Fatalf("got %d records, want %d", len(recs), len(ins))
		}
		for i, r := range recs {
			if want := fmt.Sprintf(`{"i":%d}`, i); string(r.Content) != want {
				t.Errorf("records[%d]: got content %s, want %s (input order)", i, r.Content, want)
			}
			if err := client.VerifyRecord(&r); err != nil {
				t.Errorf("records[%d]: %v", i, err)
			}
		}
		batch = recs
	})

	t.Run("BatchAllOrNothing", func(t *testing.T) {
		ins := []client.RecordInput{
			{Type: "memory.fact", AuthorID: "agent:atomic", Content: json.RawMessage(`1`)},
			{Type: "no.such.type", AuthorID: "agent:atomic", Content: json.RawMessage(`2`)},
		}
		_, err := c.PutRecords(ctx, ins)
		wantCode(t, err, client.EInvalid)
		page, err := c.ListRecords(ctx, client.RecordListOptions{AuthorID: "agent:atomic"})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Records) != 0 {
			t.Errorf("got %d records written by a failed batch, want 0", len(page.Records))
		}
	})

	t.Run("ListPaged", func(t *testing.T) {
		var got []string
		opts := client.RecordListOptions{AuthorID: "agent:batch", Type: "memory.fact", Limit: 2}
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatal("more pages than records: the cursor does not advance")
			}
			p, err := c.ListRecords(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Records) > 2 {
				t.Fatalf("got a page of %d, want at most 2", len(p.Records))
			}
			for _, r := range p.Records {
				got = append(got, r.ID)
			}
			if p.NextCursor == "" {
				break
			}
			opts.Cursor = p.NextCursor
		}
		var want []string
		for _, r := range batch {
			want = append(want, r.ID)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("got %v, want %v (oldest first)", got, want)
		}
	})

	t.Run("ListFiltered", func(t *testing.T) {
		p, err := c.ListRecords(ctx, client.RecordListOptions{Type: "agent.thought"})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Records) != 1 || p.Records[0].ID != created.ID {
			t.Errorf("got %d records, want only %s", len(p.Records), created.ID)
		}
	})
}

func TestE2E_Ledgers(t *testing.T) {
	t.Parallel()
	c, ctx := newClient(t)
	a := mustPut(t, c, ctx, "task.instruction", "user:oles", `"Summarise the morning session"`)
	b := mustPut(t, c, ctx, "agent.thought", "agent:bmo", `{"text":"REST feels clean"}`)
	d := mustPut(t, c, ctx, "task.deliverable", "agent:bmo", `{"summary":"done"}`)

	base, err := c.CreateLedger(ctx, client.LedgerInput{Label: "ctx", RecordIDs: []string{a.ID, b.ID}})
	if err != nil {
		t.Fatalf("create ledger: %v", err)
	}
	// A record may appear more than once.
	child, err := c.CreateLedger(ctx, client.LedgerInput{Label: "out", ParentIDs: []string{base.ID}, RecordIDs: []string{b.ID, d.ID, b.ID}})
	if err != nil {
		t.Fatalf("create child ledger: %v", err)
	}
	if child.RecordCount != 3 || fmt.Sprint(child.ParentIDs) != fmt.Sprint([]string{base.ID}) {
		t.Errorf("got %+v, want 3 records and parent %s", child, base.ID)
	}

	t.Run("Get", func(t *testing.T) {
		l, err := c.GetLedger(ctx, child.ID)
		if err != nil {
			t.Fatal(err)
		}
		if l.Hash != child.Hash || fmt.Sprint(l.RecordIDs) != fmt.Sprint([]string{b.ID, d.ID, b.ID}) {
			t.Errorf("got %+v, want %+v", l, child)
		}
	})

	t.Run("RecordsPaged", func(t *testing.T) {
		p, err := c.LedgerRecords(ctx, child.ID, 2, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Records) != 2 || p.NextCursor == "" {
			t.Fatalf("got %d records, cursor %q, want 2 and a cursor", len(p.Records), p.NextCursor)
		}
		all, err := c.AllLedgerRecords(ctx, child.ID)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range all {
			ids = append(ids, r.ID)
		}
		if fmt.Sprint(ids) != fmt.Sprint([]string{b.ID, d.ID, b.ID}) {
			t.Errorf("got %v, want ledger order", ids)
		}
	})

	t.Run("VerifyOnServer", func(t *testing.T) {
		v, err := c.VerifyLedger(ctx, child.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !v.OK || len(v.Mismatches) != 0 || v.RecordsChecked != 3 || v.ComputedRootHash != child.RootHash {
			t.Errorf("got %+v, want ok over 3 records", v)
		}
	})

	t.Run("VerifyLocally", func(t *testing.T) {
		info, err := c.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		v, err := c.VerifyLedgerLocally(ctx, child.ID, info.PublicKey)
		if err != nil {
			t.Fatal(err)
		}
		if !v.OK || v.RecordsChecked != 3 || (info.PublicKey != "" && !v.SignatureOK) {
			t.Errorf("got %+v, want ok over 3 records, signature checked against %q", v, info.PublicKey)
		}
		if v.Hash != child.Hash {
			t.Errorf("got hash %s, want the one handed out at creation %s", v.Hash, child.Hash)
		}
		l, err := c.GetLedger(ctx, child.ID)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := c.AllLedgerRecords(ctx, child.ID)
		if err != nil {
			t.Fatal(err)
		}
		// What a tampering server or disk would hand out must not verify.
		recs[1].Content = json.RawMessage(`{"summary":"not done"}`)
		if err := client.VerifyLedgerHashes(l, recs, []string{base.Hash}); err == nil {
			t.Error("changed content: got nil, want a verification error")
		}
	})

	t.Run("Diff", func(t *testing.T) {
		df, err := c.Diff(ctx, base.ID, child.ID)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(df.Added) != fmt.Sprint([]string{d.ID}) || fmt.Sprint(df.Removed) != fmt.Sprint([]string{a.ID}) || df.Common != 1 {
			t.Errorf("got %+v, want added [%s] removed [%s] common 1", df, d.ID, a.ID)
		}
	})

	t.Run("Proof", func(t *testing.T) {
		p, err := c.Proof(ctx, child.ID, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		if p.RootHash != child.RootHash || p.TreeSize != 3 || p.LeafIndex != 1 {
			t.Errorf("got %+v, want leaf 1 of 3 under %s", p, child.RootHash)
		}
		if err := client.VerifyProof(p, d.Seal); err != nil {
			t.Error(err)
		}
		if err := client.VerifyProof(p, a.Seal); err == nil {
			t.Error("proof verified for another record's seal")
		}
	})

	t.Run("MissingRecord", func(t *testing.T) {
		missing := "0193a000-0000-7000-8000-000000000000"
		_, err := c.CreateLedger(ctx, client.LedgerInput{RecordIDs: []string{a.ID, missing}})
		e := wantCode(t, err, client.EInvalid)
		if !strings.Contains(fmt.Sprint(e.Details["missing"]), missing) {
			t.Errorf("got details %v, want missing to name %s", e.Details, missing)
		}
	})

	t.Run("NotFound", func(t *testing.T) {
		_, err := c.GetLedger(ctx, "0193a000-0000-7000-8000-000000000000")
		wantCode(t, err, client.ENotFound)
		_, err = c.VerifyLedger(ctx, "0193a000-0000-7000-8000-000000000000")
		wantCode(t, err, client.ENotFound)
	})

	t.Run("EmptyLedger", func(t *testing.T) {
		l, err := c.CreateLedger(ctx, client.LedgerInput{Label: "empty"})
		if err != nil {
			t.Fatal(err)
		}
		v, err := c.VerifyLedgerLocally(ctx, l.ID, "")
		if err != nil {
			t.Fatal(err)
		}
		if !v.OK || v.RecordsChecked != 0 {
			t.Errorf("got %+v, want ok over 0 records", v)
		}
	})
}

func TestE2E_RawResponse(t *testing.T) {
	t.Parallel()
	c, ctx := newClient(t)
	var raw json.RawMessage
	r, err := c.PutRecord(client.WithRawResponse(ctx, &raw), client.RecordInput{Type: "sys.context", AuthorID: "sys:test", Content: json.RawMessage(`"x"`)})
	if err != nil {
		t.Fatal(err)
	}
	var back client.Record
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatalf("raw answer %q: %v", raw, err)
	}
	if back.ID != r.ID || back.Seal != r.Seal {
		t.Errorf("raw answer has id %s seal %s, want %s %s", back.ID, back.Seal, r.ID, r.Seal)
	}
}
