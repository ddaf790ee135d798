package store

import (
	"context"

	"github.com/kura-memory/kura/internal/kb"
	"github.com/kura-memory/kura/internal/kura"
)

// LookupKB runs kb.LookupQueries for q in one snapshot and returns the
// first that matches anything (Count says how many matched in all).
func (db *DB) LookupKB(ctx context.Context, name, scope, q string, limit int) (*kura.KBPage, error) {
	if err := validKBName(name); err != nil {
		return nil, err
	}
	if !kura.ValidKBScope(scope) {
		return nil, kura.Invalid("scope", "scope must be empty (the default scope) or a slug")
	}
	rtx, err := db.kbRead(ctx)
	if err != nil {
		return nil, err
	}
	defer rtx.end()
	var page *kura.KBPage
	for _, lq := range kb.LookupQueries(scope, q) {
		lq.Limit = limit
		if page, err = queryKB(ctx, rtx, name, &lq); err != nil || page.Count > 0 {
			break
		}
	}
	return page, mapErr(err)
}
