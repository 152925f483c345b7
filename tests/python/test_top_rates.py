"""sluice.top: the rates between two stats reads, and the columns it draws."""

from __future__ import annotations

from rich.console import Console

from sluice.top import frame, rates, si


def _stats(k: int, edges: bool = True) -> dict:
    """A node after k seconds of 1000 packets/s in, 900 out, 100 dropped by fw."""
    st = {
        "ports": [
            {"name": "in", "rx_pkts": 1000 * k, "rx_bytes": 64000 * k, "tx_pkts": 0,
             "tx_bytes": 0, "drops": {"no_instance": 0}},
            {"name": "out", "rx_pkts": 0, "rx_bytes": 0, "tx_pkts": 900 * k,
             "tx_bytes": 57600 * k, "drops": {"tx_full": 0}},
        ],
        "nfs": [
            {"instance": 0, "service": "fw", "state": "running", "rx_pkts": 1000 * k,
             "tx_pkts": 900 * k, "drops": {"nf_verdict": 100 * k, "ring_full": 0},
             "rx_ring": {"count": 3000, "size": 4096}, "cycles_per_pkt": 210.4},
        ],
        "drops_total": 100 * k,
    }
    if edges:
        st["edges"] = [{"from": "port:in", "to": "fw", "pkts": 1000 * k, "bytes": 64000 * k},
                       {"from": "fw", "to": "port:out", "pkts": 900 * k, "bytes": 57600 * k}]
    return st


def test_rates_between_two_reads() -> None:
    r = rates(_stats(1), _stats(3), 2.0)
    assert r["ports"] == [
        {"name": "in", "rx_pps": 1000.0, "tx_pps": 0.0, "drop_pps": 0.0,
         "rx_bps": 512000.0, "tx_bps": 0.0},
        {"name": "out", "rx_pps": 0.0, "tx_pps": 900.0, "drop_pps": 0.0,
         "rx_bps": 0.0, "tx_bps": 460800.0}]
    assert r["nfs"] == [{"instance": 0, "service": "fw", "state": "running",
                         "rx_pps": 1000.0, "tx_pps": 900.0, "drop_pps": 100.0,
                         "ring": 3000, "ring_size": 4096, "cycles_per_pkt": 210.4}]
    assert r["edges"] == [
        {"from": "fw", "to": "port:out", "pkts": 2700, "pps": 900.0, "bps": 460800.0},
        {"from": "port:in", "to": "fw", "pkts": 3000, "pps": 1000.0, "bps": 512000.0}]
    assert r["drops"] == [{"reason": "nf_verdict", "total": 300, "pps": 100.0,
                           "where": ["fw#0"]}]
    assert r["has_edges"] is True and r["drops_total"] == 300


def test_first_read_and_restarts_have_no_rate() -> None:
    r = rates(None, _stats(2), 0.0)
    assert r["ports"][0]["rx_pps"] is None and r["edges"][0]["pps"] is None
    assert r["drops"][0]["pps"] is None and r["drops"][0]["total"] == 200
    r = rates(_stats(5), _stats(1), 1.0)  # counters went back: a new sluiced
    assert r["ports"][0]["rx_pps"] is None and r["nfs"][0]["rx_pps"] is None


def test_an_edge_first_listed_counts_from_zero() -> None:
    before = _stats(1)
    before["edges"] = before["edges"][:1]
    r = rates(before, _stats(2), 1.0)
    assert [(e["from"], e["to"], e["pps"]) for e in r["edges"]] == [
        ("fw", "port:out", 1800.0), ("port:in", "fw", 1000.0)]


def test_si() -> None:
    assert [si(x) for x in (None, 0, 3.25, 42, 1234, 2_500_000, 3e9)] == [
        "-", "0", "3.2", "42", "1.23k", "2.50M", "3.00G"]


def _text(r: dict) -> list[str]:
    con = Console(width=200, record=True, color_system=None)
    con.print(frame(r, "title"))
    return [ln.rstrip() for ln in con.export_text().splitlines()]


def test_frame_columns() -> None:
    lines = _text(rates(_stats(1), _stats(2), 1.0))
    heads = [ln.split() for ln in lines if ln.strip().startswith(("port ", "NF ", "edge ",
                                                                   "drop reason"))]
    assert heads == [
        ["port", "in", "pkt/s", "out", "pkt/s", "drop/s", "in", "bit/s", "out", "bit/s"],
        ["NF", "state", "in", "pkt/s", "out", "pkt/s", "drop/s", "ring", "ring", "%",
         "cyc/pkt"],
        ["edge", "from", "to", "pkt/s", "bit/s", "packets"],
        ["drop", "reason", "per", "s", "total", "where"]]
    rows = {ln.split()[0]: ln.split() for ln in lines if ln.strip()}
    assert rows["in"] == ["in", "1.00k", "0", "0", "512.00k", "0"]
    assert rows["fw#0"] == ["fw#0", "running", "1.00k", "900", "100", "3000/4096", "73", "210"]
    assert rows["port:in"] == ["port:in", "fw", "1.00k", "512.00k", "2.00k"]
    assert rows["nf_verdict"] == ["nf_verdict", "100", "200", "fw#0"]


def test_frame_without_edges_or_drops_says_so() -> None:
    st = _stats(1, edges=False)
    st["nfs"][0]["drops"] = {"nf_verdict": 0}
    lines = _text(rates(st, st, 1.0))
    assert "(this sluiced reports no per-edge counters: stats has no 'edges')" in lines
    assert "no packet dropped" in lines


def test_columns_are_fields_of_the_schema(monkeypatch) -> None:
    """top's tables name schema fields; an unknown one is an error, not a blank column."""
    import pytest

    import sluice.top
    from sluice.core.counters import SchemaError, builtin, column

    for table, keys in (("port", sluice.top.PORT_RATES), ("nf", sluice.top.NF_RATES),
                        ("edge", sluice.top.EDGE_RATES)):
        for _, name in keys:
            assert column(builtin(), table, name).field.kind == "counter", (table, name)
    monkeypatch.setattr(sluice.top, "PORT_RATES", (("rx_pps", "rx_pktz"),))
    with pytest.raises(SchemaError, match="table 'port' has no field 'rx_pktz'"):
        rates(_stats(1), _stats(2), 1.0)
