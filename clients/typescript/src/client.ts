// KuraClient: kurad's REST API over fetch (Node 20+ and browsers). Reads
// and writes that carry an Idempotency-Key are retried with exponential
// backoff and jitter on connection errors, timeouts, 429, 502, 503 and 504;
// every write gets a fresh key per call unless the caller passes one (or
// turns automatic keys off), and its retries send the same key. A write
// without a key is never retried.

import { KuraApiError, KuraConnectionError, KuraError, KuraTimeoutError } from "./errors.js";
import { type EventFollowOptions, followEvents } from "./events.js";
import type {
  Claim, EventPage, InclusionProof, Info, KuraEvent, KuraRecord, Ledger, LogConsistencyProof, LogInclusionProof,
  MemoryNode, RecordInput, ReflogEntry, Session, Turn,
} from "./types.js";
import { type ExportReport, type ExportVerifyOptions, verifySessionExport, verifySessionExportAsync } from "./verify.js";
import { syncVerificationAvailable } from "./ops.js";

export interface KuraClientOptions {
  /** kurad's base URL; default KURA_URL (Node) or http://127.0.0.1:7700. */
  baseUrl?: string;
  /** Bearer token; default KURA_TOKEN (Node). */
  token?: string;
  /** Timeout of one attempt, in ms (default 30000). */
  timeoutMs?: number;
  /** Retries after the first attempt for retryable calls (default 3). */
  retries?: number;
  /** First backoff in ms (default 200); doubles up to maxBackoffMs (default 2000), with jitter. */
  backoffMs?: number;
  maxBackoffMs?: number;
  /** Give every write a fresh Idempotency-Key (default true), so that it may be retried. */
  idempotencyKeys?: boolean;
  /** The fetch to use (default globalThis.fetch). */
  fetch?: typeof fetch;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
}

/** Per-call options. */
export interface CallOptions {
  /** Idempotency-Key for a write (default: a fresh one per call, when the client's idempotencyKeys is on). */
  idempotencyKey?: string;
  signal?: AbortSignal;
  timeoutMs?: number;
}

type Query = Record<string, string | number | boolean | readonly (string | number)[] | null | undefined>;

/** A raw answer of KuraClient.request. */
export interface RawResponse<T = unknown> {
  status: number;
  headers: Headers;
  data: T;
}

const env = (k: string): string | undefined => {
  const v = (globalThis as any).process?.env?.[k];
  return typeof v === "string" && v !== "" ? v : undefined;
};

const RETRY_STATUS = new Set([429, 502, 503, 504]);

function newKey(): string {
  const c = (globalThis as any).crypto;
  if (c?.randomUUID) return c.randomUUID();
  const b = new Uint8Array(16);
  c.getRandomValues(b);
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

const enc = encodeURIComponent;

export class KuraClient {
  readonly baseUrl: string;
  readonly token: string | undefined;
  readonly timeoutMs: number;
  readonly retries: number;
  readonly backoffMs: number;
  readonly maxBackoffMs: number;
  readonly idempotencyKeys: boolean;
  private readonly fetchFn: typeof fetch;
  private readonly headers: Record<string, string>;

  constructor(o: KuraClientOptions = {}) {
    this.baseUrl = (o.baseUrl ?? env("KURA_URL") ?? "http://127.0.0.1:7700").replace(/\/+$/, "");
    this.token = o.token ?? env("KURA_TOKEN");
    this.timeoutMs = o.timeoutMs ?? 30_000;
    this.retries = Math.max(0, o.retries ?? 3);
    this.backoffMs = o.backoffMs ?? 200;
    this.maxBackoffMs = o.maxBackoffMs ?? 2_000;
    this.idempotencyKeys = o.idempotencyKeys ?? true;
    const f = o.fetch ?? (globalThis as any).fetch;
    if (typeof f !== "function") throw new KuraError("kura: no fetch here: pass options.fetch");
    this.fetchFn = f.bind(globalThis);
    this.headers = o.headers ?? {};
  }

  /** The URL of path with query (arrays repeat the parameter; null/undefined are left out). */
  url(path: string, query?: Query): string {
    const u = new URL(this.baseUrl + path);
    for (const [k, v] of Object.entries(query ?? {})) {
      if (v === undefined || v === null) continue;
      if (Array.isArray(v)) for (const x of v) u.searchParams.append(k, String(x));
      else u.searchParams.set(k, String(v));
    }
    return u.toString();
  }

  private backoff(attempt: number, retryAfter?: number): number {
    if (retryAfter !== undefined && retryAfter >= 0) return Math.min(retryAfter * 1000, 30_000);
    const cap = Math.min(this.maxBackoffMs, this.backoffMs * 2 ** attempt);
    return cap / 2 + Math.random() * (cap / 2);
  }

  /**
   * One call with the retry policy: GET/HEAD and writes with an
   * Idempotency-Key are retried; others are sent once. Returns status,
   * headers and the decoded body (JSON, else text).
   */
  async request<T = any>(method: string, path: string, o: CallOptions & { query?: Query; body?: unknown; write?: boolean; accept?: string } = {}): Promise<RawResponse<T>> {
    const write = o.write ?? !(method === "GET" || method === "HEAD");
    const key = write ? (o.idempotencyKey ?? (this.idempotencyKeys ? newKey() : undefined)) : undefined;
    const retryable = !write || key !== undefined;
    const headers: Record<string, string> = { Accept: o.accept ?? "application/json", ...this.headers };
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    if (key !== undefined) headers["Idempotency-Key"] = key;
    let body: string | undefined;
    // Every write says JSON, a bodiless one too: kurad refuses any other
    // type, which a web page of another site could send it unasked.
    if (o.body !== undefined || !(method === "GET" || method === "HEAD")) headers["Content-Type"] = "application/json";
    if (o.body !== undefined) body = JSON.stringify(o.body);
    const url = this.url(path, o.query);
    const timeoutMs = o.timeoutMs ?? this.timeoutMs;
    for (let attempt = 0; ; attempt++) {
      const last = !retryable || attempt >= this.retries;
      let err: KuraError;
      let retryAfter: number | undefined;
      try {
        const res = await this.once<T>(method, url, headers, body, timeoutMs, o.signal, path);
        if (res.status >= 200 && res.status < 300) return res;
        err = apiError(res, method, path);
        retryAfter = (err as KuraApiError).retryAfter;
        if (last || !RETRY_STATUS.has(res.status)) throw err;
      } catch (e) {
        if (!(e instanceof KuraConnectionError) || last) throw e;
        err = e;
      }
      await sleep(this.backoff(attempt, retryAfter), o.signal);
    }
  }

  private async once<T>(method: string, url: string, headers: Record<string, string>, body: string | undefined, timeoutMs: number, signal: AbortSignal | undefined, path: string): Promise<RawResponse<T>> {
    const timeout = AbortSignal.timeout(timeoutMs);
    const sig = signal ? AbortSignal.any([signal, timeout]) : timeout;
    try {
      const res = await this.fetchFn(url, { method, headers, body, signal: sig });
      const text = await res.text();
      let data: any = text;
      if ((res.headers.get("content-type") ?? "").includes("json") && text !== "") {
        try {
          data = JSON.parse(text);
        } catch {
          if (res.ok) throw new KuraConnectionError(`${method} ${path}: the answer is not JSON`);
        }
      }
      return { status: res.status, headers: res.headers, data };
    } catch (e) {
      if (e instanceof KuraError) throw e;
      if (signal?.aborted) throw signal.reason ?? e; // the caller's own abort: not ours to retry
      if (timeout.aborted) throw new KuraTimeoutError(`${method} ${path}: no answer within ${timeoutMs} ms`, { cause: e });
      throw new KuraConnectionError(`${method} ${path}: ${(e as Error)?.message ?? e}${(e as any)?.cause?.code ? ` (${(e as any).cause.code})` : ""}`, { cause: e });
    }
  }

  private async call<T>(method: string, path: string, o: CallOptions & { query?: Query; body?: unknown } = {}): Promise<T> {
    return (await this.request<T>(method, path, o)).data;
  }

  // Info and health.
  info(o?: CallOptions): Promise<Info> { return this.call("GET", "/v1/info", o); }
  async ready(o?: CallOptions): Promise<boolean> {
    try {
      await this.call("GET", "/readyz", { ...o });
      return true;
    } catch (e) {
      if (e instanceof KuraApiError && e.status === 503) return false;
      throw e;
    }
  }

  // Records.
  putRecord(r: RecordInput, o?: CallOptions): Promise<KuraRecord & { deduplicated?: boolean }> { return this.call("POST", "/v1/records", { ...o, body: r }); }
  async putRecords(records: RecordInput[], o?: CallOptions): Promise<KuraRecord[]> {
    return (await this.call<{ records: KuraRecord[] }>("POST", "/v1/records/batch", { ...o, body: { records } })).records;
  }
  getRecord(id: string, o?: CallOptions): Promise<KuraRecord> { return this.call("GET", `/v1/records/${enc(id)}`, o); }
  getRecordByHash(hash: string, o?: CallOptions): Promise<KuraRecord> { return this.call("GET", `/v1/records/by-hash/${enc(hash)}`, o); }
  listRecords(q: { type?: string; author_id?: string; since?: string; until?: string; limit?: number; cursor?: string } = {}, o?: CallOptions): Promise<{ records: KuraRecord[]; next_cursor?: string }> {
    return this.call("GET", "/v1/records", { ...o, query: q });
  }
  /** Admin: drop a record's content (content_hash stays). */
  redactRecord(id: string, body: { reason: string }, o?: CallOptions): Promise<{ record: KuraRecord; redaction: Record<string, unknown>; already_redacted: boolean }> { return this.call("POST", `/v1/records/${enc(id)}/redact`, { ...o, body }); }

  // Ledgers.
  createLedger(body: { label: string; record_ids: string[]; parent_ids?: string[] }, o?: CallOptions): Promise<Ledger> { return this.call("POST", "/v1/ledgers", { ...o, body }); }
  getLedger(id: string, o?: CallOptions): Promise<Ledger> { return this.call("GET", `/v1/ledgers/${enc(id)}`, o); }
  ledgerRecords(id: string, q: { limit?: number; cursor?: string } = {}, o?: CallOptions): Promise<{ records: KuraRecord[]; next_cursor?: string }> {
    return this.call("GET", `/v1/ledgers/${enc(id)}/records`, { ...o, query: q });
  }
  /** Every record of a ledger, in ledger order, following the pages. */
  async allLedgerRecords(id: string, o?: CallOptions): Promise<KuraRecord[]> {
    const out: KuraRecord[] = [];
    let cursor: string | undefined;
    do {
      const p = await this.ledgerRecords(id, { limit: 1000, cursor }, o);
      out.push(...p.records);
      cursor = p.next_cursor || undefined;
    } while (cursor);
    return out;
  }
  ledgerProof(id: string, recordId: string, o?: CallOptions): Promise<InclusionProof> { return this.call("GET", `/v1/ledgers/${enc(id)}/proof/${enc(recordId)}`, o); }
  /** The server's own verification (GET /v1/ledgers/{id}/verify); prefer the offline verifyLedger. */
  verifyLedgerOnServer(id: string, o?: CallOptions): Promise<any> { return this.call("GET", `/v1/ledgers/${enc(id)}/verify`, o); }
  diffLedgers(a: string, b: string, o?: CallOptions): Promise<any> { return this.call("GET", `/v1/ledgers/${enc(a)}/diff/${enc(b)}`, o); }

  // Sessions.
  createSession(body: { project: string; name: string; scope?: string; from_ledger_id?: string }, o?: CallOptions): Promise<Session> { return this.call("POST", "/v1/sessions", { ...o, body }); }
  getSession(id: string, o?: CallOptions): Promise<Session> { return this.call("GET", `/v1/sessions/${enc(id)}`, o); }
  listSessions(q: { project?: string; limit?: number; cursor?: string } = {}, o?: CallOptions): Promise<{ sessions: Session[]; next_cursor?: string }> {
    return this.call("GET", "/v1/sessions", { ...o, query: q });
  }
  /** Move the head by compare-and-swap (POST /v1/sessions/{id}/head). */
  moveHead(id: string, body: Record<string, unknown>, o?: CallOptions): Promise<Session> { return this.call("POST", `/v1/sessions/${enc(id)}/head`, { ...o, body }); }
  async reflog(id: string, o?: CallOptions): Promise<ReflogEntry[]> { return (await this.call<{ reflog: ReflogEntry[] }>("GET", `/v1/sessions/${enc(id)}/reflog`, o)).reflog; }
  sessionLog(id: string, q: { limit?: number; cursor?: string } = {}, o?: CallOptions): Promise<any> { return this.call("GET", `/v1/sessions/${enc(id)}/log`, { ...o, query: q }); }
  verifySessionOnServer(id: string, q: { expect_head_hash?: string } = {}, o?: CallOptions): Promise<any> { return this.call("GET", `/v1/sessions/${enc(id)}/verify`, { ...o, query: q }); }

  // Turns.
  openTurn(sessionId: string, body: { instruction: Partial<RecordInput> & { content: unknown; author_id: string }; context?: unknown[]; memory?: { query?: string; budget_bytes?: number; max_per_bucket?: number; max_trace?: number }; dispatch?: string; deadline_seconds?: number }, o?: CallOptions): Promise<Turn> {
    return this.call("POST", `/v1/sessions/${enc(sessionId)}/turns`, { ...o, body });
  }
  claimTurn(turnId: string, body: { worker?: string; lease_seconds?: number } = {}, o?: CallOptions): Promise<Claim> { return this.call("POST", `/v1/turns/${enc(turnId)}/claim`, { ...o, body }); }
  renewTurn(turnId: string, body: { epoch: number; lease_seconds?: number }, o?: CallOptions): Promise<Claim> { return this.call("POST", `/v1/turns/${enc(turnId)}/renew`, { ...o, body }); }
  appendTurn(turnId: string, body: { epoch?: number; records: (RecordInput | { record_id: string })[] }, o?: CallOptions): Promise<{ turn_id: string; records: KuraRecord[]; output_record_ids: string[] }> {
    return this.call("POST", `/v1/turns/${enc(turnId)}/records`, { ...o, body });
  }
  closeTurn(turnId: string, body: { epoch?: number; status?: "complete" | "failed" } = {}, o?: CallOptions): Promise<Turn> { return this.call("POST", `/v1/turns/${enc(turnId)}/close`, { ...o, body }); }
  getTurn(turnId: string, o?: CallOptions): Promise<Turn> { return this.call("GET", `/v1/turns/${enc(turnId)}`, o); }
  listTurns(q: { session_id?: string; state?: string; limit?: number; cursor?: string } = {}, o?: CallOptions): Promise<{ turns: Turn[]; next_cursor?: string }> {
    return this.call("GET", "/v1/turns", { ...o, query: q });
  }

  // Memory.
  private mem(scope: string, rest: string): string { return `/v1/scopes/${enc(scope)}/memory${rest}`; }
  putNode(scope: string, node: Record<string, unknown>, o?: CallOptions): Promise<MemoryNode> { return this.call("POST", this.mem(scope, "/nodes"), { ...o, body: node }); }
  putNodes(scope: string, nodes: Record<string, unknown>[], o?: CallOptions): Promise<any> { return this.call("POST", this.mem(scope, "/nodes/batch"), { ...o, body: { nodes } }); }
  getNode(scope: string, ref: string, q: { as_of?: string } = {}, o?: CallOptions): Promise<MemoryNode> { return this.call("GET", this.mem(scope, `/nodes/${enc(ref)}`), { ...o, query: q }); }
  nodeVersions(scope: string, ref: string, o?: CallOptions): Promise<any> { return this.call("GET", this.mem(scope, `/nodes/${enc(ref)}/history`), o); }
  listNodes(scope: string, q: Query = {}, o?: CallOptions): Promise<{ nodes: MemoryNode[]; next_cursor?: string }> { return this.call("GET", this.mem(scope, "/nodes"), { ...o, query: q }); }
  transitionNode(scope: string, ref: string, body: Record<string, unknown>, o?: CallOptions): Promise<MemoryNode> { return this.call("POST", this.mem(scope, `/nodes/${enc(ref)}/transition`), { ...o, body }); }
  reviseNode(scope: string, ref: string, body: Record<string, unknown>, o?: CallOptions): Promise<any> { return this.call("POST", this.mem(scope, `/nodes/${enc(ref)}/revise`), { ...o, body }); }
  putRelation(scope: string, body: Record<string, unknown>, o?: CallOptions): Promise<any> { return this.call("POST", this.mem(scope, "/relations"), { ...o, body }); }
  listRelations(scope: string, q: Query = {}, o?: CallOptions): Promise<{ relations: any[]; next_cursor?: string }> { return this.call("GET", this.mem(scope, "/relations"), { ...o, query: q }); }
  memoryFeedback(scope: string, body: Record<string, unknown>, o?: CallOptions): Promise<any> { return this.call("POST", this.mem(scope, "/feedback"), { ...o, body }); }
  searchMemory(scope: string, q: Query & { q?: string }, o?: CallOptions): Promise<any> { return this.call("GET", this.mem(scope, "/search"), { ...o, query: q }); }

  // Provenance.
  private prov(scope: string, ref: string, rest = ""): string { return `/v1/scopes/${enc(scope)}/provenance/${enc(ref)}${rest}`; }
  provenance(scope: string, ref: string, q: { direction?: "backward" | "forward" | "both"; depth?: number } = {}, o?: CallOptions): Promise<any> { return this.call("GET", this.prov(scope, ref), { ...o, query: q }); }
  evidence(scope: string, ref: string, o?: CallOptions): Promise<any> { return this.call("GET", this.prov(scope, ref, "/evidence"), o); }
  rawSources(scope: string, ref: string, o?: CallOptions): Promise<any> { return this.call("GET", this.prov(scope, ref, "/raw-sources"), o); }
  derived(scope: string, ref: string, o?: CallOptions): Promise<any> { return this.call("GET", this.prov(scope, ref, "/derived"), o); }

  // Context.
  previewContext(scope: string, body: Record<string, unknown> = {}, o?: CallOptions): Promise<any> { return this.call("POST", `/v1/scopes/${enc(scope)}/context/preview`, { ...o, body }); }
  compileContext(scope: string, body: Record<string, unknown> = {}, o?: CallOptions): Promise<any> { return this.call("POST", `/v1/scopes/${enc(scope)}/context/compile`, { ...o, body }); }
  getBundle(scope: string, id: string, o?: CallOptions): Promise<any> { return this.call("GET", `/v1/scopes/${enc(scope)}/context/bundles/${enc(id)}`, o); }

  // Knowledge bases.
  private kb(kb: string, rest: string): string { return `/v1/kb/${enc(kb)}${rest}`; }
  kbPut(kb: string, entry: Record<string, unknown>, o?: CallOptions): Promise<any> { return this.call("PUT", this.kb(kb, "/entries"), { ...o, body: entry }); }
  kbPutBatch(kb: string, body: Record<string, unknown>, o?: CallOptions): Promise<any> { return this.call("PUT", this.kb(kb, "/entries/batch"), { ...o, body }); }
  kbPatch(kb: string, body: Record<string, unknown>, o?: CallOptions): Promise<any> { return this.call("PATCH", this.kb(kb, "/entries"), { ...o, body }); }
  kbGet(kb: string, q: Query & { scope?: string; identifier?: string }, o?: CallOptions): Promise<any> { return this.call("GET", this.kb(kb, "/entries"), { ...o, query: q }); }
  kbSearch(kb: string, q: Query & { scope?: string; q: string; limit?: number }, o?: CallOptions): Promise<any> { return this.call("GET", this.kb(kb, "/search"), { ...o, query: q }); }
  kbLookup(kb: string, q: Query & { scope?: string; q: string; mode?: string; limit?: number }, o?: CallOptions): Promise<any> { return this.call("GET", this.kb(kb, "/lookup"), { ...o, query: q }); }
  kbDelete(kb: string, q: Query & { scope?: string; identifier?: string; all?: boolean }, o?: CallOptions): Promise<any> { return this.call("DELETE", this.kb(kb, "/entries"), { ...o, query: q }); }
  kbHistory(kb: string, q: Query & { scope?: string; identifier: string }, o?: CallOptions): Promise<any> { return this.call("GET", this.kb(kb, "/history"), { ...o, query: q }); }
  kbStats(kb: string, q: Query & { scope?: string } = {}, o?: CallOptions): Promise<any> { return this.call("GET", this.kb(kb, "/stats"), { ...o, query: q }); }

  // Events.
  /** GET /v1/events; with wait (seconds), a long poll (the timeout is stretched to cover it). */
  events(q: { after?: number; limit?: number; type?: string | string[]; project?: string; wait?: number | string } = {}, o: CallOptions = {}): Promise<EventPage & { compacted_through?: number }> {
    const waitS = typeof q.wait === "number" ? q.wait : q.wait ? parseFloat(q.wait) * (/ms$/.test(q.wait) ? 0.001 : /m$/.test(q.wait) ? 60 : 1) : 0;
    const query: Query = { ...q, type: Array.isArray(q.type) ? q.type.join(",") : q.type, wait: typeof q.wait === "number" ? `${q.wait}s` : q.wait };
    return this.call("GET", "/v1/events", { ...o, query, timeoutMs: (o.timeoutMs ?? this.timeoutMs) + waitS * 1000 });
  }
  /**
   * Follows the event feed: an async iterator over GET /v1/events/stream
   * (mode "sse", the default) or long polls of /v1/events (mode "poll"),
   * resuming after the last event it yielded when a connection drops.
   */
  follow(o: EventFollowOptions = {}): AsyncGenerator<KuraEvent, void, undefined> { return followEvents(this, this.fetchFn, o); }

  /** @internal headers for a request made outside request() (the SSE stream). */
  authHeaders(): Record<string, string> {
    const h: Record<string, string> = { ...this.headers };
    if (this.token) h.Authorization = `Bearer ${this.token}`;
    return h;
  }

  // The log.
  async logCheckpoint(o?: CallOptions): Promise<string> { return String((await this.request("GET", "/v1/log/checkpoint", { ...o, accept: "text/plain" })).data); }
  logConsistency(old: number, newSize?: number, o?: CallOptions): Promise<LogConsistencyProof> { return this.call("GET", "/v1/log/consistency", { ...o, query: { old, new: newSize } }); }
  logInclusion(q: { seq?: number; ledger_id?: string; size?: number }, o?: CallOptions): Promise<LogInclusionProof> { return this.call("GET", "/v1/log/inclusion", { ...o, query: q }); }
  logLeaves(start: number, end: number, o?: CallOptions): Promise<any> { return this.call("GET", "/v1/log/leaves", { ...o, query: { start, end } }); }

  /**
   * Fetches a session with every ledger reachable from its head, their
   * records, the signed reflog and the log section (checkpoint and each
   * ledger's inclusion proof), in the shape of `kura export --format=jsonl`.
   */
  async exportSession(sessionId: string, o?: CallOptions): Promise<Record<string, unknown>[]> {
    const [s, reflog, info] = await Promise.all([this.getSession(sessionId, o), this.reflog(sessionId, o), this.info(o)]);
    const ledgers: Ledger[] = [];
    const seen = new Set<string>();
    const todo = s.head_ledger_id ? [s.head_ledger_id] : [];
    for (const e of reflog) todo.push(e.to);
    while (todo.length) {
      const id = todo.pop()!;
      if (seen.has(id)) continue;
      seen.add(id);
      const l = await this.getLedger(id, o);
      ledgers.push(l);
      todo.push(...(l.parent_ids ?? []));
    }
    const records = new Map<string, KuraRecord>();
    for (const l of ledgers) for (const r of await this.allLedgerRecords(l.id, o)) records.set(r.id, r);
    let log: unknown;
    if (info.log_origin && info.log?.state !== "off") {
      const checkpoint = await this.logCheckpoint(o);
      const size = Number(checkpoint.split("\n")[1]);
      const inclusions: unknown[] = [];
      for (const l of ledgers) {
        try {
          inclusions.push({ ledger_id: l.id, ...(await this.logInclusion({ ledger_id: l.id, size }, o)) });
        } catch (e) {
          if (!(e instanceof KuraApiError && e.code === "not_found")) throw e;
        }
      }
      log = { checkpoint, inclusions };
    }
    return [
      { kind: "session", ...s, public_key: info.public_key, reflog, ...(log ? { log } : {}) },
      ...[...records.values()].map((r) => ({ kind: "record", ...r })),
      ...ledgers.reverse().map((l) => ({ kind: "ledger", ...l })),
    ];
  }

  /**
   * Fetches a session (exportSession) and verifies it offline
   * (verifySessionExport) against publicKey — pass one you got from a
   * source you trust; by default /v1/info's, which proves consistency with
   * that key only. Throws VerificationError on the first problem found.
   */
  async verifySession(sessionId: string, o: CallOptions & ExportVerifyOptions & { publicKey?: string } = {}): Promise<ExportReport> {
    const items = await this.exportSession(sessionId, o);
    const pk = o.publicKey ?? (await this.info(o)).public_key;
    const opts = { expectHeadHash: o.expectHeadHash, witnessKeys: o.witnessKeys };
    return syncVerificationAvailable() ? verifySessionExport(items, pk, opts) : verifySessionExportAsync(items, pk, opts);
  }
}

function apiError(res: RawResponse, method: string, path: string): KuraApiError {
  const e = (res.data as any)?.error;
  const ra = res.headers.get("retry-after");
  const retryAfter = ra !== null && /^\d+$/.test(ra.trim()) ? Number(ra) : undefined;
  // kurad names the request id in an internal error's message; take a header too if a proxy adds one.
  const requestId = res.headers.get("x-request-id") ?? (typeof e?.message === "string" ? /\(request ([^)\s]+)\)/.exec(e.message)?.[1] : undefined);
  if (e && typeof e === "object" && typeof e.code === "string") {
    return new KuraApiError({ status: res.status, code: e.code, message: String(e.message ?? ""), details: e.details, requestId, retryAfter, method, path });
  }
  const text = typeof res.data === "string" ? res.data.slice(0, 200) : "";
  return new KuraApiError({ status: res.status, code: "unknown", message: text || `HTTP ${res.status}`, requestId, retryAfter, method, path });
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal!.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
