"""The verification suite without the ``cryptography`` package: the tests
of Ed25519 signatures skip, saying why, and every other test still runs and
passes (hashes are checked with ``check_signatures=False``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import unittest

from .support import PKG_ROOT

CHILD = "KURA_TEST_HIDE_CRYPTOGRAPHY"


@unittest.skipIf(os.environ.get(CHILD) == "1", "this is the run without cryptography")
class WithoutCryptographyTests(unittest.TestCase):
    def test_signature_tests_skip(self) -> None:
        with tempfile.TemporaryDirectory() as shim:
            # A package named cryptography that cannot be imported hides
            # the installed one, as on a machine without it.
            os.mkdir(os.path.join(shim, "cryptography"))
            with open(os.path.join(shim, "cryptography", "__init__.py"), "w") as f:
                f.write('raise ImportError("cryptography hidden by tests/test_without_cryptography.py")\n')
            env = dict(os.environ, PYTHONPATH=shim, **{CHILD: "1"})
            r = subprocess.run([sys.executable, "-m", "unittest", "-v", "tests.test_verify"], cwd=PKG_ROOT, env=env,
                               capture_output=True, text=True, timeout=300)
        out = r.stdout + r.stderr
        self.assertEqual(r.returncode, 0, out[-4000:])
        m = re.search(r"^OK \(skipped=(\d+)\)", out, re.M)
        self.assertIsNotNone(m, out[-2000:])
        self.assertGreater(int(m.group(1)), 0)
        self.assertIn("'cryptography' is not installed", out)
        # The tests of the SignatureUnavailable error itself ran.
        self.assertRegex(out, r"test_without_cryptography \(tests\.test_verify\.SignatureUnavailableTests[^)]*\) \.\.\. ok")


if __name__ == "__main__":
    unittest.main()
