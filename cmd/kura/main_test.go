package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/kuradtest"
)

// runKura runs the CLI in-process against baseURL and returns what it printed
// and its exit code.
func runKura(t *testing.T, baseURL string, stdin io.Reader, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	env := func(k string) string {
		if k == "KURA_URL" {
			return baseURL
		}
		return ""
	}
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, stdin, &out, &errOut, env)
	return out.String(), errOut.String(), code
}

// deadURL is an address nothing listens on: commands that fail before any
// request must not notice it, those that send one fail with a transport error.
func deadURL(t *testing.T) string {
	t.Helper()
	return "http://" + kuradtest.FreeAddr(t)
}

func TestRun_CommandLine(t *testing.T) {
	t.Parallel()
	url := deadURL(t)
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantOut    string // substring of stdout
		wantErrOut string // substring of stderr
	}{
		{"NoCommand", nil, exitUsage, "", "usage: kura"},
		{"OnlyGlobalFlag", []string{"--json"}, exitUsage, "", "usage: kura"},
		{"HelpFlag", []string{"--help"}, exitOK, "commands:", ""},
		{"Help", []string{"help"}, exitOK, "verify", ""},
		{"HelpCommand", []string{"help", "put"}, exitOK, "-meta", ""},
		{"HelpUnknown", []string{"help", "nope"}, exitUsage, "", `unknown command "nope"`},
		{"CommandHelpFlag", []string{"verify", "-h"}, exitOK, "usage: kura verify", ""},
		{"UnknownCommand", []string{"frobnicate"}, exitUsage, "", `unknown command "frobnicate"`},
		{"UnknownFlag", []string{"show", "x", "--nope"}, exitUsage, "", "flag provided but not defined: -nope"},
		{"DanglingFlag", []string{"put", "--type"}, exitUsage, "", "flag needs an argument: --type"},
		{"Version", []string{"version"}, exitOK, "kura ", ""},
		{"VersionJSON", []string{"version", "--json"}, exitOK, `"version"`, ""},
		{"VersionFlag", []string{"--version"}, exitOK, "kura ", ""},
		{"VersionFlagSingleDash", []string{"-version"}, exitOK, "kura ", ""},
		{"VersionFlagJSON", []string{"--json", "--version"}, exitOK, `"version"`, ""},
		{"MistypedCommand", []string{"sessoin", "list"}, exitUsage, "", `kura: unknown command "sessoin": did you mean "session"?`},
		{"MistypedCommandPrefix", []string{"mem", "list", "hashi"}, exitUsage, "", `did you mean "memory"?`},
		{"MistypedSubcommand", []string{"turn", "opne", "s", "--instruction", "x"}, exitUsage, "", `kura: unknown command "turn opne": did you mean "turn open"?`},
		{"MistypedSubcommandAfterFlag", []string{"--json", "session", "lsit"}, exitUsage, "", `did you mean "session list"?`},
		{"HelpMistyped", []string{"help", "sessoin"}, exitUsage, "", `did you mean "session"?`},
		{"LedgerNewNothingAsks", []string{"ledger", "new", "--label", "x"}, exitFail, "", "kura: cannot reach kurad at "}, // an empty ledger is kurad's to make
		{"LedgerNewDanglingParent", []string{"ledger", "new", "r", "--parent"}, exitUsage, "", "flag needs an argument: --parent"},
		{"LedgerMistypedNew", []string{"ledger", "nwe", "r1"}, exitUsage, "", `"nwe" is not a ledger id: did you mean "ledger new"?`},
		{"HelpLedgerShowsNew", []string{"help", "ledger"}, exitOK, "kura ledger new [--label L]", ""},
		{"ShowNoID", []string{"show"}, exitUsage, "", "show takes one record id"},
		{"ShowTwoIDs", []string{"show", "a", "b"}, exitUsage, "", "show takes one record id"},
		{"LedgerNoID", []string{"ledger", "--records"}, exitUsage, "", "ledger takes one ledger id"},
		{"VerifyNoID", []string{"--json", "verify"}, exitUsage, "", "verify takes one ledger or session"},
		{"VerifyTwoIDs", []string{"verify", "a", "b"}, exitUsage, "", "verify takes one ledger or session"},
		{"VerifySessionAsks", []string{"verify", "session:x"}, exitFail, "", "kura: cannot reach kurad at "},
		{"VerifyBadExpect", []string{"verify", "session:x", "--expect-head-hash", "abc"}, exitUsage, "", "is not a hex SHA-256"},
		{"LogNoSession", []string{"log"}, exitUsage, "", "log takes one session"},
		{"LogNegativeLimit", []string{"log", "s", "--limit", "-1"}, exitUsage, "", "--limit must not be negative"},
		{"LogBadLimit", []string{"log", "s", "--limit", "ten"}, exitUsage, "", "invalid value"},
		{"GroupNoCommand", []string{"turn"}, exitUsage, "", "kura turn: a command is required"},
		{"GroupOnlyFlags", []string{"session", "--json"}, exitUsage, "", "session new"},
		{"GroupHelpFlag", []string{"turn", "--help"}, exitOK, "turn append", ""},
		{"GroupUnknown", []string{"turn", "frob"}, exitUsage, "", `unknown command "turn frob"`},
		{"HelpGroup", []string{"help", "session"}, exitOK, "session reflog", ""},
		{"HelpSubcommand", []string{"help", "turn", "open"}, exitOK, "-context-record", ""},
		{"SubcommandHelpFlag", []string{"turn", "close", "-h"}, exitOK, "usage: kura turn close", ""},
		{"GlobalFlagBeforeSubcommand", []string{"--json", "turn", "--url", "http://127.0.0.1:1", "show"}, exitUsage, "", "turn show takes one turn"},
		{"SessionNewOneArg", []string{"session", "new", "hashi"}, exitUsage, "", "session new takes a project and a name"},
		{"SessionShowNoArg", []string{"session", "show"}, exitUsage, "", "session show takes one session"},
		{"SessionListArg", []string{"session", "list", "hashi"}, exitUsage, "", "filter with --project"},
		{"SessionReflogNoArg", []string{"session", "reflog"}, exitUsage, "", "session reflog takes one session"},
		{"TurnOpenNoSession", []string{"turn", "open", "--instruction", "x"}, exitUsage, "", "turn open takes one session"},
		{"TurnOpenNoInstruction", []string{"turn", "open", "s"}, exitUsage, "", "--instruction is required"},
		{"TurnOpenNegativeDeadline", []string{"turn", "open", "s", "--instruction", "x", "--deadline", "-5"}, exitUsage, "", "--deadline must not be negative"},
		{"TurnOpenBudgetWithoutMemory", []string{"turn", "open", "s", "--instruction", "x", "--memory-budget", "10"}, exitUsage, "", "--memory-budget needs --memory"},
		{"TurnAppendNoTurn", []string{"turn", "append", "--record-id", "r"}, exitUsage, "", "turn append takes one turn"},
		{"TurnAppendNothing", []string{"turn", "append", "t"}, exitUsage, "", "--type is required"},
		{"TurnAppendNoAuthor", []string{"turn", "append", "t", "--type", "agent.thought"}, exitUsage, "", "--author is required"},
		{"TurnAppendNoContent", []string{"turn", "append", "t", "--type", "agent.thought", "--author", "agent:x"}, exitUsage, "", "--content is required"},
		{"TurnAppendRecordIDAndContent", []string{"turn", "append", "t", "--record-id", "r", "--content", "1"}, exitUsage, "", "--record-id appends existing records"},
		{"TurnAppendRecordIDAndStdin", []string{"turn", "append", "t", "-", "--record-id", "r"}, exitUsage, "", "--record-id appends existing records"},
		{"TurnAppendContentAndStdin", []string{"turn", "append", "t", "--stdin", "--content", "1"}, exitUsage, "", "exclusive"},
		{"TurnAppendStdinNotObject", []string{"turn", "append", "t", "-"}, exitUsage, "", "not a record object"},
		{"TurnAppendBadEpoch", []string{"turn", "append", "t", "--epoch", "x"}, exitUsage, "", "invalid value"},
		{"TurnCloseBadStatus", []string{"turn", "close", "t", "--status", "done"}, exitUsage, "", "--status must be complete or failed"},
		{"TurnCloseTwoTurns", []string{"turn", "close", "a", "b"}, exitUsage, "", "turn close takes one turn"},
		{"TurnClaimTwoTurns", []string{"turn", "claim", "a", "b"}, exitUsage, "", "turn claim takes one turn"},
		{"TurnRenewNoEpoch", []string{"turn", "renew", "t"}, exitUsage, "", "--epoch is required"},
		{"TurnListArg", []string{"turn", "list", "x"}, exitUsage, "", "turn list takes no arguments"},
		{"TurnIdempotencyKeyTooLong", []string{"turn", "close", "t", "--idempotency-key", strings.Repeat("k", 129)}, exitFail, "", "at most 128"},
		{"ExportNoSession", []string{"export", "--format=git"}, exitUsage, "", "export takes one session"},
		{"ExportNoFormat", []string{"export", "s"}, exitUsage, "", "--format is required"},
		{"ExportBadFormat", []string{"export", "s", "--format=tar"}, exitUsage, "", `--format must be git or jsonl, not "tar"`},
		{"ImportTwoFiles", []string{"import", "a", "b"}, exitUsage, "", "import takes at most one file"},
		{"ImportMissingFile", []string{"import", "/nonexistent/kura.jsonl"}, exitFail, "", "no such file"},
		{"ImportEmptyStdin", []string{"import"}, exitFail, "", "nothing to import"},
		{"DiffOneID", []string{"diff", "a"}, exitUsage, "", "diff takes two ledger ids"},
		{"InfoArgs", []string{"info", "x"}, exitUsage, "", "info takes no arguments"},
		{"PutNoType", []string{"put", "--author", "agent:x", "--content", "1"}, exitUsage, "", "--type is required"},
		{"PutNoAuthor", []string{"put", "--type", "agent.thought", "--content", "1"}, exitUsage, "", "--author is required"},
		{"PutNoContent", []string{"put", "--type", "agent.thought", "--author", "agent:x"}, exitUsage, "", "--content is required"},
		{"PutContentAndStdin", []string{"put", "--content", "1", "-"}, exitUsage, "", "exclusive"},
		{"PutExtraArg", []string{"put", "x"}, exitUsage, "", `unexpected argument "x"`},
		{"PutBadMeta", []string{"put", "--meta", "novalue"}, exitUsage, "", "is not key=value"},
		{"PutStdinNotObject", []string{"put", "-"}, exitUsage, "", "not a record input object"},
		{"Unreachable", []string{"info"}, exitFail, "", "kura: cannot reach kurad at " + url + " (connection refused): is kurad running? (KURA_URL or --url sets the address)\n"},
		{"UnreachableRead", []string{"show", "01a1fdca-0000-7000-8000-000000000000"}, exitFail, "", "kura: cannot reach kurad at " + url + " (connection refused)"},
		{"UnreachableFollow", []string{"events", "--follow"}, exitFail, "", "kura: cannot reach kurad at " + url + " (connection refused)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runKura(t, url, nil, tt.args...)
			if code != tt.wantCode {
				t.Errorf("got exit %d, want %d (stderr %q)", code, tt.wantCode, errOut)
			}
			if !strings.Contains(out, tt.wantOut) {
				t.Errorf("got stdout %q, want it to contain %q", out, tt.wantOut)
			}
			if !strings.Contains(errOut, tt.wantErrOut) {
				t.Errorf("got stderr %q, want it to contain %q", errOut, tt.wantErrOut)
			}
		})
	}
}

func TestRun_URLFlagBeatsEnvironment(t *testing.T) {
	t.Parallel()
	flagURL := deadURL(t)
	_, errOut, code := runKura(t, "http://127.0.0.1:1", nil, "info", "--url", flagURL)
	if code != exitFail || !strings.Contains(errOut, strings.TrimPrefix(flagURL, "http://")) {
		t.Errorf("got exit %d, stderr %q, want a failure naming %s", code, errOut, flagURL)
	}
}

func TestRun_UnknownHostUnreachable(t *testing.T) {
	t.Parallel()
	// .invalid never resolves (RFC 2606), so the lookup fails fast, offline.
	_, errOut, code := runKura(t, "http://kurad.invalid:7700", nil, "info")
	want := "kura: cannot reach kurad at http://kurad.invalid:7700 (cannot resolve kurad.invalid)"
	if code != exitFail || !strings.HasPrefix(errOut, want) {
		t.Errorf("got exit %d, stderr %q, want 1 and %q", code, errOut, want)
	}
}

func TestSuggest(t *testing.T) {
	t.Parallel()
	top := topLevelNames()
	tests := []struct {
		word       string
		candidates []string
		want       string
	}{
		{"sessoin", top, "session"},
		{"sesion", top, "session"},
		{"verfy", top, "verify"},
		{"evnets", top, "events"},
		{"shwo", top, "show"},
		{"mem", top, "memory"}, // the only command it begins
		{"s", top, ""},         // begins several: no guess
		{"frobnicate", top, ""},
		{"xyz", top, ""},
		{"opne", subcommandNames("turn"), "open"},
		{"clsoe", subcommandNames("turn"), "close"},
		{"lsit", subcommandNames("session"), "list"},
		{"nwe", subcommandNames("ledger"), "new"},
		{"frob", subcommandNames("turn"), ""},
		{"", top, ""},
	}
	for _, tt := range tests {
		if got := suggest(tt.word, tt.candidates); got != tt.want {
			t.Errorf("suggest(%q): got %q, want %q", tt.word, got, tt.want)
		}
	}
}

func TestAsContent(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{`{"a":1}`, `{"a":1}`},
		{` [1, 2] `, `[1, 2]`},
		{`42`, `42`},
		{`true`, `true`},
		{`"quoted"`, `"quoted"`},
		{`hello world`, `"hello world"`},
		{``, `""`},
		{`{"a":`, `"{\"a\":"`},
		{"tab\tand \"quote\"", `"tab\tand \"quote\""`},
	}
	for _, tt := range tests {
		got := asContent([]byte(tt.in))
		if string(got) != tt.want {
			t.Errorf("asContent(%q): got %s, want %s", tt.in, got, tt.want)
		}
		if !json.Valid(got) {
			t.Errorf("asContent(%q): %s is not valid JSON", tt.in, got)
		}
	}
}
