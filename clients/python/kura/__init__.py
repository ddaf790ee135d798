"""Kura: agent memory you can verify. A client for kurad's HTTP API and
offline verification of what it hands out (``kura.verify``)."""

from __future__ import annotations

from . import hashes, jcs, verify
from .client import Client
from .events import EventFollower
from .errors import (
    APIError,
    BadRequest,
    Conflict,
    InvalidInput,
    KuraConnectionError,
    KuraError,
    KuraTimeoutError,
    NotFound,
    PermissionDenied,
    RateLimited,
    SignatureUnavailable,
    Unauthenticated,
    Unavailable,
    VerificationError,
)

__version__ = "0.1.0"

__all__ = [
    "Client", "EventFollower", "APIError", "BadRequest", "Conflict", "InvalidInput", "KuraConnectionError", "KuraError",
    "KuraTimeoutError", "NotFound", "PermissionDenied", "RateLimited", "SignatureUnavailable",
    "Unauthenticated", "Unavailable", "VerificationError", "hashes", "jcs", "verify",
]
