"""The live table of `sluice up` (sluice.runtime.launch.stats_tables): packets/s from
two stats reads `dt` seconds apart, drops by reason, NF ring occupancy and
cycles per packet, as a user sees them (rendered by rich, compared cell by
cell). The stats format is docs/control-socket.md's."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest
from rich.console import Console

from sluice.runtime.launch import stats_tables


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

    code = ("from sluice.runtime.launch import up_console, stats_tables\n"
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


# -- in a terminal of any width, no number or id is cut ------------------------

SERVICES = ["ddos-scrubber", "policy-enforcer", "dpi-inspector", "nat44-gateway"]


def _busy(k: int) -> dict[str, Any]:
    """A node after k seconds: 20 NF instances of 4 services with long
    names, instance i taking 2M*(i+1) packets/s and sending 1.9M*(i+1)/s,
    with 3 drop reasons (nf_verdict 318,026/s, ring_full 8,000*i/s,
    policy_violation 12,345,678/s); instance 7 is stopping. One port,
    'uplink-provider-a': 1G packets/s in, 900M out, 123,456 stalls/s,
    drops no_instance 5M/s and ring_full 77k/s."""
    nfs = [{"instance": i, "service": SERVICES[i % 4],
            "state": "stopping" if i == 7 else "running",
            "rx_pkts": 2_000_000 * k * (i + 1), "tx_pkts": 1_900_000 * k * (i + 1),
            "drops": {"nf_verdict": 318_026 * k, "ring_full": 8000 * k * i,
                      "policy_violation": 12_345_678 * k},
            "rx_ring": {"count": 4000 + i, "size": 4096}, "cycles_per_pkt": 1234.4}
           for i in range(20)]
    return {"ports": [{"id": 0, "name": "uplink-provider-a", "rx_pkts": 10**9 * k,
                       "tx_pkts": 9 * 10**8 * k, "rx_stalls": 123_456 * k,
                       "drops": {"no_instance": 5_000_000 * k, "ring_full": 77_000 * k}}],
            "nfs": nfs, "services": [
                {"id": s, "name": name, "instances": list(range(s, 20, 4)),
                 "rx_pkts": sum(n["rx_pkts"] for n in nfs if n["service"] == name),
                 "tx_pkts": sum(n["tx_pkts"] for n in nfs if n["service"] == name),
                 "drops": {"nf_verdict": 5 * 318_026 * k}}
                for s, name in enumerate(SERVICES)]}


# Every cell of the rows checked, by column (rates between k=1 and k=3, 2 s
# apart; drops by reason cumulative at k=3).
PORT = {"port": ["uplink-provider-a"], "in/s": "1.00G", "out/s": "900.00M",
        "drop/s": "5.08M", "stalls/s": "123.46k",
        "drops by reason": ["no_instance=15.00M", "ring_full=231.00k"]}
NFS = {
    "ddos-scrubber#0": {"NF": ["ddos-scrubber#0"], "in/s": "2.00M", "out/s": "1.90M",
                        "drop/s": "12.66M", "ring": "4000/4096", "cyc/pkt": "1234",
                        "drops by reason": ["nf_verdict=954.08k", "policy_violation=37.04M"]},
    "nat44-gateway#7": {"NF": ["nat44-gateway#7", "(stopping)"], "in/s": "16.00M",
                        "out/s": "15.20M", "drop/s": "12.72M", "ring": "4007/4096",
                        "cyc/pkt": "1234",
                        "drops by reason": ["nf_verdict=954.08k", "policy_violation=37.04M",
                                            "ring_full=168.00k"]},
    "policy-enforcer#17": {"NF": ["policy-enforcer#17"], "in/s": "36.00M", "out/s": "34.20M",
                           "drop/s": "12.80M", "ring": "4017/4096", "cyc/pkt": "1234",
                           "drops by reason": ["nf_verdict=954.08k",
                                               "policy_violation=37.04M",
                                               "ring_full=408.00k"]},
}
PORT_COLS = ["port", "in/s", "out/s", "drop/s", "stalls/s", "drops by reason"]
NF_COLS = ["NF", "in/s", "out/s", "drop/s", "ring", "cyc/pkt", "drops by reason"]
WHOLE = re.compile(r"\d+(\.\d\d)?[kMG]?|\d+/4096|[a-z_]+=\d+(\.\d\d)?[kMG]?")


def _terminal(width: int, group: Any) -> list[str]:
    con = Console(width=width, force_terminal=True, record=True, file=io.StringIO())
    con.print(group)
    return con.export_text(styles=False).splitlines()


def _row_blocks(lines: list[str]) -> list[list[str]]:
    """The rows of both tables: a row is its first line (a name at the left
    edge) and the lines under it that continue its cells (a name's state,
    "(stopping)", or a drop reason)."""
    blocks: list[list[str]] = []
    for ln in lines:
        if not ln.strip() or ln.strip()[0] == "─" or ln.startswith("("):
            continue
        if ln.startswith(" ") and ln[1] not in " (":
            blocks.append([ln])
        elif ln.startswith(" ") and blocks:
            blocks[-1].append(ln)
    return blocks


@pytest.mark.parametrize(("width", "left_out"), [
    (120, []),
    (80, ["cyc/pkt", "ring"]),
    (60, ["cyc/pkt", "ring", "stalls/s", "drops by reason"]),
    (40, ["cyc/pkt", "ring", "stalls/s", "drops by reason", "drop/s"]),
])
def test_terminal_widths_leave_out_columns_never_cut_cells(width: int,
                                                           left_out: list[str]) -> None:
    """In a terminal of 120, 80, 60 and 40 columns: the lines fit it; the
    columns left out are the least important ones first, said in a line
    under the tables; every number, id and reason=count is whole (names
    and drops by reason wrap between words only, one reason a line)."""
    lines = _terminal(width, stats_tables(_busy(3), _busy(1), dt=2.0, title="node x: 3 s"))
    assert max(len(ln) for ln in lines) <= width, "\n".join(lines)
    note = " ".join(ln for ln in lines if ln.startswith("(") or ln.startswith("reason;")
                    or ln.startswith("`sluice"))
    if left_out:
        assert " ".join(" ".join(lines).split()).endswith(
            f"(not shown in {width} columns: {', '.join(left_out)}; `sluice stats --json` "
            f"has them all)"), "\n".join(lines)
    else:
        assert not note and not any("not shown" in ln for ln in lines)
    heads = [ln.split() for ln in lines if ln.strip().startswith(("port ", "NF "))]
    kept_p = [c for c in PORT_COLS if c not in left_out]
    kept_n = [c for c in NF_COLS if c not in left_out]
    assert [" ".join(h) for h in heads][0].startswith(" ".join(kept_p[:-1]))
    blocks = [b for b in _row_blocks(lines) if b[0].split()[0] not in ("port", "NF")]
    assert len(blocks) == 1 + 20  # the port, 20 NFs
    for b in blocks:  # no number, ring or reason=count cut or split
        for cell in [c for c in " ".join(b).split() if c != "(stopping)"][1:]:
            assert WHOLE.fullmatch(cell), (cell, "\n".join(b))
    rows = {b[0].split()[0]: b for b in blocks}

    def want(row: dict[str, Any], cols: list[str]) -> tuple[list[str], list[str]]:
        first = [row[cols[0]][0], *(row[c] for c in cols[1:] if c != "drops by reason")]
        every = [*row[cols[0]], *first[1:], *row.get("drops by reason", [])
                 * ("drops by reason" in cols)]
        return first, sorted(every)

    for name, row in [("uplink-provider-a", PORT), *NFS.items()]:
        first, every = want(row, kept_p if name == "uplink-provider-a" else kept_n)
        block = rows[name]
        assert [c for c in block[0].split() if c != "(stopping)"][:len(first)] == first, \
            "\n".join(block)
        assert sorted(" ".join(block).split()) == every, "\n".join(block)
    # a name with a state wraps between its words, when it must
    wrapped = rows["nat44-gateway#7"]
    if width == 80:
        assert wrapped[0].split()[0] == "nat44-gateway#7" and wrapped[1].split()[0] == \
            "(stopping)", "\n".join(wrapped)
    if "drops by reason" not in left_out:  # one reason a line, when they must wrap
        assert [ln.split()[-1] for ln in rows["policy-enforcer#17"]] == \
            ["nf_verdict=954.08k", "policy_violation=37.04M", "ring_full=408.00k"]


def test_narrower_than_a_name_and_a_number_shows_the_names() -> None:
    """In 20 columns every column but the names is left out (said), and
    the names are whole, a state on a line of its own."""
    lines = _terminal(20, stats_tables(_busy(3), _busy(1), dt=2.0))
    assert max(len(ln) for ln in lines) <= 20
    blocks = {b[0].split()[0]: [ln.strip() for ln in b] for b in _row_blocks(lines)}
    assert list(blocks) == ["port", "uplink-provider-a", "NF",
                            *(f"{SERVICES[i % 4]}#{i}" for i in range(20))]
    assert blocks["nat44-gateway#7"] == ["nat44-gateway#7", "(stopping)"]
    assert blocks["policy-enforcer#17"] == ["policy-enforcer#17"]
    assert " ".join(" ".join(lines).split()).endswith(
        "(not shown in 20 columns: cyc/pkt, ring, stalls/s, drops by reason, drop/s, out/s, "
        "in/s; `sluice stats --json` has them all)")


def test_a_pipe_of_80_columns_leaves_columns_out_rather_than_crop(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A plain Console() (`sluice stats`'s) into a pipe or a file has 80
    columns and crops longer lines: the tables fit them, leaving columns
    out (said), rather than lose the ends of rows; up_console's 240
    columns (test_into_a_pipe_lines_and_rows_are_not_wrapped) have room."""
    monkeypatch.delenv("COLUMNS", raising=False)
    out = io.StringIO()
    Console(file=out).print(stats_tables(_busy(3)))
    lines = out.getvalue().splitlines()
    assert max(len(ln) for ln in lines) <= 80
    block = next(b for b in _row_blocks(lines) if b[0].startswith(" policy-enforcer#17 "))
    assert [ln.split() for ln in block] == [
        ["policy-enforcer#17", "108.00M", "102.60M", "38.40M", "nf_verdict=954.08k"],
        ["policy_violation=37.04M"], ["ring_full=408.00k"]]
    assert lines[-1] == ("(not shown in 80 columns: cyc/pkt, ring; `sluice stats --json` "
                         "has them all)")
    monkeypatch.setenv("COLUMNS", "200")
    out = io.StringIO()
    Console(file=out).print(stats_tables(_busy(3)))
    row = next(ln for ln in out.getvalue().splitlines()
               if ln.startswith(" policy-enforcer#17 "))
    assert row.split() == ["policy-enforcer#17", "108.00M", "102.60M", "38.40M", "4017/4096",
                           "1234", "nf_verdict=954.08k", "policy_violation=37.04M",
                           "ring_full=408.00k"]


def test_rows_that_wrap_past_the_room_are_shown_per_service() -> None:
    """max_nf_rows is the lines the terminal has room for: 20 instances
    whose drop reasons take 3 lines each at 80 columns (60 lines) do not
    fit 25, so one row per service; at 200 columns, a line each, they do."""
    lines = _terminal(80, stats_tables(_busy(3), _busy(1), dt=2.0, max_nf_rows=25))
    text = "\n".join(lines)
    assert [ln.split()[0] for ln in lines if ln.startswith(" ") and ln[1] != " "
            and ln.split()[0][0] != "─" and ln.split()[0] not in ("port", "NF", "x5", "(1")] == [
        "uplink-provider-a", *SERVICES], text
    assert " ddos-scrubber x5    90.00M    85.50M    1.59M   20040/20480   nf_verdict=4.77M" \
        in [ln.rstrip() for ln in lines], text  # 5 instances' rings added; 2M+6M+...+34M in/s
    assert "#" not in text
    assert "20 NF instances of 4 services: one row per service (sluice stats --node NAME " \
           "lists every instance)" in " ".join(" ".join(lines).split())
    lines = _terminal(200, stats_tables(_busy(3), _busy(1), dt=2.0, max_nf_rows=25))
    names = [b[0].split()[0] for b in _row_blocks(lines)]
    assert names == ["port", "uplink-provider-a", "NF",
                     *(f"{SERVICES[i % 4]}#{i}" for i in range(20))]
    assert not any("one row per service" in ln for ln in lines)


def test_columns_are_fields_of_the_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    """The live table names schema fields; its headers and the order columns are
    left out in come from them, and an unknown name is an error, not a blank column."""
    import sluice.runtime.livetable as lt
    from sluice.core.counters import SchemaError, builtin

    assert lt.STATS_DROP_ORDER == ["cyc/pkt", "ring", "stalls/s", "stalls", "drops by reason",
                                   "drop/s", "dropped", "out/s", "out", "in/s", "in"]
    assert lt.drop_order(builtin()) == lt.STATS_DROP_ORDER
    monkeypatch.setattr(lt, "NF_FIELDS", ("rx_pkts", "rx_pktz"))
    with pytest.raises(SchemaError, match="table 'nf' has no field 'rx_pktz'"):
        stats_tables(_stats(1))
