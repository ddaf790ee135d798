package store

import (
	"testing"

	"github.com/kura-memory/kura/internal/recall"
)

// TestPGTSQuery holds the translation of the store's FTS5 expressions to
// tsquery text: every form the store writes (search_rank.go, kbsearch.go,
// kbquery.go) and the quoting of what a query word may hold.
func TestPGTSQuery(t *testing.T) {
	for _, c := range []struct {
		name, expr string
		exact      bool
		want       string
	}{
		{"one word", `"Running"`, false, `'run'`},
		{"any word", `"uniswap" OR "routers"`, false, `'uniswap' | 'router'`},
		{"a phrase", `"rate-limit"`, false, `('rate' <-> 'limit')`},
		{"rare and common", `("a1" OR "b2") AND ("c3")`, false, `('a1' | 'b2') & ('c3')`},
		{"nothing to match", `"--"`, false, pgNever},
		{"a doubled quote", `"it""s"`, false, `('it' <-> 's')`},
		{"column filter and not", `{identifier} : ("deploy" AND "keys")` + ` NOT ("rare")`, false,
			`('deploi':A & 'kei':A) & !('rare')`},
		{"kb_terms tokens as they are", `"w6162" AND ("k61" OR "k62")`, true, `'w6162' & ('k61' | 'k62')`},
	} {
		t.Run(c.name, func(t *testing.T) {
			tokens := recall.Tokens
			if c.exact {
				tokens = ftsExact
			}
			if got := pgTSQuery(c.expr, tokens, kbFTSColumns); got != c.want {
				t.Fatalf("pgTSQuery(%q) = %q, want %q", c.expr, got, c.want)
			}
		})
	}
}

// TestPGDoc holds the document text: terms sorted, positions in order
// with a gap between fields, each labelled with its field's class, and
// quotes escaped.
func TestPGDoc(t *testing.T) {
	got := pgDoc([]string{"Route routes", "o'brien", ""}, []byte("ABC"))
	want := `'brien':5B 'o':4B 'rout':1A,2A`
	if got != want {
		t.Fatalf("pgDoc = %q, want %q", got, want)
	}
	if got := pgLexeme(`a'b\c`); got != `'a''b\\c'` {
		t.Fatalf("pgLexeme = %s", got)
	}
}
