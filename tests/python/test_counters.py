"""sluice.core.counters: the model of `stats {"schema": true}` and its helpers, on the schema
of a real sluiced (tests/python/data/stats_schema.json; capture_stats_schema.py next to
it made it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sluice.core.counters import (
    Field,
    Schema,
    SchemaError,
    builtin,
    by_word,
    column,
    columns,
    counter_rates,
    rate,
    total,
)

DATA = Path(__file__).resolve().parent / "data"
RAW = json.loads((DATA / "stats_schema.json").read_text())

STATS: dict[str, Any] = {
    "tsc_hz": 2400000000,
    "ports": [{"id": 0, "name": "in", "rx_pkts": 1000, "rx_bytes": 64000, "tx_pkts": 0,
               "tx_bytes": 0, "rx_stalls": 2, "drops": {"nf_verdict": 0, "no_instance": 5}}],
    "nfs": [], "services": [], "drops_total": 5, "drops": {"no_instance": 5},
    "flows": {"lookup": "cached", "live": 6},
}


@pytest.fixture
def schema() -> Schema:
    return Schema.parse(RAW)


def test_tables_and_root(schema: Schema) -> None:
    assert schema.root == "node"
    assert set(schema.tables) == {"node", "port", "nf", "service", "flows", "edge"}
    assert [f.name for f in schema.fields("node")] == [
        "tsc_hz", "ports", "nfs", "services", "drops_total", "drops", "flows", "edges"]
    assert {f.name: f.table for f in schema.fields("node") if f.table} == {
        "ports": "port", "nfs": "nf", "services": "service", "flows": "flows",
        "edges": "edge"}


def test_fields_keep_reply_order_and_kinds(schema: Schema) -> None:
    assert [f.name for f in schema.labels("port")] == ["id", "name"]
    assert [f.name for f in schema.counters("port")] == [
        "rx_pkts", "rx_bytes", "tx_pkts", "tx_bytes", "rx_stalls", "drops"]
    assert [f.name for f in schema.gauges("nf")] == ["rx_ring", "cycles_per_pkt"]
    assert [f.name for f in schema.counters("edge")] == ["pkts", "bytes"]
    rx = schema.field("port", "rx_pkts")
    assert (rx.kind, rx.type, rx.unit, rx.by_key) == ("counter", "integer", "packets", False)
    drops = schema.field("nf", "drops")
    assert drops.by_key and drops.unit == "packets"
    assert "nf_verdict" in drops.keys and "hop_limit" in drops.keys
    assert schema.field("nf", "rx_ring").keys == ("count", "size")
    assert schema.field("flows", "lookup").values == ("off", "cached", "naive")
    assert schema.field("nf", "cycles").help == "TSC cycles spent in the NF's process"


def test_rows(schema: Schema) -> None:
    assert schema.rows(STATS, "node") == [STATS]
    assert [r["name"] for r in schema.rows(STATS, "port")] == ["in"]
    assert schema.rows(STATS, "flows") == [{"lookup": "cached", "live": 6}]
    assert schema.rows(STATS, "nf") == []
    assert schema.rows(STATS, "edge") == []  # an older sluiced without edges
    assert schema.holder("service").name == "services"


def test_unknown_names(schema: Schema) -> None:
    with pytest.raises(SchemaError, match="no table 'nope'"):
        schema.fields("nope")
    with pytest.raises(SchemaError, match="table 'port' has no field 'nope'"):
        schema.field("port", "nope")
    with pytest.raises(SchemaError, match="root table"):
        schema.holder("node")


@pytest.mark.parametrize("raw, message", [
    ([], "a stats schema is"),
    ({"root": "node", "tables": {"node": {}}}, "table 'node' is a list of fields"),
    ({"root": "x", "tables": {"node": []}}, "no root table 'x'"),
    ({"root": "node", "tables": {"node": [{"name": "a", "kind": "odd", "unit": "",
                                           "help": ""}]}}, "unknown kind 'odd'"),
    ({"root": "node", "tables": {"node": [{"name": "a", "kind": "list", "unit": "",
                                           "help": ""}]}}, "a list names its table"),
    ({"root": "node", "tables": {"node": [{"name": "a", "kind": "list", "unit": "",
                                           "help": "", "table": "t"}]}}, "no table 't'"),
    ({"root": "node", "tables": {"node": [{"name": "a", "kind": "gauge"}]}},
     "has no string 'unit'"),
    ({"root": "node", "tables": {"node": ["a"]}}, "a field is an object"),
])
def test_malformed(raw: Any, message: str) -> None:
    with pytest.raises(SchemaError, match=message):
        Schema.parse(raw)


def test_rate_and_total() -> None:
    assert rate(300, 100, 2.0) == 100.0
    assert rate(300, None, 2.0) is None
    assert rate(100, 300, 2.0) is None  # went back: sluiced restarted
    assert rate(300, 100, 0) is None
    assert rate("x", 100, 1.0) is None
    assert total({"a": 2, "b": 3}) == 5
    assert total(7) == 7 and total(None) == 0


def test_counter_rates(schema: Schema) -> None:
    before = STATS["ports"][0]
    now = {**before, "rx_pkts": 3000, "rx_bytes": 192000, "drops": {"no_instance": 25}}
    assert counter_rates(schema, "port", now, before, 2.0) == {
        "rx_pkts": 1000.0, "rx_bytes": 64000.0, "tx_pkts": 0.0, "tx_bytes": 0.0,
        "rx_stalls": 0.0, "drops": 10.0}
    assert set(counter_rates(schema, "port", now, None, 2.0).values()) == {None}
    # a field the reply lacks (an older sluiced) has no rate
    assert counter_rates(schema, "port", {"rx_pkts": 5}, {"rx_pkts": 1}, 1.0)["tx_pkts"] is None


def test_field_is_frozen() -> None:
    f = Field(name="a", kind="gauge", unit="", help="")
    with pytest.raises(AttributeError):
        f.name = "b"  # type: ignore[misc]


def test_unknown(schema: Schema) -> None:
    assert schema.unknown(STATS) == []
    newer = {**STATS, "uptime_s": 3,
             "ports": [{**STATS["ports"][0], "rx_wakeups": 1}], "flows": {"stale": 0}}
    assert schema.unknown(newer) == ["flows.stale", "node.uptime_s", "port.rx_wakeups"]


def test_builtin_is_the_captured_schema() -> None:
    """The package's schema is the one captured from sluiced (capture_stats_schema.py
    writes both)."""
    assert builtin() == Schema.parse(RAW)


def test_headings_from_name_unit_and_kind(schema: Schema) -> None:
    """A field's header follows from the schema: a counter per second in a view of
    rates, the unit spelled with units (bytes as bits), a noun as itself."""
    def heads(table: str, **kw: bool) -> list[str]:
        return [c.head for c in columns(schema, table, [f.name for f in schema.fields(table)
                                                        if f.kind != "label"], **kw)]
    assert heads("port") == ["in", "in", "out", "out", "stalls", "dropped"]
    assert heads("port", rates=True) == ["in/s", "in/s", "out/s", "out/s", "stalls/s",
                                         "drop/s"]
    assert heads("port", rates=True, units=True) == [
        "in pkt/s", "in bit/s", "out pkt/s", "out bit/s", "stalls/s", "drop/s"]
    assert heads("edge") == ["packets", "bytes"]
    assert heads("edge", rates=True) == ["pkts/s", "bytes/s"]
    assert heads("edge", rates=True, units=True) == ["pkt/s", "bit/s"]
    # gauges are values in any view
    assert [column(schema, "nf", n, rates=True).head for n in
            ("state", "rx_ring", "cycles_per_pkt")] == ["state", "ring", "cyc/pkt"]
    assert column(schema, "flows", "table_full", rates=True).head == "table full/s"
    assert by_word(schema.field("node", "drops")) == "reason"


def test_a_column_takes_text_unit_and_kind_from_the_schema(schema: Schema) -> None:
    rx = column(schema, "port", "rx_bytes", rates=True, units=True)
    assert (rx.rate, rx.scale, rx.help) == (True, 8, "bytes received from the port")
    assert rx.per_s({"rx_bytes": 300}, {"rx_bytes": 100}, 2.0) == 800.0
    assert rx.per_s({"rx_bytes": 300}, None, 2.0) is None
    drops = column(schema, "port", "drops", rates=True)
    assert drops.per_s({"drops": {"a": 5, "b": 5}}, {"drops": {"a": 2}}, 1.0) == 8.0
    assert drops.per_s({"drops": {"a": 5}}, {}, 1.0) == 5.0
    ring = column(schema, "nf", "rx_ring", rates=True)
    assert (ring.rate, ring.scale) == (False, 1)
    # a counter added to sluiced is headed with no change here
    raw = json.loads(json.dumps(RAW))
    raw["tables"]["edge"].append({"name": "tx_bytes", "kind": "counter", "type": "integer",
                                  "unit": "bytes", "help": "bytes sent"})
    raw["tables"]["nf"].append({"name": "wakeups", "kind": "counter", "type": "integer",
                                "unit": "", "help": "futex wake-ups"})
    newer = Schema.parse(raw)
    assert column(newer, "edge", "tx_bytes", rates=True, units=True).head == "out bit/s"
    assert column(newer, "nf", "wakeups", rates=True).head == "wakeups/s"
    assert column(newer, "nf", "wakeups").head == "wakeups"
    with pytest.raises(SchemaError, match="table 'port' has no field 'rx_pktz'"):
        columns(schema, "port", ["rx_pkts", "rx_pktz"])
