package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kura-memory/kura/client"
	"github.com/kura-memory/kura/internal/kb"
	"github.com/kura-memory/kura/internal/kb/kbtest"
	"github.com/kura-memory/kura/internal/kuradtest"
)

func TestE2E_KB(t *testing.T) {
	t.Parallel()
	url := kuradtest.Start(t)
	uni, aave := kbtest.Uniswap, kbtest.AAVE

	t.Run("Put", func(t *testing.T) {
		// Flags before and after the arguments; the value from a flag.
		out := kuraOK(t, url, "", "kb", "put", "--key", "Uniswap", "knowledge", uni.Identifier, "--key", "Contract Address",
			"--key", "Ethereum", "--key", "Dex", "--key", "Dex contracts", "--value", uni.Value)
		if out != "created \"Uniswap contract addresses on Ethereum mainnet.\" in knowledge (version 1)\n" {
			t.Errorf("created: got %q", out)
		}
		// The value from stdin, and from a file.
		var e client.KBEntry
		kuraJSON(t, url, aave.Value, &e, "kb", "put", "knowledge", aave.Identifier, "--value-file", "-",
			"--key", "AAVE", "--key", "Contract Address", "--key", "Ethereum", "--key", "Lending", "--key", "Money market contracts")
		if e.Value != aave.Value || !slices.Equal(e.Keys, aave.Keys) || e.Version != 1 {
			t.Errorf("stdin value: got %+v", e)
		}
		f := filepath.Join(t.TempDir(), "v.txt")
		if err := os.WriteFile(f, []byte("line one\nline two\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		out = kuraOK(t, url, "", "kb", "put", "knowledge", "Scoped note", "--value-file", f, "--scope", "notes")
		if out != "created \"Scoped note\" in knowledge/notes (version 1)\n" {
			t.Errorf("file value: got %q", out)
		}
		out = kuraOK(t, url, "", "kb", "put", "knowledge", "Scoped note", "--value", "short", "--scope", "notes")
		if out != "replaced \"Scoped note\" in knowledge/notes (version 2)\n" {
			t.Errorf("replaced: got %q", out)
		}
	})

	t.Run("QuerySpecExamples", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want []string
		}{
			{[]string{"--identifier", "Uniswap"}, []string{uni.Identifier}},
			{[]string{"--identifier", "contract addresses"}, []string{uni.Identifier, aave.Identifier}},
			{[]string{"--identifier", "AAVE Ethereum"}, []string{aave.Identifier}},
			{[]string{"--identifier", "Solana"}, nil},
			{[]string{"--key", "Ethereum"}, []string{uni.Identifier, aave.Identifier}},
			{[]string{"--key", "Contract"}, nil},
			{[]string{"--key", "dex"}, []string{uni.Identifier}},
			{[]string{"--any-keys", "Dex,Lending"}, []string{uni.Identifier, aave.Identifier}},
			{[]string{"--any-keys", "Solana,Polygon"}, nil},
			{[]string{"--all-keys", "Dex,Lending"}, nil},
			{[]string{"--all-keys", "Ethereum,Contract Address"}, []string{uni.Identifier, aave.Identifier}},
			{[]string{"--all-keys", "AAVE", "--all-keys", "Lending"}, []string{aave.Identifier}},
			{[]string{"--exact-identifier", aave.Identifier}, []string{aave.Identifier}},
			{nil, []string{uni.Identifier, aave.Identifier}},
		} {
			var p client.KBPage
			kuraJSON(t, url, "", &p, append([]string{"kb", "query", "knowledge"}, tc.args...)...)
			var got []string
			for _, e := range p.Entries {
				got = append(got, e.Identifier)
			}
			if !slices.Equal(got, tc.want) || p.Count != len(tc.want) {
				t.Errorf("%q: got %q (count %d), want %q", tc.args, got, p.Count, tc.want)
			}
		}
		out := kuraOK(t, url, "", "kb", "query", "knowledge", "--key", "ethereum")
		ls := lines(out)
		if len(ls) != 3 || !strings.HasPrefix(ls[0], uni.Identifier) || !strings.Contains(ls[0], "v1") || !strings.Contains(ls[0], "Dex contracts") ||
			!strings.HasPrefix(ls[1], aave.Identifier) || ls[2] != "2 matches" {
			t.Errorf("human query: got\n%s", out)
		}
		out = kuraOK(t, url, "", "kb", "query", "knowledge", "--limit", "1")
		if ls := lines(out); len(ls) != 3 || ls[1] != "2 matches" || !strings.HasPrefix(ls[2], "more: --cursor ") {
			t.Errorf("paged: got\n%s", out)
		}
	})

	t.Run("Lookup", func(t *testing.T) {
		out := kuraOK(t, url, "", "kb", "lookup", "knowledge", "AAVE", "Ethereum")
		if want := "--- AAVE contract addresses on Ethereum mainnet. ---\nPool: 0x756745, MoneyMarket: 0x7890789, FlashLoan: 0xabc123\n\n"; out != want {
			t.Errorf("lookup: got %q, want %q", out, want)
		}
		if out := kuraOK(t, url, "", "kb", "lookup", "knowledge", "Solana"); out != "No knowledge found for: Solana\n" {
			t.Errorf("nothing found: got %q", out)
		}
		var j struct{ Q, Text string }
		kuraJSON(t, url, "", &j, "kb", "lookup", "knowledge", "Solana")
		if j.Q != "Solana" || j.Text != "No knowledge found for: Solana" {
			t.Errorf("--json: got %+v", j)
		}
		out = kuraOK(t, url, "", "kb", "lookup", "knowledge", "what", "is", "the", "uniswap", "router", "address")
		if !strings.HasPrefix(out, kb.RankedOnly+"--- "+uni.Identifier+" ---\n") {
			t.Errorf("ranked lookup: got %q", out)
		}
		out = kuraOK(t, url, "", "kb", "lookup", "knowledge", "--mode", "strict", "uniswap", "router", "address")
		if out != "No knowledge found for: uniswap router address\n" {
			t.Errorf("strict lookup: got %q", out)
		}
	})

	t.Run("Search", func(t *testing.T) {
		out := kuraOK(t, url, "", "kb", "search", "knowledge", "uniswop", "router")
		if ls := lines(out); len(ls) != 1 || !strings.Contains(ls[0], uni.Identifier) || !strings.Contains(ls[0], "typo_match: uniswop ~ uniswap") {
			t.Errorf("search: got\n%s", out)
		}
		var page struct{ Entries []struct{ Identifier string } }
		kuraJSON(t, url, "", &page, "kb", "search", "knowledge", "ethereum")
		if len(page.Entries) != 2 {
			t.Errorf("search --json: got %+v", page)
		}
	})

	t.Run("GetUpdateHistory", func(t *testing.T) {
		out := kuraOK(t, url, "", "kb", "get", "knowledge", uni.Identifier)
		if !strings.Contains(out, "keys        Uniswap, Contract Address, Ethereum, Dex, Dex contracts\n") || !strings.HasSuffix(out, "\n"+uni.Value+"\n") ||
			!strings.Contains(out, "version     1\n") {
			t.Errorf("get: got\n%s", out)
		}
		out = kuraOK(t, url, "", "kb", "update", "knowledge", uni.Identifier, "--value", kbtest.UpdatedValue)
		if out != "updated \"Uniswap contract addresses on Ethereum mainnet.\" in knowledge (version 2)\n" {
			t.Errorf("update: got %q", out)
		}
		var e client.KBEntry
		args := []string{"kb", "update", "knowledge", uni.Identifier}
		for _, k := range kbtest.UpdatedKeys {
			args = append(args, "--key", k)
		}
		kuraJSON(t, url, "", &e, args...)
		if !slices.Equal(e.Keys, kbtest.UpdatedKeys) || e.Value != kbtest.UpdatedValue || e.Version != 3 {
			t.Errorf("update keys: got %+v", e)
		}
		kuraJSON(t, url, "", &e, "kb", "get", "knowledge", uni.Identifier)
		if e.Version != 3 || e.Value != kbtest.UpdatedValue {
			t.Errorf("get --json: got %+v", e)
		}
		kuraOK(t, url, "", "kb", "update", "knowledge", uni.Identifier, "--no-keys")
		out = kuraOK(t, url, "", "kb", "history", "knowledge", uni.Identifier)
		ls := lines(out)
		if len(ls) != 5 || ls[0] != "\"Uniswap contract addresses on Ethereum mainnet.\" in knowledge: 4 versions" ||
			!strings.Contains(ls[1], "v1  put") || !strings.Contains(ls[2], "v2  update ") || !strings.Contains(ls[3], "v3  update_keys") ||
			!strings.Contains(ls[3], "AMM") || !strings.Contains(ls[4], "v4  update_keys") {
			t.Errorf("history: got\n%s", out)
		}
	})

	t.Run("StatsDelete", func(t *testing.T) {
		out := kuraOK(t, url, "", "kb", "stats", "knowledge")
		if want := "knowledge: 2 entries\n  " + uni.Identifier + "\n  " + aave.Identifier + "\n"; out != want {
			t.Errorf("stats: got %q, want %q", out, want)
		}
		out = kuraOK(t, url, "", "kb", "delete", "knowledge", uni.Identifier, "--idempotency-key", "del-uni")
		if out != "deleted \"Uniswap contract addresses on Ethereum mainnet.\" from knowledge\n" {
			t.Errorf("delete: got %q", out)
		}
		// The same key again: the first answer, not a 404.
		if again := kuraOK(t, url, "", "kb", "delete", "knowledge", uni.Identifier, "--idempotency-key", "del-uni"); again != out {
			t.Errorf("delete retried: got %q", again)
		}
		out = kuraOK(t, url, "", "kb", "history", "knowledge", uni.Identifier)
		if ls := lines(out); len(ls) != 6 || !slices.Equal(strings.Fields(ls[5])[:2], []string{"v5", "delete"}) || !slices.Equal(strings.Fields(ls[5])[3:], []string{"-", "-"}) {
			t.Errorf("history after delete: got\n%s", out)
		}
		if out := kuraOK(t, url, "", "kb", "stats", "knowledge", "--scope", "notes"); out != "knowledge/notes: 1 entry\n  Scoped note\n" {
			t.Errorf("stats of a scope: got %q", out)
		}
		if out := kuraOK(t, url, "", "kb", "delete", "knowledge", "--all", "--scope", "notes"); out != "cleared knowledge/notes: deleted 1 entry\n" {
			t.Errorf("clear: got %q", out)
		}
		var st client.KBStats
		kuraJSON(t, url, "", &st, "kb", "stats", "knowledge")
		if st.Count != 1 || !slices.Equal(st.Identifiers, []string{aave.Identifier}) {
			t.Errorf("default scope after clearing notes: %+v", st)
		}
	})

	t.Run("Errors", func(t *testing.T) {
		big := filepath.Join(t.TempDir(), "big.txt")
		if err := os.WriteFile(big, []byte(strings.Repeat("v", 4*65536+1)), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name   string
			args   []string
			code   int
			stderr string
		}{
			{"put 513 characters", []string{"kb", "put", "knowledge", strings.Repeat("é", 513), "--value", "v"}, exitFail, "kura: invalid_argument: identifier has 513 characters, at most 512 allowed"},
			{"put 33 keys", append([]string{"kb", "put", "knowledge", "x", "--value", "v"}, strings.Split(strings.Repeat("--key k ", 33), " ")[:66]...), exitFail, `"field":"keys"`},
			{"put without value", []string{"kb", "put", "knowledge", "x"}, exitUsage, "--value or --value-file is required"},
			{"put both values", []string{"kb", "put", "knowledge", "x", "--value", "a", "--value-file", "-"}, exitUsage, "not both"},
			{"put unquoted identifier", []string{"kb", "put", "knowledge", "two", "words", "--value", "v"}, exitUsage, "quote it"},
			{"put missing file", []string{"kb", "put", "knowledge", "x", "--value-file", "/nonexistent/v"}, exitFail, "no such file"},
			{"put value file too long", []string{"kb", "put", "knowledge", "x", "--value-file", big}, exitUsage, "more than 65536 characters"},
			{"put bad kb", []string{"kb", "put", "Knowledge", "x", "--value", "v"}, exitFail, "kura: invalid_argument: knowledge base name must be a slug"},
			{"put bad scope", []string{"kb", "put", "knowledge", "x", "--value", "v", "--scope", "Notes"}, exitFail, `"field":"scope"`},
			{"get unknown", []string{"kb", "get", "knowledge", "ghost"}, exitFail, "kura: not_found: no entry \"ghost\""},
			{"get other case", []string{"kb", "get", "knowledge", strings.ToLower(aave.Identifier)}, exitFail, "kura: not_found:"},
			{"update nothing", []string{"kb", "update", "knowledge", "x"}, exitUsage, "nothing to change"},
			{"update unknown", []string{"kb", "update", "knowledge", "ghost", "--value", "v"}, exitFail, "kura: not_found:"},
			{"update keys and no keys", []string{"kb", "update", "knowledge", "x", "--key", "a", "--no-keys"}, exitUsage, "do not go together"},
			{"delete unknown", []string{"kb", "delete", "knowledge", "ghost"}, exitFail, "kura: not_found:"},
			{"delete nothing", []string{"kb", "delete", "knowledge"}, exitUsage, "or --all"},
			{"delete all and identifier", []string{"kb", "delete", "knowledge", "x", "--all"}, exitUsage, "--all takes only"},
			{"query empty key", []string{"kb", "query", "knowledge", "--any-keys", "a,,b"}, exitFail, `"field":"any_keys"`},
			{"query extra argument", []string{"kb", "query", "knowledge", "words"}, exitUsage, "the conditions are flags"},
			{"lookup without question", []string{"kb", "lookup", "knowledge"}, exitUsage, "kb lookup takes"},
			{"search without question", []string{"kb", "search", "knowledge"}, exitUsage, "kb search takes"},
			{"history unknown", []string{"kb", "history", "knowledge", "ghost"}, exitFail, "kura: not_found:"},
			{"stats negative limit", []string{"kb", "stats", "knowledge", "--limit", "-1"}, exitUsage, "--limit must not be negative"},
			{"unknown subcommand", []string{"kb", "forget", "knowledge"}, exitUsage, `unknown command "kb forget"`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				out, errOut, code := runKura(t, url, strings.NewReader(""), tc.args...)
				if code != tc.code || !strings.Contains(errOut, tc.stderr) || out != "" {
					t.Errorf("got exit %d, stdout %q, stderr %q; want exit %d, stderr holding %q", code, out, errOut, tc.code, tc.stderr)
				}
			})
		}
	})

	t.Run("Help", func(t *testing.T) {
		out := kuraOK(t, url, "", "help", "kb")
		for _, sub := range []string{"put", "update", "get", "query", "lookup", "delete", "stats", "history"} {
			if !strings.Contains(out, "kb "+sub+" ") {
				t.Errorf("help kb lacks %q:\n%s", sub, out)
			}
		}
		if out := kuraOK(t, url, "", "help", "kb", "query"); !strings.Contains(out, "-any-keys") || !strings.Contains(out, "-scope") {
			t.Errorf("help kb query: got\n%s", out)
		}
	})
}
