"""The live table of `sluice up` and its summary at the stop, from
sluiced's ``stats`` (runtime layer: rendering only, with rich; the
numbers come from the caller). The table's columns are fields of the stats
schema (PORT_FIELDS, NF_FIELDS): their headers, rates and formats follow
from each field's name, unit and kind (sluice.core.counters)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..core.counters import Column, Field, Schema, builtin, by_word, column, total

# -- the live table -------------------------------------------------------------------

# What the live table shows: schema fields of a port's and of an NF's row, after the
# row's name; then the by-key counter BY_KEY listed ("drops by reason"). The choice
# is the table's; headers, per second or counts, and how a value is written come
# from the schema (sluice.core.counters.column; a counter per second once there is a
# previous read, a gauge as it is, a gauge object as its keys' values "3/4096").
PORT_FIELDS = ("rx_pkts", "tx_pkts", "drops", "rx_stalls")
NF_FIELDS = ("rx_pkts", "tx_pkts", "drops", "rx_ring", "cycles_per_pkt")
BY_KEY = "drops"
# The fields whose columns are left out first when the terminal is too narrow, in
# this order, each with both its headers (per second and count); BY_KEY stands for
# its listing ("drops by reason"), (BY_KEY, True) for its count or rate.
_DROP_FIELDS: tuple[tuple[str, str, bool], ...] = (
    ("nf", "cycles_per_pkt", True), ("nf", "rx_ring", True), ("port", "rx_stalls", True),
    ("port", BY_KEY, False), ("port", "drops", True), ("port", "tx_pkts", True),
    ("port", "rx_pkts", True))


def _listing(f: Field) -> str:
    """The header of a by-key counter listed key=count: "drops by reason"."""
    return f"{f.name} by {by_word(f)}"


def drop_order(schema: Schema) -> list[str]:
    """The headers of _DROP_FIELDS, in order."""
    out: list[str] = []
    for table, name, as_column in _DROP_FIELDS:
        heads = ([column(schema, table, name, rates=r).head for r in (True, False)]
                 if as_column else [_listing(schema.field(table, name))])
        out += [h for h in dict.fromkeys(heads) if h not in out]
    return out


def _value(c: Column, row: dict[str, Any]) -> Any:
    return total(row.get(c.field.name)) if c.field.by_key else row.get(c.field.name, 0)


def _rate(c: Column, now: dict[str, Any], prev: dict[str, Any] | None, dt: float) -> str:
    """A counter per second between two reads; one that went back (a restarted
    sluiced) is 0, not negative."""
    if prev is None or dt <= 0:
        return "-"
    return _si(max(0, _value(c, now) - _value(c, prev)) / dt)


def _cell(c: Column, now: dict[str, Any], prev: dict[str, Any] | None, dt: float) -> str:
    """A column's cell: a counter per second (``c.rate``) or its count, a gauge
    object as its keys' values ("3/4096"), a gauge number whole ("-" if none)."""
    if c.rate:
        return _rate(c, now, prev, dt)
    if c.field.kind == "counter":
        return _si(_value(c, now))
    v = now.get(c.field.name)
    if c.field.keys:
        return "/".join(str((v or {}).get(k, 0)) for k in c.field.keys)
    return f"{v:.0f}" if isinstance(v, int | float) else "-"


def _si(v: float) -> str:
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if v >= div:
            return f"{v / div:.2f}{unit}"
    return f"{v:.0f}"


def _drops(d: dict[str, int] | None) -> str:
    if not d:
        return ""
    return " ".join(f"{k}={_si(v)}" for k, v in sorted(d.items()) if v)


def _by_service(stats: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per service that has instances: sluiced's own per-service
    counters (``services``: packets and drops, those of departed instances
    included, so rates do not jump when one leaves), with what only the
    instances say added up: how many (and how many are not running), their
    rings' counts and sizes, and the mean cycles per packet of those that
    report one. Named "SERVICE xN"."""
    inst: dict[str, dict[str, Any]] = {}
    for n in stats.get("nfs", []):
        a = inst.setdefault(str(n.get("service")), {"n": 0, "down": 0, "count": 0,
                                                    "size": 0, "cpp": []})
        a["n"] += 1
        a["down"] += n.get("state", "running") != "running"
        ring = n.get("rx_ring") or {}
        a["count"] += int(ring.get("count", 0))
        a["size"] += int(ring.get("size", 0))
        cpp = n.get("cycles_per_pkt")
        if isinstance(cpp, int | float) and cpp > 0:
            a["cpp"].append(float(cpp))
    rows = []
    for s in stats.get("services", []):
        agg = inst.get(str(s.get("name")))
        if agg is None:
            continue
        rows.append({**s, "service": s.get("name"),
                     "rx_ring": {"count": agg["count"], "size": agg["size"]},
                     "cycles_per_pkt": sum(agg["cpp"]) / len(agg["cpp"]) if agg["cpp"] else None,
                     "label": f"{s.get('name')} x{agg['n']}"
                              + (f" ({agg['down']} not running)" if agg["down"] else "")})
    return rows


# The live table's columns left out first when the terminal is too narrow,
# in this order (a column neither table has is skipped): ["cyc/pkt", "ring",
# "stalls/s", "stalls", "drops by reason", "drop/s", "dropped", "out/s", ...].
STATS_DROP_ORDER = drop_order(builtin())


def words_width(text: str) -> int:
    """The width of the longest word of ``text``: the least a column that
    breaks only between words can be."""
    return max((len(w) for w in text.split()), default=0)


@dataclass
class FitTable:
    """A table for FitTables: ``columns`` are (header, justify, wrap):
    wrap "" never breaks a cell, "words" breaks it only between words,
    "lines" puts each word on a line of its own when the column has no
    room for the whole cell. A word is never cut."""
    columns: list[tuple[str, str, str]]
    rows: list[list[str]]

    def _cells(self, i: int) -> list[str]:
        return [self.columns[i][0], *(r[i] for r in self.rows)]

    def full(self, i: int) -> int:
        return max(len(x) for x in self._cells(i))

    def least(self, i: int) -> int:
        return (max(words_width(x) for x in self._cells(i)) if self.columns[i][2]
                else self.full(i))

    def keep(self, dropped: list[str]) -> list[int]:
        return [i for i, c in enumerate(self.columns) if c[0] not in dropped]

    @staticmethod
    def frame(n: int) -> int:
        """Columns of a SIMPLE_HEAD table without padding at its edges that
        are not cells: an edge each side, a separator and a space each
        side of it between two columns."""
        return 3 * n - 1 if n else 0

    def width(self, keep: list[int], least: bool = True) -> int:
        w = self.least if least else self.full
        return self.frame(len(keep)) + sum(w(i) for i in keep)

    def _widths(self, keep: list[int], room: int) -> tuple[dict[int, int], list[int]]:
        """The widths of the columns ``keep`` in ``room`` columns: what is
        left after their least widths goes to the columns that may wrap,
        the first first; and the "lines" columns that have not room for
        their cells on one line."""
        widths = {i: self.full(i) for i in keep}
        spare = room - self.width(keep)
        for i in keep:
            if self.columns[i][2]:
                widths[i] = self.least(i) + min(max(spare, 0), self.full(i) - self.least(i))
                spare -= widths[i] - self.least(i)
        lines = [i for i in keep if self.columns[i][2] == "lines" and widths[i] < self.full(i)]
        for i in lines:
            widths[i] = self.least(i)
        return widths, lines

    def row_lines(self, console: Console, keep: list[int], room: int) -> int:
        """How many lines the rows take in ``room`` columns."""
        widths, lines = self._widths(keep, room)

        def height(r: list[str], i: int) -> int:
            if i in lines:
                return max(1, len(r[i].split()))
            if self.columns[i][2]:
                return max(1, len(Text(r[i]).wrap(console, widths[i])))
            return 1
        return sum(max((height(r, i) for i in keep), default=1) for r in self.rows)

    def render(self, keep: list[int], room: int) -> tuple[Table, int]:
        """The table of the columns ``keep`` in ``room`` columns (_widths),
        and its width."""
        widths, lines = self._widths(keep, room)
        t = Table(box=box.SIMPLE_HEAD, expand=False, pad_edge=False)
        for i in keep:
            head, justify, wrap = self.columns[i]
            t.add_column(head, justify=justify, width=widths[i],  # type: ignore[arg-type]
                         no_wrap=not wrap, overflow="fold")
        for r in self.rows:
            t.add_row(*("\n".join(r[i].split()) if i in lines else r[i] for i in keep))
        return t, self.frame(len(keep)) + sum(widths.values())


class FitTables:
    """Tables whose numbers and ids are never cut (what cli.print_table does
    for one table, as a renderable, so that rich.live can redraw it at the
    console's width each time). In a console too narrow for them, the
    columns of ``drop_order`` are left out, in that order and of every table
    alike, until each fits; a line under them says which, and ``note`` where
    to see them. Only what is left then and still does not fit (a name
    longer than the console is wide) is folded: rich crops any longer line
    at the console's width. A console into a pipe or a file has a width
    too (80 unless set): up_console gives it room for every column.
    ``head`` and ``tail`` are printed before and after, as they are."""

    def __init__(self, tables: list[FitTable], drop_order: list[str], note: str = "",
                 head: list[Any] | None = None, tail: list[Any] | None = None) -> None:
        self.tables, self.drop_order, self.note = tables, drop_order, note
        self.head, self.tail = head or [], tail or []
        # printed instead when the last table's rows take more than
        # max_lines lines at the console's width (rows wrap)
        self.fallback: FitTables | None = None
        self.max_lines: int | None = None

    def layout(self, width: int) -> list[str]:
        """The columns left out at ``width``."""
        names = {c[0] for t in self.tables for c in t.columns}
        order = [n for n in self.drop_order if n in names]
        dropped: list[str] = []
        for name in [*order, None]:
            if all(t.width(t.keep(dropped)) <= width for t in self.tables):
                break
            if name is not None:
                dropped.append(name)
        return dropped

    def __rich_console__(self, console: Console, options: Any) -> Any:
        width = options.max_width
        dropped = self.layout(width)
        last = self.tables[-1]
        if (self.fallback is not None and self.max_lines is not None
                and last.row_lines(console, last.keep(dropped), width) > self.max_lines):
            yield from self.fallback.__rich_console__(console, options)
            return
        yield from self.head
        for t in self.tables:
            table, need = t.render(t.keep(dropped), width)
            yield from console.render(table, options.update_width(min(need, width)))
        if dropped:  # wrapped between words even on a soft-wrap console (up_console's)
            yield from console.render(
                Text(f"(not shown in {width} columns: {', '.join(dropped)}"
                     f"{'; ' + self.note if self.note else ''})"),
                options.update(no_wrap=False, overflow="fold"))
        yield from self.tail


def stats_tables(stats: dict[str, Any], prev: dict[str, Any] | None = None,
                 dt: float = 0.0, title: str = "", max_nf_rows: int | None = None) -> FitTables:
    """Ports and NFs as two tables: packets/s (with ``prev`` and ``dt``)
    or cumulative counts, drops by reason, NF ring occupancy, cycles/pkt.
    With more NF instances than ``max_nf_rows`` (the lines the terminal
    has room for), or rows that take more lines than that at the console's
    width (they wrap), one row per service instead of one per instance,
    said in a line under the table. No number or name is ever cut: names and drops by
    reason wrap only between words (reason=count is one), and in a
    terminal too narrow for every column, those of STATS_DROP_ORDER are
    left out, said in a line under the tables (see FitTables)."""
    rates = prev is not None
    pprev = {p.get("name"): p for p in (prev or {}).get("ports", [])}
    nfs = stats.get("nfs", [])
    grouped = max_nf_rows is not None and len(nfs) > max_nf_rows
    if grouped:
        nfs = _by_service(stats)
        nprev = {n["service"]: n for n in _by_service(prev or {})}
    else:
        nprev = {n.get("instance"): n for n in (prev or {}).get("nfs", [])}

    schema = builtin()
    pcols = [column(schema, "port", n, rates=rates) for n in PORT_FIELDS]
    ncols = [column(schema, "nf", n, rates=rates) for n in NF_FIELDS]

    def heads(first: str, cols: list[Column]) -> list[tuple[str, str, str]]:
        return [(first, "left", "words"), *((c.head, "right", "") for c in cols),
                (_listing(schema.field(cols[0].table, BY_KEY)), "left", "lines")]

    def cells(cols: list[Column], now: dict[str, Any], before: dict[str, Any] | None
              ) -> list[str]:
        return [*(_cell(c, now, before, dt) for c in cols), _drops(now.get(BY_KEY))]

    prows = [[str(p.get("name")), *cells(pcols, p, pprev.get(p.get("name")))]
             for p in stats.get("ports", [])]
    pt = FitTable(heads("port", pcols), prows)

    nrows = []
    for n in nfs:
        if grouped:
            name, before = n["label"], nprev.get(n["service"])
        else:
            name, before = f"{n.get('service')}#{n.get('instance')}", nprev.get(
                n.get("instance"))
            if n.get("state", "running") != "running":
                name += f" ({n.get('state')})"
        nrows.append([name, *cells(ncols, n, before)])
    nt = FitTable(heads("NF", ncols), nrows)
    tail = ([Text(f"{len(stats.get('nfs', []))} NF instances of {len(nfs)} services: one "
                  f"row per service (sluice stats --node NAME lists every instance)")]
            if grouped else [])
    fit = FitTables([pt, nt], STATS_DROP_ORDER, "`sluice stats --json` has them all",
                    head=[Text(title)] if title else [], tail=tail)
    if not grouped and max_nf_rows is not None and nfs and stats.get("services"):
        fit.fallback = stats_tables(stats, prev, dt, title, max_nf_rows=0)
        fit.max_lines = max_nf_rows
    return fit


@dataclass
class Totals:
    rx: int = 0
    tx: int = 0
    drops: dict[str, int] = field(default_factory=dict)

    @property
    def dropped(self) -> int:
        return sum(self.drops.values())

    @property
    def in_flight(self) -> int:
        return self.rx - self.tx - self.dropped


def totals(stats: dict[str, Any]) -> Totals:
    """Packets in and out of the ports, and drops by reason: those counted at
    ports plus those of services (which keep the counts of departed NFs)."""
    t = Totals()
    for p in stats.get("ports", []):
        t.rx += int(p.get("rx_pkts", 0))
        t.tx += int(p.get("tx_pkts", 0))
        for k, v in (p.get("drops") or {}).items():
            t.drops[k] = t.drops.get(k, 0) + int(v)
    for s in stats.get("services", []):
        for k, v in (s.get("drops") or {}).items():
            t.drops[k] = t.drops.get(k, 0) + int(v)
    return t


def summary_text(stats: dict[str, Any]) -> str:
    t = totals(stats)
    lines = [f"packets in: {t.rx:,}   out: {t.tx:,}   dropped: {t.dropped:,}"
             + (f"   in flight: {t.in_flight:,}" if t.in_flight else "")]
    for k, v in sorted(t.drops.items()):
        if v:
            lines.append(f"  dropped {k}: {v:,}")
    return "\n".join(lines)


def up_console() -> Console:
    """The console of ``sluice up``. Into a file or a pipe (a log kept by a
    service manager, ``| tee``) its lines are not wrapped at 80 columns, so
    that one event stays one line for grep, and its tables have room for
    their cells ($COLUMNS, if set, still rules); in a terminal they fit it."""
    if sys.stdout.isatty():
        return Console()
    return Console(soft_wrap=True, width=None if os.environ.get("COLUMNS") else 240)
