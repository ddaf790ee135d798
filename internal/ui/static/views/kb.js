// views/kb.js: knowledge bases — open one, its entries, ranked search with
// scores and reasons, the lookup text a model gets, stats, and an entry's
// history (nothing is forgotten).

import { badge, errorBox, field, h, link, mount, short, table, when } from "../dom.js";
import { recent, remember } from "./memory.js";

const enc = encodeURIComponent;
const RECENT_KEY = "kura.recentKBs";

function kbHref(kb, q) {
  const s = new URLSearchParams();
  for (const [k, v] of Object.entries(q || {})) if (v) s.set(k, v);
  const t = s.toString();
  return "/kb/" + enc(kb) + (t ? "?" + t : "");
}

function entryHref(kb, identifier, scope) {
  return "/kb/" + enc(kb) + "/entries/" + enc(identifier) + (scope ? "?scope=" + enc(scope) : "");
}

function keys(list) {
  return (list || []).map((k) => badge(k, "info", { class: "badge info key" }));
}

function reasons(list) {
  if (!list || list.length === 0) return null;
  return h("ul", { class: "reasons" }, list.map((r) => h("li", {}, h("code", {}, r.code), r.detail ? [": ", r.detail] : "")));
}

// list: #/kb — open a knowledge base by name.
export async function list({ root, navigate }) {
  const [wrap, input] = field("Knowledge base", { name: "kb", required: true, pattern: "[a-z0-9][a-z0-9_\\-]{0,63}", placeholder: "knowledge", autocomplete: "off" });
  const mine = recent(RECENT_KEY);
  mount(
    root,
    h("h1", {}, "Knowledge bases"),
    h("p", { class: "muted" }, "A knowledge base exists from its first entry. Open one by name:"),
    h("form", { class: "inline", onsubmit: (e) => (e.preventDefault(), input.value.trim() && navigate("/kb/" + enc(input.value.trim()))) }, wrap, h("button", { type: "submit", class: "primary" }, "Open")),
    h("h2", {}, "Recently opened"),
    mine.length ? h("ul", { class: "chips", id: "recent-kbs" }, mine.map((k) => h("li", {}, link("/kb/" + enc(k), k)))) : h("p", { class: "muted" }, "None yet."),
  );
}

// kb: #/kb/<kb>?scope=&q=&lq=&cursor=
export async function kb({ root, params, query, api, navigate, signal }) {
  const name = params[0];
  const scope = query.get("scope") || "";
  const q = query.get("q") || "";
  const lq = query.get("lq") || "";
  const cursor = query.get("cursor") || "";
  const base = "/v1/kb/" + enc(name);
  remember(RECENT_KEY, name);

  const [sWrap, sInput] = field("Scope", { name: "scope", value: scope, placeholder: "default" });
  const [qWrap, qInput] = field("Ranked search", { name: "q", type: "search", value: q, placeholder: "a question in any words" });
  const [lWrap, lInput] = field("Lookup (the text a model gets)", { name: "lq", type: "search", value: lq, placeholder: "words of an identifier, or a key" });
  const go = (over) => navigate("/kb/" + enc(name), { scope: sInput.value.trim(), q: qInput.value.trim(), lq: lInput.value.trim(), ...over });
  const stats = h("p", { id: "kb-stats", "aria-live": "polite" });
  const results = h("section", { id: "kb-search", "aria-live": "polite" });
  const lookup = h("section", { id: "kb-lookup", "aria-live": "polite" });
  const entries = h("section", { id: "kb-entries" });
  mount(
    root,
    h("h1", {}, "Knowledge base: ", name),
    h("p", {}, link("/kb", "← other knowledge bases")),
    stats,
    h("form", { class: "inline", onsubmit: (e) => (e.preventDefault(), go({ cursor: "" })) }, sWrap, h("button", { type: "submit" }, "Show scope")),
    h("form", { class: "inline", role: "search", id: "kb-search-form", onsubmit: (e) => (e.preventDefault(), go({ lq: "" })) }, qWrap, h("button", { type: "submit" }, "Search")),
    h("form", { class: "inline", id: "kb-lookup-form", onsubmit: (e) => (e.preventDefault(), go({ q: "" })) }, lWrap, h("button", { type: "submit" }, "Look up")),
    results,
    lookup,
    entries,
  );

  const jobs = [
    api.get(base + "/stats", { scope, limit: 1 }, { signal }).then(
      (s) => mount(stats, h("strong", {}, String(s.count)), s.count === 1 ? " entry" : " entries", " in ", scope ? "scope " + scope : "the default scope", "."),
      (e) => mount(stats, errorBox(e)),
    ),
    showEntries(entries, name, base, scope, cursor, api, signal),
  ];
  if (q) jobs.push(showSearch(results, name, base, scope, q, api, signal));
  if (lq) jobs.push(showLookup(lookup, base, scope, lq, api, signal));
  await Promise.all(jobs);
}

async function showEntries(out, name, base, scope, cursor, api, signal) {
  try {
    const data = await api.get(base + "/entries", { scope, cursor, limit: 50 }, { signal });
    const rows = data.entries || [];
    mount(
      out,
      h("h2", {}, "Entries"),
      rows.length === 0
        ? h("p", { class: "muted" }, "No entries.")
        : table(
            "In insertion order",
            [
              { label: "Identifier", cell: (e) => link(entryHref(name, e.identifier, scope), e.identifier) },
              { label: "Keys", cell: (e) => keys(e.keys) },
              { label: "Value", cell: (e) => h("span", { title: e.value }, short(e.value, 80)) },
              { label: "Version", cell: (e) => String(e.version) },
              { label: "Updated", cell: (e) => when(e.updated_at) },
            ],
            rows,
            { class: "stack entries" },
          ),
      h(
        "p",
        { class: "row" },
        cursor ? link(kbHref(name, { scope }), "← first page") : null,
        data.next_cursor ? link(kbHref(name, { scope, cursor: data.next_cursor }), "Next page →") : null,
      ),
    );
  } catch (e) {
    mount(out, h("h2", {}, "Entries"), errorBox(e));
  }
}

async function showSearch(out, name, base, scope, q, api, signal) {
  mount(out, h("p", { class: "muted" }, "Searching…"));
  try {
    const data = await api.get(base + "/search", { scope, q, limit: 20 }, { signal });
    const rows = data.entries || [];
    mount(
      out,
      h("h2", {}, "Search results for “", q, "”"),
      rows.length === 0
        ? h("p", { class: "muted" }, "No entry is relevant.")
        : table(
            "Best first",
            [
              { label: "Rank", cell: (e) => String(rows.indexOf(e) + 1) },
              { label: "Identifier", cell: (e) => link(entryHref(name, e.identifier, scope), e.identifier) },
              { label: "Score", cell: (e) => h("span", { class: "score" }, String(e.score)) },
              { label: "Why", cell: (e) => reasons(e.reasons) },
              { label: "Value", cell: (e) => h("span", { title: e.value }, short(e.value, 80)) },
            ],
            rows,
            { class: "stack results" },
          ),
    );
  } catch (e) {
    mount(out, errorBox(e));
  }
}

async function showLookup(out, base, scope, lq, api, signal) {
  mount(out, h("p", { class: "muted" }, "Looking up…"));
  try {
    const resp = await api.request("GET", base + "/lookup", { query: { scope, q: lq }, signal, raw: true });
    const text = await resp.text();
    const strict = resp.headers.get("X-Kura-Matches");
    const ranked = resp.headers.get("X-Kura-Ranked");
    mount(
      out,
      h("h2", {}, "Lookup of “", lq, "”"),
      h("p", { class: "muted" }, `${strict || 0} strict ${strict === "1" ? "match" : "matches"}, ${ranked || 0} ranked.`),
      h("pre", { class: "lookup" }, text),
    );
  } catch (e) {
    mount(out, errorBox(e));
  }
}

const OPS = { put: "ok", update: "info", update_keys: "info", delete: "failed", clear: "failed" };

// entry: #/kb/<kb>/entries/<identifier>?scope=
export async function entry({ root, params, query, api, signal }) {
  const [name, identifier] = params;
  const scope = query.get("scope") || "";
  const base = "/v1/kb/" + enc(name);
  mount(root, h("h1", {}, identifier), h("p", {}, link(kbHref(name, { scope }), "← " + name + (scope ? " / " + scope : ""))), h("p", { class: "muted" }, "Loading…"));
  let cur = null;
  let hist;
  try {
    const [found, hh] = await Promise.all([
      api.get(base + "/entries", { scope, exact_identifier: identifier, limit: 1 }, { signal }),
      api.get(base + "/history", { scope, identifier, limit: 1000 }, { signal }),
    ]);
    cur = (found.entries || [])[0] || null;
    hist = hh;
  } catch (e) {
    mount(root, h("h1", {}, identifier), errorBox(e));
    return;
  }
  const versions = hist.versions || [];
  mount(
    root,
    h("h1", {}, identifier),
    h("p", {}, link(kbHref(name, { scope }), "← " + name + (scope ? " / " + scope : ""))),
    cur
      ? h(
          "section",
          { class: "panel", id: "kb-entry" },
          h("h2", {}, "Current version ", String(cur.version)),
          h(
            "dl",
            { class: "kv" },
            h("dt", {}, "Keys"), h("dd", {}, keys(cur.keys)),
            h("dt", {}, "Id"), h("dd", {}, h("code", {}, cur.id)),
            h("dt", {}, "Created"), h("dd", {}, when(cur.created_at)),
            h("dt", {}, "Updated"), h("dd", {}, when(cur.updated_at)),
          ),
          h("pre", { class: "value" }, cur.value),
        )
      : h("p", { class: "panel", id: "kb-entry" }, badge("deleted", "failed"), " This identifier has no entry now; its history follows."),
    h("h2", {}, "History"),
    table(
      "Every version, oldest first",
      [
        { label: "Version", cell: (v) => String(v.version) },
        { label: "Change", cell: (v) => badge(v.op, OPS[v.op] || "") },
        { label: "At", cell: (v) => when(v.at) },
        { label: "Keys", cell: (v) => (v.keys === null ? h("span", { class: "muted" }, "—") : keys(v.keys)) },
        { label: "Value", cell: (v) => (v.value === null ? h("span", { class: "muted" }, "(tombstone)") : h("span", { class: "value" }, v.value)) },
      ],
      versions,
      { class: "stack history" },
    ),
  );
}
