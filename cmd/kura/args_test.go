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
