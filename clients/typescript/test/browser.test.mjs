// Without node:crypto (as in a browser) the package still loads, the
// synchronous checks say to use the Async variants, and those (WebCrypto)
// verify and catch tampering. A child process imports the package with
// globalThis.process hidden, which is how the verify module detects Node.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";

const vectors = JSON.parse(readFileSync(new URL("../../../kurahash/testdata/hashes.json", import.meta.url), "utf8"));

test("without node:crypto: Async variants work, sync ones explain", () => {
  const script = `
    const saved = globalThis.process;
    Object.defineProperty(globalThis, "process", { value: undefined, configurable: true, writable: true });
    const kura = await import(${JSON.stringify(new URL("../dist/index.js", import.meta.url).href)});
    globalThis.process = saved;
    const out = { available: kura.syncVerificationAvailable() };
    const rec = { id: "v0", ...${JSON.stringify(vectors.records[0])} };
    try { kura.verifyRecord(rec); out.sync = "passed"; } catch (e) { out.sync = e.message; }
    out.async = (await kura.verifyRecordAsync(rec)).seal;
    try { await kura.verifyRecordAsync({ ...rec, content: { text: "forged" } }); out.tamper = "passed"; } catch (e) { out.tamper = e.what; }
    out.client = typeof new kura.KuraClient({ baseUrl: "http://127.0.0.1:9" }).info;
    console.log(JSON.stringify(out));
  `;
  const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.equal(out.available, false);
  assert.match(out.sync, /use the Async variants/);
  assert.equal(out.async, vectors.records[0].seal);
  assert.equal(out.tamper, "content_hash");
  assert.equal(out.client, "function");
});
