// A minimal Kura agent loop: open a turn with memory, claim it, call a model,
// append what it thought, the tools it called and what it delivered, close
// the turn, and verify the whole session offline against kurad's public key.
//
//   KURA_URL=http://127.0.0.1:7700 node dist/agent.js
//
// Replace callModel with a call to your model; everything else stays.

import { KuraClient, VerificationError, KuraApiError, type KuraRecord } from "@kura-memory/client";

declare const process: { env: Record<string, string | undefined>; exit(code: number): never };

const AGENT = process.env.KURA_AGENT_ID ?? "agent:demo";
const PROJECT = process.env.KURA_PROJECT ?? "demo";

/** What the model answers: its thoughts, the tools it called, its deliverable. */
interface ModelAnswer {
  thoughts: string[];
  toolCalls: { tool: string; arguments: Record<string, unknown>; result: unknown }[];
  deliverable: string;
}

/**
 * The placeholder model: deterministic, so that the example runs anywhere.
 * Replace it with a real call (the context records are the prompt: the
 * instruction, the memory kurad admitted for this turn, and what the
 * previous turn delivered).
 */
async function callModel(context: KuraRecord[]): Promise<ModelAnswer> {
  const instruction = context.find((r) => r.type === "task.instruction")?.content;
  const memory = context.filter((r) => r.type === "memory.fact" || r.type === "memory.decision");
  return {
    thoughts: [`The task is: ${JSON.stringify(instruction)}`, `Kura gave me ${memory.length} memory item(s) to use now.`],
    toolCalls: [{ tool: "search", arguments: { q: "kura api style" }, result: { hits: ["REST/JSON over HTTP"] } }],
    deliverable: `Keep the API on REST/JSON (${memory.length} memory item(s) consulted).`,
  };
}

async function main(): Promise<void> {
  const kura = new KuraClient(); // KURA_URL, KURA_TOKEN
  const info = await kura.info();
  const types = ["agent.thought", "tool.call", "tool.result", "task.deliverable"];
  const missing = types.filter((t) => !info.record_types.includes(t));
  if (missing.length) throw new Error(`kurad does not accept record types ${missing.join(", ")}`);

  const session = await kura.createSession({ project: PROJECT, name: `agent-${Date.now().toString(36)}` });
  await kura.putNode(session.scope, {
    kind: "decision", id: "api-style", title: "API style", summary: "The API stays on REST/JSON; events go over SSE",
    lifecycle: "active", authority: "trusted", confidence: 0.9,
  });

  const turn = await kura.openTurn(session.id, {
    instruction: { content: "Which API style should we keep?", author_id: "user:demo" },
    memory: { query: "api style", budget_bytes: 8000 },
  });
  const claim = await kura.claimTurn(turn.id, { worker: AGENT, lease_seconds: 120 });
  const context = await kura.allLedgerRecords(turn.context_ledger_id);

  const answer = await callModel(context);
  const records = [
    ...answer.thoughts.map((text) => ({ type: "agent.thought", content: { text }, author_id: AGENT })),
    ...answer.toolCalls.flatMap((c) => [
      { type: "tool.call", content: { tool_name: c.tool, arguments: c.arguments, status: "success" }, author_id: AGENT },
      { type: "tool.result", content: { status: "success", result: c.result }, author_id: AGENT },
    ]),
    { type: "task.deliverable", content: answer.deliverable, author_id: AGENT },
  ];
  await kura.appendTurn(turn.id, { epoch: claim.epoch, records });
  const closed = await kura.closeTurn(turn.id, { epoch: claim.epoch, status: "complete" });

  // Verify the whole session offline: every record, ledger, signature, head
  // move and the log checkpoint, against the key /v1/info published (pin
  // it from a source you trust in production), and that the head is the
  // one this close answered.
  const report = await kura.verifySession(session.id, { publicKey: info.public_key, expectHeadHash: closed.head_hash });
  console.log(`turn ${turn.id}: ${closed.state}, ${closed.output_record_ids.length} output records`);
  console.log(`deliverable: ${answer.deliverable}`);
  console.log(
    `verified: session ${report.sessionId}: ${report.ledgersChecked} ledgers, ${report.recordsChecked} records, ` +
      `${report.headMovesChecked} head moves` + (report.log ? `, log checkpoint ${report.log.origin} size ${report.log.size} (${report.log.ledgersProved} ledgers proved)` : ""),
  );
}

main().catch((e) => {
  if (e instanceof VerificationError) console.error(`NOT verified: ${e.what}: ${e.message}`);
  else if (e instanceof KuraApiError) console.error(`kurad said ${e.status} ${e.code}: ${e.message}`);
  else console.error(`agent failed: ${e?.message ?? e}`);
  process.exit(1);
});
