"""sluice-l3fwd routes real Linux traffic: three network namespaces A, B and
C, each holding one of sluiced's TAP interfaces (three ports), with their
default routes via the router's address on their port. ping A -> B and
A -> C over IPv4 and IPv6, and traceroute (UDP and ICMP, IPv4 and IPv6)
from A to C shows the router's address on A's port as hop 1, then C: the
ICMP time exceeded errors sluice-l3fwd generates.

The hosts find the router's MAC (that of their TAP port, set with net_tap's
mac= and read by the NF with rte_eth_macaddr_get) by ARP and neighbour
discovery: sluice-l3fwd answers requests for its addresses. It sends
none itself: the routes file has the hosts' MACs (neigh lines)."""

from __future__ import annotations

import json
import re
import signal
from pathlib import Path

import netns
import pytest
import yaml
from conftest import (
    ASAN_BUILD,
    assert_no_sanitizer_report,
    build_dir,
    deployment,
    needs_asan,
    prog,
    service,
    wait_until,
)
from netns import sh
from scapy.all import IP, Ether, rdpcap

HOSTS = "abc"


def router_mac(i: int) -> str:
    return f"02:62:00:00:0{i + 1}:fe"


@pytest.fixture
def namespaces():
    names = [f"sll{netns.tag()}{h}" for h in HOSTS]
    with netns.namespaces(names):
        yield names


def _host_setup(ns: str, ifname: str, i: int) -> str:
    """Addresses and default routes of host i (the router's MAC it learns
    by ARP and neighbour discovery); returns the MAC of its interface."""
    n = i + 1
    sh("ip", "link", "set", ifname, "netns", ns)
    # C answers every probe of traceroute: no ICMP rate limit there.
    for key in ("net.ipv4.icmp_ratelimit=0", "net.ipv6.icmp.ratelimit=0"):
        sh("ip", "netns", "exec", ns, "sysctl", "-q", "-w", key)
    sh("ip", "-n", ns, "link", "set", "lo", "up")
    sh("ip", "-n", ns, "addr", "add", f"10.62.{n}.2/24", "dev", ifname)
    sh("ip", "-n", ns, "-6", "addr", "add", f"fd62:{n}::2/64", "dev", ifname, "nodad")
    sh("ip", "-n", ns, "link", "set", ifname, "up")
    sh("ip", "-n", ns, "route", "add", "default", "via", f"10.62.{n}.1")
    sh("ip", "-n", ns, "-6", "route", "add", "default", "via", f"fd62:{n}::1")
    return json.loads(sh("ip", "-n", ns, "-j", "link", "show", ifname).stdout)[0]["address"]


def _routes(macs: list[str]) -> str:
    lines = ["# written by test_l3fwd.py"]
    for i, h in enumerate(HOSTS):
        n = i + 1
        lines += [f"port {h} address 10.62.{n}.1 address fd62:{n}::1",
                  f"neigh 10.62.{n}.2 {macs[i]} port {h}",
                  f"neigh fd62:{n}::2 {macs[i]} port {h}",
                  f"route 10.62.{n}.0/24 via 10.62.{n}.2",
                  f"route fd62:{n}::/64 via fd62:{n}::2"]
    return "\n".join(lines) + "\n"


def _hops(out: str) -> list[tuple[int, list[str], int]]:
    """traceroute -n's hops: (number, the addresses on its line, how many
    probes were answered: one time each; a '*' for one that was not)."""
    hops = []
    for line in out.splitlines()[1:]:
        m = re.match(r"\s*(\d+)\s+(.*)", line)
        assert m, out
        hops.append((int(m[1]), re.findall(r"(?:\d+\.){3}\d+|[0-9a-f]*:[0-9a-f:]+", m[2]),
                     m[2].count(" ms")))
    return hops


@pytest.mark.parametrize("asan", [False, pytest.param(True, marks=needs_asan)],
                         ids=["release", "asan"])
def test_three_namespaces_routed(launch, node, namespaces, tmp_path, asan):
    build = ASAN_BUILD if asan else build_dir()
    ifs = [f"{ns}i" for ns in namespaces]
    # The routes file is written once the hosts' MACs are known: before
    # that, the NF has an empty one and is reloaded (SIGHUP).
    routes = tmp_path / "routes"
    routes.write_text("# nothing yet\n")
    run = launch(deployment(
        node,
        ports=[{"name": h, "device": f"net_tap{i},iface={ifs[i]},mac={router_mac(i)}"}
               for i, h in enumerate(HOSTS)],
        nfs=[{"name": "l3", "program": prog("l3fwd", build), "service": "l3fwd",
              "args": ["--routes", str(routes), "--stats-ms", "0"]}],
        chain=["l3fwd", "drop"], sluiced_args=["--nf-mem", "512"]), build)
    (nf,) = run.nfs
    macs = [_host_setup(ns, ifname, i)
            for i, (ns, ifname) in enumerate(zip(namespaces, ifs, strict=True))]
    routes.write_text(_routes(macs))
    run.kill(nf, signal.SIGHUP)
    wait_until(lambda: f"sluice-l3fwd: reloaded {routes}: 6 IPv4 and 6 IPv6 routes (6 of them "
               "neighbours), 3 ports" in nf.log.read_text(), 20, "the routes to be reloaded")
    log = nf.log.read_text()
    # The ports' MACs as net_tap was given them: rte_eth_macaddr_get in
    # the NF, a secondary process.
    for i, h in enumerate(HOSTS):
        assert (f"sluice-l3fwd:   port {h} (id {i}): mac {router_mac(i).upper()}, "
                f"address 10.62.{i + 1}.1 fd62:{i + 1}::1\n") in log, log

    a = namespaces[0]
    # Across, and to the router's addresses (its echo replies).
    for dst in ("10.62.2.2", "10.62.3.2", "fd62:2::2", "fd62:3::2", "10.62.1.1", "10.62.3.1",
                "fd62:1::1"):
        r = sh("ip", "netns", "exec", a, "ping", "-c", "3", "-i", "0.2", "-W", "2", dst,
               check=False)
        assert "3 packets transmitted, 3 received, 0% packet loss" in r.stdout, r.stdout + r.stderr

    # The router's hop, then C, for every probe (3 a hop).
    for args, hop1, dst in ((["-n"], "10.62.1.1", "10.62.3.2"),
                            (["-n", "-I"], "10.62.1.1", "10.62.3.2"),
                            (["-6", "-n"], "fd62:1::1", "fd62:3::2"),
                            (["-6", "-n", "-I"], "fd62:1::1", "fd62:3::2")):
        r = sh("ip", "netns", "exec", a, "traceroute", *args, "-w", "3", "-m", "5", dst,
               check=False)
        assert r.returncode == 0, r.stdout + r.stderr
        assert _hops(r.stdout) == [(1, [hop1], 3), (2, [dst], 3)], (args, r.stdout)
        assert "*" not in r.stdout, r.stdout

    # No route out of 10.62/16: net unreachable from the router.
    r = sh("ip", "netns", "exec", a, "ping", "-c", "1", "-W", "2", "10.62.9.9", check=False)
    assert "From 10.62.1.1 icmp_seq=1 Destination Net Unreachable" in r.stdout, r.stdout
    r = sh("ip", "netns", "exec", a, "ping", "-c", "1", "-W", "2", "fd62:9::9", check=False)
    assert "From fd62:1::1 icmp_seq=1 Destination unreachable: No route" in r.stdout, r.stdout
    # And back from C: the router's address on C's port.
    r = sh("ip", "netns", "exec", namespaces[2], "traceroute", "-n", "-w", "3", "-m", "5",
           "10.62.1.2", check=False)
    assert _hops(r.stdout) == [(1, ["10.62.3.1"], 3), (2, ["10.62.1.2"], 3)], r.stdout

    # A bad file on reload: the routes stay, the line is named.
    routes.write_text(_routes(macs) + "route 10.62.9.0/24 via 10.62.9.1\n")
    run.kill(nf, signal.SIGHUP)
    wait_until(lambda: "sluice-l3fwd: reload failed, keeping the 12 current routes: "
               f"{routes}:17: route via 10.62.9.1: no neigh line gives its MAC and port\n"
               in nf.log.read_text(), 20, "the reload to fail")
    r = sh("ip", "netns", "exec", a, "ping", "-c", "1", "-W", "2", "10.62.2.2", check=False)
    assert "1 received" in r.stdout, r.stdout

    st = run.stop()  # after rx.pause and the drain: the NF's exit line counts the same
    l3 = service(st, "l3fwd")
    assert nf.exited() == 0
    log = nf.log.read_text()
    assert_no_sanitizer_report(log, nf.log.name)
    line = next(ln for ln in log.splitlines() if ln.startswith("l3fwd-stats: reason=exit "))
    print(line)
    c = dict(kv.split("=") for kv in line.split()[2:])
    # 12 echo requests and replies, the traceroutes' probes to C and its
    # answers: forwarded; 15 probes of hop 1 answered; two unreachables.
    assert int(c["forwarded"]) >= 26 + 5 * 6, line
    assert int(c["ttl_exceeded"]) >= 15 and int(c["no_route"]) == 2, line
    assert int(c["icmp_sent"]) == int(c["ttl_exceeded"]) + 2, line
    assert c["icmp_ratelimited"] == "0" and c["icmp_failed"] == "0", line
    assert c["malformed"] == "0", line
    assert int(c["out.a"]) + int(c["out.b"]) + int(c["out.c"]) == int(c["forwarded"]), line
    # sluiced agrees: every packet the NF got, every drop (verdict DROP)
    # and every packet out of a port, the ICMP errors and echo replies
    # included.
    dropped = sum(int(c[k]) for k in ("no_route", "ttl_exceeded", "non_ip", "malformed", "local"))
    assert l3["rx_pkts"] == int(c["packets"]), (l3, line)
    assert l3["drops"].get("nf_verdict") == dropped, (l3, line)
    assert sum(p["rx_pkts"] for p in st["ports"]) == int(c["packets"]), (st["ports"], line)
    assert c["echo_replies"] == "9", line
    # Each host asked for the router's MAC, by ARP and by NS, at least once.
    assert int(c["neigh_replies"]) >= 6, line
    assert (sum(p["tx_pkts"] for p in st["ports"])
            == int(c["forwarded"]) + int(c["icmp_sent"]) + 9 + int(c["neigh_replies"])), (
                st["ports"], line)


def test_example_routes_the_http_mix(launch, node, tmp_path):
    """examples/l3fwd.yaml as it says: the HTTP mix read once, every packet
    out of the port of its destination's route, byte for byte the input
    with the next hop's MAC, the port's MAC as source and the TTL one
    lower (the IPv4 checksum right)."""
    examples = Path(__file__).resolve().parents[2] / "examples"
    dep = yaml.safe_load((examples / "l3fwd.yaml").read_text())
    trace = examples / "traces" / "http-mix.pcap"
    assert dep["ports"][0]["device"] == "net_pcap0,rx_pcap=traces/http-mix.pcap"
    assert dep["nfs"][0]["args"][:2] == ["--routes", "l3fwd.routes"]
    dep["node"]["name"] = node
    dep["ports"][0]["device"] = f"net_pcap0,rx_pcap={trace}"
    outs = {p["name"]: tmp_path / f"{p['name']}.pcap" for p in dep["ports"][1:]}
    for p in dep["ports"][1:]:
        p["device"] = p["device"].split(",tx_pcap=")[0] + f",tx_pcap={outs[p['name']]}"
    dep["nfs"][0]["args"][1] = str(examples / "l3fwd.routes")
    dep["nfs"][0]["program"] = prog("l3fwd")
    run = launch(dep)
    (nf,) = run.nfs
    st = wait_until(lambda: (s := run.client.call("stats"))["drops_total"] == 0
                    and sum(p["tx_pkts"] for p in s["ports"]) == 4096 and s, 30,
                    "the 4,096 packets out")
    assert {p["name"]: p["tx_pkts"] for p in st["ports"]} == {
        "in": 0, "servers": 1821, "clients": 2275}, st["ports"]
    run.stop()
    log = nf.log.read_text()
    macs = {m[1]: m[2].lower() for m in re.finditer(
        r"sluice-l3fwd:   port (\w+) \(id \d+\): mac (\S+),", log)}
    assert set(macs) == {"in", "servers", "clients"}, log
    assert re.search(r"^l3fwd-stats: reason=exit .* packets=4096 .* forwarded=4096 no_route=0 "
                     r"ttl_exceeded=0 .* out\.in=0 out\.servers=1821 out\.clients=2275$",
                     log, re.M), log
    want: dict[str, list[bytes]] = {"servers": [], "clients": []}
    for pkt in rdpcap(str(trace)):
        out = "servers" if pkt[IP].dst.startswith("192.168.0.") else "clients"
        p = pkt.copy()
        p[Ether].dst = "02:00:00:00:01:01" if out == "servers" else "02:00:00:00:02:01"
        p[Ether].src = macs[out]
        p[IP].ttl -= 1
        del p[IP].chksum  # scapy computes it again
        want[out].append(bytes(p))
    for name, path in outs.items():
        got = [bytes(p) for p in rdpcap(str(path))]
        assert len(got) == len(want[name]), name
        bad = [i for i, (g, w) in enumerate(zip(got, want[name], strict=True)) if g != w]
        assert not bad, (name, bad[:5])
