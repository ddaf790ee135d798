// The main shapes kurad answers with (docs/api.md). Answers are the decoded
// JSON as is: these interfaces name the fields a caller most often reads
// and leave the rest open.

/** A record (GET /v1/records/{id}). */
export interface KuraRecord {
  id: string;
  hash: string;
  content_hash: string;
  seal: string;
  type: string;
  /** null when redacted (or withheld from this reader). */
  content: unknown;
  author_id: string;
  metadata?: Record<string, string> | null;
  created_at: string;
  redacted?: boolean;
  withheld?: boolean;
  [k: string]: unknown;
}

/** A new record to write: type, content, author_id, metadata. */
export interface RecordInput {
  type: string;
  content: unknown;
  author_id: string;
  metadata?: Record<string, string>;
}

/** A ledger (GET /v1/ledgers/{id}). */
export interface Ledger {
  id: string;
  hash: string;
  root_hash: string;
  label: string;
  parent_ids: string[];
  /** The parents' hashes in parent_ids order (what hash commits to). */
  parent_hashes?: string[];
  record_ids?: string[];
  record_count: number;
  created_at: string;
  signature?: string;
  [k: string]: unknown;
}

/** An inclusion proof (GET /v1/ledgers/{id}/proof/{record}). */
export interface InclusionProof {
  ledger_id: string;
  record_id: string;
  seal: string;
  leaf_index: number;
  tree_size: number;
  root_hash: string;
  audit_path: string[];
}

export interface Session {
  id: string;
  project: string;
  name: string;
  scope: string;
  head_ledger_id: string | null;
  head_hash: string | null;
  created_at: string;
  updated_at: string;
  open_turn_id?: string;
  created_by?: string | null;
  [k: string]: unknown;
}

/** One head move (GET /v1/sessions/{id}/reflog). */
export interface ReflogEntry {
  seq: number;
  from: string | null;
  to: string;
  head_hash: string;
  reason: string;
  at: string;
  signature?: string;
  [k: string]: unknown;
}

export interface Turn {
  id: string;
  session_id: string;
  number: number;
  state: "open" | "complete" | "failed" | "timeout" | string;
  context_ledger_id: string;
  context_bundle_id?: string;
  output_ledger_id: string | null;
  output_record_ids: string[];
  epoch: number;
  worker: string | null;
  lease_expires_at: string | null;
  head_hash?: string;
  extracted?: string[] | null;
  [k: string]: unknown;
}

export interface Claim {
  turn_id: string;
  epoch: number;
  worker: string;
  lease_expires_at: string;
}

export interface MemoryNode {
  ref: string;
  scope: string;
  kind: string;
  id: string;
  title: string;
  summary: string;
  version: number;
  [k: string]: unknown;
}

/** One event of the feed (GET /v1/events). */
export interface KuraEvent {
  seq: number;
  type: string;
  at: string;
  project?: string;
  [k: string]: unknown;
}

export interface EventPage {
  events: KuraEvent[];
  next_after: number;
  last_seq: number;
}

/** GET /v1/info. */
export interface Info {
  version: string;
  public_key: string;
  /** The newest committed event: pass it as follow({after}) to see only new events. */
  last_event_seq: number;
  record_types: string[];
  node_kinds: string[];
  log_origin?: string;
  log_vkey?: string;
  log?: { state: string; size: number; [k: string]: unknown };
  [k: string]: unknown;
}

/** GET /v1/log/inclusion. */
export interface LogInclusionProof {
  seq: number;
  size: number;
  leaf_hash: string;
  leaf?: string;
  proof: string[];
  ledger_id?: string;
}

/** GET /v1/log/consistency. */
export interface LogConsistencyProof {
  old: number;
  new: number;
  proof: string[];
}

/** A page of a list: the plural member and next_cursor. */
export type Page<K extends string, T> = { [P in K]: T[] } & { next_cursor?: string };
