"""The PEP 517 build backend of the kura package, standard library only.

``pip install ./clients/python`` builds a wheel in an isolated environment
holding the backend's requirements. With setuptools as the backend that
meant fetching setuptools (and, before setuptools 70.1, wheel) from a
package index: offline, and in a fresh venv whose bundled setuptools cannot
build wheels, the install failed. The package is a directory of pure Python
files, so a wheel is a zip of them with three metadata files (PEP 427,
core metadata 2.1), which this module writes itself: the install needs no
index, no setuptools and no wheel, on any Python the package supports.

The metadata comes from pyproject.toml's [project] table, read with
tomllib (Python 3.11+) or, on 3.10, with a reader of the small TOML subset
that file uses (tests/test_install.py holds the two to the same answer).
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import re
import tarfile
import zipfile
from pathlib import Path
from typing import Any

__all__ = ["build_wheel", "build_sdist", "prepare_metadata_for_build_wheel", "project", "read_toml"]

ROOT = Path(__file__).resolve().parent.parent  # clients/python
PACKAGE = "kura"
# Zip entries get a fixed time (or SOURCE_DATE_EPOCH) so a wheel is the
# same bytes from the same files.
_EPOCH = (1980, 1, 1, 0, 0, 0)


# ------------------------------------------------------------------ TOML


def _toml_value(s: str, i: int) -> tuple[Any, int]:
    """One value of the subset at s[i:]: a basic string, an array, an
    inline table, true/false; returns it and the index after it."""
    i = _skip(s, i)
    c = s[i]
    if c == '"':
        m = re.compile(r'"(?:[^"\\\n]|\\.)*"').match(s, i)
        if not m:
            raise ValueError("unterminated string at offset %d" % i)
        return json.loads(m.group(0)), m.end()
    if c == "[":
        out, i = [], i + 1
        while True:
            i = _skip(s, i)
            if s[i] == "]":
                return out, i + 1
            v, i = _toml_value(s, i)
            out.append(v)
            i = _skip(s, i)
            if s[i] == ",":
                i += 1
            elif s[i] != "]":
                raise ValueError("expected , or ] at offset %d" % i)
    if c == "{":
        tbl: dict[str, Any] = {}
        i += 1
        while True:
            i = _skip(s, i, newlines=False)
            if s[i] == "}":
                return tbl, i + 1
            m = re.compile(r"([A-Za-z0-9_-]+)[ \t]*=").match(s, i)
            if not m:
                raise ValueError("bad inline table at offset %d" % i)
            tbl[m.group(1)], i = _toml_value(s, m.end())
            i = _skip(s, i, newlines=False)
            if s[i] == ",":
                i += 1
            elif s[i] != "}":
                raise ValueError("expected , or } at offset %d" % i)
    for word, v in (("true", True), ("false", False)):
        if s.startswith(word, i):
            return v, i + len(word)
    raise ValueError("unsupported TOML value at offset %d: %r" % (i, s[i:i + 20]))


def _skip(s: str, i: int, newlines: bool = True) -> int:
    """Skip blanks (and, in arrays, newlines and comments)."""
    while i < len(s):
        if s[i] in " \t" or (newlines and s[i] in "\r\n"):
            i += 1
        elif newlines and s[i] == "#":
            while i < len(s) and s[i] != "\n":
                i += 1
        else:
            break
    return i


def read_toml(text: str) -> dict[str, Any]:
    """Parse the TOML pyproject.toml uses: [tables] with dotted names,
    bare or quoted keys, basic strings, arrays, inline tables, booleans
    and comments. Anything else is a ValueError, never a wrong answer."""
    doc: dict[str, Any] = {}
    cur = doc
    i = 0
    key_re = re.compile(r'[ \t]*("(?:[^"\\]|\\.)*"|[A-Za-z0-9_-]+)[ \t]*=')
    while True:
        i = _skip(s=text, i=i)
        if i >= len(text):
            return doc
        if text.startswith("[[", i):
            raise ValueError("arrays of tables are not supported (offset %d)" % i)
        if text[i] == "[":
            end = text.index("]", i)
            cur = doc
            for part in text[i + 1:end].strip().split("."):
                cur = cur.setdefault(part.strip(), {})
            i = end + 1
            continue
        m = key_re.match(text, i)
        if not m:
            raise ValueError("unsupported TOML at offset %d: %r" % (i, text[i:i + 30]))
        key = json.loads(m.group(1)) if m.group(1).startswith('"') else m.group(1)
        if key in cur:
            raise ValueError("duplicate key %r" % key)
        cur[key], i = _toml_value(text, m.end())
        rest = text.find("\n", i)
        tail = text[i:rest if rest >= 0 else len(text)].strip()
        if tail and not tail.startswith("#"):
            raise ValueError("unexpected %r after the value of %r" % (tail, key))


def project() -> dict[str, Any]:
    """pyproject.toml's [project] table."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    try:
        import tomllib
    except ImportError:  # Python 3.10
        return read_toml(text)["project"]
    return tomllib.loads(text)["project"]


# -------------------------------------------------------------- metadata


def _dist_name(p: dict[str, Any]) -> str:
    """The name as wheel and dist-info file names spell it (PEP 427, 503)."""
    return re.sub(r"[-_.]+", "_", p["name"]).lower()


def _metadata(p: dict[str, Any]) -> str:
    lines = [
        "Metadata-Version: 2.1",
        "Name: " + p["name"],
        "Version: " + p["version"],
    ]
    if p.get("description"):
        lines.append("Summary: " + p["description"])
    lic = p.get("license")
    if isinstance(lic, dict) and lic.get("text"):
        lines.append("License: " + lic["text"])
    if p.get("requires-python"):
        lines.append("Requires-Python: " + p["requires-python"])
    for c in p.get("classifiers", []):
        lines.append("Classifier: " + c)
    for d in p.get("dependencies", []):
        lines.append("Requires-Dist: " + d)
    for extra, deps in sorted(p.get("optional-dependencies", {}).items()):
        lines.append("Provides-Extra: " + extra)
        for d in deps:
            lines.append('Requires-Dist: %s; extra == "%s"' % (d, extra))
    readme = p.get("readme")
    body = ""
    if isinstance(readme, str):
        lines.append("Description-Content-Type: text/markdown" if readme.endswith(".md") else "Description-Content-Type: text/plain")
        body = (ROOT / readme).read_text(encoding="utf-8")
    return "\n".join(lines) + "\n\n" + body


def _wheel_file() -> str:
    return "Wheel-Version: 1.0\nGenerator: kura_backend\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def _package_files() -> list[Path]:
    """The package's files: every .py and py.typed under kura/, in order."""
    out = []
    for f in sorted((ROOT / PACKAGE).rglob("*")):
        if f.is_file() and "__pycache__" not in f.parts and (f.suffix == ".py" or f.name == "py.typed"):
            out.append(f)
    return out


def _zip_time() -> tuple[int, int, int, int, int, int]:
    sde = os.environ.get("SOURCE_DATE_EPOCH")
    if sde and sde.isdigit():
        import time
        t = time.gmtime(max(int(sde), 315532800))
        return (t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec)
    return _EPOCH


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
    return "%s,sha256=%s,%d" % (name, digest, len(data))


def _dist_info(p: dict[str, Any]) -> str:
    return "%s-%s.dist-info" % (_dist_name(p), p["version"])


# ----------------------------------------------------------------- hooks


def get_requires_for_build_wheel(config_settings: Any = None) -> list[str]:
    return []


def get_requires_for_build_sdist(config_settings: Any = None) -> list[str]:
    return []


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: Any = None) -> str:
    p = project()
    d = Path(metadata_directory) / _dist_info(p)
    d.mkdir(parents=True, exist_ok=True)
    (d / "METADATA").write_text(_metadata(p), encoding="utf-8")
    (d / "WHEEL").write_text(_wheel_file(), encoding="utf-8")
    (d / "top_level.txt").write_text(PACKAGE + "\n", encoding="utf-8")
    return d.name


def build_wheel(wheel_directory: str, config_settings: Any = None, metadata_directory: str | None = None) -> str:
    """Write kura_client-<version>-py3-none-any.whl into wheel_directory."""
    p = project()
    name = "%s-%s-py3-none-any.whl" % (_dist_name(p), p["version"])
    info = _dist_info(p)
    entries = [(f.relative_to(ROOT).as_posix(), f.read_bytes()) for f in _package_files()]
    entries += [
        (info + "/METADATA", _metadata(p).encode("utf-8")),
        (info + "/WHEEL", _wheel_file().encode("utf-8")),
        (info + "/top_level.txt", (PACKAGE + "\n").encode("utf-8")),
    ]
    record = "".join(_record_line(n, b) + "\n" for n, b in entries) + info + "/RECORD,,\n"
    entries.append((info + "/RECORD", record.encode("utf-8")))
    when = _zip_time()
    Path(wheel_directory).mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(Path(wheel_directory) / name, "w", zipfile.ZIP_DEFLATED) as z:
        for n, b in entries:
            zi = zipfile.ZipInfo(n, when)
            zi.compress_type = zipfile.ZIP_DEFLATED
            zi.external_attr = 0o644 << 16
            z.writestr(zi, b)
    return name


def build_sdist(sdist_directory: str, config_settings: Any = None) -> str:
    """Write kura_client-<version>.tar.gz: the package, this backend,
    pyproject.toml, the README and PKG-INFO."""
    p = project()
    base = "%s-%s" % (_dist_name(p), p["version"])
    files = [ROOT / "pyproject.toml", ROOT / "README.md", Path(__file__).resolve()] + _package_files()
    when = 315532800
    sde = os.environ.get("SOURCE_DATE_EPOCH")
    if sde and sde.isdigit():
        when = int(sde)
    Path(sdist_directory).mkdir(parents=True, exist_ok=True)
    name = base + ".tar.gz"

    def add(t: tarfile.TarFile, arc: str, data: bytes) -> None:
        ti = tarfile.TarInfo(base + "/" + arc)
        ti.size, ti.mtime, ti.mode = len(data), when, 0o644
        t.addfile(ti, io.BytesIO(data))

    with tarfile.open(Path(sdist_directory) / name, "w:gz", format=tarfile.PAX_FORMAT) as t:
        for f in files:
            add(t, f.relative_to(ROOT).as_posix(), f.read_bytes())
        add(t, "PKG-INFO", _metadata(p).encode("utf-8"))
    return name
