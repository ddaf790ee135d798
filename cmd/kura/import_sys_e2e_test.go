package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/daemon"
	"github.com/kura-memory/kura/internal/kuradtest"
)

// TestE2E_ExportImportKeepsKuradsOwnRecords: a session whose turns hold
// kurad's own records (a deliverable kurad writes at close, memory packed
// into the context) exports with kura export and imports with kura import
// into a fresh kurad with the same key; into a kurad with another key the
// sys: records are refused and nothing is written.
func TestE2E_ExportImportKeepsKuradsOwnRecords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := kuradtest.StartMain(t, kuradtest.Options{})
	c := client.New(a.BaseURL())
	title, summary, lifecycle, authority := "the port", "kurad listens on 7700", "active", "trusted"
	if _, _, err := c.PutNode(ctx, "hashi", client.NodeInput{Kind: "fact", ID: "port", Title: &title, Summary: &summary,
		Lifecycle: &lifecycle, Authority: &authority}); err != nil {
		t.Fatal(err)
	}
	s, err := c.CreateSession(ctx, client.SessionInput{Project: "hashi", Name: "sys-export"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		instr := client.RecordInput{Type: "task.instruction", AuthorID: "user:oles", Content: json.RawMessage(fmt.Sprintf(`"step %d"`, i))}
		tr, err := c.OpenTurn(ctx, s.ID, client.TurnOpenInput{Instruction: &instr, Memory: &client.MemoryRequest{Query: "port"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.CloseTurn(ctx, tr.ID, client.TurnClose{Status: "complete"}); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(t.TempDir(), "s.jsonl")
	if _, errOut, code := runKura(t, a.BaseURL(), nil, "export", s.ID, "--format=jsonl", "--out", file); code != exitOK {
		t.Fatalf("export: exit %d, stderr %q", code, errOut)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var sysIDs []string
	sysTypes := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var it struct {
			Kind     string `json:"kind"`
			ID       string `json:"id"`
			AuthorID string `json:"author_id"`
			Type     string `json:"type"`
		}
		json.Unmarshal([]byte(line), &it)
		if it.Kind == "record" && strings.HasPrefix(it.AuthorID, "sys:") {
			sysIDs = append(sysIDs, it.ID)
			sysTypes[it.Type] = true
		}
	}
	if !sysTypes["task.deliverable"] || !sysTypes["memory.fact"] {
		t.Fatalf("the export holds sys: records of types %v, want a deliverable kurad wrote and packed memory", sysTypes)
	}

	t.Run("SameKey", func(t *testing.T) {
		b := kuradtest.StartMain(t, kuradtest.Options{Configure: func(cfg *daemon.Config) { cfg.KeyFile = a.Config.KeyFile }})
		out, errOut, code := runKura(t, b.BaseURL(), nil, "import", file)
		if code != exitOK || !strings.Contains(out, "1 session") {
			t.Fatalf("import: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		cb := client.New(b.BaseURL())
		for _, id := range sysIDs {
			got, err := cb.GetRecord(ctx, id)
			want, _ := c.GetRecord(ctx, id)
			if err != nil || got.Seal != want.Seal {
				t.Errorf("record %s: got %+v, %v, want %+v", id, got, err, want)
			}
		}
		if v, err := cb.VerifySession(ctx, s.ID, ""); err != nil || !v.OK {
			t.Errorf("imported session: got %+v, %v, want it to verify", v, err)
		}
	})

	t.Run("OtherKey", func(t *testing.T) {
		url := kuradtest.Start(t)
		_, errOut, code := runKura(t, url, nil, "import", file)
		if code != exitFail || !strings.Contains(errOut, "permission_denied") || !slices.ContainsFunc(sysIDs, func(id string) bool { return strings.Contains(errOut, id) }) {
			t.Fatalf("import: exit %d, stderr %q, want permission_denied naming a sys: record", code, errOut)
		}
		for _, id := range sysIDs {
			if _, err := client.New(url).GetRecord(ctx, id); client.ErrorCode(err) != client.ENotFound {
				t.Errorf("record %s: got %v, want it absent after the refusal", id, err)
			}
		}
	})
}

// TestImportDump_SysRecordsTravelWithTheirLedger: kura import sends a sys:
// record in the same request as the ledger that holds it (kurad takes one
// only inside a ledger of the same import it signed), even where the
// request limits would have cut between them.
func TestImportDump_SysRecordsTravelWithTheirLedger(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	var ids []string
	for i := 0; i < importMaxItems; i++ {
		author := "agent:a"
		if i == importMaxItems-1 {
			author = "sys:kurad" // the last item that fits into the first request
		}
		id := fmt.Sprintf("01900000-0000-7000-8000-%012d", i)
		ids = append(ids, id)
		fmt.Fprintf(&b, `{"kind":"record","id":%q,"hash":"%064d","author_id":%q}`+"\n", id, i, author)
	}
	idsJSON, _ := json.Marshal(ids)
	fmt.Fprintf(&b, `{"kind":"ledger","id":"01900000-0000-7000-8000-100000000000","hash":"%064d","record_ids":%s}`+"\n", 1, idsJSON)
	sysID := ids[len(ids)-1]
	var requests []client.ImportInput
	send := func(_ context.Context, in client.ImportInput) (*client.ImportResult, error) {
		requests = append(requests, in)
		return &client.ImportResult{Records: len(in.Records), Ledgers: len(in.Ledgers)}, nil
	}
	total, err := importDump(context.Background(), strings.NewReader(b.String()), send)
	if err != nil {
		t.Fatal(err)
	}
	if total.Records != importMaxItems || total.Ledgers != 1 {
		t.Fatalf("got %+v, want every record and the ledger sent", total)
	}
	for n, in := range requests {
		if len(in.Records)+len(in.Ledgers) > importMaxItems {
			t.Errorf("request %d holds %d items, over the limit %d", n+1, len(in.Records)+len(in.Ledgers), importMaxItems)
		}
		hasSys := slices.ContainsFunc(in.Records, func(r client.Record) bool { return r.ID == sysID })
		hasLedger := len(in.Ledgers) == 1
		if hasSys != hasLedger {
			t.Errorf("request %d: sys: record %v, its ledger %v; want both or neither", n+1, hasSys, hasLedger)
		}
	}
}
