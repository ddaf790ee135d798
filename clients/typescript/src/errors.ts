// Every error this package throws on purpose is a KuraError: an answer of
// kurad that is not 2xx (KuraApiError, with the API's error code), a request
// that never got an answer (KuraConnectionError, KuraTimeoutError), or data
// that does not verify (VerificationError, naming what failed).

/** Base class of every error this package throws on purpose. */
export class KuraError extends Error {
  override name = "KuraError";
}

/** Error codes kurad answers with (docs/api.md "Errors"). */
export type ApiErrorCode =
  | "invalid_argument" | "unauthenticated" | "permission_denied" | "not_found" | "method_not_allowed"
  | "conflict" | "too_large" | "unsupported_media_type" | "rate_limited" | "internal" | "unavailable"
  | "insufficient_storage" | (string & {});

/** A non-2xx answer from kurad, carrying its error body. */
export class KuraApiError extends KuraError {
  override name = "KuraApiError";
  /** HTTP status. */
  readonly status: number;
  /** The API's error code, e.g. "not_found", "conflict"; "unknown" when the body was not kurad's. */
  readonly code: ApiErrorCode;
  /** error.details, when the API gave any. */
  readonly details: Record<string, unknown> | undefined;
  /** The X-Request-Id header, when the answer carried one. */
  readonly requestId: string | undefined;
  /** Seconds from Retry-After, when present. */
  readonly retryAfter: number | undefined;

  constructor(o: { status: number; code: string; message: string; details?: Record<string, unknown>; requestId?: string; retryAfter?: number; method?: string; path?: string }) {
    super(`${o.method ?? ""} ${o.path ?? ""}: ${o.status} ${o.code}: ${o.message}`.trim());
    this.status = o.status;
    this.code = o.code;
    this.details = o.details;
    this.requestId = o.requestId;
    this.retryAfter = o.retryAfter;
  }

  get isNotFound(): boolean { return this.code === "not_found"; }
  get isConflict(): boolean { return this.code === "conflict"; }
}

/** The request got no answer: refused, reset, DNS, or the body broke off. */
export class KuraConnectionError extends KuraError {
  override name = "KuraConnectionError";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** The request took longer than the client's timeout. */
export class KuraTimeoutError extends KuraConnectionError {
  override name = "KuraTimeoutError";
}

/**
 * A check could not run here, so nothing was checked: the synchronous
 * functions (verifyRecord, verifyLedger, ...) need node:crypto, which a
 * browser does not have (use the Async variants there), and the Async ones
 * need WebCrypto (a secure context). Not a VerificationError: nothing was
 * found wrong with the data.
 */
export class VerificationUnavailableError extends KuraError {
  override name = "VerificationUnavailableError";
}

/** What a verification found wrong (the binding names of API.md and the export/log checks). */
export type VerificationWhat =
  | "content_hash" | "hash" | "seal" | "root" | "ledger_hash" | "signature" | "order"
  | "reflog" | "head_signature" | "head" | "head_hash" | "chain"
  | "log_signature" | "log_cosignature" | "log_leaf" | "log_proof" | "log_root" | "log_consistency";

/** One thing that failed, as VerificationError.problems lists them. */
export interface VerificationProblem {
  what: VerificationWhat;
  /** The record, ledger, head move or log the problem is about, e.g. "record 01a2...". */
  object: string;
  /** The value the object carries (stored). */
  expected?: string;
  /** The value recomputed from the data. */
  got?: string;
  message: string;
}

/**
 * Data that does not verify. `what` names what failed; the message names the
 * object and what was expected against what was computed. `problems` lists
 * every failure found (the first is the one `what` names).
 */
export class VerificationError extends KuraError {
  override name = "VerificationError";
  readonly what: VerificationWhat;
  readonly object: string;
  readonly expected: string | undefined;
  readonly got: string | undefined;
  readonly problems: VerificationProblem[];

  constructor(first: VerificationProblem, problems: VerificationProblem[] = [first]) {
    const more = problems.length > 1 ? ` (and ${problems.length - 1} more problem${problems.length > 2 ? "s" : ""})` : "";
    super(first.message + more);
    this.what = first.what;
    this.object = first.object;
    this.expected = first.expected;
    this.got = first.got;
    this.problems = problems;
  }
}

/** A problem with what, object and a message of the usual shape. */
export function problem(what: VerificationWhat, object: string, expected?: string, got?: string, detail?: string): VerificationProblem {
  let message = `${object}: ${what} does not verify`;
  if (detail) message += `: ${detail}`;
  if (expected !== undefined || got !== undefined) message += ` (stored ${expected ?? "none"}, computed ${got ?? "none"})`;
  return { what, object, expected, got, message };
}
