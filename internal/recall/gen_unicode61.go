//go:build ignore

// gen_unicode61 writes unicode61.txt (read by unicode61_table.go): which code points SQLite's FTS5
// unicode61 tokenizer (remove_diacritics 2) keeps in tokens, and what it
// folds each one to, read from the engine Kura ships by tokenizing every
// code point. Run it after upgrading modernc.org/sqlite:
//
//	go run gen_unicode61.go
//
// The store's tests hold Tokens to the engine, so a table left stale by an
// upgrade fails them; TestUnicode61Table pins the counts and digest the
// generator last wrote.
package main

import (
	"bytes"
	"database/sql"
	"fmt"
	"log"
	"os"
	"unicode/utf8"

	_ "modernc.org/sqlite"
)

func main() {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		log.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	for _, q := range []string{
		"CREATE VIRTUAL TABLE t USING fts5(a, content='', tokenize='unicode61 remove_diacritics 2')",
		"CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')",
	} {
		if _, err := db.Exec(q); err != nil {
			log.Fatal(err)
		}
	}
	tx, err := db.Begin()
	if err != nil {
		log.Fatal(err)
	}
	st, err := tx.Prepare("INSERT INTO t(rowid, a) VALUES(?, ?)")
	if err != nil {
		log.Fatal(err)
	}
	// Each code point between two q's: a separator leaves two tokens "q",
	// a token character one token, q + its folding + q.
	for c := rune(1); c <= utf8.MaxRune; c++ {
		if !utf8.ValidRune(c) {
			continue
		}
		if _, err := st.Exec(c, "q"+string(c)+"q"); err != nil {
			log.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		log.Fatal(err)
	}
	rows, err := db.Query("SELECT doc, term FROM v")
	if err != nil {
		log.Fatal(err)
	}
	tokens := map[rune][]string{}
	for rows.Next() {
		var d int64
		var term string
		if err := rows.Scan(&d, &term); err != nil {
			log.Fatal(err)
		}
		tokens[rune(d)] = append(tokens[rune(d)], term)
	}
	if err := rows.Err(); err != nil {
		log.Fatal(err)
	}
	var ranges [][2]rune
	var folds [][2]rune
	for c := rune(1); c <= utf8.MaxRune; c++ {
		ts := tokens[c]
		if len(ts) != 1 {
			continue // a separator (or a surrogate)
		}
		if n := len(ranges); n > 0 && ranges[n-1][1] == c-1 {
			ranges[n-1][1] = c
		} else {
			ranges = append(ranges, [2]rune{c, c})
		}
		t := ts[0]
		mid := []rune(t[1 : len(t)-1])
		switch {
		case len(mid) == 1 && mid[0] == c:
		case len(mid) == 1:
			folds = append(folds, [2]rune{c, mid[0]})
		case len(mid) == 0:
			folds = append(folds, [2]rune{c, 0})
		default:
			log.Fatalf("U+%04X folds to %q: more than one code point", c, t)
		}
	}
	var b bytes.Buffer
	b.WriteString("# tokens: code point ranges unicode61 keeps in tokens (first last, hex)\n")
	for _, r := range ranges {
		fmt.Fprintf(&b, "%X %X\n", r[0], r[1])
	}
	b.WriteString("# folds: token code point and what it folds to (0: dropped)\n")
	for _, f := range folds {
		fmt.Fprintf(&b, "%X %X\n", f[0], f[1])
	}
	if err := os.WriteFile("unicode61.txt", b.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
	log.Printf("%d token ranges, %d foldings", len(ranges), len(folds))
}
