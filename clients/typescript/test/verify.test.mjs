// Offline verification of what a real kurad answers, and every tamper
// caught with the right .what.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { generateKeyPairSync, sign, createHash } from "node:crypto";
import * as kura from "../dist/index.js";
import { startKurad, kuraBin } from "./helpers.mjs";

let k, c, info, session, head, headRecords, ctx, ctxRecords, exportLines;

const clone = (x) => structuredClone(x);

function throwsWhat(fn, what) {
  assert.throws(fn, (e) => {
    assert.ok(e instanceof kura.VerificationError, `not a VerificationError: ${e}`);
    assert.equal(e.what, what, e.message);
    return true;
  });
}
async function rejectsWhat(p, what) {
  await assert.rejects(p, (e) => {
    assert.ok(e instanceof kura.VerificationError, `not a VerificationError: ${e}`);
    assert.equal(e.what, what, e.message);
    return true;
  });
}

before(async () => {
  k = await startKurad();
  c = new kura.KuraClient({ baseUrl: k.url });
  info = await c.info();
  session = await c.createSession({ project: "hashi", name: "verify" });
  await c.putNode("hashi", { kind: "fact", id: "rest-api", title: "REST is fast enough", summary: "Keep the API on REST/JSON", lifecycle: "active", authority: "trusted" });
  for (let n = 1; n <= 2; n++) {
    const t = await c.openTurn(session.id, { instruction: { content: `step ${n}`, author_id: "user:oles" }, memory: { query: "rest api" } });
    const cl = await c.claimTurn(t.id, { worker: "agent:bmo" });
    await c.appendTurn(t.id, {
      epoch: cl.epoch,
      records: [
        { type: "agent.thought", content: { text: `thinking ${n}`, n: 1.5, unicode: "東€😀" }, author_id: "agent:bmo", metadata: { trace_id: `t-${n}` } },
        { type: "tool.call", content: { tool_name: "search", arguments: { q: "rest" }, status: "pending" }, author_id: "agent:bmo" },
        { type: "tool.result", content: { status: "success", result: { hits: [1, 2, 3] } }, author_id: "tool:search" },
        { type: "task.deliverable", content: `answer ${n}`, author_id: "agent:bmo" },
      ],
    });
    await c.closeTurn(t.id, { epoch: cl.epoch });
  }
  session = await c.getSession(session.id);
  head = await c.getLedger(session.head_ledger_id);
  headRecords = await c.allLedgerRecords(head.id);
  ctx = await c.getLedger(head.parent_ids[0]);
  ctxRecords = await c.allLedgerRecords(ctx.id);
  exportLines = execFileSync(kuraBin(), ["export", session.id, "--format=jsonl"], { env: { ...process.env, KURA_URL: k.url }, encoding: "utf8" })
    .split("\n").filter((l) => l.trim() !== "");
});

after(async () => {
  await k?.stop();
});

const parents = () => ({ parentHashes: [ctx.hash] });

test("records, ledgers and proofs from a real kurad verify (sync and async)", async () => {
  for (const r of headRecords) assert.equal(kura.verifyRecord(r).seal, r.seal);
  const v = kura.verifyLedger(head, headRecords, info.public_key, parents());
  assert.equal(v.recordsChecked, 4);
  assert.ok(v.signatureChecked);
  await kura.verifyLedgerAsync(head, headRecords, info.public_key, { parents: [ctx] });
  // The context ledger's own parent is the previous turn's output.
  const prev = await c.getLedger(ctx.parent_ids[0]);
  kura.verifyLedger(ctx, ctxRecords, info.public_key, { parents: [prev] });
  assert.ok(ctxRecords.some((r) => r.type === "memory.fact"), "the memory node is in the context");
  for (const r of headRecords) {
    const p = await c.ledgerProof(head.id, r.id);
    kura.verifyInclusion(p, r, head);
    await kura.verifyInclusionAsync(p, r, head);
  }
});

test("a ledger with parents verifies from its own answer (the binding three-argument call)", () => {
  assert.deepEqual(head.parent_hashes, [ctx.hash]);
  kura.verifyLedger(head, headRecords, info.public_key);
  throwsWhat(() => kura.verifyLedger({ ...head, parent_hashes: ["0".repeat(64)] }, headRecords, info.public_key), "ledger_hash");
});

test("tampered record content: content_hash", () => {
  const rs = clone(headRecords);
  rs[0].content.text = "rewritten";
  throwsWhat(() => kura.verifyRecord(rs[0]), "content_hash");
  throwsWhat(() => kura.verifyLedger(head, rs, info.public_key, parents()), "content_hash");
});

test("tampered content_hash field: content_hash", () => {
  const r = clone(headRecords[1]);
  r.content_hash = kura.contentHash({ other: true });
  throwsWhat(() => kura.verifyRecord(r), "content_hash");
});

test("tampered record hash: hash", () => {
  const r = clone(headRecords[1]);
  r.author_id = "agent:mallory";
  throwsWhat(() => kura.verifyRecord(r), "hash");
  const r2 = clone(headRecords[1]);
  r2.hash = "0".repeat(64);
  throwsWhat(() => kura.verifyRecord(r2), "hash");
});

test("tampered seal, metadata or created_at: seal", () => {
  for (const f of [(r) => (r.seal = "1".repeat(64)), (r) => (r.metadata = { trace_id: "forged" }), (r) => (r.created_at = "2026-01-01T00:00:00.000000000Z")]) {
    const r = clone(headRecords[0]);
    f(r);
    throwsWhat(() => kura.verifyRecord(r), "seal");
  }
});

test("records out of order, missing or extra: order", () => {
  const swapped = [headRecords[1], headRecords[0], ...headRecords.slice(2)];
  throwsWhat(() => kura.verifyLedger(head, swapped, info.public_key, parents()), "order");
  throwsWhat(() => kura.verifyLedger(head, headRecords.slice(1), info.public_key, parents()), "order");
  throwsWhat(() => kura.verifyLedger(head, [...headRecords, ctxRecords[0]], info.public_key, parents()), "order");
});

test("tampered root_hash: root", () => {
  const l = clone(head);
  l.root_hash = "2".repeat(64);
  throwsWhat(() => kura.verifyLedger(l, headRecords, info.public_key, parents()), "root");
});

test("tampered ledger label: ledger_hash", () => {
  const l = clone(head);
  l.label = "forged-label";
  throwsWhat(() => kura.verifyLedger(l, headRecords, info.public_key, parents()), "ledger_hash");
});

test("tampered ledger hash, time or parents: ledger_hash", () => {
  const l = clone(head);
  l.hash = "3".repeat(64);
  throwsWhat(() => kura.verifyLedger(l, headRecords, info.public_key, parents()), "ledger_hash");
  const l2 = clone(head);
  l2.created_at = "2026-01-01T00:00:00.000000000Z";
  throwsWhat(() => kura.verifyLedger(l2, headRecords, info.public_key, parents()), "ledger_hash");
  throwsWhat(() => kura.verifyLedger(head, headRecords, info.public_key, { parentHashes: ["4".repeat(64)] }), "ledger_hash");
});

test("tampered ledger signature: signature", async () => {
  const l = clone(head);
  l.signature = (l.signature[0] === "0" ? "1" : "0") + l.signature.slice(1);
  throwsWhat(() => kura.verifyLedger(l, headRecords, info.public_key, parents()), "signature");
  await rejectsWhat(kura.verifyLedgerAsync(l, headRecords, info.public_key, parents()), "signature");
  const unsigned = clone(head);
  delete unsigned.signature;
  throwsWhat(() => kura.verifyLedger(unsigned, headRecords, info.public_key, parents()), "signature");
  // Another key: the hashes hold, the signature does not.
  throwsWhat(() => kura.verifyLedger(head, headRecords, "ed25519:" + "ab".repeat(32), parents()), "signature");
});

test("a consistent rewrite without the key is caught by the signature alone", () => {
  const rs = clone(headRecords);
  const r = rs[0];
  r.content = { text: "history rewritten" };
  r.content_hash = kura.contentHash(r.content);
  r.hash = kura.recordHash(r.type, r.content_hash, r.author_id);
  r.seal = kura.recordSeal(r.hash, r.metadata, r.created_at);
  const l = clone(head);
  l.root_hash = kura.merkleRoot(rs.map((x) => x.seal));
  l.hash = kura.ledgerHash(l.root_hash, [ctx.hash], l.label, l.created_at);
  kura.verifyLedger(l, rs, null, parents()); // the hashes are consistent
  throwsWhat(() => kura.verifyLedger(l, rs, info.public_key, parents()), "signature");
});

test("every problem is listed, the first names .what, the message names the object", () => {
  const rs = clone(headRecords);
  rs[2].content = { status: "error" };
  try {
    kura.verifyLedger(head, rs, info.public_key, parents());
    assert.fail("no error");
  } catch (e) {
    assert.equal(e.what, "content_hash");
    assert.match(e.message, new RegExp(`record ${rs[2].id}`));
    assert.match(e.message, /stored [0-9a-f]{64}, computed [0-9a-f]{64}/);
    assert.deepEqual(e.problems.map((p) => p.what), ["content_hash", "hash", "seal", "root", "ledger_hash"]);
  }
});

test("inclusion proofs: tampered path is root, another record is seal", async () => {
  const p = await c.ledgerProof(head.id, headRecords[2].id);
  const bad = clone(p);
  bad.audit_path[0] = "5".repeat(64);
  throwsWhat(() => kura.verifyInclusion(bad, headRecords[2]), "root");
  throwsWhat(() => kura.verifyInclusion(p, headRecords[1]), "seal");
  const idx = clone(p);
  idx.leaf_index = (p.leaf_index + 1) % p.tree_size;
  throwsWhat(() => kura.verifyInclusion(idx, headRecords[2]), "root");
  throwsWhat(() => kura.verifyInclusion(p, headRecords[2], ctx), "root");
});

test("a redacted record verifies by its content_hash", async () => {
  const t = await c.openTurn(session.id, { instruction: { content: "a secret: hunter2", author_id: "user:oles" } });
  await c.closeTurn(t.id, {});
  const red = await c.redactRecord(t.context_ledger_id ? (await c.getLedger(t.context_ledger_id)).record_ids[0] : "", { reason: "leaked a password" });
  assert.equal(red.record.redacted, true);
  assert.equal(red.record.content, null);
  kura.verifyRecord(red.record);
  const l = await c.getLedger(t.context_ledger_id);
  const rs = await c.allLedgerRecords(l.id);
  const v = kura.verifyLedger(l, rs, info.public_key, { parents: [await c.getLedger(l.parent_ids[0])] });
  assert.deepEqual(v.redacted, [red.record.id]);
});

test("what the caller passes wrongly is a TypeError", () => {
  assert.throws(() => kura.verifyRecord(null), TypeError);
  assert.throws(() => kura.verifyRecord("a record"), TypeError);
  assert.throws(() => kura.verifyLedger(head, "nope", info.public_key, parents()), /records is not a list/);
  assert.throws(() => kura.verifyLedger(head, headRecords, "not-a-key", parents()), /ed25519:<64 hex digits>/);
  assert.throws(() => kura.verifyLedger(head, headRecords, info.public_key, { parents: [] }), /not among options.parents/);
  assert.throws(() => kura.verifyInclusion(null, headRecords[0]), TypeError);
  assert.throws(() => kura.verifySessionExport("not json\n", info.public_key), /line 1 is not JSON/);
  assert.throws(() => kura.verifyLogInclusion(null, {}), TypeError);
});

const without = (o, field) => {
  const c2 = clone(o);
  delete c2[field];
  return c2;
};

// A field of kurad's answer deleted or malformed is a tamper like any other:
// VerificationError naming the check and the field, never a TypeError.
function failsOnField(fn, what, field) {
  assert.throws(fn, (e) => {
    assert.ok(e instanceof kura.VerificationError, `not a VerificationError: ${e}`);
    assert.equal(e.what, what, e.message);
    assert.match(e.message, new RegExp(field), e.message);
    return true;
  });
}

test("a record field deleted or malformed: VerificationError naming it", async () => {
  const r = headRecords[0]; // it has metadata
  const proof = await c.ledgerProof(head.id, r.id);
  for (const [field, what, bad] of [
    ["content", "content_hash", undefined],
    ["content_hash", "content_hash", 12],
    ["hash", "hash", "zz".repeat(32)],
    ["type", "hash", ["agent.thought"]],
    ["author_id", "hash", 7],
    ["seal", "seal", "AB".repeat(32)],
    ["created_at", "seal", 1764000000],
    ["metadata", "seal", "trace t-1"],
  ]) {
    const variants = [["deleted", without(r, field)]];
    if (bad !== undefined) variants.push(["malformed", { ...clone(r), [field]: bad }]);
    for (const [, rec] of variants) {
      failsOnField(() => kura.verifyRecord(rec), what, field);
      failsOnField(() => kura.verifyLedger(head, [rec, ...headRecords.slice(1)], info.public_key), what, field);
      failsOnField(() => kura.verifyInclusion(proof, rec), what, field);
      await assert.rejects(kura.verifyRecordAsync(rec), (e) => e instanceof kura.VerificationError && e.what === what);
    }
  }
});

test("a ledger field deleted or malformed: VerificationError naming it", async () => {
  for (const [field, what, bad] of [
    ["root_hash", "root", "not hex"],
    ["hash", "ledger_hash", null],
    ["label", "ledger_hash", 3],
    ["created_at", "ledger_hash", false],
    ["parent_hashes", "ledger_hash", "ab".repeat(32)],
    ["parent_ids", "ledger_hash", "one"],
    ["signature", "signature", 5],
    ["record_ids", "order", "all of them"],
    ["record_count", "order", "four"],
  ]) {
    const variants = [{ ...clone(head), [field]: bad }];
    if (!["parent_ids", "record_ids", "record_count"].includes(field)) variants.push(without(head, field)); // these may be absent
    for (const l of variants) {
      failsOnField(() => kura.verifyLedger(l, headRecords, info.public_key), what, field);
      await assert.rejects(kura.verifyLedgerAsync(l, headRecords, info.public_key), (e) => e instanceof kura.VerificationError && e.what === what);
    }
  }
});

test("an inclusion proof field deleted or malformed: root", async () => {
  const r = headRecords[1];
  const p = await c.ledgerProof(head.id, r.id);
  for (const [field, bad] of [["root_hash", "ab"], ["audit_path", ["zz"]], ["leaf_index", "0"], ["tree_size", null]]) {
    failsOnField(() => kura.verifyInclusion(without(p, field), r), "root", field);
    failsOnField(() => kura.verifyInclusion({ ...clone(p), [field]: bad }, r), "root", field);
  }
});

test("a log inclusion proof field deleted or malformed: log_proof, log_root, log_leaf", async () => {
  const cp = kura.verifyCheckpoint(await c.logCheckpoint(), info.log_vkey);
  const p = await c.logInclusion({ ledger_id: head.id, size: cp.size });
  for (const [field, what, bad] of [["seq", "log_proof", "1"], ["size", "log_root", null], ["leaf_hash", "log_leaf", "!!"], ["proof", "log_proof", ["AAAA"]]]) {
    for (const q of [without(p, field), { ...clone(p), [field]: bad }]) {
      assert.throws(() => kura.verifyLogInclusion(q, cp), (e) => e instanceof kura.VerificationError && e.what === what, field);
    }
  }
});

test("an export line with a field deleted: VerificationError naming it", () => {
  for (const [kind, field, what] of [["record", "seal", "seal"], ["record", "author_id", "hash"], ["ledger", "hash", "ledger_hash"], ["ledger", "root_hash", "root"], ["ledger", "record_ids", "order"]]) {
    const lines = editLine((o) => o.kind === kind, (o) => delete o[field]);
    failsOnField(() => kura.verifySessionExport(lines, info.public_key), what, field);
  }
  const reflog = editLine((o) => o.kind === "session", (o) => (o.reflog = [null]));
  failsOnField(() => kura.verifySessionExport(reflog, info.public_key), "reflog", "reflog");
});

test("JSON without parent_hashes (a kurad that did not carry them): ledger_hash, saying what to pass", () => {
  const { parent_hashes: _, ...bare } = head;
  failsOnField(() => kura.verifyLedger(bare, headRecords, info.public_key), "ledger_hash", "parentHashes");
  kura.verifyLedger(bare, headRecords, info.public_key, parents());
});

test("session export from the kura CLI verifies, sync and async, and via the client", async () => {
  const rep = kura.verifySessionExport(exportLines.join("\n"), info.public_key);
  assert.equal(rep.sessionId, session.id);
  assert.ok(rep.ledgersChecked >= 4 && rep.recordsChecked > 8 && rep.headMovesChecked >= 4, JSON.stringify(rep));
  assert.equal(rep.logChecked, true);
  assert.equal(rep.log.ledgersProved, rep.ledgersChecked);
  const rep2 = await kura.verifySessionExportAsync(exportLines, info.public_key, { expectHeadHash: head.hash });
  assert.equal(rep2.ledgersChecked, rep.ledgersChecked);
  const live = await c.verifySession(session.id, { publicKey: info.public_key, expectHeadHash: head.hash });
  assert.equal(live.logChecked, true);
});

function editLine(pred, edit) {
  let done = false;
  const lines = exportLines.map((l) => {
    const o = JSON.parse(l);
    if (!done && pred(o)) {
      done = true;
      edit(o);
      return JSON.stringify(o);
    }
    return l;
  });
  assert.ok(done, "no line matched");
  return lines;
}

test("export with a tampered record line: content_hash", () => {
  const lines = editLine((o) => o.kind === "record" && o.type === "agent.thought", (o) => (o.content.text = "forged"));
  throwsWhat(() => kura.verifySessionExport(lines, info.public_key), "content_hash");
});

test("export with a record line removed: order", () => {
  const i = exportLines.findIndex((l) => JSON.parse(l).kind === "record");
  throwsWhat(() => kura.verifySessionExport(exportLines.filter((_, j) => j !== i), info.public_key), "order");
});

test("export with a tampered ledger label: ledger_hash; signature: signature", () => {
  throwsWhat(() => kura.verifySessionExport(editLine((o) => o.kind === "ledger", (o) => (o.label = "x")), info.public_key), "ledger_hash");
  throwsWhat(() => kura.verifySessionExport(editLine((o) => o.kind === "ledger", (o) => (o.signature = "0".repeat(128))), info.public_key), "signature");
});

test("export with a tampered head move: head_signature, reflog, head", () => {
  throwsWhat(() => kura.verifySessionExport(editLine((o) => o.kind === "session", (o) => (o.reflog[0].signature = "0".repeat(128))), info.public_key), "head_signature");
  const dropped = editLine((o) => o.kind === "session", (o) => o.reflog.splice(1, 1));
  throwsWhat(() => kura.verifySessionExport(dropped, info.public_key), "reflog");
  const other = editLine((o) => o.kind === "session", (o) => (o.head_ledger_id = ctx.id));
  assert.throws(() => kura.verifySessionExport(other, info.public_key), (e) => ["head_hash", "head"].includes(e.what));
  throwsWhat(() => kura.verifySessionExport(exportLines, info.public_key, { expectHeadHash: "6".repeat(64) }), "chain");
});

test("export with a tampered log section: log_signature, log_proof, log_leaf, log_root", () => {
  const sig = editLine((o) => o.kind === "session", (o) => {
    const parts = o.log.checkpoint.split(" ");
    const last = parts.pop();
    o.log.checkpoint = parts.join(" ") + " " + (last[6] === "A" ? last.slice(0, 6) + "B" + last.slice(7) : last.slice(0, 6) + "A" + last.slice(7));
  });
  throwsWhat(() => kura.verifySessionExport(sig, info.public_key), "log_signature");
  const proof = editLine((o) => o.kind === "session", (o) => (o.log.inclusions[0].proof[0] = Buffer.alloc(32, 7).toString("base64")));
  throwsWhat(() => kura.verifySessionExport(proof, info.public_key), "log_proof");
  const leaf = editLine((o) => o.kind === "session", (o) => {
    const inc = o.log.inclusions[0];
    const data = JSON.parse(Buffer.from(inc.leaf, "base64").toString());
    data.digest = "8".repeat(64);
    inc.leaf = Buffer.from(JSON.stringify(data)).toString("base64");
  });
  throwsWhat(() => kura.verifySessionExport(leaf, info.public_key), "log_leaf");
  const size = editLine((o) => o.kind === "session", (o) => (o.log.inclusions[0].size -= 1));
  throwsWhat(() => kura.verifySessionExport(size, info.public_key), "log_root");
});

test("log checkpoint: valid, tampered signature, wrong key", async () => {
  const text = await c.logCheckpoint();
  const cp = kura.verifyCheckpoint(text, info.log_vkey);
  assert.equal(cp.origin, info.log_origin);
  assert.ok(cp.size > 10);
  assert.equal((await kura.verifyCheckpointAsync(text, info.log_vkey)).root, cp.root);
  assert.equal(kura.logVKey(info.log_origin, info.public_key), info.log_vkey);
  const body = text.slice(0, text.indexOf("\n\n") + 2);
  const forgedSize = text.replace(/^([^\n]*\n)(\d+)\n/, (_, o, n) => `${o}${Number(n) + 1}\n`);
  throwsWhat(() => kura.verifyCheckpoint(forgedSize, info.log_vkey), "log_signature");
  const sigLine = text.slice(body.length);
  const b = Buffer.from(sigLine.trim().split(" ").pop(), "base64");
  b[10] ^= 1;
  throwsWhat(() => kura.verifyCheckpoint(body + sigLine.replace(/\S+\n$/, b.toString("base64") + "\n"), info.log_vkey), "log_signature");
  const otherKey = kura.logVKey(info.log_origin, "ed25519:" + "cd".repeat(32));
  throwsWhat(() => kura.verifyCheckpoint(text, otherKey), "log_signature");
  assert.throws(() => kura.verifyCheckpoint(text, "garbage"), /not a note verifier key/);
});

test("log inclusion and consistency proofs from kurad", async () => {
  const old = kura.verifyCheckpoint(await c.logCheckpoint(), info.log_vkey);
  await c.putRecord({ type: "agent.thought", content: { more: 1 }, author_id: "agent:bmo" });
  await c.putRecord({ type: "agent.thought", content: { more: 2 }, author_id: "agent:bmo" });
  const cur = kura.verifyCheckpoint(await c.logCheckpoint(), info.log_vkey);
  assert.ok(cur.size > old.size);
  const inc = await c.logInclusion({ ledger_id: head.id, size: cur.size });
  const data = kura.verifyLogInclusion(inc, cur);
  assert.equal(JSON.parse(new TextDecoder().decode(data)).digest, head.hash);
  await kura.verifyLogInclusionAsync(inc, cur);
  for (const seq of [1, cur.size]) kura.verifyLogInclusion(await c.logInclusion({ seq, size: cur.size }), cur);
  const bad = clone(inc);
  bad.proof[1] = Buffer.alloc(32).toString("base64");
  throwsWhat(() => kura.verifyLogInclusion(bad, cur), "log_proof");
  throwsWhat(() => kura.verifyLogInclusion(inc, old), "log_root");
  const cons = await c.logConsistency(old.size, cur.size);
  kura.verifyLogConsistency(cons, old, cur);
  await kura.verifyLogConsistencyAsync(cons, old, cur);
  const badc = clone(cons);
  badc.proof[0] = Buffer.alloc(32, 9).toString("base64");
  throwsWhat(() => kura.verifyLogConsistency(badc, old, cur), "log_consistency");
  throwsWhat(() => kura.verifyLogConsistency(null, cur, old), "log_consistency"); // smaller: rolled back
  const fork = { ...cur, root: "x", rootBytes: new Uint8Array(32) };
  throwsWhat(() => kura.verifyLogConsistency(null, cur, fork), "log_consistency");
});

test("witness cosignatures (C2SP tlog-cosignature)", async () => {
  const text = await c.logCheckpoint();
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  const raw = publicKey.export({ format: "jwk" }).x;
  const pub = Buffer.from(raw, "base64url");
  const name = "witness.example/w1";
  const kh = createHash("sha256").update(Buffer.concat([Buffer.from(name + "\n"), Buffer.from([4]), pub])).digest().subarray(0, 4);
  const wvkey = `${name}+${kh.toString("hex")}+${Buffer.concat([Buffer.from([4]), pub]).toString("base64")}`;
  const body = text.slice(0, text.indexOf("\n\n") + 1);
  const ts = Buffer.alloc(8);
  ts.writeBigUInt64BE(1764000000n);
  const sig = sign(null, Buffer.concat([Buffer.from(`cosignature/v1\ntime 1764000000\n`), Buffer.from(body)]), privateKey);
  const line = `\u2014 ${name} ${Buffer.concat([kh, ts, sig]).toString("base64")}\n`;
  const cp = kura.verifyCheckpoint(text + line, info.log_vkey, [wvkey]);
  assert.deepEqual(cp.cosigners, [name]);
  assert.deepEqual((await kura.verifyCheckpointAsync(text + line, info.log_vkey, [wvkey])).cosigners, [name]);
  throwsWhat(() => kura.verifyCheckpoint(text, info.log_vkey, [wvkey]), "log_cosignature");
  const badTs = Buffer.from(ts);
  badTs[7] ^= 1;
  const forged = `\u2014 ${name} ${Buffer.concat([kh, badTs, sig]).toString("base64")}\n`;
  throwsWhat(() => kura.verifyCheckpoint(text + forged, info.log_vkey, [wvkey]), "log_cosignature");
});
