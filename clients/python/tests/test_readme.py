"""The repository README's "From Python" snippet runs, as written, against
a real kurad: every name it uses is defined and every check passes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import unittest

from .support import PKG_ROOT, REPO, Kurad, needs_signatures


def readme_snippet() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## From Python"):]
    section = section[:section.index("\n## ", 1)]
    m = re.search(r"```python\n(.*?)```", section, re.S)
    if m is None:
        raise AssertionError('README.md\'s "From Python" section has no python block')
    return m.group(1)


class ReadmeTests(unittest.TestCase):
    @needs_signatures  # the snippet verifies the session's signatures
    def test_from_python_snippet_runs(self) -> None:
        k = Kurad()
        self.addCleanup(k.stop)
        env = {key: v for key, v in os.environ.items() if not key.startswith("KURA_")}
        env.update(KURA_URL=k.url, PYTHONPATH=str(PKG_ROOT))
        r = subprocess.run([sys.executable, "-c", readme_snippet()], env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)


if __name__ == "__main__":
    unittest.main()
