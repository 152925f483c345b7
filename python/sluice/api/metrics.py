"""Prometheus metrics from one ``stats`` call per scrape."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from .sluiced import Sluiced

METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


# -- metrics ------------------------------------------------------------------------------

class StatsCollector:
    """Prometheus collector: one ``stats`` call per scrape."""

    def __init__(self, sluiced: Sluiced):
        self.sluiced = sluiced

    def describe(self) -> list[Any]:
        return []

    def collect(self) -> Iterator[Any]:
        st = self.sluiced.call("stats")
        yield from stats_metrics(st)


def _drop_items(d: Any) -> list[tuple[str, int]]:
    return sorted((str(k), int(v)) for k, v in (d or {}).items())


def stats_metrics(st: dict[str, Any]) -> list[Any]:
    """The metric families of one ``stats`` result (docs/api.md lists them)."""
    def counter(name: str, doc: str, labels: list[str]) -> CounterMetricFamily:
        return CounterMetricFamily(name, doc, labels=labels)

    def gauge(name: str, doc: str, labels: list[str]) -> GaugeMetricFamily:
        return GaugeMetricFamily(name, doc, labels=labels)

    p_rx = counter("sluice_port_rx_packets", "Packets read from the port.", ["port"])
    p_tx = counter("sluice_port_tx_packets", "Packets sent on the port.", ["port"])
    p_rxb = counter("sluice_port_rx_bytes", "Bytes read from the port.", ["port"])
    p_txb = counter("sluice_port_tx_bytes", "Bytes sent on the port.", ["port"])
    p_st = counter("sluice_port_rx_stalls", "Times reading the port stalled.", ["port"])
    p_dr = counter("sluice_port_drops", "Packets that entered through the port and were "
                   "dropped before the first NF, plus TX drops on it, by reason.",
                   ["port", "reason"])
    for p in st.get("ports", []):
        lab = [str(p["name"])]
        p_rx.add_metric(lab, p["rx_pkts"])
        p_tx.add_metric(lab, p["tx_pkts"])
        p_rxb.add_metric(lab, p["rx_bytes"])
        p_txb.add_metric(lab, p["tx_bytes"])
        p_st.add_metric(lab, p.get("rx_stalls", 0))
        for reason, v in _drop_items(p.get("drops")):
            p_dr.add_metric(lab + [reason], v)

    nl = ["service", "instance"]
    n_rx = counter("sluice_nf_rx_packets", "Packets the NF instance received.", nl)
    n_tx = counter("sluice_nf_tx_packets", "Packets the NF instance handed on.", nl)
    n_rxb = counter("sluice_nf_rx_bytes", "Bytes the NF instance received.", nl)
    n_txb = counter("sluice_nf_tx_bytes", "Bytes the NF instance handed on.", nl)
    n_cyc = counter("sluice_nf_cycles", "TSC cycles the NF instance spent on packets.", nl)
    n_dr = counter("sluice_nf_drops", "Packets the NF instance dropped or could not hand "
                   "on, by reason.", nl + ["reason"])
    n_occ = gauge("sluice_nf_ring_occupancy", "Packets waiting in the NF instance's "
                  "rx ring.", nl)
    n_size = gauge("sluice_nf_ring_size", "Capacity of the NF instance's rx ring.", nl)
    n_cpp = gauge("sluice_nf_cycles_per_packet", "TSC cycles per packet of the NF "
                  "instance (cumulative average).", nl)
    n_up = gauge("sluice_nf_running", "1 when the NF instance is running, else 0.", nl)
    for n in st.get("nfs", []):
        lab = [str(n["service"]), str(n["instance"])]
        n_rx.add_metric(lab, n["rx_pkts"])
        n_tx.add_metric(lab, n["tx_pkts"])
        n_rxb.add_metric(lab, n["rx_bytes"])
        n_txb.add_metric(lab, n["tx_bytes"])
        n_cyc.add_metric(lab, n.get("cycles", 0))
        for reason, v in _drop_items(n.get("drops")):
            n_dr.add_metric(lab + [reason], v)
        ring = n.get("rx_ring") or {}
        n_occ.add_metric(lab, ring.get("count", 0))
        n_size.add_metric(lab, ring.get("size", 0))
        n_cpp.add_metric(lab, n.get("cycles_per_pkt", 0.0))
        n_up.add_metric(lab, 1 if n.get("state") == "running" else 0)

    s_rx = counter("sluice_service_rx_packets", "Packets the service's instances received "
                   "(including instances that have left).", ["service"])
    s_tx = counter("sluice_service_tx_packets", "Packets the service's instances handed on.",
                   ["service"])
    s_rxb = counter("sluice_service_rx_bytes", "Bytes the service's instances received "
                    "(including instances that have left).", ["service"])
    s_txb = counter("sluice_service_tx_bytes", "Bytes the service's instances handed on.",
                    ["service"])
    s_dr = counter("sluice_service_drops", "Packets dropped at the service, by reason.",
                   ["service", "reason"])
    s_inst = gauge("sluice_service_instances", "Live instances of the service.", ["service"])
    for s in st.get("services", []):
        lab = [str(s["name"])]
        s_rx.add_metric(lab, s["rx_pkts"])
        s_tx.add_metric(lab, s["tx_pkts"])
        s_rxb.add_metric(lab, s["rx_bytes"])
        s_txb.add_metric(lab, s["tx_bytes"])
        for reason, v in _drop_items(s.get("drops")):
            s_dr.add_metric(lab + [reason], v)
        s_inst.add_metric(lab, len(s.get("instances", [])))

    total = counter("sluice_drops", "All packets dropped on the node.", [])
    total.add_metric([], st.get("drops_total", 0))
    # stats.drops counts each drop once (ports, instances, sluiced on their behalf, the TX
    # thread, instances gone), so sum(sluice_node_drops_total) == sluice_drops_total.
    node_dr = counter("sluice_node_drops", "Packets dropped on the node, by reason: every "
                      "drop once, including those of instances that have left.", ["reason"])
    for reason, v in _drop_items(st.get("drops")):
        node_dr.add_metric([reason], v)
    out = [p_rx, p_tx, p_rxb, p_txb, p_st, p_dr, n_rx, n_tx, n_rxb, n_txb, n_cyc, n_dr,
           n_occ, n_size, n_cpp, n_up, s_rx, s_tx, s_rxb, s_txb, s_dr, s_inst, total, node_dr]

    fl = st.get("flows")
    if fl is not None:  # sluiced before the flow table has no stats.flows
        for fam, key in [
            (gauge("sluice_flows_live", "Flows in the flow table now.", []), "live"),
            (gauge("sluice_flows_capacity", "Most flows the flow table holds "
                   "(--flow-capacity).", []), "capacity"),
            (counter("sluice_flows_created", "Flow table entries created.", []), "created"),
            (counter("sluice_flows_aged", "Flow table entries removed because they were "
                     "idle longer than --flow-timeout.", []), "aged"),
            (counter("sluice_flows_deleted", "Flow table entries deleted on request.", []),
             "deleted"),
            (counter("sluice_flows_table_full", "New flows not tracked because the flow "
                     "table was full.", []), "table_full")]:
            fam.add_metric([], fl.get(key, 0))
            out.append(fam)
    return out
