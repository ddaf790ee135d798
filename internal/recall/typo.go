package recall

// EditDistance is the optimal string alignment distance between a and b,
// in runes: insertions, deletions, substitutions, and swaps of two
// neighbouring runes ("teh" for "the" is one edit, as people mistype).
func EditDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// d[i][j] is the distance between ra[:i] and rb[:j]; three rows suffice.
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

// MaxEdits is how many edits a word of this many runes may be from the
// word it meant and still be taken for it: none below four runes (too many
// short words are one edit apart), one up to seven, two from eight on.
func MaxEdits(runes int) int {
	switch {
	case runes < 4:
		return 0
	case runes < 8:
		return 1
	}
	return 2
}
