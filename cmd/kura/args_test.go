package main

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
)

// testFlagSet has the kinds of flags the commands use: booleans, strings and
// a repeatable value.
func testFlagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Bool("json", false, "")
	fs.Bool("stdin", false, "")
	fs.String("type", "", "")
	fs.String("url", "", "")
	fs.Var(metaFlag{}, "meta", "")
	return fs
}

func TestReorderArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      []string
		want    []string
		wantErr bool
	}{
		{"Empty", nil, []string{}, false},
		{"FlagsFirstAlready", []string{"--json", "id"}, []string{"--json", "id"}, false},
		{"BoolAfter", []string{"id", "--json"}, []string{"--json", "id"}, false},
		{"ValueAfter", []string{"id", "--type", "agent.thought"}, []string{"--type", "agent.thought", "id"}, false},
		{"ValueWithEquals", []string{"id", "--type=x", "other"}, []string{"--type=x", "id", "other"}, false},
		{"SingleDash", []string{"id", "-type", "x", "-json"}, []string{"-type", "x", "-json", "id"}, false},
		{"ValueLooksLikeFlag", []string{"id", "--type", "--json"}, []string{"--type", "--json", "id"}, false},
		{"ValueIsDash", []string{"--url", "-", "x"}, []string{"--url", "-", "x"}, false},
		{"StdinDash", []string{"-", "--type", "x"}, []string{"--type", "x", "-"}, false},
		{"BoolDoesNotTakeValue", []string{"--json", "id"}, []string{"--json", "id"}, false},
		{"BoolWithEquals", []string{"id", "--json=false"}, []string{"--json=false", "id"}, false},
		{"Repeatable", []string{"--meta", "a=1", "id", "--meta", "b=2"}, []string{"--meta", "a=1", "--meta", "b=2", "id"}, false},
		{"UnknownFlagKept", []string{"id", "--nope", "x"}, []string{"--nope", "id", "x"}, false},
		{"HelpFlag", []string{"id", "-h"}, []string{"-h", "id"}, false},
		{"DoubleDash", []string{"a", "--json", "--", "--type", "b"}, []string{"--json", "--", "a", "--type", "b"}, false},
		{"DoubleDashAsValue", []string{"a", "--type", "--", "b"}, []string{"--type", "--", "a", "b"}, false},
		{"OrderKept", []string{"a", "--type", "t", "b", "--json", "c"}, []string{"--type", "t", "--json", "a", "b", "c"}, false},
		{"DanglingValue", []string{"id", "--type"}, []string{"--type", "id"}, true},
		{"DanglingValueAlone", []string{"--type"}, []string{"--type"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := reorderArgs(testFlagSet(), tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("got error %v, want error %v", err, tt.wantErr)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestReorderArgs_Parse checks the point of reordering: the flag package
// then sees every flag, wherever it was written.
func TestReorderArgs_Parse(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--json", "--type", "x", "--meta", "k=v", "a", "b"},
		{"a", "--json", "b", "--type", "x", "--meta", "k=v"},
		{"a", "b", "--type=x", "-meta=k=v", "-json"},
	} {
		fs := testFlagSet()
		ordered, err := reorderArgs(fs, args)
		if err != nil {
			t.Fatal(err)
		}
		if err := fs.Parse(ordered); err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		if got := fs.Lookup("json").Value.String(); got != "true" {
			t.Errorf("%q: got json=%s, want true", args, got)
		}
		if got := fs.Lookup("type").Value.String(); got != "x" {
			t.Errorf("%q: got type=%q, want x", args, got)
		}
		if got := fs.Lookup("meta").Value.String(); got != "k=v" {
			t.Errorf("%q: got meta=%q, want k=v", args, got)
		}
		if !slices.Equal(fs.Args(), []string{"a", "b"}) {
			t.Errorf("%q: got positionals %q, want [a b]", args, fs.Args())
		}
	}
}

func TestSplitCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in       []string
		wantName string
		wantRest []string
	}{
		{nil, "", nil},
		{[]string{"verify", "id"}, "verify", []string{"id"}},
		{[]string{"--json", "verify", "id"}, "verify", []string{"--json", "id"}},
		{[]string{"verify", "id", "--json"}, "verify", []string{"id", "--json"}},
		{[]string{"--url", "http://x", "info"}, "info", []string{"--url", "http://x"}},
		{[]string{"--url=http://x", "info", "--json"}, "info", []string{"--url=http://x", "--json"}},
		{[]string{"--json"}, "", []string{"--json"}},
		{[]string{"--", "info"}, "", []string{"--", "info"}},
		{[]string{"-h"}, "", []string{"-h"}},
	}
	for _, tt := range tests {
		var g globalFlags
		fs := flag.NewFlagSet("kura", flag.ContinueOnError)
		g.register(fs)
		in := slices.Clone(tt.in)
		name, rest := splitCommand(fs, in)
		if name != tt.wantName || !slices.Equal(rest, tt.wantRest) {
			t.Errorf("%q: got %q %q, want %q %q", tt.in, name, rest, tt.wantName, tt.wantRest)
		}
		if !slices.Equal(in, tt.in) {
			t.Errorf("%q: the input was changed to %q", tt.in, in)
		}
	}
}

// FuzzReorderArgs checks, for any argument list (NUL-separated in the
// input), that reordering never panics, keeps every argument exactly once,
// is idempotent, and leaves the flag package the positionals in their
// original order.
func FuzzReorderArgs(f *testing.F) {
	for _, s := range []string{
		"", "id\x00--json", "--type\x00x\x00id", "a\x00--\x00--type\x00b", "-\x00--type",
		"--meta\x00a=1\x00--meta=b=2\x00x", "---x\x00-=\x00--=x\x00-h", "--type\x00--\x00-",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var args []string
		if s != "" {
			args = strings.Split(s, "\x00")
		}
		in := slices.Clone(args)
		got, err := reorderArgs(testFlagSet(), args)
		if !slices.Equal(args, in) {
			t.Fatalf("input changed: %q -> %q", in, args)
		}
		a, b := slices.Clone(in), slices.Clone(got)
		slices.Sort(a)
		slices.Sort(b)
		if !slices.Equal(a, b) {
			t.Fatalf("not a permutation: %q -> %q", in, got)
		}
		if err != nil {
			return
		}
		again, err := reorderArgs(testFlagSet(), got)
		if err != nil || !slices.Equal(again, got) {
			t.Fatalf("not idempotent: %q -> %q -> %q (%v)", in, got, again, err)
		}
		// Where the flag package accepts the reordered list, the
		// positionals it leaves are those of the input, in order.
		fs := testFlagSet()
		if fs.Parse(got) != nil {
			return
		}
		var want []string
		for i := 0; i < len(in); i++ {
			switch {
			case in[i] == "--":
				want = append(want, in[i+1:]...)
				i = len(in)
			case isFlag(in[i]):
				if takesValue(fs, in[i]) {
					i++
				}
			default:
				want = append(want, in[i])
			}
		}
		if !slices.Equal(fs.Args(), want) && !(len(fs.Args()) == 0 && len(want) == 0) {
			t.Fatalf("%q: got positionals %q, want %q", in, fs.Args(), want)
		}
	})
}

// TestCommandFlags parses the new commands' command lines with their real
// flag sets, flags before and after the positional arguments.
func TestCommandFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		command   string
		args      []string
		wantArgs  []string
		wantFlags map[string]string
	}{
		{"log", []string{"s1", "--limit", "5"}, []string{"s1"}, map[string]string{"limit": "5"}},
		{"log", []string{"--limit=5", "hashi/morning", "--json"}, []string{"hashi/morning"}, map[string]string{"limit": "5", "json": "true"}},
		{"verify", []string{"session:s1", "--expect-head-hash", "h", "--local"}, []string{"session:s1"}, map[string]string{"expect-head-hash": "h", "local": "true"}},
		{"session new", []string{"hashi", "--scope", "mem", "morning", "--from-ledger", "l1"}, []string{"hashi", "morning"}, map[string]string{"scope": "mem", "from-ledger": "l1"}},
		{"session list", []string{"--project", "hashi", "--cursor", "c"}, nil, map[string]string{"project": "hashi", "cursor": "c"}},
		{"turn open", []string{"s1", "--instruction", "Summarise", "--context-record", "r1", "--dispatch", "worker", "--context-record", "r2", "--deadline", "600"}, []string{"s1"},
			map[string]string{"instruction": "Summarise", "context-record": "r1,r2", "dispatch": "worker", "deadline": "600", "author": defaultAuthor}},
		{"turn open", []string{"--author", "user:oles", "s1", "--instruction=-x", "--memory", "rest api", "--memory-budget", "8000", "--idempotency-key", "k1"}, []string{"s1"},
			map[string]string{"author": "user:oles", "instruction": "-x", "memory": "rest api", "memory-budget": "8000", "idempotency-key": "k1"}},
		{"turn append", []string{"t1", "--epoch", "3", "--type", "agent.thought", "--author", "agent:bmo", "--content", `{"a":1}`, "--meta", "k=v"}, []string{"t1"},
			map[string]string{"epoch": "3", "type": "agent.thought", "author": "agent:bmo", "content": `{"a":1}`, "meta": "k=v"}},
		{"turn append", []string{"t1", "--record-id", "r1", "--record-id", "r2"}, []string{"t1"}, map[string]string{"record-id": "r1,r2", "epoch": "0"}},
		{"turn append", []string{"t1", "-", "--epoch=2"}, []string{"t1", "-"}, map[string]string{"epoch": "2", "stdin": "false"}},
		{"turn close", []string{"t1", "--status", "failed", "--epoch", "7"}, []string{"t1"}, map[string]string{"status": "failed", "epoch": "7"}},
		{"turn close", []string{"t1"}, []string{"t1"}, map[string]string{"status": "complete"}},
		{"turn claim", []string{"t1", "--worker", "agent:hashi", "--lease", "60"}, []string{"t1"}, map[string]string{"worker": "agent:hashi", "lease": "60"}},
		{"turn list", []string{"--session", "s1", "--state", "open", "--limit", "10"}, nil, map[string]string{"session": "s1", "state": "open", "limit": "10"}},
		{"export", []string{"s1", "--format=git"}, []string{"s1"}, map[string]string{"format": "git", "out": ""}},
		{"export", []string{"--out", "x.jsonl", "s1", "--format", "jsonl"}, []string{"s1"}, map[string]string{"format": "jsonl", "out": "x.jsonl"}},
		{"import", []string{"-", "--json"}, []string{"-"}, map[string]string{"json": "true"}},
	}
	for _, tt := range tests {
		t.Run(tt.command+" "+strings.Join(tt.args, " "), func(t *testing.T) {
			cmd, ok := lookupCommand(tt.command)
			if !ok {
				t.Fatalf("no command %q", tt.command)
			}
			fs := flag.NewFlagSet(tt.command, flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			var g globalFlags
			g.register(fs)
			cmd.setup(fs)
			ordered, err := reorderArgs(fs, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if err := fs.Parse(ordered); err != nil {
				t.Fatal(err)
			}
			if got := fs.Args(); !slices.Equal(got, tt.wantArgs) && !(len(got) == 0 && len(tt.wantArgs) == 0) {
				t.Errorf("got positionals %q, want %q", got, tt.wantArgs)
			}
			for name, want := range tt.wantFlags {
				f := fs.Lookup(name)
				if f == nil {
					t.Errorf("no flag --%s", name)
					continue
				}
				if got := f.Value.String(); got != want {
					t.Errorf("got --%s=%q, want %q", name, got, want)
				}
			}
		})
	}
}

// TestCommandTable checks that names are unique and that a group is a
// command of its own only where that cannot hide a subcommand: run takes the
// word after "ledger" as a subcommand whenever one has that name, which is
// safe because "ledger"'s own argument is a ledger id (a UUID), never "new",
// and "log"'s is a session (a UUID, session:<id> or <project>/<name>, which
// holds a slash), never "checkpoint", "prove" or "consistency".
// Another such command needs the same argument, and a place here.
func TestCommandTable(t *testing.T) {
	t.Parallel()
	commandGroups := map[string]bool{"ledger": true, "log": true}
	seen := map[string]bool{}
	for _, c := range commandTable() {
		if seen[c.name] {
			t.Errorf("command %q is listed twice", c.name)
		}
		seen[c.name] = true
		if group, _, ok := strings.Cut(c.name, " "); ok {
			if _, clash := lookupCommand(group); clash && !commandGroups[group] {
				t.Errorf("%q is both a command and the group of %q", group, c.name)
			}
		}
	}
}
