"""`sluice top` against a real sluiced with traffic: the columns, rates > 0
on ports, NF instances and edges, a drop reason, JSON frames, and the live
view on a terminal."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time

from conftest import deployment, prog

from sluice.runtime.traces import generate

UNITS = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9}


def num(s: str) -> float:
    m = re.fullmatch(r"([\d.]+)([kMG]?)", s)
    assert m, f"not a number as sluice top prints them: {s!r}"
    return float(m.group(1)) * UNITS[m.group(2)]


def _node(launch, node, tmp_path):
    src = tmp_path / "in.pcap"
    generate(src, packets=4096, flows=256)
    rules = tmp_path / "fw.yaml"
    rules.write_text("default: allow\nrules:\n  - {name: no-udp, action: deny, proto: udp}\n")
    return launch(deployment(
        node,
        ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src},infinite_rx=1"},
               {"name": "out", "device": "net_null0,no-rx=1"}],
        nfs=[{"name": "fw", "program": prog("firewall"), "service": "firewall",
              "args": ["--rules", str(rules)]},
             {"name": "fwd", "program": prog("forward"), "service": "forward"}],
        chain=["firewall", "forward", "port:out"]))


def _top(run, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sluice.cli", "top", "--socket", str(run.dep.socket_path()),
         *args], capture_output=True, text=True, timeout=120,
        env={**os.environ, "COLUMNS": "200"})


def test_top_once_shows_the_rates(launch, node, tmp_path):
    run = _node(launch, node, tmp_path)
    r = _top(run, "--once")
    assert r.returncode == 0 and r.stderr == "", r
    lines = [ln.strip() for ln in r.stdout.splitlines() if ln.strip()]
    assert re.fullmatch(rf"sluice top: node {node} \({re.escape(str(run.dep.socket_path()))}\)"
                        rf" at \d\d:\d\d:\d\d, rates over \d+\.\d\d s", lines[0]), lines[0]
    heads = [ln.split() for ln in lines
             if ln.startswith(("port ", "NF ", "edge from", "drop reason"))]
    assert heads == [
        ["port", "in", "pkt/s", "out", "pkt/s", "drop/s", "in", "bit/s", "out", "bit/s"],
        ["NF", "state", "in", "pkt/s", "out", "pkt/s", "drop/s", "ring", "ring", "%",
         "cyc/pkt"],
        ["edge", "from", "to", "pkt/s", "bit/s", "packets"],
        ["drop", "reason", "per", "s", "total", "where"]], r.stdout
    rows = {tuple(ln.split()[:2]): ln.split() for ln in lines if not ln.startswith("─")}
    port_in = next(v for k, v in rows.items() if k[0] == "in")
    assert num(port_in[1]) > 0 and num(port_in[4]) > 0, port_in          # pkt/s, bit/s in
    port_out = next(v for k, v in rows.items() if k[0] == "out")
    assert num(port_out[2]) > 0, port_out
    for svc in ("firewall", "forward"):
        nf = next(v for k, v in rows.items() if k[0].startswith(svc + "#"))
        assert nf[1] == "running" and num(nf[2]) > 0 and num(nf[3]) > 0, nf
        assert re.fullmatch(r"\d+/\d+", nf[5]), nf
    for a, b in [("port:in", "firewall"), ("firewall", "forward"), ("forward", "port:out")]:
        e = rows[(a, b)]
        assert num(e[2]) > 0 and num(e[4]) > 0, e
    drop = next(v for k, v in rows.items() if k[0] == "nf_verdict")
    assert num(drop[1]) > 0 and num(drop[2]) > 0 and drop[3].startswith("firewall#"), drop


def test_top_json_frames(launch, node, tmp_path):
    run = _node(launch, node, tmp_path)
    r = _top(run, "--iterations", "2", "--interval", "0.5", "--json")
    assert r.returncode == 0, r
    frames = [json.loads(ln) for ln in r.stdout.splitlines()]
    assert len(frames) == 2
    for f in frames:
        assert 0.3 < f["dt"] < 30
        ports = {p["name"]: p for p in f["ports"]}
        assert ports["in"]["rx_pps"] > 0 and ports["out"]["tx_pps"] > 0
        edges = {(e["from"], e["to"]): e for e in f["edges"]}
        assert set(edges) == {("port:in", "firewall"), ("firewall", "forward"),
                              ("forward", "port:out")}, edges
        assert all(e["pps"] > 0 for e in edges.values()), edges
        assert {n["service"] for n in f["nfs"]} == {"firewall", "forward"}
        assert all(0 <= n["ring"] <= n["ring_size"] for n in f["nfs"])
        assert [d["reason"] for d in f["drops"]] == ["nf_verdict"], f["drops"]
    # later frame, more packets on each edge
    before = {(e["from"], e["to"]): e["pkts"] for e in frames[0]["edges"]}
    assert all(e["pkts"] > before[(e["from"], e["to"])] for e in frames[1]["edges"])


def test_top_live_on_a_terminal(launch, node, tmp_path):
    run = _node(launch, node, tmp_path)
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "sluice.cli", "top", "--socket", str(run.dep.socket_path()),
         "--interval", "0.3"], stdin=slave, stdout=slave, stderr=slave,
        env={**os.environ, "TERM": "xterm", "COLUMNS": "200", "LINES": "60"})
    os.close(slave)
    out = b""
    try:
        deadline = time.monotonic() + 60
        # three frames drawn in place (rich Live moves the cursor up between them)
        while out.count(b"rates over") < 3 and time.monotonic() < deadline:
            if select.select([master], [], [], 1)[0]:
                try:
                    out += os.read(master, 65536)
                except OSError:
                    break
        text = out.decode(errors="replace")
        assert text.count("rates over") >= 3, text[-3000:]
        assert "Ctrl-C stops" in text and "edge from" in text
        assert "\x1b[?25l" in text and "\x1b[1A" in text  # Live: cursor hidden, moved up
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        os.close(master)
