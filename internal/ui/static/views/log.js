// views/log.js: the Merkle log — kurad's current signed checkpoint and what
// kurad last heard from each witness (/v1/info's log object).

import { badge, errorBox, h, mount, table, when } from "../dom.js";

// parseCheckpoint reads a C2SP signed note: the body (origin, size, root
// hash, optional extension lines) up to the blank line, then one signature
// line per signer: "— <name> <base64 key hash + signature>".
export function parseCheckpoint(text) {
  const at = text.indexOf("\n\n");
  const body = (at < 0 ? text : text.slice(0, at)).split("\n");
  const sigs = (at < 0 ? "" : text.slice(at + 2))
    .split("\n")
    .filter((l) => l.startsWith("\u2014 "))
    .map((l) => {
      const parts = l.slice(2).split(" ");
      return { name: parts[0], sig: parts.slice(1).join(" ") };
    });
  return { origin: body[0] || "", size: body[1] || "", root: body[2] || "", extra: body.slice(3).filter(Boolean), sigs };
}

const STATE = { ok: "ok", unwitnessed: "warn", rollback_detected: "failed", fork_detected: "failed", off: "" };
const WSTATE = { ok: "ok", unchecked: "info", unreachable: "warn", no_checkpoint: "warn", rollback_detected: "failed", fork_detected: "failed" };

// log: #/log
export async function log({ root, api, signal }) {
  mount(root, h("h1", {}, "Log"), h("p", { class: "muted" }, "Loading…"));
  let info;
  try {
    info = await api.get("/v1/info", null, { signal });
  } catch (e) {
    mount(root, h("h1", {}, "Log"), errorBox(e));
    return;
  }
  const st = info.log || { state: "off", witnesses: [] };
  const intro = h(
    "p",
    { class: "muted" },
    "Every event is a leaf of one append-only Merkle tree. kurad signs each tree head (a checkpoint); witnesses on other machines cosign what they saw, so a rollback or a fork of this database cannot go unnoticed.",
  );
  if (st.state === "off") {
    mount(
      root,
      h("h1", {}, "Log"),
      intro,
      h("p", { class: "panel", id: "log-state" }, badge("off", "warn"), " The log is off on this kurad: events are not added to the Merkle tree and no checkpoint is signed (KURA_LOG=off). The next start with it on appends what was missed."),
    );
    return;
  }
  const cp = h("section", { id: "log-checkpoint", "aria-live": "polite" }, h("p", { class: "muted" }, "Loading the checkpoint…"));
  mount(
    root,
    h("h1", {}, "Log"),
    intro,
    h(
      "section",
      { class: "panel", id: "log-state" },
      h("h2", {}, "State"),
      h(
        "dl",
        { class: "kv" },
        h("dt", {}, "State"),
        h("dd", {}, badge(st.state, STATE[st.state] || "warn")),
        h("dt", {}, "Tree size"),
        h("dd", {}, String(st.size)),
        info.log_origin ? [h("dt", {}, "Origin"), h("dd", {}, h("code", {}, info.log_origin))] : null,
        info.log_vkey ? [h("dt", {}, "Verifier key"), h("dd", {}, h("code", { class: "vkey" }, info.log_vkey))] : null,
      ),
      (st.detected || []).length
        ? [
            h("h3", {}, "Contradicted by a witness"),
            table(
              null,
              [
                { label: "Witness", cell: (d) => d.witness },
                { label: "State", cell: (d) => badge(d.state, "failed") },
                { label: "Size", cell: (d) => String(d.size) },
                { label: "Root", cell: (d) => h("code", {}, d.root) },
                { label: "Why", cell: (d) => d.reason },
              ],
              st.detected,
              { class: "stack detected" },
            ),
          ]
        : null,
      h("h3", {}, "Witnesses"),
      (st.witnesses || []).length === 0
        ? h("p", { class: "muted", id: "log-witnesses" }, "No witness is configured (KURA_WITNESSES): nothing outside this machine holds the log's history.")
        : table(
            null,
            [
              { label: "Witness", cell: (w) => h("code", {}, w.url) },
              { label: "State", cell: (w) => badge(w.state, WSTATE[w.state] || "warn") },
              { label: "Cosigned size", cell: (w) => String(w.size) },
              { label: "Lag", cell: (w) => (st.size - w.size <= 0 ? "none" : st.size - w.size + (st.size - w.size === 1 ? " event" : " events")) },
              { label: "Last heard", cell: (w) => (w.checked_at ? when(w.checked_at) : h("span", { class: "muted" }, "never")) },
              { label: "Error", cell: (w) => w.error || "" },
            ],
            st.witnesses,
            { class: "stack witnesses", id: "log-witnesses" },
          ),
    ),
    cp,
  );
  try {
    const text = await api.get("/v1/log/checkpoint", null, { signal });
    const c = parseCheckpoint(String(text));
    mount(
      cp,
      h("h2", {}, "Current checkpoint"),
      h(
        "dl",
        { class: "kv" },
        h("dt", {}, "Origin"),
        h("dd", { id: "cp-origin" }, h("code", {}, c.origin)),
        h("dt", {}, "Size"),
        h("dd", { id: "cp-size" }, c.size),
        h("dt", {}, "Root hash"),
        h("dd", { id: "cp-root" }, h("code", {}, c.root)),
        c.extra.length ? [h("dt", {}, "Extensions"), h("dd", {}, c.extra.join("; "))] : null,
      ),
      h("h3", {}, "Signatures"),
      h(
        "ul",
        { id: "cp-sigs" },
        c.sigs.map((s) =>
          h("li", {}, h("strong", {}, s.name), " ", s.name === c.origin ? badge("kurad", "info") : badge("cosignature", "ok"), " ", h("code", { class: "sig", title: s.sig }, s.sig.slice(0, 16) + "…")),
        ),
      ),
      h("details", {}, h("summary", {}, "The signed note as served"), h("pre", {}, String(text))),
    );
  } catch (e) {
    mount(cp, h("h2", {}, "Current checkpoint"), errorBox(e));
  }
}
