package recall

// WithinEdits reports whether EditDistance(a, b) <= k, without allocating
// and stopping as soon as the distance must exceed k: it is what a lookup
// of near words runs against every candidate. (A row's least value never
// exceeds the next row's: a swap reaches row i from row i-2 at a cost no
// lower than the diagonal step through row i-1.)
func WithinEdits(a, b string, k int) bool {
	var ra, rb [maxWordLen + 1]rune
	na, nb := 0, 0
	for _, r := range a {
		if na == maxWordLen {
			return EditDistance(a, b) <= k
		}
		ra[na] = r
		na++
	}
	for _, r := range b {
		if nb == maxWordLen {
			return EditDistance(a, b) <= k
		}
		rb[nb] = r
		nb++
	}
	if d := na - nb; d > k || -d > k {
		return false
	}
	// The rows of EditDistance's table, as there.
	var rows [3][maxWordLen + 2]int
	prev2, prev, cur := &rows[0], &rows[1], &rows[2]
	for j := 0; j <= nb; j++ {
		prev[j] = j
	}
	for i := 1; i <= na; i++ {
		cur[0] = i
		best := cur[0]
		for j := 1; j <= nb; j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
			best = min(best, cur[j])
		}
		if best > k {
			return false
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[nb] <= k
}
