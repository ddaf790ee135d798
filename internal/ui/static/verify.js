// verify.js: what the console checks itself, in the browser, with
// WebCrypto alone (docs/api.md "Verifying without trusting the server"),
// and how it shows what a server-side verify found.

import { h, hash, link } from "./dom.js";

const enc = new TextEncoder();

export function hex(buf) {
  return Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, "0")).join("");
}

export function unhex(s) {
  if (typeof s !== "string" || s.length % 2 || /[^0-9a-f]/.test(s)) throw new Error("not lowercase hex: " + String(s).slice(0, 20));
  const out = new Uint8Array(s.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(s.slice(2 * i, 2 * i + 2), 16);
  return out;
}

async function sha(...parts) {
  const n = parts.reduce((a, p) => a + p.length, 0);
  const buf = new Uint8Array(n);
  let o = 0;
  for (const p of parts) buf.set(p, o), (o += p.length);
  return new Uint8Array(await crypto.subtle.digest("SHA-256", buf));
}

export async function sha256hex(s) {
  return hex(await sha(enc.encode(s)));
}

// jcs is RFC 8785 canonical JSON. Its number and string forms are those of
// ECMAScript's JSON.stringify, and its key order is by UTF-16 code units,
// which is how Array.prototype.sort compares strings.
export function jcs(v) {
  if (v === null || typeof v !== "object") return JSON.stringify(v);
  if (Array.isArray(v)) return "[" + v.map(jcs).join(",") + "]";
  const keys = Object.keys(v).sort();
  return "{" + keys.map((k) => JSON.stringify(k) + ":" + jcs(v[k])).join(",") + "}";
}

// recompute derives a record's content_hash (unless redacted or withheld:
// the content is gone, so the stored one is taken), hash and seal.
export async function recompute(r) {
  const contentHash = r.redacted || r.withheld ? r.content_hash : await sha256hex(jcs(r.content));
  const recHash = await sha256hex(r.type + "\n" + contentHash + "\n" + r.author_id);
  const meta = await sha256hex(jcs(r.metadata || {}));
  const seal = await sha256hex("kura-record-v1\n" + recHash + "\n" + meta + "\n" + r.created_at);
  return { content_hash: contentHash, hash: recHash, seal };
}

// checkInclusion runs the RFC 6962 inclusion check of docs/api.md
// "Checking an inclusion proof, step by step" and answers {ok, reason}.
// seal and root come from the caller (the recomputed record, the ledger),
// not from the proof.
export async function checkInclusion(seal, leafIndex, treeSize, auditPath, root) {
  if (!(Number.isInteger(leafIndex) && Number.isInteger(treeSize)) || leafIndex < 0 || leafIndex >= treeSize) {
    return { ok: false, reason: "leaf index " + leafIndex + " is not inside a tree of " + treeSize };
  }
  let fn = leafIndex;
  let sn = treeSize - 1;
  let r = await sha(new Uint8Array([0]), unhex(seal));
  for (const p of auditPath) {
    if (sn === 0) return { ok: false, reason: "the audit path is too long" };
    const pb = unhex(p);
    if (fn % 2 === 1 || fn === sn) {
      r = await sha(new Uint8Array([1]), pb, r);
      // The last node of a level with no right sibling is carried up
      // unchanged: skip the levels it rises through.
      while (fn % 2 === 0 && fn !== 0) (fn >>= 1), (sn >>= 1);
    } else {
      r = await sha(new Uint8Array([1]), r, pb);
    }
    fn >>= 1;
    sn >>= 1;
  }
  if (sn !== 0) return { ok: false, reason: "the audit path is too short" };
  if (hex(r) !== root) return { ok: false, reason: "the path leads to " + hex(r).slice(0, 12) + "…, not to the ledger's root " + root.slice(0, 12) + "…" };
  return { ok: true, reason: "the path leads from the record's seal to the ledger's root" };
}

// problems lists what a session verify found (field, ledger, detail).
export function problems(list) {
  if (!list || list.length === 0) return null;
  return h(
    "ul",
    { class: "problems" },
    list.map((p) =>
      h("li", {}, h("strong", {}, p.field), p.ledger_id ? [" in ledger ", link("/ledgers/" + encodeURIComponent(p.ledger_id), p.ledger_id)] : null, ": ", p.detail || ""),
    ),
  );
}

// mismatches lists what a ledger verify found.
export function mismatches(list) {
  if (!list || list.length === 0) return null;
  return h(
    "ul",
    { class: "problems" },
    list.map((m) =>
      h(
        "li",
        {},
        h("strong", {}, m.field),
        m.record_id ? [" of record ", link("/records/" + encodeURIComponent(m.record_id), m.record_id), " at position ", String(m.position)] : null,
        ": stored ",
        hash(m.stored),
        ", computed ",
        hash(m.computed),
      ),
    ),
  );
}
