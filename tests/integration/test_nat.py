"""sluice-nat between two network namespaces on TAP ports of a real sluiced.

The inside namespace (10.61.1.2/24) reaches the outside one (10.61.2.1/24)
only through the NAT, whose pool is 10.61.9.0/29: curl downloads a file
from a python http.server outside (checked by sha256), iperf3 sends for a
few seconds, ping (also with 3,000-byte packets: fragments) and a UDP
datagram to a closed port (whose ICMP port unreachable must come back
translated: the inside socket sees ECONNREFUSED), and a port forward
(10.61.9.1:80 -> 10.61.1.2:8000) is reached from outside, also after a
SIGHUP with a bad file, and from inside (hairpinned: back in through
the NAT's own addresses). dumpcap in the outside namespace records every
frame: no inside address is ever on the outside wire, in an IP header or
in the header an ICMP error carries."""

from __future__ import annotations

import hashlib
import ipaddress
import json
import os
import re
import signal
from collections.abc import Iterator
from pathlib import Path

import netns
import pytest
from conftest import ASAN_BUILD, build_dir, deployment, needs_asan, prog, service, wait_until
from netns import Bg, ns_run, sh

INSIDE_NET = ipaddress.ip_network("10.61.1.0/24")
POOL = ipaddress.ip_network("10.61.9.0/29")
IN_ADDR, IN_GW = "10.61.1.2", "10.61.1.1"
OUT_ADDR = "10.61.2.1"
FORWARD = "10.61.9.1"

CONFIG = """\
pool: 10.61.9.0/29
ports:
  tcp: 20000-40000
  udp: 20000-40000
forwards:
  - proto: tcp
    outside: 10.61.9.1:80
    inside: 10.61.1.2:8000
"""


@pytest.fixture
def namespaces() -> Iterator[list[str]]:
    names = [f"sln{netns.tag()}{x}" for x in "ab"]  # inside, outside
    # An empty resolv.conf in the namespaces: no program asks the host's
    # name server, an address outside this test's, through the NAT.
    with netns.namespaces(names, resolv=True):
        yield names


@pytest.fixture
def bg() -> Iterator[Bg]:
    b = Bg()
    yield b
    b.stop_all()


def _setup_namespaces(namespaces: list[str], ifs: list[str]) -> None:
    inside, outside = namespaces
    macs = [netns.host(ns, i, a) for ns, i, a in zip(namespaces, ifs, (IN_ADDR, OUT_ADDR),
                                                       strict=True)]
    # NAT is a bump in the wire (it rewrites IP, not Ethernet): the inside
    # host's gateway and the outside host's route to the pool are the other
    # namespace's MAC, for good (no ARP, which would carry inside addresses).
    sh("ip", "-n", inside, "route", "add", "default", "via", IN_GW, "dev", ifs[0], "onlink")
    netns.neigh(inside, ifs[0], IN_GW, macs[1])
    sh("ip", "-n", outside, "route", "add", str(POOL), "dev", ifs[1])
    for a in POOL:
        netns.neigh(outside, ifs[1], str(a), macs[0])


def _listening(ns: str, addr: str) -> bool:
    return addr in ns_run(ns, "ss", "-Hltn", check=False).stdout


def _check_capture(pcap: Path) -> int:
    """Every frame on the outside wire is IPv4 and has no inside address,
    in its IP header or in the one an ICMP error carries (tshark lists
    every occurrence of ip.src and ip.dst); returns how many came from the
    pool."""
    r = sh("tshark", "-r", str(pcap), "-T", "fields", "-E", "separator=;", "-e", "frame.number",
           "-e", "eth.type", "-e", "ip.src", "-e", "ip.dst")
    from_pool = 0
    for line in r.stdout.splitlines():
        num, etype, srcs, dsts = line.split(";")
        assert etype == "0x0800", f"frame {num} is not IPv4: {line}"
        addrs = [ipaddress.ip_address(a) for a in (srcs + "," + dsts).split(",")]
        assert not [a for a in addrs if a in INSIDE_NET], f"frame {num}: {line}"
        from_pool += ipaddress.ip_address(srcs.split(",")[0]) in POOL
    return from_pool


def _fetch(ns: str, url: str, out: Path) -> str:
    r = ns_run(ns, "curl", "-sS", "--max-time", "20", "-o", str(out), url, check=False)
    assert r.returncode == 0, f"curl {url}: {r.stderr}"
    return hashlib.sha256(out.read_bytes()).hexdigest()


UDP_REFUSED = """\
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(5)
s.connect(("10.61.2.1", 9))
s.send(b"hello")
try:
    s.recv(100)
    print("no error")
except ConnectionRefusedError:
    print("refused")
except socket.timeout:
    print("timeout")
"""


@pytest.mark.parametrize("asan", [False, pytest.param(True, marks=needs_asan)],
                         ids=["release", "asan"])
def test_nat_between_namespaces(launch, node, namespaces, bg, tmp_path, asan):
    build = ASAN_BUILD if asan else build_dir()
    inside, outside = namespaces
    ifs = [f"{inside[:-1]}i", f"{inside[:-1]}o"]
    config = tmp_path / "nat.yaml"
    config.write_text(CONFIG)
    run = launch(deployment(
        node,
        ports=[{"name": "inside", "device": f"net_tap0,iface={ifs[0]}"},
               {"name": "outside", "device": f"net_tap1,iface={ifs[1]}"}],
        nfs=[{"name": "nat", "program": prog("nat", build), "service": "nat",
              "args": ["--config", str(config), "--inside", "inside", "--outside", "outside"]}],
        chain=["nat", "drop"]), build)
    (nat,) = run.nfs
    _setup_namespaces(namespaces, ifs)

    pcap = tmp_path / "outside.pcap"
    cap_log = tmp_path / "dumpcap.log"
    cap = bg.start(outside, "dumpcap", "-i", ifs[1], "-s", "128", "-P", "-w", str(pcap),
                   log=cap_log)
    wait_until(lambda: "Capturing on" in cap_log.read_text(), 15, "dumpcap to start")

    # The file outside, and another inside for the forward.
    web_out, web_in = tmp_path / "www-out", tmp_path / "www-in"
    web_out.mkdir()
    web_in.mkdir()
    blob = os.urandom(4 << 20)
    (web_out / "blob").write_bytes(blob)
    small = os.urandom(300_000)
    (web_in / "small").write_bytes(small)
    py = "/usr/bin/python3"
    bg.start(outside, py, "-m", "http.server", "8000", "--bind", OUT_ADDR,
             "--directory", str(web_out), log=tmp_path / "http-out.log")
    bg.start(inside, py, "-m", "http.server", "8000", "--bind", IN_ADDR,
             "--directory", str(web_in), log=tmp_path / "http-in.log")
    bg.start(outside, "iperf3", "-s", "-B", OUT_ADDR, "-p", "5201", "-1",
             log=tmp_path / "iperf-s.log")
    for ns, addr in ((outside, f"{OUT_ADDR}:8000"), (inside, f"{IN_ADDR}:8000"),
                     (outside, f"{OUT_ADDR}:5201")):
        wait_until(lambda ns=ns, addr=addr: _listening(ns, addr), 15, f"a server on {addr}")

    # Inside -> outside: ping, curl by sha256, iperf3, an ICMP error back.
    r = ns_run(inside, "ping", "-n", "-c", "3", "-i", "0.2", "-W", "2", OUT_ADDR, check=False)
    assert "3 packets transmitted, 3 received" in r.stdout, r.stdout + r.stderr
    # 3,000-byte pings: each request and reply is three IPv4 fragments.
    r = ns_run(inside, "ping", "-n", "-c", "2", "-i", "0.2", "-W", "2", "-s", "3000", OUT_ADDR,
               check=False)
    assert "2 packets transmitted, 2 received" in r.stdout, r.stdout + r.stderr
    got = _fetch(inside, f"http://{OUT_ADDR}:8000/blob", tmp_path / "blob.got")
    assert got == hashlib.sha256(blob).hexdigest()
    r = ns_run(inside, "iperf3", "-c", OUT_ADDR, "-p", "5201", "-t", "2", "-J",
               check=False, timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr
    res = json.loads(r.stdout)
    assert res["end"]["sum_received"]["bytes"] > 1 << 20, res["end"]
    r = ns_run(inside, py, "-c", UDP_REFUSED, check=False)
    assert r.stdout.strip() == "refused", r.stdout + r.stderr

    # Outside -> the forward.
    fwd_url = f"http://{FORWARD}/small"
    assert _fetch(outside, fwd_url, tmp_path / "small.got") == hashlib.sha256(small).hexdigest()

    # From inside to the forward's outside address: hairpinned back in.
    hp = _fetch(inside, fwd_url, tmp_path / "small-hp.got")
    assert hp == hashlib.sha256(small).hexdigest()

    # A bad file on SIGHUP: the configuration and the mappings stay.
    config.write_text(CONFIG.replace("proto: tcp", "proto: sctp"))
    run.kill(nat, signal.SIGHUP)
    wait_until(lambda: "reload failed" in nat.log.read_text(), 10, "the reload to fail")
    log = nat.log.read_text()
    assert ("sluice-nat: reload failed, keeping the current configuration (8 pool "
            "addresses, 1 forward) and the ") in log, log
    assert f"{config}:6: forward 1: 'proto': 'sctp' is not tcp or udp" in log, log
    assert _fetch(outside, fwd_url, tmp_path / "small2.got") == hashlib.sha256(small).hexdigest()

    bg.stop(cap, signal.SIGINT)
    st = run.stop()
    assert st is not None
    from_pool = _check_capture(pcap)
    assert from_pool > 1000, from_pool  # the capture saw the traffic

    log = nat.log.read_text()
    m = re.search(r"nat-stats: reason=exit .*", log)
    assert m, log
    counters = dict(kv.split("=") for kv in m.group(0).split()[2:])
    assert counters["icmp_errors"] == "1", m.group(0)
    assert int(counters["hairpins"]) > 10, m.group(0)
    # No drops but IPv6 that Linux may send before the interfaces are in
    # their namespaces (whose IPv6 is off).
    drops = {k: int(v) for k, v in counters.items() if k.startswith("drop_") and v != "0"}
    assert set(drops) <= {"drop_not_ipv4"}, m.group(0)
    nat_svc = service(st, "nat")
    assert nat_svc["drops"].get("nf_verdict", 0) == sum(drops.values()), nat_svc
