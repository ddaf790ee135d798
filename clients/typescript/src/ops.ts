// Every check in this package is written once, as a generator that yields
// the cryptographic operations it needs (a SHA-256 digest, an Ed25519
// signature check) and receives their results. Two drivers answer them:
// runSync with node:crypto, so that verifyRecord(r) and friends throw
// synchronously in Node, and runAsync with WebCrypto (crypto.subtle), so the
// same checks run in browsers as verifyRecordAsync(r) and friends.

import { VerificationUnavailableError } from "./errors.js";

/** One operation a check asks its driver to do. */
export type Op =
  | { op: "sha256"; data: Uint8Array }
  | { op: "ed25519"; key: Uint8Array; msg: Uint8Array; sig: Uint8Array };

/** A check: yields operations, receives their results, returns R. */
export type Check<R> = Generator<Op, R, any>;

/** SHA-256 of data (32 bytes), inside a check. */
export function* sha256(data: Uint8Array): Check<Uint8Array> {
  return (yield { op: "sha256", data }) as Uint8Array;
}

/** Whether sig is key's Ed25519 signature of msg, inside a check. */
export function* ed25519Verify(key: Uint8Array, msg: Uint8Array, sig: Uint8Array): Check<boolean> {
  return (yield { op: "ed25519", key, msg, sig }) as boolean;
}

// node:crypto, fetched lazily so that this module loads in a browser: Node
// 20.16 and later have process.getBuiltinModule; an older Node 20 gets it
// from a dynamic import guarded so that nothing is attempted elsewhere.
interface NodeCrypto {
  createHash(alg: string): { update(b: Uint8Array): { digest(): Uint8Array } };
  createPublicKey(o: { key: unknown; format: string }): unknown;
  verify(alg: null, data: Uint8Array, key: unknown, sig: Uint8Array): boolean;
}

const proc = (globalThis as any).process;
let nodeCrypto: NodeCrypto | null = null;
if (proc?.versions?.node) {
  try {
    nodeCrypto = proc.getBuiltinModule?.("node:crypto") ?? null;
    if (!nodeCrypto) {
      const spec = "node:crypto";
      nodeCrypto = (await import(/* @vite-ignore */ /* webpackIgnore: true */ spec)) as NodeCrypto;
    }
  } catch {
    nodeCrypto = null;
  }
}

/** Whether the synchronous checks (node:crypto) are available here. */
export function syncVerificationAvailable(): boolean {
  return nodeCrypto !== null;
}

function requireNodeCrypto(): NodeCrypto {
  if (!nodeCrypto) {
    throw new VerificationUnavailableError(
      "kura: synchronous verification needs node:crypto (Node 20 or later), so nothing was checked; in a browser use the Async variants (verifyRecordAsync, verifyLedgerAsync, ...), which use WebCrypto",
    );
  }
  return nodeCrypto;
}

function b64url(b: Uint8Array): string {
  let bin = "";
  for (let i = 0; i < b.length; i++) bin += String.fromCharCode(b[i]);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

const nodeKeys = new Map<string, unknown>();

function nodeAnswer(c: NodeCrypto, o: Op): unknown {
  if (o.op === "sha256") return new Uint8Array(c.createHash("sha256").update(o.data).digest());
  if (o.key.length !== 32 || o.sig.length !== 64) return false;
  const x = b64url(o.key);
  let k = nodeKeys.get(x);
  if (!k) {
    k = c.createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x }, format: "jwk" });
    nodeKeys.set(x, k);
  }
  return c.verify(null, o.msg, k, o.sig);
}

/** Runs a check to its end with node:crypto, synchronously. */
export function runSync<R>(check: Check<R>): R {
  const c = requireNodeCrypto();
  let step = check.next();
  while (!step.done) step = check.next(nodeAnswer(c, step.value));
  return step.value;
}

function subtle(): any {
  const s = (globalThis as any).crypto?.subtle;
  if (!s) throw new VerificationUnavailableError("kura: WebCrypto (crypto.subtle) is not available here (it needs a secure context in browsers: https or localhost), so nothing was checked");
  return s;
}

async function webAnswer(o: Op): Promise<unknown> {
  const s = subtle();
  if (o.op === "sha256") return new Uint8Array(await s.digest("SHA-256", o.data));
  if (o.key.length !== 32 || o.sig.length !== 64) return false;
  const k = await s.importKey("raw", o.key, { name: "Ed25519" }, false, ["verify"]);
  return s.verify({ name: "Ed25519" }, k, o.sig, o.msg);
}

/** Runs a check to its end with WebCrypto. */
export async function runAsync<R>(check: Check<R>): Promise<R> {
  let step = check.next();
  while (!step.done) step = check.next(await webAnswer(step.value));
  return step.value;
}
