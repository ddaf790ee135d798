package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"

	"github.com/kura-memory/kura/internal/kura"
	"github.com/kura-memory/kura/kurahash"
)

// What kurad serves of a record must be what its hashes commit to: a
// record's content_hash, hash and seal are recomputed from its stored
// fields whenever it is read (a record, a listing, a ledger page), and a
// stored value that no longer follows from the fields below it is named
// in the record's mismatches; content that no longer hashes to its
// content_hash is not served at all. A check is three SHA-256 (the content,
// and the short texts hash and seal are taken over), about a microsecond a
// record on the 2-core test machine; a ledger page pays for it with the
// quoting its SQL no longer does (recordJSONSQL).

// storedRecord is a record's stored fields as a read has them, as bytes,
// so that a ledger page can be checked without copying them out of its
// JSON.
type storedRecord struct {
	hash, contentHash, seal, typ, author, createdAt []byte
	metadata                                        []byte
	// content is nil when the read does not have it (redacted, or
	// withheld from the reader): content_hash is then taken as stored.
	content []byte
	// mdSum, when set, is SHA-256 of metadata, already computed.
	mdSum *[32]byte
}

// mismatches recomputes, from the stored fields, content_hash (from the
// content), hash (from the type, the stored content_hash and the author)
// and seal (from the stored hash, the metadata and the time), each from
// what is stored below it, so a finding names the value that changed.
// Content and metadata are stored in their RFC 8785 form and hashed as
// they are; only bytes that do not hash are canonicalized again before
// they count as changed.
func (s *storedRecord) mismatches() []kura.Mismatch {
	var out []kura.Mismatch
	add := func(field string, stored []byte, computed string) {
		out = append(out, kura.Mismatch{Field: field, Stored: string(stored), Computed: computed})
	}
	if s.content != nil {
		if sum := sha256.Sum256(s.content); !hexIs(s.contentHash, sum) {
			computed := "content is not JSON"
			if c, err := kurahash.Canonical(s.content); err == nil {
				sum = sha256.Sum256(c)
				computed = hex.EncodeToString(sum[:])
			}
			if !hexIs(s.contentHash, sum) {
				add("content_hash", s.contentHash, computed)
			}
		}
	}
	var buf [512]byte
	msg := append(append(append(append(append(buf[:0], s.typ...), '\n'), s.contentHash...), '\n'), s.author...)
	if sum := sha256.Sum256(msg); !hexIs(s.hash, sum) {
		add("hash", s.hash, hex.EncodeToString(sum[:]))
	}
	if sum := sealOf(s.hash, s.metadata, s.mdSum, s.createdAt, buf[:0]); !hexIs(s.seal, sum) {
		if c, err := kurahash.Canonical(s.metadata); err == nil && !bytes.Equal(c, s.metadata) {
			sum = sealOf(s.hash, c, nil, s.createdAt, buf[:0])
		}
		if !hexIs(s.seal, sum) {
			add("seal", s.seal, hex.EncodeToString(sum[:]))
		}
	}
	return out
}

// sealOf is kurahash.Seal over bytes, in buf; mdSum, when set, is
// SHA-256 of metadata.
func sealOf(hash, metadata []byte, mdSum *[32]byte, createdAt, buf []byte) [32]byte {
	if len(metadata) == 0 {
		metadata, mdSum = []byte("{}"), nil
	}
	var md [32]byte
	if mdSum != nil {
		md = *mdSum
	} else {
		md = sha256.Sum256(metadata)
	}
	msg := append(append(buf, "kura-record-v1\n"...), hash...)
	msg = append(msg, '\n')
	msg = hex.AppendEncode(msg, md[:])
	msg = append(append(msg, '\n'), createdAt...)
	return sha256.Sum256(msg)
}

// hexIs says whether s is the lowercase hex of sum.
func hexIs(s []byte, sum [32]byte) bool {
	if len(s) != 64 {
		return false
	}
	const digits = "0123456789abcdef"
	for i, b := range sum {
		if s[2*i] != digits[b>>4] || s[2*i+1] != digits[b&0xf] {
			return false
		}
	}
	return true
}

// checkRecord names in r the stored values that no longer follow from
// the fields below them (storedRecord.mismatches) and drops content that
// does not hash to its content_hash. content and md are as stored; content
// is nil for a redacted record.
func checkRecord(r *kura.Record, content, md []byte) {
	s := storedRecord{hash: []byte(r.Hash), contentHash: []byte(r.ContentHash), seal: []byte(r.Seal),
		typ: []byte(r.Type), author: []byte(r.AuthorID), createdAt: []byte(r.CreatedAt), metadata: md, content: content}
	if r.Redacted || r.Withheld {
		s.content = nil
	}
	r.Mismatches = s.mismatches()
	if content == nil && !r.Redacted {
		// Content gone without a redaction: nothing kurad wrote.
		r.Mismatches = append(r.Mismatches, kura.Mismatch{Field: "content_hash", Stored: r.ContentHash, Computed: "content is missing"})
	}
	for _, m := range r.Mismatches {
		if m.Field == "content_hash" {
			r.Content = []byte("null")
		}
	}
}

// recordChecker checks the records of a ledger page (verifies). It keeps
// the digest of the last metadata it hashed: the records of one ledger
// mostly carry the same few labels.
type recordChecker struct {
	md    []byte
	mdSum [32]byte
}

// verifies parses a record's JSON as recordJSONSQL builds it, its
// content contentLen bytes and its metadata mdLen (as the hydrate query
// says), and reports whether its stored hashes all follow from its
// fields (storedRecord.mismatches). Only JSON in that exact layout, with
// strings that need no unescaping, is checked here; anything else reports
// false, and the record is read and checked again on its own
// (ledgerRecordAt).
func (ck *recordChecker) verifies(js []byte, contentLen, mdLen int) bool {
	var s storedRecord
	p := jsonFields{b: js}
	var id []byte
	ok := p.lit(`{"id":`) && p.fixed(&id, 36) &&
		p.lit(`,"hash":`) && p.fixed(&s.hash, 64) &&
		p.lit(`,"content_hash":`) && p.fixed(&s.contentHash, 64) &&
		p.lit(`,"seal":`) && p.fixed(&s.seal, 64) &&
		p.lit(`,"type":`) && p.str(&s.typ) &&
		p.lit(`,"content":`) && p.take(&s.content, contentLen) &&
		p.lit(`,"author_id":`) && p.str(&s.author) &&
		p.lit(`,"metadata":`) && p.take(&s.metadata, mdLen) &&
		p.lit(`,"created_at":`) && p.str(&s.createdAt)
	if !ok {
		return false
	}
	if p.lit(`,"redacted":true`) {
		s.content = nil
	}
	if p.lit(`,"withheld":true`) {
		s.content = nil
	}
	if !p.lit("}") || p.i != len(js) {
		return false
	}
	if !bytes.Equal(s.metadata, ck.md) {
		ck.md, ck.mdSum = append(ck.md[:0], s.metadata...), sha256.Sum256(s.metadata)
	}
	s.mdSum = &ck.mdSum
	return len(s.mismatches()) == 0
}

// jsonFields reads a JSON text of a known layout from the front.
type jsonFields struct {
	b []byte
	i int
}

// take reads the next n bytes, copied as stored, into v.
func (p *jsonFields) take(v *[]byte, n int) bool {
	if n <= 0 || p.i+n > len(p.b) {
		return false
	}
	*v = p.b[p.i : p.i+n]
	p.i += n
	return true
}

// lit consumes s if the text goes on with it.
func (p *jsonFields) lit(s string) bool {
	if !bytes.HasPrefix(p.b[p.i:], []byte(s)) {
		return false
	}
	p.i += len(s)
	return true
}

// fixed reads a string of n bytes (an id, a hex hash) into v: one of
// another length, or that holds a quote or an escape, does not read as a
// string of n bytes followed by a quote. Its bytes are compared with a
// computed hash, or not used, so they need no other check here.
func (p *jsonFields) fixed(v *[]byte, n int) bool {
	end := p.i + 1 + n
	if end >= len(p.b) || p.b[p.i] != '"' || p.b[end] != '"' {
		return false
	}
	for _, c := range p.b[p.i+1 : end] {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	*v = p.b[p.i+1 : end]
	p.i = end + 1
	return true
}

// str reads a string that holds no escape (what kurad stores in these
// fields: hex, ids, types, authors, times) into v, its bytes as stored.
func (p *jsonFields) str(v *[]byte) bool {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return false
	}
	for j := p.i + 1; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			*v = p.b[p.i+1 : j]
			p.i = j + 1
			return true
		case c == '\\' || c < 0x20 || c > 0x7e:
			return false
		}
	}
	return false
}
