"""Kura's hash definitions (DESIGN.md "Hashes"), so that anyone holding a
record or a ledger can recompute what kurad claims about it.

Every function takes and returns lowercase hex digests, as the API does,
except the Merkle helpers that work on raw 32-byte hashes.
"""

from __future__ import annotations

import hashlib
from typing import Any, Iterable, Mapping, Sequence

from .jcs import canonicalize

__all__ = [
    "sha256_hex",
    "content_hash",
    "record_hash",
    "metadata_hash",
    "record_seal",
    "leaf_hash",
    "node_hash",
    "merkle_root",
    "merkle_root_hex",
    "audit_path",
    "root_from_inclusion",
    "verify_inclusion",
    "root_from_consistency",
    "ledger_hash",
    "ledger_signing_message",
    "head_signing_message",
    "decode_hash",
]

EMPTY_ROOT = hashlib.sha256(b"").digest()


def sha256_hex(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def content_hash(content: Any) -> str:
    """hex(SHA-256(JCS(content)))."""
    return sha256_hex(canonicalize(content))


def record_hash(type_: str, content_hash_hex: str, author_id: str) -> str:
    """hex(SHA-256(type + "\\n" + content_hash + "\\n" + author_id))."""
    return sha256_hex(("%s\n%s\n%s" % (type_, content_hash_hex, author_id)).encode("utf-8"))


def metadata_hash(metadata: Mapping[str, Any] | None) -> str:
    """hex(SHA-256(JCS(metadata or {})))."""
    return sha256_hex(canonicalize(dict(metadata) if metadata else {}))


def record_seal(hash_hex: str, metadata: Mapping[str, Any] | None, created_at: str) -> str:
    """hex(SHA-256("kura-record-v1\\n" + hash + "\\n" + metadata_hash + "\\n" + created_at))."""
    return sha256_hex(("kura-record-v1\n%s\n%s\n%s" % (hash_hex, metadata_hash(metadata), created_at)).encode("utf-8"))


def decode_hash(h: str, what: str = "hash") -> bytes:
    """Decode a hex SHA-256 digest, raising ValueError naming what it is."""
    try:
        b = bytes.fromhex(h)
    except (ValueError, TypeError):
        raise ValueError("%s %r is not hex" % (what, h)) from None
    if len(b) != 32:
        raise ValueError("%s %r is not a SHA-256 digest (%d bytes)" % (what, h, len(b)))
    return b


def leaf_hash(data: bytes) -> bytes:
    """RFC 6962 leaf hash: SHA-256(0x00 || data)."""
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """RFC 6962 interior node: SHA-256(0x01 || left || right)."""
    return hashlib.sha256(b"\x01" + left + right).digest()


def _split(n: int) -> int:
    """The largest power of two smaller than n (n > 1)."""
    k = 1
    while k << 1 < n:
        k <<= 1
    return k


def _mth(leaves: Sequence[bytes]) -> bytes:
    if len(leaves) == 1:
        return leaf_hash(leaves[0])
    k = _split(len(leaves))
    return node_hash(_mth(leaves[:k]), _mth(leaves[k:]))


def merkle_root(leaves: Sequence[bytes]) -> bytes:
    """RFC 6962 Merkle tree hash over leaf data (a ledger's leaves are the
    raw 32-byte record seals); the empty tree is SHA-256("")."""
    if not leaves:
        return EMPTY_ROOT
    return _mth(list(leaves))


def merkle_root_hex(seals: Iterable[str]) -> str:
    """The ledger root_hash over hex seals in ledger order."""
    return merkle_root([decode_hash(s, "seal") for s in seals]).hex()


def audit_path(leaves: Sequence[bytes], m: int) -> list[bytes]:
    """RFC 6962 audit path of leaf m (for tests and for building proofs)."""
    if not 0 <= m < len(leaves):
        raise ValueError("leaf %d is not in a tree of %d leaves" % (m, len(leaves)))
    if len(leaves) == 1:
        return []
    k = _split(len(leaves))
    if m < k:
        return audit_path(leaves[:k], m) + [_mth(leaves[k:])]
    return audit_path(leaves[k:], m - k) + [_mth(leaves[:k])]


def root_from_inclusion(leaf: bytes, index: int, size: int, path: Sequence[bytes]) -> bytes | None:
    """The root an RFC 9162 (2.1.3.2) inclusion proof leads to from a leaf
    hash, or None when the path cannot be a proof for that index and size."""
    if not 0 <= index < size:
        return None
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            return None
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while not fn & 1 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        return None
    return r


def verify_inclusion(leaf_data: bytes, index: int, size: int, path: Sequence[bytes], root: bytes) -> bool:
    """Whether path proves leaf data (e.g. a raw seal) is leaf index of the tree with root."""
    return root_from_inclusion(leaf_hash(leaf_data), index, size, path) == root


def root_from_consistency(old_size: int, new_size: int, old_root: bytes, path: Sequence[bytes]) -> bytes | None:
    """Check an RFC 9162 (2.1.4.2) consistency proof against old_root and
    return the new root it implies, or None when it is not a proof."""
    if not 0 < old_size <= new_size:
        return None
    if old_size == new_size:
        return old_root if not path else None
    c = list(path)
    if old_size & (old_size - 1) == 0:
        c.insert(0, old_root)
    if not c:
        return None
    fn, sn = old_size - 1, new_size - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = c[0]
    for h in c[1:]:
        if sn == 0:
            return None
        if fn & 1 or fn == sn:
            fr = node_hash(h, fr)
            sr = node_hash(h, sr)
            if not fn & 1:
                while not fn & 1 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            sr = node_hash(sr, h)
        fn >>= 1
        sn >>= 1
    if fr != old_root or sn != 0:
        return None
    return sr


def ledger_hash(root_hash: str, parent_hashes: Sequence[str], label: str, created_at: str) -> str:
    """hex(SHA-256("kura-ledger-v1\\n" + root_hash + "\\n" + comma-joined
    parent hashes + "\\n" + label + "\\n" + created_at))."""
    return sha256_hex(("kura-ledger-v1\n%s\n%s\n%s\n%s" % (root_hash, ",".join(parent_hashes), label, created_at)).encode("utf-8"))


def _control(s: str) -> tuple[str, int] | None:
    """The first control character (Unicode Cc: C0, DEL, C1) in s and its
    UTF-8 byte offset."""
    for i, ch in enumerate(s):
        if ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F:
            return ch, len(s[:i].encode("utf-8"))
    return None


def ledger_framing_problem(parent_hashes: Sequence[str], label: str, created_at: str) -> tuple[str, str] | None:
    """Why a ledger hash over these fields proves nothing, as (field,
    reason), or None when it can be verified. ledger_hash joins its fields
    with newlines and the parent hashes with commas: a label "a\\nb" with
    created_at T hashes exactly as label "a" with created_at "b\\nT". So a
    label or created_at holding a control character, or a parent hash that
    is not lowercase hex SHA-256, is refused (as kurad and the Go and
    TypeScript verifiers refuse it)."""
    for i, h in enumerate(parent_hashes):
        if len(h) != 64 or any(c not in "0123456789abcdef" for c in h):
            return "parent_hashes", ("parent hash %d is not a lowercase hex SHA-256, so the parents' part of the "
                                     "ledger hash has more than one reading" % i)
    for field, value in (("label", label), ("created_at", created_at)):
        found = _control(value)
        if found is not None:
            what = "the label" if field == "label" else "created_at"
            return field, ("%s holds the control character U+%04X at byte %d, so the ledger hash has more than one "
                           "reading (its fields are framed by newlines) and cannot be verified" % (what, ord(found[0]), found[1]))
    return None


def ledger_signing_message(ledger_hash_hex: str) -> bytes:
    """What kurad signs for a ledger."""
    return ("kura-ledger-sig-v1\n" + ledger_hash_hex).encode("utf-8")


def head_signing_message(session_id: str, reflog_seq: int, head_hash: str) -> bytes:
    """What kurad signs for a head move."""
    return ("kura-head-v1\n%s\n%d\n%s" % (session_id, reflog_seq, head_hash)).encode("utf-8")
