// The TypeScript agent example, compiled with this package's tsc and run
// end to end against a real kurad with KURA_URL set.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, mkdirSync, symlinkSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startKurad, repoRoot } from "./helpers.mjs";

const pkgDir = fileURLToPath(new URL("..", import.meta.url));
let k, out;

before(async () => {
  k = await startKurad();
  out = mkdtempSync(join(tmpdir(), "kura-ts-agent-"));
  // The compiled agent imports @kura-memory/client: resolve it to this package.
  mkdirSync(join(out, "node_modules", "@kura-memory"), { recursive: true });
  symlinkSync(pkgDir, join(out, "node_modules", "@kura-memory", "client"), "dir");
});
after(async () => {
  await k?.stop();
  if (out) rmSync(out, { recursive: true, force: true });
});

test("examples/ts-agent compiles and runs a verified turn", () => {
  execFileSync(join(pkgDir, "node_modules", ".bin", "tsc"), ["-p", join(repoRoot, "examples", "ts-agent", "tsconfig.json"), "--outDir", out], { stdio: "inherit" });
  const r = spawnSync(process.execPath, [join(out, "agent.js")], { env: { ...process.env, KURA_URL: k.url }, encoding: "utf8", timeout: 30_000 });
  assert.equal(r.status, 0, r.stderr + r.stdout);
  assert.match(r.stdout, /^verified: session [0-9a-f-]{36}: 2 ledgers, \d+ records, 2 head moves, log checkpoint kura\/\S+ size \d+ \(2 ledgers proved\)$/m);
  assert.match(r.stdout, /deliverable: Keep the API on REST\/JSON \(1 memory item\(s\) consulted\)/);
});

test("the example exits non-zero when kurad is not there", () => {
  const r = spawnSync(process.execPath, [join(out, "agent.js")], { env: { ...process.env, KURA_URL: "http://127.0.0.1:9" }, encoding: "utf8", timeout: 60_000 });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /agent failed/);
});
