"""Live Linux traffic: two network namespaces, each holding one of
sluiced's TAP interfaces, ping each other through a chain of NFs."""

from __future__ import annotations

import os
import re
import subprocess

import pytest
from conftest import deployment, prog, service


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, check=check, timeout=60)


@pytest.fixture
def namespaces():
    tag = f"{os.getpid() % 100000}"
    names = [f"slt{tag}a", f"slt{tag}b"]
    for ns in names:
        sh("ip", "netns", "add", ns)
    yield names
    for ns in names:
        sh("ip", "netns", "del", ns, check=False)


def test_two_namespaces_ping_through_a_chain(launch, node, namespaces):
    ifs = [f"{ns}i" for ns in namespaces]  # 13 characters, under IFNAMSIZ
    run = launch(deployment(
        node,
        ports=[{"name": "left", "device": f"net_tap0,iface={ifs[0]}"},
               {"name": "right", "device": f"net_tap1,iface={ifs[1]}"}],
        nfs=[{"name": "mon", "program": prog("monitor"), "service": "monitor",
              "args": ["--interval", "0"]},
             {"name": "br", "program": prog("forward"), "service": "bridge",
              "args": ["--bridge", "left,right"]}],
        chain=["monitor", "bridge", "drop"]))
    for i, (ns, ifname) in enumerate(zip(namespaces, ifs, strict=True)):
        sh("ip", "link", "set", ifname, "netns", ns)
        sh("ip", "-n", ns, "addr", "add", f"10.99.0.{i + 1}/24", "dev", ifname)
        sh("ip", "-n", ns, "link", "set", ifname, "up")
        sh("ip", "-n", ns, "link", "set", "lo", "up")
    # While an interface moves to its namespace it is down: a packet sent
    # to it then (IPv6 neighbour discovery of the other side) fails and is
    # counted as tx_full. Count from here on.
    before = run.client.call("stats")["drops_total"]
    r = sh("ip", "netns", "exec", namespaces[0], "ping", "-c", "5", "-i", "0.2", "-W", "2",
           "10.99.0.2", check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"5 packets transmitted, 5 received", r.stdout)
    st = run.client.call("stats")
    ports = {p["name"]: p for p in st["ports"]}
    # 5 echo requests one way, 5 replies the other, plus ARP (and maybe IPv6 noise).
    assert ports["left"]["rx_pkts"] >= 6 and ports["right"]["rx_pkts"] >= 6
    assert ports["left"]["tx_pkts"] >= 6 and ports["right"]["tx_pkts"] >= 6
    br = service(st, "bridge")
    assert br["rx_pkts"] == ports["left"]["rx_pkts"] + ports["right"]["rx_pkts"]
    nonzero = {(p["name"], k): v for p in st["ports"] + st["services"]
               for k, v in p["drops"].items() if v}
    assert st["drops_total"] == before, nonzero
