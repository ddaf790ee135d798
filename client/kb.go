package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/kura-memory/kura/internal/kura"
)

// The knowledge-base domain types, aliased for programs outside this module.
type (
	// KBEntryInput is the body of an upsert: the entry of (kb, scope) with
	// this exact identifier is created or replaced whole.
	KBEntryInput = kura.KBEntryInput
	// KBEntry is one knowledge-base entry.
	KBEntry = kura.KBEntry
	// KBPatch changes the value, the keys or both of one entry; nil fields
	// are left as they are.
	KBPatch = kura.KBPatch
	// KBBatch answers a batch upsert.
	KBBatch = kura.KBBatch
	// KBPage is one page of a query, with the number of matches in all.
	KBPage = kura.KBPage
	// KBStats is the size of a scope and one page of its identifiers.
	KBStats = kura.KBStats
	// KBHistory is every version of an identifier, oldest first.
	KBHistory = kura.KBHistory
	// KBVersion is one version of an identifier; a delete or clear is a
	// tombstone with null keys and value.
	KBVersion = kura.KBVersion
	// KBSearchPage answers a ranked search: entries best first.
	KBSearchPage = kura.KBSearchPage
	// KBHit is one ranked entry with its score and what matched.
	KBHit = kura.KBHit
)

// Lookup modes (LookupKBMode): ranked (the default) puts the strict
// matches first and the best-ranked other entries after them; strict
// answers the strict matches only.
const (
	KBLookupRanked = kura.KBLookupRanked
	KBLookupStrict = kura.KBLookupStrict
)

// KB history operations (KBVersion.Op).
const (
	KBOpPut        = kura.KBOpPut
	KBOpUpdate     = kura.KBOpUpdate
	KBOpUpdateKeys = kura.KBOpUpdateKeys
	KBOpDelete     = kura.KBOpDelete
	KBOpClear      = kura.KBOpClear
)

// KBQuery selects entries of one scope of a knowledge base; every
// condition set must hold. Words and keys compare case-insensitively.
type KBQuery struct {
	Scope string // "" is the default scope
	// Identifier: every word of it appears among the identifier's words
	// (words are runs of letters and digits). A text without words
	// matches every entry.
	Identifier *string
	// ExactIdentifier: the identifier is exactly this (case-sensitive).
	ExactIdentifier *string
	Key             *string  // a key equals it
	AnyKeys         []string // a key equals one of them; non-nil and empty matches nothing
	AllKeys         []string // every one of them equals a key; empty asks nothing
	Limit           int      // page size, at most 1000
	Cursor          string   // NextCursor of the previous page
}

// addKeys sends a key list as repeated parameters, each one key. kurad
// splits a parameter given once on commas, so a lone key holding a comma
// is sent twice: repeated, each value is one key, and a key named twice
// asks nothing more than once.
func addKeys(q url.Values, name string, keys []string) {
	if len(keys) == 1 && strings.Contains(keys[0], ",") {
		keys = []string{keys[0], keys[0]}
	}
	for _, k := range keys {
		q.Add(name, k)
	}
}

func (o KBQuery) values() url.Values {
	q := url.Values{}
	set := func(k string, v *string) {
		if v != nil {
			q.Set(k, *v)
		}
	}
	if o.Scope != "" {
		q.Set("scope", o.Scope)
	}
	set("identifier", o.Identifier)
	set("exact_identifier", o.ExactIdentifier)
	set("key", o.Key)
	addKeys(q, "any_keys", o.AnyKeys)
	addKeys(q, "all_keys", o.AllKeys)
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Cursor != "" {
		q.Set("cursor", o.Cursor)
	}
	return q
}

// kbEntryWire and kbPatchWire leave out what is not set: an absent keys
// field of a patch keeps the keys, while [] clears them.
type kbEntryWire struct {
	Scope      string   `json:"scope,omitzero"`
	Identifier string   `json:"identifier"`
	Keys       []string `json:"keys,omitzero"`
	Value      string   `json:"value"`
}

type kbPatchWire struct {
	Scope      string   `json:"scope,omitzero"`
	Identifier string   `json:"identifier"`
	Value      *string  `json:"value,omitzero"`
	Keys       []string `json:"keys,omitzero"`
}

func kbPath(name string, parts ...string) string {
	return "/v1/kb/" + esc(name) + "/" + strings.Join(parts, "/")
}

// scopeValues is ?scope= (left out for the default scope) and more.
func scopeValues(scope string, kv ...string) url.Values {
	q := url.Values{}
	if scope != "" {
		q.Set("scope", scope)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	return q
}

// PutKBEntry upserts one entry of knowledge base name
// (PUT /v1/kb/{kb}/entries) by exact identifier within in.Scope: created
// is true when the entry is new (201), false when it replaced one (200).
// A replaced entry keeps its id and position.
func (c *Client) PutKBEntry(ctx context.Context, name string, in KBEntryInput) (e *KBEntry, created bool, err error) {
	if isEmpty(name) {
		return nil, false, errMissingID("kb")
	}
	var out KBEntry
	status := 0
	ctx = context.WithValue(ctx, keyStatus, &status)
	if err := c.do(ctx, "put kb entry", http.MethodPut, kbPath(name, "entries"), nil, kbEntryWire(in), &out); err != nil {
		return nil, false, err
	}
	return &out, status == http.StatusCreated, nil
}

// PutKBEntries upserts up to 1000 entries in one transaction, all or
// nothing (PUT /v1/kb/{kb}/entries/batch), applied in order.
func (c *Client) PutKBEntries(ctx context.Context, name string, ins []KBEntryInput) (*KBBatch, error) {
	if isEmpty(name) {
		return nil, errMissingID("kb")
	}
	body := struct {
		Entries []kbEntryWire `json:"entries"`
	}{Entries: make([]kbEntryWire, len(ins))}
	for i := range ins {
		body.Entries[i] = kbEntryWire(ins[i])
	}
	var out KBBatch
	if err := c.do(ctx, "put kb entries", http.MethodPut, kbPath(name, "entries", "batch"), nil, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// UpdateKBEntry changes the value, the keys or both of the entry with
// this exact identifier (PATCH /v1/kb/{kb}/entries); not_found when there
// is none. Keys set to an empty, non-nil list clears them.
func (c *Client) UpdateKBEntry(ctx context.Context, name string, p KBPatch) (*KBEntry, error) {
	if isEmpty(name) {
		return nil, errMissingID("kb")
	}
	var out KBEntry
	if err := c.do(ctx, "update kb entry", http.MethodPatch, kbPath(name, "entries"), nil, kbPatchWire(p), &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteKBEntry deletes the entry with this exact identifier
// (DELETE /v1/kb/{kb}/entries?identifier=); not_found when there is none.
// Its history is kept.
func (c *Client) DeleteKBEntry(ctx context.Context, name, scope, identifier string) error {
	if isEmpty(name) {
		return errMissingID("kb")
	}
	if identifier == "" {
		return errMissingID("identifier")
	}
	return c.do(ctx, "delete kb entry", http.MethodDelete, kbPath(name, "entries"), scopeValues(scope, "identifier", identifier), nil, nil)
}

// ClearKB removes every entry of one scope (DELETE ...?all=true) and
// returns how many there were. Other scopes are untouched.
func (c *Client) ClearKB(ctx context.Context, name, scope string) (int, error) {
	if isEmpty(name) {
		return 0, errMissingID("kb")
	}
	var out kura.KBDeleted
	if err := c.do(ctx, "clear kb", http.MethodDelete, kbPath(name, "entries"), scopeValues(scope, "all", "true"), nil, &out); err != nil {
		return 0, err
	}
	return out.Deleted, nil
}

// QueryKB returns one page of the entries of a scope matching q, in
// insertion order, and how many match in all (GET /v1/kb/{kb}/entries).
// A query without conditions lists every entry.
func (c *Client) QueryKB(ctx context.Context, name string, q KBQuery) (*KBPage, error) {
	if isEmpty(name) {
		return nil, errMissingID("kb")
	}
	if q.AnyKeys != nil && len(q.AnyKeys) == 0 {
		// "Any of no keys" matches nothing; the HTTP form has no way to
		// say it, and no need to ask.
		return &KBPage{Entries: []KBEntry{}}, nil
	}
	var out KBPage
	if err := c.do(ctx, "query kb", http.MethodGet, kbPath(name, "entries"), q.values(), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetKBEntry returns the entry of scope with exactly this identifier, or
// a not_found *Error.
func (c *Client) GetKBEntry(ctx context.Context, name, scope, identifier string) (*KBEntry, error) {
	if identifier == "" {
		return nil, errMissingID("identifier")
	}
	p, err := c.QueryKB(ctx, name, KBQuery{Scope: scope, ExactIdentifier: &identifier, Limit: 1})
	if err != nil {
		return nil, err
	}
	if len(p.Entries) == 0 {
		where := "the default scope"
		if scope != "" {
			where = "scope " + scope
		}
		return nil, kura.Errorf(kura.ENotFound, "no entry %q in knowledge base %s, %s", identifier, name, where)
	}
	return &p.Entries[0], nil
}

// KBStats returns the number of entries of a scope and one page of its
// identifiers in insertion order (GET /v1/kb/{kb}/stats).
func (c *Client) KBStats(ctx context.Context, name, scope string, limit int, cursor string) (*KBStats, error) {
	if isEmpty(name) {
		return nil, errMissingID("kb")
	}
	q := scopeValues(scope)
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out KBStats
	if err := c.do(ctx, "kb stats", http.MethodGet, kbPath(name, "stats"), q, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// KBHistory returns one page of the versions of an identifier in a scope,
// oldest first (GET /v1/kb/{kb}/history); not_found when it never existed
// there.
func (c *Client) KBHistory(ctx context.Context, name, scope, identifier string, limit int, cursor string) (*KBHistory, error) {
	if isEmpty(name) {
		return nil, errMissingID("kb")
	}
	if identifier == "" {
		return nil, errMissingID("identifier")
	}
	q := scopeValues(scope, "identifier", identifier)
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	var out KBHistory
	if err := c.do(ctx, "kb history", http.MethodGet, kbPath(name, "history"), q, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// LookupKB asks a knowledge base a question the way a model's tool would
// (GET /v1/kb/{kb}/lookup) and returns kurad's plain-text answer as it is:
// "--- <identifier> ---\n<value>\n\n" per entry whose identifier holds
// every word of q (else per entry with a key equal to q), then the
// best-ranked other entries behind one line saying so, or
// "No knowledge found for: <q>". limit 0 is the server's default (100).
func (c *Client) LookupKB(ctx context.Context, name, scope, q string, limit int) (string, error) {
	return c.LookupKBMode(ctx, name, scope, q, "", limit)
}

// LookupKBMode is LookupKB in a given mode: KBLookupRanked (or "", the
// server's default) or KBLookupStrict (the strict matches only).
func (c *Client) LookupKBMode(ctx context.Context, name, scope, q, mode string, limit int) (string, error) {
	if isEmpty(name) {
		return "", errMissingID("kb")
	}
	v := scopeValues(scope, "q", q)
	if limit > 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	if mode != "" {
		v.Set("mode", mode)
	}
	// The answer is text: take the body raw, and still hand it to a
	// caller that asked for the raw answer.
	var raw json.RawMessage
	outer, _ := ctx.Value(keyRawResponse).(*json.RawMessage)
	if err := c.do(WithRawResponse(ctx, &raw), "kb lookup", http.MethodGet, kbPath(name, "lookup"), v, nil, nil); err != nil {
		return "", err
	}
	if outer != nil {
		*outer = append((*outer)[:0], raw...)
	}
	return string(raw), nil
}

// SearchKB ranks a scope's entries for a question in any words
// (GET /v1/kb/{kb}/search): best first, each with its score and the
// reasons it was found. limit 0 is the server's default (100).
func (c *Client) SearchKB(ctx context.Context, name, scope, q string, limit int) (*KBSearchPage, error) {
	if isEmpty(name) {
		return nil, errMissingID("kb")
	}
	v := scopeValues(scope, "q", q)
	if limit > 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	var out KBSearchPage
	if err := c.do(ctx, "kb search", http.MethodGet, kbPath(name, "search"), v, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
