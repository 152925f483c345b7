"""/metrics named by the stats schema: a counter sluiced's schema describes is exported
without a change to sluice.api.metrics, and the collector reads sluiced's schema (once)
only when a stats result has a key the package's schema does not know."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from apifake import STATS, FakeSluiced
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from sluice.api.metrics import StatsCollector, metric_name, stats_metrics
from sluice.api.sluiced import Sluiced
from sluice.core.counters import Schema, builtin

RAW = json.loads((Path(__file__).resolve().parents[1] / "python" / "data" /
                  "stats_schema.json").read_text())


def _newer() -> tuple[dict[str, Any], dict[str, Any]]:
    """A schema and a stats result with a counter more per NF instance and in the flow
    table, and a gauge more per port: what adding them to src/mgr/stats/ gives."""
    raw = copy.deepcopy(RAW)
    raw["tables"]["nf"].append({"name": "wakeups", "kind": "counter", "type": "integer",
                                "unit": "", "help": "futex wake-ups the NF sent"})
    raw["tables"]["flows"].append({"name": "stale_pkts", "kind": "counter",
                                   "type": "integer", "unit": "packets",
                                   "help": "packets of flows found stale"})
    raw["tables"]["port"].append({"name": "link_up", "kind": "gauge", "type": "integer",
                                  "unit": "", "help": "1 while the link is up."})
    st = copy.deepcopy(STATS)
    for i, n in enumerate(st["nfs"]):
        n["wakeups"] = 10 + i
    st["flows"]["stale_pkts"] = 3
    for p in st["ports"]:
        p["link_up"] = 1
    return raw, st


def _families(metrics: list[Any]) -> dict[str, Any]:
    class One:
        def collect(self) -> Any:
            return metrics
    reg = CollectorRegistry()
    reg.register(One())
    return {f.name: f for f in text_string_to_metric_families(generate_latest(reg).decode())}


def test_metric_names() -> None:
    assert metric_name("port", "rx_pkts") == "sluice_port_rx_packets"
    assert metric_name("nf", "cycles_per_pkt") == "sluice_nf_cycles_per_packet"
    assert metric_name("edge", "pkts") == "sluice_edge_packets"
    assert metric_name("", "drops_total") == "sluice_drops_total"
    assert metric_name("nf", "pkts_seen_pktsx") == "sluice_nf_packets_seen_pktsx"


def test_a_new_counter_is_exported_from_its_descriptor() -> None:
    raw, st = _newer()
    before = _families(stats_metrics(st))  # the package's schema does not know them
    fams = _families(stats_metrics(st, Schema.parse(raw)))
    assert set(fams) - set(before) == {"sluice_nf_wakeups", "sluice_flows_stale_packets",
                                       "sluice_port_link_up"}
    w = fams["sluice_nf_wakeups"]
    assert (w.type, w.documentation) == ("counter", "Futex wake-ups the NF sent.")
    assert sorted((s.labels["service"], s.labels["instance"], s.value) for s in w.samples) \
        == [("fw", "0", 10.0), ("mon", "1", 11.0)]
    assert [s.value for s in fams["sluice_flows_stale_packets"].samples] == [3.0]
    up = fams["sluice_port_link_up"]
    assert (up.type, up.documentation) == ("gauge", "1 while the link is up.")
    assert {s.labels["port"]: s.value for s in up.samples} == {"in": 1.0, "out": 1.0}
    # the families there were keep their samples
    for name, f in before.items():
        assert fams[name].samples == f.samples, name


@pytest.fixture
def newer_sluiced(tmp_path: Path) -> Iterator[tuple[FakeSluiced, StatsCollector]]:
    raw, st = _newer()

    def handler(req: Any) -> Any:
        schema = (req.get("params") or {}).get("schema")
        return {"jsonrpc": "2.0", "id": req["id"], "result": raw if schema else st}
    srv = FakeSluiced(tmp_path / "s.sock", handler=handler)
    sl = Sluiced("t", tmp_path / "s.sock")
    try:
        yield srv, StatsCollector(sl)
    finally:
        sl.close()
        srv.close()


def test_the_collector_reads_a_newer_sluiceds_schema_once(
        newer_sluiced: tuple[FakeSluiced, StatsCollector]) -> None:
    srv, coll = newer_sluiced
    assert coll.schema == builtin()
    for _ in range(3):
        fams = _families(list(coll.collect()))
        assert "sluice_nf_wakeups" in fams
    assert [(q["method"], q.get("params")) for q in srv.requests] == [
        ("stats", None), ("stats", {"schema": True}), ("stats", None), ("stats", None)]


def test_a_sluiced_without_the_schema_keeps_the_packages(tmp_path: Path) -> None:
    """A stats result with a key the package does not know, from a sluiced that answers
    `stats {"schema": true}` with stats (it ignores the param): the known families go
    out, and the schema is not asked for again at each scrape."""
    _, st = _newer()
    srv = FakeSluiced(tmp_path / "s.sock", handler=lambda req: {
        "jsonrpc": "2.0", "id": req["id"], "result": st})
    sl = Sluiced("t", tmp_path / "s.sock")
    try:
        coll = StatsCollector(sl)
        for _ in range(2):
            fams = _families(list(coll.collect()))
            assert "sluice_nf_rx_packets" in fams and "sluice_nf_wakeups" not in fams
        assert coll.schema == builtin()
        assert len(srv.requests) == 3  # stats, the schema once, stats
    finally:
        sl.close()
        srv.close()
