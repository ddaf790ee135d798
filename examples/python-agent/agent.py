#!/usr/bin/env python3
"""A Kura agent loop in Python: one turn of work, written down so that
anyone can check it afterwards.

    KURA_URL=http://127.0.0.1:7700 python3 agent.py

1. create (or reuse) the session ``demo/python-agent``;
2. put a memory node in the session's scope, so the turn's context has it;
3. open a turn with the memory compiled into its context ledger, claim it;
4. call the model (``call_model`` below: replace it with your own);
5. append its thoughts, its tool call and the tool's result, and the
   deliverable, fenced by the claim's epoch; close the turn;
6. verify the whole session offline (every record, ledger, signature, head
   move and the log proofs) against kurad's public key, and print
   ``verified: ...``. Exit status 1 when anything does not verify.

Configuration: ``KURA_URL``, ``KURA_TOKEN``, and ``KURA_PUBLIC_KEY`` (the key
to trust; without it, the key /v1/info names is used and printed).
Run it from a checkout (``clients/python`` is put on the path) or after
``pip install ./clients/python``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

try:
    import kura
except ImportError:  # running from a checkout without installing the client
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "clients" / "python"))
    import kura

PROJECT = os.environ.get("KURA_PROJECT", "demo")
SESSION = os.environ.get("KURA_SESSION", "python-agent")
AGENT = "agent:python-demo"


def call_model(context: list[dict[str, Any]]) -> dict[str, Any]:
    """Replace this with a call to your model. It gets the turn's context
    records (the instruction, packed memory, earlier deliverables) and
    returns thoughts, at most one tool call, and a deliverable. This
    placeholder answers deterministically from the memory it was given."""
    instruction = next((r["content"] for r in context if r["type"] == "task.instruction"), None)
    facts = [r["content"] for r in context if r["type"] in ("memory.fact", "memory.decision")]
    summaries = [f.get("summary", "") for f in facts if isinstance(f, dict)]
    return {
        "thoughts": [
            "The task is: %s" % (instruction,),
            "Memory gives me %d item(s): %s" % (len(summaries), "; ".join(summaries) or "nothing"),
        ],
        "tool_call": {"tool_name": "port_check", "arguments": {"host": "127.0.0.1", "port": 7700}},
        "deliverable": {"answer": "kurad listens on 127.0.0.1:7700", "based_on": [f.get("ref") for f in facts]},
    }


def run_tool(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The tool the model asked for (a placeholder, like the model)."""
    return {"status": "success", "result": {"tool": name, "open": True, **arguments}}


def main() -> int:
    client = kura.Client()
    info = client.info()
    public_key = os.environ.get("KURA_PUBLIC_KEY") or info["public_key"]
    if "tool.call" not in info.get("record_types", []):
        print("kurad does not accept tool.call records: %s" % info.get("record_types"), file=sys.stderr)
        return 1

    session = client.find_session(PROJECT, SESSION)
    if session is None:
        try:
            session = client.create_session(PROJECT, SESSION)
        except kura.Conflict:  # created meanwhile by another run
            session = client.find_session(PROJECT, SESSION)
    assert session is not None
    scope = session["scope"]
    print("session %s/%s %s" % (PROJECT, SESSION, session["id"]))

    client.put_node(scope, {"kind": "fact", "id": "kurad-port", "title": "kurad port",
                            "summary": "kurad listens on 127.0.0.1:7700 by default",
                            "lifecycle": "active", "authority": "trusted"})

    turn = client.open_turn(session["id"],
                            {"type": "task.instruction", "content": "Where does kurad listen?", "author_id": "user:demo"},
                            memory={"query": "kurad port", "budget_bytes": 8000})
    claim = client.claim_turn(turn["id"], AGENT, lease_seconds=120)
    epoch = claim["epoch"]
    print("turn %s claimed at epoch %d" % (turn["id"], epoch))

    try:
        context = client.all_ledger_records(turn["context_ledger_id"])
        answer = call_model(context)
        client.append(turn["id"], [{"type": "agent.thought", "content": {"text": t}, "author_id": AGENT}
                                   for t in answer["thoughts"]], epoch=epoch)
        call = answer.get("tool_call")
        if call:
            client.append(turn["id"], [{"type": "tool.call", "author_id": AGENT,
                                        "content": {"tool_name": call["tool_name"], "arguments": call["arguments"],
                                                    "status": "pending"}}], epoch=epoch)
            client.renew_turn(turn["id"], epoch, 120)  # a long tool keeps its lease alive
            result = run_tool(call["tool_name"], call["arguments"])
            client.append(turn["id"], [{"type": "tool.result", "content": result,
                                        "author_id": "tool:" + call["tool_name"].replace("_", "-")}], epoch=epoch)
        client.append(turn["id"], [{"type": "task.deliverable", "content": answer["deliverable"], "author_id": AGENT}],
                      epoch=epoch)
        closed = client.close_turn(turn["id"], "complete", epoch=epoch)
    except Exception:
        try:
            client.close_turn(turn["id"], "failed", epoch=epoch)
        except kura.KuraError:
            pass
        raise
    print("turn closed: output ledger %s, head hash %s" % (closed["output_ledger_id"], closed["head_hash"]))

    try:
        report = client.verify_session(session["id"], public_key, expect_head_hash=closed["head_hash"])
    except kura.VerificationError as e:
        print("NOT verified: %s failed: %s" % (e.what, e), file=sys.stderr)
        return 1
    except kura.SignatureUnavailable as e:
        print("NOT verified: %s" % e, file=sys.stderr)
        return 1
    log = ("log checkpoint %s size %d, %d ledger(s) proved included" % (report.log_origin, report.log_size, report.ledgers_proved)
           if report.log_checked else "log not checked")
    print("verified: session %s: %d ledgers, %d records, %d signed head moves; %s; head %s; public key %s"
          % (report.session_id, report.ledgers_checked, report.records_checked, report.head_moves_checked, log,
             report.head_hash, public_key))
    return 0


if __name__ == "__main__":
    sys.exit(main())
