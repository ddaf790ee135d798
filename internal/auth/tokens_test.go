package auth

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

const (
	tokBMO   = "s3cret-bmo"
	tokAdmin = "s3cret-admin"
)

func TestParseTokens(t *testing.T) {
	t.Parallel()
	hb, ha := HashToken(tokBMO), HashToken(tokAdmin)
	good := "# kura tokens\n\n" + hb + " agent:bmo writer hashi,mikado hashi  # the bot\n" + ha + " user:oles admin * *\n"
	es, err := ParseTokens(strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 || es[0].Line != 3 || es[1].Line != 4 {
		t.Fatalf("entries %+v", es)
	}
	p := es[0].Principal
	if p.Identity != "agent:bmo" || p.Role != RoleWriter || !p.AllowsScope("mikado") || p.AllowsScope("other") || !p.AllowsProject("hashi") || p.AllowsProject("mikado") || p.Anonymous {
		t.Fatalf("principal %+v", p)
	}
	if !es[1].Principal.AllProjects() || !es[1].Principal.AllScopes() {
		t.Fatalf("admin %+v", es[1].Principal)
	}

	bad := []struct{ name, text, want string }{
		{"four fields", hb + " agent:bmo writer *\n", "line 1: want 5 fields"},
		{"six fields", hb + " agent:bmo writer * * x\n", "line 1: want 5 fields"},
		{"short hash", "abc agent:bmo writer * *\n", "line 1: \"abc\" is not a lowercase hex SHA-256"},
		{"upper hash", strings.ToUpper(hb) + " agent:bmo writer * *\n", "not a lowercase hex"},
		{"bad identity", "\n" + hb + " bmo writer * *\n", "line 2: identity \"bmo\""},
		{"sys identity", hb + " sys:kurad admin * *\n", "sys: identities belong to kurad"},
		{"bad role", hb + " agent:bmo owner * *\n", "role \"owner\""},
		{"star in list", hb + " agent:bmo writer a,* *\n", "scopes: * stands alone"},
		{"bad project", hb + " agent:bmo writer * Hashi\n", "projects: \"Hashi\" is not a name"},
		{"empty item", hb + " agent:bmo writer a,,b *\n", "scopes: \"\" is not a name"},
		{"twice in list", hb + " agent:bmo writer a,a *\n", "scopes: a is listed twice"},
		{"same hash", hb + " agent:bmo writer * *\n" + hb + " agent:x writer * *\n", "line 2: the same token hash is on line 1"},
		{"identity with other rights", hb + " agent:bmo writer * *\n" + ha + " agent:bmo admin * *\n", "line 2: identity agent:bmo is on line 1 with other rights"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			es, err := ParseTokens(strings.NewReader(c.text))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
			if es != nil {
				t.Fatalf("a bad file yielded entries %v", es)
			}
		})
	}
	// Rotation: two tokens, one identity, the same rights.
	if _, err := ParseTokens(strings.NewReader(hb + " agent:bmo writer a b\n" + ha + " agent:bmo writer a b\n")); err != nil {
		t.Fatal(err)
	}
}

func TestTableLookupAndReplace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "tokens")
	os.WriteFile(path, []byte(HashToken(tokBMO)+" agent:bmo reader * *\n"), 0o600)
	es, err := LoadTokensFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tab := NewTable(es)
	if p, ok := tab.Lookup(tokBMO); !ok || p.Identity != "agent:bmo" {
		t.Fatalf("lookup %v %v", p, ok)
	}
	for _, bad := range []string{"", tokAdmin, tokBMO + " ", HashToken(tokBMO)} {
		if _, ok := tab.Lookup(bad); ok {
			t.Fatalf("token %q accepted", bad)
		}
	}
	changed := tab.Changed()
	select {
	case <-changed:
		t.Fatal("Changed is ready before any Replace")
	default:
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // lookups race with the swap under -race
		defer wg.Done()
		for range 200 {
			tab.Lookup(tokBMO)
		}
	}()
	tab.Replace([]Entry{{Hash: sha(tokAdmin), Principal: Principal{Identity: "user:a", Role: RoleAdmin}}})
	wg.Wait()
	if _, ok := tab.Lookup(tokBMO); ok {
		t.Fatal("a replaced token still works")
	}
	if p, ok := tab.Lookup(tokAdmin); !ok || p.Role != RoleAdmin || tab.Len() != 1 {
		t.Fatalf("lookup after replace %v %v", p, ok)
	}
	select { // a waiter taken before the Replace is woken by it
	case <-changed:
	default:
		t.Fatal("Changed taken before a Replace is not closed by it")
	}
	if tab.Changed() == changed {
		t.Fatal("Changed after a Replace is the closed channel")
	}
	var nilTab *Table
	if _, ok := nilTab.Lookup(tokBMO); ok || nilTab.Len() != 0 || nilTab.Changed() != nil {
		t.Fatal("nil table accepts")
	}
	if _, err := LoadTokensFile(filepath.Join(dir, "absent")); err == nil {
		t.Fatal("missing file loaded")
	}
}

func sha(tok string) (h [32]byte) {
	es, _ := ParseTokens(strings.NewReader(HashToken(tok) + " user:x reader * *\n"))
	return es[0].Hash
}

// FuzzParseTokens: the parser never panics, and whatever it accepts is
// well formed and renders back to a line that parses to the same entry.
func FuzzParseTokens(f *testing.F) {
	f.Add(HashToken("x") + " agent:bmo writer hashi,mikado hashi # c\n")
	f.Add("# only a comment\n\n")
	f.Add(HashToken("y") + " user:a admin * *\n" + HashToken("z") + " tool:t reader a b\n")
	f.Fuzz(func(t *testing.T, text string) {
		es, err := ParseTokens(strings.NewReader(text))
		if err != nil {
			if es != nil {
				t.Fatal("entries with an error")
			}
			return
		}
		for _, e := range es {
			p := e.Principal
			if !ValidIdentity(p.Identity) || p.Role < RoleReader || p.Role > RoleAdmin || len(p.Scopes) == 0 || len(p.Projects) == 0 {
				t.Fatalf("accepted %+v", e)
			}
			line := FormatLine(HashToken("k"), p)
			back, err := ParseTokens(strings.NewReader(line))
			if err != nil || len(back) != 1 || back[0].Principal.Identity != p.Identity || !sameList(back[0].Principal.Scopes, p.Scopes) || !sameList(back[0].Principal.Projects, p.Projects) {
				t.Fatalf("%q does not round-trip: %v", line, err)
			}
		}
	})
}
