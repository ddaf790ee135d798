// views/graph.js: a lineage graph from the provenance trees the API
// answers, laid out in layers and drawn as SVG.
//
// The API answers two trees (backward: sources, forward: derived) in which a
// vertex reached through several paths is expanded once and marked `shared`
// elsewhere. A tree would draw such a vertex twice; the graph keys every
// vertex by its ref, so a diamond (A→B, A→C, B→D, C→D) is four vertices and
// four edges.

import { h, short, svg } from "../dom.js";

// fromTrace turns a trace answer into {nodes: Map ref→item, edges: [{from,
// to, kind}]}, edges pointing from the source to what was derived from it.
export function fromTrace(trace) {
  const nodes = new Map();
  const edges = new Map();
  const put = (item) => {
    const had = nodes.get(item.ref);
    // A shared occurrence carries no children and may be abridged: the
    // first full one wins, a later full one fills what is missing.
    if (!had) nodes.set(item.ref, { ...item });
    else if (had.shared && !item.shared) nodes.set(item.ref, { ...had, ...item, shared: false });
  };
  const edge = (from, to) => {
    const key = from + "\u0000" + to;
    if (!edges.has(key)) edges.set(key, { from, to, kind: "derived_from" });
  };
  const center = trace.memory || {};
  put({ ...center, depth: 0 });
  const walk = (item, key, down) => {
    for (const child of item[key] || []) {
      put(child);
      if (down) edge(item.ref, child.ref);
      else edge(child.ref, item.ref);
      walk(child, key, down);
    }
  };
  if (trace.backward) walk({ ref: center.ref, sources: trace.backward.sources }, "sources", false);
  if (trace.forward) walk({ ref: center.ref, derived: trace.forward.derived }, "derived", true);
  return { center: center.ref, nodes, edges: [...edges.values()] };
}

// layers assigns every vertex the length of the longest path reaching it, so
// every edge points to a later layer (sources left, derived right). The
// lineage is acyclic (kurad refuses cycles); a bound keeps a bad answer from
// looping.
export function layers(refs, edges) {
  const layer = new Map(refs.map((r) => [r, 0]));
  for (let pass = 0; pass <= refs.length; pass++) {
    let changed = false;
    for (const e of edges) {
      const want = layer.get(e.from) + 1;
      if (want > layer.get(e.to)) {
        layer.set(e.to, want);
        changed = true;
      }
    }
    if (!changed) break;
  }
  const cols = [];
  for (const r of refs) {
    const l = layer.get(r);
    (cols[l] = cols[l] || []).push(r);
  }
  // Order each column by the mean row of its sources (one barycentre
  // sweep): fewer crossings, and stable for equal means.
  const row = new Map();
  cols.forEach((col, i) => {
    if (i > 0) {
      const mean = (r) => {
        const ins = edges.filter((e) => e.to === r && row.has(e.from)).map((e) => row.get(e.from));
        return ins.length ? ins.reduce((a, b) => a + b, 0) / ins.length : Infinity;
      };
      const m = new Map(col.map((r) => [r, mean(r)]));
      col.sort((a, b) => m.get(a) - m.get(b));
    }
    col.forEach((r, j) => row.set(r, j));
  });
  return { cols, layer, row };
}

const W = 190; // node width
const NH = 46; // node height
const GX = 70; // gap between layers
const GY = 18; // gap between rows
const PAD = 12;
const LANE = 18; // height of the lane of one edge that skips a layer

// label is what a vertex says on one line: its title, or a record's text;
// a withheld record says so and nothing else.
export function label(n) {
  if (n.withheld) return "withheld";
  if (n.kind === "record") return n.redacted ? "redacted" : n.text || n.type || "";
  return n.title || n.summary || "";
}

// edgePath is the SVG path of an edge from the right side of a (x1, y1) to
// the left side of b (x2, y2). Between adjacent layers it is one S-curve in
// the gap between their columns. An edge that skips layers would cross the
// columns between, and drawn straight it ran through their vertices (and
// over the edges joining them, hiding its arrow); it climbs to its own lane
// above every vertex in the gap after its source, runs along the lane over
// the columns between, and comes down in the gap before its target. Every
// point of a path is in a gap or a lane, never in a vertex's box.
function edgePath(x1, y1, x2, y2, laneY) {
  if (laneY === null) {
    const mx = (x1 + x2) / 2;
    return { d: `M ${x1} ${y1} C ${mx} ${y1}, ${mx} ${y2}, ${x2} ${y2}`, lx: mx, ly: (y1 + y2) / 2 - 4 };
  }
  const a = x1 + GX / 2;
  const b = x2 - GX / 2;
  return {
    d: `M ${x1} ${y1} C ${a} ${y1}, ${a} ${laneY}, ${x1 + GX} ${laneY} L ${x2 - GX} ${laneY} C ${b} ${laneY}, ${b} ${y2}, ${x2} ${y2}`,
    lx: (x1 + x2) / 2,
    ly: laneY - 4,
  };
}

// draw renders the graph: each vertex a link (href from hrefOf) holding a
// rect and two lines of text, each edge a path with its kind as a label.
export function draw(graph, hrefOf, title) {
  const refs = [...graph.nodes.keys()];
  const { cols, row, layer } = layers(refs, graph.edges);
  // One lane above the vertices for each edge that skips a layer.
  const skips = graph.edges.filter((e) => layer.get(e.to) - layer.get(e.from) > 1);
  const lanes = new Map(skips.map((e, i) => [e, PAD + i * LANE + LANE - 3]));
  const top = PAD + skips.length * LANE;
  const tall = Math.max(...cols.map((c) => c.length), 1);
  const width = PAD * 2 + cols.length * W + (cols.length - 1) * GX;
  const height = top + PAD + tall * NH + (tall - 1) * GY;
  const pos = new Map();
  cols.forEach((col, i) => {
    const off = ((tall - col.length) * (NH + GY)) / 2;
    col.forEach((r, j) => pos.set(r, { x: PAD + i * (W + GX), y: top + off + j * (NH + GY) }));
  });
  const titleId = "g-" + Math.random().toString(36).slice(2, 9);
  const el = svg(
    "svg",
    { viewBox: `0 0 ${width} ${height}`, width, height, role: "group", "aria-labelledby": titleId, class: "lineage" },
    svg("title", { id: titleId }, title),
    svg(
      "defs",
      {},
      svg(
        "marker",
        { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
        svg("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrowhead" }),
      ),
    ),
  );
  // Ports: the edges leaving a vertex start at points spread down its right
  // side, those reaching one end at points spread down its left side, in
  // the order of where their other ends lie (lanes first: they are above
  // everything), so no two arrows meet at one point.
  const far = (e, end) => (lanes.has(e) ? lanes.get(e) : pos.get(e[end]).y);
  const outPort = new Map();
  const inPort = new Map();
  const spread = (ports, list, end) => {
    list.sort((p, q) => far(p, end) - far(q, end));
    list.forEach((e, k) => ports.set(e, (NH * (k + 1)) / (list.length + 1)));
  };
  for (const r of refs) {
    spread(outPort, graph.edges.filter((e) => e.from === r), "to");
    spread(inPort, graph.edges.filter((e) => e.to === r), "from");
  }
  for (const e of graph.edges) {
    const a = pos.get(e.from);
    const b = pos.get(e.to);
    const path = edgePath(a.x + W, a.y + outPort.get(e), b.x, b.y + inPort.get(e), lanes.has(e) ? lanes.get(e) : null);
    el.append(
      svg(
        "g",
        { class: "edge-group" },
        svg("path", {
          class: "edge",
          d: path.d,
          "marker-end": "url(#arrow)",
          "data-from": e.from,
          "data-to": e.to,
          "data-kind": e.kind || "",
        }),
        e.kind ? svg("text", { class: "edge-label", x: path.lx, y: path.ly, "text-anchor": "middle", "aria-hidden": "true" }, e.kind.replace("_", " ")) : null,
      ),
    );
  }
  for (const r of refs) {
    const n = graph.nodes.get(r);
    const p = pos.get(r);
    const cls = "node" + (r === graph.center ? " focus" : "") + (n.withheld ? " withheld" : "") + (n.kind === "record" ? " record" : "");
    const name = r + (n.withheld ? " (withheld)" : label(n) ? ": " + label(n) : "");
    el.append(
      svg(
        "a",
        { href: hrefOf(r), class: cls, "data-ref": r, "aria-label": name, "aria-current": r === graph.center ? "page" : null },
        svg("title", {}, name),
        svg("rect", { x: p.x, y: p.y, width: W, height: NH, rx: 5 }),
        svg("text", { x: p.x + 8, y: p.y + 18, class: "ref" }, short(r, 26)),
        svg("text", { x: p.x + 8, y: p.y + 36, class: "sub" }, short(label(n), 28)),
      ),
    );
  }
  return h("div", { class: "graph" }, el);
}
