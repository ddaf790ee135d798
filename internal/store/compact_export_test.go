package store

// SetCompactChunk makes compaction delete at most n seqs per transaction
// until the returned function restores the default.
func SetCompactChunk(n int64) (restore func()) {
	old := compactChunk
	compactChunk = n
	return func() { compactChunk = old }
}
