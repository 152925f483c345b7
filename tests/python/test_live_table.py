"""The live table of `sluice up` (sluice.launch.stats_tables): packets/s from
two stats reads `dt` seconds apart, drops by reason, NF ring occupancy and
cycles per packet, as a user sees them (rendered by rich, compared cell by
cell). The stats format is docs/control-socket.md's."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from sluice.launch import stats_tables


def _stats(k: int) -> dict[str, Any]:
    """A node after k seconds at 1500 packets/s in, of which fw drops 100/s
    (nf_verdict) and the port 'in' 10/s (ring_full); 'out' sends 1390/s.
    fw's ring holds 3 packets of 4096, mon's 4095; the port 'in' stalled
    250 times a second."""
    return {
        "tsc_hz": 2_400_000_000,
        "ports": [
            {"id": 0, "name": "in", "rx_pkts": 1500 * k, "rx_bytes": 96000 * k,
             "tx_pkts": 0, "tx_bytes": 0, "rx_stalls": 250 * k,
             "drops": {"no_instance": 0, "ring_full": 10 * k}},
            {"id": 1, "name": "out", "rx_pkts": 0, "rx_bytes": 0,
             "tx_pkts": 1390 * k, "tx_bytes": 88960 * k, "rx_stalls": 0,
             "drops": {"tx_full": 0}},
        ],
        "nfs": [
            {"instance": 0, "service": "fw", "state": "running",
             "rx_pkts": 1490 * k, "rx_bytes": 0, "tx_pkts": 1390 * k, "tx_bytes": 0,
             "drops": {"nf_verdict": 100 * k, "ring_full": 0},
             "rx_ring": {"count": 3, "size": 4096},
             "cycles": 0, "cycles_per_pkt": 210.4},
            {"instance": 1, "service": "mon", "state": "stopping",
             "rx_pkts": 2_500_000 * k, "rx_bytes": 0, "tx_pkts": 2_500_000 * k,
             "tx_bytes": 0, "drops": {"nf_lost": 1234 * k},
             "rx_ring": {"count": 4095, "size": 4096},
             "cycles": 0, "cycles_per_pkt": 0},
        ],
        "services": [],
        "drops_total": 100 * k + 10 * k + 1234 * k,
    }


def _render(group: Any) -> list[str]:
    con = Console(width=120, record=True, color_system=None)
    con.print(group)
    return [ln.rstrip() for ln in con.export_text().splitlines()]


def _rows(lines: list[str]) -> dict[str, list[str]]:
    return {ln.split()[0]: ln.split() for ln in lines if ln.strip() and ln.strip()[0] != "─"}


def test_rates_between_two_reads() -> None:
    lines = _render(stats_tables(_stats(3), _stats(1), dt=2.0, title="node demo: 3 s"))
    assert lines[0] == "node demo: 3 s"
    heads = [ln.split() for ln in lines if ln.strip().startswith(("port ", "NF "))]
    assert heads == [
        ["port", "in/s", "out/s", "drop/s", "stalls/s", "drops", "by", "reason"],
        ["NF", "in/s", "out/s", "drop/s", "ring", "cyc/pkt", "drops", "by", "reason"]]
    rows = _rows(lines)
    # (1500*3 - 1500) / 2 s = 1500/s; drops by reason are cumulative counts.
    assert rows["in"] == ["in", "1.50k", "0", "10", "250", "ring_full=30"]
    assert rows["out"] == ["out", "0", "1.39k", "0", "0"]
    assert rows["fw#0"] == ["fw#0", "1.49k", "1.39k", "100", "3/4096", "210", "nf_verdict=300"]
    assert rows["mon#1"] == ["mon#1", "(stopping)", "2.50M", "2.50M", "1.23k", "4095/4096", "0",
                             "nf_lost=3.70k"]


def test_counters_that_went_back_and_new_nfs() -> None:
    """A counter lower than before (a restarted sluiced) is a rate of 0, not
    negative; an NF not in the previous read (instance 1 here) has no rate."""
    before = _stats(5)
    before["nfs"] = before["nfs"][:1]
    rows = _rows(_render(stats_tables(_stats(1), before, dt=1.0)))
    assert rows["in"] == ["in", "0", "0", "0", "0", "ring_full=10"]
    assert rows["fw#0"] == ["fw#0", "0", "0", "0", "3/4096", "210", "nf_verdict=100"]
    assert rows["mon#1"] == ["mon#1", "(stopping)", "-", "-", "-", "4095/4096", "0",
                             "nf_lost=1.23k"]


def test_first_read_shows_counts() -> None:
    """Without a previous read (the first refresh) the table shows
    cumulative counts under other headings."""
    lines = _render(stats_tables(_stats(2)))
    heads = [ln.split() for ln in lines if ln.strip().startswith(("port ", "NF "))]
    assert heads == [
        ["port", "in", "out", "dropped", "stalls", "drops", "by", "reason"],
        ["NF", "in", "out", "dropped", "ring", "cyc/pkt", "drops", "by", "reason"]]
    rows = _rows(lines)
    assert rows["in"] == ["in", "3.00k", "0", "20", "500", "ring_full=20"]
    assert rows["fw#0"] == ["fw#0", "2.98k", "2.78k", "200", "3/4096", "210", "nf_verdict=200"]
    assert rows["mon#1"] == ["mon#1", "(stopping)", "5.00M", "5.00M", "2.47k", "4095/4096", "0",
                             "nf_lost=2.47k"]


def _replicated(k: int) -> dict[str, Any]:
    """_stats(k) with fw in three instances (2 and 3 added: 1490/s in
    each, 1390/s out, 100/s dropped; rings of 3, 5 and 7) and mon in two,
    and sluiced's per-service counters: the instances' sums, and for fw
    also 1000/s in and out of an instance that has left."""
    st = _stats(k)
    fw, mon = st["nfs"]
    extra = [dict(fw, instance=i, rx_ring={"count": c, "size": 4096},
                  cycles_per_pkt=cpp) for i, c, cpp in ((2, 5, 190.6), (3, 7, 0))]
    st["nfs"] = [fw, mon, *extra, dict(mon, instance=4, state="running")]
    st["services"] = [
        {"id": 0, "name": "fw", "instances": [0, 2, 3], "rx_pkts": (3 * 1490 + 1000) * k,
         "tx_pkts": (3 * 1390 + 1000) * k, "drops": {"nf_verdict": 300 * k}},
        {"id": 1, "name": "mon", "instances": [1, 4], "rx_pkts": 2 * 2_500_000 * k,
         "tx_pkts": 2 * 2_500_000 * k, "drops": {"nf_lost": 2 * 1234 * k}},
        {"id": 2, "name": "idle", "instances": [], "rx_pkts": 0, "tx_pkts": 0, "drops": {}}]
    return st


def test_more_instances_than_rows_are_shown_per_service() -> None:
    """When the terminal has no room for a row per instance (max_nf_rows),
    the NF table has a row per service: instances counted, those not
    running said, packets and drops from sluiced's per-service counters
    (which keep those of departed instances), rings added, cycles per
    packet the mean of the instances that report one; a line says so."""
    lines = _render(stats_tables(_replicated(3), _replicated(1), dt=2.0, max_nf_rows=4))
    rows = _rows(lines)
    assert rows["fw"] == ["fw", "x3", "5.47k", "5.17k", "300", "15/12288", "200",
                          "nf_verdict=900"]
    assert rows["mon"] == ["mon", "x2", "(1", "not", "running)", "5.00M", "5.00M", "2.47k",
                           "8190/8192", "-", "nf_lost=7.40k"]
    assert lines[-1] == ("5 NF instances of 2 services: one row per service (sluice stats "
                         "--node NAME lists every instance)")
    # With room for every instance, one row each, as before.
    rows = _rows(_render(stats_tables(_replicated(3), _replicated(1), dt=2.0, max_nf_rows=5)))
    assert {r for r in rows if "#" in r} == {"fw#0", "fw#2", "fw#3", "mon#1", "mon#4"}


def test_into_a_pipe_lines_and_rows_are_not_wrapped() -> None:
    """sluice up's console into a pipe or a file: an event line longer than
    80 columns stays one line (grep finds it), and a table row keeps its
    drop reasons whole; $COLUMNS, when set, still rules."""
    import os
    import subprocess
    import sys

    code = ("from sluice.launch import up_console, stats_tables\n"
            "c = up_console()\n"
            "c.print('crashed: ' + 'x' * 150)\n"
            "c.print(stats_tables({'ports': [], 'nfs': [{'instance': 0, 'service': 'firewall', "
            "'rx_pkts': 10**9, 'tx_pkts': 10**9, 'drops': {'nf_verdict': 3320000000, "
            "'policy_violation': 12345678}, 'rx_ring': {'count': 1, 'size': 4096}, "
            "'cycles_per_pkt': 55}]}))\n")
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out[0] == "crashed: " + "x" * 150
    row = next(ln for ln in out if ln.startswith(" firewall#0"))
    assert row.split() == ["firewall#0", "1.00G", "1.00G", "3.33G", "1/4096", "55",
                           "nf_verdict=3.32G", "policy_violation=12.35M"]
    out = subprocess.run([sys.executable, "-c", code], env={**env, "COLUMNS": "60"},
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert max(len(ln) for ln in out[1:]) <= 60
