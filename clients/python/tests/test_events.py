"""Events: listing, long poll, SSE following, and resuming after a drop."""

from __future__ import annotations

import threading
import time
import unittest
import urllib.parse

import kura
from kura.events import parse_sse

from .support import CuttingProxy, Kurad

K: Kurad
C: kura.Client


def setUpModule() -> None:
    global K, C
    K = Kurad()
    C = kura.Client(K.url, retries=0)


def tearDownModule() -> None:
    K.stop()


def write(n: int, tag: str) -> list[str]:
    return [C.put_record("agent.thought", {"tag": tag, "i": i}, "agent:events")["id"] for i in range(n)]


def take(it, n: int, timeout: float = 15) -> list[dict]:
    """n events from it, failing instead of hanging when they do not come."""
    out: list[dict] = []
    err: list[BaseException] = []

    def run() -> None:
        try:
            for ev in it:
                out.append(ev)
                if len(out) >= n:
                    return
        except BaseException as e:  # surfaced below
            err.append(e)

    th = threading.Thread(target=run, daemon=True)
    th.start()
    th.join(timeout)
    if err:
        raise err[0]
    if th.is_alive():
        it.close()
        raise AssertionError("only %d of %d events within %gs" % (len(out), n, timeout))
    return out


class EventTests(unittest.TestCase):
    def test_list_and_pages(self) -> None:
        start = C.info()["last_event_seq"]
        ids = write(3, "list")
        page = C.events(start, types="record.written")
        self.assertEqual([e["record_id"] for e in page["events"]], ids)
        self.assertGreaterEqual(page["last_seq"], page["next_after"])
        page = C.events(start, limit=2)
        self.assertEqual(len(page["events"]), 2)
        self.assertEqual(page["next_after"], page["events"][-1]["seq"])
        with self.assertRaises(kura.BadRequest) as cm:
            C.events(0, types="turn.closed")
        self.assertEqual(cm.exception.details["field"], "type")

    def test_long_poll(self) -> None:
        start = C.info()["last_event_seq"]
        t = threading.Timer(0.3, lambda: write(1, "poll"))
        t.start()
        t0 = time.monotonic()
        page = C.events(start, wait=10)
        t.join()
        self.assertEqual(page["events"][0]["type"], "record.written")
        self.assertLess(time.monotonic() - t0, 8)
        empty = C.events(C.info()["last_event_seq"], wait=0.2)
        self.assertEqual(empty["events"], [])

    def test_sse_follow(self) -> None:
        start = C.info()["last_event_seq"]
        ids = write(2, "sse-old")
        with C.follow(after=start, types="record.written") as f:
            got = take(f, 2)
            self.assertEqual([e["record_id"] for e in got], ids)
            later = write(2, "sse-new")
            got = take(f, 2)
            self.assertEqual([e["record_id"] for e in got], later)
            self.assertEqual(f.cursor, got[-1]["seq"])

    def test_follow_new_only(self) -> None:
        write(1, "before")
        f = C.follow()
        threading.Timer(0.3, lambda: write(1, "after")).start()
        got = take(f, 1)
        f.close()
        self.assertEqual(C.get_record(got[0]["record_id"])["content"]["tag"], "after")

    def test_sse_resume_after_drop(self) -> None:
        start = C.info()["last_event_seq"]
        ids = write(12, "resume")
        # the first two connections are cut in the middle of the stream:
        # part of the log, then a frame cut in half
        proxy = CuttingProxy(urllib.parse.urlsplit(K.url).netloc, cuts=2, after_bytes=900)
        try:
            c = kura.Client(proxy.url, retries=0, backoff=0.01)
            f = c.follow(after=start, types="record.written", max_reconnects=5)
            got = take(f, 12)
            f.close()
        finally:
            proxy.close()
        self.assertEqual(proxy.cut_done, 2)
        self.assertEqual(f.reconnects, 2)
        self.assertEqual([e["record_id"] for e in got], ids)  # no gap, no duplicate
        seqs = [e["seq"] for e in got]
        self.assertEqual(seqs, sorted(set(seqs)))

    def test_poll_follow_resumes(self) -> None:
        start = C.info()["last_event_seq"]
        ids = write(3, "poll-follow")
        proxy = CuttingProxy(urllib.parse.urlsplit(K.url).netloc, cuts=1, after_bytes=0)
        try:
            c = kura.Client(proxy.url, retries=0, backoff=0.01)
            f = c.follow(after=start, transport="poll", types="record.written", poll_wait=1)
            got = take(f, 3)
            f.close()
        finally:
            proxy.close()
        self.assertEqual([e["record_id"] for e in got], ids)
        self.assertEqual(f.reconnects, 1)

    def test_follow_bad_filter_raises(self) -> None:
        with self.assertRaises(kura.BadRequest):
            take(C.follow(after=0, types="nope"), 1)

    def test_follow_gives_up(self) -> None:
        proxy = CuttingProxy(urllib.parse.urlsplit(K.url).netloc)
        url = proxy.url
        proxy.close()
        c = kura.Client(url, retries=0, backoff=0.001, max_backoff=0.01)
        with self.assertRaises(kura.KuraConnectionError):
            take(c.follow(after=0, max_reconnects=2), 1)

    def test_parse_sse(self) -> None:
        text = [": comment\n", "id: 1\n", "event: a\n", "data: {\"seq\":1}\n", "\n", "data: x\n", "data: y\n", "\n",
                "id: 3\n", "data: cut"]
        self.assertEqual(list(parse_sse(iter(text))),
                         [{"id": "1", "event": "a", "data": "{\"seq\":1}"}, {"data": "x\ny"}])


if __name__ == "__main__":
    unittest.main()
