package kura

import (
	"sort"
	"strconv"
	"unicode/utf8"
)

// MarshalJSON writes a record by hand. Records are the bulk of every
// hydrate and listing, and their content is stored as canonical JSON
// already, so it is copied as is rather than re-scanned and re-compacted
// the way encoding/json treats a json.RawMessage.
func (r Record) MarshalJSON() ([]byte, error) {
	return r.AppendJSON(make([]byte, 0, 320+len(r.Content))), nil
}

// AppendJSON appends the record's JSON form to b.
func (r *Record) AppendJSON(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, r.ID)
	b = append(b, `,"hash":`...)
	b = appendString(b, r.Hash)
	b = append(b, `,"content_hash":`...)
	b = appendString(b, r.ContentHash)
	b = append(b, `,"seal":`...)
	b = appendString(b, r.Seal)
	b = append(b, `,"type":`...)
	b = appendString(b, r.Type)
	b = append(b, `,"content":`...)
	if len(r.Content) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, r.Content...)
	}
	b = append(b, `,"author_id":`...)
	b = appendString(b, r.AuthorID)
	if r.Metadata == nil && len(r.MetadataJSON) > 0 {
		b = append(b, `,"metadata":`...)
		b = append(b, r.MetadataJSON...)
		b = append(b, `,"created_at":`...)
		return r.appendTail(b)
	}
	b = append(b, `,"metadata":{`...)
	if len(r.Metadata) > 0 {
		keys := make([]string, 0, len(r.Metadata))
		for k := range r.Metadata {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = appendString(b, r.Metadata[k])
		}
	}
	b = append(b, `},"created_at":`...)
	return r.appendTail(b)
}

func (r *Record) appendTail(b []byte) []byte {
	b = appendString(b, r.CreatedAt)
	if r.Redacted {
		b = append(b, `,"redacted":true`...)
	}
	if r.Withheld {
		b = append(b, `,"withheld":true`...)
	}
	if r.Deduplicated {
		b = append(b, `,"deduplicated":true`...)
	}
	if len(r.Mismatches) > 0 {
		b = append(b, `,"mismatches":[`...)
		for i, m := range r.Mismatches {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"field":`...)
			b = appendString(b, m.Field)
			b = append(b, `,"stored":`...)
			b = appendString(b, m.Stored)
			b = append(b, `,"computed":`...)
			b = appendString(b, m.Computed)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s as a JSON string (see appendString).
func AppendJSONString(b []byte, s string) []byte { return appendString(b, s) }

// appendString appends s as a JSON string: quotes, backslashes and control
// characters escaped, invalid UTF-8 replaced by U+FFFD (as encoding/json does).
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		// U+2028 and U+2029 are valid JSON but break JavaScript parsers.
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, `\u202`...)
			b = strconv.AppendInt(b, int64(r&0xf), 16)
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
