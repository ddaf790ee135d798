// views/sessions.js: the sessions of a project, and one session's chain as
// a timeline of turns (context ledger in, output ledger out) with the head
// moves of its reflog and the verdict of the server's session verify.

import { badge, errorBox, field, h, hash, link, mount, short, table, when } from "../dom.js";
import { problems } from "../verify.js";

const enc = encodeURIComponent;

// list: every session, or one project's, oldest first, a page at a time.
export async function list({ root, query, api, navigate, signal }) {
  const project = query.get("project") || "";
  const [wrap, input] = field("Project", { name: "project", value: project, placeholder: "all projects" });
  const form = h(
    "form",
    { class: "inline", role: "search", onsubmit: (e) => (e.preventDefault(), navigate("/sessions", { project: input.value.trim() })) },
    wrap,
    h("button", { type: "submit" }, "Show"),
    project ? h("button", { type: "button", onclick: () => navigate("/sessions", {}) }, "All projects") : null,
  );
  const out = h("div");
  mount(root, h("h1", {}, project ? "Sessions of " + project : "Sessions"), form, out);
  let data;
  try {
    data = await api.get("/v1/sessions", { project, cursor: query.get("cursor") || "", limit: 50 }, { signal });
  } catch (e) {
    mount(out, errorBox(e));
    return;
  }
  const rows = data.sessions || [];
  mount(
    out,
    rows.length === 0
      ? h("p", { class: "muted" }, "No sessions", project ? " in " + project : "", ".")
      : table(
          null,
          [
            { label: "Session", cell: (s) => link("/sessions/" + enc(s.id), s.project + "/" + s.name) },
            { label: "Project", cell: (s) => link("/sessions?" + new URLSearchParams({ project: s.project }), s.project, { "aria-label": "Only project " + s.project }) },
            { label: "Scope", cell: (s) => (s.scope ? link("/memory/" + enc(s.scope), s.scope) : "") },
            { label: "Head", cell: (s) => (s.head_hash ? hash(s.head_hash) : h("span", { class: "muted" }, "none")) },
            { label: "Turn", cell: (s) => (s.open_turn_id ? badge("turn open", "info") : "") },
            { label: "Updated", cell: (s) => when(s.updated_at || s.created_at) },
          ],
          rows,
          { class: "stack" },
        ),
    h(
      "p",
      { class: "row" },
      query.get("cursor") ? link("/sessions" + (project ? "?" + new URLSearchParams({ project }) : ""), "← First page") : null,
      data.next_cursor ? link("/sessions?" + new URLSearchParams({ project, cursor: data.next_cursor }), "Next page →", { rel: "next" }) : null,
    ),
  );
}

// verdict fills the badge from GET /v1/sessions/{id}/verify. Until the
// answer the badge reads data-kura-verify="pending".
async function verdict(api, id, badgeEl, detail, signal) {
  let v;
  try {
    v = await api.get("/v1/sessions/" + enc(id) + "/verify", null, { signal });
  } catch (e) {
    badgeEl.dataset.kuraVerify = "error";
    badgeEl.className = "badge warn";
    badgeEl.textContent = "not verified";
    mount(detail, errorBox(e));
    return null;
  }
  badgeEl.dataset.kuraVerify = v.ok ? "ok" : "failed";
  badgeEl.className = "badge " + (v.ok ? "ok" : "failed");
  badgeEl.textContent = v.ok ? "verified: ok" : "verification failed";
  mount(
    detail,
    h(
      "p",
      { class: "muted" },
      `${v.ledgers_checked} ledgers, ${v.records_checked} records and ${v.head_moves_checked} head moves checked on the server`,
      v.redacted && v.redacted.length ? `; ${v.redacted.length} redacted record(s) met (not a problem)` : "",
      ".",
    ),
    v.ok ? null : h("h3", {}, "What failed"),
    problems(v.problems),
  );
  return v;
}

function ledgerItem(l, role, moves, failed) {
  return h(
    "div",
    { class: "ledger" + (failed ? " failed" : ""), "data-kura-ledger": l.id },
    h(
      "div",
      { class: "ledger-head" },
      role ? badge(role, role === "in" ? "info" : "") : null,
      " ",
      link("/ledgers/" + enc(l.id), l.label || short(l.id), { title: "Ledger " + l.id }),
      failed ? [" ", badge("does not verify", "failed")] : null,
    ),
    h(
      "div",
      { class: "ledger-meta muted" },
      `${l.record_count} record${l.record_count === 1 ? "" : "s"} · `,
      hash(l.hash),
      " · ",
      when(l.created_at),
    ),
    moves.length
      ? h(
          "ul",
          { class: "moves" },
          moves.map((m) =>
            h(
              "li",
              {},
              "head moved here: #",
              String(m.seq),
              " ",
              m.reason,
              " · ",
              when(m.at),
              " · ",
              m.signature ? badge("signed", "", { title: m.signature }) : badge("unsigned", "warn"),
            ),
          ),
        )
      : null,
  );
}

// session: one session's chain, oldest first, grouped by turn.
export async function session({ root, params, api, signal }) {
  const id = params[0];
  const s = await api.get("/v1/sessions/" + enc(id), null, { signal });
  const verifyBadge = badge("verifying…", "info", { "data-kura-verify": "pending", role: "status" });
  const verifyDetail = h("div", { "aria-live": "polite" });
  const chain = h("div", {}, h("p", { class: "muted" }, "Loading the chain…"));
  mount(
    root,
    h("h1", {}, s.project + "/" + s.name),
    h("p", { class: "row" }, verifyBadge, s.open_turn_id ? badge("a turn is open", "info") : null),
    verifyDetail,
    h(
      "dl",
      { class: "kv" },
      h("dt", {}, "Session"),
      h("dd", {}, h("code", {}, s.id)),
      h("dt", {}, "Project"),
      h("dd", {}, link("/sessions?" + new URLSearchParams({ project: s.project }), s.project)),
      h("dt", {}, "Memory scope"),
      h("dd", {}, s.scope ? link("/memory/" + enc(s.scope), s.scope) : "none"),
      h("dt", {}, "Head"),
      h("dd", {}, s.head_ledger_id ? [link("/ledgers/" + enc(s.head_ledger_id), s.head_ledger_id), " ", hash(s.head_hash)] : "none yet"),
      h("dt", {}, "Created"),
      h("dd", {}, when(s.created_at)),
    ),
    h("h2", {}, "Chain"),
    chain,
  );
  const verifying = verdict(api, id, verifyBadge, verifyDetail, signal);
  let ledgers, reflog, turns;
  try {
    [ledgers, reflog, turns] = await Promise.all([
      api.all("/v1/sessions/" + enc(id) + "/log", "ledgers", { limit: 1000 }, { signal }),
      api.get("/v1/sessions/" + enc(id) + "/reflog", null, { signal }).then((r) => r.reflog || []),
      api.all("/v1/turns", "turns", { session_id: id, limit: 1000 }, { signal }),
    ]);
  } catch (e) {
    mount(chain, errorBox(e));
    await verifying;
    return;
  }
  const v = await verifying;
  const bad = new Set(((v && v.problems) || []).map((p) => p.ledger_id).filter(Boolean));
  renderChain(chain, ledgers.slice().reverse(), reflog, turns, bad);
}

function renderChain(root, ledgers, reflog, turns, bad) {
  if (ledgers.length === 0) {
    mount(root, h("p", { class: "muted" }, "No ledgers yet: the head has never moved."));
    return;
  }
  const onChain = new Set(ledgers.map((l) => l.id));
  const movesTo = new Map();
  for (const m of reflog) {
    if (!movesTo.has(m.to)) movesTo.set(m.to, []);
    movesTo.get(m.to).push(m);
  }
  const turnOf = new Map();
  for (const t of turns) {
    turnOf.set(t.context_ledger_id, [t, "in"]);
    if (t.output_ledger_id) turnOf.set(t.output_ledger_id, [t, "out"]);
  }
  // Consecutive ledgers of one turn share one timeline entry.
  const groups = [];
  for (const l of ledgers) {
    const [t, role] = turnOf.get(l.id) || [null, null];
    const last = groups[groups.length - 1];
    if (t && last && last.turn === t) last.items.push([l, role]);
    else groups.push({ turn: t, items: [[l, role]] });
  }
  const off = reflog.filter((m) => !onChain.has(m.to));
  mount(
    root,
    h("p", { class: "muted" }, `${ledgers.length} ledger${ledgers.length === 1 ? "" : "s"} from the first to the head, ${turns.length} turn${turns.length === 1 ? "" : "s"}, ${reflog.length} head move${reflog.length === 1 ? "" : "s"}.`),
    h(
      "ol",
      { class: "timeline", "aria-label": "Ledgers from the first to the head" },
      groups.map((g) =>
        h(
          "li",
          { class: "turn" },
          h(
            "h3",
            {},
            g.turn ? `Turn ${g.turn.number}` : "Ledger",
            g.turn ? [" ", badge(g.turn.state, g.turn.state === "complete" ? "ok" : g.turn.state === "open" ? "info" : "warn")] : null,
          ),
          g.turn ? h("p", { class: "muted" }, "opened ", when(g.turn.opened_at), g.turn.closed_at ? [", closed ", when(g.turn.closed_at)] : null, g.turn.worker ? ", worked by " + g.turn.worker : "") : null,
          g.items.map(([l, role]) => ledgerItem(l, role, movesTo.get(l.id) || [], bad.has(l.id))),
        ),
      ),
    ),
    off.length
      ? [
          h("h2", {}, "Head moves to ledgers no longer on the chain"),
          h(
            "ul",
            {},
            off.map((m) => h("li", {}, "#" + m.seq + " ", m.reason, " → ", link("/ledgers/" + enc(m.to), short(m.to)), " · ", when(m.at))),
          ),
        ]
      : null,
  );
}
