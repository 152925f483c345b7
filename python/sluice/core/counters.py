"""The ``stats`` schema: what each field of sluiced's ``stats`` reply is.

sluiced answers ``stats {"schema": true}`` from the same descriptor tables
that build ``stats`` (``src/mgr/stats/``; docs/control-socket.md, "Schema"),
so a consumer (Prometheus families, ``sluice top``, the live table, the
dashboard) learns the counters from sluiced instead of listing them: adding a
counter touches its struct and its descriptor only.

``Schema.parse`` reads the reply into frozen dataclasses; ``counters``,
``gauges``, ``labels``, ``rows`` and ``unknown`` pick fields and rows out of a ``stats``
result; ``rate`` and ``counter_rates`` give per-second rates between two
reads; ``column`` says how a view shows a field it lists (header from name, unit
and kind; per second or as it is; bytes as bits). Pure: no sockets (core layer).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

KINDS = ("label", "counter", "gauge", "list", "object")


class SchemaError(ValueError):
    """A ``stats`` schema that does not have the shape docs/control-socket.md gives."""


@dataclass(frozen=True)
class Field:
    """One field of a table, as the schema describes it."""

    name: str
    kind: str  # one of KINDS
    unit: str  # packets, bytes, cycles, flows, ms, hz or ""
    help: str
    type: str | None = None  # integer, string, number, object, array; None for list/object
    table: str | None = None  # the rows' table, for kind list and object
    keys: tuple[str, ...] = ()  # an object-typed field's keys (drop reasons, count/size)
    values: tuple[str, ...] = ()  # a string label's fixed values

    @property
    def by_key(self) -> bool:
        """A counter or gauge that is an object of numbers by key (e.g. drops by reason)."""
        return self.kind in ("counter", "gauge") and self.type == "object"

    @classmethod
    def parse(cls, d: Any, where: str) -> Field:
        if not isinstance(d, dict):
            raise SchemaError(f"{where}: a field is an object, not {type(d).__name__}")
        for k in ("name", "kind", "unit", "help"):
            if not isinstance(d.get(k), str):
                raise SchemaError(f"{where}: field {d.get('name')!r} has no string {k!r}")
        if d["kind"] not in KINDS:
            raise SchemaError(f"{where}.{d['name']}: unknown kind {d['kind']!r}")
        if d["kind"] in ("list", "object") and not isinstance(d.get("table"), str):
            raise SchemaError(f"{where}.{d['name']}: a {d['kind']} names its table")
        return cls(name=d["name"], kind=d["kind"], unit=d["unit"], help=d["help"],
                   type=d.get("type"), table=d.get("table"),
                   keys=tuple(str(k) for k in d.get("keys") or ()),
                   values=tuple(str(v) for v in d.get("values") or ()))


@dataclass(frozen=True)
class Schema:
    """``stats {"schema": true}``: the reply's root table and every table's fields,
    each table's in reply order."""

    root: str
    tables: Mapping[str, tuple[Field, ...]]

    @classmethod
    def parse(cls, d: Any) -> Schema:
        if not isinstance(d, dict) or not isinstance(d.get("root"), str) \
                or not isinstance(d.get("tables"), dict):
            raise SchemaError("a stats schema is {\"root\": TABLE, \"tables\": {...}}")
        tables: dict[str, tuple[Field, ...]] = {}
        for name, fields in d["tables"].items():
            if not isinstance(fields, list):
                raise SchemaError(f"table {name!r} is a list of fields")
            tables[str(name)] = tuple(Field.parse(f, str(name)) for f in fields)
        out = cls(root=d["root"], tables=tables)
        for t, fs in tables.items():
            for f in fs:
                if f.table is not None and f.table not in tables:
                    raise SchemaError(f"{t}.{f.name}: no table {f.table!r}")
        if out.root not in tables:
            raise SchemaError(f"no root table {out.root!r}")
        return out

    def fields(self, table: str) -> tuple[Field, ...]:
        try:
            return self.tables[table]
        except KeyError:
            raise SchemaError(f"no table {table!r}; the schema has "
                              f"{', '.join(self.tables)}") from None

    def field(self, table: str, name: str) -> Field:
        for f in self.fields(table):
            if f.name == name:
                return f
        raise SchemaError(f"table {table!r} has no field {name!r}")

    def of_kind(self, table: str, kind: str) -> list[Field]:
        return [f for f in self.fields(table) if f.kind == kind]

    def counters(self, table: str) -> list[Field]:
        """The fields of ``table`` that only grow, in reply order."""
        return self.of_kind(table, "counter")

    def gauges(self, table: str) -> list[Field]:
        return self.of_kind(table, "gauge")

    def labels(self, table: str) -> list[Field]:
        return self.of_kind(table, "label")

    def holder(self, table: str) -> Field:
        """The root field whose value holds the rows of ``table`` (``ports`` for port)."""
        if table == self.root:
            raise SchemaError(f"{table!r} is the root table")
        for f in self.fields(self.root):
            if f.table == table:
                return f
        raise SchemaError(f"no field of {self.root!r} holds table {table!r}")

    def rows(self, stats: Mapping[str, Any], table: str) -> list[dict[str, Any]]:
        """The rows of ``table`` in a ``stats`` result: the reply itself for the root, the
        list's rows, the object's one row, or none when the reply lacks the field (an
        older sluiced)."""
        if table == self.root:
            return [dict(stats)]
        f = self.holder(table)
        v = stats.get(f.name)
        if v is None:
            return []
        return [dict(r) for r in v] if f.kind == "list" else [dict(v)]

    def unknown(self, stats: Mapping[str, Any]) -> list[str]:
        """The keys of a ``stats`` result this schema does not describe (``table.key``):
        a sluiced newer than the schema, whose own schema is then the one to read."""
        out = []
        for table in self.tables:
            names = {f.name for f in self.fields(table)}
            try:
                rows = self.rows(stats, table)
            except (SchemaError, TypeError, ValueError):
                continue
            for r in rows:
                out += [f"{table}.{k}" for k in r if k not in names]
        return sorted(set(out))


def builtin_json() -> Any:
    """``stats_schema.json`` as JSON (``stats {"schema": true}``'s reply)."""
    return json.loads(resources.files(__package__).joinpath("stats_schema.json").read_text())


@functools.cache
def builtin() -> Schema:
    """The schema of the sluiced this package was made with (``stats_schema.json``, as
    tests/python/data/capture_stats_schema.py writes it): what a consumer uses until it
    has read sluiced's own, and for a ``stats`` result it has no sluiced for."""
    return Schema.parse(builtin_json())


def rate(now: Any, before: Any, dt: float) -> float | None:
    """Per second between two reads of a counter; None without a previous read, or
    when the counter went back (sluiced restarted)."""
    if before is None or dt <= 0 or not isinstance(now, int | float) \
            or not isinstance(before, int | float):
        return None
    d = now - before
    return None if d < 0 else d / dt


def total(v: Any) -> int | float:
    """A counter's value, an object of counts by key summed (e.g. drops by reason)."""
    if isinstance(v, dict):
        return sum(x for x in v.values() if isinstance(x, int | float))
    return v if isinstance(v, int | float) else 0


def counter_rates(schema: Schema, table: str, now: Mapping[str, Any],
                  before: Mapping[str, Any] | None, dt: float) -> dict[str, float | None]:
    """Per second, each counter of a ``table`` row between two reads of it (``before``
    None: every rate None); a by-key counter (drops) as its total."""
    out: dict[str, float | None] = {}
    for f in schema.counters(table):
        b = total(before.get(f.name)) if before is not None and f.name in before else None
        out[f.name] = rate(total(now.get(f.name)), b, dt) if f.name in now else None
    return out


# -- columns: how a view heads and shows a field ---------------------------------------
#
# A view (`sluice top`, the live table of `sluice up`, the dashboard) chooses which
# fields it shows; what their headers say, whether they are per second and in which
# unit follows from the schema by the rules below, so a counter added to sluiced's
# descriptor tables is headed in every view without a change here. The dashboard's
# script applies the same rules (web/static/dashboard.js, "heading");
# tests/python/test_counters.py checks the two agree.

_DIRECTION = {"rx": "in", "tx": "out"}  # a leading rx_/tx_, as a header says it
_SPELLED = {"packets": "pkts", "bytes": "bytes"}  # a unit as field names spell it
_PER_S = {"packets": "pkt/s", "bytes": "bit/s"}  # with units: bytes are shown as bits
_SCALE = {"bytes": 8}
_ABBREV = {"cycles": "cyc", "pkts": "pkt", "per": "/"}
# the English of a noun per second ("drop/s") and as a count ("dropped")
_RATE_WORD = {"drops": "drop"}
_COUNT_WORD = {"drops": "dropped"}


def _split(name: str) -> tuple[str, str]:
    """(the direction word, the rest of the name): rx_pkts ("in", "pkts"),
    cycles_per_pkt ("", "cycles_per_pkt")."""
    first, _, rest = name.partition("_")
    return (_DIRECTION[first], rest) if rest and first in _DIRECTION else ("", name)


def _abbrev(name: str) -> str:
    """cycles_per_pkt: "cyc/pkt"; table_full: "table full"."""
    out = ""
    for p in name.split("_"):
        w = _ABBREV.get(p, p)
        out += w if w == "/" or out.endswith("/") or not out else " " + w
    return out


def by_word(f: Field) -> str:
    """What a by-key field's keys are, from its help ("..., by reason": "reason")."""
    words = f.help.split()
    if len(words) >= 2 and words[-2] == "by":
        return words[-1].strip(".")
    return "key"


def heading(f: Field, *, rate: bool = False, units: bool = False) -> str:
    """The short header of field ``f``: its name as a header says it, per second
    with ``rate``. A field named by its direction and unit (rx_pkts, tx_bytes) is
    headed by the direction ("in/s", or with ``units`` "in pkt/s", "in bit/s"); one
    named by its unit alone (an edge's pkts) by the unit ("pkts/s", "pkt/s"; as a count
    "packets"); any other by its name abbreviated ("drop/s", "dropped", "stalls/s",
    "ring", "cyc/pkt", "state")."""
    direction, rest = _split(f.name)
    if f.unit in _SPELLED and rest == _SPELLED[f.unit]:
        if not rate:
            return direction or f.unit
        if units:
            return f"{direction} {_PER_S[f.unit]}" if direction else _PER_S[f.unit]
        return f"{direction or rest}/s"
    if rate:
        return f"{_RATE_WORD.get(rest, _abbrev(rest))}/s"
    if f.kind == "counter":
        return _COUNT_WORD.get(rest, _abbrev(rest))
    return _abbrev(rest)


@dataclass(frozen=True)
class Column:
    """A field as a view shows it: its header, whether per second (a counter in a view
    of rates; a gauge or label always as it is), and the factor its value is shown
    with (8: bytes as bits)."""

    table: str
    field: Field
    head: str
    rate: bool
    scale: int = 1

    @property
    def help(self) -> str:
        return self.field.help

    def value(self, row: Mapping[str, Any]) -> Any:
        """The field's value in ``row`` (None when the row lacks it), a by-key counter
        as its total (0 when the row lacks it)."""
        v = row.get(self.field.name)
        return total(v) if self.field.by_key else v

    def per_s(self, now: Mapping[str, Any], before: Mapping[str, Any] | None,
              dt: float) -> float | None:
        """Per second (times ``scale``) between two reads of a row (``rate``)."""
        r = rate(self.value(now), None if before is None else self.value(before), dt)
        return None if r is None else r * self.scale


def column(schema: Schema, table: str, name: str, *, rates: bool = False,
           units: bool = False) -> Column:
    """Field ``name`` of ``table`` as a view shows it (``heading``): a counter per
    second in a view of ``rates``. An unknown name is a SchemaError."""
    f = schema.field(table, name)
    rate_ = rates and f.kind == "counter"
    return Column(table=table, field=f, head=heading(f, rate=rate_, units=units),
                  rate=rate_, scale=_SCALE.get(f.unit, 1) if rate_ and units else 1)


def columns(schema: Schema, table: str, names: tuple[str, ...] | list[str], *,
            rates: bool = False, units: bool = False) -> list[Column]:
    """``column`` of each name, in order."""
    return [column(schema, table, n, rates=rates, units=units) for n in names]
