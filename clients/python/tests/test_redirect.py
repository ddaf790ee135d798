"""The bearer token never follows a redirect to another origin.

Two local servers: one that answers every request with a redirect, and one
that records the headers it is sent. A redirect to another origin (another
port of 127.0.0.1, another host name, another scheme) arrives without the
token; one to the same origin keeps it. The last case redirects to a real
kurad holding tokens: followed with the token, the call would succeed."""

from __future__ import annotations

import http.server
import json
import threading
import unittest
from typing import Any

import kura

from .support import Kurad

TOKEN = "redirect-test-token-0123456789"


class _Server:
    """An HTTP server on 127.0.0.1 port 0, answered by handle(handler)."""

    def __init__(self, handle: Any) -> None:
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            def _any(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                if n:
                    self.rfile.read(n)
                handle(outer, self)

            do_GET = do_POST = do_PUT = do_DELETE = _any

            def log_message(self, *args: Any) -> None:
                pass

        self.seen: list[tuple[str, str, dict[str, str]]] = []
        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.srv.server_address[1]
        self.url = "http://127.0.0.1:%d" % self.port
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.srv.shutdown()
        self.srv.server_close()


def _record(srv: _Server, h: http.server.BaseHTTPRequestHandler) -> None:
    srv.seen.append((h.command, h.path, {k.lower(): v for k, v in h.headers.items()}))
    if h.path.startswith("/v1/events/stream"):
        body = b'id: 1\ndata: {"seq":1,"type":"record.written"}\n\n'
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
    else:
        body = json.dumps({"ok": True}).encode()
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(body)))
    h.end_headers()
    h.wfile.write(body)


class RedirectTests(unittest.TestCase):
    target: str  # where the redirector sends every request, set per test
    code: int

    @classmethod
    def setUpClass(cls) -> None:
        cls.recorder = _Server(_record)

        def redirect(srv: _Server, h: http.server.BaseHTTPRequestHandler) -> None:
            srv.seen.append((h.command, h.path, {k.lower(): v for k, v in h.headers.items()}))
            if h.path.startswith("/home/"):  # the same origin's new place
                _record(srv, h)
                return
            h.send_response(cls.code)
            h.send_header("Location", cls.target + h.path)
            h.send_header("Content-Length", "0")
            h.end_headers()

        cls.redirector = _Server(redirect)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.recorder.stop()
        cls.redirector.stop()

    def setUp(self) -> None:
        self.recorder.seen.clear()
        self.redirector.seen.clear()
        type(self).code = 302

    def client(self) -> kura.Client:
        return kura.Client(self.redirector.url, token=TOKEN, retries=0)

    def arrived(self) -> dict[str, str]:
        self.assertEqual(len(self.recorder.seen), 1, self.recorder.seen)
        return self.recorder.seen[0][2]

    def test_another_port_gets_no_token(self) -> None:
        for code in (301, 302, 303, 307, 308):
            with self.subTest(code=code):
                self.recorder.seen.clear()
                type(self).code, type(self).target = code, self.recorder.url
                self.assertEqual(self.client().info(), {"ok": True})
                self.assertEqual(self.redirector.seen[-1][2].get("authorization"), "Bearer " + TOKEN)
                self.assertNotIn("authorization", self.arrived())

    def test_another_host_or_scheme_gets_no_token(self) -> None:
        # localhost is another host than 127.0.0.1 to a browser and to this
        # rule, though it names the same machine.
        type(self).target = "http://localhost:%d" % self.recorder.port
        self.client().info()
        self.assertNotIn("authorization", self.arrived())

    def test_event_stream_gets_no_token(self) -> None:
        type(self).target = self.recorder.url
        f = kura.EventFollower(self.client(), after=0, max_reconnects=0)
        try:
            ev = next(iter(f))
        finally:
            f.close()
        self.assertEqual(ev["seq"], 1)
        self.assertNotIn("authorization", self.arrived())

    def test_write_redirected_by_303_gets_no_token(self) -> None:
        type(self).code, type(self).target = 303, self.recorder.url
        self.client().put_record("agent.thought", "x", "agent:a")
        method, _, headers = self.recorder.seen[0]
        self.assertEqual(method, "GET")
        self.assertNotIn("authorization", headers)

    def test_same_origin_keeps_token(self) -> None:
        type(self).target = self.redirector.url + "/home"
        self.client().info()
        self.assertEqual(self.redirector.seen[-1][1], "/home/v1/info")
        self.assertEqual(self.redirector.seen[-1][2].get("authorization"), "Bearer " + TOKEN)

    def test_real_kurad_elsewhere_gets_no_token(self) -> None:
        k = Kurad(tokens={TOKEN: ("agent:r", "reader", "*", "*")})
        try:
            self.assertIn("version", kura.Client(k.url, token=TOKEN, retries=0).info())
            type(self).target = k.url
            with self.assertRaises(kura.Unauthenticated):
                self.client().info()
        finally:
            k.stop()


if __name__ == "__main__":
    unittest.main()
