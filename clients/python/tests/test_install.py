"""``pip install ./clients/python`` works offline, in a fresh venv, with
the pip that venv brings: the package builds with its own standard-library
backend (_backend/kura_backend.py), so no package index is asked for
setuptools or wheel."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from .support import PKG_ROOT, VECTORS

sys.path.insert(0, str(PKG_ROOT / "_backend"))
import kura_backend  # noqa: E402

sys.path.remove(str(PKG_ROOT / "_backend"))

# What the installed package must do: import, find its typing marker, and
# verify a known-answer record.
CHECK = r"""
import json, os, sys
import kura
from kura import verify
v = json.load(open(sys.argv[1]))["records"][0]
rep = verify.record(dict(v, id="v0"))
print(json.dumps({"file": kura.__file__, "version": kura.__version__, "seal": rep.seal,
                  "typed": os.path.exists(os.path.join(os.path.dirname(kura.__file__), "py.typed"))}))
"""


def offline_env() -> dict[str, str]:
    """The environment with no package index and nothing of the checkout on
    the import path."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL")}
    env.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    return env


class InstallTests(unittest.TestCase):
    def test_pip_install_in_fresh_venv_offline(self) -> None:
        env = offline_env()
        with tempfile.TemporaryDirectory(prefix="kura-py-install-") as tmp:
            venv = Path(tmp) / "v"
            made = subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True, env=env)
            py = venv / "bin" / "python"
            if made.returncode != 0:
                # Debian's python3 without python3-venv has no ensurepip:
                # fall back to this interpreter's pip into a target directory.
                have_pip = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True, env=env).returncode == 0
                if not have_pip:
                    self.skipTest("no way to run pip: `%s -m venv` failed (%s) and this Python has no pip "
                                  "(Debian: apt install python3-venv or python3-pip)" % (sys.executable, made.stderr.strip()[-200:]))
                target = Path(tmp) / "site"
                cmd = [sys.executable, "-m", "pip", "install", "--target", str(target), str(PKG_ROOT)]
                env["PYTHONPATH"] = str(target)
                py = Path(sys.executable)
            else:
                cmd = [str(py), "-m", "pip", "install", str(PKG_ROOT)]
            inst = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp, timeout=300)
            self.assertEqual(inst.returncode, 0, "%s\n%s%s" % (" ".join(cmd), inst.stdout, inst.stderr))
            # -s and a cwd outside the checkout: the kura imported is the one installed.
            got = subprocess.run([str(py), "-s", "-c", CHECK, str(VECTORS)], capture_output=True, text=True,
                                 env=env, cwd=tmp, timeout=60)
            self.assertEqual(got.returncode, 0, got.stderr)
            out = json.loads(got.stdout)
            self.assertTrue(out["file"].startswith(tmp), "imported %s, not the installed copy" % out["file"])
            self.assertEqual(out["version"], kura_backend.project()["version"])
            self.assertTrue(out["typed"], "py.typed is not installed")
            self.assertEqual(out["seal"], json.loads(VECTORS.read_text())["records"][0]["seal"])

    def test_wheel_contents(self) -> None:
        import zipfile
        with tempfile.TemporaryDirectory() as tmp:
            name = kura_backend.build_wheel(tmp)
            self.assertEqual(name, "kura_client-%s-py3-none-any.whl" % kura_backend.project()["version"])
            with zipfile.ZipFile(Path(tmp) / name) as z:
                names = z.namelist()
                record = z.read("kura_client-0.1.0.dist-info/RECORD").decode()
                meta = z.read("kura_client-0.1.0.dist-info/METADATA").decode()
            want = sorted(p.relative_to(PKG_ROOT).as_posix() for p in (PKG_ROOT / "kura").iterdir()
                          if p.suffix == ".py" or p.name == "py.typed")
            self.assertEqual(sorted(n for n in names if n.startswith("kura/")), want)
            self.assertFalse([n for n in names if "__pycache__" in n or n.startswith(("tests/", "_backend/"))], names)
            self.assertEqual(len(record.strip().split("\n")), len(names))
            self.assertIn('Requires-Dist: cryptography; extra == "signatures"', meta)
            self.assertIn("Requires-Python: >=3.10", meta)
            # The same files give the same wheel.
            again = Path(tmp) / "again"
            kura_backend.build_wheel(str(again))
            self.assertEqual((Path(tmp) / name).read_bytes(), (again / name).read_bytes())

    def test_toml_reader_matches_tomllib(self) -> None:
        # On Python 3.10 the backend reads pyproject.toml itself; here it must
        # give what tomllib gives, so the file stays inside what it reads.
        try:
            import tomllib
        except ImportError:
            self.skipTest("Python %d.%d has no tomllib to compare with" % sys.version_info[:2])
        text = (PKG_ROOT / "pyproject.toml").read_text()
        self.assertEqual(kura_backend.read_toml(text), tomllib.loads(text))
        for bad in ('a = 1\n', '[[x]]\na = "b"\n', 'a.b = "c"\n', 'a = ["x" "y"]\n', 'a = "b" c\n'):
            with self.subTest(bad=bad), self.assertRaises(ValueError):
                kura_backend.read_toml(bad)


if __name__ == "__main__":
    unittest.main()
