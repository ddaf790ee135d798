package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/kurahash"
)

// An export holds a session and every ledger reachable from its head through
// all parents (merges included), parents first, each with its records:
//
//   - jsonl: one JSON object a line, {"kind":"session",...} first, then for
//     each ledger the records it uses that were not written yet
//     ({"kind":"record",...}) and the ledger itself ({"kind":"ledger",...},
//     record ids included). kura import reads it back. The session line
//     also carries the signed reflog and kurad's public key (see
//     exportedSession), so that kura verify --pubkey can check the export
//     without a kurad.
//   - git: a git fast-import stream, one commit a ledger on
//     refs/heads/<session name>, whose tree is that ledger: ledger.json and
//     records/<id>.json, each the canonical JSON of the object. The
//     annotated tag kura/<session name> on the head commit holds the
//     session, its signed reflog and kurad's public key (canonical JSON).
//
// In both, the session object also carries "log" when kurad keeps one: the
// checkpoint, for each exported ledger the inclusion proof of its
// ledger.written leaf against that one checkpoint's size, and the newest
// checkpoints kurad's witnesses cosigned with the proofs that the
// checkpoint extends them (export_log.go).

// exportStats counts what an export wrote.
type exportStats struct {
	Ledgers int
	Records int
}

func setupExport(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	format := fs.String("format", "", "git (a git fast-import stream) or jsonl (JSON lines, for kura import)")
	out := fs.String("out", "", "write to `FILE` instead of stdout (written whole or not at all)")
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 1 {
			return usagef("export takes one session")
		}
		var write func(context.Context, *client.Client, *client.Session, io.Writer) (exportStats, error)
		switch *format {
		case "git":
			write = writeGitExport
		case "jsonl":
			write = writeJSONLExport
		case "":
			return usagef("--format is required: git or jsonl")
		default:
			return usagef("--format must be git or jsonl, not %q", *format)
		}
		var raw json.RawMessage
		s, err := c.session(ctx, args[0], &raw)
		if err != nil {
			return err
		}
		if *out == "" || *out == "-" {
			_, err := write(ctx, c.client, s, c.data)
			return err
		}
		st, err := writeFileAtomically(*out, func(w io.Writer) (exportStats, error) {
			return write(ctx, c.client, s, w)
		})
		if err != nil {
			return err
		}
		if c.json {
			return c.printJSON(map[string]any{"session_id": s.ID, "format": *format, "out": *out, "ledgers": st.Ledgers, "records": st.Records})
		}
		fmt.Fprintf(c.stdout, "exported session %s (%s/%s): %s, %s to %s\n", s.ID, s.Project, s.Name, plural(st.Ledgers, "ledger"), plural(st.Records, "record"), *out)
		return nil
	}
}

// writeFileAtomically writes path through a temporary file in the same
// directory, renamed over path only once write succeeded: a failed export
// leaves no half file behind.
func writeFileAtomically(path string, write func(io.Writer) (exportStats, error)) (exportStats, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return exportStats{}, fmt.Errorf("export: %w", err)
	}
	st, err := write(f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("export: %w", cerr)
	}
	if err == nil {
		if err = os.Rename(f.Name(), path); err != nil {
			err = fmt.Errorf("export: %w", err)
		}
	}
	if err != nil {
		os.Remove(f.Name())
		return exportStats{}, err
	}
	return st, nil
}

// sessionLedgers returns every ledger reachable from the session's head,
// parents first; none for a session without a head.
func sessionLedgers(ctx context.Context, c *client.Client, s *client.Session) ([]client.Ledger, error) {
	if s.HeadLedgerID == nil || *s.HeadLedgerID == "" {
		return nil, nil
	}
	return c.Ancestry(ctx, *s.HeadLedgerID)
}

// ledgerRecords returns a ledger's records in ledger order, without asking
// for an empty ledger's.
func ledgerRecords(ctx context.Context, c *client.Client, l *client.Ledger) ([]client.Record, error) {
	if l.RecordCount == 0 && len(l.RecordIDs) == 0 {
		return nil, nil
	}
	return c.AllLedgerRecords(ctx, l.ID)
}

// withKind returns the JSON object obj with "kind":kind as its first member.
func withKind(kind string, obj []byte) ([]byte, error) {
	obj = bytes.TrimSpace(obj)
	if len(obj) < 2 || obj[0] != '{' {
		return nil, fmt.Errorf("export %s: not a JSON object", kind)
	}
	b := make([]byte, 0, len(obj)+len(kind)+12)
	b = append(b, `{"kind":`...)
	b = kura.AppendJSONString(b, kind)
	if rest := bytes.TrimSpace(obj[1:]); len(rest) > 0 && rest[0] != '}' {
		b = append(b, ',')
	}
	return append(b, obj[1:]...), nil
}

// marshalNoEscape is json.Marshal without HTML escaping, which would turn
// "<" in a record's content into "\u003c": the same JSON, but not the bytes
// kurad handed out.
func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func writeJSONLExport(ctx context.Context, c *client.Client, s *client.Session, w io.Writer) (exportStats, error) {
	var st exportStats
	ledgers, err := sessionLedgers(ctx, c, s)
	if err != nil {
		return st, err
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	line := func(kind string, v any) error {
		obj, err := marshalNoEscape(v)
		if err != nil {
			return fmt.Errorf("export %s: %w", kind, err)
		}
		b, err := withKind(kind, obj)
		if err != nil {
			return err
		}
		bw.Write(b)
		return bw.WriteByte('\n')
	}
	trail, err := sessionTrail(ctx, c, s, ledgers)
	if err != nil {
		return st, err
	}
	if err := line("session", trail); err != nil {
		return st, err
	}
	seen := map[string]bool{}
	for i := range ledgers {
		l := &ledgers[i]
		recs, err := ledgerRecords(ctx, c, l)
		if err != nil {
			return st, err
		}
		for j := range recs {
			if seen[recs[j].ID] {
				continue
			}
			seen[recs[j].ID] = true
			if err := line("record", recs[j]); err != nil {
				return st, err
			}
			st.Records++
		}
		if err := line("ledger", l); err != nil {
			return st, err
		}
		st.Ledgers++
	}
	if err := bw.Flush(); err != nil {
		return st, fmt.Errorf("export: %w", err)
	}
	return st, nil
}

// gitIdent is the committer of every exported ledger.
const gitIdent = "kura <kura@localhost>"

// gitBranch is the branch an exported session's commits go on.
func gitBranch(s *client.Session) string {
	name := s.Name
	if !kura.ValidSlug(name) {
		// Slugs are valid ref names; anything else is not trusted to be.
		name = "kura-session"
	}
	return "refs/heads/" + name
}

// gitTime is a ledger's created_at in seconds since the epoch, as git dates
// count (before 1970 is clamped: git takes no negative dates).
func gitTime(createdAt string) (int64, error) {
	t, err := kura.ParseTime(createdAt)
	if err != nil {
		return 0, err
	}
	return max(t.Unix(), 0), nil
}

// gitMessage is a ledger's commit message: the label, then the ledger's
// identity.
func gitMessage(l *client.Ledger) string {
	subject := l.Label
	if subject == "" {
		subject = "ledger " + l.ID
	}
	return fmt.Sprintf("%s\n\nledger: %s\nhash: %s\nroot: %s\n", subject, l.ID, l.Hash, l.RootHash)
}

// canonicalJSON is the RFC 8785 form of v's JSON: the same object always
// gives the same bytes, hence the same git blob.
func canonicalJSON(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return kurahash.Canonical(b)
}

// gitData writes a fast-import data command with its exact byte count.
func gitData(w *bufio.Writer, b []byte) {
	w.WriteString("data ")
	w.WriteString(strconv.Itoa(len(b)))
	w.WriteByte('\n')
	w.Write(b)
	w.WriteByte('\n')
}

func writeGitExport(ctx context.Context, c *client.Client, s *client.Session, w io.Writer) (exportStats, error) {
	var st exportStats
	ledgers, err := sessionLedgers(ctx, c, s)
	if err != nil {
		return st, err
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	// "feature done" makes git fast-import refuse a stream cut short
	// (an export that failed half way) instead of importing part of it.
	bw.WriteString("feature done\n")
	branch := gitBranch(s)
	marks := make(map[string]int, len(ledgers))
	seenRecords := map[string]bool{}
	for i := range ledgers {
		l := &ledgers[i]
		recs, err := ledgerRecords(ctx, c, l)
		if err != nil {
			return st, err
		}
		secs, err := gitTime(l.CreatedAt)
		if err != nil {
			return st, fmt.Errorf("export ledger %s: created_at: %w", l.ID, err)
		}
		ledgerJSON, err := canonicalJSON(l)
		if err != nil {
			return st, fmt.Errorf("export ledger %s: %w", l.ID, err)
		}
		mark := i + 1
		marks[l.ID] = mark
		if len(l.ParentIDs) == 0 {
			// Without "from", fast-import would make the branch's
			// current tip the parent; reset starts a root commit.
			fmt.Fprintf(bw, "reset %s\n\n", branch)
		}
		fmt.Fprintf(bw, "commit %s\nmark :%d\ncommitter %s %d +0000\n", branch, mark, gitIdent, secs)
		gitData(bw, []byte(gitMessage(l)))
		for j, pid := range l.ParentIDs {
			pm, ok := marks[pid]
			if !ok {
				return st, fmt.Errorf("export ledger %s: parent %s was not exported before it", l.ID, pid)
			}
			if j == 0 {
				fmt.Fprintf(bw, "from :%d\n", pm)
			} else {
				fmt.Fprintf(bw, "merge :%d\n", pm)
			}
		}
		// The tree is exactly this ledger, not its parent's tree changed.
		bw.WriteString("deleteall\n")
		bw.WriteString("M 100644 inline ledger.json\n")
		gitData(bw, ledgerJSON)
		inTree := map[string]bool{}
		for j := range recs {
			r := &recs[j]
			if inTree[r.ID] {
				continue // a record listed twice is one file
			}
			inTree[r.ID] = true
			if !kura.ValidID(r.ID) {
				return st, fmt.Errorf("export ledger %s: record id %q is not a UUID", l.ID, r.ID)
			}
			b, err := canonicalJSON(r)
			if err != nil {
				return st, fmt.Errorf("export record %s: %w", r.ID, err)
			}
			fmt.Fprintf(bw, "M 100644 inline records/%s.json\n", r.ID)
			gitData(bw, b)
			if !seenRecords[r.ID] {
				seenRecords[r.ID] = true
				st.Records++
			}
		}
		bw.WriteString("\n")
		st.Ledgers++
	}
	if len(ledgers) > 0 {
		// The head is last in parents-first order already; say it anyway
		// so that the branch is right whatever the order.
		fmt.Fprintf(bw, "reset %s\nfrom :%d\n\n", branch, marks[*s.HeadLedgerID])
		if err := writeGitSessionTag(ctx, c, s, ledgers, bw, marks[*s.HeadLedgerID]); err != nil {
			return st, err
		}
	}
	bw.WriteString("done\n")
	if err := bw.Flush(); err != nil {
		return st, fmt.Errorf("export: %w", err)
	}
	return st, nil
}

// dumpItem is one line of a JSON lines export.
type dumpItem struct {
	Kind    string // "session", "record" or "ledger"
	Session *client.Session
	Trail   *exportedSession // the session line whole: reflog and key too
	Record  *client.Record
	Ledger  *client.Ledger
	ID      string
	Hash    string // the record's or ledger's hash; "" for a session
	Size    int    // bytes of the line, to size import requests
}

// maxJSONLLine bounds one line of an export: a record is at most what
// kurad's body limit let in, far below this.
const maxJSONLLine = 64 << 20

// jsonlReader reads a JSON lines export one item at a time, naming the line
// of anything it cannot take.
type jsonlReader struct {
	sc   *bufio.Scanner
	line int
}

func newJSONLReader(r io.Reader) *jsonlReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxJSONLLine)
	return &jsonlReader{sc: sc}
}

// Next returns the next item, io.EOF after the last one. Blank lines are
// skipped.
func (d *jsonlReader) Next() (dumpItem, error) {
	for d.sc.Scan() {
		d.line++
		b := bytes.TrimSpace(d.sc.Bytes())
		if len(b) == 0 {
			continue
		}
		it, err := parseDumpLine(b)
		if err != nil {
			return dumpItem{}, fmt.Errorf("line %d: %w", d.line, err)
		}
		return it, nil
	}
	if err := d.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return dumpItem{}, fmt.Errorf("line %d: longer than %d bytes", d.line+1, maxJSONLLine)
		}
		return dumpItem{}, fmt.Errorf("line %d: %w", d.line+1, err)
	}
	return dumpItem{}, io.EOF
}

// parseDumpLine decodes one export line. The objects are passed on to kurad
// as they are (kurad recomputes and checks every hash); only what the
// import needs to order and chunk them is checked here.
func parseDumpLine(b []byte) (dumpItem, error) {
	var head struct {
		Kind *string `json:"kind"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return dumpItem{}, fmt.Errorf("not a JSON object: %v", err)
	}
	if head.Kind == nil {
		return dumpItem{}, errors.New(`no "kind" (session, record or ledger)`)
	}
	it := dumpItem{Kind: *head.Kind, Size: len(b)}
	var err error
	switch it.Kind {
	case "session":
		it.Session = &client.Session{}
		it.Trail = &exportedSession{Session: it.Session}
		err = json.Unmarshal(b, it.Trail)
		it.ID = it.Session.ID
	case "record":
		it.Record = &client.Record{}
		err = json.Unmarshal(b, it.Record)
		it.ID, it.Hash = it.Record.ID, it.Record.Hash
	case "ledger":
		it.Ledger = &client.Ledger{}
		err = json.Unmarshal(b, it.Ledger)
		it.ID, it.Hash = it.Ledger.ID, it.Ledger.Hash
	default:
		return dumpItem{}, fmt.Errorf("unknown kind %q (want session, record or ledger)", it.Kind)
	}
	if err != nil {
		return dumpItem{}, fmt.Errorf("%s: %v", it.Kind, err)
	}
	if it.ID == "" {
		return dumpItem{}, fmt.Errorf("%s without an id", it.Kind)
	}
	return it, nil
}

// Import requests stay well under kurad's default 4 MiB body limit.
const (
	importMaxBytes = 3 << 20
	importMaxItems = 500
)

// importDump reads a JSON lines export from r and sends it with send in
// requests of at most importMaxItems objects and about importMaxBytes, in
// file order: records and ledgers come parents-first in an export, and
// kurad takes each request's records before its ledgers, so every ledger
// finds its records and parents. Sessions go last, once their heads exist.
// An object repeated with the same hash (two exports concatenated) is sent
// once.
//
// A record authored sys: (kurad's own) is held back until the next ledger
// and sent in the same request as it: kurad imports one only inside a
// ledger of the same import that it signed, and an export writes each
// record just before the first ledger holding it.
func importDump(ctx context.Context, r io.Reader, send func(context.Context, client.ImportInput) (*client.ImportResult, error)) (client.ImportResult, error) {
	var (
		total    client.ImportResult
		batch    client.ImportInput
		items    int
		size     int
		requests int
		sessions []dumpItem
		heldSys  []dumpItem            // sys: records waiting for their ledger
		seen     = map[string]string{} // kind:id -> hash
	)
	flush := func() error {
		if items == 0 {
			return nil
		}
		res, err := send(ctx, batch)
		if err != nil {
			return fmt.Errorf("import request %d: %w", requests+1, err)
		}
		requests++
		total.Records += res.Records
		total.Ledgers += res.Ledgers
		total.Sessions += res.Sessions
		total.Skipped += res.Skipped
		batch, items, size = client.ImportInput{}, 0, 0
		return nil
	}
	// add puts a group of items into one request, flushing first when the
	// group does not fit beside what is waiting.
	add := func(group ...dumpItem) error {
		n := 0
		for _, it := range group {
			n += it.Size
		}
		if items > 0 && (items+len(group) > importMaxItems || size+n > importMaxBytes) {
			if err := flush(); err != nil {
				return err
			}
		}
		for _, it := range group {
			switch it.Kind {
			case "record":
				batch.Records = append(batch.Records, *it.Record)
			case "ledger":
				batch.Ledgers = append(batch.Ledgers, *it.Ledger)
			case "session":
				s := *it.Session
				// Turns are not exported: no turn is open in the copy.
				s.OpenTurnID = nil
				batch.Sessions = append(batch.Sessions, s)
			}
			items++
			size += it.Size
		}
		return nil
	}

	d := newJSONLReader(r)
	for {
		it, err := d.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return total, fmt.Errorf("import: %w", err)
		}
		key := it.Kind + ":" + it.ID
		if h, ok := seen[key]; ok && h == it.Hash {
			continue
		}
		seen[key] = it.Hash
		switch {
		case it.Kind == "session":
			sessions = append(sessions, it)
		case it.Kind == "record" && strings.HasPrefix(it.Record.AuthorID, "sys:"):
			heldSys = append(heldSys, it)
		case it.Kind == "ledger":
			if err := add(append(heldSys, it)...); err != nil {
				return total, err
			}
			heldSys = nil
		default:
			if err := add(it); err != nil {
				return total, err
			}
		}
	}
	// sys: records no ledger followed: kurad says why it refuses them.
	for _, it := range heldSys {
		if err := add(it); err != nil {
			return total, err
		}
	}
	for _, it := range sessions {
		if err := add(it); err != nil {
			return total, err
		}
	}
	if len(seen) == 0 {
		return total, errors.New("import: the input holds nothing to import")
	}
	if err := flush(); err != nil {
		return total, err
	}
	return total, nil
}

func setupImport(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	return func(ctx context.Context, c *cli, args []string) error {
		var r io.Reader
		name := "stdin"
		switch {
		case len(args) > 1:
			return usagef("import takes at most one file")
		case len(args) == 0 || args[0] == "-":
			r = c.stdin
		default:
			f, err := os.Open(args[0])
			if err != nil {
				return fmt.Errorf("import: %w", err)
			}
			defer f.Close()
			r, name = f, args[0]
		}
		total, err := importDump(ctx, r, c.client.Import)
		if err != nil {
			return err
		}
		if c.json {
			return c.printJSON(total)
		}
		fmt.Fprintf(c.stdout, "imported from %s: %s, %s, %s (%d already there)\n", name,
			plural(total.Records, "record"), plural(total.Ledgers, "ledger"), plural(total.Sessions, "session"), total.Skipped)
		return nil
	}
}
