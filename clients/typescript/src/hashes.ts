// Kura's hash definitions (shared/DESIGN.md "Hashes"), each written once as
// a check generator (see ops.ts) and exported in a synchronous form (Node,
// node:crypto) and an Async form (WebCrypto, browsers included).

import { concat, fromHex, toHex, utf8, equalBytes } from "./bytes.js";
import { canonicalize } from "./jcs.js";
import { type Check, runAsync, runSync, sha256 } from "./ops.js";

/** hex(SHA-256(bytes)), inside a check. */
export function* sumHexG(b: Uint8Array): Check<string> {
  return toHex(yield* sha256(b));
}

/** record.content_hash = hex(SHA-256(JCS(content))). */
export function* contentHashG(content: unknown): Check<string> {
  return yield* sumHexG(utf8(canonicalize(content)));
}

/** record.hash = hex(SHA-256(type + "\n" + content_hash + "\n" + author_id)). */
export function* recordHashG(type: string, contentHash: string, authorId: string): Check<string> {
  return yield* sumHexG(utf8(`${type}\n${contentHash}\n${authorId}`));
}

/** The RFC 8785 form of a record's metadata ({} when absent or empty). */
export function metadataJSON(metadata: Record<string, string> | null | undefined): string {
  return canonicalize(metadata ?? {});
}

/** record.seal = hex(SHA-256("kura-record-v1\n" + hash + "\n" + hex(SHA-256(JCS(metadata or {}))) + "\n" + created_at)). */
export function* recordSealG(hash: string, metadata: Record<string, string> | null | undefined, createdAt: string): Check<string> {
  const mh = yield* sumHexG(utf8(metadataJSON(metadata)));
  return yield* sumHexG(utf8(`kura-record-v1\n${hash}\n${mh}\n${createdAt}`));
}

/** ledger.hash = hex(SHA-256("kura-ledger-v1\n" + root + "\n" + parents joined by "," + "\n" + label + "\n" + created_at)). */
export function* ledgerHashG(rootHash: string, parentHashes: readonly string[], label: string, createdAt: string): Check<string> {
  return yield* sumHexG(utf8(`kura-ledger-v1\n${rootHash}\n${parentHashes.join(",")}\n${label}\n${createdAt}`));
}

/**
 * Why a ledger hash over these fields proves nothing, or null when it can
 * be verified. ledger.hash joins its fields with newlines and the parents'
 * hashes with commas: label "a\nb" with created_at T hashes exactly as
 * label "a" with created_at "b\nT". So a label or created_at holding a
 * control character (C0, DEL, C1), or a parent hash that is not lowercase
 * hex SHA-256, is refused, as kurad and the Go and Python verifiers refuse it.
 */
export function ledgerFramingProblem(parentHashes: readonly string[], label: string, createdAt: string): { field: "parent_hashes" | "label" | "created_at"; reason: string } | null {
  for (let i = 0; i < parentHashes.length; i++) {
    if (!/^[0-9a-f]{64}$/.test(parentHashes[i])) {
      return { field: "parent_hashes", reason: `parent hash ${i} is not a lowercase hex SHA-256, so the parents' part of the ledger hash has more than one reading` };
    }
  }
  for (const [field, value, what] of [["label", label, "the label"], ["created_at", createdAt, "created_at"]] as const) {
    const m = /[\u0000-\u001f\u007f-\u009f]/.exec(value);
    if (m) {
      const at = utf8(value.slice(0, m.index)).length;
      const u = m[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, "0");
      return { field, reason: `${what} holds the control character U+${u} at byte ${at}, so the ledger hash has more than one reading (its fields are framed by newlines) and cannot be verified` };
    }
  }
  return null;
}

/** RFC 6962 leaf hash SHA-256(0x00 || d). */
export function* leafHashG(d: Uint8Array): Check<Uint8Array> {
  return yield* sha256(concat(new Uint8Array([0]), d));
}

/** RFC 6962 node hash SHA-256(0x01 || l || r). */
export function* nodeHashG(l: Uint8Array, r: Uint8Array): Check<Uint8Array> {
  return yield* sha256(concat(new Uint8Array([1]), l, r));
}

/** RFC 6962 tree hash over already-hashed leaves (MTH over leaf hashes). */
function* treeG(level: Uint8Array[]): Check<Uint8Array> {
  // Hashing level by level and carrying an odd last node up unchanged gives
  // RFC 6962's left-leaning shape.
  while (level.length > 1) {
    const next: Uint8Array[] = [];
    for (let i = 0; i + 1 < level.length; i += 2) next.push(yield* nodeHashG(level[i], level[i + 1]));
    if (level.length % 2 === 1) next.push(level[level.length - 1]);
    level = next;
  }
  return level[0];
}

/** RFC 6962 Merkle tree hash over raw leaves (for a ledger: the 32-byte record seals). */
export function* merkleRootBytesG(leaves: readonly Uint8Array[]): Check<Uint8Array> {
  if (leaves.length === 0) return yield* sha256(new Uint8Array(0));
  const level: Uint8Array[] = [];
  for (const l of leaves) level.push(yield* leafHashG(l));
  return yield* treeG(level);
}

function decodeDigest(s: string, what: string): Uint8Array {
  const b = typeof s === "string" && s.length === 64 ? fromHex(s) : null;
  if (!b) throw new TypeError(`kura: ${what} ${JSON.stringify(s)} is not a hex SHA-256 digest`);
  return b;
}

/** ledger.root_hash over hex leaves (the records' seals, in ledger order), as hex. */
export function* merkleRootG(leavesHex: readonly string[]): Check<string> {
  return toHex(yield* merkleRootBytesG(leavesHex.map((l, i) => decodeDigest(l, `leaf ${i}`))));
}

/** RFC 6962 §2.1.1 audit path of leaf m among hex leaves, as hex (used to build test proofs). */
export function* auditPathG(leavesHex: readonly string[], m: number): Check<string[]> {
  const leaves = leavesHex.map((l, i) => decodeDigest(l, `leaf ${i}`));
  if (!Number.isInteger(m) || m < 0 || m >= leaves.length) throw new RangeError("kura: leaf index out of range");
  function* path(m: number, d: Uint8Array[]): Check<Uint8Array[]> {
    const n = d.length;
    if (n <= 1) return [];
    let k = 1;
    while (k << 1 < n) k <<= 1;
    if (m < k) return [...(yield* path(m, d.slice(0, k))), yield* merkleRootBytesG(d.slice(k))];
    return [...(yield* path(m - k, d.slice(k))), yield* merkleRootBytesG(d.slice(0, k))];
  }
  return (yield* path(m, leaves)).map(toHex);
}

/**
 * RFC 9162 §2.1.3.2: whether path leads from the leaf hash at index in a tree
 * of treeSize leaves to root. Hashes are raw bytes.
 */
export function* inclusionRootMatchesG(
  leafHash: Uint8Array, index: number, treeSize: number, path: readonly Uint8Array[], root: Uint8Array,
): Check<boolean> {
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(treeSize) || index < 0 || index >= treeSize) return false;
  // Sizes may pass 2^31: shift with division, not >>.
  let fn = index, sn = treeSize - 1;
  let r = leafHash;
  const odd = (x: number) => x % 2 === 1;
  const half = (x: number) => Math.floor(x / 2);
  for (const p of path) {
    if (sn === 0) return false;
    if (odd(fn) || fn === sn) {
      r = yield* nodeHashG(p, r);
      if (!odd(fn)) {
        while (!odd(fn) && fn !== 0) {
          fn = half(fn);
          sn = half(sn);
        }
      }
    } else {
      r = yield* nodeHashG(r, p);
    }
    fn = half(fn);
    sn = half(sn);
  }
  return sn === 0 && equalBytes(r, root);
}

/** Whether an audit path (hex) leads from the raw leaf (hex, e.g. a seal) at index to root (hex). */
export function* verifyAuditPathG(leafHex: string, index: number, treeSize: number, pathHex: readonly string[], rootHex: string): Check<boolean> {
  const leaf = yield* leafHashG(decodeDigest(leafHex, "leaf"));
  return yield* inclusionRootMatchesG(leaf, index, treeSize, pathHex.map((h, i) => decodeDigest(h, `audit_path[${i}]`)), decodeDigest(rootHex, "root"));
}

// The synchronous (node:crypto) forms.

/** hex(SHA-256(JCS(content))). */
export const contentHash = (content: unknown): string => runSync(contentHashG(content));
/** hex(SHA-256(type + "\n" + content_hash + "\n" + author_id)). */
export const recordHash = (type: string, contentHash: string, authorId: string): string => runSync(recordHashG(type, contentHash, authorId));
/** The record seal over hash, metadata and created_at. */
export const recordSeal = (hash: string, metadata: Record<string, string> | null | undefined, createdAt: string): string =>
  runSync(recordSealG(hash, metadata, createdAt));
/** The RFC 6962 root over hex leaves, as hex. */
export const merkleRoot = (leavesHex: readonly string[]): string => runSync(merkleRootG(leavesHex));
/** The audit path of leaf m, as hex. */
export const auditPath = (leavesHex: readonly string[], m: number): string[] => runSync(auditPathG(leavesHex, m));
/** Whether an audit path (hex) leads from the raw leaf (hex) at index to root (hex). */
export const verifyAuditPath = (leafHex: string, index: number, treeSize: number, pathHex: readonly string[], rootHex: string): boolean =>
  runSync(verifyAuditPathG(leafHex, index, treeSize, pathHex, rootHex));
/** The ledger hash. */
export const ledgerHash = (rootHash: string, parentHashes: readonly string[], label: string, createdAt: string): string =>
  runSync(ledgerHashG(rootHash, parentHashes, label, createdAt));

// The Async (WebCrypto) forms.

export const contentHashAsync = (content: unknown): Promise<string> => runAsync(contentHashG(content));
export const recordHashAsync = (type: string, contentHash: string, authorId: string): Promise<string> =>
  runAsync(recordHashG(type, contentHash, authorId));
export const recordSealAsync = (hash: string, metadata: Record<string, string> | null | undefined, createdAt: string): Promise<string> =>
  runAsync(recordSealG(hash, metadata, createdAt));
export const merkleRootAsync = (leavesHex: readonly string[]): Promise<string> => runAsync(merkleRootG(leavesHex));
export const ledgerHashAsync = (rootHash: string, parentHashes: readonly string[], label: string, createdAt: string): Promise<string> =>
  runAsync(ledgerHashG(rootHash, parentHashes, label, createdAt));
