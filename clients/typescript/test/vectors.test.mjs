// Every known-answer vector of kurahash/testdata/hashes.json (a copy of
// shared/vectors/hashes.json), read from the repository at test time.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as kura from "../dist/index.js";

const vectors = JSON.parse(readFileSync(new URL("../../../kurahash/testdata/hashes.json", import.meta.url), "utf8"));

test("the vector file has every section", () => {
  for (const k of ["jcs", "records", "merkle", "ledgers", "ledgers_not_verifiable"]) assert.ok(vectors[k].length > 0, k);
});

test("jcs vectors", () => {
  for (const [i, c] of vectors.jcs.entries()) assert.equal(kura.canonicalizeText(c.input), c.canonical, `jcs[${i}]`);
});

test("record vectors: canonical content, content_hash, hash, seal (sync and async)", async () => {
  for (const [i, r] of vectors.records.entries()) {
    assert.equal(kura.canonicalize(r.content), r.jcs_content, `records[${i}] jcs`);
    assert.equal(kura.contentHash(r.content), r.content_hash, `records[${i}] content_hash`);
    assert.equal(await kura.contentHashAsync(r.content), r.content_hash, `records[${i}] content_hash async`);
    assert.equal(kura.recordHash(r.type, r.content_hash, r.author_id), r.hash, `records[${i}] hash`);
    assert.equal(await kura.recordHashAsync(r.type, r.content_hash, r.author_id), r.hash);
    assert.equal(kura.recordSeal(r.hash, r.metadata, r.created_at), r.seal, `records[${i}] seal`);
    assert.equal(await kura.recordSealAsync(r.hash, r.metadata, r.created_at), r.seal);
    // As a whole record, too.
    const rec = { id: `v${i}`, ...r };
    assert.equal(kura.verifyRecord(rec).seal, r.seal);
    assert.equal((await kura.verifyRecordAsync(rec)).seal, r.seal);
  }
});

test("merkle vectors: roots and every audit path", async () => {
  for (const [i, m] of vectors.merkle.entries()) {
    assert.equal(kura.merkleRoot(m.leaves), m.root, `merkle[${i}] root`);
    assert.equal(await kura.merkleRootAsync(m.leaves), m.root);
    assert.equal(m.proofs.length, m.leaves.length);
    for (const p of m.proofs) {
      assert.deepEqual(kura.auditPath(m.leaves, p.leaf_index), p.audit_path, `merkle[${i}] leaf ${p.leaf_index}`);
      assert.ok(kura.verifyAuditPath(m.leaves[p.leaf_index], p.leaf_index, m.leaves.length, p.audit_path, m.root));
      if (m.leaves.length > 1) {
        const other = (p.leaf_index + 1) % m.leaves.length;
        assert.ok(!kura.verifyAuditPath(m.leaves[other], p.leaf_index, m.leaves.length, p.audit_path, m.root), "proof verified for the wrong leaf");
      }
    }
  }
});

test("ledger vectors", async () => {
  for (const [i, l] of vectors.ledgers.entries()) {
    assert.equal(kura.ledgerHash(l.root_hash, l.parent_hashes, l.label, l.created_at), l.hash, `ledgers[${i}]`);
    assert.equal(await kura.ledgerHashAsync(l.root_hash, l.parent_hashes, l.label, l.created_at), l.hash);
  }
});

test("ledgers no verifier accepts: a control character in the label gives their hash another reading", async () => {
  const cases = vectors.ledgers_not_verifiable;
  assert.ok(cases.length > 1);
  assert.equal(cases[0].ledger.hash, cases[1].ledger.hash);
  for (const [i, c] of cases.entries()) {
    const l = c.ledger;
    assert.equal(kura.ledgerHash(l.root_hash, l.parent_hashes, l.label, l.created_at), l.hash, `ledgers_not_verifiable[${i}]`);
    assert.equal(kura.ledgerFramingProblem(l.parent_hashes, l.label, l.created_at)?.field, c.field, c.why);
    for (const run of [() => kura.verifyLedger(l, [], null), () => kura.verifyLedgerAsync(l, [], null)]) {
      await assert.rejects(async () => run(), (e) => e instanceof kura.VerificationError && e.what === "ledger_hash" && /more than one reading/.test(e.message), c.why);
    }
  }
  for (const l of vectors.ledgers) assert.equal(kura.ledgerFramingProblem(l.parent_hashes, l.label, l.created_at), null);
});

test("no module imports node: statically (the package loads in browsers)", async () => {
  const { readdirSync } = await import("node:fs");
  const dir = new URL("../dist/", import.meta.url);
  for (const f of readdirSync(dir).filter((f) => f.endsWith(".js"))) {
    const src = readFileSync(new URL(f, dir), "utf8");
    assert.doesNotMatch(src, /^\s*import[^;]*from\s*["']node:/m, f);
    assert.doesNotMatch(src, /\brequire\(/, f);
  }
  assert.equal(kura.syncVerificationAvailable(), true);
});
