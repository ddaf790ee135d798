package recall

import "sort"

// RRFK is the constant of reciprocal-rank fusion: how much the first ranks
// outweigh the later ones. 60 is the value the method was published with
// and works well without tuning.
const RRFK = 60

// Fuse merges ranked lists of ids (best first) by reciprocal-rank fusion:
// an id scores the sum of 1/(RRFK + rank) over the lists it appears in
// (rank from 1). Lists whose scores are not comparable (bm25 and cosine)
// fuse by rank alone. Ties keep the order of first appearance, lists taken
// in order, so the result is deterministic.
func Fuse(lists ...[]string) []Fused {
	pos := map[string]int{}
	var out []Fused
	for li, l := range lists {
		for r, id := range l {
			i, ok := pos[id]
			if !ok {
				i = len(out)
				pos[id] = i
				out = append(out, Fused{ID: id, Ranks: make([]int, len(lists))})
			}
			if out[i].Ranks[li] == 0 {
				out[i].Ranks[li] = r + 1
				out[i].Score += 1 / float64(RRFK+r+1)
			}
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Score > out[b].Score })
	return out
}

// Fused is an id's place in a fusion: its fused score and its rank in each
// list (0: absent from that list).
type Fused struct {
	ID    string
	Score float64
	Ranks []int
}
