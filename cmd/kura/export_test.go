package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/kura-memory/kura/client"
)

func TestWithKind(t *testing.T) {
	t.Parallel()
	tests := []struct {
		kind, in, want string
		wantErr        bool
	}{
		{"record", `{"id":"a"}`, `{"kind":"record","id":"a"}`, false},
		{"ledger", ` {"id":"a","n":1} `, `{"kind":"ledger","id":"a","n":1}`, false},
		{"session", `{}`, `{"kind":"session"}`, false},
		{"session", `{ }`, `{"kind":"session" }`, false},
		{"x", `[1]`, ``, true},
		{"x", `{`, ``, true},
		{"x", ``, ``, true},
	}
	for _, tt := range tests {
		got, err := withKind(tt.kind, []byte(tt.in))
		if (err != nil) != tt.wantErr {
			t.Errorf("withKind(%q): got error %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if !tt.wantErr && (string(got) != tt.want || !json.Valid(got)) {
			t.Errorf("withKind(%q): got %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestAppendRefs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		stdin     string
		set       []string // flags given on the command line
		fromStdin bool
		typ       string
		author    string
		content   string
		meta      metaFlag
		ids       []string
		want      string // the refs as JSON
		wantErr   string
	}{
		{name: "Flags", set: []string{"type", "author", "content"}, typ: "agent.thought", author: "agent:bmo", content: `{"a":1}`,
			want: `[{"type":"agent.thought","content":{"a":1},"author_id":"agent:bmo"}]`},
		{name: "FlagsText", set: []string{"type", "author", "content"}, typ: "agent.thought", author: "agent:bmo", content: `hello`,
			want: `[{"type":"agent.thought","content":"hello","author_id":"agent:bmo"}]`},
		{name: "FlagsMeta", set: []string{"type", "author", "content", "meta"}, typ: "agent.thought", author: "agent:bmo", content: `1`, meta: metaFlag{"k": "v"},
			want: `[{"type":"agent.thought","content":1,"author_id":"agent:bmo","metadata":{"k":"v"}}]`},
		{name: "RecordIDs", set: []string{"record-id"}, ids: []string{"r1", "record:r2"},
			want: `[{"type":"","content":null,"author_id":"","record_id":"r1"},{"type":"","content":null,"author_id":"","record_id":"r2"}]`},
		{name: "StdinContent", stdin: "plain text\n", fromStdin: true, set: []string{"type", "author"}, typ: "sys.context", author: "sys:x",
			want: `[{"type":"sys.context","content":"plain text","author_id":"sys:x"}]`},
		{name: "StdinObject", stdin: `{"type":"agent.plan","content":[1],"author_id":"agent:a"}`, fromStdin: true,
			want: `[{"type":"agent.plan","content":[1],"author_id":"agent:a"}]`},
		{name: "StdinArrayMixed", stdin: `[{"record_id":"r1"},{"type":"agent.plan","content":2,"author_id":"agent:a"}]`, fromStdin: true, set: []string{"author", "meta"}, author: "agent:b", meta: metaFlag{"k": "v"},
			want: `[{"type":"","content":null,"author_id":"","record_id":"r1"},{"type":"agent.plan","content":2,"author_id":"agent:b","metadata":{"k":"v"}}]`},
		{name: "StdinEmptyArray", stdin: `[]`, fromStdin: true, wantErr: "empty array"},
		{name: "StdinUnknownField", stdin: `{"type":"agent.plan","content":2,"author":"agent:a"}`, fromStdin: true, wantErr: `unknown field "author"`},
		{name: "StdinTwoValues", stdin: `{"record_id":"a"} {"record_id":"b"}`, fromStdin: true, wantErr: "more than one JSON value"},
		{name: "RecordIDWithType", set: []string{"record-id", "type"}, ids: []string{"r1"}, typ: "x", wantErr: "--record-id appends existing records"},
		{name: "NoType", wantErr: "--type is required"},
		{name: "NoContent", set: []string{"type", "author"}, typ: "x", author: "agent:a", wantErr: "--content is required"},
		{name: "StdinAndContent", fromStdin: true, set: []string{"content"}, wantErr: "exclusive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := map[string]bool{}
			for _, f := range tt.set {
				set[f] = true
			}
			meta := tt.meta
			if meta == nil {
				meta = metaFlag{}
			}
			refs, err := appendRefs(strings.NewReader(tt.stdin), set, tt.fromStdin, tt.typ, tt.author, tt.content, meta, tt.ids)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(refs)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

// dumpLines builds a JSON lines export of n records of about size bytes of
// content each, one ledger over them all and a session, in export order.
func dumpLines(n, size int) string {
	var b strings.Builder
	b.WriteString(`{"kind":"session","id":"s1","project":"p","name":"n","scope":"p","head_ledger_id":"l1","head_hash":"h","created_at":"t","updated_at":"t","open_turn_id":"t1"}` + "\n")
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprintf("r%d", i)
		fmt.Fprintf(&b, `{"kind":"record","id":"%s","hash":"h%d","content":"%s"}`+"\n", ids[i], i, strings.Repeat("x", size))
	}
	idsJSON, _ := json.Marshal(ids)
	fmt.Fprintf(&b, `{"kind":"ledger","id":"l1","hash":"hl","parent_ids":[],"record_ids":%s}`+"\n", idsJSON)
	return b.String()
}

func TestImportDump(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		input        string
		wantRequests int
		wantErr      string
	}{
		{"Small", dumpLines(3, 10), 1, ""},
		{"ManyRecords", dumpLines(1203, 10), 3, ""}, // 500 + 500 + 203 records with the ledger and the session
		{"BigRecords", dumpLines(8, 1<<20), 4, ""},  // 1 MiB each: 2 a request under 3 MiB
		{"Duplicates", dumpLines(2, 10) + dumpLines(2, 10), 1, ""},
		{"BlankLines", "\n\n" + dumpLines(1, 1) + "\n  \n", 1, ""},
		{"Empty", "", 0, "nothing to import"},
		{"OnlyBlank", "\n \n", 0, "nothing to import"},
		{"NotJSON", dumpLines(1, 1) + "nope\n", 0, "line 4: not a JSON object"},
		{"NoKind", `{"id":"x"}`, 0, `line 1: no "kind"`},
		{"UnknownKind", `{"kind":"turn","id":"x"}`, 0, `unknown kind "turn"`},
		{"NoID", `{"kind":"record","hash":"h"}`, 0, "record without an id"},
		{"BadField", `{"kind":"ledger","id":"l","parent_ids":"x"}`, 0, "line 1: ledger: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var reqs []client.ImportInput
			send := func(_ context.Context, in client.ImportInput) (*client.ImportResult, error) {
				reqs = append(reqs, in)
				return &client.ImportResult{Records: len(in.Records), Ledgers: len(in.Ledgers), Sessions: len(in.Sessions)}, nil
			}
			total, err := importDump(context.Background(), strings.NewReader(tt.input), send)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error containing %q", err, tt.wantErr)
				}
				if len(reqs) != 0 {
					t.Errorf("got %d requests sent before the bad line, want 0 (the error is found first)", len(reqs))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(reqs) != tt.wantRequests {
				t.Errorf("got %d requests, want %d", len(reqs), tt.wantRequests)
			}
			// Every request is within bounds; records come before the
			// ledger that lists them; the session comes last, without its
			// open turn.
			sent := map[string]bool{}
			for i, r := range reqs {
				if n := len(r.Records) + len(r.Ledgers) + len(r.Sessions); n == 0 || n > importMaxItems {
					t.Errorf("request %d holds %d items", i, n)
				}
				b, _ := json.Marshal(r)
				if len(b) > importMaxBytes+(1<<20) {
					t.Errorf("request %d is %d bytes", i, len(b))
				}
				for _, rec := range r.Records {
					sent[rec.ID] = true
				}
				for _, l := range r.Ledgers {
					for _, id := range l.RecordIDs {
						if !sent[id] {
							t.Errorf("ledger %s sent before its record %s", l.ID, id)
						}
					}
					sent[l.ID] = true
				}
				for _, s := range r.Sessions {
					if i != len(reqs)-1 {
						t.Errorf("session %s sent in request %d of %d, want the last", s.ID, i, len(reqs))
					}
					if !sent[*s.HeadLedgerID] {
						t.Errorf("session %s sent before its head", s.ID)
					}
					if s.OpenTurnID != nil {
						t.Errorf("session %s sent with open turn %s", s.ID, *s.OpenTurnID)
					}
				}
			}
			if total.Sessions != 1 || total.Ledgers != 1 {
				t.Errorf("got total %+v, want 1 session and 1 ledger", total)
			}
		})
	}

	t.Run("ServerError", func(t *testing.T) {
		calls := 0
		send := func(context.Context, client.ImportInput) (*client.ImportResult, error) {
			calls++
			return nil, &client.Error{Code: client.EInvalid, Message: "records[0].hash: mismatch"}
		}
		_, err := importDump(context.Background(), strings.NewReader(dumpLines(600, 1)), send)
		var ke *client.Error
		if !errors.As(err, &ke) || ke.Code != client.EInvalid || !strings.Contains(err.Error(), "import request 1") {
			t.Errorf("got %v, want the server's error naming request 1", err)
		}
		if calls != 1 {
			t.Errorf("got %d requests, want the import to stop after the first failed", calls)
		}
	})
}

// FuzzJSONLReader feeds arbitrary input to the reader import uses: it must
// never panic, always end (io.EOF or an error), and every item it returns
// must be usable: a known kind, its object and an id.
func FuzzJSONLReader(f *testing.F) {
	for _, s := range []string{
		dumpLines(2, 3),
		`{"kind":"record","id":"a","content":{"x":[1,2]},"metadata":{"k":"v"}}`,
		`{"kind":"ledger","id":"l","parent_ids":["p"],"record_ids":["a","a"]}`,
		`{"kind":"session","id":"s","head_ledger_id":null}`,
		`{"kind":null}`, `{"kind":1}`, `{"kind":"record"}`, `null`, `[]`, `"x"`, "\n\n", "{\"kind\":\"record\",\"id\":\"\xff\"}",
		`{"kind":"record","id":"a","kind":"ledger"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d := newJSONLReader(strings.NewReader(string(data)))
		for i := 0; ; i++ {
			if i > len(data)+1 {
				t.Fatalf("more items than lines in %d bytes", len(data))
			}
			it, err := d.Next()
			if err == io.EOF {
				return
			}
			if err != nil {
				if !strings.HasPrefix(err.Error(), "line ") {
					t.Fatalf("error %q does not name the line", err)
				}
				return
			}
			ok := it.ID != "" && it.Size > 0
			switch it.Kind {
			case "record":
				ok = ok && it.Record != nil && it.Record.ID == it.ID
			case "ledger":
				ok = ok && it.Ledger != nil && it.Ledger.ID == it.ID
			case "session":
				ok = ok && it.Session != nil && it.Session.ID == it.ID
			default:
				ok = false
			}
			if !ok {
				t.Fatalf("got unusable item %+v", it)
			}
		}
	})
}
