"""A client for kurad's HTTP/JSON API (docs/api.md), standard library only.

Every method returns the decoded JSON kurad answered (dicts and lists), or
raises a :class:`kura.APIError` subclass carrying the API's error ``code``.

Retries: reads (GET/HEAD) and every write carrying an ``Idempotency-Key``
are retried on connection errors, timeouts, 429, 502, 503 and 504, with
exponential backoff and jitter (0.2 s doubling to at most 2 s; a
``Retry-After`` header is honoured up to 30 s). Each write gets a fresh
random key per call unless the caller passes ``idempotency_key=``; every
retry of that call sends the same key, so kurad writes it once and replays
its first answer. A write sent without a key (``auto_idempotency=False``
and no key given) is never retried.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from typing import Any, Iterator, Mapping, Sequence

from . import verify as _verify
from .errors import APIError, KuraConnectionError, KuraTimeoutError, api_error

__all__ = ["Client", "DEFAULT_URL"]

DEFAULT_URL = "http://127.0.0.1:7700"
_RETRY_STATUS = frozenset({429, 502, 503, 504})
_Q = Mapping[str, Any]


def _quote(s: str) -> str:
    return urllib.parse.quote(s, safe=":")


_DEFAULT_PORT = {"http": 80, "https": 443}


def _origin(url: str) -> tuple[str, str, int | None]:
    """scheme, host and port of a URL, the port spelled out."""
    u = urllib.parse.urlsplit(url)
    scheme = u.scheme.lower()
    try:
        port = u.port
    except ValueError:
        port = None
    return scheme, (u.hostname or "").lower(), port if port is not None else _DEFAULT_PORT.get(scheme)


class _TokenStaysHome(urllib.request.HTTPRedirectHandler):
    """Follows redirects as urllib does, but never carries the bearer token
    to another origin (scheme, host or port): urllib copies every header to
    the redirect target, so a kurad behind a proxy that redirects, or
    anyone able to answer one request with a redirect, would receive it."""

    def redirect_request(self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any,
                         newurl: str) -> urllib.request.Request | None:
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and _origin(newurl) != _origin(req.full_url):
            for name in [k for k in new.headers if k.lower() == "authorization"]:
                del new.headers[name]
            for name in [k for k in new.unredirected_hdrs if k.lower() == "authorization"]:
                del new.unredirected_hdrs[name]
        return new


_opener = urllib.request.build_opener(_TokenStaysHome)


def urlopen(req: urllib.request.Request, timeout: float) -> Any:
    """urllib's urlopen with the token kept to kurad's own origin."""
    return _opener.open(req, timeout=timeout)


class Response:
    """One answer: status, headers and decoded body."""

    def __init__(self, status: int, headers: http.client.HTTPMessage, body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    @property
    def replayed(self) -> bool:
        return self.headers.get("Idempotent-Replayed", "").lower() == "true"

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


class Client:
    """kurad over HTTP. ``base_url`` and ``token`` default to ``KURA_URL`` and
    ``KURA_TOKEN`` like the ``kura`` CLI; ``retries`` is how many times a
    retryable call is tried again after its first try."""

    def __init__(self, base_url: str | None = None, token: str | None = None, timeout: float = 30.0,
                 retries: int = 3, *, auto_idempotency: bool = True, backoff: float = 0.2,
                 max_backoff: float = 2.0, user_agent: str = "kura-python/0.1") -> None:
        self.base_url = (base_url or os.environ.get("KURA_URL") or DEFAULT_URL).rstrip("/")
        self.token = token if token is not None else (os.environ.get("KURA_TOKEN") or None)
        self.timeout = timeout
        self.retries = max(0, retries)
        self.auto_idempotency = auto_idempotency
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.user_agent = user_agent
        self.last_response: Response | None = None

    # ------------------------------------------------------------ transport

    def url(self, path: str, query: _Q | None = None) -> str:
        u = self.base_url + path
        if query:
            pairs = []
            for k, v in query.items():
                if v is None:
                    continue
                if isinstance(v, bool):
                    v = "true" if v else "false"
                if isinstance(v, (list, tuple)):
                    v = ",".join(str(x) for x in v)
                pairs.append((k, str(v)))
            if pairs:
                u += "?" + urllib.parse.urlencode(pairs)
        return u

    def headers(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        h = {"User-Agent": self.user_agent, "Accept": "application/json"}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        if extra:
            h.update(extra)
        return h

    def _sleep_before_retry(self, attempt: int, retry_after: float | None) -> None:
        delay = min(self.max_backoff, self.backoff * (2 ** attempt))
        delay = delay / 2 + random.uniform(0, delay / 2)
        if retry_after is not None:
            delay = max(delay, min(retry_after, 30.0))
        time.sleep(delay)

    def request(self, method: str, path: str, *, query: _Q | None = None, body: Any = None,
                idempotency_key: str | None = None, timeout: float | None = None,
                accept: str = "application/json") -> Response:
        """Send one logical call, retrying it when that is safe. Writes
        (anything but GET/HEAD) get an Idempotency-Key unless
        ``auto_idempotency`` is off and none is given. Returns the 2xx
        Response; raises APIError, KuraConnectionError or KuraTimeoutError."""
        method = method.upper()
        safe = method in ("GET", "HEAD")
        if not safe and idempotency_key is None and self.auto_idempotency:
            idempotency_key = str(uuid.uuid4())
        extra = {"Accept": accept}
        data = None
        if body is not None or not safe:
            # Every write says JSON, a bodiless one too: kurad refuses any
            # other type, which a web page of another site could send it.
            extra["Content-Type"] = "application/json"
        if body is not None:
            data = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        if idempotency_key is not None:
            extra["Idempotency-Key"] = idempotency_key
        retryable = safe or idempotency_key is not None
        url = self.url(path, query)
        attempt = 0
        while True:
            req = urllib.request.Request(url, data=data, method=method, headers=self.headers(extra))
            retry_after: float | None = None
            try:
                resp = self._send(req, timeout if timeout is not None else self.timeout)
            except APIError as e:
                if not (retryable and e.status in _RETRY_STATUS and attempt < self.retries):
                    raise
                retry_after = e.retry_after
            except KuraConnectionError:
                if not (retryable and attempt < self.retries):
                    raise
            else:
                self.last_response = resp
                return resp
            self._sleep_before_retry(attempt, retry_after)
            attempt += 1

    def _send(self, req: urllib.request.Request, timeout: float) -> Response:
        what = "%s %s" % (req.get_method(), req.full_url)
        try:
            with urlopen(req, timeout=timeout) as r:
                return Response(r.status, r.headers, r.read())
        except urllib.error.HTTPError as e:
            try:
                raw = e.read()
            except (OSError, http.client.HTTPException):
                raw = b""
            raise self._api_error(e.code, e.headers, raw) from None
        except (socket.timeout, TimeoutError) as e:
            raise KuraTimeoutError("%s: no answer within %gs" % (what, timeout)) from e
        except urllib.error.URLError as e:
            if isinstance(e.reason, (socket.timeout, TimeoutError)):
                raise KuraTimeoutError("%s: no answer within %gs" % (what, timeout)) from e
            raise KuraConnectionError("%s: %s" % (what, e.reason)) from e
        except (OSError, http.client.HTTPException) as e:
            raise KuraConnectionError("%s: %s" % (what, e or type(e).__name__)) from e

    @staticmethod
    def _api_error(status: int, headers: Any, raw: bytes) -> APIError:
        code, message, details = "unknown", raw.decode("utf-8", "replace")[:500] or "HTTP %d" % status, None
        try:
            err = json.loads(raw)["error"]
            code, message, details = err.get("code", code), err.get("message", message), err.get("details")
        except (ValueError, KeyError, TypeError, AttributeError):
            pass
        retry_after = None
        ra = headers.get("Retry-After") if headers is not None else None
        if ra:
            try:
                retry_after = float(ra)
            except ValueError:
                pass
        rid = headers.get("X-Request-Id") if headers is not None else None
        return api_error(status, code, message, details, rid, retry_after)

    def _get(self, path: str, query: _Q | None = None) -> Any:
        return self.request("GET", path, query=query).json()

    def _post(self, path: str, body: Any, key: str | None = None, method: str = "POST", query: _Q | None = None) -> Any:
        return self.request(method, path, body=body, idempotency_key=key, query=query).json()

    # ------------------------------------------------------------ operations

    def info(self) -> dict[str, Any]:
        return self._get("/v1/info")

    def ready(self) -> bool:
        try:
            self.request("GET", "/readyz")
            return True
        except (APIError, KuraConnectionError):
            return False

    # ------------------------------------------------------------ records

    def put_record(self, type: str, content: Any, author_id: str, metadata: Mapping[str, str] | None = None,
                   *, idempotency_key: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"type": type, "content": content, "author_id": author_id}
        if metadata is not None:
            body["metadata"] = dict(metadata)
        return self._post("/v1/records", body, idempotency_key)

    def put_records(self, records: Sequence[Mapping[str, Any]], *, idempotency_key: str | None = None) -> list[dict[str, Any]]:
        return self._post("/v1/records/batch", {"records": list(records)}, idempotency_key)["records"]

    def get_record(self, record_id: str) -> dict[str, Any]:
        return self._get("/v1/records/" + _quote(record_id))

    def record_by_hash(self, hash: str) -> dict[str, Any]:
        return self._get("/v1/records/by-hash/" + _quote(hash))

    def list_records(self, **query: Any) -> dict[str, Any]:
        """``type``, ``author_id``, ``since``, ``until``, ``limit``, ``cursor``."""
        return self._get("/v1/records", query)

    def redact_record(self, record_id: str, reason: str, *, idempotency_key: str | None = None) -> dict[str, Any]:
        return self._post("/v1/records/%s/redact" % _quote(record_id), {"reason": reason}, idempotency_key)

    # ------------------------------------------------------------ ledgers

    def create_ledger(self, label: str, record_ids: Sequence[str], parent_ids: Sequence[str] = (),
                      *, idempotency_key: str | None = None) -> dict[str, Any]:
        return self._post("/v1/ledgers", {"label": label, "record_ids": list(record_ids), "parent_ids": list(parent_ids)},
                          idempotency_key)

    def get_ledger(self, ledger_id: str) -> dict[str, Any]:
        return self._get("/v1/ledgers/" + _quote(ledger_id))

    def ledger_records(self, ledger_id: str, *, limit: int | None = None, cursor: str | None = None) -> dict[str, Any]:
        return self._get("/v1/ledgers/%s/records" % _quote(ledger_id), {"limit": limit, "cursor": cursor})

    def all_ledger_records(self, ledger_id: str) -> list[dict[str, Any]]:
        """Every record of a ledger in order, following next_cursor."""
        out: list[dict[str, Any]] = []
        cursor = None
        while True:
            page = self.ledger_records(ledger_id, limit=1000, cursor=cursor)
            out.extend(page.get("records") or [])
            cursor = page.get("next_cursor")
            if not cursor:
                return out

    def ledger_proof(self, ledger_id: str, record_id: str) -> dict[str, Any]:
        return self._get("/v1/ledgers/%s/proof/%s" % (_quote(ledger_id), _quote(record_id)))

    def ledger_diff(self, a: str, b: str) -> dict[str, Any]:
        return self._get("/v1/ledgers/%s/diff/%s" % (_quote(a), _quote(b)))

    def verify_ledger_on_server(self, ledger_id: str) -> dict[str, Any]:
        """kurad's own check (``GET /v1/ledgers/{id}/verify``); see verify_ledger for one that trusts nothing."""
        return self._get("/v1/ledgers/%s/verify" % _quote(ledger_id))

    def verify_ledger(self, ledger_id: str, public_key: str, *, check_signatures: bool = True) -> _verify.LedgerReport:
        """Fetch a ledger, its records and its parents' hashes, and check
        them here with kura.verify.ledger against ``public_key``."""
        lg = self.get_ledger(ledger_id)
        parents = [self.get_ledger(p).get("hash") for p in lg.get("parent_ids") or []]
        return _verify.ledger(lg, self.all_ledger_records(ledger_id), public_key, parent_hashes=parents,
                              check_signatures=check_signatures)

    # ------------------------------------------------------------ sessions

    def create_session(self, project: str, name: str, scope: str | None = None, from_ledger_id: str | None = None,
                       *, idempotency_key: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"project": project, "name": name}
        if scope is not None:
            body["scope"] = scope
        if from_ledger_id is not None:
            body["from_ledger_id"] = from_ledger_id
        return self._post("/v1/sessions", body, idempotency_key)

    def get_session(self, session_id: str) -> dict[str, Any]:
        return self._get("/v1/sessions/" + _quote(session_id))

    def list_sessions(self, **query: Any) -> dict[str, Any]:
        """``project``, ``limit``, ``cursor``."""
        return self._get("/v1/sessions", query)

    def find_session(self, project: str, name: str) -> dict[str, Any] | None:
        cursor = None
        while True:
            page = self.list_sessions(project=project, limit=1000, cursor=cursor)
            for s in page.get("sessions") or []:
                if s.get("name") == name:
                    return s
            cursor = page.get("next_cursor")
            if not cursor:
                return None

    def session_log(self, session_id: str, limit: int | None = None) -> dict[str, Any]:
        return self._get("/v1/sessions/%s/log" % _quote(session_id), {"limit": limit})

    def reflog(self, session_id: str) -> list[dict[str, Any]]:
        return self._get("/v1/sessions/%s/reflog" % _quote(session_id)).get("reflog") or []

    def move_head(self, session_id: str, ledger_id: str, expected_head: str | None,
                  *, idempotency_key: str | None = None) -> dict[str, Any]:
        return self._post("/v1/sessions/%s/head" % _quote(session_id),
                          {"ledger_id": ledger_id, "expected_head": expected_head}, idempotency_key)

    def verify_session_on_server(self, session_id: str, expect_head_hash: str | None = None) -> dict[str, Any]:
        return self._get("/v1/sessions/%s/verify" % _quote(session_id), {"expect_head_hash": expect_head_hash})

    def export_session(self, session_id: str, *, with_log: bool = True) -> list[dict[str, Any]]:
        """The objects ``kura export <session> --format=jsonl`` writes: the
        session with its signed reflog (and the log section), then each
        ledger reachable from the head, parents first, after its records."""
        s = self.get_session(session_id)
        info = self.info()
        session = {"kind": "session", **s, "public_key": info.get("public_key"), "reflog": self.reflog(session_id)}
        order: list[dict[str, Any]] = []
        seen: set[str] = set()
        stack = [s["head_ledger_id"]] if s.get("head_ledger_id") else []
        for e in session["reflog"]:
            stack.append(e["to"])
        while stack:  # iterative post-order: parents before children
            lid = stack.pop()
            if lid in seen:
                continue
            lg = self.get_ledger(lid)
            pending = [p for p in lg.get("parent_ids") or [] if p not in seen]
            if pending:
                stack.append(lid)
                stack.extend(pending)
                continue
            seen.add(lid)
            order.append(lg)
        lines: list[dict[str, Any]] = [session]
        written: set[str] = set()
        for lg in order:
            for r in self.all_ledger_records(lg["id"]):
                if r["id"] not in written:
                    written.add(r["id"])
                    lines.append({"kind": "record", **r})
            lines.append({"kind": "ledger", **lg})
        if with_log and info.get("log_origin") and (info.get("log") or {}).get("state") != "off":
            text = self.log_checkpoint()
            cp = _verify.checkpoint(text, info["log_vkey"], check_signatures=False)
            incs = []
            for lg in order:
                try:
                    incs.append({"ledger_id": lg["id"], **self.log_inclusion(ledger_id=lg["id"], size=cp.size)})
                except APIError as e:
                    if e.code != "not_found":
                        raise
            session["log"] = {"checkpoint": text, "inclusions": incs}
        return lines

    def verify_session(self, session_id: str, public_key: str | None = None, *,
                       expect_head_hash: str | None = None, witness_keys: Sequence[str] = (),
                       check_signatures: bool = True) -> _verify.ExportReport:
        """Fetch a whole session (export_session) and verify it offline with
        kura.verify.session_export. Without ``public_key`` the key /v1/info
        names is used: that proves consistency with kurad's key, not that it
        is the key you meant to trust; pass a key you hold for that."""
        key = public_key or self.info()["public_key"]
        lines = [json.dumps(o) for o in self.export_session(session_id)]
        return _verify.session_export(lines, key, expect_head_hash=expect_head_hash, witness_keys=witness_keys,
                                      check_signatures=check_signatures)

    # ------------------------------------------------------------ turns

    def open_turn(self, session_id: str, instruction: Mapping[str, Any], *, context: Sequence[Mapping[str, Any]] | None = None,
                  memory: Mapping[str, Any] | None = None, dispatch: str | None = None,
                  deadline_seconds: int | None = None, idempotency_key: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"instruction": dict(instruction)}
        for k, v in (("context", context), ("memory", memory), ("dispatch", dispatch), ("deadline_seconds", deadline_seconds)):
            if v is not None:
                body[k] = v if not isinstance(v, tuple) else list(v)
        return self._post("/v1/sessions/%s/turns" % _quote(session_id), body, idempotency_key)

    def claim_turn(self, turn_id: str, worker: str | None = None, lease_seconds: int | None = None,
                   *, idempotency_key: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {}
        if worker is not None:
            body["worker"] = worker
        if lease_seconds is not None:
            body["lease_seconds"] = lease_seconds
        return self._post("/v1/turns/%s/claim" % _quote(turn_id), body, idempotency_key)

    def renew_turn(self, turn_id: str, epoch: int, lease_seconds: int | None = None,
                   *, idempotency_key: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"epoch": epoch}
        if lease_seconds is not None:
            body["lease_seconds"] = lease_seconds
        return self._post("/v1/turns/%s/renew" % _quote(turn_id), body, idempotency_key)

    def append(self, turn_id: str, records: Sequence[Mapping[str, Any]], epoch: int | None = None,
               *, idempotency_key: str | None = None) -> dict[str, Any]:
        """Append record inputs (or ``{"record_id"}``) to a turn's output."""
        body: dict[str, Any] = {"records": [dict(r) for r in records]}
        if epoch is not None:
            body["epoch"] = epoch
        return self._post("/v1/turns/%s/records" % _quote(turn_id), body, idempotency_key)

    def close_turn(self, turn_id: str, status: str = "complete", epoch: int | None = None,
                   *, idempotency_key: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"status": status}
        if epoch is not None:
            body["epoch"] = epoch
        return self._post("/v1/turns/%s/close" % _quote(turn_id), body, idempotency_key)

    def get_turn(self, turn_id: str) -> dict[str, Any]:
        return self._get("/v1/turns/" + _quote(turn_id))

    def list_turns(self, **query: Any) -> dict[str, Any]:
        """``session_id``, ``state``, ``limit``, ``cursor``."""
        return self._get("/v1/turns", query)

    # ------------------------------------------------------------ memory

    def _scope(self, scope: str) -> str:
        return "/v1/scopes/%s" % _quote(scope)

    def put_node(self, scope: str, node: Mapping[str, Any], *, idempotency_key: str | None = None) -> dict[str, Any]:
        """Write a memory node (``kind``, ``summary``, ``id``?, ``title``?, ...)."""
        return self._post(self._scope(scope) + "/memory/nodes", dict(node), idempotency_key)

    def get_node(self, scope: str, ref: str, as_of: str | None = None) -> dict[str, Any]:
        return self._get(self._scope(scope) + "/memory/nodes/" + _quote(ref), {"as_of": as_of})

    def list_nodes(self, scope: str, **query: Any) -> dict[str, Any]:
        return self._get(self._scope(scope) + "/memory/nodes", query)

    def node_history(self, scope: str, ref: str) -> dict[str, Any]:
        return self._get(self._scope(scope) + "/memory/nodes/%s/history" % _quote(ref))

    def transition(self, scope: str, ref: str, lifecycle: str, reason: str, authority: str | None = None,
                   *, idempotency_key: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"lifecycle": lifecycle, "reason": reason}
        if authority is not None:
            body["authority"] = authority
        return self._post(self._scope(scope) + "/memory/nodes/%s/transition" % _quote(ref), body, idempotency_key)

    def revise(self, scope: str, ref: str, node: Mapping[str, Any], *, idempotency_key: str | None = None) -> dict[str, Any]:
        return self._post(self._scope(scope) + "/memory/nodes/%s/revise" % _quote(ref), dict(node), idempotency_key)

    def put_relation(self, scope: str, kind: str, from_ref: str, to_ref: str, confidence: float | None = None,
                     *, reasons: Sequence[str] | None = None, id: str | None = None,
                     idempotency_key: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"kind": kind, "from": from_ref, "to": to_ref}
        for k, v in (("confidence", confidence), ("reasons", reasons), ("id", id)):
            if v is not None:
                body[k] = list(v) if k == "reasons" else v
        return self._post(self._scope(scope) + "/memory/relations", body, idempotency_key)

    def relations(self, scope: str, ref: str | None = None, kind: str | None = None) -> dict[str, Any]:
        return self._get(self._scope(scope) + "/memory/relations", {"ref": ref, "kind": kind})

    def feedback(self, scope: str, ref: str, outcome: str, author_id: str, note: str | None = None,
                 *, idempotency_key: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"ref": ref, "outcome": outcome, "author_id": author_id}
        if note is not None:
            body["note"] = note
        return self._post(self._scope(scope) + "/memory/feedback", body, idempotency_key)

    def search_memory(self, scope: str, q: str, **query: Any) -> dict[str, Any]:
        """``kind``, ``lifecycle``, ``authority``, ``target_file``, ``owner``, ``min_confidence``, ``limit``, ``mode``."""
        return self._get(self._scope(scope) + "/memory/search", {"q": q, **query})

    def provenance(self, scope: str, ref: str, direction: str = "backward", depth: int = 3) -> dict[str, Any]:
        return self._get(self._scope(scope) + "/provenance/" + _quote(ref), {"direction": direction, "depth": depth})

    def evidence(self, scope: str, ref: str) -> dict[str, Any]:
        return self._get(self._scope(scope) + "/provenance/%s/evidence" % _quote(ref))

    def raw_sources(self, scope: str, ref: str) -> dict[str, Any]:
        return self._get(self._scope(scope) + "/provenance/%s/raw-sources" % _quote(ref))

    def derived(self, scope: str, ref: str) -> dict[str, Any]:
        return self._get(self._scope(scope) + "/provenance/%s/derived" % _quote(ref))

    # ------------------------------------------------------------ context

    def preview_context(self, scope: str, **body: Any) -> dict[str, Any]:
        """``query``, ``target_files``, ``kinds``, ``max_per_bucket``, ``budget_bytes``, ``max_trace``, ``as_of``, ``redact``; writes nothing."""
        return self.request("POST", self._scope(scope) + "/context/preview", body=body).json()

    def compile_context(self, scope: str, *, idempotency_key: str | None = None, **body: Any) -> dict[str, Any]:
        return self._post(self._scope(scope) + "/context/compile", body, idempotency_key)

    def get_bundle(self, scope: str, bundle_id: str) -> dict[str, Any]:
        return self._get(self._scope(scope) + "/context/bundles/" + _quote(bundle_id))

    # ------------------------------------------------------------ knowledge bases

    def _kb(self, kb: str) -> str:
        return "/v1/kb/" + _quote(kb)

    def kb_put(self, kb: str, identifier: str, keys: Sequence[str], value: str, scope: str | None = None,
               *, idempotency_key: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"identifier": identifier, "keys": list(keys), "value": value}
        if scope is not None:
            body["scope"] = scope
        return self._post(self._kb(kb) + "/entries", body, idempotency_key, method="PUT")

    def kb_entries(self, kb: str, scope: str | None = None, **query: Any) -> dict[str, Any]:
        """``identifier``, ``key``, ``any_keys``, ``all_keys`` (lists are comma-joined)."""
        return self._get(self._kb(kb) + "/entries", {"scope": scope, **query})

    def kb_patch(self, kb: str, identifier: str, *, scope: str | None = None, value: str | None = None,
                 keys: Sequence[str] | None = None, idempotency_key: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"identifier": identifier}
        for k, v in (("scope", scope), ("value", value), ("keys", keys)):
            if v is not None:
                body[k] = list(v) if k == "keys" else v
        return self._post(self._kb(kb) + "/entries", body, idempotency_key, method="PATCH")

    def kb_delete(self, kb: str, identifier: str, scope: str | None = None, *, idempotency_key: str | None = None) -> dict[str, Any]:
        return self.request("DELETE", self._kb(kb) + "/entries", query={"scope": scope, "identifier": identifier},
                            idempotency_key=idempotency_key).json()

    def kb_search(self, kb: str, q: str, scope: str | None = None, limit: int | None = None) -> dict[str, Any]:
        return self._get(self._kb(kb) + "/search", {"scope": scope, "q": q, "limit": limit})

    def kb_lookup(self, kb: str, q: str, scope: str | None = None, *, mode: str | None = None, limit: int | None = None) -> str:
        """The plain text a model gets for a question."""
        r = self.request("GET", self._kb(kb) + "/lookup", query={"scope": scope, "q": q, "mode": mode, "limit": limit},
                         accept="text/plain")
        return r.body.decode("utf-8")

    def kb_history(self, kb: str, identifier: str, scope: str | None = None) -> dict[str, Any]:
        return self._get(self._kb(kb) + "/history", {"scope": scope, "identifier": identifier})

    def kb_stats(self, kb: str, scope: str | None = None) -> dict[str, Any]:
        return self._get(self._kb(kb) + "/stats", {"scope": scope})

    # ------------------------------------------------------------ events

    def events(self, after: int = 0, *, limit: int | None = None, types: Sequence[str] | str | None = None,
               project: str | None = None, wait: float | None = None) -> dict[str, Any]:
        """``GET /v1/events``: events after a seq; ``wait`` (seconds, ≤ 60)
        long-polls. Continue from the answer's ``next_after``."""
        q = {"after": after, "limit": limit, "type": types, "project": project,
             "wait": None if wait is None else "%gs" % wait}
        return self.request("GET", "/v1/events", query=q,
                            timeout=None if wait is None else max(self.timeout, wait + 15)).json()

    def follow(self, after: int | None = None, **kw: Any) -> Iterator[dict[str, Any]]:
        """Follow events live (SSE, or long-poll with ``transport="poll"``),
        resuming after the last event yielded when the connection drops.
        See kura.events.EventFollower for the options."""
        from .events import EventFollower
        return EventFollower(self, after=after, **kw)

    # ------------------------------------------------------------ log

    def log_checkpoint(self) -> str:
        return self.request("GET", "/v1/log/checkpoint", accept="text/plain").body.decode("utf-8")

    def log_inclusion(self, seq: int | None = None, size: int | None = None, *, ledger_id: str | None = None) -> dict[str, Any]:
        return self._get("/v1/log/inclusion", {"seq": seq, "size": size, "ledger_id": ledger_id})

    def log_consistency(self, old: int, new: int) -> dict[str, Any]:
        return self._get("/v1/log/consistency", {"old": old, "new": new})

    def log_leaves(self, start: int, end: int) -> dict[str, Any]:
        return self._get("/v1/log/leaves", {"start": start, "end": end})
