package main

import (
	"bufio"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/kuradtest"
	"github.com/kura-memory/kura/kurahash"
)

func TestParsePubKeyText(t *testing.T) {
	t.Parallel()
	const h = "3b6a27bcceb6a42d62a3a8d02a6f0d73653215771de243a63ac048a18b59da29"
	want := "ed25519:" + h
	tests := []struct {
		name, in string
		ok       bool
	}{
		{"Prefixed", "ed25519:" + h, true},
		{"Bare", h, true},
		{"Upper", strings.ToUpper(h), true},
		{"UpperPrefix", "ED25519:" + h, true},
		{"Spaces", "  ed25519:" + h + "\n", true},
		{"InfoJSON", `{"version":"x","public_key":"ed25519:` + h + `"}`, true},
		{"Empty", "", false},
		{"PrefixOnly", "ed25519:", false},
		{"Short", h[:62], false},
		{"Long", h + "00", false},
		{"NotHex", strings.Repeat("z", 64), false},
		{"OtherAlgo", "rsa:" + h, false},
		{"JSONWithoutKey", `{"version":"x"}`, false},
		{"JSONKeyNotString", `{"public_key":1}`, false},
		{"JSONNested", `{"public_key":"{\"public_key\":\"` + h + `\"}"}`, false},
		{"BadJSON", `{"public_key":`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parsePubKeyText(tt.in)
			if (err == nil) != tt.ok {
				t.Fatalf("got %q, %v; want ok=%v", got, err, tt.ok)
			}
			if tt.ok && got != want {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
	t.Run("File", func(t *testing.T) {
		dir := t.TempDir()
		p := filepath.Join(dir, "key.pub")
		os.WriteFile(p, []byte(want+"\n"), 0o644)
		if got, err := parsePubKeyFlag(p); err != nil || got != want {
			t.Errorf("got %q, %v, want %q", got, err, want)
		}
		if _, err := parsePubKeyFlag(filepath.Join(dir, "missing")); err == nil {
			t.Errorf("a missing file: got no error")
		}
		big := filepath.Join(dir, "big")
		os.WriteFile(big, []byte(strings.Repeat(" ", maxPubKeyFile+1)), 0o644)
		if _, err := parsePubKeyFlag(big); err == nil {
			t.Errorf("an oversized file: got no error")
		}
	})
}

func FuzzParsePubKeyText(f *testing.F) {
	for _, s := range []string{"ed25519:3b6a27bcceb6a42d62a3a8d02a6f0d73653215771de243a63ac048a18b59da29", "", "ed25519:", `{"public_key":"x"}`, "{", strings.Repeat("a", 64)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := parsePubKeyText(s)
		if err != nil {
			return
		}
		// Whatever is accepted comes out in the one form, and parses again
		// to itself.
		b, herr := hex.DecodeString(strings.TrimPrefix(k, "ed25519:"))
		if !strings.HasPrefix(k, "ed25519:") || herr != nil || len(b) != ed25519.PublicKeySize || k != strings.ToLower(k) {
			t.Fatalf("accepted %q as %q", s, k)
		}
		if again, err := parsePubKeyText(k); err != nil || again != k {
			t.Fatalf("%q does not parse to itself: %q, %v", k, again, err)
		}
	})
}

// readLines splits an export into its lines.
func readLines(t *testing.T, s string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// forgeJSONL rewrites a record's content in a JSON lines export and
// recomputes every hash above it (record, leaves, roots, ledger hashes of
// it and its descendants, the session's head hash and the hashes the head
// moves name), as someone without kurad's key would.
func forgeJSONL(t *testing.T, export, recordID, content string) string {
	t.Helper()
	lines := readLines(t, export)
	recs := map[string]*client.Record{}
	var ledgers []*client.Ledger
	var trail *exportedSession
	for _, ln := range lines {
		it, err := parseDumpLine([]byte(ln))
		if err != nil {
			t.Fatal(err)
		}
		switch it.Kind {
		case "record":
			recs[it.ID] = it.Record
		case "ledger":
			ledgers = append(ledgers, it.Ledger)
		case "session":
			trail = it.Trail
		}
	}
	r := recs[recordID]
	ch, canon, err := kurahash.ContentHash([]byte(content))
	if err != nil {
		t.Fatal(err)
	}
	r.Content, r.ContentHash = canon, ch
	r.Hash = kurahash.RecordHash(r.Type, ch, r.AuthorID)
	r.Seal = kurahash.Seal(r.Hash, kurahash.MetadataJSON(r.Metadata), r.CreatedAt)
	hashes := map[string]string{}
	for _, l := range ledgers { // parents first
		leaves := make([][32]byte, len(l.RecordIDs))
		for i, rid := range l.RecordIDs {
			leaves[i], _ = kurahash.DecodeHash(recs[rid].Seal)
		}
		root := kurahash.MerkleRoot(leaves)
		var parents []string
		for _, p := range l.ParentIDs {
			parents = append(parents, hashes[p])
		}
		l.RootHash = hex.EncodeToString(root[:])
		l.Hash = kurahash.LedgerHash(l.RootHash, parents, l.Label, l.CreatedAt)
		hashes[l.ID] = l.Hash
	}
	h := hashes[*trail.HeadLedgerID]
	trail.HeadHash = &h
	for i := range trail.Reflog {
		if nh, ok := hashes[trail.Reflog[i].To]; ok {
			trail.Reflog[i].HeadHash = nh
		}
	}
	var b strings.Builder
	write := func(kind string, v any) {
		obj, err := marshalNoEscape(v)
		if err != nil {
			t.Fatal(err)
		}
		line, _ := withKind(kind, obj)
		b.Write(line)
		b.WriteByte('\n')
	}
	write("session", trail)
	for id, r := range recs {
		_ = id
		write("record", r)
	}
	for _, l := range ledgers {
		write("ledger", l)
	}
	return b.String()
}

func TestE2E_VerifyExportOffline(t *testing.T) {
	t.Parallel()
	url := kuradtest.Start(t)
	s, runs := driveSession(t, url, "hashi", "offline", 2)
	// A redacted record travels in the export and still verifies.
	redacted := runs[0].records[1].ID
	if out, errOut, code := runKura(t, url, nil, "redact", redacted, "--reason", "leaked a token"); code != exitOK || !strings.Contains(out, "redacted record "+redacted) {
		t.Fatalf("redact: exit %d, %q, %q", code, out, errOut)
	}
	var info client.Info
	kuraJSON(t, url, "", &info, "info")
	dir := t.TempDir()
	infoFile := filepath.Join(dir, "info.json")
	b, _ := json.Marshal(info)
	os.WriteFile(infoFile, b, 0o644)

	exports := map[string]string{}
	for _, format := range []string{"jsonl", "git"} {
		p := filepath.Join(dir, "export."+format)
		if _, errOut, code := runKura(t, url, nil, "export", s.ID, "--format", format, "--out", p); code != exitOK {
			t.Fatalf("export %s: exit %d, %q", format, code, errOut)
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		exports[format] = string(raw)
	}
	// From here on no kurad is needed: every verify talks to nothing.
	offline := deadURL(t)
	verify := func(t *testing.T, content string, args ...string) (string, int) {
		t.Helper()
		p := filepath.Join(t.TempDir(), "export")
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		out, errOut, code := runKura(t, offline, nil, append([]string{"verify", p}, args...)...)
		if code != exitOK && code != exitFail {
			t.Fatalf("verify %q: exit %d, %q", args, code, errOut)
		}
		return out, code
	}
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	otherKey := "ed25519:" + hex.EncodeToString(other.Public().(ed25519.PublicKey))

	for format, export := range exports {
		t.Run(format, func(t *testing.T) {
			for _, key := range []string{info.PublicKey, strings.TrimPrefix(info.PublicKey, "ed25519:"), infoFile} {
				out, code := verify(t, export, "--pubkey", key, "--json")
				var rep offlineReport
				if err := json.Unmarshal([]byte(out), &rep); err != nil {
					t.Fatalf("--json printed %q", out)
				}
				if code != exitOK || !rep.OK || rep.LedgersChecked != 4 || rep.HeadMovesChecked != 4 || rep.RecordsChecked == 0 ||
					len(rep.Redacted) != 1 || rep.Redacted[0] != redacted || rep.SessionID != s.ID {
					t.Fatalf("untampered, key %s: exit %d, %s; want ok, 4 ledgers, 4 head moves, 1 redacted", key, code, out)
				}
			}
			if out, code := verify(t, export, "--pubkey", info.PublicKey, "--expect-head-hash", *runs[0].turn.HeadHash); code != exitOK || !strings.HasPrefix(out, "OK export") {
				t.Errorf("expect an older head hash: exit %d, %s", code, out)
			}
			if out, code := verify(t, export, "--pubkey", otherKey); code != exitFail || !strings.Contains(out, "signature") {
				t.Errorf("another key: exit %d, %s; want it to fail on signatures", code, out)
			}
		})
	}

	// Each tamper must make the offline verify fail, naming what broke.
	step1 := runs[0].records[0] // {"step":1}, an agent.thought of the first turn
	tampers := []struct {
		name, format string
		edit         func(string) string
		want         string
	}{
		{"ContentChanged", "jsonl", func(s string) string { return strings.Replace(s, `"content":{"step":1}`, `"content":{"step":7}`, 1) }, "content_hash"},
		{"ContentChanged", "git", func(s string) string { return strings.Replace(s, `"content":{"step":1}`, `"content":{"step":7}`, 1) }, "content_hash"},
		{"ConsistentRewrite", "jsonl", func(s string) string { return forgeJSONL(t, s, step1.ID, `{"step":"forged"}`) }, "signature"},
		{"LedgerSignatureChanged", "jsonl", func(s string) string { return flipSignature(t, s, `"kind":"ledger"`) }, "signature"},
		{"HeadMoveSignatureChanged", "jsonl", func(s string) string { return flipSignature(t, s, `"kind":"session"`) }, "head_signature"},
		{"RecordRemoved", "jsonl", func(s string) string {
			var keep []string
			for _, ln := range readLines(t, s) {
				if !strings.Contains(ln, `"id":"`+step1.ID+`"`) || !strings.HasPrefix(ln, `{"kind":"record"`) {
					keep = append(keep, ln)
				}
			}
			return strings.Join(keep, "\n")
		}, "not in the export"},
		{"SessionRemoved", "jsonl", func(s string) string {
			var keep []string
			for _, ln := range readLines(t, s) {
				if !strings.HasPrefix(ln, `{"kind":"session"`) {
					keep = append(keep, ln)
				}
			}
			return strings.Join(keep, "\n")
		}, "no session"},
	}
	for _, tc := range tampers {
		t.Run(tc.format+"/"+tc.name, func(t *testing.T) {
			tampered := tc.edit(exports[tc.format])
			if tampered == exports[tc.format] {
				t.Fatalf("the edit changed nothing; the test would prove nothing")
			}
			out, code := verify(t, tampered, "--pubkey", info.PublicKey)
			if code != exitFail || !strings.HasPrefix(out, "FAILED") || !strings.Contains(out, tc.want) {
				t.Errorf("got exit %d:\n%s\nwant FAILED naming %q", code, out, tc.want)
			}
		})
	}
	t.Run("ConsistentRewriteOnlyFailsOnSignatures", func(t *testing.T) {
		out, _ := verify(t, forgeJSONL(t, exports["jsonl"], step1.ID, `{"step":"forged"}`), "--pubkey", info.PublicKey, "--json")
		var rep offlineReport
		json.Unmarshal([]byte(out), &rep)
		if rep.OK || len(rep.Problems) == 0 {
			t.Fatalf("got %s, want problems", out)
		}
		// Every hash was recomputed, so only what the key signed fails:
		// ledger and head signatures, and the log's leaves, which commit
		// to the ledger hashes kurad really wrote.
		logLeaf := false
		for _, p := range rep.Problems {
			switch p.Field {
			case "signature", "head_signature":
			case "log_leaf":
				logLeaf = true
			case "log_head":
				// The log's head move names the head hash kurad wrote.
			default:
				t.Errorf("got problem %+v; every hash was recomputed, so only signatures and the log may fail", p)
			}
		}
		if !logLeaf {
			t.Errorf("got %s, want the log's leaf of a rewritten ledger refused", out)
		}
	})
	t.Run("ImportKeepsRedaction", func(t *testing.T) {
		// A second kurad takes the export, redacted record included, and
		// signs it with its own key: its session verifies, and the old
		// key no longer matches the new export.
		url2 := kuradtest.Start(t)
		p := filepath.Join(t.TempDir(), "in.jsonl")
		os.WriteFile(p, []byte(exports["jsonl"]), 0o644)
		if out, errOut, code := runKura(t, url2, nil, "import", p); code != exitOK {
			t.Fatalf("import: exit %d, %q %q", code, out, errOut)
		}
		if out, _, code := runKura(t, url2, nil, "verify", s.ID); code != exitOK {
			t.Fatalf("verify on the importer: exit %d, %s", code, out)
		}
		var r client.Record
		kuraJSON(t, url2, "", &r, "show", redacted)
		if !r.Redacted || string(r.Content) != "null" {
			t.Errorf("imported record: got %+v, want redacted", r)
		}
		p2 := filepath.Join(t.TempDir(), "again.jsonl")
		if _, errOut, code := runKura(t, url2, nil, "export", s.ID, "--format=jsonl", "--out", p2); code != exitOK {
			t.Fatalf("re-export: %q", errOut)
		}
		if _, _, code := runKura(t, offline, nil, "verify", "--pubkey", info.PublicKey, p2); code != exitFail {
			t.Errorf("re-export checked against the first kurad's key: got exit %d, want %d", code, exitFail)
		}
	})
	t.Run("Usage", func(t *testing.T) {
		for _, args := range [][]string{
			{"verify", "--pubkey", "nonsense-not-a-file", "x"},
			{"verify", "--pubkey", info.PublicKey},
			{"verify", "--pubkey", info.PublicKey, "--local", "x"},
		} {
			if _, _, code := runKura(t, offline, nil, args...); code != exitUsage {
				t.Errorf("%q: got exit %d, want %d", args, code, exitUsage)
			}
		}
	})
}

// flipSignature changes the last hex digit of the first "signature" on the
// first line holding marker.
func flipSignature(t *testing.T, export, marker string) string {
	t.Helper()
	lines := readLines(t, export)
	for i, ln := range lines {
		if !strings.Contains(ln, marker) {
			continue
		}
		j := strings.Index(ln, `"signature":"`)
		if j < 0 {
			continue
		}
		k := j + len(`"signature":"`) + 127 // the last of 128 hex digits
		c := byte('0')
		if ln[k] == '0' {
			c = '1'
		}
		lines[i] = ln[:k] + string(c) + ln[k+1:]
		return strings.Join(lines, "\n") + "\n"
	}
	t.Fatalf("no signature on a line with %s", marker)
	return ""
}
