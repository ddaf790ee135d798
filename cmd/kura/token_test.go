package main

import (
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/auth"
)

// TestTokenNew: the printed line parses, holds the printed token's hash
// (never the token) and its rights; two runs never give the same token.
func TestTokenNew(t *testing.T) {
	t.Parallel()
	out, errOut, code := runKura(t, deadURL(t), nil, "token", "new", "--identity", "agent:bmo", "--role", "reader", "--scopes", "hashi,mikado", "--projects", "hashi")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	tok, line := lines[0], lines[len(lines)-1]
	if !strings.HasPrefix(tok, "kura_") || len(tok) != len("kura_")+43 || strings.Contains(line, tok) {
		t.Fatalf("token %q line %q", tok, line)
	}
	es, err := auth.ParseTokens(strings.NewReader(line))
	if err != nil {
		t.Fatal(err)
	}
	p, ok := auth.NewTable(es).Lookup(tok)
	if !ok || p.Identity != "agent:bmo" || p.Role != auth.RoleReader || !p.AllowsScope("mikado") || p.AllowsProject("mikado") {
		t.Fatalf("lookup %+v %v", p, ok)
	}
	again, _, _ := runKura(t, deadURL(t), nil, "token", "new")
	if strings.Split(again, "\n")[0] == tok {
		t.Fatal("the same token twice")
	}
	for _, bad := range [][]string{{"--identity", "sys:kurad"}, {"--role", "owner"}, {"--scopes", "A"}, {"--projects", "a,*"}, {"extra"}} {
		if _, _, code := runKura(t, deadURL(t), nil, append([]string{"token", "new"}, bad...)...); code != 2 {
			t.Errorf("token new %v: exit %d, want 2", bad, code)
		}
	}
}
