// Runs in a real Chromium (TestBrowser_TypeScriptClient): the built ESM of
// @kura-memory/client, served from this page's origin, verifies the
// known-answer vectors and a real kurad's answers with WebCrypto, catches
// tampering, and its synchronous functions say to use the Async ones.
import * as kura from "/dist/index.js";

const out = { errors: [] };

// whatOf resolves to "passed", a VerificationError's what, or the error's name and message.
async function whatOf(p) {
  try {
    await p;
    return "passed";
  } catch (e) {
    return e instanceof kura.VerificationError ? e.what : `${e.name}: ${e.message}`;
  }
}

const flip = (hex) => (hex[0] === "0" ? "1" : "0") + hex.slice(1);

try {
  out.syncAvailable = kura.syncVerificationAvailable();

  const v = await (await fetch("/vectors.json")).json();
  out.vectors = { records: [], merkle: [], ledgers: [] };
  for (const [i, r] of v.records.entries()) out.vectors.records.push((await kura.verifyRecordAsync({ id: `v${i}`, ...r })).seal === r.seal);
  for (const m of v.merkle) out.vectors.merkle.push((await kura.merkleRootAsync(m.leaves)) === m.root);
  for (const l of v.ledgers) out.vectors.ledgers.push((await kura.ledgerHashAsync(l.root_hash, l.parent_hashes, l.label, l.created_at)) === l.hash);

  // kurad's answers, fetched by the client from this origin.
  const c = new kura.KuraClient({ baseUrl: location.origin, retries: 0 });
  const info = await c.info();
  const sessionId = new URLSearchParams(location.search).get("session");
  const s = await c.getSession(sessionId);
  const ledger = await c.getLedger(s.head_ledger_id);
  const records = await c.allLedgerRecords(ledger.id);
  const lv = await kura.verifyLedgerAsync(ledger, records, info.public_key);
  out.ledger = { id: lv.ledgerId, records: lv.recordsChecked, signatureChecked: lv.signatureChecked };
  out.proofs = 0;
  for (const r of records) {
    await kura.verifyInclusionAsync(await c.ledgerProof(ledger.id, r.id), r, ledger);
    out.proofs++;
  }
  const rep = await c.verifySession(sessionId, { publicKey: info.public_key, expectHeadHash: ledger.hash });
  out.session = { ledgers: rep.ledgersChecked, headMoves: rep.headMovesChecked, logChecked: rep.logChecked };

  const forged = structuredClone(records);
  forged[0].content = { text: "forged" };
  const { seal: _, ...noSeal } = records[0];
  out.tampers = {
    content: await whatOf(kura.verifyLedgerAsync(ledger, forged, info.public_key)),
    order: await whatOf(kura.verifyLedgerAsync(ledger, [...records].reverse(), info.public_key)),
    label: await whatOf(kura.verifyLedgerAsync({ ...ledger, label: "forged" }, records, info.public_key)),
    signature: await whatOf(kura.verifyLedgerAsync({ ...ledger, signature: flip(ledger.signature) }, records, info.public_key)),
    missingSeal: await whatOf(kura.verifyRecordAsync(noSeal)),
  };

  try {
    kura.verifyRecord(records[0]);
    out.sync = { name: "passed" };
  } catch (e) {
    out.sync = { name: e.name, kuraError: e instanceof kura.KuraError, verificationError: e instanceof kura.VerificationError, message: e.message };
  }
} catch (e) {
  out.errors.push(String((e && e.stack) || e));
}
window.kuraResult = out;
