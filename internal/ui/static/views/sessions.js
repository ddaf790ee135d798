// views/sessions.js: the sessions of a project, and one session's chain.

import { errorBox, field, h, hash, link, mount, table, when } from "../dom.js";

// list: every session, or one project's, oldest first, paged.
export async function list({ root, query, api, navigate, signal }) {
  const project = query.get("project") || "";
  const [wrap, input] = field("Project", { name: "project", value: project, placeholder: "all projects" });
  const form = h(
    "form",
    { class: "inline", role: "search", onsubmit: (e) => (e.preventDefault(), navigate("/sessions", { project: input.value.trim() })) },
    wrap,
    h("button", { type: "submit" }, "Show"),
  );
  const out = h("div");
  mount(root, h("h1", {}, "Sessions"), form, out);
  const data = await api.get("/v1/sessions", { project, cursor: query.get("cursor") || "", limit: 100 }, { signal });
  const rows = data.sessions || [];
  mount(
    out,
    rows.length === 0
      ? h("p", { class: "muted" }, "No sessions", project ? " in " + project : "", ".")
      : table(
          null,
          [
            { label: "Session", cell: (s) => link("/sessions/" + encodeURIComponent(s.id), s.project + "/" + s.name) },
            { label: "Scope", cell: (s) => s.scope || "" },
            { label: "Head", cell: (s) => (s.head_hash ? hash(s.head_hash) : h("span", { class: "muted" }, "none")) },
            { label: "Updated", cell: (s) => when(s.updated_at || s.created_at) },
          ],
          rows,
          { class: "stack" },
        ),
    data.next_cursor ? h("p", {}, link("/sessions?" + new URLSearchParams({ project, cursor: data.next_cursor }), "Next page →")) : null,
  );
}

// session: placeholder until the chain view lands.
export async function session({ root, params, api, signal }) {
  const s = await api.get("/v1/sessions/" + encodeURIComponent(params[0]), null, { signal });
  mount(root, h("h1", {}, s.project + "/" + s.name));
}
