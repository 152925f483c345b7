"""The REST API and /metrics against a real sluiced: the numbers are sluiced's."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import httpx
import pytest
import yaml
from conftest import build_dir, deployment, port, prog, wait_drained, wait_until
from fastapi.testclient import TestClient
from packets import mixed, write
from prometheus_client.parser import text_string_to_metric_families

from sluice.api import create_app

# Counters that move while nothing flows (idle loops), so not compared exactly.
VOLATILE = {"sleeps", "stalls", "bursts", "rx_stalls", "cycles", "cycles_per_pkt"}


def _stable(v):
    if isinstance(v, dict):
        return {k: _stable(x) for k, x in v.items() if k not in VOLATILE}
    if isinstance(v, list):
        return [_stable(x) for x in v]
    return v


def _replayed_bytes(frames: list[bytes], n: int) -> int:
    """Bytes of the first n frames of a capture replayed in a loop."""
    return n // len(frames) * sum(map(len, frames)) + sum(map(len, frames[:n % len(frames)]))


def test_api_and_metrics_match_sluiced(launch, node, tmp_path):
    frames = mixed(200, flows=20)
    src = write(tmp_path / "in.pcap", frames)
    run = launch(deployment(
        node,
        ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src},infinite_rx=1"},
               {"name": "out", "device": "net_null0,no-rx=1"}],
        nfs=[{"name": "fwd", "program": prog("forward"), "service": "fwd"}],
        chain=["fwd", "port:out"]))
    api = TestClient(create_app(node, str(run.dep.socket_path())))

    assert api.get("/api/v1/status").json()["node"] == node
    assert api.get("/api/v1/chain").json()["hops"] == ["fwd", "port:out"]
    assert [p["name"] for p in api.get("/api/v1/ports").json()] == ["in", "out"]
    assert [(n["service"], n["state"]) for n in api.get("/api/v1/nfs").json()] == [
        ("fwd", "running")]
    wait_until(lambda: port(run.client.call("stats"), "out")["tx_pkts"] > 5000, 20, "traffic")

    # events: chain.set is announced to the subscriber (repeat until it has subscribed)
    got = {}
    t = threading.Thread(target=lambda: got.setdefault(
        "r", api.get("/api/v1/events?max_events=1")), daemon=True)
    t.start()
    deadline = time.monotonic() + 10
    while t.is_alive() and time.monotonic() < deadline:
        assert api.put("/api/v1/chain", json={"hops": ["fwd", "port:out"]}).status_code == 200
        t.join(0.2)
    assert not t.is_alive(), "no event within 10 s"
    data = [ln for ln in got["r"].text.splitlines() if ln.startswith("data: ")]
    ev = json.loads(data[0][6:])
    assert ev["kind"] == "chain.set" and ev["data"]["hops"] == ["fwd", "port:out"]

    assert api.post("/api/v1/rx/pause").json() == {"rx_enabled": False}
    wait_drained(run)
    r = api.get("/api/v1/stats")
    metrics = api.get("/metrics")
    st = run.client.call("stats")
    assert r.status_code == 200 and metrics.status_code == 200
    assert _stable(r.json()) == _stable(st)
    # How much of the replayed capture went through is a matter of timing
    # (more than the 5000 waited for); that all of it went out, is not.
    n_in = port(st, "in")["rx_pkts"]
    assert n_in > 5000
    assert (port(st, "out")["tx_pkts"], st["drops_total"]) == (n_in, 0), st
    assert port(st, "out")["tx_bytes"] == port(st, "in")["rx_bytes"] == _replayed_bytes(
        frames, n_in), st

    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for fam in text_string_to_metric_families(metrics.text) for s in fam.samples}
    for p in st["ports"]:
        lab = (("port", p["name"]),)
        assert samples[("sluice_port_rx_packets_total", lab)] == p["rx_pkts"]
        assert samples[("sluice_port_tx_packets_total", lab)] == p["tx_pkts"]
        assert samples[("sluice_port_rx_bytes_total", lab)] == p["rx_bytes"]
        assert samples[("sluice_port_tx_bytes_total", lab)] == p["tx_bytes"]
        for reason, v in p["drops"].items():
            assert samples[("sluice_port_drops_total", (("port", p["name"]),
                                                        ("reason", reason)))] == v
    (n,) = st["nfs"]
    lab = (("instance", str(n["instance"])), ("service", "fwd"))
    assert samples[("sluice_nf_rx_packets_total", lab)] == n["rx_pkts"] == n_in
    assert samples[("sluice_nf_tx_packets_total", lab)] == n["tx_pkts"] == n_in
    assert samples[("sluice_nf_ring_occupancy", lab)] == 0
    (s,) = st["services"]
    assert samples[("sluice_service_rx_packets_total", (("service", "fwd"),))] == s["rx_pkts"]
    assert samples[("sluice_drops_total", ())] == st["drops_total"]

    r = api.post("/api/v1/nfs/99/stop")
    assert (r.status_code, r.json()) == (404, {
        "detail": "no running NF instance 99; `GET /api/v1/nfs` shows them"})
    assert api.post("/api/v1/rx/resume").json() == {"rx_enabled": True}


def test_sluice_up_serves_the_api_while_it_runs(node, tmp_path):
    src = write(tmp_path / "in.pcap", mixed(200, flows=20))
    dep = tmp_path / "dep.yaml"
    dep.write_text(yaml.safe_dump(deployment(
        node,
        ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src},infinite_rx=1"},
               {"name": "out", "device": "net_null0,no-rx=1"}],
        nfs=[{"name": "fwd", "program": prog("forward"), "service": "fwd"}],
        chain=["fwd", "port:out"])))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        api_port = s.getsockname()[1]
    url = f"http://127.0.0.1:{api_port}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "sluice.cli", "up", str(dep), "--duration", "60",
         "--log-dir", str(tmp_path / "run"), "--api", f"127.0.0.1:{api_port}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "SLUICE_BUILD_DIR": str(build_dir()), "SLUICE_API_TOKEN": "",
             "COLUMNS": "200"})
    try:
        def status():
            assert proc.poll() is None, proc.communicate()[0]
            try:
                return httpx.get(f"{url}/api/v1/status", timeout=2).json()
            except httpx.TransportError:
                return None

        assert wait_until(status, 30, "the API of sluice up")["node"] == node

        def out_pkts():
            r = httpx.get(f"{url}/metrics", timeout=2)
            line = next((ln for ln in r.text.splitlines()
                         if ln.startswith('sluice_port_tx_packets_total{port="out"}')), None)
            return line and float(line.split()[-1]) > 1000

        wait_until(out_pkts, 20, "packets counted in /metrics")
        page = httpx.get(f"{url}/", timeout=5)
        assert page.status_code == 200 and "dashboard.js" in page.text, page.text[:200]
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            out = proc.communicate(timeout=30)[0]
        except subprocess.TimeoutExpired:
            proc.kill()
            out = proc.communicate()[0]
    assert proc.returncode == 130, out  # stopped by SIGINT (docs/deployment.md)
    lines = [ln.rstrip() for ln in out.splitlines()]
    assert "sluice up: stopped by SIGINT (Ctrl-C); exit status 130" in lines, out
    assert f"API: {url}/api/v1/status, metrics at {url}/metrics, dashboard at {url}/" in lines, out
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{url}/api/v1/status", timeout=2)
