package store_test

import (
	"os"
	"strings"
	"testing"

	"github.com/kura-memory/kura/internal/recall"
)

// TestRecall_IndexFormAgreesWithFTS5 holds recall.IndexForm, which the
// knowledge-base explanations use to say which words matched, to the
// tokenizer kb_fts indexes with: every word of an English word list (and
// accented and capitalized words) is indexed by SQLite FTS5 under exactly
// the form IndexForm gives it.
func TestRecall_IndexFormAgreesWithFTS5(t *testing.T) {
	t.Parallel()
	body, err := os.ReadFile("testdata/english_words.txt")
	if err != nil {
		t.Fatal(err)
	}
	words := strings.Fields(string(body))
	words = append(words, "Addresses", "CONNECTING", "Café", "naïve", "Ångström", "Über", "résumés", "façades",
		"ab", "a", "by", "sky", "skies", "dying", "yelling", "bowdlerize", "generalizations", "oscillators",
		strings.Repeat("ing", 21), strings.Repeat("ness", 17), "東京タワー", "ουσίες", "x1ing", "v2s", "\u212aelvin", "İstanbul", "ΣΊΣΥΦΟΣ", "ǅemal", "STRAẞE", "ﬁnding", "Øresund", "Łódź", "ĳssel", "Æther", "œuvre", "ÞORN", "Đakovo", "ſtreets")
	db := rawDB(t, t.TempDir()+"/stem.db")
	db.SetMaxOpenConns(1)
	for _, q := range []string{
		"CREATE VIRTUAL TABLE w USING fts5(word, tokenize = 'porter unicode61 remove_diacritics 2')",
		"CREATE VIRTUAL TABLE v USING fts5vocab(w, 'instance')",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range words {
		if _, err := tx.Exec("INSERT INTO w(rowid, word) VALUES (?, ?)", i+1, w); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query("SELECT term, doc FROM v")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[int]string{}
	for rows.Next() {
		var term string
		var doc int
		if err := rows.Scan(&term, &doc); err != nil {
			t.Fatal(err)
		}
		got[doc] = term
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	bad := 0
	for i, w := range words {
		if want := recall.IndexForm(w); got[i+1] != want {
			bad++
			if bad <= 30 {
				t.Errorf("%q: FTS5 indexes %q, IndexForm gives %q", w, got[i+1], want)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d words disagree", bad, len(words))
	}
}
