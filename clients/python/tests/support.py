"""Test support: a real kurad per test module, and a TCP proxy that cuts
connections on purpose."""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
PKG_ROOT = HERE.parent  # clients/python
REPO = PKG_ROOT.parent.parent
VECTORS = REPO / "kurahash" / "testdata" / "hashes.json"

_built: dict[str, str] = {}
_build_lock = threading.Lock()


def go_binary(env: str, pkg: str, name: str) -> str:
    """The binary named by env, else one built from the repository."""
    if os.environ.get(env):
        return os.environ[env]
    with _build_lock:
        if name not in _built:
            d = tempfile.mkdtemp(prefix="kura-py-bin-")
            atexit.register(shutil.rmtree, d, True)
            out = Path(d) / name
            subprocess.run(["go", "build", "-o", str(out), pkg], cwd=REPO, check=True)
            _built[name] = str(out)
        return _built[name]


def kurad_bin() -> str:
    return go_binary("KURAD_BIN", "./cmd/kurad", "kurad")


def kura_bin() -> str:
    return go_binary("KURA_BIN", "./cmd/kura", "kura")


class Kurad:
    """kurad on 127.0.0.1 port 0 with a temporary data directory."""

    def __init__(self, tokens: dict[str, tuple[str, str, str, str]] | None = None) -> None:
        self.dir = tempfile.mkdtemp(prefix="kura-py-test-")
        args = [kurad_bin(), "--data-dir", self.dir, "--http-addr", "127.0.0.1:0",
                "--nats-addr", "127.0.0.1:0", "--log-level", "warn"]
        if tokens:
            path = os.path.join(self.dir, "tokens")
            with open(path, "w") as f:
                for tok, (ident, role, scopes, projects) in tokens.items():
                    f.write("%s %s %s %s %s\n" % (hashlib.sha256(tok.encode()).hexdigest(), ident, role, scopes, projects))
            args += ["--tokens-file", path]
        self.log = open(os.path.join(self.dir, "kurad.log.txt"), "w")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)
        self.url = self._wait_ready(tokens is not None)

    def _wait_ready(self, auth: bool) -> str:
        addr_file = os.path.join(self.dir, "kurad.addr")
        deadline = time.monotonic() + 20
        url = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("kurad exited with %s: %s" % (self.proc.returncode, self.logtext()))
            if url is None and os.path.exists(addr_file):
                try:
                    with open(addr_file) as f:
                        url = "http://" + json.load(f)["http"]
                except (ValueError, KeyError):
                    pass
            if url is not None:
                try:
                    with urllib.request.urlopen(url + "/readyz", timeout=2) as r:
                        if r.status == 200:
                            return url
                except OSError:
                    pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("kurad was not ready within 20 s: " + self.logtext())

    def logtext(self) -> str:
        try:
            with open(os.path.join(self.dir, "kurad.log.txt")) as f:
                return f.read()[-2000:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class CuttingProxy:
    """A TCP proxy to ``upstream`` ("host:port"). The first ``cuts``
    connections are cut: the request is forwarded whole, and the answer is
    dropped once ``after_bytes`` bytes of it have passed (0: as soon as
    kurad starts answering, so the write happened but the caller never
    hears of it). Later connections pass untouched."""

    def __init__(self, upstream: str, cuts: int = 1, after_bytes: int = 0) -> None:
        host, port = upstream.rsplit(":", 1)
        self.upstream = (host, int(port))
        self.cuts = cuts
        self.after_bytes = after_bytes
        self.connections = 0
        self.cut_done = 0
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = "http://127.0.0.1:%d" % self.sock.getsockname()[1]
        self._stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._stop:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            cut = self.connections <= self.cuts
            threading.Thread(target=self._serve, args=(c, cut), daemon=True).start()

    def _serve(self, c: socket.socket, cut: bool) -> None:
        u = socket.create_connection(self.upstream)

        def up() -> None:
            try:
                while True:
                    b = c.recv(65536)
                    if not b:
                        break
                    u.sendall(b)
            except OSError:
                pass

        threading.Thread(target=up, daemon=True).start()
        passed = 0
        try:
            while True:
                b = u.recv(65536)
                if not b:
                    break
                if cut:
                    room = self.after_bytes - passed
                    if room > 0:
                        c.sendall(b[:room])
                        passed += min(room, len(b))
                    if passed >= self.after_bytes:
                        self.cut_done += 1
                        break
                    continue
                c.sendall(b)
        except OSError:
            pass
        finally:
            for s in (c, u):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def close(self) -> None:
        self._stop = True
        self.sock.close()


def _have_signatures() -> bool:
    try:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey  # noqa: F401
    except ImportError:
        return False
    return True


#: Whether Ed25519 signatures can be checked here (the ``cryptography``
#: package). Tests of signatures skip without it; tests of hashes pass
#: ``check_signatures=SIGNATURES`` and run either way.
SIGNATURES = _have_signatures()

#: Why a signature test skipped.
NO_SIGNATURES = ("the Python package 'cryptography' is not installed, so Ed25519 signatures cannot be checked "
                 "(apt install python3-cryptography, or pip install cryptography); kura.verify raises "
                 "SignatureUnavailable then, which SignatureUnavailableTests checks")


def needs_signatures(f):
    """Skip a test of Ed25519 signatures when cryptography is missing."""
    import unittest
    return unittest.skipUnless(SIGNATURES, NO_SIGNATURES)(f)
