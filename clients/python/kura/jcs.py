"""RFC 8785 JSON Canonicalization Scheme (JCS).

kurad hashes record content, metadata and log leaves over their JCS form, so
this module must produce byte for byte what any other RFC 8785
implementation produces. The parts that differ from ``json.dumps``:

* numbers are IEEE 754 doubles written as ECMAScript's Number.prototype.toString
  writes them (``1e+21``, ``1e-7``, ``0.000045``, ``-0`` as ``0``); an
  integer is first rounded to the nearest double, as a JSON parser of any
  other language would read it;
* object members are sorted by the UTF-16 code units of their names, which
  orders characters outside the Basic Multilingual Plane before U+E000..U+FFFF;
* strings escape only ``"``, ``\\`` and control characters, and are written as
  UTF-8 (no ``\\uXXXX`` for non-ASCII).
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["canonicalize", "canonicalize_text", "loads_strict", "format_number", "JCSError"]


class JCSError(ValueError):
    """The value cannot be canonicalised: not JSON, NaN or infinite, a lone
    surrogate, a duplicate key, a non-string key."""


_SHORT_ESCAPES = {
    0x08: "\\b",
    0x09: "\\t",
    0x0A: "\\n",
    0x0C: "\\f",
    0x0D: "\\r",
    0x22: '\\"',
    0x5C: "\\\\",
}


def _escape_string(s: str) -> str:
    out = ['"']
    for ch in s:
        c = ord(ch)
        esc = _SHORT_ESCAPES.get(c)
        if esc is not None:
            out.append(esc)
        elif c < 0x20:
            out.append("\\u%04x" % c)
        elif 0xD800 <= c <= 0xDFFF:
            raise JCSError("string holds a lone surrogate U+%04X: not valid Unicode" % c)
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def format_number(x: float | int) -> str:
    """Write a number as ECMAScript's Number::toString does (RFC 8785 3.2.2.3)."""
    if isinstance(x, bool):
        raise JCSError("a boolean is not a number")
    if isinstance(x, int):
        try:
            x = float(x)  # what any other JSON parser reads: the nearest double
        except OverflowError:
            raise JCSError("integer too large for an IEEE 754 double") from None
    if not math.isfinite(x):
        raise JCSError("NaN and Infinity are not JSON numbers")
    if x == 0:
        return "0"  # -0 too
    if x < 0:
        return "-" + format_number(-x)
    # repr gives the shortest digit string that reads back as x, which is
    # the digit string ECMAScript uses; only the layout differs.
    r = repr(x)
    mantissa, _, exp = r.partition("e")
    e10 = int(exp) if exp else 0
    whole, _, frac = mantissa.partition(".")
    digits = whole + frac
    point = len(whole) + e10  # value = 0.digits * 10**point after stripping
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    digits = stripped.rstrip("0") or "0"
    k, n = len(digits), point
    if k <= n <= 21:
        return digits + "0" * (n - k)
    if 0 < n <= 21:
        return digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return "0." + "0" * (-n) + digits
    e = n - 1
    sign = "+" if e >= 0 else "-"
    if k == 1:
        return digits + "e" + sign + str(abs(e))
    return digits[0] + "." + digits[1:] + "e" + sign + str(abs(e))


def _utf16_key(s: str) -> bytes:
    try:
        return s.encode("utf-16-be")
    except UnicodeEncodeError:
        raise JCSError("object key holds a lone surrogate") from None


def _write(v: Any, out: list[str], depth: int) -> None:
    if depth > 1000:
        raise JCSError("nested deeper than 1000 levels")
    if v is None:
        out.append("null")
    elif v is True:
        out.append("true")
    elif v is False:
        out.append("false")
    elif isinstance(v, str):
        out.append(_escape_string(v))
    elif isinstance(v, (int, float)):
        out.append(format_number(v))
    elif isinstance(v, dict):
        for k in v:
            if not isinstance(k, str):
                raise JCSError("object key %r is not a string" % (k,))
        out.append("{")
        for i, k in enumerate(sorted(v, key=_utf16_key)):
            if i:
                out.append(",")
            out.append(_escape_string(k))
            out.append(":")
            _write(v[k], out, depth + 1)
        out.append("}")
    elif isinstance(v, (list, tuple)):
        out.append("[")
        for i, item in enumerate(v):
            if i:
                out.append(",")
            _write(item, out, depth + 1)
        out.append("]")
    else:
        raise JCSError("%s is not a JSON value" % type(v).__name__)


def canonicalize(value: Any) -> bytes:
    """Return the RFC 8785 form of a decoded JSON value, as UTF-8 bytes."""
    out: list[str] = []
    _write(value, out, 0)
    try:
        return "".join(out).encode("utf-8")
    except UnicodeEncodeError:
        raise JCSError("a string holds a lone surrogate") from None


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    d: dict[str, Any] = {}
    for k, v in pairs:
        if k in d:
            raise JCSError("duplicate object key %r" % k)
        d[k] = v
    return d


def _no_constant(name: str) -> Any:
    raise JCSError("%s is not a JSON number" % name)


def loads_strict(text: str | bytes) -> Any:
    """Parse JSON text, refusing what RFC 8785 refuses (duplicate keys, NaN,
    Infinity, numbers beyond a double's range)."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as e:
            raise JCSError("not UTF-8: %s" % e) from None
    try:
        v = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        raise JCSError("not JSON: %s" % e) from None
    return v


def canonicalize_text(text: str | bytes) -> bytes:
    """Return the RFC 8785 form of a JSON text."""
    return canonicalize(loads_strict(text))
