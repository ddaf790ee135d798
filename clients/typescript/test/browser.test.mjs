// Without node:crypto (as in a browser) the package still loads, the
// synchronous checks throw VerificationUnavailableError saying to use the
// Async variants, and those (WebCrypto) verify and catch tampering. A child
// process imports the package with globalThis.process hidden, which is how
// the verify module detects Node. The same in a real browser is Go's test
// TestBrowser_TypeScriptClient (headless Chromium, as the console's tests),
// run here on the dist just built.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { repoRoot } from "./helpers.mjs";

const vectors = JSON.parse(readFileSync(new URL("../../../kurahash/testdata/hashes.json", import.meta.url), "utf8"));

test("without node:crypto: Async variants work, sync ones explain", () => {
  const script = `
    const saved = globalThis.process;
    Object.defineProperty(globalThis, "process", { value: undefined, configurable: true, writable: true });
    const kura = await import(${JSON.stringify(new URL("../dist/index.js", import.meta.url).href)});
    globalThis.process = saved;
    const out = { available: kura.syncVerificationAvailable() };
    const rec = { id: "v0", ...${JSON.stringify(vectors.records[0])} };
    try { kura.verifyRecord(rec); out.sync = "passed"; } catch (e) { out.sync = e.message; out.syncName = e.name; out.syncKura = e instanceof kura.KuraError; }
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
  assert.equal(out.syncName, "VerificationUnavailableError");
  assert.equal(out.syncKura, true);
  assert.equal(out.async, vectors.records[0].seal);
  assert.equal(out.tamper, "content_hash");
  assert.equal(out.client, "function");
});

test("in a real browser: headless Chromium loads dist/ and verifies (go test TestBrowser_TypeScriptClient)", (t) => {
  const dist = fileURLToPath(new URL("../dist/", import.meta.url));
  // -race as make test builds the Go tests, so their compiled packages are reused.
  const r = spawnSync("go", ["test", "-race", "-count=1", "-v", "-run", "^TestBrowser_TypeScriptClient$", "./internal/ui/"], {
    cwd: repoRoot,
    env: { ...process.env, KURA_TS_DIST: dist },
    encoding: "utf8",
  });
  if (r.error?.code === "ENOENT") return t.skip("no go command to run the browser test with");
  const out = `${r.stdout}${r.stderr}`;
  if (r.status === 0 && out.includes("--- SKIP: TestBrowser_TypeScriptClient")) {
    return t.skip(/\.go:\d+: (.*)/.exec(out)?.[1] ?? "skipped");
  }
  assert.equal(r.status, 0, out);
  assert.match(out, /--- PASS: TestBrowser_TypeScriptClient/);
});
