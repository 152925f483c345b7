"""The README's first command: `make demo` runs `sluice up examples/demo.yaml`.

The demo deployment, under a node name of this test and with its paths made
absolute, is run by the real command line for 3 seconds with a real sluiced
and real NFs. What it prints (the live table, the end summary) is checked
against the demo trace: the firewall's rules (examples/fw-rules.yaml) are
evaluated here on each packet of examples/traces/http-mix.pcap, which the
port replays in a loop, so every count the firewall reports is known
exactly from how many packets it received.
"""

from __future__ import annotations

import ipaddress
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from conftest import ROOT, build_dir

from sluice.runtime.launch import prefix_users
from sluice.runtime.traces import read_pcap

EXAMPLES = ROOT / "examples"
TRACE = EXAMPLES / "traces" / "http-mix.pcap"
RULES = EXAMPLES / "fw-rules.yaml"
PROTOS = {"tcp": 6, "udp": 17, "icmp": 1}


def _five_tuple(frame: bytes) -> tuple[int, Any, Any, int, int]:
    """(proto, src, dst, sport, dport) of an untagged IPv4/IPv6 frame
    (ports 0 for protocols without them); the demo trace has nothing else."""
    etype = int.from_bytes(frame[12:14], "big")
    if etype == 0x0800:
        ihl = (frame[14] & 0x0F) * 4
        proto = frame[23]
        src, dst = ipaddress.ip_address(frame[26:30]), ipaddress.ip_address(frame[30:34])
        l4 = 14 + ihl
    elif etype == 0x86DD:
        proto = frame[20]
        src, dst = ipaddress.ip_address(frame[22:38]), ipaddress.ip_address(frame[38:54])
        l4 = 54
    else:
        raise AssertionError(f"the demo trace has a frame of ethertype {etype:#x}")
    if proto in (6, 17):
        sport, dport = int.from_bytes(frame[l4:l4 + 2], "big"), int.from_bytes(frame[l4 + 2:l4 + 4],
                                                                               "big")
    else:
        sport = dport = 0
    return proto, src, dst, sport, dport


def _port_match(spec: Any, port: int) -> bool:
    if spec is None or spec == "any":
        return True
    lo, _, hi = str(spec).partition("-")
    return int(lo) <= port <= int(hi or lo)


def _rule_matches(rule: dict[str, Any], t: tuple[int, Any, Any, int, int]) -> bool:
    assert set(rule) <= {"name", "action", "proto", "src", "dst", "sport", "dport"}, rule
    proto, src, dst, sport, dport = t
    if "proto" in rule and PROTOS[rule["proto"]] != proto:
        return False
    for key, addr in (("src", src), ("dst", dst)):
        if key in rule:
            net = ipaddress.ip_network(rule[key])
            if net.version != addr.version or addr not in net:
                return False
    return _port_match(rule.get("sport"), sport) and _port_match(rule.get("dport"), dport)


def firewall_verdicts() -> tuple[list[str], list[int], list[bool]]:
    """Counter labels as sluice-firewall prints them ('1', ..., 'default'),
    and per packet of one pass of the trace: its label's index and whether
    it is denied."""
    spec = yaml.safe_load(RULES.read_text())
    rules = spec["rules"]
    labels = [str(i + 1) for i in range(len(rules))] + ["default"]
    which, denied = [], []
    for frame in read_pcap(TRACE):
        t = _five_tuple(frame)
        i = next((i for i, r in enumerate(rules) if _rule_matches(r, t)), len(rules))
        which.append(i)
        action = rules[i]["action"] if i < len(rules) else spec.get("default", "allow")
        denied.append(action == "deny")
    return labels, which, denied


def denied_among_first(n: int, denied: list[bool]) -> int:
    """Packets denied among the first n the port replays (the trace in a loop)."""
    q, r = divmod(n, len(denied))
    return q * sum(denied) + sum(denied[:r])


def sluice_cmd() -> list[str]:
    exe = ROOT / ".venv" / "bin" / "sluice"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "sluice"]


def _num(s: str) -> int:
    return int(s.replace(",", ""))


def test_demo_runs_end_to_end(node: str, tmp_path: Path) -> None:
    dep = yaml.safe_load((EXAMPLES / "demo.yaml").read_text())
    assert dep["ports"][0]["device"] == "net_pcap0,rx_pcap=traces/http-mix.pcap,infinite_rx=1"
    assert dep["nfs"][0]["args"] == ["--rules", "fw-rules.yaml"]
    dep["node"]["name"] = node
    dep["ports"][0]["device"] = f"net_pcap0,rx_pcap={TRACE},infinite_rx=1"
    dep["nfs"][0]["args"] = ["--rules", str(RULES)]
    path = tmp_path / "demo.yaml"
    path.write_text(yaml.safe_dump(dep))
    logs = tmp_path / "logs"

    env = {**os.environ, "COLUMNS": "200", "SLUICE_BUILD_DIR": str(build_dir())}
    try:
        r = subprocess.run([*sluice_cmd(), "up", str(path), "--duration", "3",
                            "--log-dir", str(logs)],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=90)
    finally:
        left = prefix_users(f"sluice_{node}")
        for pid in left:  # never leave a stray node behind for the other tests
            os.kill(pid, 9)
    out = r.stdout
    assert r.returncode == 0, f"exit {r.returncode}\n{out}\n{r.stderr}"
    assert left == [], f"processes of node {node} still running: {left}"
    alive = [d.name for d in Path("/proc").iterdir() if d.name.isdigit()
             and node.encode() in _cmdline(d)]
    assert alive == [], f"processes naming node {node} still running: {alive}"
    lines = out.splitlines()

    # The live table: its title, the ports and the three NFs, as rates.
    title = [ln for ln in lines if ln.startswith(f"node {node}: ")]
    assert len(title) == 1 and re.fullmatch(
        rf"node {node}: 3 s, 0 s left   \(in \S+, out \S+, dropped \S+\)", title[0]), out
    heads = [ln.split() for ln in lines if ln.strip().startswith(("port ", "NF "))]
    assert heads == [
        ["port", "in/s", "out/s", "drop/s", "stalls/s", "drops", "by", "reason"],
        ["NF", "in/s", "out/s", "drop/s", "ring", "cyc/pkt", "drops", "by", "reason"]], out
    rows = {ln.split()[0]: ln.split() for ln in lines if ln.startswith(" ") and ln.split()}
    assert rows["in"][2:4] == ["0", "0"] and len(rows["in"]) == 5, out  # out/s, drop/s, none
    assert rows["out"][1] == "0" and _si(rows["out"][2]) > 0 and len(rows["out"]) == 5, out
    nfs = {k.split("#")[0]: v for k, v in rows.items() if "#" in k}
    assert sorted(nfs) == ["firewall", "forward", "monitor"], out
    for name, row in nfs.items():
        assert _si(row[1]) > 0 and _si(row[2]) > 0, out
        assert re.fullmatch(r"\d+/\d+", row[4]) and len(row) == (7 if name == "firewall" else 6)
    assert nfs["monitor"][3] == nfs["forward"][3] == "0", out
    assert _si(nfs["firewall"][3]) > 0 and nfs["firewall"][6].startswith("nf_verdict="), out

    # The end summary: the stop drains first (rx.pause, then the chain
    # empties), so in = out + dropped exactly, nothing in flight, all dropped
    # by the firewall: as many as the rules deny among the packets read.
    i = lines.index(next(ln for ln in lines if ln.startswith("packets in: ")))
    m = re.fullmatch(r"packets in: ([\d,]+)   out: ([\d,]+)   dropped: ([\d,]+)", lines[i])
    assert m, out
    n_in, n_out, n_drop = _num(m[1]), _num(m[2]), _num(m[3])
    assert n_out > 0 and n_in == n_out + n_drop, out
    assert lines[i + 1:] == [f"  dropped nf_verdict: {m[3]}",
                             f"stopped; logs are in {logs}/"], out
    labels, which, denied = firewall_verdicts()
    assert sum(denied) == 248  # as nfs/firewall/README.md says of one pass
    assert n_drop == denied_among_first(n_in, denied), (n_in, n_drop)

    # The firewall's own counters at exit: it received every packet read
    # and nothing more; per rule, exactly what its rules give on the first
    # n_in packets of the looped trace.
    fw = (logs / "fw.log").read_text()
    end = re.search(r"^fw-counters: end packets=(\d+) allowed=(\d+) denied=(\d+)$", fw, re.M)
    assert end, fw
    got = int(end[1])
    assert (got, int(end[2]), int(end[3])) == (n_in, n_out, n_drop), (n_in, fw)
    q, rest = divmod(got, len(which))
    want = {lab: 0 for lab in labels}
    for k, idx in enumerate(which):
        want[labels[idx]] += q + (k < rest)
    counts = dict(re.findall(r"^fw-counter: rule=(\S+) .* packets=(\d+) bytes=\d+$", fw, re.M))
    assert {k: int(v) for k, v in counts.items()} == {**want, "non-ip": 0, "malformed": 0}, fw
    assert int(end[3]) == denied_among_first(got, denied)
    assert int(end[2]) + int(end[3]) == got


def _cmdline(d: Path) -> bytes:
    try:
        return (d / "cmdline").read_bytes()
    except OSError:
        return b""


def _si(cell: str) -> float:
    """'1.86M' -> 1.86e6 (the table's numbers)."""
    mult = {"k": 1e3, "M": 1e6, "G": 1e9}
    return float(cell[:-1]) * mult[cell[-1]] if cell[-1] in mult else float(cell)
