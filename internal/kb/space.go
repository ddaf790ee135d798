package kb

import (
	"slices"

	"github.com/kura-memory/kura/internal/kura"
)

// Space is one scope of a knowledge base held in memory, answered by
// scanning every entry: the spec's runtime, method for method. It is the reference the
// store's indexed answers are checked against, so it stays as plain as the
// spec's algorithm. Entries keep insertion order; an upsert replaces an
// entry in place. Space does not validate limits (kura.KBEntryInput does)
// and is not safe for concurrent use.
type Space struct {
	entries []kura.KBEntry
}

func (l *Space) index(identifier string) int {
	return slices.IndexFunc(l.entries, func(e kura.KBEntry) bool { return e.Identifier == identifier })
}

// Insert upserts by exact (case-sensitive) identifier: an existing entry
// is replaced where it stands, a new one goes last. It reports whether the
// entry is new.
func (l *Space) Insert(identifier string, keys []string, value string) bool {
	e := kura.KBEntry{Identifier: identifier, Keys: slices.Clone(keys), Value: value}
	if e.Keys == nil {
		e.Keys = []string{}
	}
	if i := l.index(identifier); i >= 0 {
		l.entries[i] = e
		return false
	}
	l.entries = append(l.entries, e)
	return true
}

// Query returns the entries matching every condition of q, in order.
func (l *Space) Query(q *kura.KBQuery) []kura.KBEntry {
	out := []kura.KBEntry{}
	for i := range l.entries {
		if Match(&l.entries[i], q) {
			out = append(out, l.entries[i])
		}
	}
	return out
}

// FromIdentifier returns the entries whose identifier holds every word of
// text. A text without words matches every entry: every one of its zero
// words appears.
func (l *Space) FromIdentifier(text string) []kura.KBEntry {
	return l.Query(&kura.KBQuery{Identifier: &text})
}

// FromKey returns the entries with a key equal to key, case-insensitively.
func (l *Space) FromKey(key string) []kura.KBEntry { return l.Query(&kura.KBQuery{Key: &key}) }

// FromAnyKeys returns the entries with at least one of keys (OR).
func (l *Space) FromAnyKeys(keys []string) []kura.KBEntry {
	return l.Query(&kura.KBQuery{AnyKeys: nonNil(keys)})
}

// FromExactKeys returns the entries holding every one of keys (AND).
func (l *Space) FromExactKeys(keys []string) []kura.KBEntry {
	return l.Query(&kura.KBQuery{AllKeys: nonNil(keys)})
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Update replaces the value of the entry with this exact identifier and
// reports whether there was one.
func (l *Space) Update(identifier, value string) bool {
	i := l.index(identifier)
	if i >= 0 {
		l.entries[i].Value = value
	}
	return i >= 0
}

// UpdateKeys replaces the keys of the entry with this exact identifier and
// reports whether there was one.
func (l *Space) UpdateKeys(identifier string, keys []string) bool {
	i := l.index(identifier)
	if i >= 0 {
		l.entries[i].Keys = nonNil(slices.Clone(keys))
	}
	return i >= 0
}

// Delete removes the entry with this exact identifier, keeping the order
// of the rest, and reports whether there was one.
func (l *Space) Delete(identifier string) bool {
	i := l.index(identifier)
	if i >= 0 {
		l.entries = slices.Delete(l.entries, i, i+1)
	}
	return i >= 0
}

// Len is the number of entries.
func (l *Space) Len() int { return len(l.entries) }

// IsEmpty reports whether there are no entries.
func (l *Space) IsEmpty() bool { return len(l.entries) == 0 }

// Clear removes every entry and returns how many there were.
func (l *Space) Clear() int {
	n := len(l.entries)
	l.entries = nil
	return n
}

// Entries returns every entry, in order.
func (l *Space) Entries() []kura.KBEntry { return append([]kura.KBEntry{}, l.entries...) }

// Identifiers returns every identifier, in order.
func (l *Space) Identifiers() []string {
	out := make([]string, len(l.entries))
	for i := range l.entries {
		out[i] = l.entries[i].Identifier
	}
	return out
}

// Lookup returns what a lookup of q answers (see LookupQueries).
func (l *Space) Lookup(q string) []kura.KBEntry {
	for _, lq := range LookupQueries("", q) {
		if found := l.Query(&lq); len(found) > 0 {
			return found
		}
	}
	return []kura.KBEntry{}
}

// Base is a named knowledge base: isolated Spaces, one per scope, as the
// spec's scope(prefix) views are. The zero value is empty and ready.
type Base struct {
	scopes map[string]*Space
}

// Scope returns the Space of scope ("" is the default scope), creating it.
func (b *Base) Scope(scope string) *Space {
	if b.scopes == nil {
		b.scopes = map[string]*Space{}
	}
	l := b.scopes[scope]
	if l == nil {
		l = &Space{}
		b.scopes[scope] = l
	}
	return l
}
