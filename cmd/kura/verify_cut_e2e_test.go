package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/kuradtest"
)

// TestE2E_VerifyCatchesATailCut cuts a session's last turn off in kurad's
// database consistently (its two ledgers with their parent and reflog rows
// and the turn itself deleted, the head rewound): what is left verifies by
// every hash and signature. kura verify (kurad's check), kura verify
// --local (the log's newest head move proved here in the signed
// checkpoint) and the offline verification of an export made afterwards
// (which carries that head move) must each fail, naming log_head; with
// no state kept anywhere.
func TestE2E_VerifyCatchesATailCut(t *testing.T) {
	t.Parallel()
	d := kuradtest.StartMain(t, kuradtest.Options{Store: kuradtest.StoreSQLite})
	url := d.BaseURL()
	s, runs := driveSession(t, url, "hashi", "cut", 3)
	for _, args := range [][]string{{"verify", "--no-state", s.ID}, {"verify", "--no-state", "--local", s.ID}} {
		if out, errOut, code := runKura(t, url, nil, args...); code != exitOK || strings.Contains(out, "log_head") {
			t.Fatalf("%v before the cut: exit %d, %s %s", args, code, out, errOut)
		}
	}

	last, kept := runs[2].turn, runs[1].turn
	raw := d.RawDB(t)
	for _, q := range []string{
		"UPDATE sessions SET head_ledger_id = '" + *kept.OutputLedgerID + "', turn_count = turn_count - 1 WHERE id = '" + s.ID + "'",
		"DELETE FROM session_reflog WHERE session_id = '" + s.ID + "' AND to_ledger_id IN ('" + last.ContextLedgerID + "', '" + *last.OutputLedgerID + "')",
		"DELETE FROM turn_output WHERE turn_id = '" + last.ID + "'",
		"DELETE FROM turns WHERE id = '" + last.ID + "'",
		"DELETE FROM ledger_parents WHERE ledger_id IN ('" + last.ContextLedgerID + "', '" + *last.OutputLedgerID + "')",
		"DELETE FROM ledger_records WHERE ledger_id IN ('" + last.ContextLedgerID + "', '" + *last.OutputLedgerID + "')",
		"DELETE FROM ledgers WHERE id IN ('" + last.ContextLedgerID + "', '" + *last.OutputLedgerID + "')",
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	for _, args := range [][]string{{"verify", "--no-state", s.ID}, {"verify", "--no-state", "--local", s.ID}} {
		out, errOut, code := runKura(t, url, nil, args...)
		if code != exitFail || !strings.Contains(out, "log_head") || !strings.Contains(out, *last.OutputLedgerID) {
			t.Errorf("%v after the cut: exit %d, %s %s; want it to fail on log_head naming %s", args, code, out, errOut, *last.OutputLedgerID)
		}
	}

	var info client.Info
	kuraJSON(t, url, "", &info, "info")
	dir := t.TempDir()
	for _, format := range []string{"jsonl", "git"} {
		p := filepath.Join(dir, "export."+format)
		if _, errOut, code := runKura(t, url, nil, "export", s.ID, "--format", format, "--out", p); code != exitOK {
			t.Fatalf("export %s: exit %d, %s", format, code, errOut)
		}
		if b, _ := os.ReadFile(p); !strings.Contains(string(b), `"head":`) {
			t.Fatalf("export %s carries no head move of the log", format)
		}
		out, errOut, code := runKura(t, deadURL(t), nil, "verify", "--pubkey", info.PublicKey, p)
		if code != exitFail || !strings.Contains(out, "log_head") {
			t.Errorf("offline verify of the %s export after the cut: exit %d, %s %s; want it to fail on log_head", format, code, out, errOut)
		}
	}
}
