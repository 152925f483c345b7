"""Rules and graphs, paths no other test takes end to end: removing a rule
(new flows take the default graph, existing ones keep theirs until deleted),
rules on the ingress port, a full flow table falling back to the matching
rule's graph, and an NF's OUT(port) along an edge its graph does not allow.

Phased traffic through a TAP port reuses test_crosslayer.py's rig (every NF
tags the source MAC, so the output says which path each packet took);
finite captures reuse test_flowdir.py's helpers, with one output port per
path so each capture is compared with exactly the frames that path must
carry, in order."""

from __future__ import annotations

from conftest import deployment, port, prog, service, wait_drained, wait_until
from packets import flow_of, read, write
from scapy.all import IP, TCP, UDP, Ether, Raw
from test_crosslayer import (
    F_KEY,
    G_KEY,
    F,
    G,
    Rig,
    flow_frames,
    marker_of,
    paths,
    rpc_error,
    tag_nf,
)
from test_flowdir import _done, _fwd

from sluice.runtime.traces import fixed_size, write_pcap

H = ("10.77.0.2", "10.77.0.5", 2000, 1002)  # on g, then left to age out
H_KEY = "udp 10.77.0.2:2000 > 10.77.0.5:1002"


def test_a_removed_rule_leaves_existing_flows_and_sends_new_ones_to_the_default(
        launch, node, tmp_path):
    """After rule.remove, flows the rule classified keep the rule's graph
    (their entries say so) until they are deleted or age out; a new flow the
    rule would have matched takes the default chain. Linux's own packets on
    the TAP interface (an MLD report, say) take the default chain too, so d
    sees them as well: they are counted apart."""
    rig = Rig(launch, node, tmp_path, [tag_nf("p"), tag_nf("d")],
              sluiced_args=["--flow-timeout", "3000"])
    rig.call("chain.set", hops=["d", "port:out"])
    rig.linux_out = True  # Linux's own packets go out too: counted apart
    rig.apply("g", {"p": ["port:out"]}, src="10.77.0.0/16")
    rig.send(flow_frames("F", "1", 3, *F) + flow_frames("H", "1", 2, *H))
    rig.wait_out()
    wait_drained(rig.run)
    rules = rig.call("rule.list")["rules"]
    assert [(r["graph"], r["src"], r["flows"]) for r in rules] == [("g", "10.77.0.0/16", 2)]
    rid = rules[0]["id"]

    assert rig.call("rule.remove", id=rid) == {"removed": rid}
    rig.wait_event(lambda e: e["kind"] == "rule.removed" and e["data"] == {"id": rid}, 5,
                   "the rule.removed event")
    assert rig.call("rule.list")["rules"] == []
    assert rpc_error(rig.call, "rule.remove", id=rid) == f"no rule with id {rid}; see rule.list"

    rig.send(flow_frames("F", "2", 3, *F))  # an existing flow: still g
    rig.send(flow_frames("G", "1", 3, *G))  # a new one: the default chain
    rig.wait_out()
    wait_drained(rig.run)
    f, g = rig.call("flow.get", key=F_KEY), rig.call("flow.get", key=G_KEY)
    assert (f["graph"], f["pkts"]) == ("g", 6), f
    assert (g["graph"], g["pkts"]) == ("default", 3), g

    # Deleted, F is a new flow: classified again, without the rule.
    assert rig.call("flow.delete", key=F_KEY) == {"deleted": 1}
    wait_until(lambda: [fl["key"] for fl in rig.call("flow.list", graph="g")["flows"]]
               == [H_KEY], 5, "F deleted")
    rig.send(flow_frames("F", "3", 3, *F))
    rig.wait_out()
    wait_drained(rig.run)
    f = rig.call("flow.get", key=F_KEY)
    assert (f["graph"], f["pkts"]) == ("default", 3), f

    # H, idle, ages out: its next packets are a new flow too.
    assert rig.call("flow.get", key=H_KEY)["graph"] == "g"
    wait_until(lambda: rig.call("flow.list", graph="g")["flows"] == [], 10, "H to age out")
    assert rpc_error(rig.call, "flow.get", key=H_KEY) == (
        f"no flow '{H_KEY}' in the table (it may have aged out); see flow.list")
    rig.send(flow_frames("H", "2", 2, *H))
    rig.wait_out()
    wait_drained(rig.run)
    h = rig.call("flow.get", key=H_KEY)
    assert (h["graph"], h["pkts"]) == ("default", 2), h
    st = rig.call("stats")
    got = rig.stop()

    assert paths(got, "F", "1") == ["p"] * 3 and paths(got, "H", "1") == ["p"] * 2
    assert paths(got, "F", "2") == ["p"] * 3
    assert paths(got, "G", "1") == ["d"] * 3
    assert paths(got, "F", "3") == ["d"] * 3
    assert paths(got, "H", "2") == ["d"] * 2
    assert len(got) == rig.n_out == 16
    noise = sum(1 for fr in read(rig.out) if marker_of(fr) is None)
    assert service(st, "p")["rx_pkts"] == 8 and service(st, "d")["rx_pkts"] == 8 + noise
    assert port(st, "out")["tx_pkts"] == 16 + noise
    # (Linux's packets from before chain.set met the rig's chain 'drop'.)
    assert [n["drops"] for n in st["nfs"]] == [{k: 0 for k in n["drops"]} for n in st["nfs"]]
    # H aged out for sure; G (idle since phase 2) and the flows of Linux's
    # packets age on their own clock: at least H.
    assert st["flows"]["deleted"] == 1 and st["flows"]["aged"] >= 1


def _frames(net: int, n: int, flows: int) -> list[bytes]:
    """n frames over `flows` flows from clients 10.NET.0.0/24 to 192.168.0.0/24,
    TCP and UDP, both directions, 60 to 1400 bytes; the payload says which."""
    out = []
    for i in range(n):
        f = i % flows
        a, b = f"10.{net}.0.{f + 1}", f"192.168.0.{f % 7 + 1}"
        sp, dp = 1024 + f, 80 if f % 2 else 53
        l4 = TCP if f % 2 else UDP
        if i % 3 == 2:  # reply
            a, b, sp, dp = b, a, dp, sp
        pkt = (Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / IP(src=a, dst=b, id=i)
               / l4(sport=sp, dport=dp))
        pad = max(0, (60, 300, 1400)[i % 3] - len(pkt))
        out.append(bytes(pkt / Raw(f"{net}:{i};".encode().ljust(pad, b"."))))
    return out


def _keys(frames: list[bytes]) -> set[tuple]:
    """The frames' flows as flow_key() gives them."""
    return {flow_key(f"{flow_of(f)[1].lower()} {a}:{p} > {b}:{q}")
            for f in frames for (a, p), (b, q) in [flow_of(f)[2:]]}


def flow_key(key: str) -> tuple:
    """A flow key of sluiced ("proto a:p > b:q", in an order of its own),
    either way round."""
    proto, a, _, b = key.split()
    return (proto, *sorted(tuple(e.rsplit(":", 1)) for e in (a, b)))


def test_a_rule_on_the_ingress_port_takes_only_that_ports_flows(launch, node, tmp_path):
    """Two input ports; the only rule matches in_port in1 (and nothing else),
    sending its flows to graph g (a -> out1). Flows from in2 take the
    default chain (b -> out2). Each output is exactly its port's input, in
    order."""
    f1, f2 = _frames(1, 400, flows=20), _frames(2, 300, flows=15)
    o1, o2 = tmp_path / "out1.pcap", tmp_path / "out2.pcap"
    ports = [{"name": "in1", "device": f"net_pcap0,rx_pcap={write(tmp_path / 'in1.pcap', f1)}"},
             {"name": "in2", "device": f"net_pcap1,rx_pcap={write(tmp_path / 'in2.pcap', f2)}"},
             {"name": "out1", "device": f"net_pcap2,tx_pcap={o1}"},
             {"name": "out2", "device": f"net_pcap3,tx_pcap={o2}"}]
    dep = deployment(node, ports=ports, nfs=[_fwd("a", "a"), _fwd("b", "b")],
                     chain=["b", "port:out2"])
    dep["graphs"] = [{"name": "g", "nodes": {"a": ["port:out1"]},
                      "match": [{"priority": 1, "in_port": "in1"}]}]
    run = launch(dep)
    st = _done(run, len(f1) + len(f2), ["out1", "out2"])
    rules = run.client.call("rule.list")["rules"]
    flows = run.client.call("flow.list", limit=100)["flows"]
    graphs = {fl["key"]: fl["graph"] for fl in flows}
    # Each flow knows the port it came in on, and in_port filters test it
    # (they tested port 0, the first port, for every existing flow).
    by_port = {p: sorted(fl["key"] for fl in run.client.call(
        "flow.list", in_port=p, limit=100)["flows"]) for p in ("in1", "in2", "out1")}
    gone = run.client.call("flow.delete", in_port="in2")
    run.stop()

    assert sorted(fl["key"] for fl in flows if fl["in_port"] == "in1") == by_port["in1"]
    assert sorted(fl["key"] for fl in flows if fl["in_port"] == "in2") == by_port["in2"]
    assert (sorted(map(flow_key, by_port["in1"])), sorted(map(flow_key, by_port["in2"])),
            by_port["out1"]) == (sorted(_keys(f1)), sorted(_keys(f2)), [])
    assert gone["deleted"] == 15, gone

    assert read(o1) == f1
    assert read(o2) == f2
    assert [(r["graph"], r["priority"], r["in_port"], r["flows"]) for r in rules] == [
        ("g", 1, "in1", 20)]
    assert {flow_key(k): g for k, g in graphs.items()} == {
        **{k: "g" for k in _keys(f1)}, **{k: "default" for k in _keys(f2)}}
    assert len(graphs) == 35
    assert service(st, "a")["rx_pkts"] == len(f1) and service(st, "b")["rx_pkts"] == len(f2)
    b1, b2 = sum(map(len, f1)), sum(map(len, f2))
    assert sorted((e["from"], e["to"], e["pkts"], e["bytes"]) for e in st["edges"]) == sorted([
        ("port:in1", "a", len(f1), b1), ("a", "port:out1", len(f1), b1),
        ("port:in2", "b", len(f2), b2), ("b", "port:out2", len(f2), b2)])
    assert st["drops_total"] == 0
    assert (st["flows"]["created"], st["flows"]["table_full"]) == (35, 0)


def test_a_full_table_sends_new_flows_by_their_rules_graph(launch, node, tmp_path):
    """With room for 64 flows, a rule sending all UDP to graph g (a -> out1)
    and a default chain b -> out2: the UDP flows beyond capacity go on
    without an entry (table_full) but still through g, not the default
    chain; TCP flows beyond capacity take the default chain."""
    udp = fixed_size(2000, flows=200, size=64)  # round robin over 200 flows
    tcp = _frames(3, 100, flows=10)
    tcp = [f for f in tcp if flow_of(f)[1] == "TCP"]  # 5 flows, 50 packets
    frames = udp + tcp
    src = tmp_path / "in.pcap"
    write_pcap(src, frames)
    o1, o2 = tmp_path / "out1.pcap", tmp_path / "out2.pcap"
    ports = [{"name": "in", "device": f"net_pcap0,rx_pcap={src}"},
             {"name": "out1", "device": f"net_pcap1,tx_pcap={o1}"},
             {"name": "out2", "device": f"net_pcap2,tx_pcap={o2}"}]
    dep = deployment(node, ports=ports, nfs=[_fwd("a", "a"), _fwd("b", "b")],
                     chain=["b", "port:out2"], sluiced_args=["--flow-capacity", "64"])
    dep["graphs"] = [{"name": "g", "nodes": {"a": ["port:out1"]},
                      "match": [{"priority": 1, "proto": "udp"}]}]
    run = launch(dep)
    st = _done(run, len(frames), ["out1", "out2"])
    rules = run.client.call("rule.list")["rules"]
    run.stop()

    assert read(o1) == udp
    assert read(o2) == tcp
    fl = st["flows"]
    assert fl["live"] == fl["created"] == fl["capacity"] == 64
    # UDP flows 0..63 got the entries (their first packets come first);
    # the other 136 flows' 10 packets each, and all 50 TCP ones, had none.
    assert fl["table_full"] == 136 * 10 + 50
    assert rules[0]["flows"] == 64
    assert service(st, "a")["rx_pkts"] == 2000 and service(st, "b")["rx_pkts"] == 50
    ub, tb = sum(map(len, udp)), sum(map(len, tcp))
    assert sorted((e["from"], e["to"], e["pkts"], e["bytes"]) for e in st["edges"]) == sorted([
        ("port:in", "a", 2000, ub), ("a", "port:out1", 2000, ub),
        ("port:in", "b", 50, tb), ("b", "port:out2", 50, tb)])
    assert st["drops_total"] == 0


def test_out_outside_the_graph_is_a_policy_violation(launch, node, tmp_path):
    """sluice-forward --out out at x: in a graph where x has no edge to
    port:out every packet is dropped and counted as policy_violation on x;
    in a graph that allows x -> port:out the same verdict goes through.
    (test_crosslayer.py has the same for TO.)"""
    x = {"name": "x", "program": prog("forward"), "service": "x",
         "args": ["--out", "out", "--tag-src-mac"]}
    rig = Rig(launch, node, tmp_path, [tag_nf("c"), x])
    rig.apply("bad", {"x": ["c"], "c": ["port:out"]}, src="10.77.1.0/24")
    rig.apply("ok", {"x": ["c", "port:out"], "c": ["port:out"]}, src="10.77.2.0/24")
    bad = ("10.77.1.1", "10.77.1.2", 5000, 6000)
    ok = ("10.77.2.1", "10.77.2.2", 5000, 6000)
    rig.send(flow_frames("BAD", "1", 7, *bad), out=False)
    rig.send(flow_frames("OK", "1", 5, *ok))
    rig.wait_out()

    def x_stats():
        st = rig.call("stats")
        inst = next(n for n in st["nfs"] if n["service"] == "x")
        return inst, service(st, "x"), st

    wait_until(lambda: x_stats()[0]["drops"]["policy_violation"] >= 7, 10,
               "7 policy violations at x")
    inst, svc, st = x_stats()
    got = rig.stop()

    assert inst["drops"]["policy_violation"] == 7, inst
    assert svc["drops"]["policy_violation"] == 7, svc
    assert inst["rx_pkts"] == 12, inst
    assert service(st, "c")["rx_pkts"] == 0
    assert port(st, "out")["tx_pkts"] == 5
    assert paths(got, "OK", "1") == ["x"] * 5
    assert not paths(got, "BAD", "1")
    assert len(got) == 5
