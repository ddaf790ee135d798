package kurahash

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	"golang.org/x/mod/sumdb/tlog"
)

// LogLeaf is one leaf of kurad's log (shared/API.md, "Log, checkpoints and
// witnesses"): an event of the catch-up feed plus the digest of what it
// names. Leaf index i is the event with Seq i+1.
type LogLeaf struct {
	Seq     int64             `json:"seq"`
	ID      string            `json:"id"`
	Type    string            `json:"type"`
	Project string            `json:"project"`
	Subject string            `json:"subject"`
	Refs    map[string]string `json:"refs"`
	At      string            `json:"at"`
	// Digest is the hash of what the event names (a record's seal, a
	// ledger's hash, a head hash, a bundle digest, or hex SHA-256 of the JCS
	// of the stored object), lowercase hex; empty for events written
	// before the log existed.
	Digest string `json:"digest"`
}

// LogLeafData returns the leaf data: the RFC 8785 form of the leaf as a JSON
// object. A client holding an event and its digest rebuilds the same bytes
// in any language with a JCS implementation.
func LogLeafData(l LogLeaf) ([]byte, error) {
	if l.Refs == nil {
		l.Refs = map[string]string{}
	}
	if b, ok := plainLeafData(l); ok {
		return b, nil
	}
	raw, err := json.Marshal(l)
	if err != nil {
		return nil, fmt.Errorf("log leaf %d: %w", l.Seq, err)
	}
	return Canonical(raw)
}

// Redaction is what a record.redacted leaf commits to: who dropped which
// record's content, why and when, and the record's seal (which the
// redaction leaves as it was).
type Redaction struct {
	RecordID string `json:"record_id"`
	Seal     string `json:"seal"`
	By       string `json:"by"`
	Reason   string `json:"reason"`
	At       string `json:"at"`
}

// RedactionDigest is the digest of a record.redacted leaf: hex SHA-256 of
// the RFC 8785 form of r, so that the who, why and when kept beside the
// record are in the log as well as the record.
func RedactionDigest(r Redaction) (string, error) {
	raw, err := json.Marshal(r)
	if err != nil {
		return "", fmt.Errorf("redaction of %s: %w", r.RecordID, err)
	}
	c, err := Canonical(raw)
	if err != nil {
		return "", fmt.Errorf("redaction of %s: %w", r.RecordID, err)
	}
	return SumHex(c), nil
}

// ParseLogLeaf reads leaf data back. It does not require the bytes to be
// canonical; LogLeafHash of the bytes as served is what the tree commits to.
func ParseLogLeaf(data []byte) (*LogLeaf, error) {
	var l LogLeaf
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, fmt.Errorf("log leaf: %w", err)
	}
	return &l, nil
}

// LogLeafHash is the RFC 6962 leaf hash of leaf data, SHA-256(0x00 || data).
func LogLeafHash(data []byte) tlog.Hash {
	return tlog.RecordHash(data)
}

// plainLeafData writes the leaf's canonical form directly when every string
// in it is printable ASCII without quotes or backslashes (ids, slugs, hex,
// times: every leaf kurad writes): such strings are the same in any JSON
// encoding, so the RFC 8785 form is the members in key order with nothing
// to escape. It is one allocation instead of an encode and a JCS parse,
// which the writer pays per event. Anything else goes through Canonical.
func plainLeafData(l LogLeaf) ([]byte, bool) {
	for _, s := range [...]string{l.At, l.Digest, l.ID, l.Project, l.Subject, l.Type} {
		if !plain(s) {
			return nil, false
		}
	}
	keys := make([]string, 0, len(l.Refs))
	n := 160
	for k, v := range l.Refs {
		if !plain(k) || !plain(v) {
			return nil, false
		}
		keys = append(keys, k)
		n += len(k) + len(v) + 6
	}
	sort.Strings(keys) // ASCII: byte order is RFC 8785's UTF-16 order
	b := make([]byte, 0, n+len(l.At)+len(l.Digest)+len(l.ID)+len(l.Project)+len(l.Subject)+len(l.Type))
	str := func(s string) { b = append(b, '"'); b = append(b, s...); b = append(b, '"') }
	b = append(b, `{"at":`...)
	str(l.At)
	b = append(b, `,"digest":`...)
	str(l.Digest)
	b = append(b, `,"id":`...)
	str(l.ID)
	b = append(b, `,"project":`...)
	str(l.Project)
	b = append(b, `,"refs":{`...)
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		str(k)
		b = append(b, ':')
		str(l.Refs[k])
	}
	b = append(b, `},"seq":`...)
	b = strconv.AppendInt(b, l.Seq, 10)
	b = append(b, `,"subject":`...)
	str(l.Subject)
	b = append(b, `,"type":`...)
	str(l.Type)
	return append(b, '}'), true
}

func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
