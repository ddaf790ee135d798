package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/kura-memory/kura/internal/testwait"
)

// These tests walk the CLI the way a newcomer does: a version check, a
// follow of the event log, a ledger made from the command line, and the
// mistakes people make on the way.

// TestE2E_VersionStamped builds kura as the Makefile does, with the version
// stamped by -ldflags, and checks that --version and version print it and
// exit 0 with no kurad anywhere.
func TestE2E_VersionStamped(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "kura")
	build := exec.Command("go", "build", "-ldflags", "-X main.version=v9.8.7-test", "-o", bin, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		t.Fatalf("build kura: %v", err)
	}
	for _, args := range [][]string{{"--version"}, {"version"}, {"-version"}} {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "KURA_URL="+deadURL(t))
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), "kura v9.8.7-test ") {
			t.Errorf("kura %s: got %q (%v), want \"kura v9.8.7-test (go...)\" and exit 0", args[0], out, err)
		}
	}
}

// TestE2E_EventsFollowFromNow: --follow without --after prints what is
// committed from now on, not the history; --after 0 still replays it.
func TestE2E_EventsFollowFromNow(t *testing.T) {
	t.Parallel()
	url := kuradtest.Start(t)
	c := client.New(url)
	old := putRecords(t, c, "alpha", 3)
	info, err := c.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}

	f := startFollow(url, "--json", "--type", "record.written")
	// The notice comes once the start seq is read: what is written after it
	// has a greater seq, so it is printed whether or not the stream is up.
	notice := "following events after seq " + strconv.FormatInt(info.LastEventSeq, 10) + " (--after 0 replays them from the start)\n"
	testwait.For(t, 30*time.Second, "the follow notice", func() bool { return f.errOut.String() == notice })
	want := putRecords(t, c, "alpha", 2)
	lines := f.waitLines(t, 2)
	f.stop(t)
	if got := recordIDs(t, lines); !slices.Equal(got, want) {
		t.Errorf("got %v, want only the records written while following %v", got, want)
	}

	t.Run("AfterZeroReplays", func(t *testing.T) {
		f := startFollow(url, "--json", "--type", "record.written", "--after", "0")
		lines := f.waitLines(t, 5)
		f.stop(t)
		if got := recordIDs(t, lines); !slices.Equal(got, append(slices.Clone(old), want...)) {
			t.Errorf("got %v, want every record from the start", got)
		}
		if f.errOut.String() != "" {
			t.Errorf("got stderr %q, want no notice when --after is given", f.errOut.String())
		}
	})
}

// TestE2E_LedgerNew runs the README walkthrough's ledger step from the CLI:
// records, a ledger over them (flags before and after the ids), a child
// with --parent, an empty ledger, each verified by kurad.
func TestE2E_LedgerNew(t *testing.T) {
	t.Parallel()
	url := kuradtest.Start(t)
	r1 := putJSON(t, url, "", "--type", "task.instruction", "--author", "user:oles", "--content", "Summarise the morning session")
	r2 := putJSON(t, url, "", "--type", "agent.thought", "--author", "agent:bmo", "--content", `{"text":"REST feels clean"}`)
	r3 := putJSON(t, url, "", "--type", "task.deliverable", "--author", "agent:bmo", "--content", `{"summary":"three decisions"}`)

	var base client.Ledger
	kuraJSON(t, url, "", &base, "ledger", "new", "--label", "morning", r1.ID, r2.ID, "record:"+r3.ID)
	if base.Label != "morning" || !slices.Equal(base.RecordIDs, []string{r1.ID, r2.ID, r3.ID}) || len(base.ParentIDs) != 0 || base.Signature == "" {
		t.Fatalf("got %+v, want a signed ledger labelled morning over the three records in order", base)
	}
	if _, errOut, code := runKura(t, url, nil, "verify", base.ID); code != exitOK {
		t.Errorf("verify %s: exit %d, stderr %q", base.ID, code, errOut)
	}

	t.Run("HumanFlagsAfterIDsWithParents", func(t *testing.T) {
		other, err := client.New(url).CreateLedger(t.Context(), client.LedgerInput{Label: "other", RecordIDs: []string{r2.ID}})
		if err != nil {
			t.Fatal(err)
		}
		out, errOut, code := runKura(t, url, nil, "ledger", "new", r3.ID, r1.ID, "--label", "afternoon", "--parent", base.ID, "--parent=ledger:"+other.ID)
		if code != exitOK {
			t.Fatalf("got exit %d, stderr %q", code, errOut)
		}
		first, _, _ := strings.Cut(out, "\n")
		id, ok := strings.CutPrefix(first, "created ledger ")
		if !ok {
			t.Fatalf("got %q, want \"created ledger <id>\" first", out)
		}
		for _, want := range []string{"label      afternoon", "parents    " + base.ID + " " + other.ID, "records    2", "  0  " + r3.ID, "  1  " + r1.ID} {
			if !strings.Contains(out, want) {
				t.Errorf("got %q, want it to contain %q", out, want)
			}
		}
		l, err := client.New(url).GetLedger(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if l.Label != "afternoon" || !slices.Equal(l.ParentIDs, []string{base.ID, other.ID}) || !slices.Equal(l.RecordIDs, []string{r3.ID, r1.ID}) {
			t.Errorf("got %+v, want the ledger the command printed", l)
		}
	})

	t.Run("NoRecords", func(t *testing.T) {
		// No record ids is an empty ledger, as POST /v1/ledgers has it:
		// record_ids [] and the root of no leaves (SHA-256 of nothing).
		var raw map[string]any
		kuraJSON(t, url, "", &raw, "ledger", "new", "--label", "start")
		const emptyRoot = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
		if ids, ok := raw["record_ids"].([]any); !ok || len(ids) != 0 || raw["record_count"] != 0.0 || raw["root_hash"] != emptyRoot || raw["label"] != "start" {
			t.Fatalf("got %v, want an empty ledger labelled start", raw)
		}
		if _, errOut, code := runKura(t, url, nil, "verify", raw["id"].(string)); code != exitOK {
			t.Errorf("verify the empty ledger: exit %d, stderr %q", code, errOut)
		}
		// A merge adding no records: parents only, no label.
		out, errOut, code := runKura(t, url, nil, "ledger", "new", "--parent", base.ID, "--parent", raw["id"].(string))
		if code != exitOK {
			t.Fatalf("got exit %d, stderr %q", code, errOut)
		}
		for _, want := range []string{"parents    " + base.ID + " " + raw["id"].(string), "records    0"} {
			if !strings.Contains(out, want) {
				t.Errorf("got %q, want it to contain %q", out, want)
			}
		}
	})

	t.Run("UnknownRecord", func(t *testing.T) {
		before := lastSeq(t, client.New(url))
		_, errOut, code := runKura(t, url, nil, "ledger", "new", "--label", "x", r1.ID, "01a1fdca-0000-7000-8000-000000000000")
		if code != exitFail || !strings.HasPrefix(errOut, "kura: invalid_argument: ") {
			t.Errorf("got exit %d, stderr %q, want 1 and the server's invalid_argument", code, errOut)
		}
		if after := lastSeq(t, client.New(url)); after != before {
			t.Errorf("last seq moved from %d to %d, want nothing written", before, after)
		}
	})

	t.Run("ShowStillTakesAnID", func(t *testing.T) {
		var l client.Ledger
		kuraJSON(t, url, "", &l, "ledger", base.ID)
		if l.ID != base.ID {
			t.Errorf("got %+v, want ledger %s", l, base.ID)
		}
	})
}

// TestE2E_SessionCommandGivenALedger: "kura log <ledger-id>" (and the other
// commands that take a session) says the id is a ledger's and what to run,
// instead of a bare not_found; an id that is nothing stays not_found.
func TestE2E_SessionCommandGivenALedger(t *testing.T) {
	t.Parallel()
	url := kuradtest.Start(t)
	r := putJSON(t, url, "", "--type", "agent.thought", "--author", "agent:bmo", "--content", "1")
	l, err := client.New(url).CreateLedger(t.Context(), client.LedgerInput{Label: "l", RecordIDs: []string{r.ID}})
	if err != nil {
		t.Fatal(err)
	}
	hint := "kura ledger " + l.ID
	for name, args := range map[string][]string{
		"Log":           {"log", l.ID},
		"LogSessionRef": {"log", "session:" + l.ID},
		"SessionShow":   {"session", "show", l.ID},
		"SessionReflog": {"session", "reflog", l.ID},
		"Export":        {"export", l.ID, "--format=jsonl"},
	} {
		t.Run(name, func(t *testing.T) {
			_, errOut, code := runKura(t, url, nil, args...)
			if code != exitUsage || !strings.Contains(errOut, l.ID+" is a ledger, not a session") || !strings.Contains(errOut, hint) {
				t.Errorf("got exit %d, stderr %q, want 2 and a hint to run %q", code, errOut, hint)
			}
		})
	}
	t.Run("Nothing", func(t *testing.T) {
		_, errOut, code := runKura(t, url, nil, "log", "01a1fdca-0000-7000-8000-000000000000")
		if code != exitFail || !strings.HasPrefix(errOut, "kura: not_found: ") {
			t.Errorf("got exit %d, stderr %q, want 1 and not_found", code, errOut)
		}
	})
	t.Run("JSONLedgerUntouched", func(t *testing.T) {
		// The hint is for a mistake; the ledger itself still reads.
		var got json.RawMessage
		kuraJSON(t, url, "", &got, "ledger", l.ID)
	})
}
