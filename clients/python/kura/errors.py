"""The errors the Kura client raises.

Everything derives from :class:`KuraError`. What kurad refused is an
:class:`APIError` carrying the API's error ``code``; what never reached an
answer (refused connection, reset, timeout) is a :class:`KuraConnectionError`;
a check that found tampered data is a :class:`VerificationError` naming
``what`` failed; a signature that could not be checked at all is
:class:`SignatureUnavailable`.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "KuraError",
    "APIError",
    "BadRequest",
    "Unauthenticated",
    "PermissionDenied",
    "NotFound",
    "Conflict",
    "RateLimited",
    "Unavailable",
    "KuraConnectionError",
    "KuraTimeoutError",
    "VerificationError",
    "SignatureUnavailable",
    "VERIFICATION_WHATS",
]


class KuraError(Exception):
    """Base class of every error this package raises on purpose."""


class APIError(KuraError):
    """kurad answered with a non-2xx status and its error body."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: dict[str, Any] | None = None,
        request_id: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        self.status = status
        self.code = code
        self.message = message
        self.details: dict[str, Any] = details or {}
        self.request_id = request_id
        self.retry_after = retry_after
        super().__init__("%d %s: %s" % (status, code, message))


class BadRequest(APIError):
    """400 invalid_argument."""


class Unauthenticated(APIError):
    """401 unauthenticated."""


class PermissionDenied(APIError):
    """403 permission_denied."""


class NotFound(APIError):
    """404 not_found."""


class Conflict(APIError):
    """409 conflict: compare-and-swap mismatch, stale epoch, turn not open..."""


class RateLimited(APIError):
    """429 rate_limited."""


class Unavailable(APIError):
    """503 unavailable."""


_BY_CODE: dict[str, type[APIError]] = {
    "invalid_argument": BadRequest,
    "unauthenticated": Unauthenticated,
    "permission_denied": PermissionDenied,
    "not_found": NotFound,
    "conflict": Conflict,
    "rate_limited": RateLimited,
    "unavailable": Unavailable,
}


def api_error(status: int, code: str, message: str, details: dict[str, Any] | None = None,
              request_id: str | None = None, retry_after: float | None = None) -> APIError:
    """The APIError subclass for code (APIError itself for the others)."""
    cls = _BY_CODE.get(code, APIError)
    return cls(status, code, message, details, request_id, retry_after)


class KuraConnectionError(KuraError):
    """No answer from kurad: connection refused or reset, DNS, TLS, a cut-off body."""


class KuraTimeoutError(KuraConnectionError):
    """kurad did not answer within the client's timeout."""


#: Every value VerificationError.what takes.
VERIFICATION_WHATS = frozenset({
    "content_hash", "hash", "seal", "root", "ledger_hash", "signature", "order",
    "reflog", "head_signature", "head", "head_hash", "chain",
    "log_signature", "log_cosignature", "log_leaf", "log_proof", "log_root", "log_consistency",
})


class VerificationError(KuraError):
    """Data that does not verify. ``what`` names the check that failed (see
    VERIFICATION_WHATS), ``subject`` the object ("record <id>", "ledger <id>"),
    ``expected``/``got`` the stored and the recomputed value where there are two."""

    def __init__(self, what: str, subject: str, message: str,
                 expected: str | None = None, got: str | None = None) -> None:
        if what not in VERIFICATION_WHATS:
            raise ValueError("unknown verification check %r" % what)
        self.what = what
        self.subject = subject
        self.expected = expected
        self.got = got
        text = "%s: %s: %s" % (subject, what, message)
        if expected is not None or got is not None:
            text += " (expected %s, got %s)" % (expected, got)
        super().__init__(text)


class SignatureUnavailable(KuraError):
    """An Ed25519 signature could not be checked because the ``cryptography``
    package is missing. Not a VerificationError: the data did not fail."""


class InvalidInput(KuraError, ValueError):
    """What the caller handed in is not what the function takes: a record
    that is not an object, a public key that is not ``ed25519:<hex>``, an
    unreadable export line. (A field missing from kurad's answer is a
    VerificationError: the data does not verify.)"""


__all__.append("InvalidInput")
