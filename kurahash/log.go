package kurahash

import (
	"encoding/json"
	"fmt"

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
	raw, err := json.Marshal(l)
	if err != nil {
		return nil, fmt.Errorf("log leaf %d: %w", l.Seq, err)
	}
	return Canonical(raw)
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
