package store

import (
	"encoding/hex"
	"slices"
	"strings"

	"github.com/kura-memory/kura/internal/kb"
)

// An entry's rows in kb_terms and kb_fts have the rowid sp<<kbSpaceBits |
// eid (migration 0013): a space is one rowid range, in insertion order.
const kbSpaceBits = 40

// maxKBEID bounds eids so that they fit beside the space in a rowid.
const maxKBEID = 1<<kbSpaceBits - 1

func kbRowid(sp, eid int64) int64 { return sp<<kbSpaceBits | eid }

// kbRange is the rowid range of a space's rows.
func kbRange(sp int64) (lo, hi int64) { return sp << kbSpaceBits, sp<<kbSpaceBits | maxKBEID }

// Token prefixes of kb_terms: a folded identifier word, a folded key.
const (
	tokWord = "w"
	tokKey  = "k"
)

// kbToken is the kb_terms token of a folded word or key: its UTF-8 bytes
// in hex behind the prefix of its kind. The tokenizer finds nothing in it
// to fold or split, so tokens are equal exactly when the terms are.
func kbToken(kind int, term string) string {
	p := tokWord
	if kind == dfKey {
		p = tokKey
	}
	return p + hex.EncodeToString([]byte(term))
}

// termsColumn is the kb_terms text of an entry: the tokens of its words
// and of its folded keys.
func termsColumn(words, keys []string) string {
	var b strings.Builder
	b.Grow(3 * (len(words) + len(keys)) * 8)
	for _, w := range words {
		b.WriteString(tokWord)
		b.WriteString(hex.EncodeToString([]byte(w)))
		b.WriteByte(' ')
	}
	for _, k := range keys {
		b.WriteString(tokKey)
		b.WriteString(hex.EncodeToString([]byte(k)))
		b.WriteByte(' ')
	}
	return b.String()
}

// keysText is the keys column of kb_fts: the keys, one a line.
func keysText(keys []string) string { return strings.Join(keys, "\n") }

// sameKeys reports whether two key lists are one key set once folded
// (then their index rows, signatures included, are the same).
func sameKeys(a, b []string) bool {
	fa, fb := kb.FoldKeys(a), kb.FoldKeys(b)
	if len(fa) != len(fb) {
		return false
	}
	for _, k := range fa {
		if !slices.Contains(fb, k) {
			return false
		}
	}
	return true
}

// rekey rewrites an entry's strict-index row when its key set changed.
func (tx *Tx) rekey(sp, eid int64, identifier string, from, to []string) error {
	if sameKeys(from, to) {
		return nil
	}
	if _, err := tx.Exec(qKBUpdateTerms, termsColumn(kb.Words(identifier), kb.FoldKeys(to)), kbRowid(sp, eid)); err != nil {
		return err
	}
	d := dfDelta{}
	d.rekey(sp, from, to)
	return d.write(tx)
}
