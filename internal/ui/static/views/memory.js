// views/memory.js: a memory scope — its nodes, search with the reasons each
// result matched, one node's versions and relations, and the admission
// preview in the API's four buckets.

import { badge, errorBox, field, h, json, link, mount, table, when } from "../dom.js";

const enc = encodeURIComponent;
const RECENT_KEY = "kura.recentScopes";
const SLUG = /^[a-z0-9][a-z0-9_-]{0,63}$/;

// recent scopes are names only (never a token), newest first, at most 8.
export function recent(key) {
  try {
    const v = JSON.parse(localStorage.getItem(key) || "[]");
    return Array.isArray(v) ? v.filter((s) => typeof s === "string" && SLUG.test(s)) : [];
  } catch {
    return [];
  }
}

export function remember(key, name) {
  if (!SLUG.test(name)) return;
  const list = [name, ...recent(key).filter((s) => s !== name)].slice(0, 8);
  localStorage.setItem(key, JSON.stringify(list));
}

const LIFE = { active: "ok", candidate: "info", contested: "warn", archived: "warn", rehydrate_required: "warn" };
const AUTH = { verified: "ok", trusted: "ok", advisory: "info", rejected: "failed" };

export function lifecycle(v) {
  return v ? badge(v, LIFE[v] || "failed", { "data-lifecycle": v, title: "lifecycle" }) : null;
}
export function authority(v) {
  return v ? badge(v, AUTH[v] || "", { "data-authority": v, title: "authority" }) : null;
}

function nodeHref(scope, ref) {
  return "/memory/" + enc(scope) + "?node=" + enc(ref);
}

function reasons(list) {
  if (!list || list.length === 0) return null;
  return h(
    "ul",
    { class: "reasons" },
    list.map((r) => h("li", {}, h("code", {}, r.code), r.detail ? [": ", r.detail] : "")),
  );
}

// scopes: #/memory — pick a scope.
export async function scopes({ root, api, navigate, signal }) {
  const [wrap, input] = field("Scope", { name: "scope", required: true, pattern: "[a-z0-9][a-z0-9_\\-]{0,63}", placeholder: "hashi", autocomplete: "off" });
  const form = h(
    "form",
    { class: "inline", onsubmit: (e) => (e.preventDefault(), input.value.trim() && navigate("/memory/" + enc(input.value.trim()))) },
    wrap,
    h("button", { type: "submit", class: "primary" }, "Open"),
  );
  const mine = recent(RECENT_KEY);
  const fromSessions = h("div", { "aria-live": "polite" }, h("p", { class: "muted" }, "Loading the scopes of sessions…"));
  mount(
    root,
    h("h1", {}, "Memory"),
    h("p", { class: "muted" }, "Every node belongs to one scope (by default a session's project). Open one:"),
    form,
    h("h2", {}, "Recently opened"),
    mine.length ? h("ul", { class: "chips", id: "recent-scopes" }, mine.map((s) => h("li", {}, link("/memory/" + enc(s), s)))) : h("p", { class: "muted" }, "None yet."),
    h("h2", {}, "Scopes of sessions"),
    fromSessions,
  );
  try {
    const data = await api.get("/v1/sessions", { limit: 1000 }, { signal });
    const set = [...new Set((data.sessions || []).map((s) => s.scope || s.project).filter(Boolean))].sort();
    mount(
      fromSessions,
      set.length ? h("ul", { class: "chips", id: "session-scopes" }, set.map((s) => h("li", {}, link("/memory/" + enc(s), s)))) : h("p", { class: "muted" }, "No sessions yet."),
    );
  } catch (e) {
    mount(fromSessions, errorBox(e));
  }
}

// scope: #/memory/<scope>?q=&node=&cursor=
export async function scope({ root, params, query, api, navigate, signal }) {
  const sc = params[0];
  const q = query.get("q") || "";
  const node = query.get("node") || "";
  const cursor = query.get("cursor") || "";
  const base = "/v1/scopes/" + enc(sc);
  if (SLUG.test(sc)) remember(RECENT_KEY, sc);

  const [qWrap, qInput] = field("Search the scope", { name: "q", type: "search", value: q, placeholder: "words, a file, a typo…" });
  const search = h(
    "form",
    { class: "inline", role: "search", onsubmit: (e) => (e.preventDefault(), navigate("/memory/" + enc(sc), { q: qInput.value.trim() })) },
    qWrap,
    h("button", { type: "submit" }, "Search"),
  );
  const results = h("section", { id: "mem-search", "aria-live": "polite" });
  const detail = h("section", { id: "mem-node", "aria-live": "polite" });
  const list = h("section", { id: "mem-nodes" });
  const preview = previewSection(sc, base, api, signal);
  mount(root, h("h1", {}, "Memory: ", sc), h("p", {}, link("/memory", "← other scopes")), search, results, detail, preview, list);

  const jobs = [];
  if (q) jobs.push(showSearch(results, sc, base, q, api, signal));
  if (node) jobs.push(showNode(detail, sc, base, node, api, signal));
  jobs.push(showNodes(list, sc, base, cursor, api, signal));
  await Promise.all(jobs);
}

async function showSearch(out, sc, base, q, api, signal) {
  mount(out, h("h2", {}, "Search results"), h("p", { class: "muted" }, "Searching…"));
  try {
    const data = await api.get(base + "/memory/search", { q, limit: 50 }, { signal });
    const rows = data.results || [];
    mount(
      out,
      h("h2", {}, "Search results for “", q, "”"),
      (data.warnings || []).map((w) => h("p", { class: "badge warn" }, w)),
      rows.length === 0
        ? h("p", { class: "muted" }, "Nothing matches.")
        : table(
            rows.length + (rows.length === 1 ? " result" : " results") + ", best first",
            [
              { label: "Rank", cell: (r) => String(rows.indexOf(r) + 1) },
              { label: "Node", cell: (r) => link(nodeHref(sc, r.ref), r.ref, { class: "ref" }) },
              { label: "Title", cell: (r) => (r.node && (r.node.title || r.node.summary)) || "" },
              { label: "Score", cell: (r) => h("span", { class: "score" }, String(r.score)) },
              { label: "Why", cell: (r) => reasons(r.reasons) },
              { label: "State", cell: (r) => [lifecycle(r.node && r.node.lifecycle), " ", authority(r.node && r.node.authority)] },
            ],
            rows,
            { class: "stack results" },
          ),
    );
  } catch (e) {
    mount(out, h("h2", {}, "Search results"), errorBox(e));
  }
}

async function showNodes(out, sc, base, cursor, api, signal) {
  mount(out, h("h2", {}, "Nodes"), h("p", { class: "muted" }, "Loading…"));
  try {
    const data = await api.get(base + "/memory/nodes", { limit: 50, cursor }, { signal });
    const rows = data.nodes || [];
    mount(
      out,
      h("h2", {}, "Nodes"),
      rows.length === 0
        ? h("p", { class: "muted" }, cursor ? "No more nodes." : "This scope holds no nodes.")
        : table(
            "In creation order",
            [
              { label: "Node", cell: (n) => link(nodeHref(sc, n.ref), n.ref, { class: "ref" }) },
              { label: "Kind", cell: (n) => n.kind },
              { label: "Title / summary", cell: (n) => [n.title ? h("strong", {}, n.title) : null, n.title ? " " : null, h("span", { class: "muted" }, n.summary || "")] },
              { label: "Lifecycle", cell: (n) => lifecycle(n.lifecycle) },
              { label: "Authority", cell: (n) => authority(n.authority) },
              { label: "Confidence", cell: (n) => String(n.confidence) },
              { label: "Version", cell: (n) => String(n.version) },
            ],
            rows,
            { class: "stack nodes", "data-rows": rows.length },
          ),
      h(
        "p",
        { class: "row" },
        cursor ? link("/memory/" + enc(sc), "← first page") : null,
        data.next_cursor ? link("/memory/" + enc(sc) + "?cursor=" + enc(data.next_cursor), "Next page →") : null,
      ),
    );
  } catch (e) {
    mount(out, h("h2", {}, "Nodes"), errorBox(e));
  }
}

async function showNode(out, sc, base, ref, api, signal) {
  mount(out, h("h2", {}, ref), h("p", { class: "muted" }, "Loading…"));
  const path = base + "/memory/nodes/" + enc(ref);
  try {
    const [n, hist, rels] = await Promise.all([
      api.get(path, null, { signal }),
      api.get(path + "/history", null, { signal }),
      api.get(base + "/memory/relations", { ref, limit: 200 }, { signal }),
    ]);
    const versions = hist.versions || [];
    const relations = rels.relations || [];
    mount(
      out,
      h("div", { class: "panel" },
        h("h2", {}, "Node ", h("code", {}, n.ref)),
        h("p", {}, lifecycle(n.lifecycle), " ", authority(n.authority), " ", h("span", { class: "muted" }, "confidence " + n.confidence + ", version " + n.version)),
        h(
          "dl",
          { class: "kv" },
          h("dt", {}, "Title"), h("dd", {}, n.title || ""),
          h("dt", {}, "Summary"), h("dd", {}, n.summary || ""),
          h("dt", {}, "Source"), h("dd", {}, n.source_type || ""),
          n.owner ? [h("dt", {}, "Owner"), h("dd", {}, n.owner)] : null,
          n.written_by ? [h("dt", {}, "Written by"), h("dd", {}, n.written_by)] : null,
          n.payload_ref ? [h("dt", {}, "Payload"), h("dd", {}, h("code", {}, n.payload_ref))] : null,
          (n.target_files || []).length ? [h("dt", {}, "Files"), h("dd", {}, n.target_files.join(", "))] : null,
          h("dt", {}, "Derived from"),
          h("dd", {}, (n.derived_from || []).length ? n.derived_from.map((d, i) => [i ? ", " : "", link("/provenance/" + enc(sc) + "/" + enc(d), d)]) : h("span", { class: "muted" }, "nothing")),
          h("dt", {}, "Provenance"),
          h("dd", {}, link("/provenance/" + enc(sc) + "/" + enc(n.ref), "lineage graph")),
        ),
        h("h3", {}, "Versions"),
        table(
          null,
          [
            { label: "Version", cell: (v) => String(v.version) },
            { label: "Written", cell: (v) => when(v.updated_at || v.created_at) },
            { label: "By", cell: (v) => v.written_by || "" },
            { label: "State", cell: (v) => [lifecycle(v.lifecycle), " ", authority(v.authority)] },
            { label: "Confidence", cell: (v) => String(v.confidence) },
            { label: "Title / summary", cell: (v) => [v.title || "", " ", h("span", { class: "muted" }, v.summary || "")] },
          ],
          versions,
          { class: "stack versions" },
        ),
        (hist.confidence_history || []).length
          ? h("details", {}, h("summary", {}, "Confidence history"), json(hist.confidence_history))
          : null,
        h("h3", {}, "Relations"),
        relations.length === 0
          ? h("p", { class: "muted" }, "None.")
          : table(
              null,
              [
                { label: "From", cell: (r) => link(nodeHref(sc, r.from), r.from) },
                { label: "Kind", cell: (r) => h("strong", {}, r.kind) },
                { label: "To", cell: (r) => link(nodeHref(sc, r.to), r.to) },
                { label: "Confidence", cell: (r) => String(r.confidence) },
                { label: "Reasons", cell: (r) => (r.reasons || []).join("; ") },
              ],
              relations,
              { class: "stack relations" },
            ),
      ),
    );
  } catch (e) {
    mount(out, h("h2", {}, ref), errorBox(e));
  }
}

// The API's bucket names, in the order an agent reads them.
export const BUCKETS = [
  ["use_now", "Use now", "ok"],
  ["inspect_before_use", "Inspect first", "warn"],
  ["do_not_use", "Do not use", "failed"],
  ["rehydrate", "Rehydrate", "info"],
];

function previewSection(sc, base, api, signal) {
  const [wrap, input] = field("Order by (optional query)", { name: "pq", type: "search", placeholder: "words" });
  const out = h("div", { "aria-live": "polite" });
  const run = async (e) => {
    e.preventDefault();
    mount(out, h("p", { class: "muted" }, "Compiling a preview…"));
    try {
      const body = input.value.trim() ? { query: input.value.trim() } : {};
      const ans = await api.post(base + "/context/preview", body, { signal });
      mount(out, buckets(sc, ans));
    } catch (err) {
      mount(out, errorBox(err));
    }
  };
  return h(
    "section",
    { id: "mem-preview" },
    h("h2", {}, "Admission preview"),
    h("p", { class: "muted" }, "What a context compile would hand an agent now, and why, by the admission rules. Writes nothing."),
    h("form", { class: "inline", onsubmit: run }, wrap, h("button", { type: "submit" }, "Preview")),
    out,
  );
}

function buckets(sc, ans) {
  const why = new Map((ans.trace || []).map((t) => [t.ref, t]));
  return [
    h("p", { class: "muted" }, "As of ", when(ans.as_of), ", digest ", h("code", { class: "hash", title: ans.digest }, (ans.digest || "").slice(0, 19) + "…")),
    (ans.warnings || []).map((w) => h("p", { class: "badge warn" }, w)),
    h(
      "div",
      { class: "buckets" },
      BUCKETS.map(([key, title, kind]) => {
        const items = (ans.buckets && ans.buckets[key]) || [];
        const omitted = (ans.omitted && ans.omitted[key]) || 0;
        return h(
          "section",
          { class: "panel bucket " + kind, "data-bucket": key, "aria-label": title },
          h("h3", {}, badge(title, kind), " ", h("span", { class: "muted" }, String(items.length))),
          items.length === 0 ? h("p", { class: "muted" }, "Empty.") : null,
          h(
            "ul",
            { class: "bucket-items" },
            items.map((it) => {
              const t = why.get(it.ref) || {};
              return h(
                "li",
                { "data-ref": it.ref },
                link(nodeHref(sc, it.ref), it.ref, { class: "ref" }),
                " ",
                it.title ? h("span", {}, it.title) : null,
                h("div", {}, lifecycle(it.lifecycle), " ", authority(it.authority)),
                h("div", { class: "reason" }, h("code", {}, t.reason || ""), t.detail ? [" — ", t.detail] : ""),
                t.why && t.why.length ? reasons(t.why) : null,
              );
            }),
          ),
          omitted ? h("p", { class: "muted" }, omitted + " more cut by the limits") : null,
        );
      }),
    ),
  ];
}
