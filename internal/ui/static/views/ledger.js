// views/ledger.js: one ledger: its fields, its records in order, a
// server-side verify, an inclusion proof per record checked here in the
// browser, and a diff against another ledger.

import { badge, errorBox, field, h, hash, link, mount, short, table, when } from "../dom.js";
import { checkInclusion, mismatches, recompute } from "../verify.js";

const enc = encodeURIComponent;

function preview(r) {
  if (r.redacted) return h("span", { class: "muted" }, "redacted");
  if (r.withheld) return h("span", { class: "muted" }, "withheld");
  const s = typeof r.content === "string" ? r.content : JSON.stringify(r.content);
  return s.length > 80 ? s.slice(0, 80) + "…" : s;
}

// proveRecord fetches the inclusion proof of one record and checks it
// against the ledger's root with the seal recomputed from the record
// itself, so neither comes from the proof. override (tests, or a curious
// person through the console) replaces parts of the proof before the check.
export async function proveRecord(api, ledger, rec, override, signal) {
  const proof = await api.get("/v1/ledgers/" + enc(ledger.id) + "/proof/" + enc(rec.id), null, { signal });
  const p = { ...proof, ...(override || {}) };
  const mine = await recompute(rec);
  let res;
  if (mine.seal !== rec.seal) res = { ok: false, reason: "the record's seal does not follow from its content" };
  else if (p.tree_size !== ledger.record_count) res = { ok: false, reason: "the proof is for a tree of " + p.tree_size + ", the ledger holds " + ledger.record_count };
  else res = await checkInclusion(mine.seal, p.leaf_index, p.tree_size, p.audit_path || [], ledger.root_hash);
  return { proof: p, ...res };
}

function proofPanel(r) {
  return h(
    "div",
    { class: "proof", "data-kura-proof": r.ok ? "ok" : "failed" },
    badge(r.ok ? "included: proof checks" : "proof fails", r.ok ? "ok" : "failed"),
    " ",
    r.reason,
    ".",
    h(
      "dl",
      { class: "kv" },
      h("dt", {}, "Leaf index"),
      h("dd", {}, String(r.proof.leaf_index)),
      h("dt", {}, "Tree size"),
      h("dd", {}, String(r.proof.tree_size)),
      h("dt", {}, "Audit path"),
      h("dd", {}, (r.proof.audit_path || []).length ? h("ol", { class: "path" }, r.proof.audit_path.map((p) => h("li", {}, hash(p, 16)))) : "empty (a tree of one)"),
    ),
  );
}

// ledger: GET /v1/ledgers/{id} and its records, a page of up to 1000 at a
// time (?cursor= continues).
export async function ledger({ root, params, query, api, navigate, signal }) {
  const id = params[0];
  const [l, page] = await Promise.all([
    api.get("/v1/ledgers/" + enc(id), null, { signal }),
    api.get("/v1/ledgers/" + enc(id) + "/records", { limit: 1000, cursor: query.get("cursor") || "" }, { signal }),
  ]);
  const records = page.records || [];
  const offset = Number(query.get("offset") || 0);
  const verifyOut = h("div", { "aria-live": "polite" });
  const verifyBtn = h("button", { type: "button", id: "verify-ledger" }, "Verify on the server");
  verifyBtn.addEventListener("click", async () => {
    verifyBtn.disabled = true;
    mount(verifyOut, badge("verifying…", "info", { "data-kura-verify": "pending" }));
    try {
      const v = await api.get("/v1/ledgers/" + enc(id) + "/verify", null, { signal });
      mount(
        verifyOut,
        badge(v.ok ? "verified: ok" : "verification failed", v.ok ? "ok" : "failed", { "data-kura-verify": v.ok ? "ok" : "failed" }),
        " ",
        `${v.records_checked} records checked, signature ${v.signature_ok ? "verifies" : "does not verify"}`,
        v.redacted && v.redacted.length ? `, ${v.redacted.length} redacted` : "",
        v.withheld && v.withheld.length ? `, ${v.withheld.length} withheld` : "",
        ".",
        mismatches(v.mismatches),
      );
    } catch (e) {
      mount(verifyOut, errorBox(e));
    }
    verifyBtn.disabled = false;
  });

  // Per record: a button that shows and checks its inclusion proof.
  const proofOf = (r) => {
    const out = h("div", { "aria-live": "polite" });
    const btn = h("button", { type: "button", class: "prove", "aria-label": "Inclusion proof of record " + r.id }, "Inclusion proof");
    btn.addEventListener("click", async () => {
      mount(out, h("span", { class: "muted" }, "checking…"));
      try {
        mount(out, proofPanel(await proveRecord(api, l, r, null, signal)));
      } catch (e) {
        mount(out, errorBox(e));
      }
    });
    return [btn, out];
  };

  const [otherWrap, otherInput] = field("Other ledger id", { name: "other", required: true, value: query.get("diff") || "", spellcheck: "false", autocomplete: "off" });
  const diffOut = h("div", { "aria-live": "polite" });
  const diffForm = h(
    "form",
    { class: "inline", onsubmit: (e) => (e.preventDefault(), navigate("/ledgers/" + id, { diff: otherInput.value.trim() })) },
    otherWrap,
    h("button", { type: "submit" }, "Diff"),
  );

  mount(
    root,
    h("h1", {}, "Ledger ", l.label ? h("span", {}, l.label) : h("code", {}, short(l.id))),
    h(
      "dl",
      { class: "kv" },
      h("dt", {}, "Id"),
      h("dd", {}, h("code", {}, l.id)),
      h("dt", {}, "hash"),
      h("dd", {}, h("code", { class: "full" }, l.hash)),
      h("dt", {}, "root_hash"),
      h("dd", {}, h("code", { class: "full" }, l.root_hash)),
      h("dt", {}, "Parents"),
      h("dd", {}, (l.parent_ids || []).length ? l.parent_ids.map((p, i) => [i ? ", " : "", link("/ledgers/" + enc(p), p)]) : "none"),
      h("dt", {}, "Records"),
      h("dd", {}, String(l.record_count)),
      h("dt", {}, "Created"),
      h("dd", {}, when(l.created_at)),
      h("dt", {}, "Signature"),
      h("dd", {}, l.signature ? h("code", { class: "full" }, l.signature) : badge("unsigned", "warn")),
    ),
    h("div", { class: "row" }, verifyBtn),
    verifyOut,
    h("h2", {}, "Records"),
    records.length === 0
      ? h("p", { class: "muted" }, "This ledger holds no records.")
      : table(
          null,
          [
            { label: "#", cell: (r) => String(offset + records.indexOf(r)) },
            { label: "Type", cell: (r) => link("/records/" + enc(r.id) + "?ledger=" + enc(l.id), r.type) },
            { label: "Author", cell: (r) => r.author_id },
            { label: "Content", cell: (r) => h("span", { class: "preview" }, preview(r)) },
            { label: "Proof", cell: (r) => proofOf(r) },
          ],
          records,
          { class: "stack", id: "ledger-records" },
        ),
    page.next_cursor ? h("p", {}, link("/ledgers/" + enc(id) + "?" + new URLSearchParams({ cursor: page.next_cursor, offset: offset + records.length }), "Next records →")) : null,
    h("h2", {}, "Diff against another ledger"),
    diffForm,
    diffOut,
  );

  // Tests and curious people can check a doctored proof the same way.
  window.kuraProve = (recordID, override) => proveRecord(api, l, records.find((r) => r.id === recordID), override, signal).then((r) => ({ ok: r.ok, reason: r.reason }));

  const other = query.get("diff");
  if (other) {
    try {
      const d = await api.get("/v1/ledgers/" + enc(id) + "/diff/" + enc(other), null, { signal });
      const list = (title, ids, kind) =>
        h("section", { class: "diff-" + kind }, h("h3", {}, `${title} (${ids.length})`), ids.length ? h("ul", {}, ids.map((r) => h("li", {}, link("/records/" + enc(r), r)))) : h("p", { class: "muted" }, "none"));
      mount(
        diffOut,
        h("p", {}, `Against `, link("/ledgers/" + enc(other), other), `: ${d.common} record(s) in common.`),
        list("Added: in " + short(other) + ", not here", d.added || [], "added"),
        list("Removed: here, not in " + short(other), d.removed || [], "removed"),
      );
    } catch (e) {
      mount(diffOut, errorBox(e));
    }
  }
}
