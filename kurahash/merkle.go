package kurahash

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
)

// Merkle trees follow RFC 6962 §2.1: leaf = SHA-256(0x00 || d), node =
// SHA-256(0x01 || left || right), the empty tree hashes to SHA-256("").
// Kura's leaves are the raw 32-byte record seals in ledger order.

func leafHash(d []byte) [32]byte {
	var buf [33]byte
	buf[0] = 0
	copy(buf[1:], d)
	return sha256.Sum256(buf[:1+len(d)])
}

func nodeHash(l, r [32]byte) [32]byte {
	var buf [65]byte
	buf[0] = 1
	copy(buf[1:33], l[:])
	copy(buf[33:], r[:])
	return sha256.Sum256(buf[:])
}

// split returns the largest power of two smaller than n (n > 1).
func split(n int) int {
	k := 1
	for k<<1 < n {
		k <<= 1
	}
	return k
}

// MerkleRoot returns the RFC 6962 tree hash over leaves.
func MerkleRoot(leaves [][32]byte) [32]byte {
	if len(leaves) == 0 {
		return sha256.Sum256(nil)
	}
	// Hash level by level: the left-leaning RFC 6962 shape is the same as
	// carrying an odd last node up unchanged, which avoids recursion and
	// allocates one slice for a tree of any size.
	level := make([][32]byte, len(leaves))
	for i := range leaves {
		level[i] = leafHash(leaves[i][:])
	}
	for len(level) > 1 {
		n := 0
		for i := 0; i+1 < len(level); i += 2 {
			level[n] = nodeHash(level[i], level[i+1])
			n++
		}
		if len(level)%2 == 1 {
			level[n] = level[len(level)-1]
			n++
		}
		level = level[:n]
	}
	return level[0]
}

// MerkleRootHex is MerkleRoot over hex leaves, rendered as hex.
func MerkleRootHex(leaves []string) (string, error) {
	ls := make([][32]byte, len(leaves))
	for i, l := range leaves {
		b, err := DecodeHash(l)
		if err != nil {
			return "", err
		}
		ls[i] = b
	}
	r := MerkleRoot(ls)
	return hex.EncodeToString(r[:]), nil
}

// AuditPath returns the RFC 6962 §2.1.1 audit path for leaf index m.
func AuditPath(leaves [][32]byte, m int) ([][32]byte, error) {
	if m < 0 || m >= len(leaves) {
		return nil, errors.New("leaf index out of range")
	}
	return path(m, leaves), nil
}

func path(m int, d [][32]byte) [][32]byte {
	n := len(d)
	if n <= 1 {
		return nil
	}
	k := split(n)
	if m < k {
		return append(path(m, d[:k]), MerkleRoot(d[k:]))
	}
	return append(path(m-k, d[k:]), MerkleRoot(d[:k]))
}

// VerifyInclusion checks an RFC 6962 audit path (the verification algorithm
// of RFC 9162 §2.1.3.2) for leaf at index in a tree of size treeSize.
func VerifyInclusion(leaf [32]byte, index, treeSize int, auditPath [][32]byte, root [32]byte) bool {
	if index < 0 || index >= treeSize {
		return false
	}
	fn, sn := index, treeSize-1
	r := leafHash(leaf[:])
	for _, p := range auditPath {
		if sn == 0 {
			return false
		}
		if fn&1 == 1 || fn == sn {
			r = nodeHash(p, r)
			if fn&1 == 0 {
				for fn&1 == 0 && fn != 0 {
					fn >>= 1
					sn >>= 1
				}
			}
		} else {
			r = nodeHash(r, p)
		}
		fn >>= 1
		sn >>= 1
	}
	return sn == 0 && bytes.Equal(r[:], root[:])
}
