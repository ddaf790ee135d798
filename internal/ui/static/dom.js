// dom.js: build elements from data without ever parsing it as HTML (record
// content is whatever an agent wrote), plus the small formats every view
// shares.

// h creates an element: h("a", {href: "#/x", class: "c"}, "text", child).
// Attributes starting with "on" take listeners; null/false attributes and
// children are skipped; strings become text nodes.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// svg creates an SVG element (for graphs and timelines).
export function svg(tag, attrs, ...children) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

// mount replaces root's children.
export function mount(root, ...children) {
  root.replaceChildren();
  append(root, children);
}

// short abbreviates a hash or id for display; the full value stays in the
// title so it can be read and copied.
export function short(s, n = 12) {
  if (!s) return "";
  return s.length > n + 1 ? s.slice(0, n) + "…" : s;
}

export function hash(s, n = 12) {
  return h("code", { class: "hash", title: s }, short(s, n));
}

// when formats an RFC 3339 time in the reader's locale, keeping the exact
// value in the title.
export function when(t) {
  if (!t) return "";
  const d = new Date(t);
  return h("time", { datetime: t, title: t }, isNaN(d) ? t : d.toLocaleString());
}

// badge is a small labelled state; kind picks the colour.
export function badge(text, kind, attrs) {
  return h("span", { class: "badge " + (kind || ""), ...attrs }, text);
}

// json shows a value as indented JSON text.
export function json(v) {
  return h("pre", { class: "json" }, JSON.stringify(v, null, 2));
}

// errorBox explains a failed call in words, with the API's code.
export function errorBox(e) {
  if (e && e.name === "AbortError") return null;
  const code = e && e.code ? " (" + e.code + (e.status ? ", " + e.status : "") + ")" : "";
  return h("div", { class: "error", role: "alert" }, (e && e.message) || String(e), code);
}

// field is a labelled input; returns [wrapper, input].
export function field(label, attrs) {
  const id = "f-" + Math.random().toString(36).slice(2, 9);
  const input = h("input", { id, ...attrs });
  return [h("div", { class: "field" }, h("label", { for: id }, label), input), input];
}

// table renders rows with the given columns: [{label, cell(row)}].
export function table(caption, cols, rows, attrs) {
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      attrs || {},
      caption ? h("caption", {}, caption) : null,
      h("thead", {}, h("tr", {}, cols.map((c) => h("th", { scope: "col" }, c.label)))),
      h("tbody", {}, rows.map((r) => h("tr", {}, cols.map((c) => h("td", { "data-label": c.label }, c.cell(r)))))),
    ),
  );
}

// link to a console route.
export function link(hashPath, text, attrs) {
  return h("a", { href: "#" + hashPath, ...attrs }, text);
}
