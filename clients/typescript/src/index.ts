export * from "./errors.js";
export * from "./types.js";
export { canonicalize, canonicalizeText, CanonicalizationError } from "./jcs.js";
export {
  contentHash, recordHash, recordSeal, merkleRoot, auditPath, verifyAuditPath, ledgerHash, ledgerFramingProblem, metadataJSON,
  contentHashAsync, recordHashAsync, recordSealAsync, merkleRootAsync, ledgerHashAsync,
} from "./hashes.js";
export * from "./verify.js";
export {
  type Checkpoint, verifyCheckpoint, verifyLogInclusion, verifyLogConsistency, logVKey, parsePublicKey,
  verifyCheckpointAsync, verifyLogInclusionAsync, verifyLogConsistencyAsync, logVKeyAsync,
} from "./log.js";
export { syncVerificationAvailable } from "./ops.js";
export { KuraClient, type KuraClientOptions, type CallOptions, type RawResponse } from "./client.js";
export { type EventFollowOptions } from "./events.js";
