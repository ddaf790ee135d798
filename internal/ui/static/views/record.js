// views/record.js: one record: what it says, its hashes and seal, and
// whether they follow from its content (recomputed here, in the browser).

import { badge, h, hash, json, link, mount, when } from "../dom.js";
import { recompute } from "../verify.js";

const enc = encodeURIComponent;

// record: GET /v1/records/{id}. A ledger to come back to can ride along
// as ?ledger=<id> (the ledger view links that way).
export async function record({ root, params, query, api, signal }) {
  const r = await api.get("/v1/records/" + enc(params[0]), null, { signal });
  const check = h("span", { role: "status" }, badge("checking…", "info"));
  const from = query.get("ledger");
  const meta = Object.entries(r.metadata || {});
  // The scope whose memory may cite the record: the one it was packed
  // from, else its project's (the default scope of a project's sessions).
  const scope = (r.metadata && (r.metadata.scope || r.metadata.project_id)) || "";
  mount(
    root,
    h("h1", {}, "Record ", h("code", {}, r.type)),
    from ? h("p", {}, link("/ledgers/" + enc(from), "← back to ledger " + from)) : null,
    r.redacted
      ? h(
          "div",
          { class: "panel", role: "note" },
          badge("redacted", "warn"),
          " An admin dropped this record's content for good. Its content_hash, hash and seal stay, so every ledger holding it still verifies. The API does not say who redacted it or why; the record.redacted event in ",
          link("/events", "Events"),
          " marks when.",
        )
      : null,
    r.withheld ? h("div", { class: "panel", role: "note" }, badge("withheld", "warn"), " This is memory from a scope your token does not hold: its content is not shown to you.") : null,
    h(
      "dl",
      { class: "kv", id: "record-fields" },
      h("dt", {}, "Id"),
      h("dd", {}, h("code", {}, r.id)),
      h("dt", {}, "Type"),
      h("dd", {}, r.type),
      h("dt", {}, "Author"),
      h("dd", {}, r.author_id),
      h("dt", {}, "Created"),
      h("dd", {}, when(r.created_at), " ", h("code", {}, r.created_at)),
      h("dt", {}, "hash"),
      h("dd", {}, h("code", { class: "full", "data-field": "hash" }, r.hash)),
      h("dt", {}, "content_hash"),
      h("dd", {}, h("code", { class: "full", "data-field": "content_hash" }, r.content_hash)),
      h("dt", {}, "seal"),
      h("dd", {}, h("code", { class: "full", "data-field": "seal" }, r.seal)),
      h("dt", {}, "Checked here"),
      h("dd", {}, check),
      scope ? [h("dt", {}, "Provenance"), h("dd", {}, link("/provenance/" + enc(scope) + "/" + enc("record:" + r.id), "what scope " + scope + " derived from it"))] : null,
    ),
    h("h2", {}, "Metadata"),
    meta.length ? h("dl", { class: "kv" }, meta.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])) : h("p", { class: "muted" }, "none"),
    h("h2", {}, "Content"),
    r.redacted || r.withheld ? h("p", { class: "muted" }, "Not available.") : json(r.content),
  );
  try {
    const c = await recompute(r);
    const bad = ["content_hash", "hash", "seal"].filter((f) => c[f] !== r[f]);
    check.replaceChildren(
      bad.length === 0
        ? badge("hashes match the content", "ok", { "data-kura-record-check": "ok" })
        : badge(bad.join(", ") + " do not follow from the record", "failed", { "data-kura-record-check": "failed" }),
      r.redacted || r.withheld ? h("span", { class: "muted" }, " (content_hash taken as stored: the content is not here)") : null,
    );
  } catch (e) {
    check.replaceChildren(badge("could not check: " + e.message, "warn"));
  }
}
