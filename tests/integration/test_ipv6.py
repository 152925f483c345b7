"""IPv6 end to end: real frames through sluiced and the sample NFs.

The flow table keyed by the symmetric 5-tuple (one flow per connection,
whatever VLAN tags and extension headers its packets carry), rules with
IPv6 prefixes (/0, /64, /127, /128), port ranges, ICMPv6 and in_port, the
fragments (the first too: ports 0, one flow for a datagram), the separate
IPv6 table when it is full (counted, the packet goes by its rule's graph),
flow.list / get / delete by IPv6 key and filters, cross-layer requests by
IPv6 key and match, and the firewall's and monitor's IPv6 rules and counts.
Every count and byte is computed from the frames sent.

Other tests cover IPv6 too (not repeated here): test_flowdir (the IPv6
share of the table, flow.get by key), test_nfs (a firewall /120 rule, the
monitor's report), test_hostile_packets (malformed extension-header chains
through every sample NF)."""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path

import pytest
from conftest import deployment, port, prog, service, wait_drained, wait_until
from packets import read, write
from scapy.all import (
    IP,
    TCP,
    UDP,
    Dot1AD,
    Dot1Q,
    Ether,
    ICMPv6EchoReply,
    ICMPv6EchoRequest,
    IPv6,
    IPv6ExtHdrDestOpt,
    IPv6ExtHdrFragment,
    IPv6ExtHdrHopByHop,
    IPv6ExtHdrRouting,
    Raw,
)

from sluice.runtime.client import RpcError

MAC = {"src": "02:00:00:00:00:01", "dst": "02:00:00:00:00:02"}

A = "2001:db8:a::1"
B = "2001:db8:b::2"


def _eth(*tags: int) -> object:
    """Ether, then 802.1ad + 802.1Q (two tags) or 802.1Q (one)."""
    if len(tags) == 2:
        return Ether(**MAC, type=0x88A8) / Dot1AD(vlan=tags[0]) / Dot1Q(vlan=tags[1])
    if len(tags) == 1:
        return Ether(**MAC) / Dot1Q(vlan=tags[0])
    return Ether(**MAC)


def _f(pkt, pad: int = 0) -> bytes:
    return bytes(pkt / Raw(b"\x5a" * pad)) if pad else bytes(pkt)


def _fwd(name: str, svc: str) -> dict:
    return {"name": name, "program": prog("forward"), "service": svc, "args": []}


def _frames() -> tuple[list[bytes], list[bytes], dict[str, tuple]]:
    """Frames for port in and port in2, and per expected flow key
    (graph, in_port, frames)."""
    web = [  # one TCP connection A:1000 <-> B:80: both directions, tags, ext headers
        _f(_eth() / IPv6(src=A, dst=B) / TCP(sport=1000, dport=80), 10),
        _f(_eth() / IPv6(src=B, dst=A) / TCP(sport=80, dport=1000), 200),
        _f(_eth(10) / IPv6(src=A, dst=B) / IPv6ExtHdrHopByHop() / IPv6ExtHdrRouting()
           / IPv6ExtHdrDestOpt() / TCP(sport=1000, dport=80), 33),
        _f(_eth(100, 10) / IPv6(src=B, dst=A) / IPv6ExtHdrDestOpt()
           / TCP(sport=80, dport=1000), 7),
        _f(_eth(100, 10) / IPv6(src=A, dst=B) / TCP(sport=1000, dport=80)),
    ]
    web_hi = [_f(_eth() / IPv6(src=A, dst=B) / TCP(sport=1001, dport=90), 1)]  # range end
    web_out = [_f(_eth() / IPv6(src=A, dst=B) / TCP(sport=1002, dport=91), 2)]  # past it
    host = [_f(_eth() / IPv6(src="2001:db8:c::1", dst=B) / UDP(sport=7000, dport=7001), n)
            for n in (0, 50, 100)]
    host_no = [_f(_eth() / IPv6(src="2001:db8:c::2", dst=B) / UDP(sport=7000, dport=7001), 5)]
    pair0 = [_f(_eth() / IPv6(src=A, dst="2001:db8:d::") / UDP(sport=1, dport=2))]
    pair1 = [_f(_eth(7) / IPv6(src=A, dst="2001:db8:d::1") / UDP(sport=1, dport=2), 3)]
    pair2 = [_f(_eth() / IPv6(src=A, dst="2001:db8:d::2") / UDP(sport=1, dport=2), 4)]
    icmp = [_f(_eth() / IPv6(src=A, dst=B) / ICMPv6EchoRequest(id=1, seq=1, data=b"x" * 20)),
            _f(_eth(5) / IPv6(src=B, dst=A) / ICMPv6EchoReply(id=1, seq=1, data=b"x" * 20))]
    frag1 = [_f(_eth() / IPv6(src=A, dst=B) / IPv6ExtHdrFragment(offset=0, m=1, id=7)
                / UDP(sport=5000, dport=53) / Raw(b"q" * 40))]
    frag2 = [_f(_eth() / IPv6(src=A, dst=B) / IPv6ExtHdrFragment(offset=6, m=0, id=7, nh=17)
                / Raw(b"r" * 30))]
    dns = [_f(_eth() / IPv6(src=A, dst=B) / UDP(sport=5000, dport=53) / Raw(b"d" * 20))]
    v4 = [_f(_eth() / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=53, dport=53), 8)]
    e_in = [_f(_eth() / IPv6(src="2001:db8:e::3", dst=B) / UDP(sport=9, dport=9), 6)]
    e_in2 = [_f(_eth() / IPv6(src="2001:db8:e::1", dst=B) / UDP(sport=9, dport=9), 9)] * 2

    flows = {
        f"tcp [{A}]:1000 > [{B}]:80": ("web6", "in", web),
        f"tcp [{A}]:1001 > [{B}]:90": ("web6", "in", web_hi),
        f"tcp [{A}]:1002 > [{B}]:91": ("all6", "in", web_out),
        f"udp [{B}]:7001 > [2001:db8:c::1]:7000": ("host", "in", host),
        f"udp [{B}]:7001 > [2001:db8:c::2]:7000": ("all6", "in", host_no),
        f"udp [{A}]:1 > [2001:db8:d::]:2": ("pair", "in", pair0),
        f"udp [{A}]:1 > [2001:db8:d::1]:2": ("pair", "in", pair1),
        f"udp [{A}]:1 > [2001:db8:d::2]:2": ("all6", "in", pair2),
        f"icmp6 {A} > {B}": ("icmp6g", "in", icmp),
        f"udp [{A}]:5000 > [{B}]:53": ("dns6", "in", dns),
        # Every piece of a fragmented datagram, the first (which has the
        # ports, 5000 > 53) too, is the flow with ports 0: one path for all
        # its pieces (the dport 53 rule matches none of them).
        f"udp [{A}]:0 > [{B}]:0": ("all6", "in", frag1 + frag2),
        "udp 10.0.0.1:53 > 10.0.0.2:53": ("default", "in", v4),
        f"udp [{B}]:9 > [2001:db8:e::3]:9": ("all6", "in", e_in),
        f"udp [{B}]:9 > [2001:db8:e::1]:9": ("port2", "in2", e_in2),
    }
    ins = [f for g, p, fs in flows.values() if p == "in" for f in fs]
    return ins, e_in2, flows


GRAPHS = [
    {"name": "web6", "nodes": {"a": ["port:out", "b"], "b": ["port:out"]},
     "match": [{"priority": 5, "proto": "tcp", "dst": "2001:db8:b::/64", "dport": "80-90"}]},
    {"name": "host", "nodes": {"a": ["port:out"]},
     "match": [{"priority": 10, "src": "2001:db8:c::1"}]},
    {"name": "pair", "nodes": {"a": ["port:out"]},
     "match": [{"priority": 10, "dst": "2001:db8:d::/127"}]},
    {"name": "icmp6g", "nodes": {"a": ["port:out"]},
     "match": [{"priority": 3, "proto": "icmp6"}]},
    {"name": "dns6", "nodes": {"a": ["port:out"]},
     "match": [{"priority": 4, "proto": "udp", "dport": 53, "src": "::/0"}]},
    {"name": "all6", "nodes": {"a": ["port:out"]}, "match": [{"priority": 1, "src": "::/0"}]},
    {"name": "port2", "nodes": {"a": ["port:out"]},
     "match": [{"priority": 20, "src": "2001:db8:e::/48", "in_port": "in2"}]},
]


def _run(launch, node, tmp_path: Path, *sluiced_args: str):
    ins, in2, flows = _frames()
    p_in = write(tmp_path / "in.pcap", ins)
    p_in2 = write(tmp_path / "in2.pcap", in2)
    dep = deployment(node, ports=[
        {"name": "in", "device": f"net_pcap0,rx_pcap={p_in}"},
        {"name": "in2", "device": f"net_pcap1,rx_pcap={p_in2}"},
        {"name": "out", "device": f"net_pcap2,tx_pcap={tmp_path / 'out.pcap'}"}],
        nfs=[_fwd("a", "a"), _fwd("b", "b")], chain=["b", "port:out"],
        sluiced_args=list(sluiced_args))
    dep["graphs"] = GRAPHS
    run = launch(dep)
    st = wait_drained(run)
    assert port(st, "out")["tx_pkts"] == len(ins) + len(in2), st
    return run, st, flows


def _expected(flows: dict[str, tuple]) -> list[tuple]:
    return sorted((k, 4 if "." in k else 6, g, p, len(fs), sum(map(len, fs)))
                  for k, (g, p, fs) in flows.items())


def _listed(fl: list[dict]) -> list[tuple]:
    return sorted((f["key"], f["family"], f["graph"], f["in_port"], f["pkts"], f["bytes"])
                  for f in fl)


def test_ipv6_flows_rules_and_filters(launch, node, tmp_path):
    """One flow per IPv6 connection (both directions, untagged, 802.1Q,
    QinQ, with hop-by-hop/routing/destination options headers), classified
    by /64 + port range, /128, /127, ICMPv6, udp dport 53 and ::/0 (which
    an IPv4 flow does not match), in_port; every fragment (the first too)
    is the flow with ports 0. Then flow.list/get/delete by IPv6 key and filters."""
    run, st, flows = _run(launch, node, tmp_path)
    call = run.client.call
    every = call("flow.list", limit=1000)
    assert (every["total"], every["matched"]) == (len(flows), len(flows))
    assert _listed(every["flows"]) == _expected(flows)
    fl = st["flows"]
    assert (fl["live"], fl["live_v6"], fl["created"], fl["table_full"]) == (
        len(flows), len(flows) - 1, len(flows), 0)
    n_pkts = sum(len(fs) for _, _, fs in flows.values())
    assert fl["lookups"] == n_pkts and fl["hits"] == n_pkts - len(flows)
    n_a = sum(len(fs) for g, _, fs in flows.values() if g != "default")
    assert (service(st, "a")["rx_pkts"], service(st, "b")["rx_pkts"]) == (n_a, n_pkts - n_a)

    def keys(**flt) -> list[str]:
        got = call("flow.list", limit=1000, **flt)
        assert got["matched"] == len(got["flows"]) and got["total"] == len(flows)
        return sorted(f["key"] for f in got["flows"])

    v6 = sorted(k for k in flows if "." not in k)
    assert keys(src="2001:db8::/32") == v6  # either direction: every IPv6 flow
    assert keys(dst="2001:db8::/32") == v6
    assert keys(src="::/0") == v6
    assert keys(src="0.0.0.0/0") == ["udp 10.0.0.1:53 > 10.0.0.2:53"]
    assert keys(src="2001:db8:d::/127") == [
        f"udp [{A}]:1 > [2001:db8:d::1]:2", f"udp [{A}]:1 > [2001:db8:d::]:2"]
    assert keys(dst="2001:db8:d::2") == [f"udp [{A}]:1 > [2001:db8:d::2]:2"]
    assert keys(src="2001:db8:e::/48", in_port="in2") == [f"udp [{B}]:9 > [2001:db8:e::1]:9"]
    assert keys(proto="icmp6") == [f"icmp6 {A} > {B}"]
    assert keys(proto="tcp", src=A, dport="85-90") == [f"tcp [{A}]:1001 > [{B}]:90"]
    assert keys(graph="web6", dst="2001:db8:b::/64", dport=80) == [
        f"tcp [{A}]:1000 > [{B}]:80"]
    # One direction at a time: B is the source only with port 80 as sport.
    assert keys(src="2001:db8:b::/64", dport=80) == []
    assert keys(src="2001:db8:b::/64", sport=80) == [f"tcp [{A}]:1000 > [{B}]:80"]
    assert keys(src="2001:db8:f::/48") == []

    # flow.get by key in either direction, and with a non-canonical spelling.
    web = call("flow.get", key=f"tcp [{A}]:1000 > [{B}]:80")
    assert call("flow.get", key=f"tcp [{B}]:80 > [{A}]:1000")["id"] == web["id"]
    assert call("flow.get", key="tcp [2001:0db8:000a:0:0:0:0:1]:1000 > "
                                "[2001:db8:b:0::2]:80")["id"] == web["id"]
    assert call("flow.get", id=web["id"])["key"] == f"tcp [{A}]:1000 > [{B}]:80"
    assert call("flow.get", key=f"icmp6 {B} > {A}")["pkts"] == 2
    with pytest.raises(RpcError) as e:
        call("flow.get", key=f"tcp [{A}]:1000 > [{B}]:81")
    assert (e.value.code, e.value.message) == (
        -32000, f"no flow 'tcp [{A}]:1000 > [{B}]:81' in the table (it may have aged out); "
                f"see flow.list")

    # rule.list gives IPv6 prefixes back as written (an address as /128).
    assert [{k: v for k, v in r.items() if k != "id"} for r in call("rule.list")["rules"]] == [
        {"graph": "port2", "priority": 20, "src": "2001:db8:e::/48", "in_port": "in2",
         "flows": 1},
        {"graph": "host", "priority": 10, "src": "2001:db8:c::1/128", "flows": 1},
        {"graph": "pair", "priority": 10, "dst": "2001:db8:d::/127", "flows": 2},
        {"graph": "web6", "priority": 5, "proto": "tcp", "dst": "2001:db8:b::/64",
         "dport": "80-90", "flows": 2},
        {"graph": "dns6", "priority": 4, "proto": "udp", "src": "::/0", "dport": "53",
         "flows": 1},
        {"graph": "icmp6g", "priority": 3, "proto": "icmp6", "flows": 1},
        {"graph": "all6", "priority": 1, "src": "::/0", "flows": 5}]
    for method, bad, msg in [
            ("rule.add", {"src": "2001:db8::1/32"}, "'src': '2001:db8::1/32' has bits set after "
             "the prefix length (did you mean '2001:db8::/32'?)"),
            ("rule.add", {"src": "2001:db8::/129"},
             "'src': '2001:db8::/129' is not a valid prefix"),
            ("rule.add", {"src": "2001:db8::/32", "dst": "10.0.0.0/8"},
             "'dst': '10.0.0.0/8' is an IPv4 prefix but 'src' is IPv6"),
            ("rule.add", {"proto": "icmp6", "dport": 1}, "'dport': ports need proto tcp, udp, "
             "sctp or any"),
            ("flow.list", {"src": "2001:db8::1/64"}, "'src': '2001:db8::1/64' has bits set after "
             "the prefix length (did you mean '2001:db8::/64'?)")]:
        with pytest.raises(RpcError) as e:
            call(method, **({"graph": "all6"} if method == "rule.add" else {}), **bad)
        assert str(e.value) == f"{method}: {msg} (JSON-RPC error -32602)"

    # Delete by IPv6 filter and by key; the rest stay.
    assert call("flow.delete", dst="2001:db8:d::/126") == {"deleted": 3}
    assert call("flow.delete", key=f"udp [{B}]:7001 > [2001:db8:c::1]:7000") == {"deleted": 1}
    left = sorted(set(flows) - {
        f"udp [{A}]:1 > [2001:db8:d::]:2", f"udp [{A}]:1 > [2001:db8:d::1]:2",
        f"udp [{A}]:1 > [2001:db8:d::2]:2", f"udp [{B}]:7001 > [2001:db8:c::1]:7000"})
    wait_until(lambda: sorted(f["key"] for f in call("flow.list", limit=1000)["flows"]) == left,
               10, "the 4 deleted flows gone")

    # Cross-layer requests by IPv6 key (either direction) and IPv6 match.
    assert call("flow.request", type="change_default", service="a", to="b",
                flow={"key": f"tcp [{B}]:80 > [{A}]:1000"}) == {"applied": 1}
    assert call("flow.get", key=f"tcp [{A}]:1000 > [{B}]:80")["overrides"] == [
        {"service": "a", "type": "default", "to": "b"}]
    assert call("flow.request", type="skip_me", service="a",
                flow={"match": {"proto": "udp", "src": "2001:db8:e::/48"}}) == {
                    "applied": 2, "id": 1}
    # 1002 > 91 matches too, but its graph all6 has no edge a -> b.
    assert call("flow.request", type="change_default", service="a", to="b",
                flow={"match": {"dst": "2001:db8:b::/64", "dport": "80-95"}}) == {
                    "applied": 2, "id": 2}
    skip = [{"service": "a", "type": "skip"}]
    to_b = [{"service": "a", "type": "default", "to": "b"}]
    assert {f["key"]: f["overrides"] for f in call("flow.list", limit=1000)["flows"]} == {
        k: (to_b if k.startswith(f"tcp [{A}]:100") and not k.endswith(":91") else
            skip if "2001:db8:e::" in k else []) for k in left}
    run.stop()
    assert sorted(read(tmp_path / "out.pcap")) == sorted(
        f for _, _, fs in flows.values() for f in fs)


def test_full_ipv6_table_falls_back_to_the_rule(launch, node, tmp_path):
    """--flow-capacity-v6 64 and 80 IPv6 connections (2 packets each, one
    per direction): the first 64 get entries; the 32 packets of the other
    16 are counted as table_full and still go by their rule (TCP to
    2001:db8:b::/64 port 80: graph web6, NF a) or, matching none, by the
    default chain (NF b). IPv4 flows keep getting entries."""
    frames, web = [], []
    for i in range(80):
        if i % 2 == 0:
            c, s = f"2001:db8:a::{i + 1:x}", f"2001:db8:b::{i + 1:x}"
            pair = [_eth() / IPv6(src=c, dst=s) / TCP(sport=2000 + i, dport=80),
                    _eth() / IPv6(src=s, dst=c) / TCP(sport=80, dport=2000 + i)]
        else:
            c, s = f"2001:db8:a::{i + 1:x}", f"2001:db8:f::{i + 1:x}"
            pair = [_eth() / IPv6(src=c, dst=s) / UDP(sport=2000 + i, dport=80),
                    _eth() / IPv6(src=s, dst=c) / UDP(sport=80, dport=2000 + i)]
        fs = [_f(p, i) for p in pair]
        frames += fs
        web += fs if i % 2 == 0 else []
    v4 = [_f(_eth() / IP(src="10.1.0.1", dst=f"10.2.0.{i}") / UDP(sport=5, dport=6))
          for i in range(1, 101)]
    frames += v4
    src = write(tmp_path / "in.pcap", frames)
    dep = deployment(node, ports=[
        {"name": "in", "device": f"net_pcap0,rx_pcap={src}"},
        {"name": "out", "device": f"net_pcap1,tx_pcap={tmp_path / 'out.pcap'}"}],
        nfs=[_fwd("a", "a"), _fwd("b", "b")], chain=["b", "port:out"],
        sluiced_args=["--flow-capacity", "256", "--flow-capacity-v6", "64"])
    dep["graphs"] = GRAPHS[:1]
    run = launch(dep)
    st = wait_drained(run)
    fl = st["flows"]
    assert (fl["capacity"], fl["capacity_v6"]) == (256, 64)
    assert (fl["live"], fl["live_v6"], fl["created"], fl["table_full"]) == (164, 64, 164, 32)
    assert (service(st, "a")["rx_pkts"], service(st, "b")["rx_pkts"]) == (
        len(web), len(frames) - len(web))
    assert (service(st, "a")["rx_bytes"], service(st, "b")["rx_bytes"]) == (
        sum(map(len, web)), sum(map(len, frames)) - sum(map(len, web)))
    listed = run.client.call("flow.list", limit=1000, src="2001:db8::/32")
    assert listed["matched"] == 64
    assert sorted(f["key"].split()[1] for f in listed["flows"]) == sorted(
        f"[2001:db8:a::{i + 1:x}]:{2000 + i}" for i in range(64))
    assert [r["flows"] for r in run.client.call("rule.list")["rules"]] == [32]
    run.stop()
    assert sorted(read(tmp_path / "out.pcap")) == sorted(frames)


FW_RULES = """\
default: deny
rules:
  - {name: web, action: deny, proto: tcp, dst: "2001:db8:b::/64", dport: 80-90}
  - {name: host, action: deny, src: "2001:db8:c::1"}
  - {name: pair, action: deny, dst: "2001:db8:d::/127"}
  - {name: dns, action: deny, proto: udp, dport: 53}
  - {name: ping6, action: deny, proto: icmp6, dst: "2001:db8:b::2/128"}
  - {name: all6, action: allow, src: "::/0"}
"""


def _fw_rule(frame: bytes) -> str:
    """The rule of FW_RULES that decides a frame (directional, first match)."""
    p = Ether(frame)
    l3 = p[IPv6] if IPv6 in p else p[IP]
    frag = p.getlayer(IPv6ExtHdrFragment)
    later = frag is not None and frag.offset != 0
    l4 = None if later else (p.getlayer(TCP) or p.getlayer(UDP))
    src, dst = ipaddress.ip_address(l3.src), ipaddress.ip_address(l3.dst)
    dport = l4.dport if l4 is not None else 0
    if TCP in p and src.version == 6 and dst in ipaddress.ip_network("2001:db8:b::/64") \
            and 80 <= dport <= 90:
        return "web"
    if src == ipaddress.ip_address("2001:db8:c::1"):
        return "host"
    if src.version == 6 and dst in ipaddress.ip_network("2001:db8:d::/127"):
        return "pair"
    if (UDP in p or (later and frag.nh == 17)) and dport == 53:
        return "dns"
    if (ICMPv6EchoRequest in p or ICMPv6EchoReply in p) and dst == ipaddress.ip_address(B):
        return "ping6"
    return "all6" if src.version == 6 else "default"


def _mon_flow(frame: bytes) -> tuple[str, str]:
    """(class, flow) of a frame as sluice-monitor counts it: directional,
    ports 0 for port-less protocols and for every fragment, the first too
    (sl_pkt_flow_tuple, as the flow director keys it)."""
    p = Ether(frame)
    l3 = p[IPv6] if IPv6 in p else p[IP]
    frag = p.getlayer(IPv6ExtHdrFragment)
    if frag is not None:
        return "udp", f"udp {_end(l3.src, 0)} > {_end(l3.dst, 0)}"
    if ICMPv6EchoRequest in p or ICMPv6EchoReply in p:
        return "icmp", f"icmp6 {l3.src} > {l3.dst}"
    l4 = p[TCP] if TCP in p else p[UDP]
    name = type(l4).__name__.lower()
    return name, f"{name} {_end(l3.src, l4.sport)} > {_end(l3.dst, l4.dport)}"


def _end(ip: str, p: int) -> str:
    return f"[{ip}]:{p}" if ":" in ip else f"{ip}:{p}"


@pytest.mark.parametrize("matcher", ["acl", "linear"])
def test_firewall_and_monitor_ipv6(launch, node, tmp_path, matcher):
    """monitor -> firewall -> out over the IPv6 frames (tags, extension
    headers, fragments, ICMPv6) and two IPv4 ones. The firewall's IPv6
    rules (/64 + port range, /128, /127, udp dport 53, icmp6 to a /128,
    ::/0, which no IPv4 packet matches) count each frame exactly; the
    monitor counts IPv6, ICMPv6 (class icmp) and directional flows
    exactly, both fragments of a datagram as one flow with ports 0."""
    ins, in2, _flows = _frames()
    frames = ins + in2 + [_f(_eth() / IP(src="10.0.0.3", dst="10.0.0.4") / TCP(sport=1, dport=2))]
    src = write(tmp_path / "in.pcap", frames)
    rules = tmp_path / "fw.yaml"
    rules.write_text(FW_RULES)
    run = launch(deployment(
        node, ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src}"},
                     {"name": "out", "device": f"net_pcap1,tx_pcap={tmp_path / 'out.pcap'}"}],
        nfs=[{"name": "mon", "program": prog("monitor"), "service": "monitor",
              "args": ["--interval", "0", "--top", "1000"]},
             {"name": "fw", "program": prog("firewall"), "service": "firewall",
              "args": ["--rules", str(rules), "--matcher", matcher]}],
        chain=["monitor", "firewall", "port:out"]))
    st = wait_drained(run)
    run.stop()
    by_rule: dict[str, list[bytes]] = {}
    for f in frames:
        by_rule.setdefault(_fw_rule(f), []).append(f)
    allowed = by_rule["all6"]
    assert set(by_rule) == {"web", "host", "pair", "dns", "ping6", "all6", "default"}
    assert service(st, "firewall")["drops"]["nf_verdict"] == len(frames) - len(allowed)
    assert read(tmp_path / "out.pcap") == allowed

    fw_log = next(p for p in run.nfs if p.label == "fw").log.read_text()
    lines = fw_log.splitlines()
    i = next(k for k, ln in enumerate(lines) if ln.startswith("fw-counters: reason=exit "))
    expect = [f"fw-counters: reason=exit file={rules} rules=6 matcher={matcher}"]
    for k, name in enumerate(("web", "host", "pair", "dns", "ping6", "all6"), start=1):
        fs = by_rule[name]
        expect.append(f"fw-counter: rule={k} name={name} "
                      f"action={'allow' if name == 'all6' else 'deny'} "
                      f"packets={len(fs)} bytes={sum(map(len, fs))}")
    d = by_rule["default"]
    expect += [f"fw-counter: rule=default name=- action=deny packets={len(d)} "
               f"bytes={sum(map(len, d))}",
               "fw-counter: rule=non-ip name=- action=allow packets=0 bytes=0",
               "fw-counter: rule=malformed name=- action=allow packets=0 bytes=0",
               f"fw-counters: end packets={len(frames)} allowed={len(allowed)} "
               f"denied={len(frames) - len(allowed)}"]
    assert lines[i:i + len(expect)] == expect, fw_log

    mon_log = next(p for p in run.nfs if p.label == "mon").log.read_text()
    mon = [ln for ln in mon_log.splitlines() if ln.startswith("mon-")]
    cls: dict[str, list[int]] = {}
    flows: dict[str, list[int]] = {}
    for f in frames:
        c, k = _mon_flow(f)
        for d_, key in ((cls, c), (flows, k)):
            pb = d_.setdefault(key, [0, 0])
            pb[0], pb[1] = pb[0] + 1, pb[1] + len(f)
    v6 = sum(IPv6 in Ether(f) for f in frames)
    nbytes = sum(map(len, frames))
    assert re.fullmatch(
        rf"mon-stats: reason=exit uptime=\d+\.\d packets={len(frames)} bytes={nbytes} "
        rf"pps=\d+ ipv4={len(frames) - v6} ipv6={v6} flows={len(flows)} flows_capacity=65536 "
        r"flows_untracked=0 untracked_bytes=0", mon[0]), mon[0]
    assert mon[1:3] == [
        f"mon-proto: {what} " + " ".join(
            f"{c}={cls.get(c, [0, 0])[j]}" for c in ("tcp", "udp", "icmp")) +
        " other_ipv4=0 other_ipv6=0 non_ip=0 malformed=0"
        for j, what in enumerate(("packets", "bytes"))]
    got = [re.fullmatch(r"mon-top: rank=(\d+) packets=(\d+) bytes=(\d+) flow=(.*)", ln)
           for ln in mon[3:]]
    assert all(got) and len(got) == len(flows), mon
    assert sorted((m[4], int(m[2]), int(m[3])) for m in got) == sorted(
        (k, p, b) for k, (p, b) in flows.items())
    assert [int(m[1]) for m in got] == list(range(1, len(flows) + 1))
    assert all(int(x[3]) >= int(y[3]) for x, y in zip(got, got[1:], strict=False))


def test_flow_key_names_the_lower_address_first(launch, node, tmp_path):
    frames = [_f(_eth() / IPv6(src="2001:db9::1", dst="2001:db8:0:1::1") / UDP(sport=5, dport=6)),
              _f(_eth() / IP(src="10.0.0.1", dst="9.0.0.2") / UDP(sport=5, dport=6))]
    src = write(tmp_path / "in.pcap", frames)
    run = launch(deployment(
        node, ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src}"},
                     {"name": "out", "device": "net_null0,no-rx=1"}],
        nfs=[_fwd("a", "a")], chain=["a", "port:out"]))
    wait_drained(run)
    keys = sorted(f["key"] for f in run.client.call("flow.list")["flows"])
    assert keys == ["udp 9.0.0.2:6 > 10.0.0.1:5", "udp [2001:db8:0:1::1]:6 > [2001:db9::1]:5"]
