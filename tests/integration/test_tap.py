"""Live Linux traffic: two network namespaces, each holding one of
sluiced's TAP interfaces, ping each other through a chain of NFs."""

from __future__ import annotations

import netns
import pytest
from conftest import deployment, port, prog, service
from netns import sh


@pytest.fixture
def namespaces():
    names = [f"slt{netns.tag()}{x}" for x in "ab"]
    with netns.namespaces(names):
        yield names


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
    addrs = [f"10.99.0.{i + 1}" for i in range(2)]
    # No IPv6 in the namespace (its interface gets the namespace's
    # default), so Linux sends nothing of its own there (no neighbour
    # discovery, no MLD); IPv4 multicast has nothing to report either.
    # Each side knows the other's address for good: no ARP either. The
    # pings are then the only packets on the wire.
    netns.wire_pair(namespaces, ifs, (addrs[0], addrs[1]))
    # While an interface moves to its namespace it is down: a packet sent
    # to it then (IPv6 neighbour discovery of the other side, from before
    # the move) fails and is counted as tx_full. Count from here on.
    before = run.client.call("stats")
    r = sh("ip", "netns", "exec", namespaces[0], "ping", "-c", "5", "-i", "0.2", "-W", "2",
           addrs[1], check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "5 packets transmitted, 5 received, 0% packet loss" in r.stdout, r.stdout
    st = run.client.call("stats")

    def moved(name: str) -> tuple[int, int, int, int]:
        a, b = port(before, name), port(st, name)
        return tuple(b[k] - a[k] for k in ("rx_pkts", "rx_bytes", "tx_pkts", "tx_bytes"))

    # 5 echo requests left -> right, 5 replies right -> left: 98-byte frames
    # (14 Ethernet + 20 IPv4 + 8 ICMP + 56 data).
    assert moved("left") == (5, 5 * 98, 5, 5 * 98), (before, st)
    assert moved("right") == (5, 5 * 98, 5, 5 * 98), (before, st)
    for name in ("monitor", "bridge"):
        a, b = service(before, name), service(st, name)
        assert (b["rx_pkts"] - a["rx_pkts"], b["tx_pkts"] - a["tx_pkts"]) == (10, 10), name
    br = service(st, "bridge")
    ports = {p["name"]: p for p in st["ports"]}
    assert br["rx_pkts"] == ports["left"]["rx_pkts"] + ports["right"]["rx_pkts"]
    nonzero = {(p["name"], k): v for p in st["ports"] + st["services"]
               for k, v in p["drops"].items() if v}
    assert st["drops_total"] == before["drops_total"], nonzero
