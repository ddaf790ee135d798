package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/daemon"
	"github.com/kura-memory/kura/internal/kuradtest"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// runKuraEnv is runKura with more environment (KURA_STATE_DIR...).
func runKuraEnv(t *testing.T, baseURL string, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	get := func(k string) string {
		if k == "KURA_URL" {
			return baseURL
		}
		return env[k]
	}
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, strings.NewReader(""), &out, &errOut, get)
	return out.String(), errOut.String(), code
}

// writeLedger puts n records through the CLI and seals them in a ledger.
func writeLedger(t *testing.T, url, label string, n int) client.Ledger {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = putJSON(t, url, "", "--type", "agent.thought", "--author", "agent:bmo", "--content", fmt.Sprintf(`{"%s":%d}`, label, i)).ID
	}
	var l client.Ledger
	kuraJSON(t, url, "", &l, append([]string{"ledger", "new", "--label", label}, ids...)...)
	return l
}

type checkpointJSON struct {
	Origin     string   `json:"origin"`
	Size       int64    `json:"size"`
	Root       string   `json:"root"`
	Checkpoint string   `json:"checkpoint"`
	Others     []string `json:"other_signers"`
}

func TestE2E_LogCommands(t *testing.T) {
	t.Parallel()
	url := kuradtest.Start(t)
	ctx := t.Context()
	first := writeLedger(t, url, "first", 2)

	var cp checkpointJSON
	kuraJSON(t, url, "", &cp, "log", "checkpoint")
	if cp.Size < 3 || cp.Origin == "" {
		t.Fatalf("got %+v, want a checkpoint of the writes so far", cp)
	}
	// The checkpoint verifies with x/mod alone, against /v1/info's key.
	info, err := client.New(url).LogInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(info.VKey)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := note.Open([]byte(cp.Checkpoint), note.VerifierList(v)); err != nil || !strings.HasPrefix(n.Text, cp.Origin+"\n") {
		t.Fatalf("note.Open: %v", err)
	}
	oldFile := filepath.Join(t.TempDir(), "old.checkpoint")
	if err := os.WriteFile(oldFile, []byte(cp.Checkpoint), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runKura(t, url, nil, "log", "checkpoint")
	if code != exitOK || !strings.Contains(out, "verified against kurad's log key") || !strings.Contains(out, cp.Origin) {
		t.Errorf("human checkpoint: exit %d, %q %q", code, out, errOut)
	}

	second := writeLedger(t, url, "second", 3)

	t.Run("ProveSeq", func(t *testing.T) {
		out, errOut, code := runKura(t, url, nil, "log", "prove", "1")
		if code != exitOK || !strings.HasPrefix(out, "OK event 1 is in log "+cp.Origin) {
			t.Errorf("got exit %d, %q %q", code, out, errOut)
		}
		var got struct {
			OK       bool
			Seq      int64
			Size     int64
			Root     string
			LeafHash string `json:"leaf_hash"`
			Proof    []string
		}
		kuraJSON(t, url, "", &got, "log", "prove", "2")
		// Checked again here with tlog alone.
		root, _ := tlog.ParseHash(got.Root)
		lh, _ := tlog.ParseHash(got.LeafHash)
		proof, err := client.ParseProof(got.Proof)
		if err != nil || !got.OK || tlog.CheckRecord(proof, got.Size, root, got.Seq-1, lh) != nil {
			t.Errorf("got %+v (%v), want a proof tlog accepts", got, err)
		}
	})
	t.Run("ProveLedger", func(t *testing.T) {
		for _, l := range []client.Ledger{first, second} {
			out, errOut, code := runKura(t, url, nil, "log", "prove", "ledger:"+l.ID)
			if code != exitOK || !strings.HasPrefix(out, "OK ledger "+l.ID) {
				t.Errorf("got exit %d, %q %q", code, out, errOut)
			}
		}
		_, errOut, code := runKura(t, url, nil, "log", "prove", "ledger:0193a000-0000-7000-8000-000000000000")
		if code != exitFail || !strings.Contains(errOut, "not_found") {
			t.Errorf("unknown ledger: got exit %d, %q", code, errOut)
		}
	})
	t.Run("Consistency", func(t *testing.T) {
		out, errOut, code := runKura(t, url, nil, "log", "consistency", oldFile)
		if code != exitOK || !strings.HasPrefix(out, fmt.Sprintf("OK log %s: the tree of size %d is a prefix", cp.Origin, cp.Size)) {
			t.Errorf("file -> now: got exit %d, %q %q", code, out, errOut)
		}
		var got struct {
			Old, New int64
			Checked  bool
			OK       bool
		}
		kuraJSON(t, url, "", &got, "log", "consistency", oldFile)
		if !got.Checked || !got.OK || got.Old != cp.Size || got.New <= cp.Size {
			t.Errorf("got %+v, want checked and ok", got)
		}
		// A size alone has no signed root here: said, not claimed.
		out, _, code = runKura(t, url, nil, "log", "consistency", "1")
		if code != exitOK || !strings.HasPrefix(out, "NOT CHECKED") {
			t.Errorf("size only: got exit %d, %q", code, out)
		}
	})
	t.Run("Usage", func(t *testing.T) {
		for _, args := range [][]string{{"log", "prove"}, {"log", "prove", "0"}, {"log", "prove", "x"}, {"log", "consistency"}, {"log", "consistency", "/no/such/file"}, {"log", "checkpoint", "x"}} {
			if _, errOut, code := runKura(t, url, nil, args...); code != exitUsage {
				t.Errorf("%q: got exit %d, %q, want usage", args, code, errOut)
			}
		}
	})
	t.Run("SessionLogStillWorks", func(t *testing.T) {
		var s client.Session
		kuraJSON(t, url, "", &s, "session", "new", "hashi", "logcheck")
		if _, errOut, code := runKura(t, url, nil, "log", "hashi/logcheck"); code != exitOK {
			t.Errorf("kura log <session>: exit %d, %q", code, errOut)
		}
	})
}

// TestE2E_VerifyKeepsLogState runs the attack signatures cannot catch: an
// older copy of kurad's data directory put back, signed by the real key.
// A kura that kept the checkpoint it verified refuses the smaller tree.
func TestE2E_VerifyKeepsLogState(t *testing.T) {
	t.Parallel()
	if kuradtest.Store() == kuradtest.StorePostgres {
		t.Skip("rolls the store back by copying kura.db over it")
	}
	dataDir, keyDir, oldCopy := t.TempDir(), t.TempDir(), filepath.Join(t.TempDir(), "old")
	stateDir := t.TempDir()
	env := map[string]string{"KURA_STATE_DIR": stateDir}
	sameFiles := func(cfg *daemon.Config) {
		cfg.DataDir, cfg.KeyFile = dataDir, filepath.Join(keyDir, "kurad.key")
	}
	stop := func(d *kuradtest.Daemon) {
		ctx, cancel := context.WithTimeout(context.Background(), 30e9)
		defer cancel()
		if err := d.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	verify := func(url string, args ...string) (string, string, int) {
		return runKuraEnv(t, url, env, append([]string{"verify"}, args...)...)
	}

	d := kuradtest.StartMain(t, kuradtest.Options{Configure: sameFiles})
	l1 := writeLedger(t, d.BaseURL(), "before", 1)
	out, errOut, code := verify(d.BaseURL(), l1.ID)
	if code != exitOK || !strings.Contains(out, "pinned on first use and kept in "+stateDir) {
		t.Fatalf("first verify: exit %d, %q %q", code, out, errOut)
	}
	stop(d)
	kuradtest.CopyDataDir(t, dataDir, oldCopy) // the backup an attacker will put back

	d = kuradtest.StartMain(t, kuradtest.Options{Configure: sameFiles})
	writeLedger(t, d.BaseURL(), "after", 2)
	out, errOut, code = verify(d.BaseURL(), l1.ID)
	if code != exitOK || !strings.Contains(out, "is consistent with the one of size") {
		t.Fatalf("second verify: exit %d, %q %q", code, out, errOut)
	}
	var kept checkpointJSON
	kuraJSON(t, d.BaseURL(), "", &kept, "log", "checkpoint")
	if out, _, code := runKuraEnv(t, d.BaseURL(), env, "--json", "verify", l1.ID); code != exitOK || !json.Valid([]byte(out)) {
		t.Errorf("--json: exit %d, stdout must stay kurad's JSON: %q", code, out)
	}
	stop(d)

	// The rollback: the old copy back in place, same key, same origin.
	if err := os.RemoveAll(dataDir); err != nil {
		t.Fatal(err)
	}
	kuradtest.CopyDataDir(t, oldCopy, dataDir)
	d = kuradtest.StartMain(t, kuradtest.Options{Configure: sameFiles})
	// kurad alone sees nothing wrong: the ledger still verifies.
	if out, _, code := runKura(t, d.BaseURL(), nil, "verify", l1.ID, "--no-state"); code != exitOK {
		t.Fatalf("without kept state the rollback passes, as it must: exit %d, %q", code, out)
	}
	var now checkpointJSON
	kuraJSON(t, d.BaseURL(), "", &now, "log", "checkpoint")
	out, errOut, code = verify(d.BaseURL(), l1.ID)
	wantSizes := fmt.Sprintf("size %d, smaller than the %d verified before", now.Size, kept.Size)
	if code != exitFail || !strings.Contains(out, "FAILED log "+now.Origin) || !strings.Contains(out, wantSizes) {
		t.Errorf("after the rollback: got exit %d, %q %q, want FAILED naming %q", code, out, errOut, wantSizes)
	}
	// The kept checkpoint is not replaced by the smaller one.
	k, err := (&client.CheckpointState{Dir: stateDir}).Load(now.Origin)
	if err != nil || k.Checkpoint.Size != kept.Size {
		t.Errorf("kept state after the refusal: %+v %v, want size %d", k, err, kept.Size)
	}
	// And the session form fails the same way.
	var s client.Session
	kuraJSON(t, d.BaseURL(), "", &s, "session", "new", "hashi", "rollback")
	if _, _, code := verify(d.BaseURL(), s.ID); code != exitFail {
		t.Errorf("verify <session> after the rollback: exit %d, want %d", code, exitFail)
	}
}

// sessionWithLedgers makes a session whose head chain holds two ledgers.
func sessionWithLedgers(t *testing.T, url string) client.Session {
	t.Helper()
	s, _ := driveSession(t, url, "hashi", "exportlog", 2)
	return s
}

// editSessionLog rewrites the log member of a jsonl export's session line.
func editSessionLog(t *testing.T, export string, edit func(lg map[string]any)) string {
	t.Helper()
	lines := strings.Split(export, "\n")
	for i, ln := range lines {
		if !strings.HasPrefix(ln, `{"kind":"session"`) {
			continue
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(ln), &obj); err != nil {
			t.Fatal(err)
		}
		lg, _ := obj["log"].(map[string]any)
		if lg == nil {
			t.Fatalf("the session line has no log section: %s", ln)
		}
		edit(lg)
		if len(lg) == 0 {
			delete(obj, "log")
		}
		b, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		lines[i] = string(b)
	}
	return strings.Join(lines, "\n")
}

func TestE2E_ExportLogOffline(t *testing.T) {
	t.Parallel()
	url := kuradtest.Start(t)
	s := sessionWithLedgers(t, url)
	var info client.Info
	kuraJSON(t, url, "", &info, "info")
	dir := t.TempDir()
	exports := map[string]string{}
	for _, f := range []string{"jsonl", "git"} {
		p := filepath.Join(dir, "x."+f)
		if _, errOut, code := runKura(t, url, nil, "export", s.ID, "--format="+f, "--out", p); code != exitOK {
			t.Fatalf("export %s: %q", f, errOut)
		}
		b, _ := os.ReadFile(p)
		exports[f] = string(b)
	}
	offline := deadURL(t) // no kurad: the check uses the export and the key only
	verify := func(t *testing.T, content string, args ...string) (string, int) {
		t.Helper()
		p := filepath.Join(t.TempDir(), "e")
		os.WriteFile(p, []byte(content), 0o600)
		out, _, code := runKura(t, offline, nil, append([]string{"verify", "--pubkey", info.PublicKey, p}, args...)...)
		return out, code
	}
	for f, content := range exports {
		t.Run("OK/"+f, func(t *testing.T) {
			out, code := verify(t, content)
			if code != exitOK || !strings.Contains(out, "log: checkpoint ") || !strings.Contains(out, "proved included") || strings.Contains(out, "0 ledgers proved") {
				t.Errorf("got exit %d:\n%s", code, out)
			}
			var rep offlineReport
			out, _ = verify(t, content, "--json")
			if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Log == nil || !rep.Log.Checked || rep.Log.LedgersProved != rep.LedgersChecked {
				t.Errorf("got %s, want every ledger proved", out)
			}
		})
	}
	tests := []struct {
		name, want string
		edit       func(lg map[string]any)
	}{
		{"Checkpoint", "log_signature", func(lg map[string]any) {
			cp := lg["checkpoint"].(string)
			lines := strings.SplitN(cp, "\n", 3)
			lg["checkpoint"] = lines[0] + "\n" + lines[1] + "0\n" + lines[2]
		}},
		{"Leaf", "log_leaf", func(lg map[string]any) {
			in := lg["inclusions"].([]any)[0].(map[string]any)
			in["leaf"] = in["leaf"].(string)[4:]
		}},
		{"Proof", "log_proof", func(lg map[string]any) {
			for _, x := range lg["inclusions"].([]any) {
				in := x.(map[string]any)
				if p := in["proof"].([]any); len(p) > 0 {
					p[0] = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
					return
				}
			}
			t.Fatal("no proof to edit")
		}},
		{"Root", "log_root", func(lg map[string]any) {
			in := lg["inclusions"].([]any)[0].(map[string]any)
			in["size"] = in["size"].(float64) - 1
		}},
	}
	for _, tc := range tests {
		t.Run("Tampered/"+tc.name, func(t *testing.T) {
			out, code := verify(t, editSessionLog(t, exports["jsonl"], tc.edit))
			if code != exitFail || !strings.HasPrefix(out, "FAILED") || !strings.Contains(out, tc.want+": ") {
				t.Errorf("got exit %d:\n%s\nwant FAILED naming %s", code, out, tc.want)
			}
		})
	}
	t.Run("NoLogSectionStillVerifies", func(t *testing.T) {
		old := editSessionLog(t, exports["jsonl"], func(lg map[string]any) { clear(lg) })
		out, code := verify(t, old)
		if code != exitOK || !strings.Contains(out, "log: not checked") {
			t.Errorf("got exit %d:\n%s", code, out)
		}
		if out, code := verify(t, old, "--witness-key", info.PublicKey); code == exitOK {
			t.Errorf("a witness key with no log section: got exit %d:\n%s", code, out)
		}
	})
}

// TestE2E_VerifyFollowsKeyRotation: a kura that pinned the old key learns
// the new one from a checkpoint both keys signed (kurad with
// KURA_PREVIOUS_KEY_FILE), and refuses the new key without that overlap.
func TestE2E_VerifyFollowsKeyRotation(t *testing.T) {
	t.Parallel()
	dataDir, keyDir := t.TempDir(), t.TempDir()
	oldKey, newKey := filepath.Join(keyDir, "old.key"), filepath.Join(keyDir, "new.key")
	rotated, skipped := t.TempDir(), t.TempDir()
	stop := func(d *kuradtest.Daemon) {
		ctx, cancel := context.WithTimeout(context.Background(), 30e9)
		defer cancel()
		if err := d.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	start := func(key, previous string) *kuradtest.Daemon {
		return kuradtest.StartMain(t, kuradtest.Options{Configure: func(cfg *daemon.Config) {
			cfg.DataDir, cfg.KeyFile, cfg.PreviousKeyFile = dataDir, key, previous
		}})
	}
	verify := func(url, stateDir, id string) (string, int) {
		out, errOut, code := runKuraEnv(t, url, map[string]string{"KURA_STATE_DIR": stateDir}, "verify", "ledger:"+id)
		return out + errOut, code
	}

	d := start(oldKey, "")
	l := writeLedger(t, d.BaseURL(), "old", 1)
	for _, dir := range []string{rotated, skipped} {
		if out, code := verify(d.BaseURL(), dir, l.ID); code != exitOK {
			t.Fatalf("pin the old key: exit %d, %s", code, out)
		}
	}
	stop(d)

	// The rotation: the new key signs, the old one co-signs.
	// Each verify names a ledger the current key signed: the log check is
	// what this test is about.
	d = start(newKey, oldKey)
	l = writeLedger(t, d.BaseURL(), "rotating", 1)
	out, code := verify(d.BaseURL(), rotated, l.ID)
	if code != exitOK || !strings.Contains(out, "log key rotated") {
		t.Fatalf("during the rotation: exit %d, %s, want the new key pinned", code, out)
	}
	stop(d)

	// After it, only the new key signs.
	d = start(newKey, "")
	l = writeLedger(t, d.BaseURL(), "after", 1)
	if out, code := verify(d.BaseURL(), rotated, l.ID); code != exitOK || !strings.Contains(out, "is consistent with the one of size") {
		t.Errorf("a kura that saw the rotation: exit %d, %s", code, out)
	}
	out, code = verify(d.BaseURL(), skipped, l.ID)
	if code != exitFail || !strings.Contains(out, "FAILED log") || !strings.Contains(out, "signed by both") {
		t.Errorf("a kura that missed the rotation: exit %d, %s, want the unpinned key refused", code, out)
	}
}
