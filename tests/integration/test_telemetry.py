"""sluiced's DPDK telemetry commands (/sluice/...) against the control
socket's `stats`: after a finite capture has gone through, every number is
the same, read over the raw telemetry socket and with dpdk-telemetry.py."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import deployment, port, prog, service, wait_drained
from packets import flow_of, mixed, write

from sluice.runtime.client import RpcError

TELEMETRY_PY = "/usr/bin/dpdk-telemetry.py"  # Debian's dpdk-dev (scripts/setup.sh)
# Counters that move while nothing flows (idle loops), so not compared exactly.
VOLATILE = {"sleeps", "stalls", "bursts", "rx_stalls", "cycles", "cycles_per_pkt"}


class Telemetry:
    """A client of DPDK's telemetry socket (v2: SOCK_SEQPACKET, JSON)."""

    def __init__(self, path: Path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.settimeout(10)
        self.sock.connect(str(path))
        self.greeting = json.loads(self.sock.recv(1024))
        self.max_len = self.greeting["max_output_len"]

    def __call__(self, cmd: str) -> Any:
        self.sock.send(cmd.encode())
        reply = json.loads(self.sock.recv(self.max_len))
        name = cmd.split(",", 1)[0]
        assert list(reply) == [name], reply
        return reply[name]

    def close(self) -> None:
        self.sock.close()


def _telemetry_view(obj: dict[str, Any], nested: bool) -> dict[str, Any]:
    """What telemetry.c makes of a stats object (its comment says how):
    reals left out, VOLATILE too; at the top an object stays an object; in a
    list entry drops become their sum, {a, b} k_a and k_b, arrays n_k."""
    out: dict[str, Any] = {}
    for k, v in obj.items():
        if k in VOLATILE or isinstance(v, float) or v is None:
            continue
        if isinstance(v, bool):
            out[k] = int(v)
        elif isinstance(v, dict):
            if not nested:
                out[k] = _telemetry_view(v, True)
            elif k == "drops":
                out[k] = sum(v.values())
            else:
                out.update({f"{k}_{sk}": sv for sk, sv in v.items() if isinstance(sv, int)})
        elif isinstance(v, list):
            if nested:
                out[f"n_{k}"] = len(v)
            else:
                out[k] = v
        else:
            out[k] = v
    return out


def _stable(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k not in VOLATILE}


def _strip(v: Any) -> Any:
    """A telemetry reply (or part) without the VOLATILE counters, at any depth."""
    if isinstance(v, dict):
        return {k: _strip(x) for k, x in v.items() if k not in VOLATILE}
    return v


def test_telemetry_matches_stats(launch, node, tmp_path):
    frames = mixed(600, flows=30, seed=9)
    udp = [f for f in frames if flow_of(f)[1] == "UDP"]
    rest = [f for f in frames if flow_of(f)[1] != "UDP"]
    assert udp and rest
    src = write(tmp_path / "in.pcap", frames)  # finite: traffic stops
    dep = deployment(
        node,
        ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src}"},
               {"name": "out", "device": f"net_pcap1,tx_pcap={tmp_path / 'out.pcap'}"}],
        nfs=[{"name": "a", "program": prog("forward"), "service": "a"},
             {"name": "b", "program": prog("forward"), "service": "b"}],
        chain=["a", "port:out"])
    # UDP goes to a graph whose node b drops by default: drops with a reason.
    dep["graphs"] = [{"name": "sink", "nodes": {"b": ["drop", "port:out"]},
                      "match": [{"priority": 1, "proto": "udp"}]}]
    run = launch(dep)
    st = wait_drained(run)
    assert port(st, "in")["rx_pkts"] == len(frames)
    assert port(st, "out")["tx_pkts"] == len(rest)
    assert service(st, "b")["drops"]["graph_drop"] == len(udp)
    status = run.client.call("status")

    path = Path(f"/var/run/dpdk/sluice_{node}/dpdk_telemetry.v2")
    assert path.exists(), f"no telemetry socket at {path}"
    tel = Telemetry(path)
    try:
        assert tel.greeting["pid"] == status["pid"]
        commands = tel("/")
        for c in ["/sluice/stats", "/sluice/ports", "/sluice/port", "/sluice/nfs",
                  "/sluice/nf", "/sluice/services", "/sluice/service", "/sluice/flows",
                  "/sluice/edges"]:
            assert c in commands, c
        assert tel("/help,/sluice/port") == {
            "/sluice/port": "One port's counters and drops by reason. Parameter: port id "
                            "or name"}
        got = {c: tel(c) for c in ["/sluice/stats", "/sluice/ports", "/sluice/nfs",
                                   "/sluice/services", "/sluice/flows", "/sluice/edges"]}
        for p in st["ports"]:
            got[f"port {p['name']}"] = tel(f"/sluice/port,{p['name']}")
            got[f"port {p['id']}"] = tel(f"/sluice/port,{p['id']}")
        for n in st["nfs"]:
            got[f"nf {n['instance']}"] = tel(f"/sluice/nf,{n['instance']}")
        for s in st["services"]:
            got[f"service {s['name']}"] = tel(f"/sluice/service,{s['name']}")
        bad = {c: tel(c) for c in ["/sluice/port,nope", "/sluice/nf,999", "/sluice/service",
                                   "/sluice/service,zz"]}
    finally:
        tel.close()
    got = {k: _strip(v) for k, v in got.items()}
    # Read again after telemetry: nothing moved, so everything must be equal.
    st2 = run.client.call("stats")
    assert _stable_all(st2) == _stable_all(st)
    _check_schema(run, st)

    ports, nfs, svcs = st["ports"], st["nfs"], st["services"]
    assert got["/sluice/stats"] == {
        "node": node, "tsc_hz": st["tsc_hz"], "drops_total": st["drops_total"],
        "rx_pkts": sum(p["rx_pkts"] for p in ports), "tx_pkts": sum(p["tx_pkts"] for p in ports),
        "rx_bytes": sum(p["rx_bytes"] for p in ports),
        "tx_bytes": sum(p["tx_bytes"] for p in ports),
        "n_ports": len(ports), "n_nfs": len(nfs), "n_services": len(svcs),
        "flows": _strip(st["flows"])}
    assert got["/sluice/stats"]["rx_pkts"] == len(frames)
    assert got["/sluice/stats"]["drops_total"] == len(udp)
    assert got["/sluice/flows"] == _strip(st["flows"])
    assert st["flows"]["created"] == len({flow_of(f) for f in frames})
    assert got["/sluice/ports"] == {str(p["id"]): _telemetry_view(p, True) for p in ports}
    assert got["/sluice/nfs"] == {str(n["instance"]): _telemetry_view(n, True) for n in nfs}
    assert got["/sluice/services"] == {str(s["id"]): _telemetry_view(s, True) for s in svcs}
    assert got["/sluice/edges"] == {str(i): e for i, e in enumerate(st["edges"])}
    for p in ports:
        assert got[f"port {p['name']}"] == got[f"port {p['id']}"] == _telemetry_view(p, False)
    for n in nfs:
        assert got[f"nf {n['instance']}"] == _telemetry_view(n, False)
    for s in svcs:
        assert got[f"service {s['name']}"] == _telemetry_view(s, False)
    b = got["service b"]
    assert b["drops"]["graph_drop"] == len(udp) and b["rx_pkts"] == len(udp)
    assert got["port in"]["rx_pkts"] == len(frames)
    assert got["port out"]["tx_pkts"] == len(rest)
    assert got["port out"]["tx_bytes"] == sum(map(len, rest))
    assert bad == {
        "/sluice/port,nope": "no port 'nope'; /sluice/ports lists them",
        "/sluice/nf,999": "no NF instance '999'; /sluice/nfs lists them",
        "/sluice/service": "give the service: /sluice/service,<id|name>; /sluice/services "
                           "lists them",
        "/sluice/service,zz": "no service 'zz'; /sluice/services lists them"}

    # DPDK's own client reads the same (non-interactive: one JSON line a command).
    assert os.path.exists(TELEMETRY_PY), (
        f"{TELEMETRY_PY} is missing: install Debian's dpdk-dev (scripts/setup.sh does)")
    out = subprocess.run(
        [shutil.which("python3") or "python3", TELEMETRY_PY, "-f", f"sluice_{node}"],
        input="/sluice/stats\n/sluice/port,out\n", capture_output=True, text=True,
        timeout=60, check=True).stdout.splitlines()
    assert [_strip(json.loads(ln)) for ln in out] == [
        {"/sluice/stats": got["/sluice/stats"]}, {"/sluice/port": got["port out"]}]


def _check_schema(run: Any, st: dict[str, Any]) -> None:
    """`stats {"schema": true}` describes every field of `stats`, in its order."""
    sc = run.client.call("stats", schema=True)
    assert sc["root"] == "node"
    tables = sc["tables"]
    assert list(tables) == ["node", "port", "nf", "service", "flows", "edge"]

    def names(t: str) -> list[str]:
        return [f["name"] for f in tables[t]]

    assert names("node") == list(st)
    for key, t in [("ports", "port"), ("nfs", "nf"), ("services", "service"),
                   ("edges", "edge")]:
        assert st[key], key
        for row in st[key]:
            assert list(row) == names(t), (key, row)
    assert list(st["flows"]) == names("flows")
    node = {f["name"]: f for f in tables["node"]}
    assert node["ports"] == {"name": "ports", "kind": "list", "unit": "",
                             "help": "every port", "table": "port"}
    assert node["flows"]["kind"] == "object" and node["flows"]["table"] == "flows"
    assert node["drops"] == {
        "name": "drops", "kind": "counter", "type": "object", "unit": "packets",
        "help": "drops_total by reason", "keys": list(st["drops"])}
    port_f = {f["name"]: f for f in tables["port"]}
    assert port_f["rx_pkts"] == {"name": "rx_pkts", "kind": "counter", "type": "integer",
                                 "unit": "packets",
                                 "help": "packets received from the port"}
    assert port_f["name"]["kind"] == "label" and port_f["name"]["type"] == "string"
    nf_f = {f["name"]: f for f in tables["nf"]}
    assert nf_f["rx_ring"]["kind"] == "gauge" and nf_f["rx_ring"]["keys"] == ["count", "size"]
    assert nf_f["cycles_per_pkt"]["type"] == "number"
    flow_f = {f["name"]: f for f in tables["flows"]}
    assert flow_f["lookup"]["values"] == ["off", "cached", "naive"]
    assert flow_f["live"]["kind"] == "gauge" and flow_f["created"]["kind"] == "counter"
    for fields in tables.values():
        for f in fields:
            assert f["kind"] in ("label", "counter", "gauge", "list", "object"), f
            assert f["help"], f
    # false is the plain reply; anything else but a boolean is refused
    assert list(run.client.call("stats", schema=False)) == list(st)
    with pytest.raises(RpcError) as e:
        run.client.call("stats", schema=1)
    assert (e.value.code, e.value.message) == (-32602, "param 'schema' must be true or false")


def _stable_all(st: dict[str, Any]) -> dict[str, Any]:
    return {k: ([_stable(x) for x in v] if k in ("ports", "nfs") else v)
            for k, v in st.items()}
