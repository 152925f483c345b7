"""An operator's views of one node agree: the control socket's stats,
`sluice stats --json`, `sluice top --json`, /metrics and DPDK telemetry, with
rx paused and drained (in = out + drops exactly), with 20 and 90 instances of
a service (a telemetry list too long for one reply says what it left out),
and `sluice top` says when the node stops."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from conftest import wait_drained
from fastapi.testclient import TestClient
from test_telemetry import Telemetry, _telemetry_view
from test_top_live import _node  # the same node: firewall -> forward -> out

from sluice.api import create_app
from sluice.top import rates


def _cli(run, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sluice.cli", *args, "--socket", str(run.dep.socket_path())],
        capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "200"})


def _scale(run, n: int) -> None:
    # nf.scale answers once it has started every new replica: 70 of them
    # took 3.4-4.5 s here (a fork each), at the edge of the client's
    # default 5 s, and failed one run in three.
    timeout, run.client.timeout = run.client.timeout, 30.0
    try:
        run.client.call("nf.scale", service="firewall", replicas=n)
    finally:
        run.client.timeout = timeout
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        nfs = [x for x in run.client.call("stats")["nfs"] if x["service"] == "firewall"]
        if len(nfs) == n and all(x["state"] == "running" for x in nfs):
            return
        time.sleep(0.3)
    raise AssertionError(f"firewall did not reach {n} running instances")


VOLATILE = {"sleeps", "stalls", "bursts", "rx_stalls", "cycles", "cycles_per_pkt"}


def _still(st):
    return {k: ([{a: b for a, b in x.items() if a not in VOLATILE} for x in v]
                if k in ("ports", "nfs") else v) for k, v in st.items()}


def test_views_agree_with_many_instances(launch, node, tmp_path):
    run = _node(launch, node, tmp_path)
    _scale(run, 20)
    time.sleep(1)
    assert run.client.call("rx.pause") == {"rx_enabled": False}
    st = wait_drained(run)
    ports = {p["name"]: p for p in st["ports"]}
    assert ports["in"]["rx_pkts"] == ports["out"]["tx_pkts"] + st["drops_total"] > 0
    assert sum(st["drops"].values()) == st["drops_total"] == st["drops"]["nf_verdict"] > 0

    cli = json.loads(_cli(run, "stats", "--json").stdout)
    assert _still(cli) == _still(st)
    with TestClient(create_app(node, str(run.dep.socket_path()))) as api:
        assert _still(api.get("/api/v1/stats").json()) == _still(st)
        text = api.get("/metrics").text
    samples = {ln.rsplit(" ", 1)[0]: float(ln.rsplit(" ", 1)[1])
               for ln in text.splitlines() if ln and not ln.startswith("#")}
    assert samples['sluice_port_rx_packets_total{port="in"}'] == ports["in"]["rx_pkts"]
    assert samples['sluice_port_tx_packets_total{port="out"}'] == ports["out"]["tx_pkts"]
    assert samples["sluice_drops_total"] == st["drops_total"]
    assert len([k for k in samples if k.startswith("sluice_nf_running{")]) == 21
    top = [json.loads(ln) for ln in
           _cli(run, "top", "--json", "--iterations", "1", "--interval", "0.3").stdout.splitlines()]
    assert [(d["reason"], d["total"], d["pps"]) for d in top[0]["drops"]] == [
        ("nf_verdict", st["drops"]["nf_verdict"], 0.0)]
    assert all(p["rx_pps"] == p["tx_pps"] == 0.0 for p in top[0]["ports"])
    assert len(top[0]["nfs"]) == 21

    # 90 firewall instances: /sluice/nfs no longer fits in one reply
    _scale(run, 90)
    st = run.client.call("stats")
    tel = Telemetry(Path(f"/var/run/dpdk/sluice_{node}/dpdk_telemetry.v2"))
    try:
        nfs = tel("/sluice/nfs")
        more = nfs.pop("more")
        listed = len(nfs)
        assert 0 < listed < 91
        assert more == (f"{91 - listed} of 91 NF instances left out (a reply holds 16 KiB): "
                        "ask /sluice/nf,<instance> for each")
        by_id = {str(n["instance"]): n for n in st["nfs"]}
        for i, got in nfs.items():
            want = _telemetry_view(by_id[i], True)
            assert {k: v for k, v in got.items() if k not in VOLATILE} == \
                {k: v for k, v in want.items() if k not in VOLATILE}
        rest = [i for i in by_id if i not in nfs]
        assert len(rest) == 91 - listed
        assert tel(f"/sluice/nf,{rest[-1]}")["instance"] == int(rest[-1])
        assert tel("/sluice/stats")["n_nfs"] == 91
        assert "more" not in tel("/sluice/services")
    finally:
        tel.close()


def test_top_says_when_the_node_stops(launch, node, tmp_path):
    run = _node(launch, node, tmp_path)
    top = subprocess.Popen(
        [sys.executable, "-m", "sluice.cli", "top", "--interval", "0.3",
         "--socket", str(run.dep.socket_path())],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(2)
        run.stop()
        out, err = top.communicate(timeout=30)
    finally:
        if top.poll() is None:
            top.kill()
            top.wait(10)
    assert top.returncode == 1, (out, err)
    assert "rates over" in out
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"sluice top: node {node} stopped answering at "), err
    assert lines[0].endswith("; the last frame above is its last read; "
                             f"`sluice status --node {node}` says whether it runs again"), err


def test_top_counts_the_drops_of_instances_gone() -> None:
    def st(k: int, live: bool) -> dict:
        nfs = [{"instance": 1, "service": "fw", "state": "running", "rx_pkts": 10 * k,
                "tx_pkts": 9 * k, "drops": {"nf_verdict": k}}]
        if live:
            nfs.append({"instance": 2, "service": "fw", "state": "running",
                        "rx_pkts": 50, "tx_pkts": 45, "drops": {"nf_verdict": 5}})
        return {"ports": [], "nfs": nfs, "drops_total": k + 5,
                "drops": {"nf_verdict": k + 5, "ring_full": 0},
                "services": [{"name": "fw", "drops": {"nf_verdict": k + 5}}]}

    # instance 2 (5 drops) left between the reads: the total does not go back
    r = rates(st(10, True), st(12, False), 1.0)
    assert r["drops"] == [{"reason": "nf_verdict", "total": 17, "pps": 2.0,
                           "where": ["fw#1", "fw (instances gone)"]}]
