"""`sluice top`: a live terminal view of a running node (README, "sluice top").

Reads ``stats`` every ``interval`` seconds and shows the rates between two
reads: per port and per NF instance packets/s in, out and dropped, ring
occupancy, per-edge packets/s (``stats.edges``) and drops by reason. The
web dashboard (``sluice.web``) shows the same numbers. Which fields each
table shows is listed here (``PORT_RATES``, ...); their headers, units and
kinds come from the stats schema (``sluice.core.counters.column``).

``rates(prev, cur, dt)`` computes them (pure, for tests); ``frame`` draws
them with rich; ``run_top`` is the command.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from rich import box
from rich.console import Console, Group
from rich.live import Live
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from .core.counters import Column, Schema, builtin, by_word, column
from .core.counters import rate as _rate
from .runtime.client import Client, SluiceError

# What each table shows: (key of the ``rates`` row, `sluice top --json`'s, schema
# field). The choice is top's; headers, units and kinds are the schema's
# (sluice.core.counters.column: a counter per second, bytes as bits).
PORT_RATES = (("rx_pps", "rx_pkts"), ("tx_pps", "tx_pkts"), ("drop_pps", "drops"),
              ("rx_bps", "rx_bytes"), ("tx_bps", "tx_bytes"))
NF_RATES = (("rx_pps", "rx_pkts"), ("tx_pps", "tx_pkts"), ("drop_pps", "drops"))
EDGE_RATES = (("pps", "pkts"), ("bps", "bytes"))


def _cols(schema: Schema, table: str, keys: tuple[tuple[str, str], ...]) -> list[
        tuple[str, Column]]:
    return [(k, column(schema, table, f, rates=True, units=True)) for k, f in keys]


def rates(prev: dict[str, Any] | None, cur: dict[str, Any], dt: float,
          schema: Schema | None = None) -> dict[str, Any]:
    """Rates between two ``stats`` results taken ``dt`` seconds apart (prev
    None: counts only, rates None). Packets/s are ``*_pps``, bits/s ``*_bps``."""
    schema = schema or builtin()
    pcols, ncols = _cols(schema, "port", PORT_RATES), _cols(schema, "nf", NF_RATES)
    ecols = _cols(schema, "edge", EDGE_RATES)
    prev = prev or {}
    pp = {p.get("name"): p for p in prev.get("ports", [])}
    ports = []
    for p in cur.get("ports", []):
        b = pp.get(p.get("name"))
        ports.append({"name": p.get("name"),
                      **{k: c.per_s(p, b, dt) for k, c in pcols}})
    np_ = {n.get("instance"): n for n in prev.get("nfs", [])}
    nfs = []
    for n in cur.get("nfs", []):
        b = np_.get(n.get("instance"))
        ring = n.get("rx_ring") or {}
        nfs.append({
            "instance": n.get("instance"), "service": n.get("service"),
            "state": n.get("state"),
            **{k: c.per_s(n, b, dt) for k, c in ncols},
            "ring": int(ring.get("count", 0)), "ring_size": int(ring.get("size", 0)),
            "cycles_per_pkt": n.get("cycles_per_pkt"),
        })
    ep = {(e.get("from"), e.get("to")): e for e in prev.get("edges", [])}
    # an edge first listed now carried its packets since the last read
    zero = {c.field.name: 0 for _, c in ecols} if prev else None
    edges = []
    for e in cur.get("edges", []):
        b = ep.get((e.get("from"), e.get("to")), zero)
        edges.append({"from": e.get("from"), "to": e.get("to"), "pkts": e.get("pkts", 0),
                      **{k: c.per_s(e, b, dt) for k, c in ecols}})
    edges.sort(key=lambda e: (str(e["from"]), str(e["to"])))
    # stats.drops counts every drop on the node once (instances gone and the
    # TX thread included); the ports' and live instances' say where.
    totals: dict[str, int] = {}
    before: dict[str, int] = {}
    where: dict[str, list[str]] = {}
    for x, name in [(p, f"port {p.get('name')}") for p in cur.get("ports", [])] + \
                   [(n, f"{n.get('service')}#{n.get('instance')}") for n in cur.get("nfs", [])]:
        for reason, v in (x.get("drops") or {}).items():
            totals[reason] = totals.get(reason, 0) + int(v)
            if v:
                where.setdefault(reason, []).append(name)
    for s in cur.get("services", []):  # the drops of its instances that left
        live = [n for n in cur.get("nfs", []) if n.get("service") == s.get("name")]
        for reason, v in (s.get("drops") or {}).items():
            if int(v) > sum(int((n.get("drops") or {}).get(reason, 0)) for n in live):
                where.setdefault(reason, []).append(f"{s.get('name')} (instances gone)")
    for x in prev.get("ports", []) + prev.get("nfs", []):
        for reason, v in (x.get("drops") or {}).items():
            before[reason] = before.get(reason, 0) + int(v)
    if isinstance(cur.get("drops"), dict):
        totals = {r: int(v) for r, v in cur["drops"].items()}
        if isinstance(prev.get("drops"), dict):
            before = {r: int(v) for r, v in prev["drops"].items()}
    drops = [{"reason": r, "total": t,
              "pps": _rate(t, before.get(r, 0) if prev else None, dt),
              "where": where.get(r, [])}
             for r, t in sorted(totals.items(), key=lambda kv: (-kv[1], kv[0])) if t]
    return {"dt": dt, "ports": ports, "nfs": nfs, "edges": edges,
            "has_edges": "edges" in cur, "drops": drops,
            "drops_total": cur.get("drops_total", 0)}


def si(v: float | None) -> str:
    """1234567 -> '1.23M'; None -> '-'."""
    if v is None:
        return "-"
    a = abs(v)
    for div, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if a >= div:
            return f"{v / div:.2f}{unit}"
    return f"{v:.0f}" if a >= 10 or v == 0 else f"{v:.1f}"


def _table(cols: list[str], left: set[str]) -> Table:
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, expand=False)
    for i, c in enumerate(cols):
        # on a narrow terminal the names (first column) fold, numbers never
        # lose digits to an ellipsis
        t.add_column(c, no_wrap=i > 0, overflow="fold",
                     justify="left" if i == 0 or c in left else "right")
    return t


def _heads(schema: Schema) -> tuple[dict[str, list[str]], set[str]]:
    """Each table's headers: a row's name, then its columns from the schema (a
    counter per second, in its unit); the drop reasons' table heads its rows by
    what node.drops is by ("drop reason") and shows each reason's total. And the
    headers of the columns of words (labels, "where"), left-justified."""
    def rate_heads(table: str, keys: tuple[tuple[str, str], ...]) -> list[str]:
        return [c.head for _, c in _cols(schema, table, keys)]
    state = column(schema, "nf", "state")
    ring = column(schema, "nf", "rx_ring")
    frm, to = column(schema, "edge", "from"), column(schema, "edge", "to")
    drops = column(schema, "node", "drops", rates=True)
    return {
        "port": ["port", *rate_heads("port", PORT_RATES)],
        "nf": ["NF", state.head, *rate_heads("nf", NF_RATES), ring.head, f"{ring.head} %",
               column(schema, "nf", "cycles_per_pkt").head],
        "edge": [f"edge {frm.head}", to.head, *rate_heads("edge", EDGE_RATES),
                 column(schema, "edge", "pkts").head],
        "drops": [f"{drops.head.removesuffix('/s')} {by_word(drops.field)}", "per s",
                  "total", "where"],
    }, {state.head, to.head, "where"}


def frame(r: dict[str, Any], title: str = "", schema: Schema | None = None) -> Group:
    """The rich tables of one ``rates`` result."""
    heads, left = _heads(schema or builtin())
    pt = _table(heads["port"], left)
    for p in r["ports"]:
        pt.add_row(str(p["name"]), *(si(p[k]) for k, _ in PORT_RATES))
    nt = _table(heads["nf"], left)
    for n in r["nfs"]:
        pct = 100.0 * n["ring"] / n["ring_size"] if n["ring_size"] else 0.0
        cpp = n["cycles_per_pkt"]
        nt.add_row(f"{n['service']}#{n['instance']}", str(n["state"]),
                   *(si(n[k]) for k, _ in NF_RATES), f"{n['ring']}/{n['ring_size']}",
                   f"{pct:.0f}", f"{cpp:.0f}" if isinstance(cpp, int | float) else "-",
                   style="red" if pct > 50 else None)
    et = _table(heads["edge"], left)
    for e in r["edges"]:
        et.add_row(str(e["from"]), str(e["to"]), *(si(e[k]) for k, _ in EDGE_RATES),
                   si(e["pkts"]))
    dt_ = _table(heads["drops"], left)
    for d in r["drops"]:
        dt_.add_row(d["reason"], si(d["pps"]), si(d["total"]), ", ".join(d["where"]))
    parts: list[Any] = []
    if title:
        parts.append(Text(title, style="bold"))
    parts += [pt, nt]
    parts.append(et if r["has_edges"] else
                 Text("(this sluiced reports no per-edge counters: stats has no 'edges')",
                      style="dim"))
    parts.append(dt_ if r["drops"] else Text("no packet dropped", style="dim"))
    return Group(*parts)


def samples(client: Client, interval: float, count: int | None) -> Iterator[dict[str, Any]]:
    """``rates`` every ``interval`` s, ``count`` times (None: for ever). The
    first comes after one interval, so that it has rates."""
    prev = client.call("stats")
    t_prev = time.monotonic()
    n = 0
    while count is None or n < count:
        time.sleep(max(0.0, interval - (time.monotonic() - t_prev)))
        cur = client.call("stats")
        t = time.monotonic()
        r = rates(prev, cur, t - t_prev)
        r["time"] = time.time()
        yield r
        prev, t_prev = cur, t
        n += 1


def run_top(client: Client, interval: float = 1.0, iterations: int | None = None,
            as_json: bool = False, console: Console | None = None) -> int:
    """What `sluice top` does: a live view on a terminal, else (or with
    ``iterations`` or ``as_json``) one frame after another. Returns 0, or 1
    when the node stops answering after a first frame (said on stderr)."""
    con = console or Console()
    node = client.node

    def title(r: dict[str, Any]) -> str:
        when = datetime.fromtimestamp(r["time"]).strftime("%H:%M:%S")
        return (f"sluice top: node {node} ({client.socket_path}) at {when}, "
                f"rates over {r['dt']:.2f} s" + ("" if iterations else "; Ctrl-C stops"))

    shown = 0
    stderr = Console(stderr=True)

    def show(r: dict[str, Any]) -> None:
        nonlocal shown
        f = frame(r, title(r))
        # into a pipe or file: lines as wide as the frame (not cut at 80);
        # print(width=) cannot go past the console's width, so widen that
        if not con.is_terminal:
            wide = Measurement.get(con, con.options.update(width=10_000), f).maximum
            con.width = max(con.width, wide)
        con.print(f)
        shown += 1

    try:
        with client:
            node = client.call("status").get("node", node)
            if as_json:
                for r in samples(client, interval, iterations):
                    con.print_json(json.dumps(r)) if con.is_terminal else \
                        con.out(json.dumps(r), highlight=False)
                    shown += 1
            elif con.is_terminal and iterations is None:
                with Live(Text("waiting for the first rates..."), console=con,
                          auto_refresh=False, screen=False) as live:
                    for r in samples(client, interval, None):
                        live.update(frame(r, title(r)), refresh=True)
                        shown += 1
            else:
                for r in samples(client, interval, iterations):
                    show(r)
    except KeyboardInterrupt:
        pass
    except SluiceError as e:
        if not shown:
            raise  # never reached: the command's own error line
        when = datetime.now().strftime("%H:%M:%S")
        stderr.print(f"sluice top: node {node} stopped answering at {when} ({e}); the "
                     f"last frame above is its last read; `sluice status --node {node}` "
                     "says whether it runs again", highlight=False, markup=False,
                     soft_wrap=True)
        return 1
    return 0
