// Offline verification (API.md "Clients and console"): recompute what kurad
// hands out from the primary data and check kurad's signatures, trusting
// nothing but a public key the caller got from a source it trusts. Each
// check is a generator (ops.ts): verifyRecord(record) and friends run it
// synchronously with node:crypto, verifyRecordAsync(record) and friends with
// WebCrypto.

import { fromHex, utf8 } from "./bytes.js";
import { VerificationError, type VerificationProblem, type VerificationWhat, problem } from "./errors.js";
import { contentHashG, inclusionRootMatchesG, leafHashG, ledgerFramingProblem, ledgerHashG, merkleRootBytesG, recordHashG, recordSealG } from "./hashes.js";
import { CanonicalizationError } from "./jcs.js";
import { type Checkpoint, logVKeyG, parsePublicKey, verifyCheckpointG, verifyLogInclusionG } from "./log.js";
import { type Check, ed25519Verify, runAsync, runSync } from "./ops.js";
import { toHex } from "./bytes.js";
import type { InclusionProof, KuraRecord, Ledger, LogInclusionProof, ReflogEntry, Session } from "./types.js";

/** Throws TypeError unless o is a JSON object: anything else is the caller's mistake, not kurad's answer. */
function mustBeObject(o: unknown, what: string): void {
  if (o === null || typeof o !== "object" || Array.isArray(o)) throw new TypeError(`kura: ${what} is not an object`);
}

/** "record <id>" for messages; an id is covered by no hash, so a missing one is no failure by itself. */
function named(kind: string, o: any): string {
  return `${kind} ${typeof o.id === "string" && o.id !== "" ? o.id : "(no id)"}`;
}

const HEX64 = /^[0-9a-f]{64}$/;
type FieldKind = "string" | "hash" | "list" | "integer";
const WANT: Record<FieldKind, string> = { string: "a string", hash: "a hex SHA-256 digest", list: "a list", integer: "an integer" };

function show(v: unknown): string {
  const s = typeof v === "string" ? JSON.stringify(v) : (JSON.stringify(v) ?? String(v));
  return s.length <= 80 ? s : s.slice(0, 77) + "...";
}

/**
 * The problem with field name of o, which the check `what` reads: missing,
 * or not of kind. A field deleted from kurad's answer is a tamper like a
 * changed one, so it is a VerificationProblem naming the field, not a
 * TypeError. null when the field is fine.
 */
function fieldProblem(o: any, name: string, what: VerificationWhat, object: string, kind: FieldKind = "string"): VerificationProblem | null {
  const v = o[name];
  if (v === undefined || v === null) return problem(what, object, undefined, undefined, `the "${name}" field is missing`);
  const ok =
    kind === "hash" ? typeof v === "string" && HEX64.test(v)
    : kind === "list" ? Array.isArray(v)
    : kind === "integer" ? Number.isSafeInteger(v)
    : typeof v === "string";
  return ok ? null : problem(what, object, undefined, undefined, `the "${name}" field is not ${WANT[kind]}: ${show(v)}`);
}

const isNull = (c: unknown) => c === null || c === undefined;

/**
 * Recomputes content_hash (unless redacted/withheld), hash and seal; returns
 * the computed seal and the problems. Each level's fields are read where
 * that level is checked, so the lowest level that fails comes first; the
 * seal is null when a missing field leaves it uncomputable.
 */
function* checkRecordG(r: KuraRecord, where = ""): Check<{ seal: string | null; problems: VerificationProblem[] }> {
  mustBeObject(r, "record");
  const obj = named("record", r) + where;
  const problems: VerificationProblem[] = [];
  const stop = (p: VerificationProblem) => {
    problems.push(p);
    return { seal: null, problems };
  };
  const chP = fieldProblem(r, "content_hash", "content_hash", obj, "hash");
  if (chP) return stop(chP);
  let ch = r.content_hash;
  if (!((r.redacted || r.withheld) && isNull(r.content))) {
    if (!("content" in r)) return stop(problem("content_hash", obj, undefined, undefined, `the "content" field is missing (and the record is not marked redacted or withheld)`));
    try {
      const got = yield* contentHashG(r.content === undefined ? null : r.content);
      if (got !== r.content_hash) {
        problems.push(problem("content_hash", obj, r.content_hash, got, "the content does not hash to content_hash"));
        ch = got;
      }
    } catch (e) {
      if (!(e instanceof CanonicalizationError)) throw e;
      problems.push(problem("content_hash", obj, r.content_hash, undefined, `the content has no canonical form: ${e.message}`));
    }
  }
  for (const [f, kind] of [["type", "string"], ["author_id", "string"]] as const) {
    const p = fieldProblem(r, f, "hash", obj, kind);
    if (p) return stop(p);
  }
  const hash = yield* recordHashG(r.type, ch, r.author_id);
  const hashP = fieldProblem(r, "hash", "hash", obj, "hash");
  if (hashP) problems.push(hashP);
  else if (hash !== r.hash) problems.push(problem("hash", obj, r.hash, hash, "type, content hash and author do not hash to hash"));
  const caP = fieldProblem(r, "created_at", "seal", obj);
  if (caP) return stop(caP);
  if (r.metadata != null && (typeof r.metadata !== "object" || Array.isArray(r.metadata))) {
    return stop(problem("seal", obj, undefined, undefined, `the "metadata" field is not an object: ${show(r.metadata)}`));
  }
  const seal = yield* recordSealG(hash, r.metadata, r.created_at);
  const sealP = fieldProblem(r, "seal", "seal", obj, "hash");
  if (sealP) problems.push(sealP);
  else if (seal !== r.seal) problems.push(problem("seal", obj, r.seal, seal, "hash, metadata and created_at do not hash to seal"));
  return { seal, problems };
}

function throwIf(problems: VerificationProblem[]): void {
  if (problems.length > 0) throw new VerificationError(problems[0], problems);
}

/** What verifyRecord checked. */
export interface RecordVerification {
  recordId: string;
  seal: string;
  /** The content was redacted or withheld: checked by its content_hash only. */
  contentChecked: boolean;
}

export function* verifyRecordG(record: KuraRecord): Check<RecordVerification> {
  const { seal, problems } = yield* checkRecordG(record);
  throwIf(problems);
  return { recordId: typeof record.id === "string" ? record.id : "", seal: seal!, contentChecked: !((record.redacted || record.withheld) && isNull(record.content)) };
}

/** Options of verifyLedger. */
export interface LedgerVerifyOptions {
  /** The hashes of ledger.parent_ids, in order (from ledgers the caller verified). */
  parentHashes?: readonly string[];
  /** The parent ledgers themselves; their hashes are used in parent_ids order. */
  parents?: readonly Ledger[];
}

/** What verifyLedger checked. */
export interface LedgerVerification {
  ledgerId: string;
  hash: string;
  recordsChecked: number;
  redacted: string[];
  withheld: string[];
  signatureChecked: boolean;
}

/** The parents' hashes the ledger hash covers, or the problem that leaves it uncomputable. */
function parentHashesOf(l: Ledger, ids: readonly string[], o: LedgerVerifyOptions, obj: string): string[] | VerificationProblem {
  let hs: readonly unknown[];
  if (o.parentHashes) hs = o.parentHashes;
  else if (o.parents) {
    const by = new Map(o.parents.map((p) => [p.id, p.hash]));
    hs = ids.map((id) => {
      if (!by.has(id)) throw new TypeError(`kura: verify ${obj}: parent ledger ${id} is not among options.parents`);
      return by.get(id);
    });
  } else if (l.parent_hashes !== undefined && l.parent_hashes !== null) {
    // kurad's ledger JSON carries them; options override with hashes of
    // parents the caller verified itself.
    if (!Array.isArray(l.parent_hashes)) return problem("ledger_hash", obj, undefined, undefined, `the "parent_hashes" field is not a list: ${show(l.parent_hashes)}`);
    hs = l.parent_hashes;
  } else if (ids.length === 0) hs = [];
  else {
    return problem("ledger_hash", obj, `${ids.length} parent hashes`, "none",
      `the ledger has ${ids.length} parent ledger(s) and no "parent_hashes" field, so its hash cannot be checked: pass options.parentHashes or options.parents (GET /v1/ledgers/{parent id})`);
  }
  if (hs.length !== ids.length) return problem("ledger_hash", obj, `${ids.length} parents`, `${hs.length} parent hashes given`, "wrong number of parent hashes");
  if (!hs.every((h) => typeof h === "string")) return problem("ledger_hash", obj, undefined, undefined, `a parent hash is not a string: ${show(hs)}`);
  return hs as string[];
}

function* verifyLedgerProblemsG(ledger: Ledger, records: readonly KuraRecord[], publicKey: string | null, o: LedgerVerifyOptions): Check<{ problems: VerificationProblem[]; v: LedgerVerification }> {
  mustBeObject(ledger, "ledger");
  const obj = named("ledger", ledger);
  if (!Array.isArray(records)) throw new TypeError(`kura: verify ${obj}: records is not a list`);
  const key = publicKey === null ? null : parsePublicKey(publicKey);
  const problems: VerificationProblem[] = [];
  const add = (p: VerificationProblem | null) => {
    if (p) problems.push(p);
    return p !== null;
  };
  const v: LedgerVerification = { ledgerId: typeof ledger.id === "string" ? ledger.id : "", hash: ledger.hash, recordsChecked: records.length, redacted: [], withheld: [], signatureChecked: false };

  // order
  const got = records.map((r) => (r && typeof r === "object" ? String(r.id) : "?"));
  const rawIds: unknown = ledger.record_ids;
  if (rawIds != null && !(Array.isArray(rawIds) && rawIds.every((id) => typeof id === "string"))) {
    add(problem("order", obj, undefined, undefined, `the "record_ids" field is not a list of ids: ${show(rawIds)}`));
  } else if (ledger.record_count != null && !Number.isSafeInteger(ledger.record_count)) {
    add(problem("order", obj, undefined, undefined, `the "record_count" field is not an integer: ${show(ledger.record_count)}`));
  } else {
    const ids = (rawIds ?? []) as string[];
    if (typeof ledger.record_count === "number" && ledger.record_count !== records.length) {
      add(problem("order", obj, `${ledger.record_count} records`, `${records.length} given`, "the records given are not the ledger's"));
    } else if (ids.length !== records.length && !(ids.length === 0 && rawIds == null)) {
      add(problem("order", obj, `${ids.length} record ids`, `${records.length} records`, "the records given are not the ledger's"));
    } else {
      for (let i = 0; i < ids.length; i++) {
        if (ids[i] !== got[i]) {
          add(problem("order", obj, ids.join(","), got.join(","), `position ${i} holds record ${got[i]}, the ledger lists ${ids[i]} there`));
          break;
        }
      }
    }
  }
  // records
  const leaves: Uint8Array[] = [];
  let sealsComplete = true;
  for (let i = 0; i < records.length; i++) {
    const r = records[i];
    const { seal, problems: ps } = yield* checkRecordG(r, ` (position ${i} of ${obj})`);
    problems.push(...ps);
    if (seal === null) sealsComplete = false;
    else leaves.push(fromHex(seal)!);
    if (r.redacted) v.redacted.push(r.id);
    if (r.withheld) v.withheld.push(r.id);
  }
  // root: over the recomputed seals (none when a record lacked what its seal needs)
  const root = sealsComplete ? toHex(yield* merkleRootBytesG(leaves)) : null;
  if (!add(fieldProblem(ledger, "root_hash", "root", obj, "hash")) && root !== null && root !== ledger.root_hash) {
    add(problem("root", obj, ledger.root_hash, root, "the records' seals do not hash to root_hash"));
  }
  // ledger hash
  let hashOK = !add(fieldProblem(ledger, "hash", "ledger_hash", obj, "hash"));
  const inputsOK = ![fieldProblem(ledger, "label", "ledger_hash", obj), fieldProblem(ledger, "created_at", "ledger_hash", obj)].map(add).some(Boolean);
  const pids: unknown = ledger.parent_ids ?? [];
  let parents: string[] | VerificationProblem;
  if (!Array.isArray(pids) || !pids.every((id) => typeof id === "string")) parents = problem("ledger_hash", obj, undefined, undefined, `the "parent_ids" field is not a list of ids: ${show(pids)}`);
  else parents = parentHashesOf(ledger, pids, o, obj);
  if (!Array.isArray(parents)) add(parents);
  else if (inputsOK && ledgerFramingProblem(parents, ledger.label, ledger.created_at)) {
    const f = ledgerFramingProblem(parents, ledger.label, ledger.created_at)!;
    add(problem("ledger_hash", obj, undefined, show(f.field === "label" ? ledger.label : f.field === "created_at" ? ledger.created_at : parents), f.reason));
  } else if (hashOK && inputsOK && root !== null) {
    const hash = yield* ledgerHashG(root, parents, ledger.label, ledger.created_at);
    if (hash !== ledger.hash) add(problem("ledger_hash", obj, ledger.hash, hash, "root, parents' hashes, label and created_at do not hash to hash"));
  }
  // signature: over the stored hash, when there is one to check it over
  if (key) {
    v.signatureChecked = true;
    const sig = typeof ledger.signature === "string" && ledger.signature.length === 128 ? fromHex(ledger.signature) : null;
    if (isNull(ledger.signature) || ledger.signature === "") {
      add(problem("signature", obj, "a 128 hex digit Ed25519 signature", "none", `the ledger is not signed (the "signature" field is missing)`));
    } else if (!sig) {
      add(problem("signature", obj, "a 128 hex digit Ed25519 signature", show(ledger.signature), `the "signature" field is not 128 hex digits`));
    } else if (hashOK && !(yield* ed25519Verify(key, utf8("kura-ledger-sig-v1\n" + ledger.hash), sig))) {
      add(problem("signature", obj, undefined, undefined, `the signature does not verify against ${publicKey}`));
    }
  }
  return { problems, v };
}

export function* verifyLedgerG(ledger: Ledger, records: readonly KuraRecord[], publicKey: string | null, o: LedgerVerifyOptions = {}): Check<LedgerVerification> {
  const { problems, v } = yield* verifyLedgerProblemsG(ledger, records, publicKey, o);
  throwIf(problems);
  return v;
}

/**
 * Checks that proof (GET /v1/ledgers/{id}/proof/{record}) proves record
 * is at proof.leaf_index of a tree whose root is proof.root_hash: the
 * record verifies (as verifyRecord), its seal is the proof's leaf ("seal"),
 * and the audit path leads to root_hash ("root"; a missing or malformed
 * root_hash, audit_path, leaf_index or tree_size fails it too). With ledger
 * (one the caller verified), root_hash must also be that ledger's root ("root").
 */
export function* verifyInclusionG(proof: InclusionProof, record: KuraRecord, ledger?: Ledger): Check<void> {
  mustBeObject(proof, "inclusion proof");
  const { seal } = yield* verifyRecordG(record);
  const obj = `proof of ${named("record", record)} in ledger ${proof.ledger_id}`;
  if (proof.record_id !== undefined && proof.record_id !== record.id) {
    throw new VerificationError(problem("seal", obj, record.id, proof.record_id, "the proof is for another record"));
  }
  if (proof.seal !== undefined && proof.seal !== seal) {
    throw new VerificationError(problem("seal", obj, proof.seal, seal, "the proof's leaf is not the record's seal"));
  }
  for (const [f, kind] of [["root_hash", "hash"], ["audit_path", "list"], ["leaf_index", "integer"], ["tree_size", "integer"]] as const) {
    const p = fieldProblem(proof, f, "root", obj, kind);
    if (p) throw new VerificationError(p);
  }
  const root = fromHex(proof.root_hash)!;
  const path = proof.audit_path.map((h) => (typeof h === "string" && HEX64.test(h) ? fromHex(h) : null));
  const bad = path.findIndex((p) => p === null);
  if (bad >= 0) throw new VerificationError(problem("root", obj, undefined, undefined, `audit_path[${bad}] is not a hex SHA-256 digest: ${show(proof.audit_path[bad])}`));
  const leaf = yield* leafHashG(fromHex(seal)!);
  if (!(yield* inclusionRootMatchesG(leaf, proof.leaf_index, proof.tree_size, path as Uint8Array[], root))) {
    throw new VerificationError(problem("root", obj, proof.root_hash, undefined, "the audit path does not lead to root_hash"));
  }
  if (ledger && ledger.root_hash !== proof.root_hash) {
    throw new VerificationError(problem("root", obj, ledger.root_hash, proof.root_hash, "the proof's root is not the ledger's root_hash"));
  }
}

/** Whether sig is the Ed25519 signature of head move e of session sessionId. */
function* headSignatureOKG(sessionId: string, e: ReflogEntry, key: Uint8Array): Check<boolean> {
  const sig = typeof e.signature === "string" && e.signature.length === 128 ? fromHex(e.signature) : null;
  if (!sig) return false;
  return yield* ed25519Verify(key, utf8(`kura-head-v1\n${sessionId}\n${e.seq}\n${e.head_hash}`), sig);
}

/** Options of verifySessionExport. */
export interface ExportVerifyOptions {
  /** A head hash the caller kept: the first-parent chain from the head must hold it ("chain"). */
  expectHeadHash?: string;
  /** C2SP tlog-cosignature verifier keys of witnesses that must have cosigned the export's checkpoint. */
  witnessKeys?: readonly string[];
}

/** What verifySessionExport checked. */
export interface ExportReport {
  sessionId: string;
  ledgersChecked: number;
  recordsChecked: number;
  headMovesChecked: number;
  redacted: string[];
  withheld: string[];
  /** Whether the export carried a log section and it was checked. */
  logChecked: boolean;
  log?: { origin: string; size: number; root: string; ledgersProved: number; notInLog: string[]; cosigners: string[] };
}

/** An export as file text, its lines, or the parsed line objects. */
export type ExportInput = string | readonly string[] | readonly Record<string, unknown>[];

function parseExport(input: ExportInput): Record<string, any>[] {
  const lines: unknown[] = typeof input === "string" ? input.split("\n") : [...input];
  const out: Record<string, any>[] = [];
  lines.forEach((l, i) => {
    if (typeof l === "string") {
      if (l.trim() === "") return;
      try {
        l = JSON.parse(l);
      } catch (e) {
        throw new TypeError(`kura: export line ${i + 1} is not JSON: ${(e as Error).message}`);
      }
    }
    if (!l || typeof l !== "object" || typeof (l as any).kind !== "string") throw new TypeError(`kura: export line ${i + 1} has no "kind" (session, record or ledger)`);
    out.push(l as Record<string, any>);
  });
  return out;
}

/**
 * Verifies a session export (`kura export <session> --format=jsonl`) against
 * publicKey: every record, ledger (hashes and signature), the signed head
 * moves, the head, and the log section when present (checkpoint signature,
 * each ledger's ledger.written leaf and its inclusion proof). Collects every
 * problem and throws one VerificationError listing them all (its `what` is
 * the first's); returns a report when nothing failed.
 */
export function* verifySessionExportG(input: ExportInput, publicKey: string, o: ExportVerifyOptions = {}): Check<ExportReport> {
  const key = parsePublicKey(publicKey);
  const items = parseExport(input);
  const problems: VerificationProblem[] = [];
  const add = (p: VerificationProblem) => problems.push(p);
  let session: (Session & { reflog?: ReflogEntry[]; public_key?: string; log?: any }) | null = null;
  const records = new Map<string, KuraRecord>();
  const ledgers: Ledger[] = [];
  const byId = new Map<string, Ledger>();
  for (const it of items) {
    const { kind, ...obj } = it;
    if (kind === "session") {
      if (session) throw new TypeError("kura: the export holds a second session; verify one session's export at a time");
      session = obj as any;
    } else if (kind === "record") {
      if (typeof obj.id !== "string") throw new TypeError("kura: an exported record has no id");
      records.set(obj.id, obj as KuraRecord);
    } else if (kind === "ledger") {
      if (typeof obj.id !== "string") throw new TypeError("kura: an exported ledger has no id");
      if (!byId.has(obj.id)) {
        ledgers.push(obj as Ledger);
        byId.set(obj.id, obj as Ledger);
      }
    } else {
      throw new TypeError(`kura: unknown export kind ${JSON.stringify(kind)}`);
    }
  }
  const rep: ExportReport = { sessionId: session?.id ?? "", ledgersChecked: 0, recordsChecked: 0, headMovesChecked: 0, redacted: [], withheld: [], logChecked: false };
  for (const l of ledgers) {
    rep.ledgersChecked++;
    const recs: KuraRecord[] = [];
    let complete = true;
    // An export's ledger must list its records; parent_ids that are not a
    // list are reported by the ledger's own check.
    const idsP = fieldProblem(l, "record_ids", "order", `ledger ${l.id}`, "list");
    if (idsP) {
      add(idsP);
      continue;
    }
    for (const rid of l.record_ids as string[]) {
      const r = records.get(rid);
      if (!r) {
        add(problem("order", `ledger ${l.id}`, rid, "none", `record ${rid} is not in the export`));
        complete = false;
      } else recs.push(r);
    }
    const parents: string[] = [];
    for (const pid of Array.isArray(l.parent_ids) ? l.parent_ids : []) {
      const p = byId.get(pid);
      if (!p) {
        add(problem("chain", `ledger ${l.id}`, pid, "none", `parent ledger ${pid} is not in the export`));
        complete = false;
      } else parents.push(p.hash);
    }
    if (complete) {
      const { problems: ps, v } = yield* verifyLedgerProblemsG(l, recs, publicKey, { parentHashes: parents });
      problems.push(...ps);
      rep.recordsChecked += recs.length;
      for (const id of v.redacted) if (!rep.redacted.includes(id)) rep.redacted.push(id);
      for (const id of v.withheld) if (!rep.withheld.includes(id)) rep.withheld.push(id);
    }
  }
  if (!session) {
    add(problem("head", "export", "a session line", "none", "the export holds no session, so no signed head move: nothing says which ledger is the head"));
    throwIf(problems);
    return rep;
  }
  const s = session;
  const sobj = `session ${s.id}`;
  if (s.log) yield* checkExportLogG(s.log, ledgers, publicKey, o.witnessKeys ?? [], add, rep);
  else if ((o.witnessKeys ?? []).length > 0) add(problem("log_cosignature", sobj, undefined, undefined, "the export has no log section, so no witness cosignature to check"));
  if (s.public_key && s.public_key !== publicKey) {
    add(problem("signature", sobj, publicKey, s.public_key, "the export says it was signed by another key than the one given"));
  }
  let head: Ledger | undefined;
  if (s.head_ledger_id) {
    head = byId.get(s.head_ledger_id);
    if (!head) add(problem("head", sobj, s.head_ledger_id, "none", "the session's head ledger is not in the export"));
    else if (s.head_hash !== head.hash) add(problem("head_hash", sobj, head.hash, s.head_hash ?? "none", "the session's head hash is not the head ledger's hash"));
  }
  let reflog = Array.isArray(s.reflog) ? s.reflog : [];
  if ((s.reflog != null && !Array.isArray(s.reflog)) || reflog.some((e) => e === null || typeof e !== "object")) {
    add(problem("reflog", sobj, undefined, undefined, `the "reflog" field is not a list of head moves: ${show(s.reflog)}`));
    reflog = [];
  }
  let last: ReflogEntry | undefined;
  for (let i = 0; i < reflog.length; i++) {
    const e = reflog[i];
    rep.headMovesChecked++;
    const eobj = `head move ${e.seq} of session ${s.id}`;
    if (!(yield* headSignatureOKG(s.id, e, key))) add(problem("head_signature", eobj, undefined, undefined, `the signature does not verify against ${publicKey}`));
    if (e.seq !== i + 1) add(problem("reflog", eobj, String(i + 1), String(e.seq), "a head move was removed or inserted"));
    if (last && e.from !== last.to) add(problem("reflog", eobj, last.to, e.from ?? "none", `it does not start where head move ${last.seq} ended`));
    const l = byId.get(e.to);
    if (l && l.hash !== e.head_hash) add(problem("head_hash", eobj, e.head_hash, l.hash, "the signed head hash is not the exported ledger's hash"));
    last = e;
  }
  if (!last && head) add(problem("reflog", sobj, "a signed head move", "none", "the session has a head but no signed head move"));
  else if (last && last.to !== s.head_ledger_id) add(problem("head", sobj, last.to, s.head_ledger_id ?? "none", "the head is not the ledger the last signed head move named"));
  else if (last && head && last.head_hash !== head.hash) add(problem("head_hash", sobj, last.head_hash, head.hash, "the head ledger's hash is not the one the last signed head move named"));
  if (o.expectHeadHash) {
    let found = false;
    const seen = new Set<string>();
    for (let l = head; l && !seen.has(l.id); l = l.parent_ids?.length ? byId.get(l.parent_ids[0]) : undefined) {
      seen.add(l.id);
      if (l.hash === o.expectHeadHash) {
        found = true;
        break;
      }
    }
    if (!found) add(problem("chain", sobj, o.expectHeadHash, undefined, "the first-parent chain from the head does not hold the expected head hash (cut off or rewritten)"));
  }
  throwIf(problems);
  return rep;
}

function* checkExportLogG(lg: any, ledgers: Ledger[], publicKey: string, witnessKeys: readonly string[], add: (p: VerificationProblem) => void, rep: ExportReport): Check<void> {
  rep.logChecked = true;
  let cp: Checkpoint;
  try {
    const text = String(lg.checkpoint ?? "");
    const origin = text.split("\n", 1)[0];
    cp = yield* verifyCheckpointG(text, yield* logVKeyG(origin, publicKey), witnessKeys);
  } catch (e) {
    if (e instanceof VerificationError) {
      e.problems.forEach(add);
      return;
    }
    if (e instanceof TypeError) {
      add(problem("log_signature", "checkpoint", undefined, undefined, e.message));
      return;
    }
    throw e;
  }
  const log = { origin: cp.origin, size: cp.size, root: cp.root, ledgersProved: 0, notInLog: [] as string[], cosigners: cp.cosigners };
  rep.log = log;
  const byLedger = new Map<string, any>();
  for (const inc of Array.isArray(lg.inclusions) ? lg.inclusions : []) byLedger.set(inc.ledger_id, inc);
  for (const l of ledgers) {
    const inc = byLedger.get(l.id) as (LogInclusionProof & { ledger_id: string }) | undefined;
    if (!inc) {
      log.notInLog.push(l.id);
      continue;
    }
    const obj = `log leaf of ledger ${l.id}`;
    try {
      if (!inc.leaf) throw new VerificationError(problem("log_leaf", obj, undefined, undefined, "the inclusion carries no leaf data"));
      const data = yield* verifyLogInclusionG(inc, cp);
      let leaf: any;
      try {
        leaf = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(data!));
      } catch {
        throw new VerificationError(problem("log_leaf", obj, undefined, undefined, "the leaf data is not JSON"));
      }
      if (leaf.type !== "ledger.written") throw new VerificationError(problem("log_leaf", obj, "ledger.written", String(leaf.type), "the leaf is not a ledger.written event"));
      if (leaf.refs?.ledger_id !== l.id) throw new VerificationError(problem("log_leaf", obj, l.id, String(leaf.refs?.ledger_id), "the leaf names another ledger"));
      if (leaf.digest !== l.hash) throw new VerificationError(problem("log_leaf", obj, l.hash, String(leaf.digest), "the leaf's digest is not the ledger's hash"));
      if (leaf.seq !== inc.seq) throw new VerificationError(problem("log_leaf", obj, String(inc.seq), String(leaf.seq), "the leaf's seq is not the proof's"));
      log.ledgersProved++;
    } catch (e) {
      if (!(e instanceof VerificationError)) throw e;
      e.problems.forEach(add);
    }
  }
}

// The synchronous (node:crypto) forms: they throw VerificationError, without await.

/** Recomputes a record's content_hash, hash and seal; throws VerificationError naming the first that fails. */
export const verifyRecord = (record: KuraRecord): RecordVerification => runSync(verifyRecordG(record));
/**
 * Verifies a ledger against its records (in ledger order) and publicKey
 * (/v1/info public_key; null skips the signature): order, every record,
 * root, ledger hash and signature.
 */
export const verifyLedger = (ledger: Ledger, records: readonly KuraRecord[], publicKey: string | null, options?: LedgerVerifyOptions): LedgerVerification =>
  runSync(verifyLedgerG(ledger, records, publicKey, options));
/** Verifies a record's inclusion proof (and, with ledger, that it is for that ledger's root). */
export const verifyInclusion = (proof: InclusionProof, record: KuraRecord, ledger?: Ledger): void => runSync(verifyInclusionG(proof, record, ledger));
/** Verifies a session export (JSON lines) against publicKey. */
export const verifySessionExport = (input: ExportInput, publicKey: string, options?: ExportVerifyOptions): ExportReport =>
  runSync(verifySessionExportG(input, publicKey, options));

// The Async (WebCrypto) forms, for browsers (and Node too).

export const verifyRecordAsync = (record: KuraRecord): Promise<RecordVerification> => runAsync(verifyRecordG(record));
export const verifyLedgerAsync = (ledger: Ledger, records: readonly KuraRecord[], publicKey: string | null, options?: LedgerVerifyOptions): Promise<LedgerVerification> =>
  runAsync(verifyLedgerG(ledger, records, publicKey, options));
export const verifyInclusionAsync = (proof: InclusionProof, record: KuraRecord, ledger?: Ledger): Promise<void> => runAsync(verifyInclusionG(proof, record, ledger));
export const verifySessionExportAsync = (input: ExportInput, publicKey: string, options?: ExportVerifyOptions): Promise<ExportReport> =>
  runAsync(verifySessionExportG(input, publicKey, options));
