package main

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/kura-memory/kura/client"
)

// Offline verification: kura verify --pubkey KEY EXPORT checks an export
// (kura export --format=jsonl or git) with no kurad at all. Every record's
// content_hash, hash and seal, every Merkle root and ledger hash are
// recomputed, every ledger signature and every signed head move is checked
// against KEY, a key the verifier got from a source it trusts (never the
// one the export names).

// maxPubKeyFile bounds a --pubkey file: a key, or kura info --json.
const maxPubKeyFile = 64 << 10

// parsePubKeyText reads a public key as kura info shows it
// ("ed25519:<64 hex>"), as bare hex, or from a JSON object with a
// "public_key" member (the output of kura info --json), and returns it in
// the "ed25519:<hex>" form, hex in lowercase.
func parsePubKeyText(s string) (string, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "{") {
		var obj struct {
			PublicKey *string `json:"public_key"`
		}
		if err := json.Unmarshal([]byte(s), &obj); err != nil || obj.PublicKey == nil {
			return "", errors.New(`a JSON key file must be an object with a "public_key" member (kura info --json)`)
		}
		s = strings.TrimSpace(*obj.PublicKey)
		if strings.HasPrefix(s, "{") {
			return "", errors.New("public_key must be a key, not an object")
		}
	}
	h := s
	if len(s) > len("ed25519:") && strings.EqualFold(s[:len("ed25519:")], "ed25519:") {
		h = s[len("ed25519:"):]
	}
	b, err := hex.DecodeString(h)
	if err != nil || len(b) != 32 {
		return "", errors.New("a public key is ed25519:<64 hex digits> (as kura info shows it) or 64 hex digits")
	}
	return "ed25519:" + hex.EncodeToString(b), nil
}

// parsePubKeyFlag takes --pubkey as a key, else as the name of a file
// holding one.
func parsePubKeyFlag(v string) (string, error) {
	if v == "" {
		return "", errors.New("--pubkey is empty")
	}
	if k, err := parsePubKeyText(v); err == nil {
		return k, nil
	}
	f, err := os.Open(v)
	if err != nil {
		return "", fmt.Errorf("--pubkey %q is neither a public key (ed25519:<64 hex digits>) nor a readable file: %v", v, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxPubKeyFile+1))
	if err != nil {
		return "", fmt.Errorf("--pubkey %s: %v", v, err)
	}
	if len(b) > maxPubKeyFile {
		return "", fmt.Errorf("--pubkey %s: larger than %d bytes; not a key file", v, maxPubKeyFile)
	}
	k, err := parsePubKeyText(string(b))
	if err != nil {
		return "", fmt.Errorf("--pubkey %s: %v", v, err)
	}
	return k, nil
}

// exportContents is what an export holds, whatever its format.
type exportContents struct {
	Format  string
	Trail   *exportedSession
	Ledgers []client.Ledger // parents first, as exported
	Records map[string]*client.Record
}

func (x *exportContents) addLedger(l *client.Ledger) {
	for i := range x.Ledgers {
		if x.Ledgers[i].ID == l.ID {
			return // the same ledger twice (two exports concatenated)
		}
	}
	x.Ledgers = append(x.Ledgers, *l)
}

// readExport reads a JSON lines or git fast-import export, telling them
// apart by the first byte that is not white space.
func readExport(r io.Reader) (*exportContents, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		b, err := br.Peek(1)
		if err != nil {
			if err == io.EOF {
				return nil, errors.New("the export is empty")
			}
			return nil, err
		}
		if b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r' {
			br.ReadByte()
			continue
		}
		if b[0] == '{' {
			return readJSONLExport(br)
		}
		return readGitExport(br)
	}
}

func readJSONLExport(r io.Reader) (*exportContents, error) {
	x := &exportContents{Format: "jsonl", Records: map[string]*client.Record{}}
	d := newJSONLReader(r)
	for {
		it, err := d.Next()
		if err == io.EOF {
			return x, nil
		}
		if err != nil {
			return nil, err
		}
		switch it.Kind {
		case "session":
			if x.Trail != nil {
				return nil, fmt.Errorf("line %d: a second session; verify one session's export at a time", d.line)
			}
			x.Trail = it.Trail
		case "record":
			x.Records[it.ID] = it.Record
		case "ledger":
			x.addLedger(it.Ledger)
		}
	}
}

// readGitExport reads the git fast-import stream kura export writes: the
// tree of each commit (ledger.json, records/<id>.json) and the session tag.
// Other commands are skipped; data blocks are read by their byte count.
func readGitExport(r *bufio.Reader) (*exportContents, error) {
	x := &exportContents{Format: "git", Records: map[string]*client.Record{}}
	var (
		line    int
		context string // "commit" or "tag": what a bare data block belongs to
		path    string // the file an inline M command names
	)
	for {
		s, err := r.ReadString('\n')
		if err == io.EOF && s == "" {
			return x, nil
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
		line++
		s = strings.TrimSuffix(s, "\n")
		switch {
		case strings.HasPrefix(s, "commit "):
			context, path = "commit", ""
		case strings.HasPrefix(s, "tag "):
			context, path = "tag", ""
		case strings.HasPrefix(s, "M 100644 inline "):
			path = strings.TrimPrefix(s, "M 100644 inline ")
		case strings.HasPrefix(s, "data "):
			n, err := strconv.Atoi(strings.TrimPrefix(s, "data "))
			if err != nil || n < 0 || n > maxJSONLLine {
				return nil, fmt.Errorf("git export line %d: bad data length %q", line, s)
			}
			b := make([]byte, n)
			if _, err := io.ReadFull(r, b); err != nil {
				return nil, fmt.Errorf("git export line %d: data cut short: %v", line, err)
			}
			if c, err := r.Peek(1); err == nil && c[0] == '\n' {
				r.ReadByte()
			}
			if err := x.gitData(context, path, b); err != nil {
				return nil, fmt.Errorf("git export line %d: %v", line, err)
			}
			if path == "" && context == "commit" {
				context = "tree" // the commit message is read; files follow
			}
			path = ""
			line += bytes.Count(b, []byte("\n")) + 1
		}
	}
}

func (x *exportContents) gitData(context, path string, b []byte) error {
	switch {
	case path == "ledger.json":
		var l client.Ledger
		if err := json.Unmarshal(b, &l); err != nil {
			return fmt.Errorf("ledger.json: %v", err)
		}
		x.addLedger(&l)
	case strings.HasPrefix(path, "records/"):
		var rec client.Record
		if err := json.Unmarshal(b, &rec); err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
		x.Records[rec.ID] = &rec
	case path == "" && context == "tag":
		if x.Trail != nil {
			return errors.New("a second session tag; verify one session's export at a time")
		}
		t := &exportedSession{Session: &client.Session{}}
		if err := json.Unmarshal(b, t); err != nil {
			return fmt.Errorf("session tag: %v", err)
		}
		x.Trail = t
	}
	return nil
}

// offlineReport is what kura verify --pubkey found.
type offlineReport struct {
	OK                  bool                  `json:"ok"`
	Format              string                `json:"format"`
	SessionID           string                `json:"session_id,omitempty"`
	PublicKey           string                `json:"public_key"`
	LedgersChecked      int                   `json:"ledgers_checked"`
	RecordsChecked      int                   `json:"records_checked"`
	HeadMovesChecked    int                   `json:"head_moves_checked"`
	ExpectHeadHash      string                `json:"expect_head_hash,omitempty"`
	ExpectHeadHashFound *bool                 `json:"expect_head_hash_found,omitempty"`
	Redacted            []string              `json:"redacted,omitempty"`
	Withheld            []string              `json:"withheld,omitempty"`
	Problems            []client.SessionIssue `json:"problems"`
	Log                 *offlineLog           `json:"log"`
}

// verifyExport checks x against pub ("ed25519:<hex>"); witnessKeys are
// cosignature verifier keys the log checkpoint must carry.
func verifyExport(x *exportContents, pub, expectHeadHash string, witnessKeys []string) *offlineReport {
	rep := &offlineReport{Format: x.Format, PublicKey: pub, Problems: []client.SessionIssue{}}
	problem := func(ledger, field, format string, args ...any) {
		rep.Problems = append(rep.Problems, client.SessionIssue{LedgerID: ledger, Field: field, Detail: fmt.Sprintf(format, args...)})
	}
	byID := make(map[string]*client.Ledger, len(x.Ledgers))
	for i := range x.Ledgers {
		byID[x.Ledgers[i].ID] = &x.Ledgers[i]
	}
	redacted, withheld := map[string]bool{}, map[string]bool{}
	for i := range x.Ledgers {
		l := &x.Ledgers[i]
		rep.LedgersChecked++
		recs := make([]client.Record, 0, len(l.RecordIDs))
		complete := true
		for _, rid := range l.RecordIDs {
			r, ok := x.Records[rid]
			if !ok {
				problem(l.ID, "record", "record %s is not in the export", rid)
				complete = false
				continue
			}
			recs = append(recs, *r)
		}
		parents := make([]string, 0, len(l.ParentIDs))
		for _, pid := range l.ParentIDs {
			p, ok := byID[pid]
			if !ok {
				problem(l.ID, "parent", "parent ledger %s is not in the export", pid)
				complete = false
				continue
			}
			parents = append(parents, p.Hash)
		}
		if complete {
			v := client.CheckLedgerHashes(l, recs, parents)
			rep.RecordsChecked += v.RecordsChecked
			for _, m := range v.Mismatches {
				where := ""
				if m.RecordID != "" {
					where = "record " + m.RecordID + ": "
				}
				problem(l.ID, m.Field, "%sstored %s, computed %s", where, orNone(m.Stored), orNone(m.Computed))
			}
			for _, rid := range v.Redacted {
				if !redacted[rid] {
					redacted[rid] = true
					rep.Redacted = append(rep.Redacted, rid)
				}
			}
			for _, rid := range v.Withheld {
				if !withheld[rid] {
					withheld[rid] = true
					rep.Withheld = append(rep.Withheld, rid)
				}
			}
		}
		if err := client.VerifyLedgerSignature(l, pub); err != nil {
			problem(l.ID, "signature", "the ledger's signature does not verify against %s", pub)
		}
	}

	t := x.Trail
	if t == nil || t.Session == nil {
		rep.Log = verifyExportLog(nil, x.Ledgers, pub, witnessKeys, problem)
		problem("", "session", "the export holds no session, so no signed head move: nothing says which ledger is the head")
		rep.OK = false
		return rep
	}
	rep.Log = verifyExportLog(t.Log, x.Ledgers, pub, witnessKeys, problem)
	s := t.Session
	verifyExportHead(t.Log, rep.Log, s, problem)
	rep.SessionID = s.ID
	if t.PublicKey != "" && t.PublicKey != pub {
		problem("", "public_key", "the export says it was signed by %s, not by the key given", t.PublicKey)
	}
	var head *client.Ledger
	if s.HeadLedgerID != nil {
		if head = byID[*s.HeadLedgerID]; head == nil {
			problem(*s.HeadLedgerID, "head", "the session's head ledger is not in the export")
		} else if s.HeadHash == nil || *s.HeadHash != head.Hash {
			problem(head.ID, "head_hash", "the session's head hash is not the head ledger's hash %s", head.Hash)
		}
	}
	var last *client.ReflogEntry
	for i := range t.Reflog {
		e := &t.Reflog[i]
		rep.HeadMovesChecked++
		if err := client.VerifyHeadSignature(s.ID, e, pub); err != nil {
			problem(e.To, "head_signature", "the signature of head move %d does not verify against %s", e.Seq, pub)
		}
		if e.Seq != int64(i+1) {
			problem(e.To, "reflog", "head move %d is at place %d: a move was removed or inserted", e.Seq, i+1)
		}
		if last != nil && (e.From == nil || *e.From != last.To) {
			problem(e.To, "reflog", "head move %d does not start where head move %d ended", e.Seq, last.Seq)
		}
		if l := byID[e.To]; l != nil && l.Hash != e.HeadHash {
			problem(e.To, "head_hash", "head move %d signed ledger hash %s; the exported ledger's hash is %s", e.Seq, e.HeadHash, l.Hash)
		}
		last = e
	}
	switch {
	case last == nil && head != nil:
		problem(head.ID, "reflog", "the session has a head but no signed head move")
	case last != nil && (s.HeadLedgerID == nil || last.To != *s.HeadLedgerID):
		problem(last.To, "head", "the head is not the ledger the last signed head move named")
	case last != nil && head != nil && last.HeadHash != head.Hash:
		problem(head.ID, "head_hash", "the head ledger's hash is not the one the last signed head move named")
	}
	if expectHeadHash != "" {
		found := false
		seen := map[string]bool{}
		for l := head; l != nil && !seen[l.ID]; {
			seen[l.ID] = true
			if l.Hash == expectHeadHash {
				found = true
				break
			}
			if len(l.ParentIDs) == 0 {
				break
			}
			l = byID[l.ParentIDs[0]]
		}
		rep.ExpectHeadHash, rep.ExpectHeadHashFound = expectHeadHash, &found
		if !found {
			problem("", "expect_head_hash", "the first-parent chain from the head does not hold ledger hash %s (cut off or rewritten)", expectHeadHash)
		}
	}
	rep.OK = len(rep.Problems) == 0
	return rep
}

// verifyOffline runs kura verify --pubkey on an export file ("-": stdin).
func (c *cli) verifyOffline(file, pubFlag, expectHeadHash string, witnessKeys []string) error {
	pub, err := parsePubKeyFlag(pubFlag)
	if err != nil {
		return usagef("%v", err)
	}
	var r io.Reader = c.stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return fmt.Errorf("verify: %w", err)
		}
		defer f.Close()
		r = f
	}
	x, err := readExport(r)
	if err != nil {
		return fmt.Errorf("verify %s: %w", file, err)
	}
	rep := verifyExport(x, pub, expectHeadHash, witnessKeys)
	if c.json {
		if err := c.printJSON(rep); err != nil {
			return err
		}
	} else {
		status := "OK"
		if !rep.OK {
			status = "FAILED"
		}
		fmt.Fprintf(c.stdout, "%s export %s (%s, session %s): %s, %s, %s checked offline against %s\n", status, file, rep.Format, orNone(rep.SessionID),
			plural(rep.LedgersChecked, "ledger"), plural(rep.RecordsChecked, "record"), plural(rep.HeadMovesChecked, "head move"), pub)
		printOfflineLog(c.stdout, rep.Log)
		if len(rep.Redacted) > 0 {
			fmt.Fprintf(c.stdout, "  redacted: %s\n", strings.Join(rep.Redacted, " "))
		}
		if len(rep.Withheld) > 0 {
			fmt.Fprintf(c.stdout, "  withheld: %s\n", strings.Join(rep.Withheld, " "))
		}
		for _, p := range rep.Problems {
			where := ""
			if p.LedgerID != "" {
				where = "ledger " + p.LedgerID + " "
			}
			fmt.Fprintf(c.stdout, "  problem: %s%s: %s\n", where, p.Field, p.Detail)
		}
	}
	if !rep.OK {
		return &exitError{code: exitFail}
	}
	return nil
}
