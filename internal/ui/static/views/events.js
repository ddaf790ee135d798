// views/events.js: a live tail of GET /v1/events/stream.
//
// EventSource cannot send an Authorization header, so the stream is read
// with fetch and its Server-Sent Events frames are parsed here. The seq of
// the last frame seen is the cursor: a dropped stream is reopened with
// after=<that seq>, so nothing is missed or shown twice.

import { badge, errorBox, field, h, link, mount, when } from "../dom.js";

const enc = encodeURIComponent;
const KEEP = 200; // events kept on screen, newest first

// The types GET /v1/events/stream accepts (docs/api.md "Reading the log").
export const TYPES = [
  "record.written", "record.redacted", "ledger.written", "session.created", "session.head",
  "turn.opened", "turn.claimed", "turn.complete", "dispatch",
  "memory.node", "memory.relation", "memory.lifecycle", "memory.feedback", "context.compiled", "kb.changed",
];

// sseParser returns push(text): it takes the stream's text in any chunks
// and calls onFrame({id, event, data}) for each complete frame (a blank
// line ends one; lines starting with ":" are comments, given to onComment).
export function sseParser(onFrame, onComment) {
  let buf = "";
  let frame = { id: null, event: "", data: [] };
  const line = (l) => {
    if (l === "") {
      if (frame.data.length || frame.event) onFrame({ id: frame.id, event: frame.event || "message", data: frame.data.join("\n") });
      frame = { id: null, event: "", data: [] };
      return;
    }
    if (l.startsWith(":")) {
      if (onComment) onComment(l.slice(1).trim());
      return;
    }
    const i = l.indexOf(":");
    const name = i < 0 ? l : l.slice(0, i);
    let value = i < 0 ? "" : l.slice(i + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (name === "data") frame.data.push(value);
    else if (name === "event") frame.event = value;
    else if (name === "id") frame.id = value;
  };
  return (text) => {
    buf += text;
    let m;
    // A line ends at \r\n, \n or \r; a lone \r at the very end may be the
    // first half of \r\n, so it waits for the next chunk.
    while ((m = /\r\n|\n|\r(?!$)/.exec(buf))) {
      line(buf.slice(0, m.index));
      buf = buf.slice(m.index + m[0].length);
    }
  };
}

// refs links what an event names to the console's views.
function refs(ev) {
  const out = [];
  const add = (label, node) => out.push(h("li", {}, h("span", { class: "muted" }, label + " "), node));
  if (ev.record_id) add("record", link("/records/" + enc(ev.record_id), ev.record_id, { class: "ref" }));
  for (const k of ["ledger_id", "context_ledger_id", "output_ledger_id"]) {
    if (ev[k]) add(k.replace("_id", "").replace("_", " "), link("/ledgers/" + enc(ev[k]), ev[k], { class: "ref" }));
  }
  if (ev.session_id) add("session", link("/sessions/" + enc(ev.session_id), ev.session_id, { class: "ref" }));
  if (ev.turn_id) add("turn", h("code", {}, ev.turn_id));
  if (ev.ref) add("node", link("/memory/" + enc(ev.project) + "?node=" + enc(ev.ref), ev.ref, { class: "ref" }));
  if (ev.kb) add("kb", link("/kb/" + enc(ev.kb) + (ev.project && ev.project !== "default" ? "?scope=" + enc(ev.project) : ""), ev.kb));
  for (const k of ["entry_id", "relation_id", "feedback_id", "bundle_id", "target", "status", "head_hash"]) {
    if (ev[k]) add(k.replace("_id", "").replace("_", " "), h("code", {}, ev[k]));
  }
  return out.length ? h("ul", { class: "ev-refs" }, out) : null;
}

function row(ev) {
  return h(
    "li",
    { class: "event", "data-seq": ev.seq, "data-type": ev.type, "data-project": ev.project },
    h(
      "div",
      { class: "ev-head" },
      h("span", { class: "ev-seq" }, "#" + ev.seq),
      " ",
      badge(ev.type, ev.type === "turn.complete" && ev.status !== "complete" ? "warn" : "info"),
      " ",
      ev.project ? h("span", { class: "ev-project" }, ev.project) : null,
      " ",
      h("span", { class: "muted" }, when(ev.at)),
    ),
    refs(ev),
  );
}

// tail: #/events?project=&type=
export async function tail({ root, query, api, navigate, signal }) {
  const project = query.get("project") || "";
  const type = query.get("type") || "";
  const [pWrap, pInput] = field("Project", { name: "project", value: project, placeholder: "every project" });
  const typeSel = h(
    "select",
    { id: "ev-type", name: "type" },
    h("option", { value: "" }, "every type"),
    TYPES.map((t) => h("option", { value: t, selected: t === type }, t)),
  );
  const filters = h(
    "form",
    { class: "inline", id: "ev-filters", onsubmit: (e) => (e.preventDefault(), navigate("/events", { project: pInput.value.trim(), type: typeSel.value })) },
    pWrap,
    h("div", { class: "field" }, h("label", { for: "ev-type" }, "Type"), typeSel),
    h("button", { type: "submit" }, "Filter"),
  );
  const status = h("p", { id: "ev-status", role: "status" }, "Connecting…");
  const list = h("ol", { class: "events", id: "ev-list", reversed: true });
  const problem = h("div");
  let paused = false;
  let pending = [];
  const pause = h("button", { type: "button", id: "ev-pause", "aria-pressed": "false" }, "Pause");
  const show = (ev) => {
    list.prepend(row(ev));
    while (list.children.length > KEEP) list.lastElementChild.remove();
  };
  pause.addEventListener("click", () => {
    paused = !paused;
    pause.setAttribute("aria-pressed", String(paused));
    if (!paused) {
      pending.forEach(show);
      pending = [];
    }
    pause.textContent = paused ? "Resume" : "Pause";
  });
  mount(
    root,
    h("h1", {}, "Events"),
    h("p", { class: "muted" }, "Every committed event as it happens: a pointer (seq, type, project, time, ids), never content. The newest ", String(KEEP), " are kept here."),
    filters,
    h("div", { class: "row" }, pause, status),
    problem,
    list,
  );

  // Start a little before now, so the page is not empty.
  let last = 0;
  try {
    const info = await api.get("/v1/info", null, { signal });
    last = Math.max(0, (info.last_event_seq || 0) - 20);
  } catch (e) {
    if (e.name === "AbortError") return;
  }
  let delay = 1000;
  let seen = 0;
  const setStatus = (...parts) => mount(status, ...parts);
  const onEvent = (ev) => {
    seen++;
    if (paused) {
      pending.push(ev);
      if (pending.length > KEEP) pending.shift();
      pause.textContent = "Resume (" + pending.length + " new)";
    } else show(ev);
  };
  while (!signal.aborted) {
    let failure = null;
    try {
      const q = new URLSearchParams({ after: String(last) });
      if (project) q.set("project", project);
      if (type) q.set("type", type);
      const headers = { Accept: "text/event-stream" };
      const tok = api.token();
      if (tok) headers.Authorization = "Bearer " + tok;
      const resp = await fetch("/v1/events/stream?" + q, { headers, signal, cache: "no-store" });
      if (!resp.ok) {
        let body = null;
        try {
          body = await resp.json();
        } catch {
          body = null;
        }
        const e = (body && body.error) || {};
        const err = new api.ApiError(resp.status, e.code || "http_" + resp.status, e.message || resp.statusText, e.details);
        // A refusal will not mend by itself: say so and stop.
        if (resp.status >= 400 && resp.status < 500) {
          mount(problem, errorBox(err), resp.status === 401 ? h("p", {}, "Enter a token with the Token button, then reload this view.") : null);
          setStatus(badge("stopped", "failed"));
          return;
        }
        throw err;
      }
      mount(problem);
      delay = 1000;
      setStatus(badge("live", "ok"), " from seq ", String(last), " — ", String(seen), " received");
      const push = sseParser(
        (f) => {
          if (f.event === "error") {
            let e = {};
            try {
              e = JSON.parse(f.data).error || {};
            } catch {
              e = {};
            }
            failure = new api.ApiError(0, e.code || "stream_error", e.message || "the stream reported an error");
            return;
          }
          let ev;
          try {
            ev = JSON.parse(f.data);
          } catch {
            return;
          }
          const seq = Number(f.id || ev.seq);
          if (seq <= last) return; // already shown before a reconnect
          last = seq;
          onEvent(ev);
          setStatus(badge("live", "ok"), " last seq ", String(last), " — ", String(seen), " received");
        },
        null,
      );
      const reader = resp.body.getReader();
      const dec = new TextDecoder();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        push(dec.decode(value, { stream: true }));
      }
    } catch (e) {
      if (signal.aborted || e.name === "AbortError") return;
      failure = e;
    }
    if (signal.aborted) return;
    // The stream ended or failed: reopen it after the last seq seen, backing
    // off while kurad is away.
    if (failure) mount(problem, errorBox(failure));
    setStatus(badge("reconnecting", "warn"), " after seq ", String(last), " in ", String(delay / 1000), " s");
    await new Promise((resolve) => {
      const t = setTimeout(resolve, delay);
      signal.addEventListener("abort", () => (clearTimeout(t), resolve()), { once: true });
    });
    delay = Math.min(delay * 2, 15000);
  }
}
