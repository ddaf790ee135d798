package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/kura-memory/kura/kurahash"
)

// kuraJSON runs a command with --json, fails the test unless it exits 0 and
// decodes what it printed into out.
func kuraJSON(t *testing.T, url string, stdin string, out any, args ...string) {
	t.Helper()
	stdout, stderr, code := runKura(t, url, strings.NewReader(stdin), append(args, "--json")...)
	if code != exitOK {
		t.Fatalf("kura %q: exit %d, stderr %q", args, code, stderr)
	}
	if err := json.Unmarshal([]byte(stdout), out); err != nil {
		t.Fatalf("kura %q printed %q: %v", args, stdout, err)
	}
}

// turnRun is what driveSession did in one turn.
type turnRun struct {
	turn    client.Turn // as closed
	records []client.Record
}

// driveSession opens, appends to and closes n turns on a new session through
// the CLI, using every way of naming the session and of passing records.
func driveSession(t *testing.T, url, project, name string, n int) (client.Session, []turnRun) {
	t.Helper()
	var s client.Session
	kuraJSON(t, url, "", &s, "session", "new", project, name)
	if s.HeadLedgerID != nil {
		t.Fatalf("new session: got head %v, want none", *s.HeadLedgerID)
	}
	refs := []string{s.ID, "session:" + s.ID, project + "/" + name}
	var runs []turnRun
	for i := 1; i <= n; i++ {
		var opened client.Turn
		kuraJSON(t, url, "", &opened, "turn", "open", refs[(i-1)%len(refs)], "--instruction", "step "+strconv.Itoa(i), "--author", "user:oles")
		if opened.State != client.TurnOpen || opened.SessionID != s.ID || opened.ContextLedgerID == "" {
			t.Fatalf("turn %d: got %+v, want an open turn of %s with a context ledger", i, opened, s.ID)
		}

		var run turnRun
		var a1 client.TurnAppendResult
		kuraJSON(t, url, "", &a1, "turn", "append", "--type", "agent.thought", opened.ID, "--author", "agent:bmo", "--content", `{"step":`+strconv.Itoa(i)+`}`)
		run.records = append(run.records, a1.Records...)
		var a2 client.TurnAppendResult
		batch := `[{"type":"tool.call","content":{"tool_name":"grep","arguments":{"q":"x<y"},"status":"success"},"author_id":"tool:grep"},
			{"type":"task.deliverable","content":{"summary":"step ` + strconv.Itoa(i) + ` done"},"author_id":"agent:bmo","metadata":{"turn":"` + strconv.Itoa(i) + `"}}]`
		kuraJSON(t, url, batch, &a2, "turn", "append", opened.ID, "-")
		run.records = append(run.records, a2.Records...)
		if len(a1.Records) != 1 || len(a2.Records) != 2 || len(a2.OutputRecordIDs) != 3 {
			t.Fatalf("turn %d: appended %d then %d records, %d output ids, want 1, 2 and 3", i, len(a1.Records), len(a2.Records), len(a2.OutputRecordIDs))
		}

		kuraJSON(t, url, "", &run.turn, "turn", "close", opened.ID)
		if run.turn.State != client.TurnComplete || run.turn.OutputLedgerID == nil || run.turn.HeadHash == nil {
			t.Fatalf("turn %d: closed as %+v, want complete with an output ledger and head hash", i, run.turn)
		}
		runs = append(runs, run)
	}
	kuraJSON(t, url, "", &s, "session", "show", s.ID)
	return s, runs
}

func TestE2E_SessionTurns(t *testing.T) {
	t.Parallel()
	url := kuradtest.Start(t)
	s, runs := driveSession(t, url, "hashi", "morning", 3)
	last := runs[len(runs)-1].turn
	if s.HeadLedgerID == nil || *s.HeadLedgerID != *last.OutputLedgerID || *s.HeadHash != *last.HeadHash {
		t.Fatalf("session head %v, want the last output ledger %s", s.HeadLedgerID, *last.OutputLedgerID)
	}
	c := client.New(url)
	ctx := t.Context()

	// The chain, newest first: out3 ctx3 out2 ctx2 out1 ctx1.
	var wantChain []string
	for i := len(runs) - 1; i >= 0; i-- {
		wantChain = append(wantChain, *runs[i].turn.OutputLedgerID, runs[i].turn.ContextLedgerID)
	}

	t.Run("Log", func(t *testing.T) {
		out, errOut, code := runKura(t, url, nil, "log", s.ID)
		if code != exitOK {
			t.Fatalf("got exit %d, stderr %q", code, errOut)
		}
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != 6 {
			t.Fatalf("got %d lines, want 6:\n%s", len(lines), out)
		}
		for i, line := range lines {
			if f := strings.Fields(line); len(f) < 4 || f[0] != wantChain[i] {
				t.Errorf("line %d: got %q, want ledger %s first", i, line, wantChain[i])
			}
		}
		if !strings.Contains(lines[0], "3 records") {
			t.Errorf("head line %q: want 3 records", lines[0])
		}

		var got struct{ Ledgers []client.Ledger }
		kuraJSON(t, url, "", &got, "log", "hashi/morning", "--limit", "2")
		if len(got.Ledgers) != 2 || got.Ledgers[0].ID != wantChain[0] || got.Ledgers[1].ID != wantChain[1] {
			t.Errorf("--limit 2: got %+v, want the 2 newest", got.Ledgers)
		}
	})

	t.Run("Verify", func(t *testing.T) {
		for _, args := range [][]string{
			{"verify", s.ID},
			{"verify", "session:" + s.ID, "--local"},
			{"verify", "hashi/morning", "--expect-head-hash", *runs[0].turn.HeadHash},
			{"verify", "--local", s.ID, "--expect-head-hash", *runs[0].turn.HeadHash},
		} {
			out, errOut, code := runKura(t, url, nil, args...)
			// Records of ledgers, shared ones counted in each: the first
			// context holds the instruction, each output 3 records, each
			// later context the instruction and the previous deliverable.
			if code != exitOK || !strings.HasPrefix(out, "OK session "+s.ID+": 6 ledgers, 14 records") {
				t.Errorf("%q: got exit %d, stdout %q, stderr %q, want OK over 6 ledgers", args, code, out, errOut)
			}
		}
		var v client.SessionVerification
		kuraJSON(t, url, "", &v, "verify", s.ID)
		if !v.OK || v.LedgersChecked != 6 || v.RecordsChecked != 14 || v.SessionID != s.ID {
			t.Errorf("got %+v, want ok over 6 ledgers", v)
		}

		// A hash the chain never held: exit 1, for kurad and locally.
		other := kurahash.SumHex([]byte("not a ledger"))
		for _, args := range [][]string{{"verify", s.ID, "--expect-head-hash", other}, {"verify", s.ID, "--expect-head-hash", other, "--local"}} {
			out, _, code := runKura(t, url, nil, args...)
			if code != exitFail || !strings.HasPrefix(out, "FAILED session ") {
				t.Errorf("%q: got exit %d, stdout %q, want 1 and FAILED", args, code, out)
			}
		}

		// A ledger id still verifies the ledger, asked of kurad.
		out, errOut, code := runKura(t, url, nil, "verify", *last.OutputLedgerID)
		if code != exitOK || !strings.HasPrefix(out, "OK ledger "+*last.OutputLedgerID) {
			t.Errorf("ledger: got exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		_, errOut, code = runKura(t, url, nil, "verify", "0193a000-0000-7000-8000-000000000000")
		if code != exitFail || !strings.Contains(errOut, "not_found") {
			t.Errorf("unknown id: got exit %d, stderr %q, want not_found", code, errOut)
		}
		_, errOut, code = runKura(t, url, nil, "verify", "ledger:"+*last.OutputLedgerID, "--expect-head-hash", other)
		if code != exitUsage || !strings.Contains(errOut, "applies to sessions") {
			t.Errorf("ledger with --expect-head-hash: got exit %d, stderr %q, want a usage error", code, errOut)
		}
	})

	t.Run("ShowAndList", func(t *testing.T) {
		out, errOut, code := runKura(t, url, nil, "turn", "show", last.ID)
		if code != exitOK || !strings.Contains(out, "turn "+last.ID+": complete") || !strings.Contains(out, *last.OutputLedgerID) {
			t.Errorf("turn show: got exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		out, _, code = runKura(t, url, nil, "session", "show", "hashi/morning")
		if code != exitOK || !strings.Contains(out, *last.HeadHash) {
			t.Errorf("session show: got exit %d, stdout %q, want the head hash", code, out)
		}
		out, _, code = runKura(t, url, nil, "session", "list", "--project", "hashi")
		if code != exitOK || !strings.Contains(out, s.ID+"  hashi/morning") {
			t.Errorf("session list: got exit %d, stdout %q", code, out)
		}
		var turns struct{ Turns []client.Turn }
		kuraJSON(t, url, "", &turns, "turn", "list", "--session", "hashi/morning", "--state", "complete")
		if len(turns.Turns) != 3 {
			t.Errorf("turn list: got %d turns, want 3", len(turns.Turns))
		}
		var reflog struct{ Reflog []client.ReflogEntry }
		kuraJSON(t, url, "", &reflog, "session", "reflog", s.ID)
		if n := len(reflog.Reflog); n != 6 || reflog.Reflog[n-1].To != *last.OutputLedgerID {
			t.Errorf("reflog: got %+v, want 6 moves ending at the head", reflog.Reflog)
		}
	})

	t.Run("ExportGit", func(t *testing.T) {
		stream, errOut, code := runKura(t, url, nil, "export", s.ID, "--format=git")
		if code != exitOK {
			t.Fatalf("got exit %d, stderr %q", code, errOut)
		}
		dir := t.TempDir()
		git(t, dir, "", "init", "-q", "--bare")
		git(t, dir, stream, "fast-import", "--quiet")
		git(t, dir, "", "fsck", "--strict")
		log := git(t, dir, "", "log", "--oneline", "morning")
		if n := len(strings.Split(strings.TrimSpace(log), "\n")); n != 6 {
			t.Errorf("git log: got %d commits, want 6:\n%s", n, log)
		}
		// The tip is the head ledger: its ledger.json and one file a record.
		var l client.Ledger
		if err := json.Unmarshal([]byte(git(t, dir, "", "show", "morning:ledger.json")), &l); err != nil {
			t.Fatal(err)
		}
		if l.ID != *s.HeadLedgerID || l.Hash != *s.HeadHash {
			t.Errorf("tip ledger.json: got %s %s, want the head %s %s", l.ID, l.Hash, *s.HeadLedgerID, *s.HeadHash)
		}
		files := strings.Fields(git(t, dir, "", "ls-tree", "-r", "--name-only", "morning"))
		want := []string{"ledger.json"}
		for _, id := range l.RecordIDs {
			want = append(want, "records/"+id+".json")
		}
		slices.Sort(want)
		want = slices.Compact(want)
		if !slices.Equal(files, want) {
			t.Errorf("tip tree: got %q, want %q", files, want)
		}
		rec, err := c.GetRecord(ctx, l.RecordIDs[0])
		if err != nil {
			t.Fatal(err)
		}
		wantJSON, _ := canonicalJSON(rec)
		if got := git(t, dir, "", "show", "morning:records/"+rec.ID+".json"); got != string(wantJSON) {
			t.Errorf("record file: got %s, want %s", got, wantJSON)
		}
		secs, err := gitTime(l.CreatedAt)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(git(t, dir, "", "log", "-1", "--format=%ct %cn <%ce>", "morning")); got != strconv.FormatInt(secs, 10)+" kura <kura@localhost>" {
			t.Errorf("committer: got %q, want the ledger's time %d and kura", got, secs)
		}
		msg := git(t, dir, "", "log", "-1", "--format=%B", "morning")
		if !strings.Contains(msg, "ledger: "+l.ID) || !strings.Contains(msg, "root: "+l.RootHash) {
			t.Errorf("commit message %q: want the ledger id and root", msg)
		}
		// The same session exports to the same stream.
		again, _, _ := runKura(t, url, nil, "export", "--format", "git", "hashi/morning")
		if again != stream {
			t.Error("a second export differs from the first")
		}
	})

	t.Run("ExportJSONLImport", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "morning.jsonl")
		out, errOut, code := runKura(t, url, nil, "export", s.ID, "--format=jsonl", "--out", file)
		if code != exitOK || !strings.Contains(out, "exported session "+s.ID) {
			t.Fatalf("got exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		if !strings.HasPrefix(lines[0], `{"kind":"session","id":"`+s.ID+`"`) {
			t.Errorf("first line %q, want the session", lines[0])
		}

		url2 := kuradtest.Start(t)
		c2 := client.New(url2)
		out, errOut, code = runKura(t, url2, nil, "import", file)
		if code != exitOK || !strings.Contains(out, "1 session") {
			t.Fatalf("import: got exit %d, stdout %q, stderr %q", code, out, errOut)
		}

		var records, ledgers int
		d := newJSONLReader(bytes.NewReader(data))
		for {
			it, err := d.Next()
			if err != nil {
				break
			}
			switch it.Kind {
			case "record":
				records++
				got, err := c2.GetRecord(ctx, it.ID)
				if err != nil {
					t.Fatalf("record %s on the second kurad: %v", it.ID, err)
				}
				want, err := c.GetRecord(ctx, it.ID)
				if err != nil {
					t.Fatal(err)
				}
				if got.Hash != want.Hash || got.ContentHash != want.ContentHash || got.Seal != want.Seal || got.CreatedAt != want.CreatedAt || !bytes.Equal(got.Content, want.Content) {
					t.Errorf("record %s: got %+v, want %+v", it.ID, got, want)
				}
			case "ledger":
				ledgers++
				got, err := c2.GetLedger(ctx, it.ID)
				if err != nil {
					t.Fatalf("ledger %s on the second kurad: %v", it.ID, err)
				}
				want, err := c.GetLedger(ctx, it.ID)
				if err != nil {
					t.Fatal(err)
				}
				if got.Hash != want.Hash || got.RootHash != want.RootHash || !slices.Equal(got.RecordIDs, want.RecordIDs) || !slices.Equal(got.ParentIDs, want.ParentIDs) {
					t.Errorf("ledger %s: got %+v, want %+v", it.ID, got, want)
				}
			}
		}
		if ledgers != len(wantChain) || records == 0 {
			t.Errorf("export held %d ledgers and %d records, want %d ledgers", ledgers, records, len(wantChain))
		}
		got, err := c2.GetSession(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != "morning" || got.HeadLedgerID == nil || *got.HeadLedgerID != *s.HeadLedgerID || got.HeadHash == nil || *got.HeadHash != *s.HeadHash {
			t.Errorf("imported session: got %+v, want head %s", got, *s.HeadLedgerID)
		}
		v, err := c2.VerifySession(ctx, s.ID, *runs[0].turn.HeadHash)
		if err != nil || !v.OK {
			t.Errorf("imported session verify: got %+v, %v, want ok", v, err)
		}

		// Importing again writes nothing: everything is already there.
		var res client.ImportResult
		kuraJSON(t, url2, string(data), &res, "import", "-")
		if res.Records != 0 || res.Ledgers != 0 || res.Sessions != 0 || res.Skipped != records+ledgers+1 {
			t.Errorf("second import: got %+v, want everything skipped", res)
		}
	})

	t.Run("TurnErrors", func(t *testing.T) {
		_, errOut, code := runKura(t, url, nil, "turn", "append", last.ID, "--type", "agent.thought", "--author", "agent:bmo", "--content", "late")
		if code != exitFail || !strings.HasPrefix(errOut, "kura: conflict: ") {
			t.Errorf("append to a closed turn: got exit %d, stderr %q, want the server's conflict", code, errOut)
		}
		var opened client.Turn
		kuraJSON(t, url, "", &opened, "turn", "open", s.ID, "--instruction", "one more", "--idempotency-key", "open-4")
		var again client.Turn
		kuraJSON(t, url, "", &again, "turn", "open", s.ID, "--instruction", "one more", "--idempotency-key", "open-4")
		if again.ID != opened.ID {
			t.Errorf("same idempotency key: got turn %s, want the first answer %s", again.ID, opened.ID)
		}
		_, errOut, code = runKura(t, url, nil, "turn", "open", s.ID, "--instruction", "one more")
		if code != exitFail || !strings.HasPrefix(errOut, "kura: conflict: ") {
			t.Errorf("second open turn: got exit %d, stderr %q, want conflict", code, errOut)
		}
		// Without --worker the claim is the caller's own (here user:local).
		if out := kuraOK(t, url, "", "turn", "claim", opened.ID); !strings.Contains(out, "for user:local: epoch 1") {
			t.Errorf("turn claim without --worker: %q, want a claim for user:local", out)
		}
		var closed client.Turn
		kuraJSON(t, url, "", &closed, "turn", "close", opened.ID, "--status", "failed", "--epoch", "1")
		if closed.State != client.TurnFailed {
			t.Errorf("got state %s, want failed", closed.State)
		}
	})
}

// git runs git in dir and returns its stdout; a missing git fails the test
// (the export tests need it), it does not skip it.
func git(t *testing.T, dir, stdin string, args ...string) string {
	t.Helper()
	path, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("git is required to check the git export and was not found: %v", err)
	}
	cmd := exec.Command(path, args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	// A user's or the machine's git configuration must not change the result.
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+dir)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("git %q: %v\n%s", args, err, errOut.String())
	}
	return out.String()
}

// TestE2E_ExportMerge exports a session whose head is a merge: a ledger with
// two parents, the previous head and a second root. Every reachable ledger
// must be exported, parents first, whatever parent reaches it.
func TestE2E_ExportMerge(t *testing.T) {
	t.Parallel()
	url := kuradtest.Start(t)
	s, runs := driveSession(t, url, "hashi", "merged", 2)
	c := client.New(url)
	ctx := t.Context()
	r, err := c.PutRecord(ctx, client.RecordInput{Type: "sys.context", AuthorID: "sys:test", Content: json.RawMessage(`"from elsewhere"`)})
	if err != nil {
		t.Fatal(err)
	}
	root, err := c.CreateLedger(ctx, client.LedgerInput{Label: "elsewhere", RecordIDs: []string{r.ID}})
	if err != nil {
		t.Fatal(err)
	}
	merge, err := c.CreateLedger(ctx, client.LedgerInput{Label: "merge", ParentIDs: []string{*s.HeadLedgerID, root.ID}, RecordIDs: []string{r.ID, runs[1].records[0].ID}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.MoveHead(ctx, s.ID, client.HeadMove{LedgerID: merge.ID, ExpectedHead: s.HeadLedgerID, Reason: "merge"}); err != nil {
		t.Fatal(err)
	}

	stream, errOut, code := runKura(t, url, nil, "export", "hashi/merged", "--format=git")
	if code != exitOK {
		t.Fatalf("got exit %d, stderr %q", code, errOut)
	}
	dir := t.TempDir()
	git(t, dir, "", "init", "-q", "--bare")
	git(t, dir, stream, "fast-import", "--quiet")
	git(t, dir, "", "fsck", "--strict")
	// 2 turns make 4 ledgers, then the second root and the merge.
	if got := strings.TrimSpace(git(t, dir, "", "rev-list", "--count", "merged")); got != "6" {
		t.Errorf("got %s commits, want 6", got)
	}
	if got := strings.TrimSpace(git(t, dir, "", "rev-list", "--count", "--first-parent", "merged")); got != "5" {
		t.Errorf("got %s first-parent commits, want 5", got)
	}
	if got := strings.Fields(git(t, dir, "", "log", "-1", "--format=%P", "merged")); len(got) != 2 {
		t.Errorf("head commit has parents %q, want 2", got)
	}
	if got := git(t, dir, "", "log", "-1", "--format=%s", "merged^2"); strings.TrimSpace(got) != "elsewhere" {
		t.Errorf("second parent: got %q, want the other root", got)
	}

	// The jsonl export carries the same 6 ledgers, parents before children.
	out, _, code := runKura(t, url, nil, "export", s.ID, "--format", "jsonl")
	if code != exitOK {
		t.Fatalf("jsonl: exit %d", code)
	}
	done := map[string]bool{}
	d := newJSONLReader(strings.NewReader(out))
	for {
		it, err := d.Next()
		if err != nil {
			break
		}
		switch it.Kind {
		case "record":
			done[it.ID] = true
		case "ledger":
			for _, id := range append(slices.Clone(it.Ledger.ParentIDs), it.Ledger.RecordIDs...) {
				if !done[id] {
					t.Errorf("ledger %s comes before its parent or record %s", it.ID, id)
				}
			}
			done[it.ID] = true
		}
	}
	for _, id := range []string{root.ID, merge.ID, runs[0].turn.ContextLedgerID} {
		if !done[id] {
			t.Errorf("ledger %s is not in the export", id)
		}
	}
}
