"""Following kurad's event feed with a resumable cursor.

``EventFollower`` yields event pointers (dicts with ``seq``, ``type``, ids)
in seq order, from ``GET /v1/events/stream`` (Server-Sent Events) or by
long-polling ``GET /v1/events?wait=``. Its ``cursor`` is the seq of the last
event it yielded: when a connection drops (kurad restarts, a proxy cuts it)
it reconnects with ``after=cursor``, backing off, so no event is yielded
twice and none is skipped. Save ``cursor`` to resume in another process.
"""

from __future__ import annotations

import http.client
import json
import random
import socket
import time
import urllib.error
import urllib.request
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from . import client as _client
from .errors import APIError, KuraConnectionError, Unauthenticated, PermissionDenied, NotFound, BadRequest

if TYPE_CHECKING:
    from .client import Client

__all__ = ["EventFollower", "parse_sse"]

_FRAME_STATUS = {"unauthenticated": 401, "permission_denied": 403, "unavailable": 503, "internal": 500}

# Errors that another try cannot fix: stop following and raise.
_FATAL = (BadRequest, Unauthenticated, PermissionDenied, NotFound)


def parse_sse(lines: Iterator[str]) -> Iterator[dict[str, str]]:
    """Parse Server-Sent Events text lines into frames ``{"id","event","data"}``.
    A frame is yielded only once its blank line arrived, so a frame cut off
    by a dropped connection is never yielded."""
    frame: dict[str, str] = {}
    data: list[str] = []
    for line in lines:
        line = line.rstrip("\r\n")
        if line == "":
            if data or frame:
                frame["data"] = "\n".join(data)
                yield frame
            frame, data = {}, []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            data.append(value)
        elif name in ("id", "event", "retry"):
            frame[name] = value


class EventFollower:
    """An iterator over events after ``after`` (default: only new events,
    from ``/v1/info``'s ``last_event_seq``).

    ``transport``: ``"sse"`` (default) or ``"poll"``; ``types``/``project``
    filter as the API does; ``max_reconnects`` bounds reconnections in a row
    without an event (None: forever); ``idle_timeout`` is how long a read
    may block (kurad sends a keepalive every 15 s) before reconnecting.
    ``close()`` ends the iteration from another thread too."""

    def __init__(self, client: "Client", after: int | None = None, *, transport: str = "sse",
                 types: Sequence[str] | str | None = None, project: str | None = None,
                 max_reconnects: int | None = None, idle_timeout: float = 45.0, poll_wait: float = 30.0) -> None:
        if transport not in ("sse", "poll"):
            raise ValueError("transport is 'sse' or 'poll', not %r" % transport)
        self.client = client
        self.cursor: int | None = after
        self.transport = transport
        self.types = types
        self.project = project
        self.max_reconnects = max_reconnects
        self.idle_timeout = idle_timeout
        self.poll_wait = poll_wait
        self.reconnects = 0  # connections opened after the first
        self._closed = False
        self._resp: Any = None
        self._gen: Iterator[dict[str, Any]] | None = None

    def __iter__(self) -> "EventFollower":
        return self

    def __next__(self) -> dict[str, Any]:
        if self._gen is None:
            self._gen = self._run()
        return next(self._gen)

    def close(self) -> None:
        self._closed = True
        self.drop()

    def drop(self) -> None:
        """Close the current connection (the follower reconnects and resumes)."""
        r = self._resp
        if r is not None:
            try:
                r.fp.raw._sock.shutdown(socket.SHUT_RDWR)  # wake a blocked read
            except Exception:
                pass
            try:
                r.close()
            except Exception:
                pass

    def __enter__(self) -> "EventFollower":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _run(self) -> Iterator[dict[str, Any]]:
        if self.cursor is None:
            self.cursor = int(self.client.info().get("last_event_seq") or 0)
        failures = 0
        first = True
        while not self._closed:
            if not first:
                self.reconnects += 1
            first = False
            try:
                src = self._sse() if self.transport == "sse" else self._poll()
                for ev in src:
                    seq = ev.get("seq")
                    if isinstance(seq, int):
                        if seq <= self.cursor:
                            continue  # already yielded before a reconnect
                        self.cursor = seq
                    failures = 0
                    yield ev
                    if self._closed:
                        return
            except _FATAL:
                raise
            except (APIError, KuraConnectionError, OSError, http.client.HTTPException, ValueError):
                if self._closed:
                    return
            failures += 1
            if self.max_reconnects is not None and failures > self.max_reconnects:
                raise KuraConnectionError("event stream: %d reconnections in a row without an event" % (failures - 1))
            if not self._closed:
                delay = min(self.client.max_backoff * 5, self.client.backoff * 2 ** min(failures - 1, 6))
                time.sleep(delay / 2 + random.uniform(0, delay / 2))

    def _sse(self) -> Iterator[dict[str, Any]]:
        c = self.client
        url = c.url("/v1/events/stream", {"after": self.cursor, "type": self.types, "project": self.project})
        req = urllib.request.Request(url, headers=c.headers({"Accept": "text/event-stream"}))
        try:
            resp = _client.urlopen(req, timeout=self.idle_timeout)
        except urllib.error.HTTPError as e:
            raise c._api_error(e.code, e.headers, e.read()) from None
        except urllib.error.URLError as e:
            raise KuraConnectionError("event stream: %s" % e.reason) from e
        except (socket.timeout, TimeoutError) as e:
            raise KuraConnectionError("event stream: no answer within %gs" % self.idle_timeout) from e
        self._resp = resp
        try:
            lines = (raw.decode("utf-8") for raw in iter(resp.readline, b""))
            for frame in parse_sse(lines):
                if frame.get("event") == "error":
                    body = json.loads(frame.get("data") or "{}").get("error", {})
                    status = _FRAME_STATUS.get(body.get("code", ""), 500)  # an error frame carries no status
                    raise c._api_error(status, None, json.dumps({"error": body}).encode())
                if not frame.get("data"):
                    continue
                yield json.loads(frame["data"])
        finally:
            self._resp = None
            resp.close()

    def _poll(self) -> Iterator[dict[str, Any]]:
        while not self._closed:
            page = self.client.events(self.cursor or 0, types=self.types, project=self.project, wait=self.poll_wait)
            for ev in page.get("events") or []:
                yield ev
            nxt = page.get("next_after")
            if isinstance(nxt, int) and nxt > (self.cursor or 0):
                self.cursor = nxt  # filtered-out seqs are skipped for good
