/* Sluice dashboard (docs/api.md, "Dashboard").
 *
 * Polls the REST API of one node, computes rates from the cumulative
 * counters of /api/v1/stats, draws the service graph in SVG and follows
 * /api/v1/events. No library, no outside resource.
 *
 * The tables' columns are stats fields, named in index.html (<th data-field=
 * "TABLE.FIELD">): their headers, tooltips (the field's help), rates and
 * formats come from the stats schema (/api/v1/stats/schema; the package's copy,
 * in the page, until the node's is read): a counter is shown per second, a
 * gauge as it is.
 *
 * Query parameters: token=TOKEN (read once, kept in sessionStorage and sent
 * as "Authorization: Bearer TOKEN"), interval=SECONDS (stats poll, default 1).
 */
"use strict";

(function () {
  const API = "api/v1";
  const HISTORY = 60;             // samples kept per sparkline
  const TOPOLOGY_EVERY_MS = 3000; // services, nfs, chain, graphs, status
  const MAX_EVENTS = 200;
  const SVGNS = "http://www.w3.org/2000/svg";

  // -- token and options ------------------------------------------------------------------
  const params = new URLSearchParams(location.search);
  if (params.has("token")) {
    sessionStorage.setItem("sluice-token", params.get("token"));
    params.delete("token");
    const q = params.toString();
    history.replaceState(null, "", location.pathname + (q ? "?" + q : "") + location.hash);
  }
  const token = sessionStorage.getItem("sluice-token") || "";
  const intervalS = Math.max(0.2, parseFloat(params.get("interval") || "1") || 1);

  function headers() {
    return token ? { Authorization: "Bearer " + token } : {};
  }

  class HttpError extends Error {
    constructor(status, detail) {
      super(detail);
      this.status = status;
    }
  }

  async function get(path) {
    const r = await fetch(API + path, { headers: headers(), cache: "no-store" });
    if (!r.ok) {
      let detail = r.statusText;
      try { detail = (await r.json()).detail || detail; } catch (e) { /* not JSON */ }
      throw new HttpError(r.status, detail);
    }
    return r.json();
  }

  // -- state -------------------------------------------------------------------------------
  const state = {
    prev: null,          // {t, stats}
    rates: null,         // last computed rates
    hist: new Map(),     // series key -> [values]
    topo: { chain: null, graphs: null, services: [], nfs: [], status: null },
    topoAt: -Infinity,   // when the topology was last read (performance.now())
    graphsMissing: 0,    // time /graphs answered 404 (the API has no such endpoint)
    edgesSeen: false,    // stats carried "edges"
    schema: JSON.parse(document.getElementById("stats-schema").textContent),
    schemaRead: false,   // the node's schema replaced the package's
    lastError: "",
  };

  // the history of a series, with v appended (a rate of null, the first read, is not)
  function push(key, v) {
    let h = state.hist.get(key);
    if (!h) { h = []; state.hist.set(key, h); }
    if (v === null || v === undefined) return h;
    h.push(v);
    if (h.length > HISTORY) h.shift();
    return h;
  }

  // -- formatting --------------------------------------------------------------------------
  function si(v, digits) {
    if (v === null || v === undefined || Number.isNaN(v)) return "–";
    const a = Math.abs(v);
    const d = digits === undefined ? 1 : digits;
    if (a >= 1e9) return (v / 1e9).toFixed(2) + "G";
    if (a >= 1e6) return (v / 1e6).toFixed(2) + "M";
    if (a >= 1e3) return (v / 1e3).toFixed(d) + "k";
    if (a >= 10 || v === 0) return Math.round(v).toString();
    return v.toFixed(1);
  }

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null) continue;
      if (k === "class") e.className = v; else e.setAttribute(k, v);
    }
    for (const c of children) {
      if (c === null || c === undefined) continue;
      e.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    }
    return e;
  }

  function svg(tag, attrs, ...children) {
    const e = document.createElementNS(SVGNS, tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v !== undefined && v !== null) e.setAttribute(k, v);
    }
    for (const c of children) {
      if (c === null || c === undefined) continue;
      e.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    }
    return e;
  }

  function rateCell(v, cls) {
    return el("td", { class: "num " + (cls || ""), "data-value": v === null ? "" : v.toFixed(3) },
      si(v));
  }

  function sparkline(values, cls) {
    const w = 120, h = 22;
    const s = svg("svg", { class: "spark " + (cls || ""), width: w, height: h,
      viewBox: `0 0 ${w} ${h}` });
    if (!values || values.length < 2) return s;
    const max = Math.max(...values, 1);
    const step = w / (HISTORY - 1);
    const x0 = w - step * (values.length - 1);
    const pts = values.map((v, i) =>
      `${(x0 + i * step).toFixed(1)},${(h - 1 - (v / max) * (h - 3)).toFixed(1)}`);
    s.appendChild(svg("polyline", { points: pts.join(" ") }));
    s.appendChild(svg("title", {}, `max ${si(max)}/s, now ${si(values[values.length - 1])}/s`));
    return s;
  }

  function dropSum(d) {
    let n = 0;
    for (const v of Object.values(d || {})) n += Number(v) || 0;
    return n;
  }

  // -- columns from the stats schema ------------------------------------------------------
  // The rules of sluice.core.counters.heading (without units): tests/python/
  // test_dashboard_columns.py runs this part in node and checks the two agree.
  // heading-begin
  const DIRECTION = { rx: "in", tx: "out" };   // a leading rx_/tx_
  const SPELLED = { packets: "pkts", bytes: "bytes" };   // a unit as field names spell it
  const ABBREV = { cycles: "cyc", pkts: "pkt", per: "/" };
  const RATE_WORD = { drops: "drop" };
  const COUNT_WORD = { drops: "dropped" };
  const own = (o, k) => (Object.prototype.hasOwnProperty.call(o, k) ? o[k] : undefined);

  function abbrev(name) {
    let out = "";
    for (const p of name.split("_")) {
      const w = own(ABBREV, p) || p;
      out += w === "/" || out.endsWith("/") || !out ? w : " " + w;
    }
    return out;
  }

  // a field's short header, per second with rate: "in/s", "drop/s", "pkts/s", "ring"
  function heading(f, rate) {
    const i = f.name.indexOf("_");
    const dir = i > 0 && i < f.name.length - 1 ? own(DIRECTION, f.name.slice(0, i)) : undefined;
    const rest = dir ? f.name.slice(i + 1) : f.name;
    if (own(SPELLED, f.unit) && rest === SPELLED[f.unit]) {
      if (!rate) return dir || f.unit;
      return (dir || rest) + "/s";
    }
    if (rate) return (own(RATE_WORD, rest) || abbrev(rest)) + "/s";
    if (f.kind === "counter") return own(COUNT_WORD, rest) || abbrev(rest);
    return abbrev(rest);
  }

  // what a by-key field's keys are, from its help ("..., by reason": "reason")
  function byWord(f) {
    const w = f.help.split(/\s+/).filter(Boolean);
    return w.length >= 2 && w[w.length - 2] === "by" ? w[w.length - 1].replace(/^\.+|\.+$/g, "") : "key";
  }
  // heading-end

  function schemaField(table, name) {
    return ((state.schema.tables || {})[table] || []).find((f) => f.name === name) || null;
  }

  // the columns of a table of the page: {field, show, cls} of each <th>; field null
  // for a column that is not a stats field (a row's name)
  function columnsOf(tableId) {
    return [...document.querySelectorAll(`#${tableId} thead th`)].map((th) => {
      const [table, name] = (th.dataset.field || "").split(".");
      return { field: name ? schemaField(table, name) : null, name: th.dataset.field || "",
        show: th.dataset.show || "", cls: th.dataset.class || "" };
    });
  }

  // heads every <th data-field> from the schema: its header and, as a tooltip, its help
  function applySchema() {
    for (const th of document.querySelectorAll("th[data-field]")) {
      const [table, name] = th.dataset.field.split(".");
      const f = schemaField(table, name);
      if (!f) {
        console.error(`dashboard: the stats schema has no field ${th.dataset.field}`);
        th.textContent = th.dataset.field;
        continue;
      }
      const show = th.dataset.show || "";
      th.textContent = show === "by" ? byWord(f) : show === "count" || show === "name"
        ? heading(f, false) : heading(f, f.kind === "counter") + (show === "spark" ? ", last minute" : "");
      th.title = f.help;
    }
  }

  // a row's value of a field, a by-key counter (drops by reason) as its total
  function fieldValue(f, row) {
    const v = row ? row[f.name] : undefined;
    return f.type === "object" && f.kind === "counter" ? dropSum(v) : v;
  }

  // -- rates -------------------------------------------------------------------------------
  function rate(now, before, dt) {
    if (before === undefined || before === null || dt <= 0) return null;
    const d = now - before;
    return d < 0 ? null : d / dt;   // a counter that went back: sluiced restarted
  }

  function edgeKey(e) { return e.from + "\u2192" + e.to; }

  // per second, each counter of a row of the schema's ``table`` between two reads
  function rowRates(table, now, before, dt) {
    const out = {};
    for (const f of (state.schema.tables || {})[table] || []) {
      if (f.kind === "counter") out[f.name] = rate(fieldValue(f, now), before && fieldValue(f, before), dt);
    }
    return out;
  }

  function computeRates(prev, cur, dt) {
    const r = { ports: new Map(), nfs: new Map(), services: new Map(), edges: new Map(),
      drops: new Map() };
    const pp = new Map((prev ? prev.ports || [] : []).map((p) => [p.name, p]));
    for (const p of cur.ports || []) r.ports.set(p.name, rowRates("port", p, pp.get(p.name), dt));
    const np = new Map((prev ? prev.nfs || [] : []).map((n) => [n.instance, n]));
    for (const n of cur.nfs || []) r.nfs.set(n.instance, rowRates("nf", n, np.get(n.instance), dt));
    const sp = new Map((prev ? prev.services || [] : []).map((s) => [s.name, s]));
    for (const s of cur.services || []) {
      r.services.set(s.name, rowRates("service", s, sp.get(s.name), dt));
    }
    const ep = new Map((prev ? prev.edges || [] : []).map((e) => [edgeKey(e), e]));
    for (const e of cur.edges || []) {
      const rr = rowRates("edge", e, ep.get(edgeKey(e)), dt);
      r.edges.set(edgeKey(e), { from: e.from, to: e.to, row: e, rates: rr, pkts: e.pkts,
        bytes: e.bytes, pps: rr.pkts, bps: rr.bytes });
    }
    // drops by reason, over ports and NF instances
    const where = (list, name) => {
      for (const x of list || []) {
        for (const [reason, v] of Object.entries(x.drops || {})) {
          const d = r.drops.get(reason) || { total: 0, before: 0, where: [] };
          d.total += Number(v) || 0;
          if (v > 0) d.where.push(name(x) + " " + si(v, 0));
          r.drops.set(reason, d);
        }
      }
    };
    where(cur.ports, (p) => "port " + p.name);
    where(cur.nfs, (n) => n.service + "#" + n.instance);
    const before = new Map();
    for (const x of (prev ? [...(prev.ports || []), ...(prev.nfs || [])] : [])) {
      for (const [reason, v] of Object.entries(x.drops || {})) {
        before.set(reason, (before.get(reason) || 0) + (Number(v) || 0));
      }
    }
    for (const [reason, d] of r.drops) d.rate = prev ? rate(d.total, before.get(reason), dt) : null;
    return r;
  }

  // -- the graph ---------------------------------------------------------------------------
  // Nodes: "src:NAME" (a port packets come in on), service names, "port:NAME" (a port
  // packets leave by) and "drop". Edges come from the graphs (or the chain) and from
  // the per-edge counters of stats.
  function graphsOf(topo) {
    if (topo.graphs && topo.graphs.length) return topo.graphs;
    const hops = (topo.chain && topo.chain.hops) || [];
    const nodes = {};
    for (let i = 0; i < hops.length; i++) {
      if (hops[i].startsWith("port:") || hops[i] === "drop") break;
      nodes[hops[i]] = [i + 1 < hops.length ? hops[i + 1] : "drop"];
    }
    return hops.length ? [{ name: "default", entry: hops[0], nodes, chain: true }] : [];
  }

  function buildGraph(topo, stats, rates) {
    const nodes = new Map();   // id -> {id, kind, label}
    const edges = new Map();   // key -> {from, to, isDefault, graphs: Set, stat}
    const addNode = (id) => {
      if (nodes.has(id)) return nodes.get(id);
      let n;
      if (id.startsWith("src:")) n = { id, kind: "source", label: id.slice(4) };
      else if (id.startsWith("port:")) n = { id, kind: "sink", label: id.slice(5) };
      else if (id === "drop") n = { id, kind: "drop", label: "drop" };
      else n = { id, kind: "service", label: id };
      nodes.set(id, n);
      return n;
    };
    const addEdge = (from, to, isDefault, graph) => {
      addNode(from); addNode(to);
      const k = from + "\u2192" + to;
      let e = edges.get(k);
      if (!e) { e = { key: k, from, to, isDefault: false, graphs: new Set(), stat: null }; edges.set(k, e); }
      e.isDefault = e.isDefault || isDefault;
      if (graph) e.graphs.add(graph);
      return e;
    };
    const graphs = graphsOf(topo);
    for (const s of topo.services || []) addNode(s.name);
    for (const g of graphs) {
      for (const [svc, hops] of Object.entries(g.nodes || {})) {
        addNode(svc);
        (hops || []).forEach((h, i) => addEdge(svc, h, i === 0, g.name));
      }
    }
    const haveEdges = Array.isArray(stats && stats.edges);
    if (haveEdges) {
      for (const e of stats.edges) {
        const from = String(e.from).startsWith("port:") ? "src:" + String(e.from).slice(5) : String(e.from);
        const x = addEdge(from, String(e.to), false, null);
        x.stat = rates ? rates.edges.get(edgeKey(e)) || null : null;
        x.pkts = (x.pkts || 0) + (Number(e.pkts) || 0);
      }
    } else {
      // No per-edge counters: ports that read packets feed every graph's entry.
      for (const p of (stats && stats.ports) || []) {
        if (!(p.rx_pkts > 0)) continue;
        for (const g of graphs) {
          if (g.entry) addEdge("src:" + p.name, String(g.entry), true, g.name);
        }
      }
    }
    return { nodes, edges, graphs, haveEdges };
  }

  function layout(model) {
    const { nodes, edges } = model;
    const succ = new Map(), pred = new Map();
    for (const id of nodes.keys()) { succ.set(id, []); pred.set(id, []); }
    for (const e of edges.values()) { succ.get(e.from).push(e.to); pred.get(e.to).push(e.from); }
    // longest path from the sources; bounded so that a cycle (two graphs with
    // opposite edges) cannot loop
    const layer = new Map();
    for (const [id, n] of nodes) layer.set(id, n.kind === "source" ? 0 : 1);
    for (let it = 0; it < nodes.size + 1; it++) {
      let changed = false;
      for (const e of edges.values()) {
        const a = nodes.get(e.from), b = nodes.get(e.to);
        if (b.kind !== "service" || a.kind === "drop" || a.kind === "sink") continue;
        const want = layer.get(e.from) + 1;
        if (want > layer.get(e.to) && want <= nodes.size) { layer.set(e.to, want); changed = true; }
      }
      if (!changed) break;
    }
    let maxSvc = 0;
    for (const [id, n] of nodes) if (n.kind === "service") maxSvc = Math.max(maxSvc, layer.get(id));
    for (const [id, n] of nodes) if (n.kind === "sink" || n.kind === "drop") layer.set(id, maxSvc + 1);
    const columns = [];
    for (const [id] of nodes) {
      const l = layer.get(id);
      (columns[l] = columns[l] || []).push(id);
    }
    // order: sources and sinks by name (drop last), services by the mean row of
    // their predecessors
    const row = new Map();
    for (let l = 0; l < columns.length; l++) {
      const col = columns[l] || [];
      const key = (id) => {
        const n = nodes.get(id);
        if (n.kind === "drop") return [1e9, id];
        const ps = pred.get(id).filter((p) => row.has(p));
        const m = ps.length ? ps.reduce((a, p) => a + row.get(p), 0) / ps.length : 0;
        return [n.kind === "service" ? m : 0, id];
      };
      col.sort((a, b) => {
        const ka = key(a), kb = key(b);
        return ka[0] - kb[0] || (ka[1] < kb[1] ? -1 : ka[1] > kb[1] ? 1 : 0);
      });
      col.forEach((id, i) => row.set(id, i));
      columns[l] = col;
    }
    return { layer, row, columns };
  }

  function drawGraph(model, rates) {
    const root = document.getElementById("graph");
    const { nodes, edges } = model;
    const { layer, row, columns } = layout(model);
    const W = 190, H = 62, GX = 120, GY = 30, PAD = 16, BAND = 44;
    const rowsMax = Math.max(1, ...columns.map((c) => (c ? c.length : 0)));
    // edges that skip a column run in a band above or below the boxes
    const skips = [...edges.values()].filter((e) => layer.get(e.to) - layer.get(e.from) > 1);
    const top = PAD + (skips.length ? BAND : 0);
    const width = PAD * 2 + columns.length * W + (columns.length - 1) * GX;
    const height = top + rowsMax * H + (rowsMax - 1) * GY + PAD + (skips.length ? BAND : 0);
    const pos = new Map();
    for (const [id] of nodes) {
      const col = columns[layer.get(id)];
      const off = ((rowsMax - col.length) * (H + GY)) / 2;
      pos.set(id, { x: PAD + layer.get(id) * (W + GX), y: top + off + row.get(id) * (H + GY) });
    }
    const mid = top + (rowsMax * H + (rowsMax - 1) * GY) / 2;
    while (root.firstChild) root.removeChild(root.firstChild);
    root.setAttribute("viewBox", `0 0 ${Math.max(width, 300)} ${Math.max(height, 80)}`);
    root.setAttribute("width", Math.max(width, 300));   // CSS scales it down to the panel
    const defs = svg("defs", {},
      svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 9,
        markerHeight: 9, markerUnits: "userSpaceOnUse", orient: "auto-start-reverse" },
      svg("path", { d: "M0,0 L10,5 L0,10 z" })));
    root.appendChild(defs);
    if (!nodes.size) {
      root.appendChild(svg("text", { x: 20, y: 40, class: "empty" }, "no chain or graph yet"));
      return;
    }
    const maxPps = Math.max(1, ...[...edges.values()].map((e) => (e.stat && e.stat.pps) || 0));
    const edgeLayer = svg("g", { class: "edges" });
    root.appendChild(edgeLayer);
    for (const e of edges.values()) {
      const a = pos.get(e.from), b = pos.get(e.to);
      let x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x, y2 = b.y + H / 2;
      let d, mx = (x1 + x2) / 2, my = (y1 + y2) / 2;
      if (layer.get(e.to) - layer.get(e.from) > 1) {
        const band = (y1 + y2) / 2 <= mid ? top - BAND / 2 : height - PAD - BAND / 2;
        const c1 = x1 + GX / 2, c2 = x2 - GX / 2;
        d = `M${x1},${y1} C${c1},${y1} ${c1},${band} ${x1 + GX},${band} L${x2 - GX},${band} ` +
          `C${c2},${band} ${c2},${y2} ${x2},${y2}`;
        my = band;
      } else if (x2 > x1) {
        const cx = (x1 + x2) / 2;
        d = `M${x1},${y1} C${cx},${y1} ${cx},${y2} ${x2},${y2}`;
      } else {   // an edge back to an earlier column: loop under the boxes
        x1 = a.x + W / 2; y1 = a.y + H; x2 = b.x + W / 2; y2 = b.y + H;
        const low = Math.max(y1, y2) + GY;
        d = `M${x1},${y1} C${x1},${low} ${x2},${low} ${x2},${y2}`;
      }
      const pps = e.stat ? e.stat.pps : null;
      const flowing = pps !== null && pps > 0;
      const w = flowing ? 1.5 + 5 * Math.log10(1 + pps) / Math.log10(1 + maxPps) : 1.5;
      const allowed = e.graphs.size > 0 && !e.isDefault;   // in a graph, not its default
      const cls = ["edge", flowing ? "flowing" : "idle", allowed ? "allowed" : "default",
        e.to === "drop" ? "to-drop" : ""].join(" ");
      const g = svg("g", { class: cls, "data-from": e.from.startsWith("src:") ? "port:" + e.from.slice(4) : e.from,
        "data-to": e.to, "data-graphs": [...e.graphs].join(" ") });
      g.appendChild(svg("path", { d, "stroke-width": w.toFixed(2), "marker-end": "url(#arrow)" }));
      my -= 7 + w / 2;
      const label = e.stat && pps !== null ? si(pps) + " pps" : "";
      if (label) {
        g.appendChild(svg("text", { x: mx, y: my, class: "rate", "text-anchor": "middle",
          "data-pps": pps === null ? "" : pps.toFixed(3) }, label));
      }
      g.appendChild(svg("title", {}, `${e.from.replace(/^src:/, "port:")} → ${e.to}` +
        (e.graphs.size ? ` (graph ${[...e.graphs].join(", ")})` : "") +
        (e.stat ? `: ${si(e.stat.pps)} pkts/s, ${si(e.stat.bps)} B/s, ${e.stat.pkts} packets` : "")));
      edgeLayer.appendChild(g);
    }
    const svcs = new Map((state.topo.services || []).map((s) => [s.name, s]));
    const nfState = new Map((state.topo.nfs || []).map((n) => [n.instance, n.state]));
    for (const n of nodes.values()) {
      const p = pos.get(n.id);
      const attrs = { class: "node " + n.kind, transform: `translate(${p.x},${p.y})` };
      if (n.kind === "service") attrs["data-service"] = n.id;
      else if (n.kind === "source") attrs["data-port"] = n.label;
      else if (n.kind === "sink") attrs["data-port"] = n.label;
      attrs["data-node"] = n.id.startsWith("src:") ? "port:" + n.label : n.id;
      attrs["data-role"] = n.kind;
      const g = svg("g", attrs);
      g.appendChild(svg("rect", { width: W, height: H, rx: n.kind === "service" ? 6 : 16 }));
      let line2 = "", line3 = "";
      if (n.kind === "service") {
        const s = svcs.get(n.id);
        const inst = s ? s.instances || [] : [];
        line2 = inst.length ? inst.map((i) => "#" + i + (nfState.get(i) && nfState.get(i) !== "running"
          ? " " + nfState.get(i) : "")).join(" ") : "no instance";
        const r = rates && rates.services.get(n.id);
        line3 = r && r.rx_pkts !== null ? `in ${si(r.rx_pkts)}/s · out ${si(r.tx_pkts)}/s` : "";
        if (r) r.drop = serviceDrops(rates, n.id);
        g.appendChild(svg("text", { x: 10, y: 19, class: "name" }, n.label));
        const t2 = svg("text", { x: 10, y: 36, class: "instances" }, line2);
        if (r && r.drop > 0) t2.appendChild(svg("tspan", { class: "drop" }, ` · drop ${si(r.drop)}/s`));
        g.appendChild(t2);
      } else {
        const r = rates && rates.ports.get(n.label);
        g.appendChild(svg("text", { x: 14, y: 19, class: "name" },
          n.kind === "drop" ? "drop" : (n.kind === "source" ? "in: " : "out: ") + "port:" + n.label));
        if (n.kind === "source" && r) line3 = `rx ${si(r.rx_pkts)}/s`;
        else if (n.kind === "sink" && r) line3 = `tx ${si(r.tx_pkts)}/s`;
        else if (n.kind === "drop" && rates) {
          let t = 0;
          let any = false;
          for (const d of rates.drops.values()) if (d.rate !== null && d.rate !== undefined) { t += d.rate; any = true; }
          line3 = any ? `${si(t)}/s` : "";
        }
      }
      g.appendChild(svg("text", { x: n.kind === "service" ? 10 : 14, y: 53, class: "rates" }, line3));
      root.appendChild(g);
    }
  }

  // drops/s of a service's instances (stats.services[].drops has no rate of its own)
  function serviceDrops(rates, name) {
    let t = 0;
    for (const n of (state.prev && state.prev.stats.nfs) || []) {
      const r = n.service === name && rates.nfs.get(n.instance);
      if (r && r.drops) t += r.drops;
    }
    return t;
  }

  // -- tables ------------------------------------------------------------------------------
  function fill(tbodyId, rows) {
    const tb = document.querySelector(`#${tbodyId} tbody`);
    while (tb.firstChild) tb.removeChild(tb.firstChild);
    for (const r of rows) tb.appendChild(r);
  }

  // a cell of column c (columnsOf) for a row of stats and its rates by field; key
  // names the row's sparkline series
  function cell(c, row, r, key) {
    const f = c.field;
    if (!f) return el("td", {});
    const v = row[f.name];
    if (c.show === "spark") return el("td", {}, sparkline(push(key + ":" + f.name, r[f.name]), c.cls));
    if (c.show === "count") {
      return el("td", { class: "num " + c.cls, "data-value": String(v) }, si(v, 2));
    }
    if (f.kind === "counter") return rateCell(r[f.name], c.cls);
    if (f.kind === "label") return el("td", c.cls ? { class: c.cls + " " + v } : {}, String(v));
    if (f.keys && f.keys.length === 2) {   // a gauge of a count and its bound (a ring)
      const [n, size] = f.keys.map((k) => Number((v || {})[k]) || 0);
      const pct = size ? (100 * n) / size : 0;
      const bar = el("div", { class: "ring", title: `${n} of ${size} ${f.unit} waiting` },
        el("div", { class: "fill" + (pct > 50 ? " high" : ""), style: `width:${Math.min(100, pct).toFixed(1)}%` }));
      return el("td", { class: c.cls, "data-value": String(n) }, bar, ` ${n}/${size}`);
    }
    return el("td", { class: "num" }, typeof v === "number" ? v.toFixed(0) : "–");
  }

  // a table's rows: name cells first (its columns that are not fields, or show "name"),
  // then a cell of each field; rates: the row's rates by field (rowRates)
  function rowsOf(tableId, list, rates, rateKey, attrs, names) {
    const cols = columnsOf(tableId);
    return list.map((x) => {
      const r = rates(x) || {};
      const key = tableId + ":" + rateKey(x);
      const first = names(x);
      return el("tr", attrs(x), ...first,
        ...cols.slice(first.length).map((c) => cell(c, x, r, key)));
    });
  }

  function drawTables(stats, rates) {
    fill("ports", rowsOf("ports", stats.ports || [], (p) => rates.ports.get(p.name), (p) => p.name,
      (p) => ({ "data-port": p.name }), (p) => [el("td", {}, p.name)]));
    fill("nfs", rowsOf("nfs", stats.nfs || [], (n) => rates.nfs.get(n.instance), (n) => n.instance,
      (n) => ({ "data-instance": String(n.instance), "data-service": n.service }),
      (n) => [el("td", {}, `${n.service}#${n.instance}`)]));
    const edgeRows = [...rates.edges.values()].sort((a, b) => (a.from + a.to < b.from + b.to ? -1 : 1));
    fill("edges", rowsOf("edges", edgeRows.map((e) => e.row),
      (e) => (rates.edges.get(edgeKey(e)) || {}).rates, edgeKey,
      (e) => ({ "data-from": e.from, "data-to": e.to }), () => []));
    const note = document.getElementById("edges-note");
    note.hidden = Array.isArray(stats.edges);
    note.textContent = "this sluiced reports no per-edge counters (stats has no \"edges\"): " +
      "the graph shows its edges without rates";
    const drops = [...rates.drops.entries()].filter(([, d]) => d.total > 0).sort((a, b) => b[1].total - a[1].total);
    fill("drops", drops.map(([reason, d]) => el("tr", { "data-reason": reason },
      el("td", {}, reason), rateCell(d.rate, "rate"),
      el("td", { class: "num total", "data-value": String(d.total) }, si(d.total, 2)),
      el("td", { class: "where" }, d.where.join(", ")))));
    document.getElementById("drops-none").hidden = drops.length > 0;
  }

  // -- polling -----------------------------------------------------------------------------
  function setBanner(text) {
    const b = document.getElementById("banner");
    b.hidden = !text;
    b.textContent = text || "";
  }

  function explain(e) {
    if (e instanceof HttpError && e.status === 401) {
      return "the API needs a token: open this page as /?token=TOKEN (it is kept for this tab " +
        "only and sent as 'Authorization: Bearer TOKEN')";
    }
    if (e instanceof HttpError) return `the API answered ${e.status}: ${e.message}`;
    return `cannot reach the API (${e.message}); is \`sluice api\` still running?`;
  }

  async function refreshTopology() {
    const t = state.topo;
    const [services, nfs, chain, status] = await Promise.all(
      ["/services", "/nfs", "/chain", "/status"].map(get));
    Object.assign(t, { services, nfs, chain, status });
    if (!state.graphsMissing || performance.now() - state.graphsMissing > 30000) {
      try {
        const g = await get("/graphs");
        t.graphs = Array.isArray(g) ? g : (g && Array.isArray(g.graphs) ? g.graphs : null);
        state.graphsMissing = 0;
      } catch (e) {
        if (!(e instanceof HttpError) || (e.status !== 404 && e.status !== 501)) throw e;
        t.graphs = null;
        state.graphsMissing = performance.now();
      }
    }
    state.topoAt = performance.now();
    const names = graphsOf(t).map((g) => g.name + (g.chain ? " (chain)" : ""));
    document.getElementById("graph-names").textContent = names.length ? "graphs: " + names.join(", ") : "";
    if (status) {
      document.getElementById("status").textContent =
        `${status.mode} mode · up ${Math.round(status.uptime_s)} s · ` +
        `${status.n_nfs} NF(s) · rx ${status.rx_enabled ? "on" : "paused"}`;
    }
  }

  async function tick() {
    try {
      if (performance.now() - state.topoAt > TOPOLOGY_EVERY_MS) await refreshTopology();
      if (!state.schemaRead) {
        state.schema = await get("/stats/schema");
        state.schemaRead = true;
        applySchema();
      }
      const stats = await get("/stats");
      const t = performance.now() / 1000;
      const prev = state.prev;
      const dt = prev ? t - prev.t : 0;
      if (prev && (stats.ports || []).some((p) => {
        const b = (prev.stats.ports || []).find((x) => x.name === p.name);
        return b && p.rx_pkts < b.rx_pkts;
      })) {
        state.hist.clear();   // counters went back: a new sluiced
      }
      const rates = computeRates(prev ? prev.stats : null, stats, dt);
      state.prev = { t, stats };
      state.rates = rates;
      state.edgesSeen = Array.isArray(stats.edges);
      drawTables(stats, rates);
      drawGraph(buildGraph(state.topo, stats, prev ? rates : null), prev ? rates : null);
      setBanner("");
      document.getElementById("updated").textContent = "updated " + new Date().toLocaleTimeString();
      document.body.dataset.samples = String((Number(document.body.dataset.samples) || 0) + 1);
    } catch (e) {
      setBanner(explain(e));
      document.getElementById("status").textContent = "not connected";
    } finally {
      setTimeout(tick, intervalS * 1000);
    }
  }

  // -- events (server-sent events read with fetch, which can send the token) ---------------
  function eventText(ev) {
    const d = ev.data;
    if (d && typeof d === "object") {
      return Object.entries(d).map(([k, v]) =>
        `${k}=${typeof v === "string" && v && !/[\s=]/.test(v) ? v : JSON.stringify(v)}`).join(" ");
    }
    return d === undefined || d === null ? "" : JSON.stringify(d);
  }

  function clock(d) {
    const p = (v, n) => String(v).padStart(n || 2, "0");
    return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
  }

  function addEvent(ev) {
    const list = document.getElementById("events");
    const ts = typeof ev.ts === "number" ? new Date(ev.ts * 1000) : new Date();
    const kind = String(ev.kind || "event");
    const li = el("li", { "data-kind": kind, class: kind.split(".")[0] },
      el("time", {}, clock(ts)),
      el("span", { class: "kind" }, kind), el("span", { class: "fields" }, eventText(ev)));
    list.insertBefore(li, list.firstChild);
    while (list.childNodes.length > MAX_EVENTS) list.removeChild(list.lastChild);
    if (!kind.startsWith("flow.")) state.topoAt = -Infinity;   // services, NFs or graphs changed
  }

  async function followEvents() {
    const st = document.getElementById("events-state");
    for (;;) {
      try {
        const r = await fetch(API + "/events", { headers: headers(), cache: "no-store" });
        if (!r.ok) throw new HttpError(r.status, r.statusText);
        st.textContent = "live";
        st.className = "sub live";
        const reader = r.body.getReader();
        const dec = new TextDecoder();
        let buf = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += dec.decode(value, { stream: true });
          let i;
          while ((i = buf.indexOf("\n\n")) >= 0) {
            const block = buf.slice(0, i);
            buf = buf.slice(i + 2);
            const data = block.split("\n").filter((l) => l.startsWith("data:"))
              .map((l) => l.slice(5).replace(/^ /, "")).join("\n");
            if (!data) continue;   // a comment (": keepalive")
            try { addEvent(JSON.parse(data)); } catch (e) { /* not JSON: skip */ }
          }
        }
        st.textContent = "stream ended; reconnecting…";
      } catch (e) {
        st.textContent = (e instanceof HttpError && e.status === 401 ? "needs the token" :
          "not connected: " + e.message) + "; retrying…";
      }
      st.className = "sub";
      await new Promise((res) => setTimeout(res, 3000));
    }
  }

  if (token) {   // a link cannot carry the header: say where they are instead
    document.getElementById("links").textContent =
      "REST API at /docs, metrics at /metrics (with the token as a header) · ";
  }
  applySchema();
  tick();
  followEvents();
})();
