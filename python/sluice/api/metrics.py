"""Prometheus metrics from one ``stats`` call per scrape, named by the stats schema.

The families are not listed here: every counter and gauge field of an exported
table (``sluice.core.counters``; sluiced's ``stats {"schema": true}``) becomes one,
``sluice_<prefix>_<field>`` with ``pkts`` spelled ``packets``, its type from the
field's kind and its HELP from the field's help (capitalised, with a full
stop); a by-reason counter gets a
``reason`` label, a gauge object one family per key. So a counter added to
sluiced's descriptor tables is exported without a change here. What is here is
how /metrics has always named things (docs/api.md, "Metrics"): each table's
prefix and labels, the few names and HELP texts that differ from the rule, the
fields left out (not exported before the schema; exporting them adds families),
and two gauges derived from labels.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from fastapi import HTTPException
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from ..core.counters import Field, Schema, SchemaError, builtin
from .sluiced import Sluiced

METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@dataclass(frozen=True)
class Export:
    """How one schema table's rows become families."""

    table: str
    prefix: str  # sluice_<prefix>_<name>; "" for the node's own fields
    labels: tuple[tuple[str, str], ...]  # (schema label field, Prometheus label), in order
    skip: frozenset[str] = frozenset()  # fields not exported
    names: dict[str, str] = field(default_factory=dict)  # field or field.key -> name
    helps: dict[str, str] = field(default_factory=dict)  # field or field.key -> HELP


EXPORTS = (
    Export("port", "port", (("name", "port"),)),
    Export("nf", "nf", (("service", "service"), ("instance", "instance")),
           skip=frozenset({"sleeps", "stalls", "bursts"}),
           names={"rx_ring.count": "ring_occupancy", "rx_ring.size": "ring_size"},
           # the schema has one help for the ring's two keys
           helps={"rx_ring.count": "Packets waiting in the NF instance's rx ring.",
                  "rx_ring.size": "Capacity of the NF instance's rx ring."}),
    Export("service", "service", (("name", "service"),)),
    # stats.drops counts each drop once (ports, instances, sluiced on their behalf, the TX
    # thread, instances gone), so sum(sluice_node_drops_total) == sluice_drops_total.
    # Its HELP says so (tests/api/test_endpoints.py keeps it exact).
    Export("node", "", (), skip=frozenset({"tsc_hz"}),
           names={"drops_total": "drops", "drops": "node_drops"},
           helps={"drops": "Packets dropped on the node, by reason: every drop once, "
                           "including those of instances that have left."}),
    Export("flows", "flows", (), skip=frozenset({
        "live_v6", "capacity_v6", "lookups", "hits", "non_ip", "timeout_ms", "cycles"})),
)


def metric_name(prefix: str, name: str) -> str:
    """``sluice_<prefix>_<name>``, ``pkt`` spelled ``packet`` (rx_pkts: rx_packets)."""
    name = re.sub(r"(^|_)pkt(s?)(?=_|$)", r"\1packet\2", name)
    return f"sluice_{prefix}_{name}" if prefix else f"sluice_{name}"


def _help(f: Field) -> str:
    h = f.help.strip()
    return h[:1].upper() + h[1:] + ("" if h.endswith(".") else ".")


def _number(v: Any) -> float | int:
    return v if isinstance(v, int | float) and not isinstance(v, bool) else 0


class _Family:
    """One family and where each row's sample comes from."""

    def __init__(self, ex: Export, f: Field, key: str | None):
        path = f.name if key is None else f"{f.name}.{key}"
        name = metric_name(ex.prefix, ex.names.get(path, path.replace(".", "_")))
        labels = [p for _, p in ex.labels] + (["reason"] if f.by_key and f.kind ==
                                               "counter" else [])
        doc = ex.helps.get(path) or _help(f)
        cls = CounterMetricFamily if f.kind == "counter" else GaugeMetricFamily
        self.metric: Metric = cls(name, doc, labels=labels)
        self.field, self.key = f, key

    def add(self, lab: list[str], row: dict[str, Any]) -> None:
        v = row.get(self.field.name)
        if self.key is not None:
            self.metric.add_metric(lab, _number((v or {}).get(self.key)))
        elif self.field.type == "object":  # by reason
            for reason, x in sorted((str(k), int(x)) for k, x in (v or {}).items()):
                self.metric.add_metric(lab + [reason], x)
        else:
            self.metric.add_metric(lab, _number(v))


def _families(ex: Export, schema: Schema) -> list[_Family]:
    out = []
    for f in schema.fields(ex.table):
        if f.kind not in ("counter", "gauge") or f.name in ex.skip:
            continue
        if f.kind == "gauge" and f.type == "object":
            out += [_Family(ex, f, k) for k in f.keys]
        else:
            out.append(_Family(ex, f, None))
    return out


def _derived(ex: Export, rows: list[dict[str, Any]]) -> list[Metric]:
    """The gauges /metrics derives from labels: an NF instance's state, a service's
    instances."""
    lab = [p for _, p in ex.labels]
    if ex.table == "nf":
        up = GaugeMetricFamily("sluice_nf_running",
                               "1 when the NF instance is running, else 0.", labels=lab)
        for r in rows:
            up.add_metric([str(r.get(k)) for k, _ in ex.labels],
                          1 if r.get("state") == "running" else 0)
        return [up]
    if ex.table == "service":
        n = GaugeMetricFamily("sluice_service_instances", "Live instances of the service.",
                              labels=lab)
        for r in rows:
            n.add_metric([str(r.get(k)) for k, _ in ex.labels], len(r.get("instances") or []))
        return [n]
    return []


def stats_metrics(st: dict[str, Any], schema: Schema | None = None) -> list[Metric]:
    """The metric families of one ``stats`` result (docs/api.md lists them), by
    ``schema`` (the package's, ``sluice.core.counters.builtin()``, if None). A table the
    result does not have (no ``flows`` from a sluiced older than the flow table) has no
    families rather than zeros that would look like real counts."""
    schema = schema or builtin()
    out: list[Metric] = []
    for ex in EXPORTS:
        if ex.table not in schema.tables:
            continue
        rows = schema.rows(st, ex.table)
        if not rows and ex.table != schema.root and schema.holder(ex.table).kind == "object":
            continue
        fams = _families(ex, schema)
        for r in rows:
            lab = [str(r.get(k)) for k, _ in ex.labels]
            for fam in fams:
                fam.add(lab, r)
        out += [fam.metric for fam in fams] + _derived(ex, rows)
    return out


class StatsCollector:
    """Prometheus collector: one ``stats`` call per scrape.

    It names the families by the package's schema until a ``stats`` result has a key
    that schema does not describe (a sluiced newer than the package); then it reads
    sluiced's own (``stats {"schema": true}``) once and keeps it for this connection,
    reading again only when another key it does not know appears."""

    def __init__(self, sluiced: Sluiced):
        self.sluiced = sluiced
        self.schema = builtin()
        self._asked: list[str] = []  # the unknown keys the last schema read was for

    def describe(self) -> list[Any]:
        return []

    def collect(self) -> Iterator[Metric]:
        st = self.sluiced.call("stats")
        unknown = self.schema.unknown(st)
        if unknown and unknown != self._asked:
            self._asked = unknown
            # a sluiced without the schema (or refusing the param): the fields the
            # package's schema knows still go out
            with contextlib.suppress(SchemaError, HTTPException):
                self.schema = Schema.parse(self.sluiced.call("stats", schema=True))
        yield from stats_metrics(st, self.schema)
