"""Offline verification of what a real kurad hands out, and every tamper
caught with the right ``.what``."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

import kura
from kura import verify

from .support import SIGNATURES, Kurad, kura_bin, needs_signatures

K: Kurad
C: kura.Client
W: dict  # what the module wrote: ids, public key, export lines


def setUpModule() -> None:
    global K
    K = Kurad()
    try:
        _write()
    except BaseException:
        K.stop()
        raise


def _write() -> None:
    global C, W
    C = kura.Client(K.url, retries=0)
    W = {}
    info = C.info()
    W["pk"] = info["public_key"]
    W["vkey"] = info["log_vkey"]
    s = C.create_session("verify", "main")
    W["session"] = s["id"]
    C.put_node("verify", {"kind": "fact", "id": "port", "title": "kurad port", "summary": "kurad listens on 7700",
                          "lifecycle": "active", "authority": "trusted"})
    for n in range(2):
        t = C.open_turn(s["id"], {"type": "task.instruction", "content": {"task": "turn %d" % n, "x": 1.5e-7},
                                  "author_id": "user:tester"}, memory={"query": "port"})
        ep = C.claim_turn(t["id"], "agent:tester", 60)["epoch"]
        C.append(t["id"], [
            {"type": "agent.thought", "content": {"text": "thinking %d é 😀" % n, "n": 2 ** 53 - 1, "f": 1e21}, "author_id": "agent:tester",
             "metadata": {"step": str(n)}},
            {"type": "tool.call", "content": {"tool_name": "grep", "arguments": {"q": "port"}, "status": "success"},
             "author_id": "agent:tester"},
            {"type": "tool.result", "content": {"status": "success", "result": [7700]}, "author_id": "tool:grep"},
            {"type": "task.deliverable", "content": {"answer": 7700, "turn": n}, "author_id": "agent:tester"},
        ], epoch=ep)
        closed = C.close_turn(t["id"], "complete", epoch=ep)
        W.setdefault("turns", []).append(closed)
    W["out"] = closed["output_ledger_id"]
    W["ctx"] = closed["context_ledger_id"]
    W["first_ctx_hash"] = C.get_ledger(W["turns"][0]["context_ledger_id"])["hash"]
    env = dict(os.environ, KURA_URL=K.url)
    env.pop("KURA_TOKEN", None)
    out = subprocess.run([kura_bin(), "export", s["id"], "--format=jsonl"], env=env, capture_output=True, text=True, check=True)
    W["export"] = [line for line in out.stdout.split("\n") if line.strip()]


def tearDownModule() -> None:
    K.stop()


def ledger_and_records(lid: str) -> tuple[dict, list[dict], list[str]]:
    lg = C.get_ledger(lid)
    return lg, C.all_ledger_records(lid), [C.get_ledger(p)["hash"] for p in lg["parent_ids"]]


class ValidTests(unittest.TestCase):
    def test_record(self) -> None:
        lg, recs, _ = ledger_and_records(W["out"])
        for r in recs:
            rep = verify.record(C.get_record(r["id"]))
            self.assertEqual(rep.seal, r["seal"])
            self.assertFalse(rep.redacted)

    @needs_signatures
    def test_ledgers(self) -> None:
        for lid in (W["ctx"], W["out"]):
            lg, recs, parents = ledger_and_records(lid)
            rep = verify.ledger(lg, recs, W["pk"], parent_hashes=parents)
            self.assertEqual(rep.records_checked, len(lg["record_ids"]))
            self.assertTrue(rep.signatures_checked)
            self.assertEqual(C.verify_ledger(lid, W["pk"]).hash, lg["hash"])

    def test_ledger_with_parents_from_its_own_answer(self) -> None:
        # The binding three-argument call: kurad's ledger JSON carries the
        # parents' hashes, so a turn's output ledger verifies on its own.
        lg, recs, parents = ledger_and_records(W["out"])
        self.assertTrue(lg["parent_ids"])
        self.assertEqual(lg["parent_hashes"], parents)
        verify.ledger(lg, recs, W["pk"], check_signatures=SIGNATURES)
        forged = dict(lg, parent_hashes=["00" * 32])
        with self.assertRaises(kura.VerificationError) as cm:
            verify.ledger(forged, recs, W["pk"], check_signatures=SIGNATURES)
        self.assertEqual(cm.exception.what, "ledger_hash")

    def test_inclusion(self) -> None:
        lg, recs, _ = ledger_and_records(W["out"])
        for r in recs:
            proof = C.ledger_proof(lg["id"], r["id"])
            self.assertEqual(proof["root_hash"], lg["root_hash"])
            verify.inclusion(proof, r)

    @needs_signatures
    def test_head_moves(self) -> None:
        moves = C.reflog(W["session"])
        self.assertGreaterEqual(len(moves), 4)
        for e in moves:
            verify.head_move(W["session"], e, W["pk"])

    @needs_signatures
    def test_export_from_cli(self) -> None:
        rep = verify.session_export(W["export"], W["pk"], expect_head_hash=W["first_ctx_hash"])
        self.assertEqual(rep.session_id, W["session"])
        self.assertEqual(rep.ledgers_checked, 4)
        self.assertEqual(rep.head_moves_checked, 4)
        self.assertTrue(rep.log_checked)
        self.assertEqual(rep.ledgers_proved, 4)
        self.assertTrue(rep.signatures_checked)
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
            f.write("\n".join(W["export"]) + "\n")
        try:
            self.assertEqual(verify.session_export(f.name, W["pk"]).records_checked, rep.records_checked)
        finally:
            os.unlink(f.name)

    @needs_signatures
    def test_live_verify_session(self) -> None:
        rep = C.verify_session(W["session"], W["pk"], expect_head_hash=W["first_ctx_hash"])
        self.assertEqual(rep.ledgers_checked, 4)
        self.assertEqual(rep.ledgers_proved, 4)

    def test_redacted_record_still_verifies(self) -> None:
        r = C.put_record("sys.context", {"secret": "hunter2"}, "user:tester")
        keep = C.put_record("sys.context", {"public": True}, "user:tester")
        lg = C.create_ledger("redaction", [keep["id"], r["id"]])
        C.redact_record(r["id"], "leaked secret")
        got = C.get_record(r["id"])
        self.assertTrue(got["redacted"])
        self.assertIsNone(got["content"])
        self.assertTrue(verify.record(got).redacted)
        rep = verify.ledger(C.get_ledger(lg["id"]), C.all_ledger_records(lg["id"]), W["pk"], check_signatures=SIGNATURES)
        self.assertEqual(rep.redacted, [r["id"]])


class TamperTests(unittest.TestCase):
    def setUp(self) -> None:
        self.lg, self.recs, self.parents = ledger_and_records(W["out"])

    def check(self, what: str, lg: dict | None = None, recs: list | None = None) -> kura.VerificationError:
        with self.assertRaises(kura.VerificationError) as cm:
            verify.ledger(lg or self.lg, self.recs if recs is None else recs, W["pk"], parent_hashes=self.parents,
                          check_signatures=SIGNATURES)
        self.assertEqual(cm.exception.what, what, str(cm.exception))
        self.assertIn(W["out"] if what in ("order", "root", "ledger_hash", "signature") else "record ", str(cm.exception))
        return cm.exception

    def test_record_content(self) -> None:
        recs = copy.deepcopy(self.recs)
        recs[0]["content"]["text"] = "something else"
        e = self.check("content_hash", recs=recs)
        self.assertEqual(e.expected, self.recs[0]["content_hash"])
        with self.assertRaises(kura.VerificationError) as cm:
            verify.record(recs[0])
        self.assertEqual(cm.exception.what, "content_hash")

    def test_record_order(self) -> None:
        recs = list(self.recs)
        recs[0], recs[1] = recs[1], recs[0]
        self.check("order", recs=recs)

    def test_record_missing(self) -> None:
        self.check("order", recs=self.recs[:-1])

    def test_record_ids_reordered_in_ledger(self) -> None:
        lg = copy.deepcopy(self.lg)
        recs = list(self.recs)
        lg["record_ids"][0], lg["record_ids"][1] = lg["record_ids"][1], lg["record_ids"][0]
        recs[0], recs[1] = recs[1], recs[0]
        self.check("root", lg=lg, recs=recs)  # the ids agree; the Merkle root does not

    def test_ledger_label(self) -> None:
        lg = dict(self.lg, label="another-label")
        self.check("ledger_hash", lg=lg)

    @needs_signatures
    def test_ledger_signature(self) -> None:
        sig = self.lg["signature"]
        lg = dict(self.lg, signature=("0" if sig[0] != "0" else "1") + sig[1:])
        self.check("signature", lg=lg)
        self.check("signature", lg=dict(self.lg, signature=""))

    @needs_signatures
    def test_signature_by_another_key(self) -> None:
        with self.assertRaises(kura.VerificationError) as cm:
            verify.ledger(self.lg, self.recs, "ed25519:" + "11" * 32, parent_hashes=self.parents)
        self.assertEqual(cm.exception.what, "signature")

    def test_content_hash_field(self) -> None:
        recs = copy.deepcopy(self.recs)
        recs[1]["content_hash"] = "ab" * 32
        self.check("content_hash", recs=recs)

    def test_hash_field(self) -> None:
        recs = copy.deepcopy(self.recs)
        recs[1]["hash"] = "ab" * 32
        self.check("hash", recs=recs)

    def test_author(self) -> None:
        recs = copy.deepcopy(self.recs)
        recs[1]["author_id"] = "agent:mallory"
        self.check("hash", recs=recs)

    def test_seal_field_metadata_and_time(self) -> None:
        for field, value in (("seal", "cd" * 32), ("metadata", {"step": "9"}), ("created_at", "2026-01-01T00:00:00.000000000Z")):
            with self.subTest(field=field):
                recs = copy.deepcopy(self.recs)
                recs[0][field] = value
                self.check("seal", recs=recs)

    def test_root(self) -> None:
        self.check("root", lg=dict(self.lg, root_hash="ef" * 32))

    def test_ledger_hash(self) -> None:
        self.check("ledger_hash", lg=dict(self.lg, hash="ef" * 32))
        self.check("ledger_hash", lg=dict(self.lg, created_at="2026-01-01T00:00:00.000000000Z"))
        with self.assertRaises(kura.VerificationError) as cm:
            verify.ledger(self.lg, self.recs, W["pk"], parent_hashes=["00" * 32], check_signatures=SIGNATURES)
        self.assertEqual(cm.exception.what, "ledger_hash")

    def test_inclusion_path(self) -> None:
        r = self.recs[2]
        proof = C.ledger_proof(self.lg["id"], r["id"])
        bad = dict(proof, audit_path=list(reversed(proof["audit_path"])))
        with self.assertRaises(kura.VerificationError) as cm:
            verify.inclusion(bad, r)
        self.assertEqual(cm.exception.what, "root")
        with self.assertRaises(kura.VerificationError) as cm:
            verify.inclusion(dict(proof, leaf_index=(proof["leaf_index"] + 1) % proof["tree_size"]), r)
        self.assertEqual(cm.exception.what, "root")
        tampered = copy.deepcopy(r)
        tampered["content"]["status"] = "error"
        with self.assertRaises(kura.VerificationError) as cm:
            verify.inclusion(proof, tampered)
        self.assertEqual(cm.exception.what, "content_hash")


def tampered_export(fn) -> list[str]:
    objs = [json.loads(line) for line in W["export"]]
    fn(objs)
    return [json.dumps(o, ensure_ascii=False) for o in objs]


def first(objs: list[dict], kind: str, pred=lambda o: True) -> dict:
    return next(o for o in objs if o["kind"] == kind and pred(o))


class ExportTamperTests(unittest.TestCase):
    def check(self, what: str, fn, **kw) -> None:
        kw.setdefault("check_signatures", SIGNATURES)
        with self.assertRaises(kura.VerificationError) as cm:
            verify.session_export(tampered_export(fn), W["pk"], **kw)
        self.assertEqual(cm.exception.what, what, str(cm.exception))

    def test_record_line(self) -> None:
        self.check("content_hash", lambda objs: first(objs, "record", lambda o: o["type"] == "task.deliverable")["content"].update(answer=7701))

    def test_ledger_line_label(self) -> None:
        self.check("ledger_hash", lambda objs: first(objs, "ledger").update(label="x"))

    @needs_signatures
    def test_ledger_line_signature(self) -> None:
        def fn(objs):
            lg = first(objs, "ledger")
            lg["signature"] = lg["signature"][::-1]
        self.check("signature", fn)

    def test_record_removed(self) -> None:
        def fn(objs):
            objs.remove(first(objs, "record"))
        self.check("order", fn)

    def test_parent_removed(self) -> None:
        def fn(objs):
            objs.remove(first(objs, "ledger"))
        self.check("chain", fn)

    @needs_signatures
    def test_head_move_signature(self) -> None:
        def fn(objs):
            e = objs[0]["reflog"][1]
            e["signature"] = e["signature"][:-2] + ("00" if e["signature"][-2:] != "00" else "11")
        self.check("head_signature", fn)

    def test_head_move_removed(self) -> None:
        self.check("reflog", lambda objs: objs[0]["reflog"].pop(1))

    def test_head(self) -> None:
        self.check("head", lambda objs: objs[0].update(head_ledger_id=W["ctx"], head_hash=C.get_ledger(W["ctx"])["hash"]))
        self.check("head_hash", lambda objs: objs[0].update(head_hash="ab" * 32))

    def test_truncated_history(self) -> None:
        self.check("chain", lambda objs: None, expect_head_hash="ab" * 32)

    def test_no_session(self) -> None:
        self.check("head", lambda objs: objs.pop(0))

    @needs_signatures
    def test_checkpoint_signature(self) -> None:
        def fn(objs):
            lg = objs[0]["log"]
            body, _, sigs = lg["checkpoint"].partition("\n\n")
            lines = body.split("\n")
            lines[1] = str(int(lines[1]) + 1)
            lg["checkpoint"] = "\n".join(lines) + "\n\n" + sigs
        self.check("log_signature", fn)

    def test_log_proof(self) -> None:
        def fn(objs):
            inc = objs[0]["log"]["inclusions"][0]
            inc["proof"] = list(reversed(inc["proof"]))
        self.check("log_proof", fn)

    def test_log_leaf(self) -> None:
        def fn(objs):
            a, b = objs[0]["log"]["inclusions"][0], objs[0]["log"]["inclusions"][1]
            a["leaf"], a["leaf_hash"] = b["leaf"], b["leaf_hash"]
        self.check("log_leaf", fn)

    def test_log_root(self) -> None:
        self.check("log_root", lambda objs: objs[0]["log"]["inclusions"][0].update(size=1))

    @needs_signatures
    def test_witness_missing(self) -> None:
        self.check("log_cosignature", lambda objs: None, witness_keys=[witness()[1]])


def witness(name: str = "witness.example/w1"):
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
    key = Ed25519PrivateKey.generate()
    raw = b"\x04" + key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    kid = hashlib.sha256(name.encode() + b"\n" + raw).digest()[:4]
    return key, "%s+%s+%s" % (name, kid.hex(), base64.b64encode(raw).decode()), kid


def cosign(text: str, key, kid: bytes, name: str = "witness.example/w1", t: int = 1764000000) -> str:
    body = text[: text.index("\n\n") + 1]
    sig = key.sign(("cosignature/v1\ntime %d\n" % t).encode() + body.encode())
    return text + "\u2014 %s %s\n" % (name, base64.b64encode(kid + struct.pack(">Q", t) + sig).decode())


class LogTests(unittest.TestCase):
    @needs_signatures
    def test_checkpoint_valid_and_invalid(self) -> None:
        text = C.log_checkpoint()
        cp = verify.checkpoint(text, W["vkey"])
        self.assertGreater(cp.size, 10)
        self.assertEqual(verify.log_vkey(cp.origin, W["pk"]), W["vkey"])
        body, _, sig = text.partition("\n\n")
        for bad in (text.replace(body.split("\n")[2], base64.b64encode(b"\x00" * 32).decode()),
                    body + "\n\n" + sig.replace(sig.split(" ")[-1][:8], "AAAAAAAA")):
            with self.assertRaises(kura.VerificationError) as cm:
                verify.checkpoint(bad, W["vkey"])
            self.assertEqual(cm.exception.what, "log_signature")
        other = verify.log_vkey(cp.origin, "ed25519:" + "22" * 32)
        with self.assertRaises(kura.VerificationError) as cm:
            verify.checkpoint(text, other)
        self.assertEqual(cm.exception.what, "log_signature")

    @needs_signatures
    def test_cosignatures(self) -> None:
        text = C.log_checkpoint()
        key, vkey, kid = witness()
        signed = cosign(text, key, kid)
        cp = verify.checkpoint(signed, W["vkey"], [vkey])
        self.assertEqual(cp.cosigners, ["witness.example/w1"])
        with self.assertRaises(kura.VerificationError) as cm:
            verify.checkpoint(text, W["vkey"], [vkey])
        self.assertEqual(cm.exception.what, "log_cosignature")
        forged = cosign(text, witness()[0], kid)  # another key under the witness's key id
        with self.assertRaises(kura.VerificationError) as cm:
            verify.checkpoint(forged, W["vkey"], [vkey])
        self.assertEqual(cm.exception.what, "log_cosignature")

    def test_inclusion_and_consistency(self) -> None:
        old = verify.checkpoint(C.log_checkpoint(), W["vkey"], check_signatures=SIGNATURES)
        C.put_record("agent.thought", {"more": True}, "agent:tester")
        C.put_record("agent.thought", {"more": 2}, "agent:tester")
        new = verify.checkpoint(C.log_checkpoint(), W["vkey"], check_signatures=SIGNATURES)
        self.assertGreater(new.size, old.size)
        for seq in (1, old.size // 2, old.size, new.size):
            verify.log_inclusion(C.log_inclusion(seq=seq, size=new.size), new)
        p = C.log_inclusion(seq=3, size=new.size)
        with self.assertRaises(kura.VerificationError) as cm:
            verify.log_inclusion(dict(p, seq=4), new)
        self.assertEqual(cm.exception.what, "log_proof")
        with self.assertRaises(kura.VerificationError) as cm:
            verify.log_inclusion(C.log_inclusion(seq=3, size=old.size), new)
        self.assertEqual(cm.exception.what, "log_root")
        by_ledger = C.log_inclusion(ledger_id=W["out"], size=new.size)
        verify.log_inclusion(by_ledger, new)
        with self.assertRaises(kura.VerificationError) as cm:
            verify.log_inclusion(dict(by_ledger, leaf=base64.b64encode(b"{}").decode()), new)
        self.assertEqual(cm.exception.what, "log_leaf")

        proof = C.log_consistency(old.size, new.size)
        verify.log_consistency(proof, old, new)
        verify.log_consistency({"proof": []}, new, new)
        bad = dict(proof, proof=[base64.b64encode(b"\x01" * 32).decode()] + proof["proof"][1:])
        for args in ((bad, old, new), (proof, new, old)):
            with self.assertRaises(kura.VerificationError) as cm:
                verify.log_consistency(*args)
            self.assertEqual(cm.exception.what, "log_consistency")


class SignatureUnavailableTests(unittest.TestCase):
    HIDE = {"cryptography": None, "cryptography.exceptions": None,
            "cryptography.hazmat.primitives.asymmetric.ed25519": None}

    def test_without_cryptography(self) -> None:
        lg, recs, parents = ledger_and_records(W["out"])
        with mock.patch.dict(sys.modules, self.HIDE):
            with self.assertRaises(kura.SignatureUnavailable) as cm:
                verify.ledger(lg, recs, W["pk"], parent_hashes=parents)
            self.assertNotIsInstance(cm.exception, kura.VerificationError)
            self.assertIn("cryptography", str(cm.exception))
            self.assertIn("check_signatures=False", str(cm.exception))
            with self.assertRaises(kura.SignatureUnavailable):
                verify.session_export(W["export"], W["pk"])
            with self.assertRaises(kura.SignatureUnavailable):
                verify.checkpoint(C.log_checkpoint(), W["vkey"])
            rep = verify.ledger(lg, recs, W["pk"], parent_hashes=parents, check_signatures=False)
            self.assertFalse(rep.signatures_checked)
            erep = verify.session_export(W["export"], W["pk"], check_signatures=False)
            self.assertFalse(erep.signatures_checked)
            # hashes are still checked without signatures
            recs[0] = dict(recs[0], seal="00" * 32)
            with self.assertRaises(kura.VerificationError):
                verify.ledger(lg, recs, W["pk"], parent_hashes=parents, check_signatures=False)


def without(obj: dict, field: str) -> dict:
    return {k: v for k, v in obj.items() if k != field}


class MissingFieldTests(unittest.TestCase):
    """A field of kurad's answer deleted or malformed is a tamper like any
    other: VerificationError naming the check and the field, never
    InvalidInput, TypeError or KeyError."""

    def setUp(self) -> None:
        self.lg, self.recs, self.parents = ledger_and_records(W["out"])

    def assert_fails(self, what: str, field: str, fn) -> None:
        with self.assertRaises(kura.VerificationError) as cm:
            fn()
        self.assertEqual(cm.exception.what, what, str(cm.exception))
        self.assertIn(field, str(cm.exception))

    def test_record_fields(self) -> None:
        cases = [  # field, the check it belongs to, a malformed value
            ("content", "content_hash", None),
            ("content_hash", "content_hash", 12),
            ("hash", "hash", "zz" * 32),
            ("type", "hash", ["agent.thought"]),
            ("author_id", "hash", 7),
            ("seal", "seal", "AB" * 32),
            ("created_at", "seal", 1764000000),
            ("metadata", "seal", "step 0"),
        ]
        r = self.recs[0]
        for field, what, bad in cases:
            # (r has metadata: without it the seal is computed over {}, and
            # the message names metadata among what does not hash to seal.)
            for name, rec in (("deleted", without(r, field)), ("malformed", dict(r, **{field: bad}))):
                with self.subTest(field=field, case=name):
                    self.assert_fails(what, field, lambda: verify.record(rec))
                    recs = [rec] + self.recs[1:]
                    self.assert_fails(what, field, lambda: verify.ledger(self.lg, recs, W["pk"], check_signatures=SIGNATURES))
                    self.assert_fails(what, field, lambda: verify.inclusion(C.ledger_proof(self.lg["id"], r["id"]), rec))

    def test_ledger_fields(self) -> None:
        cases = [
            ("root_hash", "root", "not hex"),
            ("hash", "ledger_hash", None),
            ("label", "ledger_hash", 3),
            ("created_at", "ledger_hash", False),
            ("parent_hashes", "ledger_hash", "ab" * 32),
            ("parent_ids", "ledger_hash", "one"),
            ("signature", "signature", 5),
            ("record_ids", "order", "all of them"),
            ("record_count", "order", "four"),
        ]
        for field, what, bad in cases:
            variants = [("malformed", dict(self.lg, **{field: bad}))]
            if field not in ("parent_ids", "record_ids", "record_count"):  # these three may be absent
                variants.append(("deleted", without(self.lg, field)))
            for name, lg in variants:
                with self.subTest(field=field, case=name):
                    # A missing or non-hex signature fails before any
                    # Ed25519 check, so that case runs without cryptography.
                    sigs = SIGNATURES or what == "signature"
                    self.assert_fails(what, field, lambda: verify.ledger(lg, self.recs, W["pk"], check_signatures=sigs))

    def test_inclusion_proof_fields(self) -> None:
        r = self.recs[1]
        proof = C.ledger_proof(self.lg["id"], r["id"])
        for field, bad in (("root_hash", "ab"), ("audit_path", ["zz"]), ("leaf_index", "0"), ("tree_size", None)):
            for name, p in (("deleted", without(proof, field)), ("malformed", dict(proof, **{field: bad}))):
                with self.subTest(field=field, case=name):
                    self.assert_fails("root", field, lambda: verify.inclusion(p, r))

    def test_head_move_fields(self) -> None:
        e = C.reflog(W["session"])[0]
        for field in ("seq", "head_hash", "signature"):
            with self.subTest(field=field):
                self.assert_fails("head_signature", "signature" if field == "signature" else field,
                                  lambda: verify.head_move(W["session"], without(e, field), W["pk"]))

    def test_log_inclusion_fields(self) -> None:
        cp = verify.checkpoint(C.log_checkpoint(), W["vkey"], check_signatures=False)
        p = C.log_inclusion(ledger_id=W["out"], size=cp.size)
        for field, what, bad in (("seq", "log_proof", "1"), ("size", "log_root", None), ("leaf_hash", "log_leaf", "!!"),
                                 ("proof", "log_proof", ["AAAA"]), ("leaf", "log_leaf", "not base64!")):
            variants = [("malformed", dict(p, **{field: bad}))]
            if field != "leaf":  # leaf is optional
                variants.append(("deleted", without(p, field)))
            for name, q in variants:
                with self.subTest(field=field, case=name):
                    self.assert_fails(what, field, lambda: verify.log_inclusion(q, cp))

    def test_export_fields(self) -> None:
        def drop(kind: str, field: str):
            def fn(objs):
                del first(objs, kind)[field]
            return fn
        for kind, field, what in (("record", "seal", "seal"), ("record", "author_id", "hash"),
                                  ("ledger", "hash", "ledger_hash"), ("ledger", "root_hash", "root"),
                                  ("ledger", "record_ids", "order")):
            with self.subTest(kind=kind, field=field):
                self.assert_fails(what, field, lambda: verify.session_export(tampered_export(drop(kind, field)), W["pk"],
                                                                             check_signatures=SIGNATURES))


class BadInputTests(unittest.TestCase):
    """What the caller passes wrongly is InvalidInput (a ValueError), not a
    verification failure."""

    def test_bad_input(self) -> None:
        lg, recs, parents = ledger_and_records(W["out"])
        cases = [
            lambda: verify.record("not a record"),  # type: ignore[arg-type]
            lambda: verify.record(None),  # type: ignore[arg-type]
            lambda: verify.ledger(lg, recs, "ed25519:xyz", parent_hashes=parents),
            lambda: verify.ledger(lg, "abc", W["pk"], parent_hashes=parents),  # type: ignore[arg-type]
            lambda: verify.ledger(lg, recs, W["pk"], parent_hashes=parents * 2),
            lambda: verify.ledger([lg], recs, W["pk"]),  # type: ignore[arg-type]
            lambda: verify.inclusion([], recs[0]),  # type: ignore[arg-type]
            lambda: verify.session_export(["{not json"], W["pk"]),
            lambda: verify.session_export(['{"kind":"thing","id":"x"}'], W["pk"]),
            lambda: verify.checkpoint(C.log_checkpoint(), "not-a-vkey"),
        ]
        for i, fn in enumerate(cases):
            with self.subTest(case=i):
                with self.assertRaises(kura.InvalidInput) as cm:
                    fn()
                self.assertIsInstance(cm.exception, ValueError)
                self.assertTrue(str(cm.exception))


if __name__ == "__main__":
    unittest.main()
