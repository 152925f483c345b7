"""Two Sluice gateways (two sluiced nodes, each with sluice-vpn) carry real
TCP between two network namespaces through an ESP tunnel: a curl download
checked by sha256 and a few seconds of iperf3. The namespaces send plain
traffic (this kernel has no ESP); the "wire" between the gateways is a
veth pair, each end a net_af_packet port, and a capture on it shows only
ESP, never the payload in clear.

    nsA 10.64.1.1 --tap-- [gw A: vpn] --veth wire-- [gw B: vpn] --tap-- nsB 10.64.2.1
                          10.64.9.1       (ESP)      10.64.9.2
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import (
    ASAN_BUILD,
    assert_no_sanitizer_report,
    build_dir,
    deployment,
    needs_asan,
    prog,
    wait_until,
)
from packets import read
from scapy.layers.inet import IP
from scapy.layers.l2 import Ether

from sluice.runtime.launch import hugetlbfs_mounts

K_AB = "0x" + "11" * 32 + "a1a2a3a4"  # A -> B, AES-256-GCM
K_BA = "0x" + "22" * 32 + "b1b2b3b4"  # B -> A
GW_A, GW_B = "10.64.9.1", "10.64.9.2"
MAC = {"nsA": "02:64:00:00:01:01", "gwA-lan": "02:64:00:00:01:fe",
       "nsB": "02:64:00:00:02:01", "gwB-lan": "02:64:00:00:02:fe",
       "gwA-wire": "02:64:00:00:09:01", "gwB-wire": "02:64:00:00:09:02"}
MARKER = b"PLAINTEXT-MARKER-0123456789"


def sa_file(me: str) -> str:
    """The SA file of gateway me ('A' or 'B')."""
    a = me == "A"
    local, remote = (GW_A, GW_B) if a else (GW_B, GW_A)
    out_spi, in_spi = (0x1001, 0x2002) if a else (0x2002, 0x1001)
    out_key, in_key = (K_AB, K_BA) if a else (K_BA, K_AB)
    mine, peer, inside = (("A", "B", "10.64.1.0/24") if a else ("B", "A", "10.64.2.0/24"))
    other = "10.64.2.0/24" if a else "10.64.1.0/24"
    ep = f"local {local} remote {remote} cipher aes256-gcm16"
    # B -> A (the download's direction) with 64-bit sequence numbers
    out_esn, in_esn = ("", " esn") if a else (" esn", "")
    return (
        f"# gateway {mine}\n"
        f"sa out spi {out_spi:#x} {ep} key {out_key}{out_esn} port wire"
        f" eth-src {MAC[f'gw{mine}-wire']} eth-dst {MAC[f'gw{peer}-wire']}\n"
        f"sa in spi {in_spi:#x} {ep} key {in_key}{in_esn} port lan"
        f" eth-src {MAC[f'gw{mine}-lan']} eth-dst {MAC[f'ns{mine}']}"
        f" inner-src {other} inner-dst {inside}\n"
        f"policy src {inside} dst {other} sa {out_spi:#x}\n")


def sh(*args: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
    r = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError(f"{' '.join(args)}: exit {r.returncode}\n{r.stdout}{r.stderr}")
    return r


@pytest.fixture
def net() -> Iterator[dict[str, str]]:
    """Two namespaces and the veth wire (root namespace, no addresses, no
    IPv6: it carries only what the gateways send)."""
    tag = f"{os.getpid() % 100000}"
    n = {"nsA": f"slv{tag}a", "nsB": f"slv{tag}b", "wireA": f"slv{tag}wa",
         "wireB": f"slv{tag}wb", "tapA": f"slv{tag}ai", "tapB": f"slv{tag}bi"}
    for ns in (n["nsA"], n["nsB"]):
        sh("ip", "netns", "add", ns)
        for conf in ("all", "default"):
            sh("ip", "netns", "exec", ns, "sysctl", "-q", "-w",
               f"net.ipv6.conf.{conf}.disable_ipv6=1")
    sh("ip", "link", "add", n["wireA"], "type", "veth", "peer", "name", n["wireB"])
    for w in (n["wireA"], n["wireB"]):
        sh("sysctl", "-q", "-w", f"net.ipv6.conf.{w}.disable_ipv6=1")
        sh("ip", "link", "set", w, "up")
    yield n
    sh("ip", "link", "del", n["wireA"], check=False)
    for ns in (n["nsA"], n["nsB"]):
        sh("ip", "netns", "del", ns, check=False)


def gateway(node: str, me: str, n: dict[str, str], tmp: Path, build: Path) -> dict:
    conf = tmp / f"gw{me}.conf"
    conf.write_text(sa_file(me))
    return deployment(
        node,
        ports=[{"name": "lan", "device": f"net_tap0,iface={n['tap' + me]}"},
               {"name": "wire", "device": f"net_af_packet0,iface={n['wire' + me]}"}],
        nfs=[{"name": "vpn", "program": prog("vpn", build), "service": "vpn",
              "args": ["--sa", str(conf), "--unprotected", "drop"]}],
        chain=["vpn", "drop"])


def inside(n: dict[str, str], me: str) -> None:
    """The namespace behind gateway me: its TAP, address, the route to the
    other side through the gateway, whose MAC it knows for good (no ARP)."""
    ns, tap = n["ns" + me], n["tap" + me]
    addr, other = ("10.64.1.1", "10.64.2.0/24") if me == "A" else ("10.64.2.1", "10.64.1.0/24")
    gw = "10.64.1.254" if me == "A" else "10.64.2.254"
    sh("ip", "link", "set", tap, "netns", ns)
    sh("ip", "-n", ns, "link", "set", tap, "address", MAC["ns" + me])
    sh("ip", "-n", ns, "link", "set", tap, "mtu", "1400")  # + ESP's 58 fits the wire
    sh("ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", tap)
    sh("ip", "-n", ns, "link", "set", tap, "up")
    sh("ip", "-n", ns, "link", "set", "lo", "up")
    sh("ip", "-n", ns, "neigh", "replace", gw, "lladdr", MAC[f"gw{me}-lan"], "dev", tap,
       "nud", "permanent")
    sh("ip", "-n", ns, "route", "add", other, "via", gw)


def counters(log: str) -> dict[str, int]:
    m = re.search(r"^vpn-stats: reason=exit (.*)$", log, re.M)
    assert m, log
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)\b(?!\.)", m.group(1))}


@pytest.mark.parametrize("asan", [False, pytest.param(True, marks=needs_asan)],
                         ids=["release", "asan"])
def test_tcp_through_two_gateways(launch, node, net, tmp_path: Path, asan: bool) -> None:
    """The NFs (and sluiced) of the release or the ASan+UBSan build."""
    build = ASAN_BUILD if asan else build_dir()
    node_b = f"{node}g"
    runs = [launch(gateway(node, "A", net, tmp_path, build), build),
            launch(gateway(node_b, "B", net, tmp_path, build), build)]
    inside(net, "A")
    inside(net, "B")
    ns_a, ns_b = net["nsA"], net["nsB"]
    wait_until(lambda: sh("ip", "netns", "exec", ns_a, "ping", "-c", "1", "-W", "1",
                          "10.64.2.1", check=False).returncode == 0, 20,
               "a ping through the tunnel")
    # A file of random bytes with a marker in it, served from nsB.
    www = tmp_path / "www"
    www.mkdir()
    blob = (os.urandom(1 << 20) + MARKER * 40) * 3 + os.urandom(1 << 20)
    (www / "blob").write_bytes(blob)
    server = subprocess.Popen(["ip", "netns", "exec", ns_b, "python3", "-m", "http.server",
                               "--bind", "10.64.2.1", "--directory", str(www), "8080"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # One capture per end of the wire: net_af_packet sends bypassing the
    # qdisc, which other sockets on the sender's end do not see, so each
    # end shows what arrives there.
    caps = [tmp_path / "wireA.pcap", tmp_path / "wireB.pcap"]
    dumps = [subprocess.Popen(["dumpcap", "-q", "-P", "-B", "32", "-i", net[w], "-w", str(c)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for w, c in zip(("wireA", "wireB"), caps, strict=True)]
    try:
        wait_until(lambda: ":8080" in sh("ip", "netns", "exec", ns_b, "ss", "-ltn").stdout,
                   10, "the HTTP server in nsB")

        def capturing() -> bool:
            """A ping through the tunnel shows in both captures."""
            sh("ip", "netns", "exec", ns_a, "ping", "-c", "1", "-W", "1", "10.64.2.1",
               check=False)
            return all(c.exists() and c.stat().st_size > 24 for c in caps)

        wait_until(capturing, 15, "dumpcap to capture at both ends", interval=0.2)
        got = tmp_path / "got"
        sh("ip", "netns", "exec", ns_a, "curl", "-sS", "--max-time", "30", "-o", str(got),
           "http://10.64.2.1:8080/blob")
        assert hashlib.sha256(got.read_bytes()).hexdigest() == hashlib.sha256(blob).hexdigest()
    finally:
        for d in dumps:
            d.send_signal(signal.SIGINT)
            d.wait(10)
        server.terminate()
        server.wait(10)
    to_a, to_b = read(caps[0]), read(caps[1])
    # The capture saw most of the download (dumpcap, starved of CPU by a
    # fast transfer, may miss some; the ACKs the other way it may miss
    # nearly all) and at least the pings of capturing() the other way.
    assert len(to_a) > len(blob) // 1400 // 2 and len(to_b) > 0, (len(to_a), len(to_b))
    wire = to_a + to_b
    for frame in wire:
        f = Ether(frame)
        assert IP in f and f[IP].proto == 50, f.summary()  # nothing but ESP on the wire
        assert {f[IP].src, f[IP].dst} == {GW_A, GW_B}
        assert MARKER[:12] not in frame
    everything = b"".join(wire)
    for off in range(0, len(blob) - 64, len(blob) // 16):
        assert blob[off:off + 32] not in everything, off
    # iperf3 a few seconds, nsA -> nsB
    srv = subprocess.Popen(["ip", "netns", "exec", ns_b, "iperf3", "-s", "-1", "-B", "10.64.2.1"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: ":5201" in sh("ip", "netns", "exec", ns_b, "ss", "-ltn").stdout,
                   10, "iperf3's server")
        r = sh("ip", "netns", "exec", ns_a, "iperf3", "-c", "10.64.2.1", "-t", "3", "-J")
        res = json.loads(r.stdout)
        sent = res["end"]["sum_sent"]["bytes"]
        received = res["end"]["sum_received"]["bytes"]
        assert received > 1 << 20, res["end"]
        mbps = res["end"]["sum_received"]["bits_per_second"] / 1e6
        print(f"iperf3 through the tunnel: {mbps:.0f} Mbit/s, {sent} bytes sent, "
              f"{received} received")
    finally:
        srv.wait(20)
    for run in runs:
        run.stop()
    logs = [next(p for p in run.nfs if p.label == "vpn").log.read_text() for run in runs]
    ca, cb = counters(logs[0]), counters(logs[1])
    for c, log in ((ca, logs[0]), (cb, logs[1])):
        assert c["encrypted"] > 1000 and c["decrypted"] > 1000, log
        for why in ("malformed", "unknown_spi", "bad_endpoint", "replay", "outside_window",
                    "auth_failed", "too_big", "seq_overflow", "selector", "crypto_error"):
            assert c[why] == 0, (why, log)
    if asan:
        for run, log in zip(runs, logs, strict=True):
            assert_no_sanitizer_report(log + run.sluiced.log.read_text())
    # Every packet a gateway decrypted was encrypted by the other one.
    assert cb["decrypted"] <= ca["encrypted"] and ca["decrypted"] <= cb["encrypted"]
    leftovers = [p for d in hugetlbfs_mounts() for p in d.glob(f"sluice_{node_b}map_*")]
    assert not leftovers and not Path(f"/var/run/dpdk/sluice_{node_b}").exists()
