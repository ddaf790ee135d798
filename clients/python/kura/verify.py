"""Offline verification: check what kurad handed out without trusting kurad.

Every function takes the JSON exactly as kurad returns it (decoded with
``json.loads``) and either returns a small report or raises
:class:`kura.VerificationError` whose ``what`` names the failed check:
``content_hash``, ``hash``, ``seal``, ``root``, ``ledger_hash``, ``signature``,
``order`` and, for session exports and the log, ``reflog``, ``head_signature``,
``head``, ``head_hash``, ``chain``, ``log_signature``, ``log_cosignature``,
``log_leaf``, ``log_proof``, ``log_root``, ``log_consistency``. Each check
raises on the first failure it finds, checking the lowest level first (a
changed content is reported as ``content_hash``, not as the root it breaks).

A field of kurad's answer that is missing or malformed (a record without a
``seal``, a ``root_hash`` that is not hex, a ``record_ids`` that is not a
list) is a VerificationError too, naming the check the field belongs to and
the field: what was handed in does not verify, whether a field was changed
or deleted. :class:`kura.InvalidInput` is kept for what the caller passes
wrongly: a record that is not an object at all, a public key that is not
``ed25519:<hex>``, records that are not a list, an unreadable export line.

Ed25519 signatures are checked with the ``cryptography`` package. Without it
a signature check raises :class:`kura.SignatureUnavailable` unless the caller
passed ``check_signatures=False``, in which case the report says
``signatures_checked=False``. Trust comes from a key the caller already
holds: pass the public key you got from a source you trust, not the one an
export names.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import struct
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from . import hashes
from .errors import InvalidInput, SignatureUnavailable, VerificationError
from .jcs import JCSError

__all__ = [
    "record",
    "ledger",
    "inclusion",
    "head_move",
    "session_export",
    "checkpoint",
    "log_inclusion",
    "log_consistency",
    "log_vkey",
    "parse_public_key",
    "RecordReport",
    "LedgerReport",
    "ExportReport",
    "Checkpoint",
]

_INSTALL_HINT = (
    "the Python package 'cryptography' is not installed, so Ed25519 signatures cannot be checked; "
    "install it (apt install python3-cryptography, or pip install cryptography) "
    "or pass check_signatures=False to skip signatures knowingly"
)


def _ed25519_verify(public_key: bytes, message: bytes, signature: bytes) -> bool:
    try:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    except ImportError:
        raise SignatureUnavailable(_INSTALL_HINT) from None
    if len(signature) != 64:
        return False
    try:
        Ed25519PublicKey.from_public_bytes(public_key).verify(signature, message)
    except InvalidSignature:
        return False
    return True


def parse_public_key(public_key: str) -> bytes:
    """Decode /v1/info's ``ed25519:<64 hex>`` (bare hex is accepted too)."""
    if not isinstance(public_key, str):
        raise InvalidInput("public key must be a string like ed25519:<64 hex digits>, got %r" % (public_key,))
    h = public_key.strip()
    if h[:8].lower() == "ed25519:":
        h = h[8:]
    try:
        b = bytes.fromhex(h)
    except ValueError:
        b = b""
    if len(b) != 32:
        raise InvalidInput("public key %r is not ed25519:<64 hex digits>" % public_key)
    return b


def _object(obj: Any, kind: str) -> Mapping[str, Any]:
    """obj itself when it is a JSON object; anything else is the caller's mistake."""
    if not isinstance(obj, Mapping):
        raise InvalidInput("%s is not a JSON object (got %s)" % (kind, type(obj).__name__))
    return obj


def _subject(obj: Mapping[str, Any], kind: str) -> str:
    """"record <id>" for messages; an id is not covered by any hash, so a
    missing one is no failure by itself."""
    i = obj.get("id")
    return "%s %s" % (kind, i) if isinstance(i, str) and i else "%s (no id)" % kind


_HEX = frozenset("0123456789abcdef")
_KINDS = {"string": "a string", "hash": "a hex SHA-256 digest", "int": "an integer", "list": "a list"}


def _need(obj: Mapping[str, Any], name: str, what: str, subject: str, kind: str = "string") -> Any:
    """obj[name], which the check ``what`` reads: missing or of another kind
    is a VerificationError naming both. Kinds: "string", "hash" (64
    lowercase hex digits, as kurad writes them), "int", "list"."""
    want = _KINDS[kind]
    if obj.get(name) is None:
        raise VerificationError(what, subject, "the %r field is missing" % name, want, "none")
    v = obj[name]
    if kind == "hash":
        ok = isinstance(v, str) and len(v) == 64 and set(v) <= _HEX
    elif kind == "int":
        ok = isinstance(v, int) and not isinstance(v, bool)
    else:
        ok = isinstance(v, {"string": str, "list": list}[kind])
    if not ok:
        raise VerificationError(what, subject, "the %r field is not %s" % (name, want), want, _short(v))
    return v


def _short(v: Any) -> str:
    r = repr(v) if isinstance(v, str) else json.dumps(v, default=repr)
    return r if len(r) <= 80 else r[:77] + "..."


# ---------------------------------------------------------------- records


@dataclass
class RecordReport:
    id: str
    seal: str
    redacted: bool = False
    withheld: bool = False


def record(record: Mapping[str, Any]) -> RecordReport:
    """Recompute a record's content_hash (unless redacted or withheld),
    hash and seal from its content, type, author, metadata and time.

    Each value is computed from the primary data, never from the stored
    value one level below, so the lowest level that changed is reported.
    A redacted or withheld record (``content`` null) keeps only its
    content_hash, which is then taken as given."""
    record = _object(record, "record")
    rid = record.get("id") if isinstance(record.get("id"), str) else ""
    subject = _subject(record, "record")
    # Each level's fields are read where that level is checked, so the
    # lowest level that fails is the one reported, deleted fields included.
    stored_ch = _need(record, "content_hash", "content_hash", subject, "hash")
    redacted = bool(record.get("redacted"))
    withheld = bool(record.get("withheld"))
    content = record.get("content")
    if (redacted or withheld) and content is None:
        ch = stored_ch
    else:
        if "content" not in record:
            raise VerificationError("content_hash", subject, "the 'content' field is missing (and the record is not "
                                    "marked redacted or withheld)", stored_ch, "none")
        try:
            ch = hashes.content_hash(content)
        except JCSError as e:
            raise VerificationError("content_hash", subject, "content cannot be canonicalised: %s" % e,
                                    stored_ch, None) from None
        if ch != stored_ch:
            raise VerificationError("content_hash", subject, "the content does not hash to content_hash",
                                    stored_ch, ch)
    stored_hash = _need(record, "hash", "hash", subject, "hash")
    typ = _need(record, "type", "hash", subject)
    author = _need(record, "author_id", "hash", subject)
    h = hashes.record_hash(typ, ch, author)
    if h != stored_hash:
        raise VerificationError("hash", subject, "type, content_hash and author_id do not hash to hash",
                                stored_hash, h)
    stored_seal = _need(record, "seal", "seal", subject, "hash")
    created_at = _need(record, "created_at", "seal", subject)
    metadata = record.get("metadata")
    if metadata is not None and not isinstance(metadata, Mapping):
        raise VerificationError("seal", subject, "the 'metadata' field is not an object", "an object", _short(metadata))
    seal = hashes.record_seal(h, metadata, created_at)
    if seal != stored_seal:
        raise VerificationError("seal", subject, "hash, metadata and created_at do not hash to seal",
                                stored_seal, seal)
    return RecordReport(id=rid, seal=seal, redacted=redacted, withheld=withheld)


_verify_record = record


# ---------------------------------------------------------------- ledgers


@dataclass
class LedgerReport:
    ledger_id: str
    hash: str
    root_hash: str
    records_checked: int
    signatures_checked: bool
    redacted: list[str] = field(default_factory=list)
    withheld: list[str] = field(default_factory=list)


def _check_signature(public_key: str, message: bytes, signature: Any, what: str, subject: str) -> None:
    pk = parse_public_key(public_key)
    if signature is None or signature == "":
        raise VerificationError(what, subject, "not signed (the 'signature' field is missing or empty)",
                                "a signature by " + public_key, "none")
    try:
        sig = bytes.fromhex(signature) if isinstance(signature, str) else None
    except ValueError:
        sig = None
    if sig is None:
        raise VerificationError(what, subject, "the 'signature' field is not hex", "128 hex digits", _short(signature))
    if not _ed25519_verify(pk, message, sig):
        raise VerificationError(what, subject, "the signature does not verify against " + public_key)


def ledger(ledger: Mapping[str, Any], records: Sequence[Mapping[str, Any]], public_key: str | None,
           *, parent_hashes: Sequence[str] | None = None, check_signatures: bool = True) -> LedgerReport:
    """Verify a ledger (``GET /v1/ledgers/{id}``) against its records in
    ledger order (``GET /v1/ledgers/{id}/records``): the record ids and
    their order, every record, the Merkle root over the recomputed seals,
    the ledger hash and kurad's Ed25519 signature by ``public_key``.

    The ledger hash covers the parents' hashes: kurad's ledger JSON carries
    them (``parent_hashes``), and ``parent_hashes=`` overrides them with
    hashes of parents the caller verified itself. A ledger with parents and
    neither fails ``ledger_hash``: its hash cannot be checked (the message
    says what to pass). A wrong parent hash fails the hash check (the
    hash is signed); the caller should compare the returned hash with one it
    trusts (or rely on the signature)."""
    ledger = _object(ledger, "ledger")
    lid = ledger.get("id") if isinstance(ledger.get("id"), str) else ""
    subject = _subject(ledger, "ledger")
    if isinstance(records, (str, bytes)) or not isinstance(records, Sequence):
        raise InvalidInput("%s: records must be a list of records in ledger order" % subject)

    record_ids = ledger.get("record_ids")
    if record_ids is None:
        record_ids = []
    elif not isinstance(record_ids, list) or not all(isinstance(i, str) for i in record_ids):
        raise VerificationError("order", subject, "the 'record_ids' field is not a list of ids", "a list", _short(record_ids))
    count = ledger.get("record_count", len(record_ids))
    if not isinstance(count, int) or isinstance(count, bool):
        raise VerificationError("order", subject, "the 'record_count' field is not a number", "a number", _short(count))
    given = [r.get("id") if isinstance(r, Mapping) else None for r in records]
    if count != len(records):
        raise VerificationError("order", subject, "the ledger holds %s records, %d given" % (count, len(records)),
                                str(count), str(len(records)))
    if record_ids and list(record_ids) != given:
        pos = next((i for i, (a, b) in enumerate(zip(record_ids, given)) if a != b), min(len(record_ids), len(given)))
        raise VerificationError("order", subject, "the records given are not the ledger's record_ids in order "
                                "(first difference at position %d)" % pos,
                                str(record_ids[pos]) if pos < len(record_ids) else "end",
                                str(given[pos]) if pos < len(given) else "end")
    seals: list[bytes] = []
    redacted: list[str] = []
    withheld: list[str] = []
    for r in records:
        rr = record(r)
        seals.append(bytes.fromhex(rr.seal))
        if rr.redacted:
            redacted.append(rr.id)
        if rr.withheld:
            withheld.append(rr.id)

    stored_root = _need(ledger, "root_hash", "root", subject, "hash")
    root = hashes.merkle_root(seals).hex()
    if root != stored_root:
        raise VerificationError("root", subject, "the record seals do not hash to root_hash", stored_root, root)

    stored_hash = _need(ledger, "hash", "ledger_hash", subject, "hash")
    label = _need(ledger, "label", "ledger_hash", subject)
    created_at = _need(ledger, "created_at", "ledger_hash", subject)
    parent_ids = ledger.get("parent_ids")
    if parent_ids is None:
        parent_ids = []
    elif not isinstance(parent_ids, list):
        raise VerificationError("ledger_hash", subject, "the 'parent_ids' field is not a list", "a list", _short(parent_ids))
    if parent_hashes is not None:  # the caller's: a wrong count is the caller's mistake
        if isinstance(parent_hashes, (str, bytes)) or len(parent_hashes) != len(parent_ids):
            raise InvalidInput("%s has %d parent(s); parent_hashes= must give one hash for each" % (subject, len(parent_ids)))
    else:
        parent_hashes = ledger.get("parent_hashes")
        if parent_hashes is None:
            if parent_ids:
                raise VerificationError("ledger_hash", subject, "the ledger has %d parent(s) and no 'parent_hashes' field, "
                                        "so its hash cannot be checked: pass parent_hashes=[hash of each of parent_ids] "
                                        "(Client.verify_ledger fetches them)" % len(parent_ids),
                                        "%d parent hashes" % len(parent_ids), "none")
            parent_hashes = []
        elif not isinstance(parent_hashes, list) or len(parent_hashes) != len(parent_ids):
            raise VerificationError("ledger_hash", subject, "the 'parent_hashes' field does not hold one hash per parent",
                                    "%d hashes" % len(parent_ids), _short(parent_hashes))
    if not all(isinstance(p, str) for p in parent_hashes):
        raise VerificationError("ledger_hash", subject, "a parent hash is not a string", "hex digests", _short(list(parent_hashes)))
    framing = hashes.ledger_framing_problem(list(parent_hashes), label, created_at)
    if framing is not None:
        got = {"label": label, "created_at": created_at}.get(framing[0], list(parent_hashes))
        raise VerificationError("ledger_hash", subject, framing[1], None, _short(got))
    h = hashes.ledger_hash(root, list(parent_hashes), label, created_at)
    if h != stored_hash:
        raise VerificationError("ledger_hash", subject,
                                "root_hash, parent hashes, label and created_at do not hash to hash",
                                stored_hash, h)
    report = LedgerReport(ledger_id=lid, hash=stored_hash, root_hash=stored_root, records_checked=len(records),
                          signatures_checked=False, redacted=redacted, withheld=withheld)
    if check_signatures:
        if public_key is None:
            raise InvalidInput("%s: no public key to check the signature with (pass /v1/info's public_key, "
                               "or check_signatures=False)" % subject)
        _check_signature(public_key, hashes.ledger_signing_message(h), ledger.get("signature"), "signature", subject)
        report.signatures_checked = True
    return report


def inclusion(proof: Mapping[str, Any], record: Mapping[str, Any]) -> RecordReport:
    """Verify that ``record`` is in a ledger: the record itself (as
    :func:`record`), then the RFC 6962 audit path of
    ``GET /v1/ledgers/{id}/proof/{record_id}`` from its recomputed seal to
    the proof's ``root_hash``. Compare ``proof["root_hash"]`` with the
    ``root_hash`` of a ledger you verified."""
    proof = _object(proof, "inclusion proof")
    rep = _verify_record(record)
    subject = "proof of record %s" % (rep.id or "(no id)")
    if proof.get("record_id") not in (None, rep.id):
        raise VerificationError("order", subject, "the proof is for another record", str(proof.get("record_id")), rep.id)
    if proof.get("seal") not in (None, rep.seal):
        raise VerificationError("seal", subject, "the proof names another seal", str(proof.get("seal")), rep.seal)
    index = _need(proof, "leaf_index", "root", subject, "int")
    size = _need(proof, "tree_size", "root", subject, "int")
    root = bytes.fromhex(_need(proof, "root_hash", "root", subject, "hash"))
    path_hex = _need(proof, "audit_path", "root", subject, "list")
    path = []
    for i, p in enumerate(path_hex):
        if not (isinstance(p, str) and len(p) == 64 and set(p) <= _HEX):
            raise VerificationError("root", subject, "audit_path[%d] is not a hex SHA-256 digest" % i,
                                    "a hex SHA-256 digest", _short(p))
        path.append(bytes.fromhex(p))
    got = hashes.root_from_inclusion(hashes.leaf_hash(bytes.fromhex(rep.seal)), index, size, path)
    if got != root:
        raise VerificationError("root", subject, "the audit path from the seal does not lead to root_hash",
                                root.hex(), got.hex() if got else "no root (path does not fit index and size)")
    return rep


def head_move(session_id: str, entry: Mapping[str, Any], public_key: str) -> None:
    """Check the signature of one reflog entry (``GET /v1/sessions/{id}/reflog``)."""
    entry = _object(entry, "head move")
    subject = "head move %s of session %s" % (entry.get("seq", "(no seq)"), session_id)
    seq = _need(entry, "seq", "head_signature", subject, "int")
    head_hash = _need(entry, "head_hash", "head_signature", subject)
    _check_signature(public_key, hashes.head_signing_message(session_id, seq, head_hash), entry.get("signature"),
                     "head_signature", "head move %d of session %s" % (seq, session_id))


# ---------------------------------------------------------------- the log

_SIG_PREFIX = "\u2014 "


def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode("ascii")


def _unb64(s: str, what: str) -> bytes:
    try:
        return base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidInput("%s is not base64: %r" % (what, s)) from None


def _key_id(name: str, alg_and_key: bytes) -> bytes:
    return hashlib.sha256(name.encode("utf-8") + b"\n" + alg_and_key).digest()[:4]


def _parse_vkey(vkey: str, alg: int, kind: str) -> tuple[str, bytes, bytes]:
    """name+hex8+base64(alg||key) -> (name, key id, 32-byte key)."""
    parts = vkey.split("+", 2) if isinstance(vkey, str) else []
    if len(parts) != 3 or not parts[0]:
        raise InvalidInput("%s %r is not name+hex8+base64" % (kind, vkey))
    name, hid, b = parts
    raw = _unb64(b, kind)
    if len(raw) != 33 or raw[0] != alg:
        raise InvalidInput("%s %r is not an Ed25519 key of algorithm 0x%02x" % (kind, vkey, alg))
    kid = _key_id(name, raw)
    if kid.hex() != hid.lower():
        raise InvalidInput("%s %r: key id %s does not match the key (%s)" % (kind, vkey, hid, kid.hex()))
    return name, kid, raw[1:]


def log_vkey(origin: str, public_key: str) -> str:
    """The note verifier key kurad's checkpoints are signed under: its
    Ed25519 key (``ed25519:<hex>``) named after the log origin."""
    raw = b"\x01" + parse_public_key(public_key)
    return "%s+%s+%s" % (origin, _key_id(origin, raw).hex(), _b64(raw))


@dataclass
class Checkpoint:
    origin: str
    size: int
    root: bytes
    text: str
    signature_checked: bool = True
    cosigners: list[str] = field(default_factory=list)

    @property
    def root_b64(self) -> str:
        return _b64(self.root)


def _split_note(text: str) -> tuple[str, list[tuple[str, bytes]]]:
    idx = text.find("\n\n")
    if idx < 0:
        raise VerificationError("log_signature", "checkpoint", "not a signed note (no blank line before the signatures)")
    body, sigs = text[: idx + 1], []
    for line in text[idx + 2:].split("\n"):
        if not line:
            continue
        if not line.startswith(_SIG_PREFIX):
            raise VerificationError("log_signature", "checkpoint", "malformed signature line %r" % line)
        name, _, b = line[len(_SIG_PREFIX):].rpartition(" ")
        try:
            raw = base64.b64decode(b, validate=True)
        except (binascii.Error, ValueError):
            raise VerificationError("log_signature", "checkpoint", "signature line %r is not base64" % line) from None
        if not name or len(raw) < 5:
            raise VerificationError("log_signature", "checkpoint", "malformed signature line %r" % line)
        sigs.append((name, raw))
    return body, sigs


def _parse_body(body: str) -> tuple[str, int, bytes]:
    lines = body.split("\n")
    if len(lines) < 4 or not lines[0]:
        raise VerificationError("log_signature", "checkpoint", "the note body is not origin, size and root")
    origin, size_s, root_s = lines[0], lines[1], lines[2]
    if not size_s.isdigit() or (len(size_s) > 1 and size_s[0] == "0"):
        raise VerificationError("log_root", "checkpoint " + origin, "tree size %r is not a number" % size_s)
    try:
        root = base64.b64decode(root_s, validate=True)
    except (binascii.Error, ValueError):
        root = b""
    if len(root) != 32:
        raise VerificationError("log_root", "checkpoint " + origin, "root %r is not a base64 SHA-256 hash" % root_s)
    return origin, int(size_s), root


def checkpoint(text: str | bytes, log_vkey: str, witness_vkeys: Iterable[str] = (),
               *, check_signatures: bool = True) -> Checkpoint:
    """Parse a C2SP tlog-checkpoint signed note (``GET /v1/log/checkpoint``)
    and check kurad's Ed25519 note signature by ``log_vkey`` (``/v1/info``'s
    ``log_vkey``, or :func:`log_vkey`); with ``witness_vkeys``, every one of
    those witnesses must have cosigned it (C2SP tlog-cosignature/v1)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    body, sigs = _split_note(text)
    origin, size, root = _parse_body(body)
    subject = "checkpoint %s" % origin
    cp = Checkpoint(origin=origin, size=size, root=root, text=text, signature_checked=False)
    if not check_signatures:
        return cp
    name, kid, pk = _parse_vkey(log_vkey, 0x01, "log verifier key")
    if name != origin:
        raise VerificationError("log_signature", subject, "the verifier key is named %r, not after the origin" % name)
    mine = [raw for n, raw in sigs if n == name and raw[:4] == kid]
    if not mine:
        raise VerificationError("log_signature", subject, "no signature by the log key %s" % log_vkey)
    for raw in mine:
        if not _ed25519_verify(pk, body.encode("utf-8"), raw[4:]):
            raise VerificationError("log_signature", subject, "the log signature does not verify against %s" % log_vkey)
    cp.signature_checked = True
    for wk in witness_vkeys:
        wname, wid, wpk = _parse_vkey(wk, 0x04, "witness verifier key")
        theirs = [raw for n, raw in sigs if n == wname and raw[:4] == wid]
        if not theirs:
            raise VerificationError("log_cosignature", subject, "no cosignature of witness %s" % wname)
        for raw in theirs:
            if len(raw) != 4 + 8 + 64:
                raise VerificationError("log_cosignature", subject, "cosignature of %s has %d bytes" % (wname, len(raw)))
            (t,) = struct.unpack(">Q", raw[4:12])
            msg = ("cosignature/v1\ntime %d\n" % t).encode("ascii") + body.encode("utf-8")
            if not _ed25519_verify(wpk, msg, raw[12:]):
                raise VerificationError("log_cosignature", subject, "the cosignature of witness %s does not verify" % wname)
        cp.cosigners.append(wname)
    return cp


def _b64_field(v: Any, what: str, subject: str, name: str, size: int | None = 32) -> bytes:
    """Decode base64 v, a field of kurad's answer read by the check what:
    anything else is a VerificationError naming the field."""
    try:
        b = base64.b64decode(v, validate=True) if isinstance(v, str) else None
    except (binascii.Error, ValueError):
        b = None
    if b is None or (size is not None and len(b) != size):
        want = "a base64 %d-byte hash" % size if size else "base64"
        raise VerificationError(what, subject, "%s is not %s" % (name, want), want, _short(v))
    return b


def _proof_hashes(proof: Any, what: str, subject: str) -> list[bytes]:
    if not isinstance(proof, list):
        raise VerificationError(what, subject, "the 'proof' field is not a list of base64 hashes", "a list", _short(proof))
    return [_b64_field(s, what, subject, "proof[%d]" % i) for i, s in enumerate(proof)]


def log_inclusion(proof: Mapping[str, Any], cp: Checkpoint) -> bytes:
    """Check ``GET /v1/log/inclusion`` against a verified checkpoint: the
    event with ``seq`` is leaf seq-1 of the checkpoint's tree. When the
    proof carries ``leaf`` (base64 leaf data, for a lookup by ledger) the
    data must hash to ``leaf_hash``. Returns the leaf hash."""
    proof = _object(proof, "log inclusion proof")
    subject = "log %s seq %s" % (cp.origin, proof.get("seq", "(no seq)"))
    seq = _need(proof, "seq", "log_proof", subject, "int")
    size = _need(proof, "size", "log_root", subject, "int")
    lh = _b64_field(proof.get("leaf_hash"), "log_leaf", subject, "leaf_hash")
    if proof.get("leaf"):
        data = _b64_field(proof["leaf"], "log_leaf", subject, "leaf", None)
        got = hashes.leaf_hash(data)
        if got != lh:
            raise VerificationError("log_leaf", subject, "the leaf data does not hash to leaf_hash", _b64(lh), _b64(got))
    if size != cp.size:
        raise VerificationError("log_root", subject, "the proof is for a tree of another size than the checkpoint's",
                                str(cp.size), str(size))
    path = _proof_hashes(proof.get("proof"), "log_proof", subject)
    if not 1 <= seq <= cp.size:
        raise VerificationError("log_proof", subject, "seq is not in a tree of size %d" % cp.size)
    got_root = hashes.root_from_inclusion(lh, seq - 1, cp.size, path)
    if got_root != cp.root:
        raise VerificationError("log_proof", subject, "the inclusion proof does not lead to the checkpoint's root",
                                cp.root_b64, _b64(got_root) if got_root else "no root")
    return lh


def log_consistency(proof: Mapping[str, Any], old: Checkpoint, new: Checkpoint) -> None:
    """Check ``GET /v1/log/consistency`` between two verified checkpoints:
    the newer tree extends the older one (same origin, not smaller, same
    root at the same size, else a valid RFC 9162 consistency proof)."""
    proof = _object(proof, "log consistency proof")
    subject = "log %s %d -> %d" % (old.origin, old.size, new.size)
    if old.origin != new.origin:
        raise VerificationError("log_consistency", subject, "the origins differ", old.origin, new.origin)
    if new.size < old.size:
        raise VerificationError("log_consistency", subject, "the newer tree is smaller (rolled back or truncated)",
                                ">= %d" % old.size, str(new.size))
    if new.size == old.size:
        if new.root != old.root:
            raise VerificationError("log_consistency", subject, "two roots at one size (a fork)", old.root_b64, new.root_b64)
        return
    if old.size == 0:
        return
    if proof.get("old") not in (None, old.size) or proof.get("new") not in (None, new.size):
        raise VerificationError("log_consistency", subject, "the proof is for sizes %s -> %s" % (proof.get("old"), proof.get("new")))
    path = _proof_hashes(proof.get("proof"), "log_consistency", subject)
    got = hashes.root_from_consistency(old.size, new.size, old.root, path)
    if got != new.root:
        raise VerificationError("log_consistency", subject, "the consistency proof does not lead from the old root to the new one",
                                new.root_b64, _b64(got) if got else "no root")


def _check_ledger_leaf(inc: Mapping[str, Any], ledger_id: str, ledger_hash_hex: str) -> None:
    subject = "log leaf of ledger " + ledger_id
    data = _b64_field(inc.get("leaf"), "log_leaf", subject, "leaf", None)
    try:
        leaf = json.loads(data)
    except ValueError:
        raise VerificationError("log_leaf", subject, "the leaf data is not JSON") from None
    if not isinstance(leaf, dict):
        raise VerificationError("log_leaf", subject, "the leaf data is not an object")
    if leaf.get("type") != "ledger.written":
        raise VerificationError("log_leaf", subject, "the leaf is not a ledger.written event", "ledger.written", str(leaf.get("type")))
    if (leaf.get("refs") or {}).get("ledger_id") != ledger_id:
        raise VerificationError("log_leaf", subject, "the leaf names another ledger", ledger_id, str((leaf.get("refs") or {}).get("ledger_id")))
    if leaf.get("digest") != ledger_hash_hex:
        raise VerificationError("log_leaf", subject, "the leaf digest is not the ledger's hash", ledger_hash_hex, str(leaf.get("digest")))
    if leaf.get("seq") != inc.get("seq"):
        raise VerificationError("log_leaf", subject, "the leaf's seq is not the proof's", str(inc.get("seq")), str(leaf.get("seq")))


# ---------------------------------------------------------------- exports


@dataclass
class ExportReport:
    session_id: str | None
    ledgers_checked: int = 0
    records_checked: int = 0
    head_moves_checked: int = 0
    redacted: list[str] = field(default_factory=list)
    withheld: list[str] = field(default_factory=list)
    signatures_checked: bool = False
    log_checked: bool = False
    log_origin: str | None = None
    log_size: int | None = None
    ledgers_proved: int = 0
    not_in_log: list[str] = field(default_factory=list)
    cosigners: list[str] = field(default_factory=list)
    head_hash: str | None = None


def _read_lines(source: str | os.PathLike[str] | Iterable[str]) -> list[tuple[int, dict[str, Any]]]:
    if isinstance(source, os.PathLike) or (isinstance(source, str) and "\n" not in source and not source.lstrip().startswith("{")):
        with open(source, encoding="utf-8") as f:
            lines: Iterable[str] = f.read().split("\n")
    elif isinstance(source, str):
        lines = source.split("\n")
    else:
        lines = source
    out = []
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line:
            continue
        try:
            obj = json.loads(line)
        except ValueError as e:
            raise InvalidInput("export line %d is not JSON: %s" % (n, e)) from None
        if not isinstance(obj, dict) or obj.get("kind") not in ("session", "record", "ledger"):
            raise InvalidInput("export line %d is not a session, record or ledger object" % n)
        if not isinstance(obj.get("id"), str):
            raise InvalidInput("export line %d: %s without an id" % (n, obj["kind"]))
        out.append((n, obj))
    if not out:
        raise InvalidInput("the export is empty")
    return out


def session_export(source: str | os.PathLike[str] | Iterable[str], public_key: str, *,
                   expect_head_hash: str | None = None, witness_keys: Iterable[str] = (),
                   check_signatures: bool = True) -> ExportReport:
    """Verify the JSON lines file ``kura export <session> --format=jsonl``
    writes (a path, the text, or an iterable of lines) against
    ``public_key``: every record, every ledger (ids, order, root, hash,
    signature), the chain of parents, every signed head move of the reflog,
    the head, and the log section when present (checkpoint signature and,
    with ``witness_keys``, cosignatures; each ledger's inclusion proof).
    Raises the first VerificationError found; returns an ExportReport."""
    items = _read_lines(source)
    session: dict[str, Any] | None = None
    recs: dict[str, dict[str, Any]] = {}
    ledgers: list[dict[str, Any]] = []
    by_id: dict[str, dict[str, Any]] = {}
    for n, obj in items:
        kind = obj["kind"]
        if kind == "session":
            if session is not None:
                raise InvalidInput("export line %d: a second session; verify one session's export at a time" % n)
            session = obj
        elif kind == "record":
            recs[obj["id"]] = obj
        elif obj["id"] not in by_id:
            by_id[obj["id"]] = obj
            ledgers.append(obj)
    rep = ExportReport(session_id=session.get("id") if session else None, signatures_checked=check_signatures)
    seen_redacted: set[str] = set()
    for lg in ledgers:
        subject = "ledger " + lg["id"]
        rids = _need(lg, "record_ids", "order", subject, "list")
        if not all(isinstance(r, str) for r in rids):
            raise VerificationError("order", subject, "the 'record_ids' field is not a list of ids", "a list", _short(rids))
        missing = [r for r in rids if r not in recs]
        if missing:
            raise VerificationError("order", subject, "record %s is not in the export" % missing[0])
        pids = lg.get("parent_ids") or []
        if not isinstance(pids, list) or not all(isinstance(p, str) for p in pids):
            raise VerificationError("ledger_hash", subject, "the 'parent_ids' field is not a list of ids", "a list", _short(pids))
        parents = []
        for pid in pids:
            if pid not in by_id:
                raise VerificationError("chain", subject, "parent ledger %s is not in the export" % pid)
            parents.append(by_id[pid].get("hash"))
        lr = ledger(lg, [recs[r] for r in rids], public_key, parent_hashes=parents, check_signatures=check_signatures)
        rep.ledgers_checked += 1
        rep.records_checked += lr.records_checked
        for rid in lr.redacted:
            if rid not in seen_redacted:
                seen_redacted.add(rid)
                rep.redacted.append(rid)
        rep.withheld.extend(r for r in lr.withheld if r not in rep.withheld)
    if session is None:
        raise VerificationError("head", "export", "the export holds no session, so no signed head move says which ledger is the head")
    sid = session["id"]
    ssub = "session " + sid
    if session.get("public_key") and check_signatures and parse_public_key(session["public_key"]) != parse_public_key(public_key):
        raise VerificationError("signature", ssub, "the export says it was signed by another key", public_key, session["public_key"])
    _verify_export_log(session.get("log"), ledgers, public_key, list(witness_keys), check_signatures, rep)
    head = None
    head_id = session.get("head_ledger_id")
    if head_id is not None:
        head = by_id.get(head_id)
        if head is None:
            raise VerificationError("head", ssub, "the head ledger %s is not in the export" % head_id)
        if session.get("head_hash") != head["hash"]:
            raise VerificationError("head_hash", ssub, "the session's head_hash is not the head ledger's hash", head["hash"], str(session.get("head_hash")))
    last = None
    reflog = session.get("reflog") or []
    if not isinstance(reflog, list) or not all(isinstance(e, dict) for e in reflog):
        raise VerificationError("reflog", ssub, "the 'reflog' field is not a list of head moves", "a list", _short(reflog))
    for i, e in enumerate(reflog):
        seq = e.get("seq")
        if check_signatures:
            head_move(sid, e, public_key)
        rep.head_moves_checked += 1
        if seq != i + 1:
            raise VerificationError("reflog", ssub, "head move %s is at place %d: a move was removed or inserted" % (seq, i + 1))
        if last is not None and e.get("from") != last.get("to"):
            raise VerificationError("reflog", ssub, "head move %s does not start where head move %s ended" % (seq, last.get("seq")),
                                    str(last.get("to")), str(e.get("from")))
        target = by_id.get(e.get("to"))
        if target is not None and target["hash"] != e.get("head_hash"):
            raise VerificationError("head_hash", ssub, "head move %s signed another hash than the exported ledger's" % seq,
                                    str(e.get("head_hash")), target["hash"])
        last = e
    if last is None and head is not None:
        raise VerificationError("reflog", ssub, "the session has a head but no signed head move")
    if last is not None and last.get("to") != head_id:
        raise VerificationError("head", ssub, "the head is not the ledger the last signed head move named", str(last.get("to")), str(head_id))
    if last is not None and head is not None and last.get("head_hash") != head["hash"]:
        raise VerificationError("head_hash", ssub, "the head ledger's hash is not the one the last head move signed", str(last.get("head_hash")), head["hash"])
    rep.head_hash = head["hash"] if head else None
    if expect_head_hash:
        seen: set[str] = set()
        cur, found = head, False
        while cur is not None and cur["id"] not in seen:
            seen.add(cur["id"])
            if cur["hash"] == expect_head_hash:
                found = True
                break
            ps = cur.get("parent_ids") or []
            cur = by_id.get(ps[0]) if ps else None
        if not found:
            raise VerificationError("chain", ssub, "the first-parent chain from the head does not hold ledger hash %s "
                                    "(cut off or rewritten)" % expect_head_hash)
    return rep


def _verify_export_log(lg: Any, ledgers: list[dict[str, Any]], public_key: str, witness_keys: list[str],
                       check_signatures: bool, rep: ExportReport) -> None:
    if not lg:
        if witness_keys:
            raise VerificationError("log_cosignature", "export", "the export has no log section, so no witness cosignature to check")
        return
    text = lg.get("checkpoint")
    if not isinstance(text, str):
        raise VerificationError("log_signature", "export", "the log section has no checkpoint")
    body, _ = _split_note(text)
    origin = body.split("\n", 1)[0]
    cp = checkpoint(text, log_vkey(origin, public_key), witness_keys, check_signatures=check_signatures)
    rep.log_checked, rep.log_origin, rep.log_size, rep.cosigners = True, cp.origin, cp.size, list(cp.cosigners)
    by_ledger = {i.get("ledger_id"): i for i in lg.get("inclusions") or [] if isinstance(i, dict)}
    for l in ledgers:
        inc = by_ledger.get(l["id"])
        if inc is None:
            rep.not_in_log.append(l["id"])
            continue
        _check_ledger_leaf(inc, l["id"], l["hash"])
        log_inclusion(inc, cp)
        rep.ledgers_proved += 1
