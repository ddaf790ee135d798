"""The client against a real kurad: turns, memory, context, knowledge bases,
typed errors, retries with one Idempotency-Key, tokens."""

from __future__ import annotations

import time
import unittest
import urllib.parse

import kura

from .support import CuttingProxy, Kurad

K: Kurad
C: kura.Client


def setUpModule() -> None:
    global K, C
    K = Kurad()
    C = kura.Client(K.url, retries=0)


def tearDownModule() -> None:
    K.stop()


def hostport(url: str) -> str:
    return urllib.parse.urlsplit(url).netloc


class TurnTests(unittest.TestCase):
    def test_lifecycle(self) -> None:
        s = C.create_session("turns", "life")
        C.put_node("turns", {"kind": "decision", "id": "db", "title": "use sqlite", "summary": "the store is sqlite",
                             "lifecycle": "active", "authority": "verified"})
        t = C.open_turn(s["id"], {"type": "task.instruction", "content": "which store?", "author_id": "user:tester"},
                        memory={"query": "store"})
        self.assertEqual(t["state"], "open")
        ctx = C.all_ledger_records(t["context_ledger_id"])
        self.assertTrue(any(r["type"] == "memory.decision" and r["content"]["ref"] == "decision:db" for r in ctx), ctx)
        with self.assertRaises(kura.Conflict):
            C.open_turn(s["id"], {"type": "task.instruction", "content": "second", "author_id": "user:tester"})
        claim = C.claim_turn(t["id"], "agent:tester", 30)
        self.assertEqual(claim["epoch"], 1)
        with self.assertRaises(kura.Conflict) as cm:
            C.claim_turn(t["id"], "agent:other", 30)
        self.assertEqual(cm.exception.code, "conflict")
        self.assertEqual(cm.exception.details.get("worker"), "agent:tester")
        renewed = C.renew_turn(t["id"], claim["epoch"], 120)
        self.assertGreater(renewed["lease_expires_at"], claim["lease_expires_at"])
        C.append(t["id"], [{"type": "agent.thought", "content": "sqlite it is", "author_id": "agent:tester"}], epoch=1)
        with self.assertRaises(kura.Conflict) as cm:
            C.append(t["id"], [{"type": "agent.thought", "content": "stale", "author_id": "agent:tester"}], epoch=0)
        self.assertEqual(cm.exception.status, 409)
        self.assertEqual(cm.exception.details.get("epoch"), 1)
        with self.assertRaises(kura.Conflict):
            C.close_turn(t["id"], "complete", epoch=7)
        closed = C.close_turn(t["id"], "complete", epoch=1)
        self.assertEqual(closed["state"], "complete")
        self.assertEqual(len(C.get_turn(t["id"])["output_record_ids"]), 2)  # the thought and kurad's deliverable
        self.assertEqual(C.get_session(s["id"])["head_ledger_id"], closed["output_ledger_id"])
        self.assertEqual([x["id"] for x in C.list_turns(session_id=s["id"])["turns"]], [t["id"]])
        with self.assertRaises(kura.Conflict) as cm:
            C.append(t["id"], [{"type": "agent.thought", "content": "late", "author_id": "agent:tester"}], epoch=1)
        self.assertEqual(cm.exception.details.get("state"), "complete")
        self.assertEqual(C.find_session("turns", "life")["id"], s["id"])
        self.assertGreaterEqual(len(C.session_log(s["id"])["ledgers"]), 2)
        self.assertTrue(C.verify_session_on_server(s["id"])["ok"])

    def test_head_move_compare_and_swap(self) -> None:
        s = C.create_session("turns", "heads")
        r = C.put_record("sys.context", "a", "user:tester")
        lg = C.create_ledger("heads-1", [r["id"]])
        moved = C.move_head(s["id"], lg["id"], None)
        self.assertEqual(moved["head_ledger_id"], lg["id"])
        with self.assertRaises(kura.Conflict) as cm:
            C.move_head(s["id"], lg["id"], None)
        self.assertEqual(cm.exception.details.get("actual_head"), lg["id"])


class MemoryContextKBTests(unittest.TestCase):
    def test_memory(self) -> None:
        r = C.put_record("agent.thought", {"saw": "the tide table"}, "agent:tester")
        n = C.put_node("mem", {"kind": "fact", "id": "tide", "title": "high tide at noon", "summary": "tide tables say noon",
                               "derived_from": ["record:" + r["id"]], "lifecycle": "active", "authority": "trusted"})
        self.assertEqual(n["ref"], "fact:tide")
        self.assertEqual(C.put_node("mem", {"kind": "fact", "id": "tide", "summary": "tide tables say 12:05"})["version"], 2)
        self.assertEqual(len(C.node_history("mem", "fact:tide")["versions"]), 2)
        self.assertEqual(C.get_node("mem", "fact:tide")["summary"], "tide tables say 12:05")
        hits = C.search_memory("mem", "tide noon")["results"]
        self.assertEqual(hits[0]["ref"], "fact:tide")
        self.assertTrue(hits[0]["reasons"])
        prov = C.provenance("mem", "fact:tide", "backward", 2)
        self.assertEqual(prov["backward"]["sources"][0]["ref"], "record:" + r["id"])
        ev = C.evidence("mem", "fact:tide")
        self.assertEqual(ev["total_evidence_count"], 1)
        C.put_node("mem", {"kind": "belief", "id": "noon", "summary": "noon is safe"})
        rel = C.put_relation("mem", "supports", "fact:tide", "belief:noon", 0.9)
        self.assertEqual(C.relations("mem", ref="belief:noon")["relations"][0]["id"], rel["id"])
        C.transition("mem", "belief:noon", "archived", "old news")
        self.assertEqual(C.get_node("mem", "belief:noon")["lifecycle"], "archived")
        self.assertEqual(C.list_nodes("mem", kind="fact")["nodes"][0]["ref"], "fact:tide")

    def test_context(self) -> None:
        C.put_node("ctx", {"kind": "fact", "id": "a", "summary": "usable", "lifecycle": "active", "authority": "trusted"})
        C.put_node("ctx", {"kind": "fact", "id": "b", "summary": "unsure"})
        before = C.info()["last_event_seq"]
        p = C.preview_context("ctx")
        self.assertEqual([i["ref"] for i in p["buckets"]["use_now"]], ["fact:a"])
        self.assertEqual([i["ref"] for i in p["buckets"]["inspect_before_use"]], ["fact:b"])
        self.assertNotIn("bundle_id", p)
        self.assertEqual(C.info()["last_event_seq"], before)  # preview writes nothing
        b = C.compile_context("ctx", query="usable")
        self.assertEqual(C.get_bundle("ctx", b["bundle_id"])["digest"], b["digest"])
        self.assertEqual(b["digest"], "sha256:" + kura.hashes.sha256_hex(kura.jcs.canonicalize(b["buckets"])))

    def test_kb(self) -> None:
        self.assertIn(C.kb_put("tools", "grep the logs", ["grep", "logs"], "use rg -n", scope="ops")["identifier"], "grep the logs")
        C.kb_put("tools", "restart kurad", ["systemd"], "systemctl restart kurad", scope="ops")
        self.assertEqual(C.kb_entries("tools", scope="ops", key="grep")["count"], 1)
        self.assertEqual(C.kb_entries("tools", scope="ops")["count"], 2)
        found = C.kb_search("tools", "how do I restart the daemon", scope="ops")["entries"]
        self.assertEqual(found[0]["identifier"], "restart kurad")
        text = C.kb_lookup("tools", "grep logs", scope="ops")
        self.assertIn("use rg -n", text)
        C.kb_patch("tools", "grep the logs", scope="ops", value="use rg -n --hidden")
        self.assertEqual(len(C.kb_history("tools", "grep the logs", scope="ops")["versions"]), 2)
        C.kb_delete("tools", "grep the logs", scope="ops")
        with self.assertRaises(kura.NotFound):
            C.kb_delete("tools", "grep the logs", scope="ops")


class ErrorTests(unittest.TestCase):
    def test_typed_errors(self) -> None:
        with self.assertRaises(kura.NotFound) as cm:
            C.get_record("01a2108e-6902-7a72-8810-433e363256a7")
        e = cm.exception
        self.assertEqual((e.status, e.code), (404, "not_found"))
        self.assertIsInstance(e, kura.APIError)
        self.assertIsInstance(e, kura.KuraError)
        with self.assertRaises(kura.BadRequest) as cm:
            C.put_record("agent.dream", "zzz", "agent:tester")
        self.assertEqual(cm.exception.details["field"], "type")
        self.assertIn("agent.thought", cm.exception.details["allowed"])
        with self.assertRaises(kura.BadRequest):
            C.get_record("not-an-id")
        C.create_session("errs", "dup")
        with self.assertRaises(kura.Conflict) as cm:
            C.create_session("errs", "dup")
        self.assertIn("session_id", cm.exception.details)

    def test_connection_error(self) -> None:
        proxy = CuttingProxy(hostport(K.url))
        url = proxy.url
        proxy.close()
        c = kura.Client(url, retries=1, backoff=0.01)
        with self.assertRaises(kura.KuraConnectionError):
            c.info()

    def test_timeout(self) -> None:
        c = kura.Client(K.url, timeout=0.3, retries=0)
        t0 = time.monotonic()
        with self.assertRaises(kura.KuraTimeoutError):
            # a long poll that outlives the client's timeout
            c.request("GET", "/v1/events", query={"after": 10 ** 9, "wait": "5s", "type": "kb.changed", "project": "nothing-here"})
        self.assertLess(time.monotonic() - t0, 3)


class RetryTests(unittest.TestCase):
    def test_retried_close_writes_once(self) -> None:
        s = C.create_session("retry", "close")
        t = C.open_turn(s["id"], {"type": "task.instruction", "content": "go", "author_id": "user:tester"})
        proxy = CuttingProxy(hostport(K.url), cuts=1, after_bytes=0)
        try:
            c = kura.Client(proxy.url, retries=3, backoff=0.01)
            before = C.info()["last_event_seq"]
            closed = c.close_turn(t["id"], "complete")
            self.assertEqual(proxy.cut_done, 1)
            self.assertEqual(proxy.connections, 2)
            self.assertTrue(c.last_response.replayed, "the retry must be answered from the stored first answer")
            self.assertEqual(closed["state"], "complete")
            events = C.events(before)["events"]
            self.assertEqual([e["type"] for e in events].count("turn.complete"), 1)
        finally:
            proxy.close()

    def test_retried_append_writes_once(self) -> None:
        s = C.create_session("retry", "append")
        t = C.open_turn(s["id"], {"type": "task.instruction", "content": "go", "author_id": "user:tester"})
        proxy = CuttingProxy(hostport(K.url), cuts=2, after_bytes=0)
        try:
            c = kura.Client(proxy.url, retries=3, backoff=0.01)
            c.append(t["id"], [{"type": "agent.thought", "content": "once", "author_id": "agent:tester"}])
            self.assertEqual(proxy.cut_done, 2)
            self.assertTrue(c.last_response.replayed)
            self.assertEqual(len(C.get_turn(t["id"])["output_record_ids"]), 1)
        finally:
            proxy.close()

    def test_write_without_key_is_not_retried(self) -> None:
        proxy = CuttingProxy(hostport(K.url), cuts=1, after_bytes=0)
        try:
            c = kura.Client(proxy.url, retries=3, backoff=0.01, auto_idempotency=False)
            with self.assertRaises(kura.KuraConnectionError):
                c.put_record("agent.thought", "no key", "agent:tester")
            self.assertEqual(proxy.connections, 1)
        finally:
            proxy.close()

    def test_read_is_retried(self) -> None:
        proxy = CuttingProxy(hostport(K.url), cuts=2, after_bytes=0)
        try:
            c = kura.Client(proxy.url, retries=2, backoff=0.01)
            self.assertIn("public_key", c.info())
            self.assertEqual(proxy.connections, 3)
        finally:
            proxy.close()
        proxy = CuttingProxy(hostport(K.url), cuts=5, after_bytes=0)
        try:
            with self.assertRaises(kura.KuraConnectionError):
                kura.Client(proxy.url, retries=2, backoff=0.01).info()
            self.assertEqual(proxy.connections, 3)  # bounded: one try and two retries
        finally:
            proxy.close()

    def test_same_key_other_request_is_conflict(self) -> None:
        C.put_record("agent.thought", "k1", "agent:tester", idempotency_key="fixed-key-1")
        again = C.put_record("agent.thought", "k1", "agent:tester", idempotency_key="fixed-key-1")
        self.assertTrue(C.last_response.replayed)
        self.assertEqual(again["content"], "k1")
        with self.assertRaises(kura.Conflict) as cm:
            C.put_record("agent.thought", "k2", "agent:tester", idempotency_key="fixed-key-1")
        self.assertEqual(cm.exception.details.get("field"), "Idempotency-Key")


class AuthTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.k = Kurad(tokens={"reader-token": ("agent:reader", "reader", "*", "*"),
                              "writer-token": ("agent:writer", "writer", "*", "*")})

    @classmethod
    def tearDownClass(cls) -> None:
        cls.k.stop()

    def test_tokens(self) -> None:
        with self.assertRaises(kura.Unauthenticated) as cm:
            kura.Client(self.k.url, token="", retries=0).info()
        self.assertEqual((cm.exception.status, cm.exception.code), (401, "unauthenticated"))
        with self.assertRaises(kura.Unauthenticated):
            kura.Client(self.k.url, token="wrong", retries=0).info()
        with self.assertRaises(kura.PermissionDenied) as cm:
            kura.Client(self.k.url, token="reader-token", retries=0).put_record("agent.thought", "x", "agent:reader")
        self.assertEqual((cm.exception.status, cm.exception.code), (403, "permission_denied"))
        w = kura.Client(self.k.url, token="writer-token", retries=0)
        with self.assertRaises(kura.PermissionDenied):
            w.put_record("agent.thought", "x", "agent:someone-else")
        r = w.put_record("agent.thought", "x", "agent:writer")
        kura.verify.record(kura.Client(self.k.url, token="reader-token").get_record(r["id"]))


if __name__ == "__main__":
    unittest.main()
