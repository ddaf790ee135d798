// Following the event feed as an async iterator: Server-Sent Events over a
// fetch stream (GET /v1/events/stream), or long polls of GET /v1/events.
// Either way the iterator keeps the seq of the last event it yielded and,
// when a connection drops or kurad restarts, reconnects with after=<seq>,
// so no event is skipped and none is yielded twice.

import { KuraApiError, KuraConnectionError } from "./errors.js";
import type { KuraEvent } from "./types.js";
import type { KuraClient } from "./client.js";

export interface EventFollowOptions {
  /** Start after this seq (default 0: the whole feed; pass /v1/info last_event_seq for new events only). */
  after?: number;
  /** Only these event types. */
  type?: string | string[];
  /** Only this project. */
  project?: string;
  /** "sse" (default) or "poll" (long polls of /v1/events). */
  mode?: "sse" | "poll";
  /** Long-poll wait in seconds (poll mode; default 30). */
  waitSeconds?: number;
  /** Stop following when this aborts (the iterator then ends). */
  signal?: AbortSignal;
  /** Reconnect a stream that sent nothing, not even a keepalive, for this long (ms; default 45000). */
  idleMs?: number;
  /** Give up after this many failed reconnects in a row (default: never). */
  maxReconnects?: number;
}

function backoffMs(c: KuraClient, n: number): number {
  const cap = Math.min(c.maxBackoffMs, c.backoffMs * 2 ** Math.min(n, 10));
  return cap / 2 + Math.random() * (cap / 2);
}

function wait(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** Errors that following cannot get past by reconnecting. */
function fatal(e: unknown): boolean {
  return e instanceof KuraApiError && e.status >= 400 && e.status < 500 && e.status !== 429;
}

export async function* followEvents(c: KuraClient, fetchFn: typeof fetch, o: EventFollowOptions): AsyncGenerator<KuraEvent, void, undefined> {
  let after = o.after ?? 0;
  const type = Array.isArray(o.type) ? o.type.join(",") : o.type;
  let failures = 0;
  while (!o.signal?.aborted) {
    try {
      if (o.mode === "poll") {
        const page = await c.events({ after, type, project: o.project, wait: o.waitSeconds ?? 30, limit: 1000 }, { signal: o.signal });
        failures = 0;
        for (const e of page.events) {
          if (e.seq <= after) continue;
          after = e.seq;
          yield e;
        }
        after = Math.max(after, page.next_after);
        continue;
      }
      for await (const e of sseOnce(c, fetchFn, { after, type, project: o.project }, o)) {
        failures = 0;
        if (e.seq <= after) continue;
        after = e.seq;
        yield e;
      }
    } catch (e) {
      if (o.signal?.aborted) return;
      if (fatal(e)) throw e;
      failures++;
      if (o.maxReconnects !== undefined && failures > o.maxReconnects) throw e;
    }
    if (o.signal?.aborted) return;
    await wait(backoffMs(c, failures), o.signal);
  }
}

/** One SSE connection: yields its events until it ends (or throws when it breaks). */
async function* sseOnce(c: KuraClient, fetchFn: typeof fetch, q: { after: number; type?: string; project?: string }, o: EventFollowOptions): AsyncGenerator<KuraEvent> {
  const ctl = new AbortController();
  const onAbort = () => ctl.abort(o.signal?.reason);
  o.signal?.addEventListener("abort", onAbort, { once: true });
  const idleMs = o.idleMs ?? 45_000;
  let idle: ReturnType<typeof setTimeout> | undefined;
  const arm = () => {
    clearTimeout(idle);
    idle = setTimeout(() => ctl.abort(new KuraConnectionError(`event stream: nothing for ${idleMs} ms`)), idleMs);
  };
  try {
    arm();
    let res: Response;
    try {
      res = await fetchFn(c.url("/v1/events/stream", { after: q.after, type: q.type, project: q.project }), {
        headers: { Accept: "text/event-stream", ...c.authHeaders() },
        signal: ctl.signal,
      });
    } catch (e) {
      throw new KuraConnectionError(`event stream: ${(e as Error)?.message ?? e}`, { cause: e });
    }
    if (!res.ok) {
      const text = await res.text().catch(() => "");
      let err: any;
      try {
        err = JSON.parse(text).error;
      } catch { /* not kurad's body */ }
      throw new KuraApiError({ status: res.status, code: err?.code ?? "unknown", message: err?.message ?? text.slice(0, 200), details: err?.details, method: "GET", path: "/v1/events/stream" });
    }
    if (!res.body) throw new KuraConnectionError("event stream: the answer has no body");
    const reader = res.body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    let event = "", data: string[] = [];
    try {
      for (;;) {
        let chunk: ReadableStreamReadResult<Uint8Array>;
        try {
          chunk = await reader.read();
        } catch (e) {
          throw new KuraConnectionError(`event stream broke off: ${(e as Error)?.message ?? e}`, { cause: e });
        }
        if (chunk.done) return;
        arm();
        buf += dec.decode(chunk.value, { stream: true });
        let nl: number;
        while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + (buf[nl] === "\r" && buf[nl + 1] === "\n" ? 2 : 1));
          if (line === "") {
            if (data.length > 0) {
              const text = data.join("\n");
              if (event === "error") {
                let err: any;
                try {
                  err = JSON.parse(text).error;
                } catch { /* not kurad's body */ }
                throw new KuraApiError({ status: err?.code === "unauthenticated" ? 401 : 500, code: err?.code ?? "unknown", message: err?.message ?? text, method: "GET", path: "/v1/events/stream" });
              }
              yield JSON.parse(text) as KuraEvent;
            }
            event = "";
            data = [];
            continue;
          }
          if (line.startsWith(":")) continue;
          const i = line.indexOf(":");
          const field = i < 0 ? line : line.slice(0, i);
          let value = i < 0 ? "" : line.slice(i + 1);
          if (value.startsWith(" ")) value = value.slice(1);
          if (field === "event") event = value;
          else if (field === "data") data.push(value);
        }
      }
    } finally {
      reader.cancel().catch(() => {});
    }
  } finally {
    clearTimeout(idle);
    o.signal?.removeEventListener("abort", onAbort);
    ctl.abort();
  }
}
