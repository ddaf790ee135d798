"""examples/python-agent runs end to end against a real kurad."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import unittest

import kura

from .support import REPO, Kurad

AGENT = REPO / "examples" / "python-agent" / "agent.py"


class ExampleTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.k = Kurad()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.k.stop()

    def run_agent(self, **env: str) -> subprocess.CompletedProcess:
        e = {k: v for k, v in os.environ.items() if not k.startswith("KURA_")}
        e.update(KURA_URL=self.k.url, PYTHONPATH="")
        e.update(env)
        return subprocess.run([sys.executable, str(AGENT)], env=e, capture_output=True, text=True, timeout=60)

    def test_agent_runs_and_verifies(self) -> None:
        first = self.run_agent()
        self.assertEqual(first.returncode, 0, first.stdout + first.stderr)
        m = re.search(r"^verified: session (\S+): 2 ledgers, (\d+) records, 2 signed head moves; "
                      r"log checkpoint \S+ size \d+, 2 ledger\(s\) proved included; head ([0-9a-f]{64})", first.stdout, re.M)
        self.assertIsNotNone(m, first.stdout)
        sid, head = m.group(1), m.group(3)
        c = kura.Client(self.k.url)
        self.assertEqual(c.get_session(sid)["head_hash"], head)
        out = c.get_ledger(c.get_session(sid)["head_ledger_id"])
        types = [r["type"] for r in c.all_ledger_records(out["id"])]
        self.assertEqual(types, ["agent.thought", "agent.thought", "tool.call", "tool.result", "task.deliverable"])
        thoughts = [r["content"]["text"] for r in c.all_ledger_records(out["id"]) if r["type"] == "agent.thought"]
        self.assertIn("kurad listens on 127.0.0.1:7700 by default", thoughts[1])  # the memory reached the model

        second = self.run_agent()  # reuses the session: the chain grows
        self.assertEqual(second.returncode, 0, second.stdout + second.stderr)
        self.assertIn("verified: session %s: 4 ledgers" % sid, second.stdout)

    def test_agent_fails_on_wrong_key(self) -> None:
        res = self.run_agent(KURA_SESSION="wrong-key", KURA_PUBLIC_KEY="ed25519:" + "33" * 32)
        self.assertEqual(res.returncode, 1, res.stdout + res.stderr)
        self.assertNotIn("verified:", res.stdout)
        self.assertIn("NOT verified: signature failed", res.stderr)


if __name__ == "__main__":
    unittest.main()
