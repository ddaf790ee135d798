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
	"unicode"

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

// LedgerFramingProblem says why a ledger hash over these fields proves
// nothing, or returns "" when it can be verified. LedgerHash joins its
// fields with newlines and the parent hashes with commas, so the hash is
// of one reading only when no field can hold a separator: a label "a\nb"
// with created_at T hashes exactly as label "a" with created_at "b\nT",
// and either could be shown under the same signature. kurad refuses
// control characters in new labels; a verifier refuses a ledger whose
// label or created_at holds one (C0, DEL, C1), or whose parent hash is
// not a lowercase hex SHA-256. field names the field at fault.
func LedgerFramingProblem(parentHashes []string, label, createdAt string) (field, problem string) {
	for i, h := range parentHashes {
		if !isHexDigest(h) {
			return "parent_hashes", "parent hash " + itoa(int64(i)) + " is not a lowercase hex SHA-256, so the parents' part of the ledger hash has more than one reading"
		}
	}
	if r, at, ok := controlRune(label); ok {
		return "label", "the label holds the control character " + runeName(r) + " at byte " + itoa(int64(at)) + ", so the ledger hash has more than one reading (its fields are framed by newlines) and cannot be verified"
	}
	if r, at, ok := controlRune(createdAt); ok {
		return "created_at", "created_at holds the control character " + runeName(r) + " at byte " + itoa(int64(at)) + ", so the ledger hash has more than one reading (its fields are framed by newlines) and cannot be verified"
	}
	return "", ""
}

// controlRune finds the first control character (Unicode Cc: C0, DEL,
// C1) in s.
func controlRune(s string) (r rune, at int, ok bool) {
	for i, r := range s {
		if unicode.IsControl(r) {
			return r, i, true
		}
	}
	return 0, 0, false
}

func runeName(r rune) string {
	const digits = "0123456789ABCDEF"
	return "U+" + string([]byte{digits[r>>12&15], digits[r>>8&15], digits[r>>4&15], digits[r&15]})
}

func isHexDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
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
