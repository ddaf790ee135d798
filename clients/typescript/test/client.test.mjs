// KuraClient against a real kurad: turns, memory, context, KB, events,
// typed errors, retries with the same Idempotency-Key, timeouts, auth.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { createHash, randomBytes } from "node:crypto";
import * as kura from "../dist/index.js";
import { startKurad, startProxy } from "./helpers.mjs";

let k, c;

before(async () => {
  k = await startKurad();
  c = new kura.KuraClient({ baseUrl: k.url, backoffMs: 20, maxBackoffMs: 100 });
});
after(async () => {
  await k?.stop();
});

async function apiError(p, code, status) {
  await assert.rejects(p, (e) => {
    assert.ok(e instanceof kura.KuraApiError, `not a KuraApiError: ${e}`);
    assert.ok(e instanceof kura.KuraError);
    assert.equal(e.code, code, e.message);
    if (status) assert.equal(e.status, status);
    return true;
  });
}

test("a full turn: open with memory, claim, renew, append, close with the epoch; a stale epoch is a conflict", async () => {
  const s = await c.createSession({ project: "life", name: "cycle" });
  await c.putNode("life", { kind: "fact", id: "sky", title: "The sky", summary: "The sky is blue", lifecycle: "active", authority: "trusted" });
  const t = await c.openTurn(s.id, { instruction: { content: "What colour is the sky?", author_id: "user:oles" }, memory: { query: "sky" } });
  assert.equal(t.state, "open");
  assert.ok(t.context_bundle_id, "opened with memory");
  const cl = await c.claimTurn(t.id, { worker: "agent:a", lease_seconds: 30 });
  assert.equal(cl.epoch, 1);
  await apiError(c.claimTurn(t.id, { worker: "agent:b" }), "conflict", 409);
  const rn = await c.renewTurn(t.id, { epoch: 1, lease_seconds: 60 });
  assert.equal(rn.epoch, 1);
  const ap = await c.appendTurn(t.id, { epoch: 1, records: [{ type: "agent.thought", content: { text: "look up" }, author_id: "agent:a" }] });
  assert.equal(ap.output_record_ids.length, 1);
  await assert.rejects(c.appendTurn(t.id, { epoch: 0, records: [{ type: "agent.thought", content: "stale", author_id: "agent:a" }] }), (e) => {
    assert.equal(e.code, "conflict");
    assert.equal(e.details.epoch, 1);
    return true;
  });
  await c.appendTurn(t.id, { epoch: 1, records: [{ type: "memory.fact", content: { title: "Sky", summary: "blue by day" }, author_id: "agent:a" }, { type: "task.deliverable", content: "blue", author_id: "agent:a" }] });
  const closed = await c.closeTurn(t.id, { epoch: 1 });
  assert.equal(closed.state, "complete");
  assert.equal(closed.extracted.length, 1);
  await apiError(c.closeTurn(t.id, { epoch: 1 }), "conflict", 409);
  assert.equal((await c.getTurn(t.id)).state, "complete");
  assert.equal((await c.listTurns({ session_id: s.id })).turns.length, 1);
  assert.equal((await c.getSession(s.id)).head_ledger_id, closed.output_ledger_id);
  assert.equal((await c.reflog(s.id)).length, 2);
  const v = await c.verifySession(s.id);
  assert.equal(v.ledgersChecked, 2);
  // Provenance of the extracted node leads back to its record.
  const prov = await c.provenance("life", closed.extracted[0], { direction: "backward" });
  assert.ok(JSON.stringify(prov).includes(ap.records[0].id) || JSON.stringify(prov).includes(closed.extracted[0].split(":")[1]), JSON.stringify(prov).slice(0, 300));
});

test("memory: put, get, versions, search, transition", async () => {
  const n = await c.putNode("mem", { kind: "belief", id: "api-rest", title: "REST is fast enough", summary: "Keep the API on REST/JSON", lifecycle: "active", authority: "trusted", confidence: 0.8 });
  assert.equal(n.ref, "belief:api-rest");
  assert.equal((await c.getNode("mem", "belief:api-rest")).version, 1);
  await c.putNode("mem", { kind: "belief", id: "api-rest", summary: "Keep REST; stream events over SSE" });
  const hist = await c.nodeVersions("mem", "belief:api-rest");
  assert.ok(JSON.stringify(hist).includes("stream events"));
  const found = await c.searchMemory("mem", { q: "rest api" });
  assert.ok(JSON.stringify(found).includes("belief:api-rest"));
  const listed = await c.listNodes("mem", { kind: "belief" });
  assert.equal(listed.nodes.length, 1);
  await apiError(c.getNode("mem", "belief:nope"), "not_found", 404);
});

test("context preview and compile", async () => {
  await c.putNode("ctx", { kind: "decision", id: "use-sqlite", title: "SQLite", summary: "One SQLite file is the truth", lifecycle: "active", authority: "trusted" });
  const p = await c.previewContext("ctx", { query: "sqlite" });
  assert.ok(JSON.stringify(p).includes("decision:use-sqlite"));
  const b = await c.compileContext("ctx", { query: "sqlite" });
  assert.ok(b.id || b.bundle_id || b.context_bundle_id, JSON.stringify(b).slice(0, 200));
  const got = await c.getBundle("ctx", b.id ?? b.bundle_id ?? b.context_bundle_id);
  assert.ok(JSON.stringify(got).includes("decision:use-sqlite"));
});

test("knowledge base: put, get, search, lookup", async () => {
  const e = await c.kbPut("chains", { identifier: "Uniswap contract addresses on Ethereum mainnet.", keys: ["Uniswap", "Contract Address", "Ethereum"], value: "Router: 0x456" });
  assert.equal(e.version, 1);
  const got = await c.kbGet("chains", { identifier: "Uniswap contract addresses on Ethereum mainnet." });
  assert.ok(JSON.stringify(got).includes("Router: 0x456"));
  const s = await c.kbSearch("chains", { q: "what is the uniswap router address" });
  assert.ok(JSON.stringify(s).includes("Router: 0x456"));
  const l = await c.kbLookup("chains", { q: "uniswap router" });
  assert.ok(JSON.stringify(l).includes("0x456"));
});

test("typed errors carry the API's code and details", async () => {
  await apiError(c.getRecord("01a1fd55-7af8-716c-84cd-f4386ae15fee"), "not_found", 404);
  await assert.rejects(c.putRecord({ type: "agent.dream", content: 1, author_id: "agent:a" }), (e) => {
    assert.equal(e.code, "invalid_argument");
    assert.equal(e.details.field, "type");
    assert.ok(e.details.allowed.includes("agent.thought"));
    return true;
  });
  await apiError(c.events({ type: "turn.closed" }), "invalid_argument", 400);
});

test("events: list, long poll, SSE follow and poll follow", async () => {
  const start = (await c.info()).last_event_seq;
  const s = await c.createSession({ project: "ev", name: "one" });
  const page = await c.events({ after: start });
  assert.equal(page.events[0].type, "session.created");
  assert.equal(page.events[0].session_id, s.id);
  // Long poll: a write after the poll started ends it with that event.
  const t0 = Date.now();
  const poll = c.events({ after: page.last_seq, wait: 10, type: "record.written" });
  setTimeout(() => c.putRecord({ type: "agent.thought", content: { poll: true }, author_id: "agent:a" }), 100);
  const got = await poll;
  assert.equal(got.events.length, 1);
  assert.ok(Date.now() - t0 < 5000);
  for (const mode of ["sse", "poll"]) {
    const ac = new AbortController();
    const seen = [];
    const it = c.follow({ after: start, mode, signal: ac.signal, waitSeconds: 5 });
    for await (const e of it) {
      seen.push(e);
      if (e.type === "record.written") break;
    }
    ac.abort();
    assert.deepEqual(seen.map((e) => e.type), ["session.created", "record.written"], mode);
  }
});

test("SSE follow resumes after a dropped connection without skipping or repeating", async () => {
  const start = (await c.info()).last_event_seq;
  for (let i = 0; i < 3; i++) await c.putRecord({ type: "agent.thought", content: { sse: i }, author_id: "agent:a" });
  const proxy = await startProxy(k.url, { onResponse: (req, res, n) => (n === 0 ? "cut-stream" : undefined) });
  try {
    const pc = new kura.KuraClient({ baseUrl: proxy.url, backoffMs: 10, maxBackoffMs: 20 });
    const ac = new AbortController();
    const seqs = [];
    for await (const e of pc.follow({ after: start, signal: ac.signal })) {
      seqs.push(e.seq);
      if (seqs.length === 3) break;
    }
    ac.abort();
    assert.deepEqual(seqs, [start + 1, start + 2, start + 3]);
    const streams = proxy.seen.filter((r) => r.url.startsWith("/v1/events/stream"));
    assert.ok(streams.length >= 2, "the stream was cut and reopened");
    assert.match(streams[1].url, new RegExp(`after=${start + 1}(&|$)`));
  } finally {
    await proxy.close();
  }
});

test("a write whose answer is lost is retried with the same Idempotency-Key and replayed", async () => {
  const s = await c.createSession({ project: "retry", name: "one" });
  const t = await c.openTurn(s.id, { instruction: { content: "go", author_id: "user:oles" } });
  const proxy = await startProxy(k.url, { onResponse: (req, res, n) => (n === 0 ? "drop" : undefined) });
  try {
    const pc = new kura.KuraClient({ baseUrl: proxy.url, backoffMs: 10, maxBackoffMs: 20 });
    const ap = await pc.appendTurn(t.id, { records: [{ type: "task.deliverable", content: "once", author_id: "agent:a" }] });
    assert.equal(ap.output_record_ids.length, 1);
    assert.equal(proxy.seen.length, 2);
    const [first, second] = proxy.seen;
    assert.ok(first.headers["idempotency-key"]);
    assert.equal(second.headers["idempotency-key"], first.headers["idempotency-key"]);
    assert.equal(second.resHeaders["idempotent-replayed"], "true");
    assert.deepEqual((await c.getTurn(t.id)).output_record_ids, ap.output_record_ids, "written once");
    // The caller's own key is sent as given.
    const closed = await pc.closeTurn(t.id, {}, { idempotencyKey: "close-" + t.id });
    assert.equal(closed.state, "complete");
    assert.equal(proxy.seen[2].headers["idempotency-key"], "close-" + t.id);
  } finally {
    await proxy.close();
  }
});

test("a write without a key is never retried; a read is retried on 503", async () => {
  const proxy = await startProxy(k.url, { onResponse: (req, res, n) => (n === 0 ? (req.method === "GET" ? "unavailable" : "drop") : undefined) });
  try {
    const pc = new kura.KuraClient({ baseUrl: proxy.url, idempotencyKeys: false, backoffMs: 10, maxBackoffMs: 20 });
    await assert.rejects(pc.createSession({ project: "retry", name: "nokey" }), kura.KuraConnectionError);
    assert.equal(proxy.seen.length, 1);
    assert.equal(proxy.seen[0].headers["idempotency-key"], undefined);
    proxy.seen.length = 0;
    const info = await pc.info();
    assert.ok(info.public_key);
    assert.deepEqual(proxy.seen.map((r) => r.status), [200, 200]);
  } finally {
    await proxy.close();
  }
  // Retries are bounded: a server that always answers 503 gives the typed error after retries+1 tries.
  let n = 0;
  const srv = http.createServer((req, res) => {
    n++;
    res.writeHead(503, { "content-type": "application/json", "retry-after": "0" });
    res.end('{"error":{"code":"unavailable","message":"down"}}');
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  try {
    const pc = new kura.KuraClient({ baseUrl: `http://127.0.0.1:${srv.address().port}`, retries: 2, backoffMs: 5 });
    await apiError(pc.info(), "unavailable", 503);
    assert.equal(n, 3);
  } finally {
    srv.closeAllConnections();
    await new Promise((r) => srv.close(r));
  }
});

test("timeouts and refused connections are typed", async () => {
  const srv = http.createServer(() => {}); // never answers
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  const port = srv.address().port;
  try {
    const pc = new kura.KuraClient({ baseUrl: `http://127.0.0.1:${port}`, timeoutMs: 150, retries: 1, backoffMs: 5 });
    await assert.rejects(pc.info(), kura.KuraTimeoutError);
  } finally {
    srv.closeAllConnections();
    await new Promise((r) => srv.close(r));
  }
  const pc = new kura.KuraClient({ baseUrl: `http://127.0.0.1:${port}`, retries: 1, backoffMs: 5 });
  await assert.rejects(pc.info(), (e) => e instanceof kura.KuraConnectionError && !(e instanceof kura.KuraTimeoutError));
});

test("with tokens: no token is unauthenticated, a reader writing is permission_denied", async () => {
  const tok = (id, role) => {
    const t = randomBytes(32).toString("hex");
    return { t, line: `${createHash("sha256").update(t).digest("hex")} ${id} ${role} * *` };
  };
  const w = tok("agent:w", "writer"), r = tok("agent:r", "reader");
  const ka = await startKurad({ tokens: [w.line, r.line] });
  try {
    await apiError(new kura.KuraClient({ baseUrl: ka.url, token: "" }).info(), "unauthenticated", 401);
    await apiError(new kura.KuraClient({ baseUrl: ka.url, token: r.t }).putRecord({ type: "agent.thought", content: 1, author_id: "agent:r" }), "permission_denied", 403);
    const rec = await new kura.KuraClient({ baseUrl: ka.url, token: w.t }).putRecord({ type: "agent.thought", content: 1, author_id: "agent:w" });
    kura.verifyRecord(rec);
  } finally {
    await ka.stop();
  }
});

test("an internal error's request id is carried", async () => {
  const srv = http.createServer((req, res) => {
    res.writeHead(500, { "content-type": "application/json" });
    res.end('{"error":{"code":"internal","message":"internal error (request kura-host/Xb3mq9TzQp-000042)"}}');
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  try {
    const pc = new kura.KuraClient({ baseUrl: `http://127.0.0.1:${srv.address().port}` });
    await assert.rejects(pc.info(), (e) => e.code === "internal" && e.requestId === "kura-host/Xb3mq9TzQp-000042");
  } finally {
    srv.closeAllConnections();
    await new Promise((r) => srv.close(r));
  }
});
