package kura

import (
	"unicode/utf8"
)

// Knowledge-base limits (API.md, "Knowledge bases"). They count characters
// (Unicode code points), not bytes: a limit a caller hits earlier because
// its language needs more bytes per letter would be a limit on the language.
const (
	MaxKBIdentifier = 512
	MaxKBKeys       = 32
	MaxKBKey        = 128
	MaxKBValue      = 65536
	// MaxKBBatch bounds one batch upsert (one transaction).
	MaxKBBatch = 1000
)

// ValidKBScope reports whether s names a scope of a knowledge base: the
// default scope "" or a slug.
func ValidKBScope(s string) bool { return s == "" || ValidSlug(s) }

// KBScopeName is the name a knowledge-base scope goes by where a scope
// must have one: in token scope lists and as the project of its kb.changed
// events. The default scope "" is "default".
func KBScopeName(s string) string {
	if s == "" {
		return "default"
	}
	return s
}

// KBEntryInput is the body of an upsert: the entry of (kb, scope) with
// this exact identifier is created or replaced whole.
type KBEntryInput struct {
	Scope      string   `json:"scope"`
	Identifier string   `json:"identifier"`
	Keys       []string `json:"keys"`
	Value      string   `json:"value"`
}

// Validate checks the limits at their exact boundaries, in characters.
// field prefixes the field names in errors (for batches).
func (in *KBEntryInput) Validate(field string) error {
	if err := validKBScope(field+"scope", in.Scope); err != nil {
		return err
	}
	if err := ValidKBIdentifier(field+"identifier", in.Identifier); err != nil {
		return err
	}
	if err := ValidKBKeys(field+"keys", in.Keys); err != nil {
		return err
	}
	return ValidKBValue(field+"value", in.Value)
}

func validKBScope(field, s string) error {
	if !ValidKBScope(s) {
		return Invalid(field, "scope must be empty (the default scope) or a slug (lowercase letters, digits, - and _)")
	}
	return nil
}

// ValidKBIdentifier checks an identifier: non-empty UTF-8 of at most
// MaxKBIdentifier characters.
func ValidKBIdentifier(field, s string) error {
	if s == "" {
		return Invalid(field, "identifier is required")
	}
	if !utf8.ValidString(s) {
		return Invalid(field, "identifier is not valid UTF-8")
	}
	if n := utf8.RuneCountInString(s); n > MaxKBIdentifier {
		return Invalid(field, "identifier has %d characters, at most %d allowed", n, MaxKBIdentifier).WithDetail("limit", MaxKBIdentifier)
	}
	return nil
}

// ValidKBKeys checks a key list: at most MaxKBKeys keys, each non-empty
// UTF-8 of at most MaxKBKey characters. An empty list is allowed: such an
// entry is found by its identifier only.
func ValidKBKeys(field string, keys []string) error {
	if len(keys) > MaxKBKeys {
		return Invalid(field, "%d keys, at most %d allowed", len(keys), MaxKBKeys).WithDetail("limit", MaxKBKeys)
	}
	for i, k := range keys {
		switch {
		case k == "":
			return Invalid(field, "keys[%d] is empty", i).WithDetail("index", i)
		case !utf8.ValidString(k):
			return Invalid(field, "keys[%d] is not valid UTF-8", i).WithDetail("index", i)
		}
		if n := utf8.RuneCountInString(k); n > MaxKBKey {
			return Invalid(field, "keys[%d] has %d characters, at most %d allowed", i, n, MaxKBKey).WithDetail("index", i).WithDetail("limit", MaxKBKey)
		}
	}
	return nil
}

// ValidKBValue checks a value: UTF-8 of at most MaxKBValue characters. An
// empty value is allowed.
func ValidKBValue(field, s string) error {
	if !utf8.ValidString(s) {
		return Invalid(field, "value is not valid UTF-8")
	}
	// Counting stops early: a value far over the limit is refused without
	// walking all of it.
	if len(s) > MaxKBValue {
		n := 0
		for range s {
			if n == MaxKBValue {
				return Invalid(field, "value has more than %d characters, at most %d allowed", MaxKBValue, MaxKBValue).WithDetail("limit", MaxKBValue)
			}
			n++
		}
	}
	return nil
}

// KBPatch is the body of PATCH .../entries: a new value, new keys, or
// both, for the entry with this exact identifier. Nil means "leave it".
type KBPatch struct {
	Scope      string   `json:"scope"`
	Identifier string   `json:"identifier"`
	Value      *string  `json:"value"`
	Keys       []string `json:"keys"`
}

// Validate checks the patch; at least one of value and keys is required.
func (p *KBPatch) Validate() error {
	if err := validKBScope("scope", p.Scope); err != nil {
		return err
	}
	if err := ValidKBIdentifier("identifier", p.Identifier); err != nil {
		return err
	}
	if p.Value == nil && p.Keys == nil {
		return Invalid("value", "value or keys (or both) is required")
	}
	if p.Value != nil {
		if err := ValidKBValue("value", *p.Value); err != nil {
			return err
		}
	}
	return ValidKBKeys("keys", p.Keys)
}

// KBEntry is one knowledge-base entry as stored and served. ID names this
// incarnation of the entry: a replace keeps it, a delete ends it. Version
// counts every change to the identifier in its scope, across deletes.
type KBEntry struct {
	ID         string   `json:"id"`
	Scope      string   `json:"scope"`
	Identifier string   `json:"identifier"`
	Keys       []string `json:"keys"`
	Value      string   `json:"value"`
	Version    int      `json:"version"`
	CreatedAt  string   `json:"created_at"`
	UpdatedAt  string   `json:"updated_at"`
}

// KBQuery selects entries of one scope. Every condition given must hold
// (AND). Identifier: every word of it appears among the identifier's words;
// ExactIdentifier: the identifier is exactly this (case-sensitive, as an
// upsert compares); Key: a key equals it; AnyKeys: a key equals one of
// them; AllKeys: every one of them equals a key. Words and keys compare
// case-insensitively (internal/kb). Nil means the condition is not asked;
// a non-nil empty AnyKeys matches nothing and a non-nil empty AllKeys
// everything, as "any of none" and "all of none" do.
type KBQuery struct {
	Scope           string
	Identifier      *string
	ExactIdentifier *string
	Key             *string
	AnyKeys         []string
	AllKeys         []string
	After           int64 // cursor: the page starts after this position
	Limit           int
}

// KBPage is one page of a query: the matching entries in insertion order,
// the number of matches in all pages, and where the next page starts.
type KBPage struct {
	Entries    []KBEntry `json:"entries"`
	Count      int       `json:"count"`
	NextCursor string    `json:"next_cursor,omitempty"`
}

// KBSearch is GET /v1/kb/{kb}/search: a question in any words, ranked.
type KBSearch struct {
	Scope string
	Q     string
	Limit int
}

// KBHit is one entry of a ranked search, best first: the entry, its score
// (BM25: higher is better, comparable within one answer only) and which
// words matched where.
type KBHit struct {
	KBEntry
	Score   float64        `json:"score"`
	Reasons []SearchReason `json:"reasons"`
}

// KBSearchPage answers a ranked search.
type KBSearchPage struct {
	Entries []KBHit `json:"entries"`
}

// Lookup modes: ranked (the default) puts the strict matches first and the
// best-ranked other entries after them; strict answers the strict matches
// only, as the spec's tool bridge does.
const (
	KBLookupRanked = "ranked"
	KBLookupStrict = "strict"
)

// ValidKBLookupMode reports whether m is a lookup mode ("" is ranked).
func ValidKBLookupMode(m string) bool { return m == "" || m == KBLookupRanked || m == KBLookupStrict }

// KBLookup is GET /v1/kb/{kb}/lookup.
type KBLookup struct {
	Scope string
	Q     string
	Limit int
	Mode  string
}

// KBLookupResult is what a lookup found: the strict matches (entries whose
// identifier holds every word of the question, else whose key equals it),
// one page of them in insertion order and how many there are in all, then
// the best-ranked other entries, best first, up to the limit.
type KBLookupResult struct {
	Strict []KBEntry
	Count  int
	Ranked []KBHit
}

// KBBatchInput is the body of PUT .../entries/batch.
type KBBatchInput struct {
	Entries []KBEntryInput `json:"entries"`
}

// KBBatch answers a batch upsert: every entry as written, in input order,
// and how many were new and how many replaced.
type KBBatch struct {
	Entries  []KBEntry `json:"entries"`
	Created  int       `json:"created"`
	Replaced int       `json:"replaced"`
}

// KBDeleted answers a delete or a clear.
type KBDeleted struct {
	Deleted int `json:"deleted"`
}

// KBStats is the size of a scope and one page of its identifiers, in
// insertion order.
type KBStats struct {
	Count       int      `json:"count"`
	Identifiers []string `json:"identifiers"`
	NextCursor  string   `json:"next_cursor,omitempty"`
}

// KB history operations: what made a version.
const (
	KBOpPut        = "put"         // created or replaced by an upsert
	KBOpUpdate     = "update"      // the value changed (and the keys, when the patch held both)
	KBOpUpdateKeys = "update_keys" // only the keys changed
	KBOpDelete     = "delete"      // deleted by identifier
	KBOpClear      = "clear"       // removed by clearing its scope
)

// KBVersion is one past state of an identifier. A delete or clear version
// is a tombstone: keys and value are null, and ID names the incarnation
// that ended.
type KBVersion struct {
	Version int      `json:"version"`
	Op      string   `json:"op"`
	ID      string   `json:"id"`
	Keys    []string `json:"keys"`
	Value   *string  `json:"value"`
	At      string   `json:"at"`
}

// KBHistory is every version of an identifier in a scope, oldest first.
type KBHistory struct {
	Identifier string      `json:"identifier"`
	Versions   []KBVersion `json:"versions"`
	NextCursor string      `json:"next_cursor,omitempty"`
}
