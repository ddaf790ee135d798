package store

// ResetScopeCache drops every kept scope read, so the next compile reads
// its scope afresh.
func (db *DB) ResetScopeCache() {
	db.scopes.mu.Lock()
	db.scopes.m, db.scopes.bytes = nil, 0
	db.scopes.mu.Unlock()
}

// ScopeCacheHits counts compiles that used a kept scope read.
func (db *DB) ScopeCacheHits() int64 {
	db.scopes.mu.Lock()
	defer db.scopes.mu.Unlock()
	return db.scopes.hits
}
