// views/provenance.js: where a memory came from and what came from it, as a
// layered graph (every vertex once) with the same graph as nested lists.

import { badge, errorBox, h, link, mount, when } from "../dom.js";
import { draw, fromTrace, label } from "./graph.js";

const enc = encodeURIComponent;

// refOf accepts a node ref (belief:x), record:<id>, or a bare record id.
export function refOf(s) {
  return s.includes(":") ? s : "record:" + s;
}

export function recordId(ref) {
  return ref.startsWith("record:") ? ref.slice("record:".length) : null;
}

// hrefFor: a record goes to its record view, a node to its own provenance.
function hrefFor(scope) {
  return (ref) => {
    const id = recordId(ref);
    return id ? "#/records/" + enc(id) : "#/provenance/" + enc(scope) + "/" + enc(ref);
  };
}

function describe(n) {
  if (n.withheld) return h("span", { class: "muted" }, "withheld: your token may not read this record");
  if (n.kind === "record") return n.redacted ? badge("redacted", "warn") : h("span", {}, n.text || "");
  return h("span", {}, n.title || "", n.title && n.summary ? " — " : "", h("span", { class: "muted" }, n.summary || ""));
}

// treeList draws one direction of the API's tree as nested lists; a vertex
// shown elsewhere says so instead of repeating its lineage.
function treeList(items, key, scope) {
  if (!items || items.length === 0) return null;
  return h(
    "ul",
    { class: "tree" },
    items.map((it) =>
      h(
        "li",
        {},
        itemLink(it.ref, scope),
        " ",
        it.kind === "record" && it.type ? h("span", { class: "muted" }, "[" + it.type + "] ") : null,
        it.withheld ? badge("withheld", "warn") : null,
        " ",
        it.shared ? h("span", { class: "muted" }, "(also reached by another path; shown once)") : it.withheld ? null : label(it),
        it.truncated ? h("span", { class: "muted" }, " (more beyond the depth shown)") : null,
        treeList(it[key], key, scope),
      ),
    ),
  );
}

function itemLink(ref, scope) {
  const id = recordId(ref);
  return h(
    "span",
    {},
    link(id ? "/records/" + enc(id) : "/provenance/" + enc(scope) + "/" + enc(ref), ref, { class: "ref" }),
    id ? [" (", link("/provenance/" + enc(scope) + "/" + enc(ref), "its provenance"), ")"] : null,
  );
}

// graph: #/provenance/<scope>/<ref>?depth=N
export async function graph({ root, params, query, api, navigate, signal }) {
  const scope = params[0];
  const ref = refOf(params[1]);
  const depth = Math.min(10, Math.max(1, parseInt(query.get("depth") || "5", 10) || 5));
  const base = "/v1/scopes/" + enc(scope) + "/provenance/" + enc(ref);
  const depthSel = h(
    "select",
    { id: "prov-depth", onchange: () => navigate("/provenance/" + enc(scope) + "/" + enc(ref), { depth: depthSel.value }) },
    [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((d) => h("option", { value: d, selected: d === depth }, String(d))),
  );
  const out = h("div", { "aria-live": "polite" });
  mount(
    root,
    h("h1", {}, "Provenance of ", h("code", {}, ref)),
    h("p", { class: "muted" }, "Scope ", link("/memory/" + enc(scope), scope), ". Sources on the left, what was derived from them on the right."),
    h("div", { class: "row" }, h("div", { class: "field" }, h("label", { for: "prov-depth" }, "Depth"), depthSel)),
    out,
  );
  let trace;
  try {
    trace = await api.get(base, { direction: "both", depth }, { signal });
  } catch (e) {
    mount(out, errorBox(e));
    return;
  }
  // /derived walks the whole forward closure: it says what lies beyond
  // the depth drawn.
  let derived = null;
  try {
    derived = await api.get(base + "/derived", null, { signal });
  } catch (e) {
    if (e.name === "AbortError") throw e;
  }
  const g = fromTrace(trace);
  const center = trace.memory || {};
  const id = recordId(ref);
  const missing = derived ? (derived.derived || []).filter((d) => !g.nodes.has(d.ref)) : [];
  mount(
    out,
    h(
      "section",
      { class: "panel", "aria-labelledby": "prov-this" },
      h("h2", { id: "prov-this" }, center.kind === "record" ? "The record" : "The memory"),
      h(
        "dl",
        { class: "kv" },
        h("dt", {}, "Ref"),
        h("dd", {}, h("code", {}, ref)),
        h("dt", {}, "What"),
        h("dd", {}, describe(center)),
        center.source_type ? [h("dt", {}, "Source"), h("dd", {}, center.source_type)] : null,
        center.created_at ? [h("dt", {}, "Created"), h("dd", {}, when(center.created_at))] : null,
        h("dt", {}, "Open"),
        h("dd", {}, id ? link("/records/" + enc(id), "record view") : link("/memory/" + enc(scope) + "?node=" + enc(ref), "node detail and history")),
      ),
    ),
    h("h2", { id: "prov-graph" }, "Lineage graph"),
    h(
      "p",
      { class: "muted", id: "prov-counts" },
      `${g.nodes.size} ${g.nodes.size === 1 ? "vertex" : "vertices"}, ${g.edges.length} ${g.edges.length === 1 ? "edge" : "edges"}`,
      trace.truncated ? "; more lineage lies beyond depth " + depth + " (raise it to see more)" : "",
      ".",
    ),
    g.nodes.size > 1 ? draw(g, hrefFor(scope), "Lineage of " + ref) : h("p", {}, "No lineage: nothing was derived from it and it derives from nothing."),
    derived
      ? h(
          "p",
          { id: "prov-derived" },
          "Derived from it in all (any depth): ",
          h("strong", {}, String(derived.count)),
          missing.length ? [" — beyond the graph: ", missing.map((d, i) => [i ? ", " : "", itemLink(d.ref, scope)])] : "",
          ".",
        )
      : null,
    h("h2", { id: "prov-list" }, "As a list"),
    h(
      "div",
      { class: "prov-text" },
      h("p", {}, "Traced: ", itemLink(ref, scope), " ", describe(center)),
      h("h3", {}, "Came from"),
      treeList(trace.backward && trace.backward.sources, "sources", scope) || h("p", { class: "muted" }, "Nothing: it is a root."),
      h("h3", {}, "Led to"),
      treeList(trace.forward && trace.forward.derived, "derived", scope) || h("p", { class: "muted" }, "Nothing derived from it."),
    ),
  );
}
