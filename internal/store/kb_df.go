package store

import (
	"slices"

	"github.com/kura-memory/kura/internal/kb"
)

// Term kinds of kb_df.
const (
	dfWord = 0
	dfKey  = 1
)

// dfDelta accumulates changes to the document frequencies of a job and
// writes them in one multi-row upsert.
type dfDelta map[dfTerm]int

type dfTerm struct {
	sp   int64
	kind int
	term string
}

func (d dfDelta) add(sp int64, kind int, terms []string, by int) {
	for _, t := range terms {
		d[dfTerm{sp, kind, t}] += by
	}
}

// rekey records a key set changing from one list to another.
func (d dfDelta) rekey(sp int64, from, to []string) {
	fa, fb := kb.FoldKeys(from), kb.FoldKeys(to)
	for _, k := range fa {
		if !slices.Contains(fb, k) {
			d[dfTerm{sp, dfKey, k}]--
		}
	}
	for _, k := range fb {
		if !slices.Contains(fa, k) {
			d[dfTerm{sp, dfKey, k}]++
		}
	}
}

// write also moves the generation of every space whose postings changed,
// even by a net zero (one entry's key moved to another entry).
func (d dfDelta) write(tx *Tx) error {
	args := make([]any, 0, 4*len(d))
	var sps []int64
	for t, n := range d {
		if n != 0 {
			args = append(args, t.sp, t.kind, t.term, n)
		}
		if !slices.Contains(sps, t.sp) {
			sps = append(sps, t.sp)
		}
	}
	for _, sp := range sps {
		if _, err := tx.Exec(qKBBumpGen, sp); err != nil {
			return err
		}
	}
	return kbRows["df"].exec(tx, args)
}
