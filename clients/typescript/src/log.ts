// kurad's log (docs/log.md): C2SP checkpoint signed notes, witness
// cosignatures and RFC 6962/9162 inclusion and consistency proofs. Each
// check is a generator (ops.ts) with a synchronous (node:crypto) and an
// Async (WebCrypto) form.

import { concat, equalBytes, fromBase64, fromHex, toBase64, toHex, utf8 } from "./bytes.js";
import { VerificationError, problem } from "./errors.js";
import { inclusionRootMatchesG, leafHashG, nodeHashG } from "./hashes.js";
import { type Check, ed25519Verify, runAsync, runSync, sha256 } from "./ops.js";
import type { LogConsistencyProof, LogInclusionProof } from "./types.js";

/** A checkpoint whose log signature verified. */
export interface Checkpoint {
  origin: string;
  size: number;
  /** The tree root, base64 as in the note. */
  root: string;
  rootBytes: Uint8Array;
  /** The note as given, signatures included. */
  text: string;
  /** Names of the witnesses whose cosignatures were checked. */
  cosigners: string[];
  /** Names of the other signature lines (not checked). */
  unverified: string[];
}

/** A parsed note verifier key: name+hex8+base64(alg || key). */
interface VKey {
  name: string;
  keyHash: Uint8Array;
  alg: number;
  key: Uint8Array;
}

const ALG_ED25519 = 0x01;
const ALG_COSIGNATURE_V1 = 0x04;

function* keyHashG(name: string, alg: number, key: Uint8Array): Check<Uint8Array> {
  return (yield* sha256(concat(utf8(name + "\n"), new Uint8Array([alg]), key))).slice(0, 4);
}

function* parseVKeyG(vkey: string, wantAlg: number): Check<VKey> {
  // base64 may hold "+" too: the name ends at the first "+", the key hash is 8 hex digits.
  const m = typeof vkey === "string" ? /^([^+\s]+)\+([0-9a-fA-F]{8})\+([A-Za-z0-9+/=]+)$/.exec(vkey) : null;
  const parts = m ? [m[1], m[2], m[3]] : [];
  const raw = m ? fromBase64(parts[2]) : null;
  const kh = m ? fromHex(parts[1]) : null;
  if (!raw || !kh || raw.length !== 33) {
    throw new TypeError(`kura: ${JSON.stringify(vkey)} is not a note verifier key (name+hex8+base64)`);
  }
  if (raw[0] !== wantAlg) {
    throw new TypeError(`kura: verifier key ${parts[0]} has algorithm 0x${raw[0].toString(16)}, want 0x0${wantAlg}`);
  }
  const key = raw.slice(1);
  const want = yield* keyHashG(parts[0], raw[0], key);
  if (!equalBytes(want, kh)) throw new TypeError(`kura: verifier key ${parts[0]}: key hash ${parts[1]} does not match its key`);
  return { name: parts[0], keyHash: kh, alg: raw[0], key };
}

/** The log verifier key of origin for kurad's public key ("ed25519:<hex>"): kurad signs checkpoints with its ledger key. */
export function* logVKeyG(origin: string, publicKey: string): Check<string> {
  const key = parsePublicKey(publicKey);
  const kh = yield* keyHashG(origin, ALG_ED25519, key);
  return `${origin}+${toHex(kh)}+${toBase64(concat(new Uint8Array([ALG_ED25519]), key))}`;
}

/** Decodes "ed25519:<64 hex>" (/v1/info public_key). */
export function parsePublicKey(publicKey: string): Uint8Array {
  const m = typeof publicKey === "string" ? /^ed25519:([0-9a-fA-F]{64})$/.exec(publicKey.trim()) : null;
  if (!m) throw new TypeError(`kura: public key ${JSON.stringify(publicKey)} is not ed25519:<64 hex digits> (as /v1/info publishes it)`);
  return fromHex(m[1])!;
}

interface Note {
  body: string;
  origin: string;
  size: number;
  rootBytes: Uint8Array;
  sigs: { name: string; keyHash: Uint8Array; sig: Uint8Array }[];
}

function parseNote(text: string): Note {
  const fail = (why: string): never => {
    throw new VerificationError(problem("log_signature", "checkpoint", undefined, undefined, why));
  };
  if (typeof text !== "string") fail("not a text note");
  const cut = text.indexOf("\n\n");
  if (cut < 0 || !text.endsWith("\n")) fail("not a signed note (no blank line before the signatures, or no final newline)");
  const body = text.slice(0, cut + 1);
  const lines = body.slice(0, -1).split("\n");
  if (lines.length < 3) fail("the note body is not origin, size and root");
  const [origin, sizeText, rootText] = lines;
  if (!/^(0|[1-9][0-9]{0,15})$/.test(sizeText) || !Number.isSafeInteger(Number(sizeText))) fail(`size ${JSON.stringify(sizeText)} is not a decimal number`);
  const rootBytes = fromBase64(rootText);
  if (!rootBytes || rootBytes.length !== 32) fail(`root ${JSON.stringify(rootText)} is not a base64 SHA-256 hash`);
  const sigs: Note["sigs"] = [];
  for (const line of text.slice(cut + 2).split("\n")) {
    if (line === "") continue;
    const m = /^\u2014 (\S+) (\S+)$/.exec(line);
    const b = m ? fromBase64(m[2]) : null;
    if (!m || !b || b.length < 5) fail(`malformed signature line ${JSON.stringify(line)}`);
    sigs.push({ name: m![1], keyHash: b!.slice(0, 4), sig: b!.slice(4) });
  }
  if (sigs.length === 0) fail("the note carries no signature");
  return { body, origin, size: Number(sizeText), rootBytes: rootBytes!, sigs };
}

/**
 * Checks a C2SP checkpoint signed note against kurad's log verifier key
 * (/v1/info log_vkey; its name must be the checkpoint's origin) and, when
 * witnessVKeys are given, that each of those witnesses cosigned it (C2SP
 * tlog-cosignature). Throws VerificationError with what "log_signature" or
 * "log_cosignature".
 */
export function* verifyCheckpointG(text: string, logVKey: string, witnessVKeys: readonly string[] = []): Check<Checkpoint> {
  const n = parseNote(text);
  const v = yield* parseVKeyG(logVKey, ALG_ED25519);
  const obj = `checkpoint ${n.origin}/${n.size}`;
  if (v.name !== n.origin) {
    throw new VerificationError(problem("log_signature", obj, n.origin, v.name, "the verifier key is not named after the checkpoint's origin"));
  }
  const body = utf8(n.body);
  let signed = false;
  const used = new Set<number>();
  for (let i = 0; i < n.sigs.length; i++) {
    const s = n.sigs[i];
    if (s.name !== v.name || !equalBytes(s.keyHash, v.keyHash)) continue;
    used.add(i);
    if (!(yield* ed25519Verify(v.key, body, s.sig))) {
      throw new VerificationError(problem("log_signature", obj, undefined, undefined, `the signature of ${v.name} does not verify`));
    }
    signed = true;
  }
  if (!signed) throw new VerificationError(problem("log_signature", obj, undefined, undefined, `not signed by ${v.name}+${toHex(v.keyHash)}`));
  const cosigners: string[] = [];
  for (const wk of witnessVKeys) {
    const w = yield* parseVKeyG(wk, ALG_COSIGNATURE_V1);
    let ok = false;
    for (let i = 0; i < n.sigs.length; i++) {
      const s = n.sigs[i];
      if (s.name !== w.name || !equalBytes(s.keyHash, w.keyHash)) continue;
      used.add(i);
      if (s.sig.length !== 72) {
        throw new VerificationError(problem("log_cosignature", obj, undefined, undefined, `the cosignature of ${w.name} is not a timestamp and an Ed25519 signature`));
      }
      let t = 0n;
      for (let j = 0; j < 8; j++) t = (t << 8n) | BigInt(s.sig[j]);
      const msg = concat(utf8(`cosignature/v1\ntime ${t}\n`), body);
      if (!(yield* ed25519Verify(w.key, msg, s.sig.slice(8)))) {
        throw new VerificationError(problem("log_cosignature", obj, undefined, undefined, `the cosignature of witness ${w.name} does not verify`));
      }
      ok = true;
    }
    if (!ok) throw new VerificationError(problem("log_cosignature", obj, undefined, undefined, `no cosignature of witness ${w.name}`));
    cosigners.push(w.name);
  }
  const unverified = n.sigs.filter((_, i) => !used.has(i)).map((s) => s.name);
  return { origin: n.origin, size: n.size, root: toBase64(n.rootBytes), rootBytes: n.rootBytes, text, cosigners, unverified };
}

function decodeProof(proof: unknown, obj: string, what: "log_proof" | "log_consistency"): Uint8Array[] {
  if (!Array.isArray(proof)) throw new VerificationError(problem(what, obj, undefined, undefined, "the proof is not a list of hashes"));
  return proof.map((p, i) => {
    const b = fromBase64(p);
    if (!b || b.length !== 32) throw new VerificationError(problem(what, obj, undefined, undefined, `proof hash ${i} is not a base64 SHA-256 hash`));
    return b;
  });
}

/**
 * Checks a log inclusion proof (GET /v1/log/inclusion) against a verified
 * checkpoint: the proof is for the checkpoint's tree size ("log_root"), the
 * leaf data, when present, hashes to leaf_hash ("log_leaf"), and the path
 * leads from the leaf to the checkpoint's root ("log_proof"). Returns the
 * leaf data when the proof carried it.
 */
export function* verifyLogInclusionG(proof: LogInclusionProof, checkpoint: Checkpoint): Check<Uint8Array | null> {
  if (!proof || typeof proof !== "object") throw new TypeError("kura: verify log inclusion: the proof is not an object (pass GET /v1/log/inclusion as answered)");
  const obj = `log inclusion of seq ${proof.seq}`;
  // A missing or malformed seq or size is kurad's answer failing, like a wrong one.
  if (!Number.isSafeInteger(proof.seq)) throw new VerificationError(problem("log_proof", obj, undefined, undefined, `the "seq" field is missing or not an integer`));
  if (!Number.isSafeInteger(proof.size)) throw new VerificationError(problem("log_root", obj, undefined, undefined, `the "size" field is missing or not an integer`));
  if (proof.size !== checkpoint.size) {
    throw new VerificationError(problem("log_root", obj, String(checkpoint.size), String(proof.size), "the proof is for another tree size than the checkpoint's"));
  }
  const lh = fromBase64(proof.leaf_hash);
  if (!lh || lh.length !== 32) throw new VerificationError(problem("log_leaf", obj, undefined, proof.leaf_hash, "leaf_hash is not a base64 SHA-256 hash"));
  let data: Uint8Array | null = null;
  if (proof.leaf !== undefined && proof.leaf !== "") {
    data = fromBase64(proof.leaf);
    if (!data) throw new VerificationError(problem("log_leaf", obj, undefined, undefined, "leaf data is not base64"));
    const got = yield* leafHashG(data);
    if (!equalBytes(got, lh)) throw new VerificationError(problem("log_leaf", obj, proof.leaf_hash, toBase64(got), "the leaf data does not hash to leaf_hash"));
  }
  const path = decodeProof(proof.proof, obj, "log_proof");
  if (!(yield* inclusionRootMatchesG(lh, proof.seq - 1, checkpoint.size, path, checkpoint.rootBytes))) {
    throw new VerificationError(problem("log_proof", obj, checkpoint.root, undefined, `the inclusion path does not lead to the root of the tree of size ${checkpoint.size}`));
  }
  return data;
}

/**
 * Checks that newer extends older (GET /v1/log/consistency?old=&new=): same
 * origin, not smaller, the same root at the same size, else an RFC 9162
 * §2.1.4.2 consistency proof. Throws VerificationError "log_consistency".
 */
export function* verifyLogConsistencyG(proof: LogConsistencyProof | null, older: Checkpoint, newer: Checkpoint): Check<void> {
  const obj = `log ${older.origin} ${older.size} -> ${newer.size}`;
  const fail = (detail: string, exp?: string, got?: string): never => {
    throw new VerificationError(problem("log_consistency", obj, exp, got, detail));
  };
  if (older.origin !== newer.origin) fail("the checkpoints are of different origins", older.origin, newer.origin);
  if (newer.size < older.size) fail("the newer tree is smaller (rolled back or truncated)", String(older.size), String(newer.size));
  if (newer.size === older.size) {
    if (!equalBytes(older.rootBytes, newer.rootBytes)) fail("two different roots at the same size (a fork)", older.root, newer.root);
    return;
  }
  if (older.size === 0) return; // the empty tree is a prefix of every tree
  if (!proof || proof.old !== older.size || proof.new !== newer.size) {
    fail("the proof is not for these two sizes", `${older.size}->${newer.size}`, proof ? `${proof.old}->${proof.new}` : "none");
  }
  let path = decodeProof(proof!.proof, obj, "log_consistency");
  const odd = (x: number) => x % 2 === 1;
  const half = (x: number) => Math.floor(x / 2);
  const isPow2 = (x: number) => x > 0 && Number.isInteger(Math.log2(x));
  if (isPow2(older.size)) path = [older.rootBytes, ...path];
  if (path.length === 0) fail("empty consistency proof");
  let fn = older.size - 1, sn = newer.size - 1;
  while (odd(fn)) {
    fn = half(fn);
    sn = half(sn);
  }
  let fr = path[0], sr = path[0];
  for (const c of path.slice(1)) {
    if (sn === 0) fail("the proof is too long");
    if (odd(fn) || fn === sn) {
      fr = yield* nodeHashG(c, fr);
      sr = yield* nodeHashG(c, sr);
      while (!odd(fn) && fn !== 0) {
        fn = half(fn);
        sn = half(sn);
      }
    } else {
      sr = yield* nodeHashG(sr, c);
    }
    fn = half(fn);
    sn = half(sn);
  }
  if (sn !== 0 || !equalBytes(fr, older.rootBytes) || !equalBytes(sr, newer.rootBytes)) {
    fail("the consistency proof does not lead to both roots", newer.root, toBase64(sr));
  }
}

export const verifyCheckpoint = (text: string, logVKey: string, witnessVKeys: readonly string[] = []): Checkpoint =>
  runSync(verifyCheckpointG(text, logVKey, witnessVKeys));
export const verifyLogInclusion = (proof: LogInclusionProof, checkpoint: Checkpoint): Uint8Array | null =>
  runSync(verifyLogInclusionG(proof, checkpoint));
export const verifyLogConsistency = (proof: LogConsistencyProof | null, older: Checkpoint, newer: Checkpoint): void =>
  runSync(verifyLogConsistencyG(proof, older, newer));
export const logVKey = (origin: string, publicKey: string): string => runSync(logVKeyG(origin, publicKey));

export const verifyCheckpointAsync = (text: string, logVKey: string, witnessVKeys: readonly string[] = []): Promise<Checkpoint> =>
  runAsync(verifyCheckpointG(text, logVKey, witnessVKeys));
export const verifyLogInclusionAsync = (proof: LogInclusionProof, checkpoint: Checkpoint): Promise<Uint8Array | null> =>
  runAsync(verifyLogInclusionG(proof, checkpoint));
export const verifyLogConsistencyAsync = (proof: LogConsistencyProof | null, older: Checkpoint, newer: Checkpoint): Promise<void> =>
  runAsync(verifyLogConsistencyG(proof, older, newer));
export const logVKeyAsync = (origin: string, publicKey: string): Promise<string> => runAsync(logVKeyG(origin, publicKey));
