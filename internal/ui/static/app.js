// app.js: the console's shell. Routes live in the URL fragment
// (#/sessions/<id>), so every view has an address that can be shared and
// kurad serves one page. Each view module exports render(ctx).

import * as api from "./api.js";
import { errorBox, h, mount } from "./dom.js";

// routes: fragment pattern → view module and its export. The first match wins.
const routes = [
  [/^\/?$/, "sessions.js", "list"],
  [/^\/sessions\/?$/, "sessions.js", "list"],
  [/^\/sessions\/([^/]+)$/, "sessions.js", "session"],
  [/^\/ledgers\/([^/]+)$/, "ledger.js", "ledger"],
  [/^\/records\/([^/]+)$/, "record.js", "record"],
  [/^\/memory\/?$/, "memory.js", "scopes"],
  [/^\/memory\/([^/]+)$/, "memory.js", "scope"],
  [/^\/provenance\/([^/]+)\/(.+)$/, "provenance.js", "graph"],
  [/^\/kb\/?$/, "kb.js", "list"],
  [/^\/kb\/([^/]+)$/, "kb.js", "kb"],
  [/^\/kb\/([^/]+)\/entries\/(.+)$/, "kb.js", "entry"],
  [/^\/events\/?$/, "events.js", "tail"],
  [/^\/log\/?$/, "log.js", "log"],
];

let current = null; // AbortController of the view on screen

function parseHash() {
  const raw = location.hash.replace(/^#/, "") || "/";
  const [p, q] = raw.split("?", 2);
  return { path: p, query: new URLSearchParams(q || "") };
}

// navigate changes the fragment; query values that are empty are dropped.
export function navigate(path, query) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query || {})) if (v !== undefined && v !== null && v !== "") q.set(k, v);
  const s = q.toString();
  location.hash = "#" + path + (s ? "?" + s : "");
}

async function route() {
  if (current) current.abort();
  const ctrl = new AbortController();
  current = ctrl;
  const root = document.getElementById("view");
  const { path, query } = parseHash();
  const hit = routes.map(([re, mod, fn]) => [path.match(re), mod, fn]).find(([m]) => m);
  document.querySelectorAll("[data-nav]").forEach((a) => {
    const section = path.split("/")[1] || "sessions";
    const on = a.dataset.nav === section || (section === "ledgers" || section === "records" ? a.dataset.nav === "sessions" : false);
    if (on) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  });
  if (!hit) {
    mount(root, h("h1", {}, "Not found"), h("p", {}, "No view at ", h("code", {}, path), "."));
    return;
  }
  const [m, mod, fn] = hit;
  const params = m.slice(1).map(decodeURIComponent);
  mount(root, h("p", { class: "muted" }, "Loading…"));
  try {
    const view = await import("./views/" + mod);
    if (ctrl.signal.aborted) return;
    await view[fn]({ root, params, query, api, navigate, signal: ctrl.signal });
  } catch (e) {
    if (ctrl.signal.aborted || e.name === "AbortError") return;
    mount(root, h("h1", {}, "Something failed"), errorBox(e));
  }
}

// The token dialog: asked for by api.js on a 401, or by the Token button.
function setupToken() {
  const dlg = document.getElementById("token-dialog");
  const input = document.getElementById("token-input");
  const reason = document.getElementById("token-reason");
  // Every call refused while the dialog is open waits for the same answer
  // (a view may make several calls at once).
  let waiting = [];
  const finish = (ok) => {
    if (dlg.open) dlg.close();
    const w = waiting;
    waiting = [];
    w.forEach((resolve) => resolve(ok));
  };
  document.getElementById("token-form").addEventListener("submit", (e) => {
    e.preventDefault();
    api.setToken(input.value.trim());
    input.value = "";
    finish(true);
  });
  document.getElementById("token-cancel").addEventListener("click", () => finish(false));
  document.getElementById("token-clear").addEventListener("click", () => {
    api.setToken("");
    input.value = "";
    finish(false);
    route();
  });
  dlg.addEventListener("cancel", () => finish(false));
  const open = (why) => {
    reason.textContent = why + " It is kept in this tab only (sessionStorage) and sent to this kurad only.";
    if (!dlg.open) dlg.showModal();
    input.focus();
    return new Promise((resolve) => waiting.push(resolve));
  };
  api.onTokenNeeded(open);
  document.getElementById("token-button").addEventListener("click", async () => {
    if (await open("Enter a bearer token.")) route();
  });
}

// Light or dark: the system's choice unless the person picked one here.
function setupTheme() {
  const saved = localStorage.getItem("kura.theme");
  if (saved) document.documentElement.dataset.theme = saved;
  document.getElementById("theme").addEventListener("click", () => {
    const dark = document.documentElement.dataset.theme
      ? document.documentElement.dataset.theme === "dark"
      : matchMedia("(prefers-color-scheme: dark)").matches;
    const next = dark ? "light" : "dark";
    document.documentElement.dataset.theme = next;
    localStorage.setItem("kura.theme", next);
  });
}

setupToken();
setupTheme();
window.addEventListener("hashchange", route);
route();
