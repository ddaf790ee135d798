// Package kurahash implements Kura's hash definitions (DESIGN.md, "Hashes"):
// canonical JSON, record content hashes, hashes and seals, RFC 6962 Merkle
// roots and inclusion proofs, ledger hashes and the messages Kura signs. It
// is public so that any Go client can verify what kurad hands out without
// trusting kurad.
package kurahash

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sort"
	"strings"

	"github.com/gowebpki/jcs"
)

// Canonical returns the RFC 8785 (JCS) form of a JSON text. It rejects
// invalid UTF-8, duplicate object keys and malformed JSON.
//
// RFC 8785 is delegated to github.com/gowebpki/jcs: the ES6 number
// formatting and UTF-16 key ordering are exactly the parts worth not writing
// twice.
func Canonical(raw []byte) ([]byte, error) {
	return jcs.Transform(raw)
}

// SumHex returns hex(SHA-256(b)).
func SumHex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// ContentHash returns hex(SHA-256(JCS(content))) and the canonical content.
func ContentHash(content []byte) (hash string, canonical []byte, err error) {
	c, err := Canonical(content)
	if err != nil {
		return "", nil, err
	}
	return SumHex(c), c, nil
}

// RecordHash is the dedup identity of a record:
// hex(SHA-256(type + "\n" + content_hash + "\n" + author_id)).
func RecordHash(typ, contentHash, authorID string) string {
	return SumHex([]byte(typ + "\n" + contentHash + "\n" + authorID))
}

// MetadataJSON returns the canonical JSON of a metadata map (nil is {}).
func MetadataJSON(md map[string]string) []byte {
	if len(md) == 0 {
		return []byte("{}")
	}
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	// JCS orders keys by UTF-16 code units; encoding via Canonical keeps
	// that rule in one place.
	sort.Strings(keys)
	m := make(map[string]string, len(md))
	for _, k := range keys {
		m[k] = md[k]
	}
	b, _ := json.Marshal(m)
	c, err := Canonical(b)
	if err != nil { // cannot happen: json.Marshal output of a string map is valid JSON
		panic("kurahash: canonical metadata: " + err.Error())
	}
	return c
}

// Seal binds a stored record's hash, metadata and creation time:
// hex(SHA-256("kura-record-v1\n" + hash + "\n" + hex(SHA-256(JCS(metadata or {}))) + "\n" + created_at)).
func Seal(hash string, metadataCanonical []byte, createdAt string) string {
	if len(metadataCanonical) == 0 {
		metadataCanonical = []byte("{}")
	}
	return SumHex([]byte("kura-record-v1\n" + hash + "\n" + SumHex(metadataCanonical) + "\n" + createdAt))
}

// SealWithMetadataHash is Seal with hex(SHA-256(JCS(metadata))) already
// computed, so the part that depends on created_at is one hash.
func SealWithMetadataHash(hash, metadataHash, createdAt string) string {
	return SumHex([]byte("kura-record-v1\n" + hash + "\n" + metadataHash + "\n" + createdAt))
}

// LedgerHash is hex(SHA-256("kura-ledger-v1\n" + root_hash + "\n" +
// comma-joined parent hashes + "\n" + label + "\n" + created_at)).
func LedgerHash(rootHash string, parentHashes []string, label, createdAt string) string {
	return SumHex([]byte("kura-ledger-v1\n" + rootHash + "\n" + strings.Join(parentHashes, ",") + "\n" + label + "\n" + createdAt))
}

// LedgerSigningMessage is what kurad signs for a ledger.
func LedgerSigningMessage(ledgerHash string) []byte {
	return []byte("kura-ledger-sig-v1\n" + ledgerHash)
}

// HeadSigningMessage is what kurad signs for a head move.
func HeadSigningMessage(sessionID string, reflogSeq int64, headHash string) []byte {
	return []byte("kura-head-v1\n" + sessionID + "\n" + itoa(reflogSeq) + "\n" + headHash)
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// DecodeHash decodes a hex SHA-256 digest.
func DecodeHash(s string) ([32]byte, error) {
	var out [32]byte
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 32 {
		return out, errors.New("not a hex SHA-256 digest")
	}
	copy(out[:], b)
	return out, nil
}
