"""IP fragments in the flow director: every piece of a datagram, the first
one too, is keyed with ports 0 (sl_pkt_flow_tuple; Open vSwitch's "normal"
fragment handling and NICs' RSS do the same), so all the pieces of a
datagram are one flow: one graph, one instance of each service. Before,
a first fragment (which carries the ports) was a flow of its own, and its
later pieces another: they could take different graphs and instances."""

from __future__ import annotations

import collections

from conftest import deployment, port, prog, wait_drained
from packets import read, write
from scapy.all import IP, UDP, Ether, IPv6, IPv6ExtHdrFragment, Raw, fragment, fragment6

MAC = {"src": "02:00:00:00:00:ee", "dst": "02:00:00:00:00:02"}  # ee: no instance id
N = 30  # datagrams of each family


def _fwd(name: str, svc: str, *args: str) -> dict:
    return {"name": name, "program": prog("forward"), "service": svc, "args": list(args)}


def _frames() -> tuple[list[bytes], list[bytes]]:
    """(the fragments of 2N datagrams, in 4 pieces each; 2N whole packets
    of the same 5-tuples), in one interleaved order."""
    frags: list[bytes] = []
    whole: list[bytes] = []
    for i in range(N):
        src = f"10.1.0.{i + 1}"
        d = IP(src=src, dst="10.2.0.1", id=i) / UDP(sport=1000 + i, dport=53) / Raw(b"x" * 400)
        frags += [bytes(Ether(**MAC) / p) for p in fragment(d, fragsize=128)]
        whole.append(bytes(Ether(**MAC) / IP(src=src, dst="10.2.0.1", id=500 + i)
                           / UDP(sport=1000 + i, dport=53) / Raw(b"y" * 40)))
        src6 = f"2001:db8:1::{i + 1:x}"
        d6 = (IPv6(src=src6, dst="2001:db8:2::1") / IPv6ExtHdrFragment(id=i)
              / UDP(sport=2000 + i, dport=53) / Raw(b"z" * 400))
        frags += [bytes(Ether(**MAC) / p) for p in fragment6(d6, 180)]
        whole.append(bytes(Ether(**MAC) / IPv6(src=src6, dst="2001:db8:2::1")
                           / UDP(sport=2000 + i, dport=53) / Raw(b"w" * 40)))
    return frags, whole


def _datagram(frame: bytes) -> tuple:
    """Which datagram a fragment belongs to: its source and IP id."""
    p = Ether(frame)
    if IP in p:
        return (p[IP].src, p[IP].id)
    return (p[IPv6].src, p[IPv6ExtHdrFragment].id)


def test_every_piece_of_a_datagram_takes_one_path(launch, node, tmp_path):
    """UDP to port 53 goes to graph dns (service a); the rest takes the
    chain through b, two instances, flow-sticky, each writing its instance
    id into the source MAC. Whole packets match the rule; every fragment of
    a datagram (none matches it: ports 0) goes through one instance of b,
    and the table holds one flow per datagram's addresses with all its
    pieces, ports 0, and one per whole packet's 5-tuple."""
    frags, whole = _frames()
    assert len(frags) == 4 * 2 * N
    src = write(tmp_path / "in.pcap", [f for pair in zip(frags[::4], frags[1::4], frags[2::4],
                                                         frags[3::4], strict=True)
                                       for f in pair] + whole)
    dst = tmp_path / "out.pcap"
    dep = deployment(node, ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src}"},
                                  {"name": "out", "device": f"net_pcap1,tx_pcap={dst}"}],
                     nfs=[_fwd("a", "a"), _fwd("b0", "b", "--tag-src-mac"),
                          _fwd("b1", "b", "--tag-src-mac")],
                     chain=["b", "port:out"])
    dep["graphs"] = [{"name": "dns", "nodes": {"a": ["port:out"]},
                      "match": [{"priority": 5, "proto": "udp", "dport": 53}]}]
    run = launch(dep)
    st = wait_drained(run)
    b_ids = sorted(n["instance"] for n in run.client.call("nf.list") if n["service"] == "b")
    flows = run.client.call("flow.list", limit=1000)["flows"]
    run.stop()
    assert port(st, "out")["tx_pkts"] == len(frags) + len(whole) and st["drops_total"] == 0
    out = read(dst)
    untagged = [f for f in out if f[11] == 0xEE]
    # Whole packets went through a (untouched); no fragment did.
    assert sorted(untagged) == sorted(whole)
    tagged = [f for f in out if f[11] != 0xEE]
    assert len(tagged) == len(frags)
    # Byte-exact but for the MAC's last byte, which says the instance.
    assert sorted(f[:11] + b"\xee" + f[12:] for f in tagged) == sorted(frags)
    by_datagram = collections.defaultdict(set)
    for f in tagged:
        by_datagram[_datagram(f)].add(f[11])
    assert len(by_datagram) == 2 * N
    assert all(len(ids) == 1 for ids in by_datagram.values()), by_datagram
    # Flow-sticky spreads datagrams over both instances (all on one: 2^-59).
    assert {i for ids in by_datagram.values() for i in ids} == set(b_ids)
    got = sorted((f["key"], f["graph"], f["pkts"]) for f in flows)
    want = sorted(
        [(f"udp 10.1.0.{i + 1}:0 > 10.2.0.1:0", "default", 4) for i in range(N)]
        + [(f"udp 10.1.0.{i + 1}:{1000 + i} > 10.2.0.1:53", "dns", 1) for i in range(N)]
        + [(f"udp [2001:db8:1::{i + 1:x}]:0 > [2001:db8:2::1]:0", "default", 4)
           for i in range(N)]
        + [(f"udp [2001:db8:1::{i + 1:x}]:{2000 + i} > [2001:db8:2::1]:53", "dns", 1)
           for i in range(N)])
    assert got == want
