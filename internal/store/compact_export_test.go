package store

// SetCompactChunk makes db's compactions delete at most n seqs per
// transaction until the returned function restores the default.
func SetCompactChunk(db *DB, n int64) (restore func()) {
	old := db.compactChunk.Swap(n)
	return func() { db.compactChunk.Store(old) }
}
