package client_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/kuradtest"
)

func TestE2E_Sessions(t *testing.T) {
	t.Parallel()
	c, ctx := newClient(t)
	s, err := c.CreateSession(ctx, client.SessionInput{Project: "hashi", Name: "morning"})
	if err != nil {
		t.Fatalf("create session: %v", err)
	}
	if s.Scope != "hashi" || s.HeadLedgerID != nil || s.HeadHash != nil {
		t.Errorf("got %+v, want scope = project and no head", s)
	}

	t.Run("GetFindList", func(t *testing.T) {
		got, err := c.GetSession(ctx, s.ID)
		if err != nil || got.ID != s.ID || got.Name != "morning" {
			t.Fatalf("get: got %+v, %v", got, err)
		}
		found, err := c.FindSession(ctx, "hashi", "morning")
		if err != nil || found.ID != s.ID {
			t.Errorf("find: got %+v, %v, want %s", found, err, s.ID)
		}
		_, err = c.FindSession(ctx, "hashi", "evening")
		wantCode(t, err, client.ENotFound)
		p, err := c.ListSessions(ctx, client.SessionListOptions{Project: "hashi"})
		if err != nil || len(p.Sessions) != 1 || p.Sessions[0].ID != s.ID {
			t.Errorf("list: got %+v, %v", p, err)
		}
		_, err = c.CreateSession(ctx, client.SessionInput{Project: "hashi", Name: "morning"})
		wantCode(t, err, client.EConflict)
	})

	// Two turns, the second claimed by a worker.
	open := func(text string) *client.Turn {
		t.Helper()
		tu, err := c.OpenTurn(ctx, s.ID, client.TurnOpenInput{Instruction: &client.RecordInput{Type: "task.instruction", AuthorID: "user:oles", Content: json.RawMessage(fmt.Sprintf("%q", text))}})
		if err != nil {
			t.Fatalf("open turn: %v", err)
		}
		return tu
	}
	t1 := open("first")
	fact := mustPut(t, c, ctx, "memory.fact", "agent:bmo", `{"text":"REST"}`)
	res, err := c.AppendTurn(ctx, t1.ID, client.TurnAppend{Records: []client.RecordRef{
		{RecordID: fact.ID},
		{RecordInput: client.RecordInput{Type: "task.deliverable", AuthorID: "agent:bmo", Content: json.RawMessage(`{"summary":"one"}`)}},
	}})
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	if len(res.Records) != 2 || res.Records[0].ID != fact.ID || res.TurnID != t1.ID || len(res.OutputRecordIDs) != 2 {
		t.Fatalf("append: got %+v, want the fact then a new deliverable", res)
	}
	closed1, err := c.CloseTurn(ctx, t1.ID, client.TurnClose{Status: client.TurnComplete})
	if err != nil {
		t.Fatalf("close: %v", err)
	}
	if closed1.State != client.TurnComplete || closed1.OutputLedgerID == nil || closed1.HeadHash == nil {
		t.Fatalf("close: got %+v", closed1)
	}

	t2 := open("second")
	if _, err := c.OpenTurn(ctx, s.ID, client.TurnOpenInput{Instruction: &client.RecordInput{Type: "task.instruction", AuthorID: "user:oles", Content: json.RawMessage(`"third"`)}}); err == nil {
		t.Fatal("second open turn: got nil, want conflict")
	} else {
		wantCode(t, err, client.EConflict)
	}

	t.Run("ClaimAndEpochs", func(t *testing.T) {
		lease, err := c.ClaimTurn(ctx, t2.ID, client.TurnClaim{Worker: "agent:hashi", LeaseSeconds: 60})
		if err != nil {
			t.Fatal(err)
		}
		if lease.Epoch < 1 || lease.LeaseExpiresAt == "" {
			t.Fatalf("got %+v, want an epoch and a lease", lease)
		}
		_, err = c.ClaimTurn(ctx, t2.ID, client.TurnClaim{Worker: "agent:other", LeaseSeconds: 60})
		wantCode(t, err, client.EConflict)
		renewed, err := c.RenewTurn(ctx, t2.ID, client.TurnRenew{Epoch: lease.Epoch, LeaseSeconds: 120})
		if err != nil || renewed.Epoch != lease.Epoch {
			t.Fatalf("renew: got %+v, %v", renewed, err)
		}
		stale := lease.Epoch - 1
		_, err = c.AppendTurn(ctx, t2.ID, client.TurnAppend{Epoch: &stale, Records: []client.RecordRef{{RecordID: fact.ID}}})
		wantCode(t, err, client.EConflict)
		if _, err := c.AppendTurn(ctx, t2.ID, client.TurnAppend{Epoch: &lease.Epoch, Records: []client.RecordRef{{RecordID: fact.ID}}}); err != nil {
			t.Fatalf("append with the epoch: %v", err)
		}
		got, err := c.GetTurn(ctx, t2.ID)
		if err != nil || got.State != client.TurnOpen || !slices.Equal(got.OutputRecordIDs, []string{fact.ID}) {
			t.Fatalf("get turn: got %+v, %v", got, err)
		}
		if _, err := c.CloseTurn(ctx, t2.ID, client.TurnClose{Epoch: &lease.Epoch, Status: client.TurnFailed}); err != nil {
			t.Fatalf("close with the epoch: %v", err)
		}
		p, err := c.ListTurns(ctx, client.TurnListOptions{SessionID: s.ID})
		if err != nil || len(p.Turns) != 2 {
			t.Fatalf("list turns: got %+v, %v", p, err)
		}
		p, err = c.ListTurns(ctx, client.TurnListOptions{SessionID: s.ID, State: client.TurnFailed})
		if err != nil || len(p.Turns) != 1 || p.Turns[0].ID != t2.ID {
			t.Errorf("list failed turns: got %+v, %v", p, err)
		}
		// turn.complete says how each turn ended.
		ev, err := c.Events(ctx, client.EventQuery{Types: []string{"turn.complete"}})
		if err != nil {
			t.Fatal(err)
		}
		var ends []string
		for _, e := range ev.Events {
			ends = append(ends, e.Refs["turn_id"]+" "+e.Refs["status"])
		}
		if want := []string{t1.ID + " " + client.TurnComplete, t2.ID + " " + client.TurnFailed}; !slices.Equal(ends, want) {
			t.Errorf("turn.complete events: got %v, want %v", ends, want)
		}
	})

	head, err := c.GetSession(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("LogReflogVerify", func(t *testing.T) {
		log, err := c.SessionLog(ctx, s.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(log) != 4 || log[0].ID != *head.HeadLedgerID || log[3].ID != t1.ContextLedgerID {
			t.Errorf("log: got %d ledgers, want 4 from the head to the first context", len(log))
		}
		if short, err := c.SessionLog(ctx, s.ID, 1); err != nil || len(short) != 1 {
			t.Errorf("log limit 1: got %d, %v", len(short), err)
		}
		rl, err := c.Reflog(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(rl) != 4 || rl[0].From != nil || rl[3].To != *head.HeadLedgerID {
			t.Errorf("reflog: got %+v, want 4 moves from none to the head", rl)
		}
		info, err := c.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i := range rl {
			if err := client.VerifyHeadSignature(s.ID, &rl[i], info.PublicKey); err != nil {
				t.Errorf("reflog %d: %v", rl[i].Seq, err)
			}
		}
		v, err := c.VerifySession(ctx, s.ID, *closed1.HeadHash)
		if err != nil {
			t.Fatal(err)
		}
		if !v.OK || v.LedgersChecked != 4 || v.ExpectHeadHashFound == nil || !*v.ExpectHeadHashFound {
			t.Errorf("verify: got %+v, want ok over 4 ledgers, the expected hash found", v)
		}
	})

	t.Run("MoveHead", func(t *testing.T) {
		// Back to the first output, then a stale compare-and-swap.
		moved, err := c.MoveHead(ctx, s.ID, client.HeadMove{LedgerID: *closed1.OutputLedgerID, ExpectedHead: head.HeadLedgerID, Reason: "undo"})
		if err != nil {
			t.Fatal(err)
		}
		if *moved.HeadLedgerID != *closed1.OutputLedgerID || *moved.HeadHash != *closed1.HeadHash {
			t.Errorf("got head %s, want %s", *moved.HeadLedgerID, *closed1.OutputLedgerID)
		}
		_, err = c.MoveHead(ctx, s.ID, client.HeadMove{LedgerID: *head.HeadLedgerID, ExpectedHead: head.HeadLedgerID})
		e := wantCode(t, err, client.EConflict)
		if e.Details["actual_head"] != *closed1.OutputLedgerID {
			t.Errorf("got details %v, want actual_head %s", e.Details, *closed1.OutputLedgerID)
		}
		_, err = c.MoveHead(ctx, s.ID, client.HeadMove{LedgerID: *head.HeadLedgerID})
		wantCode(t, err, client.EConflict)
	})

	t.Run("Fork", func(t *testing.T) {
		f, err := c.CreateSession(ctx, client.SessionInput{Project: "hashi", Name: "fork", Scope: "other", FromLedgerID: t1.ContextLedgerID})
		if err != nil {
			t.Fatal(err)
		}
		if f.Scope != "other" || f.HeadLedgerID == nil || *f.HeadLedgerID != t1.ContextLedgerID {
			t.Errorf("got %+v, want scope other and head %s", f, t1.ContextLedgerID)
		}
	})

	t.Run("Ancestry", func(t *testing.T) {
		// A merge of the session's last output with a ledger of its own.
		root, err := c.CreateLedger(ctx, client.LedgerInput{Label: "root", RecordIDs: []string{fact.ID}})
		if err != nil {
			t.Fatal(err)
		}
		merge, err := c.CreateLedger(ctx, client.LedgerInput{Label: "merge", ParentIDs: []string{*head.HeadLedgerID, root.ID}})
		if err != nil {
			t.Fatal(err)
		}
		ls, err := c.Ancestry(ctx, merge.ID)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, l := range ls {
			ids = append(ids, l.ID)
		}
		want := []string{t1.ContextLedgerID, *closed1.OutputLedgerID, t2.ContextLedgerID, *head.HeadLedgerID, root.ID, merge.ID}
		if !slices.Equal(ids, want) {
			t.Errorf("got %q, want parents first %q", ids, want)
		}
		_, err = c.Ancestry(ctx, "0193a000-0000-7000-8000-000000000000")
		wantCode(t, err, client.ENotFound)
	})
}

func TestE2E_IdempotencyKey(t *testing.T) {
	t.Parallel()
	c, ctx := newClient(t)
	s, err := c.CreateSession(client.WithIdempotencyKey(ctx, "create-1"), client.SessionInput{Project: "p", Name: "n"})
	if err != nil {
		t.Fatal(err)
	}
	var raw1, raw2 json.RawMessage
	again, err := c.CreateSession(client.WithRawResponse(client.WithIdempotencyKey(ctx, "create-1"), &raw1), client.SessionInput{Project: "p", Name: "n"})
	if err != nil {
		t.Fatalf("same key: got %v, want the first answer", err)
	}
	if again.ID != s.ID {
		t.Errorf("same key: got session %s, want %s", again.ID, s.ID)
	}
	in := client.TurnOpenInput{Instruction: &client.RecordInput{Type: "task.instruction", AuthorID: "user:oles", Content: json.RawMessage(`"go"`)}}
	kctx := client.WithIdempotencyKey(ctx, "open-1")
	t1, err := c.OpenTurn(client.WithRawResponse(kctx, &raw1), s.ID, in)
	if err != nil {
		t.Fatal(err)
	}
	t2, err := c.OpenTurn(client.WithRawResponse(kctx, &raw2), s.ID, in)
	if err != nil {
		t.Fatalf("repeated open with the key: %v", err)
	}
	if t1.ID != t2.ID || string(raw1) != string(raw2) {
		t.Errorf("repeated open: got %s then %s, want the same answer", raw1, raw2)
	}
	// Without the key the repeat is a second open: conflict.
	_, err = c.OpenTurn(ctx, s.ID, in)
	wantCode(t, err, client.EConflict)
	turns, err := c.ListTurns(ctx, client.TurnListOptions{SessionID: s.ID})
	if err != nil || len(turns.Turns) != 1 {
		t.Errorf("got %d turns, %v, want 1", len(turns.Turns), err)
	}
}

func TestE2E_Import(t *testing.T) {
	t.Parallel()
	src, ctx := newClient(t)
	dst := client.New(kuradtest.Start(t))
	a := mustPut(t, src, ctx, "task.instruction", "user:oles", `"x < y & z"`)
	b, err := src.PutRecord(ctx, client.RecordInput{Type: "agent.thought", AuthorID: "agent:bmo", Content: json.RawMessage(`{"n":1}`), Metadata: map[string]string{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	l1, err := src.CreateLedger(ctx, client.LedgerInput{Label: "one", RecordIDs: []string{a.ID}})
	if err != nil {
		t.Fatal(err)
	}
	l2, err := src.CreateLedger(ctx, client.LedgerInput{Label: "two", ParentIDs: []string{l1.ID}, RecordIDs: []string{b.ID, a.ID, b.ID}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := src.CreateSession(ctx, client.SessionInput{Project: "p", Name: "n", FromLedgerID: l2.ID})
	if err != nil {
		t.Fatal(err)
	}
	ls, err := src.Ancestry(ctx, l2.ID)
	if err != nil {
		t.Fatal(err)
	}
	in := client.ImportInput{Records: []client.Record{*a, *b}, Ledgers: ls, Sessions: []client.Session{*s}}
	res, err := dst.Import(ctx, in)
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	if res.Records != 2 || res.Ledgers != 2 || res.Sessions != 1 || res.Skipped != 0 {
		t.Errorf("got %+v, want 2 records, 2 ledgers, 1 session", res)
	}
	gotB, err := dst.GetRecord(ctx, b.ID)
	if err != nil || gotB.Seal != b.Seal || gotB.Hash != b.Hash || gotB.Metadata["k"] != "v" {
		t.Errorf("imported record: got %+v, %v, want %+v", gotB, err, b)
	}
	gotL, err := dst.GetLedger(ctx, l2.ID)
	if err != nil || gotL.Hash != l2.Hash || gotL.RootHash != l2.RootHash {
		t.Errorf("imported ledger: got %+v, %v, want %+v", gotL, err, l2)
	}
	v, err := dst.VerifyLedgerLocally(ctx, l2.ID, "")
	if err != nil || !v.OK || v.Hash != l2.Hash {
		t.Errorf("imported ledger verifies: got %+v, %v", v, err)
	}

	res, err = dst.Import(ctx, in)
	if err != nil || res.Skipped != 5 || res.Records+res.Ledgers+res.Sessions != 0 {
		t.Errorf("second import: got %+v, %v, want all 5 skipped", res, err)
	}

	// A record whose content no longer matches its hashes is refused, and
	// nothing of that request is written.
	c := mustPut(t, src, ctx, "agent.thought", "agent:bmo", `"honest"`)
	forged := *c
	forged.Content = json.RawMessage(`"forged"`)
	_, err = dst.Import(ctx, client.ImportInput{Records: []client.Record{forged}})
	wantCode(t, err, client.EInvalid)
	_, err = dst.GetRecord(ctx, c.ID)
	wantCode(t, err, client.ENotFound)
}
