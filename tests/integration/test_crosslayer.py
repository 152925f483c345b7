"""Cross-layer requests (SDNFV §3.4) with a real sluiced and real NFs.

Traffic comes in phases: the test writes frames into the host side of
sluiced's TAP port (an AF_PACKET socket), waits until they are out, changes
how a flow travels the service graph (``flow.request``, or an NF's own
request), and sends the next phase. Every NF on a path is a
``sluice-forward --tag-src-mac``, which writes its instance id into the last
byte of the source MAC: the output capture (``net_pcap``, read after stop)
says which path each packet took. Packets are matched by their payload and
compared byte for byte, apart from that one byte. Linux's own packets on the
TAP interface (IPv6 neighbour discovery and the like) take the default chain
to ``drop``; only our flows (10.77.0.0/16) are sent to the graph under test
by a rule.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, build_dir, deployment, port, prog, service, wait_until
from packets import read
from scapy.all import IP, UDP, Ether, Raw

from sluice.runtime.client import Client, RpcError

_ifs = itertools.count()
PAD = 64  # UDP payload bytes: the marker, then dots


def tag_nf(name: str) -> dict[str, Any]:
    return {"name": name, "program": prog("forward"), "service": name,
            "args": ["--tag-src-mac"]}


def frame(src: str, dst: str, sport: int, dport: int, marker: str, size: int = PAD) -> bytes:
    payload = (marker + ";").encode().ljust(size, b".")
    return bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
                 / IP(src=src, dst=dst) / UDP(sport=sport, dport=dport) / Raw(payload))


def marker_of(f: bytes) -> str | None:
    """The marker of one of our frames (IPv4 from 10.77.0.0/16), else None."""
    if len(f) < 42 or f[12:14] != b"\x08\x00" or f[26:28] != bytes([10, 77]):
        return None
    return bytes(Ether(f)[Raw].load).split(b";", 1)[0].decode()


class Rig:
    """A sluiced with a TAP port 'in' and a capture port 'out', its NFs,
    an event subscription, and what was sent (marker -> frame)."""

    def __init__(self, launch, node: str, tmp_path: Path, nfs: list[dict[str, Any]],
                 sluiced_args: list[str] | None = None):
        self.ifname = f"slx{os.getpid() % 100000}{next(_ifs)}"[:15]
        self.out = tmp_path / "out.pcap"
        self.node = node
        opts = {"sluiced_args": sluiced_args} if sluiced_args else {}
        self.run = launch(deployment(
            node,
            ports=[{"name": "in", "device": f"net_tap0,iface={self.ifname}"},
                   {"name": "out", "device": f"net_pcap1,tx_pcap={self.out}"}],
            nfs=nfs, chain=["drop"], **opts))
        # Less noise from Linux on the interface; then up.
        subprocess.run(["sysctl", "-q", "-w", f"net.ipv6.conf.{self.ifname}.disable_ipv6=1"],
                       capture_output=True, check=False)
        subprocess.run(["ip", "link", "set", self.ifname, "up"], check=True, capture_output=True)
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        self.sock.bind((self.ifname, 0))
        self.instances = {n["instance"]: n["service"] for n in self.run.client.call("nf.list")}
        self.sent: dict[str, bytes] = {}
        self.tags: dict[str, int] = {}  # marker -> the instance that tagged it last (stop)
        self.n_out = 0  # our packets expected out so far
        self.linux_out = False  # whether Linux's own packets may go out too
        self.events: list[dict[str, Any]] = []
        self._sub = Client(node, self.run.dep.socket_path(), timeout=5.0)
        threading.Thread(target=self._listen, daemon=True).start()

    def _listen(self) -> None:
        try:
            for ev in self._sub.events():
                self.events.append(ev)
        except Exception:  # noqa: BLE001 (sluiced stopped, or the test closed it)
            pass

    def start_nf(self, service: str, program: str, args: list[str]) -> None:
        """Starts one more NF (one that needs services of a graph at
        start) and waits until it runs; stopped with the rest."""
        argv = [program, "--", "--node", self.node, "--service", service,
                "--mode", "shared", *args]
        p = self.run._spawn(service, argv)
        self.run.nfs.append(p)
        wait_until(lambda: any(n["pid"] == p.pid and n["state"] == "running"
                               for n in self.call("nf.list")) or p.exited() is not None,
                   10, f"{service} to register")
        assert p.exited() is None, p.tail()
        self.instances = {n["instance"]: n["service"] for n in self.call("nf.list")}

    def call(self, method: str, **params: Any) -> Any:
        return self.run.client.call(method, **params)

    def apply(self, name: str, nodes: dict[str, list[str]], **rule: Any) -> None:
        """Applies a graph (repeating until the subscription has seen it:
        then events are flowing) and a rule that sends flows to it."""
        for _ in range(20):
            res = self.call("graph.apply", name=name, nodes=nodes)
            try:
                self.wait_event(lambda e, v=res["version"]: e["kind"] == "graph.applied"
                                and e["data"]["name"] == name
                                and e["data"]["version"] == v, 0.5, "")
                break
            except AssertionError:
                continue
        else:
            raise AssertionError(f"no graph.applied event for {name}; events: {self.events}")
        if rule:
            self.call("rule.add", graph=name, **rule)

    def wait_event(self, pred, timeout: float, what: str) -> dict[str, Any]:
        return wait_until(lambda: next((e for e in list(self.events) if pred(e)), None),
                          timeout, what or "an event", interval=0.02)

    def send(self, frames: list[tuple[str, bytes]], out: bool = True, gap: float = 0.0) -> None:
        """Sends (marker, frame) pairs; out: they are expected at port out."""
        for m, f in frames:
            assert m not in self.sent, m
            self.sent[m] = f
            self.sock.send(f)
            if gap:
                time.sleep(gap)
        if out:
            self.n_out += len(frames)

    def wait_out(self, timeout: float = 10.0) -> None:
        """Waits until every packet expected out so far is out, and no more
        (only our flows go to port out, unless the test sent the default
        chain there: then Linux's own packets may too)."""
        def done() -> bool:
            out = port(self.call("stats"), "out")["tx_pkts"]
            return out >= self.n_out if self.linux_out else out == self.n_out

        try:
            wait_until(done, timeout, f"{self.n_out} packets out")
        except AssertionError as e:
            st = self.call("stats")
            drops = {(x.get("name") or f"{x['service']}#{x['instance']}", k): v
                     for x in st["ports"] + st["nfs"] for k, v in x["drops"].items() if v}
            raise AssertionError(f"{e}; out: {port(st, 'out')['tx_pkts']}; drops: {drops}; "
                                 f"logs in {self.run.run_dir}") from None

    def stop(self) -> dict[str, str]:
        """Stops everything; returns marker -> service that tagged it last,
        checking each packet byte for byte (but the tag) against the one
        sent, and that nothing came out twice."""
        self.sock.close()
        self._sub.close()
        self.run.stop()
        got: dict[str, str] = {}
        for f in read(self.out) if self.out.exists() else []:
            m = marker_of(f)
            if m is None:
                continue
            assert m in self.sent and m not in got, m
            want = self.sent[m]
            assert len(f) == len(want) and f[:11] == want[:11] and f[12:] == want[12:], m
            got[m] = self.instances.get(f[11], f"instance {f[11]}")
            self.tags[m] = f[11]
        return got


def flow_frames(name: str, phase: str, n: int, src: str, dst: str, sport: int, dport: int,
                size: int = PAD) -> list[tuple[str, bytes]]:
    return [(m, frame(src, dst, sport, dport, m, size))
            for m in (f"{name}:{phase}:{i}" for i in range(n))]


def paths(got: dict[str, str], name: str, phase: str) -> list[str]:
    ms = sorted((m for m in got if m.startswith(f"{name}:{phase}:")),
                key=lambda m: int(m.rsplit(":", 1)[1]))
    return [got[m] for m in ms]


F = ("10.77.0.1", "10.77.0.2", 1000, 2000)   # the flow whose route changes
F_KEY = "udp 10.77.0.1:1000 > 10.77.0.2:2000"
G = ("10.77.0.3", "10.77.0.2", 1001, 2000)   # another flow: never changes
G_KEY = "udp 10.77.0.3:1001 > 10.77.0.2:2000"


def fc_exit_line(frames: list[bytes], **counts: int) -> re.Pattern[str]:
    """sluice-flowclass's exit report, exact but for its uptime and rate:
    packets and bytes are those of the frames it got; `counts` the rest."""
    want = {"non_ip": 0, "flows": 0, "flows_capacity": 65536, "flows_untracked": 0,
            "flows_seen": 0, "evicted": 0, "unclassified": 0, "ants": 0, "elephants": 0,
            "changes": 0, "requests": 0, "applied": 0, "rejected": 0, "not_queued": 0,
            **counts}
    return re.compile(
        rf"flowclass-stats: reason=exit uptime=\d+\.\d packets={len(frames)} "
        rf"bytes={sum(map(len, frames))} pps=\d+ "
        + " ".join(f"{k}={v}" for k, v in want.items()))


def rpc_error(fn, *a: Any, **kw: Any) -> str:
    with pytest.raises(RpcError) as ei:
        fn(*a, **kw)
    return ei.value.message


@pytest.mark.parametrize("lookup", ["cached", "naive"])
def test_change_default(launch, node, tmp_path, lookup):
    """flow.request change_default: F's next packets (both directions) take
    the other allowed edge; G keeps the default; a hop the graph does not
    allow is refused with its reason; subscribers see the request. The same
    paths, bytes and counters (per flow, per service, per edge, per rule)
    with the flow looked up once at ingress (cached) and at every hop
    (naive)."""
    rig = Rig(launch, node, tmp_path, [tag_nf("cls"), tag_nf("p"), tag_nf("q")],
              sluiced_args=["--flow-lookup", lookup])
    rig.apply("g", {"cls": ["p", "q"], "p": ["port:out"], "q": ["port:out"]},
              src="10.77.0.0/16")
    rig.send(flow_frames("F", "1", 5, *F) + flow_frames("G", "1", 5, *G))
    rig.wait_out()

    assert rig.call("flow.request", type="change_default", flow={"key": F_KEY},
                    service="cls", to="q") == {"applied": 1}
    fl = rig.call("flow.get", key=F_KEY)
    assert fl["graph"] == "g" and fl["overrides"] == [
        {"service": "cls", "type": "default", "to": "q"}], fl
    back = (F[1], F[0], F[3], F[2])
    rig.send(flow_frames("F", "2", 5, *F) + flow_frames("G", "2", 5, *G)
             + flow_frames("Fr", "2", 3, *back))
    rig.wait_out()

    # Refused: port:out is not an edge of cls; a wildcard of no live flow
    # changes nothing; an unknown hop.
    msg = rpc_error(rig.call, "flow.request", type="change_default", flow={"key": F_KEY},
                    service="cls", to="port:out")
    assert msg == ("change_default rejected: graph 'g' has no edge from 'cls' to 'port:out': "
                   "ChangeDefault may only pick one of the node's allowed next hops"), msg
    msg = rpc_error(rig.call, "flow.request", type="change_default", flow={"key": F_KEY},
                    service="cls", to="nosuch")
    assert msg == "param 'to' 'nosuch': no such service or port", msg
    msg = rpc_error(rig.call, "flow.request", type="change_default",
                    flow={"key": "udp 10.77.9.9:1 > 10.77.9.10:2"}, service="cls", to="q")
    assert msg == "change_default rejected: no such flow in the table (it may have aged out)", msg
    # The refused requests changed nothing.
    rig.send(flow_frames("F", "3", 3, *F))
    rig.wait_out()
    st = rig.call("stats")
    flows = [rig.call("flow.get", key=k) for k in (F_KEY, G_KEY)]
    rules = rig.call("rule.list")["rules"]
    events = list(rig.events)
    got = rig.stop()

    # Counters, exactly: F is 16 packets (13 one way, 3 back), G 10; p got
    # F:1 and G, q F:2, F:3 and Fr:2.
    def nbytes(prefixes: tuple[str, ...]) -> int:
        return sum(len(f) for m, f in rig.sent.items() if m.startswith(prefixes))

    assert st["flows"]["lookup"] == lookup
    fb, gb = nbytes(("F:", "Fr:")), nbytes(("G:",))
    assert [(f["graph"], f["pkts"], f["bytes"]) for f in flows] == [
        ("g", 16, fb), ("g", 10, gb)]
    assert [(r["graph"], r["flows"]) for r in rules] == [("g", 2)]
    pb = nbytes(("F:1:", "G:"))
    qb = nbytes(("F:2:", "F:3:", "Fr:2:"))
    assert [(service(st, s)["rx_pkts"], sum(service(st, s)["drops"].values()))
            for s in ("cls", "p", "q")] == [(26, 0), (15, 0), (11, 0)]
    ours = [(e["from"], e["to"], e["pkts"], e["bytes"]) for e in st["edges"]
            if "drop" not in (e["from"], e["to"])]  # Linux's own packets: chain -> drop
    assert sorted(ours) == sorted([
        ("port:in", "cls", 26, fb + gb), ("cls", "p", 15, pb), ("cls", "q", 11, qb),
        ("p", "port:out", 15, pb), ("q", "port:out", 11, qb)])

    assert paths(got, "F", "1") == ["p"] * 5
    assert paths(got, "G", "1") == ["p"] * 5
    assert paths(got, "F", "2") == ["q"] * 5
    assert paths(got, "Fr", "2") == ["q"] * 3  # the other direction: the same flow
    assert paths(got, "G", "2") == ["p"] * 5
    assert paths(got, "F", "3") == ["q"] * 3
    assert len(got) == rig.n_out

    # One event per request sluiced weighed: the applied one and the two
    # refusals (the unknown hop 'nosuch' is refused before, as a bad param).
    reqs = [e["data"] for e in events if e["kind"] == "flow.request"]
    cd = {"nf": None, "instance": None, "type": "change_default", "service": "cls"}
    assert reqs == [
        {**cd, "flow": F_KEY, "to": "q", "result": "applied", "applied": 1},
        {**cd, "flow": F_KEY, "to": "port:out", "result": "rejected", "applied": 0,
         "reason": "graph 'g' has no edge from 'cls' to 'port:out': ChangeDefault may only "
                   "pick one of the node's allowed next hops"},
        {**cd, "flow": "udp 10.77.9.9:1 > 10.77.9.10:2", "to": "q", "result": "rejected",
         "applied": 0, "reason": "no such flow in the table (it may have aged out)"},
    ], events


def test_skip_me_and_request_me(launch, node, tmp_path):
    """a -> {b, c} -> out: SkipMe(F, b) sends F from a straight out (b's
    default), RequestMe(F, c) makes c F's default at a, RequestMe(F, b)
    undoes the skip; G keeps a -> b. Requests naming a service outside the
    graph, or one no node has an edge to, are refused by reason."""
    rig = Rig(launch, node, tmp_path, [tag_nf("a"), tag_nf("b"), tag_nf("c")])
    rig.apply("g", {"a": ["b", "c"], "b": ["port:out"], "c": ["port:out"]},
              src="10.77.0.0/16")
    rig.call("graph.apply", name="h", nodes={"other": ["drop"]})  # a service not in g
    fk = {"key": F_KEY}

    def phase(p: str) -> None:
        rig.send(flow_frames("F", p, 4, *F) + flow_frames("G", p, 4, *G))
        rig.wait_out()

    phase("1")
    assert rig.call("flow.request", type="skip_me", flow=fk, service="b") == {"applied": 1}
    assert rig.call("flow.get", key=F_KEY)["overrides"] == [{"service": "b", "type": "skip"}]
    phase("2")
    assert rig.call("flow.request", type="request_me", flow=fk, service="c") == {"applied": 1}
    phase("3")
    assert rig.call("flow.request", type="request_me", flow=fk, service="b") == {"applied": 1}
    phase("4")
    # A wildcard: every live flow it matches (G here), and flows to come.
    assert rig.call("flow.request", type="skip_me",
                    flow={"match": {"proto": "udp", "src": "10.77.0.3"}},
                    service="b") == {"applied": 1, "id": 1}  # kept as request 1
    H = ("10.77.0.3", "10.77.0.2", 1002, 2000)  # a new flow the wildcard matches
    rig.send(flow_frames("G", "5", 4, *G) + flow_frames("H", "5", 4, *H))
    rig.wait_out()
    # A wildcard RequestMe before any of its flows exists: flows that
    # start later go to c as well (every node with an edge to c: a).
    assert rig.call("flow.request", type="request_me",
                    flow={"match": {"proto": "udp", "src": "10.77.0.4"}},
                    service="c") == {"applied": 0, "id": 2}
    J = ("10.77.0.4", "10.77.0.2", 1003, 2000)
    rig.send(flow_frames("J", "6", 4, *J) + flow_frames("G", "6", 4, *G))
    rig.wait_out()
    assert rig.call("flow.get", key="udp 10.77.0.2:2000 > 10.77.0.4:1003")["overrides"] == [
        {"service": "a", "type": "default", "to": "c"}]

    msg = rpc_error(rig.call, "flow.request", type="skip_me", flow=fk, service="other")
    assert msg == ("skip_me rejected: service 'other' is not a node of graph 'g': name one of "
                   "its nodes (see graph.get)"), msg
    msg = rpc_error(rig.call, "flow.request", type="request_me", flow=fk, service="a")
    assert msg == "request_me rejected: no node of graph 'g' has an edge to 'a'", msg
    msg = rpc_error(rig.call, "flow.request", type="request_me", flow=fk, service="nosuch")
    assert msg == "no service nosuch; service.list shows the services", msg
    msg = rpc_error(rig.call, "flow.request", type="skip_me", flow={}, service="b")
    assert msg == "param 'flow' must be {\"key\": \"tcp a:p > b:q\"} or {\"match\": {...}}", msg
    got = rig.stop()

    assert paths(got, "F", "1") == ["b"] * 4
    assert paths(got, "F", "2") == ["a"] * 4  # b skipped: a's tag is the last
    assert paths(got, "F", "3") == ["c"] * 4
    assert paths(got, "F", "4") == ["b"] * 4
    for p in "1234":
        assert paths(got, "G", p) == ["b"] * 4, p
    assert paths(got, "G", "5") == ["a"] * 4
    assert paths(got, "H", "5") == ["a"] * 4
    assert paths(got, "J", "6") == ["c"] * 4
    assert paths(got, "G", "6") == ["a"] * 4
    assert len(got) == rig.n_out


def test_message(launch, node, tmp_path):
    """flow.request message: the NF's on_message runs (sluice-flowclass
    logs it and applies it), subscribers get nf.message; a message to a
    service without instances is refused."""
    rig = Rig(launch, node, tmp_path, [
        {"name": "fc", "program": prog("flowclass"), "service": "fc",
         "args": ["--stats-ms", "0"]}])
    rig.apply("g", {"fc": ["port:out"]})  # also: events are flowing
    assert rig.call("flow.request", type="message", service="fc", key="ant-max-pps",
                    value="5") == {"applied": 1}
    assert rig.call("flow.request", type="message", service="fc", key="stats",
                    value="now") == {"applied": 1}
    log = rig.run.run_dir / "fc.log"
    wait_until(lambda: "flowclass-message: key=stats value=now applied" in log.read_text(),
               5, f"the message in {log}")
    text = log.read_text()
    assert "flowclass-message: key=ant-max-pps value=5 applied\n" in text
    assert "flowclass-stats: reason=message " in text
    # A service no instance of runs.
    rig.call("graph.apply", name="h", nodes={"ghost": ["drop"]})
    msg = rpc_error(rig.call, "flow.request", type="message", service="ghost", key="k", value="v")
    assert msg == ("message rejected: service 'ghost' has no running instance to take the "
                   "message"), msg
    msg = rpc_error(rig.call, "flow.request", type="message", service="fc", key="k")
    assert msg == "a message needs 'key' and 'value' (strings)", msg
    try:
        ev = rig.wait_event(lambda e: e["kind"] == "nf.message"
                            and e["data"].get("key") == "ant-max-pps", 3, "")
    except AssertionError:
        ev = None
    # The refused message's event is the last one sluiced sends, and the
    # subscriber may read it after the RPC's answer: wait for it before
    # taking the list (the assertion below says what came if it never does).
    with contextlib.suppress(AssertionError):
        rig.wait_event(lambda e: e["kind"] == "nf.message"
                       and e["data"].get("service") == "ghost", 3, "")
    events = list(rig.events)
    rig.stop()
    assert ev is not None, f"no nf.message event for a flow.request message; events: {events}"
    # One event per message sluiced weighed: the two delivered, the refused one.
    msgs = [e["data"] for e in events if e["kind"] == "nf.message"]
    assert msgs == [
        {"from": "control", "service": "fc", "key": "ant-max-pps", "value": "5"},
        {"from": "control", "service": "fc", "key": "stats", "value": "now"},
        {"from": "control", "service": "ghost", "key": "k", "value": "v",
         "reason": "service 'ghost' has no running instance to take the message"},
    ], events


def test_flowclass_reroutes_ants_and_elephants(launch, node, tmp_path):
    """sluice-flowclass: fc -> {eleph, ant} -> out. A flow of small packets
    at a low rate becomes an ant and is re-routed to 'ant'; a flow of big
    packets is an elephant and stays on 'eleph'; when the ant speeds up it
    becomes an elephant again and goes back. Each re-route is an NF request
    that subscribers see."""
    rig = Rig(launch, node, tmp_path, [
        {"name": "fc", "program": prog("flowclass"), "service": "fc",
         "args": ["--window-ms", "400", "--ant-max-pps", "60", "--ant-max-size", "300",
                  "--ant-to", "ant", "--elephant-to", "eleph", "--stats-ms", "1000"]},
        tag_nf("eleph"), tag_nf("ant")])
    rig.apply("g", {"fc": ["eleph", "ant"], "eleph": ["port:out"], "ant": ["port:out"]},
              src="10.77.0.0/16")
    A = F
    E = ("10.77.0.5", "10.77.0.6", 3000, 4000)
    A_KEY = F_KEY
    E_KEY = "udp 10.77.0.5:3000 > 10.77.0.6:4000"
    log = rig.run.run_dir / "fc.log"

    def applied(key: str, to: str):
        return lambda e: (e["kind"] == "flow.request" and e["data"].get("nf") == "fc"
                          and e["data"].get("flow") == key and e["data"].get("to") == to
                          and e["data"].get("type") == "change_default"
                          and e["data"].get("result") == "applied")

    # Phase 1: A 100-byte packets, E 1000-byte, both at 20 pps, until
    # both are classified and re-routed.
    a = flow_frames("A", "1", 40, *A, size=58)
    e = flow_frames("E", "1", 40, *E, size=958)
    n = 0
    while n < 40 and not (any(applied(A_KEY, "ant")(x) for x in list(rig.events))
                          and any(applied(E_KEY, "eleph")(x) for x in list(rig.events))):
        rig.send([a[n], e[n]], gap=0.05)
        n += 1
    rig.wait_event(applied(A_KEY, "ant"), 3, "A re-routed to ant")
    rig.wait_event(applied(E_KEY, "eleph"), 3, "E re-routed to eleph")
    rig.wait_out()
    text = log.read_text()
    cls = [ln for ln in text.splitlines() if ln.startswith("flowclass: ")]
    assert len(cls) == 2 and {
        re.sub(r" pps=\d+\.\d ", " pps=* ", ln) for ln in cls} == {
        f"flowclass: {A_KEY} ant pps=* size=100", f"flowclass: {E_KEY} elephant pps=* size=1000"
    }, text

    # Phase 2: a few more slow A packets: they go to ant now.
    rig.send(flow_frames("A", "2", 3, *A, size=58), gap=0.05)
    rig.wait_out()
    # Phase 3: A speeds up (about 300 pps) until flowclass calls it an
    # elephant and it is back on eleph; then a short burst (phase 4).
    fast = flow_frames("A", "3", 600, *A, size=58)
    k = 0
    while k < len(fast) and not any(applied(A_KEY, "eleph")(x) for x in list(rig.events)):
        rig.send(fast[k:k + 3])
        time.sleep(0.01)
        k += 3
    rig.wait_event(applied(A_KEY, "eleph"), 3, "A re-routed to eleph")
    rig.send(flow_frames("A", "4", 5, *A, size=58))
    rig.wait_out()
    cls = [ln for ln in log.read_text().splitlines() if ln.startswith("flowclass: ")]
    assert len(cls) == 3 and re.fullmatch(
        rf"flowclass: {A_KEY} elephant pps=\d+\.\d size=100", cls[2]), cls
    got = rig.stop()

    text = log.read_text()
    a1 = paths(got, "A", "1")
    # The default edge until the first window ends (then at most a few
    # sent while the request was on its way are on ant already).
    assert a1[0] == "eleph" and a1 == sorted(a1, key=lambda s: s == "ant"), a1
    assert set(paths(got, "E", "1")) == {"eleph"}
    assert paths(got, "A", "2") == ["ant"] * 3
    a3 = paths(got, "A", "3")
    assert a3[0] == "ant" and a3 == sorted(a3, key=lambda s: s == "eleph"), a3
    assert paths(got, "A", "4") == ["eleph"] * 5
    assert len(got) == rig.n_out
    # The exit report: both flows known, every request applied.
    # Three classes changed (A ant, E elephant, A elephant again), each
    # with one request, applied.
    stats = [ln for ln in text.splitlines() if ln.startswith("flowclass-stats: reason=exit")]
    assert len(stats) == 1 and fc_exit_line(
        list(rig.sent.values()), flows=2, flows_seen=2, elephants=2, changes=3, requests=3,
        applied=3).fullmatch(stats[0]), stats


@pytest.mark.parametrize("handoff", ["direct", "mgr"])
def test_to_outside_the_graph_is_a_policy_violation(launch, node, tmp_path, handoff):
    """sluice-forward --to c at x: in a graph where x has no edge to c every
    packet is dropped and counted as policy_violation on x; in a graph that
    allows x -> c the same verdict goes through. x's own tx is what went
    through, in = out + drops, also when sluiced's I/O thread resolves x's
    hops (--handoff mgr), after x counted its whole tx ring as sent."""
    rig = Rig(launch, node, tmp_path, [tag_nf("c")], sluiced_args=["--handoff", handoff])
    rig.apply("bad", {"x": ["b", "port:out"], "b": ["c", "port:out"], "c": ["port:out"]},
              src="10.77.1.0/24")
    rig.apply("ok", {"x": ["port:out", "c"], "c": ["port:out"]}, src="10.77.2.0/24")
    # x looks c up when it starts: start it once c is known.
    rig.start_nf("x", prog("forward"), ["--to", "c"])
    bad = ("10.77.1.1", "10.77.1.2", 5000, 6000)
    ok = ("10.77.2.1", "10.77.2.2", 5000, 6000)
    rig.send(flow_frames("BAD", "1", 7, *bad), out=False)
    rig.send(flow_frames("OK", "1", 5, *ok))
    rig.wait_out()

    def x_stats() -> tuple[dict[str, Any], dict[str, Any]]:
        st = rig.call("stats")
        inst = next(n for n in st["nfs"] if n["service"] == "x")
        return inst, service(st, "x")

    wait_until(lambda: x_stats()[0]["drops"]["policy_violation"] >= 7, 10,
               "7 policy violations at x")
    inst, svc = x_stats()
    got = rig.stop()

    assert inst["drops"]["policy_violation"] == 7, inst
    assert svc["drops"]["policy_violation"] == 7, svc
    assert inst["rx_pkts"] == 12, inst
    assert (inst["tx_pkts"], svc["tx_pkts"]) == (5, 5), (inst, svc)
    assert inst["tx_bytes"] == svc["tx_bytes"] == svc["rx_bytes"] * 5 // 12, (inst, svc)
    assert paths(got, "OK", "1") == ["c"] * 5
    assert not paths(got, "BAD", "1")
    assert len(got) == 5


def test_lb_set_rr_alternates_one_flow_over_two_replicas(launch, node, tmp_path):
    """w runs two replicas and F is pinned to one of them (flow-sticky, the
    flow table on). lb.set rr at run time: F's packets alternate between
    the two replicas, exactly every other one (round robin ignores and
    keeps the pin); lb.set flow: F is back on its pinned replica."""
    rig = Rig(launch, node, tmp_path, [{**tag_nf("w"), "replicas": 2}])
    rig.apply("g", {"w": ["port:out"]}, src="10.77.0.0/16")
    ws = sorted(i for i, s in rig.instances.items() if s == "w")
    assert len(ws) == 2, rig.instances
    rig.send(flow_frames("F", "1", 10, *F))
    rig.wait_out()
    pin = rig.call("flow.get", key=F_KEY)["pins"]
    assert set(pin) == {"w"} and pin["w"] in ws, pin
    assert rig.call("lb.set", service="w", mode="rr") == {"service": "w", "mode": "rr"}
    rig.send(flow_frames("F", "2", 20, *F))
    rig.wait_out()
    assert rig.call("flow.get", key=F_KEY)["pins"] == pin  # rr moved no pin
    assert rig.call("lb.set", service="w", mode="flow") == {"service": "w", "mode": "flow"}
    rig.send(flow_frames("F", "3", 10, *F))
    rig.wait_out()
    got = rig.stop()

    def tags(phase: str) -> list[int]:
        ms = sorted((m for m in got if m.startswith(f"F:{phase}:")),
                    key=lambda m: int(m.rsplit(":", 1)[1]))
        return [rig.tags[m] for m in ms]

    assert len(got) == rig.n_out == 40
    assert tags("1") == [pin["w"]] * 10
    rr = tags("2")
    first, other = rr[0], ws[1] if rr[0] == ws[0] else ws[0]
    assert rr == [first, other] * 10, rr
    assert tags("3") == [pin["w"]] * 10


CD_REFUSED = ("graph 'g' has no edge from 'fc' to 'ghost': ChangeDefault may "
              "only pick one of the node's allowed next hops")


def test_nf_request_rejected_comes_back_with_reason(launch, node, tmp_path):
    """sluice-flowclass --ant-to ghost where fc's only edge is p: the flow
    it classifies as an ant gets a ChangeDefault that sluiced refuses.
    libsluice logs the refusal (one line: the request and the reason) and
    still hands it to the NF's on_reply (flowclass-rejected, counted);
    subscribers see a rejected flow.request; the flow keeps the default
    path and gets no override. The request is made once."""
    rig = Rig(launch, node, tmp_path, [
        {"name": "fc", "program": prog("flowclass"), "service": "fc",
         "args": ["--window-ms", "200", "--ant-max-pps", "1000", "--ant-max-size", "300",
                  "--ant-to", "ghost", "--stats-ms", "0"]},
        tag_nf("p")])
    rig.call("graph.apply", name="h", nodes={"ghost": ["drop"]})  # ghost: a known service
    rig.apply("g", {"fc": ["p"], "p": ["port:out"]}, src="10.77.0.0/16")

    def rejected(e: dict[str, Any]) -> bool:
        return (e["kind"] == "flow.request" and e["data"].get("nf") == "fc"
                and e["data"].get("result") == "rejected")

    # Small packets at about 25 pps until flowclass has asked and been refused.
    a = flow_frames("F", "1", 60, *F)
    n = 0
    while n < len(a) and not any(rejected(e) for e in list(rig.events)):
        rig.send([a[n]], gap=0.04)
        n += 1
    ev = rig.wait_event(rejected, 3, "fc's request rejected")
    rig.wait_out()
    log = rig.run.run_dir / "fc.log"
    wait_until(lambda: "flowclass-rejected: " in log.read_text(), 5, f"the rejection in {log}")
    # The flow keeps its default: no override, the next packets go to p.
    assert rig.call("flow.get", key=F_KEY)["overrides"] == []
    rig.send(flow_frames("F", "2", 5, *F))
    rig.wait_out()
    events = list(rig.events)
    got = rig.stop()

    assert ev["data"] == {"nf": "fc", "instance": ev["data"]["instance"],
                          "type": "change_default", "flow": F_KEY, "service": "fc",
                          "to": "ghost", "result": "rejected", "applied": 0,
                          "reason": CD_REFUSED}, ev
    assert rig.instances[ev["data"]["instance"]] == "fc"
    assert sum(1 for e in events if e["kind"] == "flow.request") == 1, events
    lines = log.read_text().splitlines()
    ours = [ln for ln in lines if "rejected" in ln and not ln.startswith("flowclass-stats:")]
    assert ours == [
        f"{prog('flowclass')}: request 1 rejected by sluiced: change_default flow={F_KEY} "
        f"service=fc to=ghost: {CD_REFUSED}",
        f"flowclass-rejected: id=1 flow={F_KEY} class=ant to=ghost reason={CD_REFUSED}",
    ], ours
    stats = [ln for ln in lines if ln.startswith("flowclass-stats: reason=exit")]
    assert len(stats) == 1 and fc_exit_line(
        list(rig.sent.values()), flows=1, flows_seen=1, ants=1, changes=1, requests=1,
        rejected=1).fullmatch(stats[0]), stats
    assert paths(got, "F", "1") == ["p"] * n
    assert paths(got, "F", "2") == ["p"] * 5
    assert len(got) == rig.n_out


@pytest.fixture(scope="module")
def skipme_nf(tmp_path_factory) -> str:
    """tests/integration/skipme_nf.c, built against libsluice like
    docs/nf-guide.md builds its NF."""
    exe = tmp_path_factory.mktemp("skipme") / "sluice-skipme"
    cmd = ("cc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Iinclude "
           "$(pkg-config --cflags libdpdk) tests/integration/skipme_nf.c "
           f"{build_dir()}/src/nflib/libsluice.a $(pkg-config --libs libdpdk) -ljansson "
           f"-o {exe}")
    r = subprocess.run(["sh", "-c", cmd], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"{cmd}: {r.stderr}"
    return str(exe)


def test_skip_me_from_a_real_nf(launch, node, tmp_path, skipme_nf):
    """a -> s -> out, s a real NF that asks SkipMe(flow, s) at a flow's
    5th packet: F's first 5 packets go through s, every later one (both
    directions) from a straight out; G (4 packets) never reaches 5 and
    stays on s. s saw exactly 5 packets of F, sluiced's counters agree."""
    rig = Rig(launch, node, tmp_path, [
        tag_nf("a"),
        {"name": "s", "program": skipme_nf, "service": "s", "args": ["--after", "5"]}])
    rig.apply("g", {"a": ["s"], "s": ["port:out"]}, src="10.77.0.0/16")

    def skipped(e: dict[str, Any]) -> bool:
        return (e["kind"] == "flow.request" and e["data"].get("nf") == "s"
                and e["data"].get("type") == "skip_me")

    rig.send(flow_frames("F", "1", 5, *F) + flow_frames("G", "1", 2, *G))
    rig.wait_out()
    ev = rig.wait_event(skipped, 5, "s's SkipMe")
    assert rig.call("flow.get", key=F_KEY)["overrides"] == [{"service": "s", "type": "skip"}]
    back = (F[1], F[0], F[3], F[2])
    rig.send(flow_frames("F", "2", 6, *F) + flow_frames("Fr", "2", 3, *back)
             + flow_frames("G", "2", 2, *G))
    rig.wait_out()
    st = rig.call("stats")
    flows = [rig.call("flow.get", key=k) for k in (F_KEY, G_KEY)]
    got = rig.stop()
    log = (rig.run.run_dir / "s.log").read_text()

    assert {k: v for k, v in ev["data"].items() if k != "instance"} == {
        "nf": "s", "type": "skip_me", "flow": F_KEY, "service": "s", "result": "applied",
        "applied": 1}, ev
    assert paths(got, "F", "1") == ["s"] * 5
    assert paths(got, "G", "1") == ["s"] * 2
    assert paths(got, "F", "2") == ["a"] * 6  # s skipped: a's tag is the last
    assert paths(got, "Fr", "2") == ["a"] * 3
    assert paths(got, "G", "2") == ["s"] * 2
    assert len(got) == rig.n_out == 18
    # The NF's own count, and sluiced's.
    assert sorted(ln for ln in log.splitlines() if ln.startswith("skipme-")) == sorted([
        "skipme-reply: id=1 applied",
        f"skipme-flow: flow={F_KEY} packets=5 request=1",
        f"skipme-flow: flow={G_KEY} packets=4 request=0",
        "skipme-stats: packets=9 untracked=0 requests=1 applied=1 rejected=0 not_queued=0"]), log
    assert [(service(st, x)["rx_pkts"], sum(service(st, x)["drops"].values()))
            for x in ("a", "s")] == [(18, 0), (9, 0)]
    ours = sorted((e["from"], e["to"], e["pkts"]) for e in st["edges"]
                  if "drop" not in (e["from"], e["to"]))
    assert ours == sorted([("port:in", "a", 18), ("a", "s", 9), ("s", "port:out", 9),
                           ("a", "port:out", 9)])
    assert [(f["pkts"], f["overrides"]) for f in flows] == [
        (14, [{"service": "s", "type": "skip"}]), (4, [])]


def test_a_message_an_inbox_has_no_room_for_is_counted(launch, node, tmp_path):
    """A Message goes to every instance; one whose inbox is full (here a
    replica stopped with SIGSTOP) does not get it: the result counts the
    instances that did and a note says how many did not, as
    status.messages.undelivered counts them, and the log says so. Keys and
    values too long for a message are refused, not cut."""
    import signal

    run = launch(deployment(node, ports=[], nfs=[
        {"name": f"fc{i}", "program": prog("flowclass"), "service": "fc",
         "args": ["--stats-ms", "0"]} for i in (1, 2)], chain=["fc", "drop"],
        sluiced_args=["--nf-hang-ms", "0"]))  # a stopped NF is not hung here
    wait_until(lambda: len(run.client.call("nf.list")) == 2, 10, "both replicas")
    stopped = run.nfs[1]
    os.kill(stopped.pid, signal.SIGSTOP)
    got: list[int] = []  # instances that took each message
    notes: set[tuple[int, str | None]] = set()
    try:
        while len([a for a in got if a]) < 400:
            try:
                res = run.client.call("flow.request", type="message", service="fc",
                                      key="noop", value=str(len(got)))
                got.append(res["applied"])
                notes.add((res["applied"], res.get("note")))
            except RpcError as e:  # the running one's inbox is full too: let it read
                assert e.message == ("message rejected: no instance of 'fc' could take the "
                                     "message (inboxes full)"), e.message
                got.append(0)
                time.sleep(0.01)
    finally:
        os.kill(stopped.pid, signal.SIGCONT)
    # The stopped one's inbox filled up; after that only the other took them.
    assert got[0] == 2 and 1 in got and 2 not in got[got.index(1):], got
    assert notes == {(2, None), (1, "1 of the 2 instances of 'fc' had a full inbox and did not "
                                   "get it (status messages.undelivered)")}, notes
    status = run.client.call("status")
    assert status["messages"]["undelivered"] == sum(2 - a for a in got), status["messages"]
    # Logged with the running count: every time up to 20, then every 1000th.
    total, want = 0, []
    for a in got:
        if a < 2:
            total += 2 - a
            if total <= 20 or total % 1000 == 0:
                want.append((2 - a, total))
    said = re.findall(r"message 'noop' to service 'fc': (\d) of its 2 instances had a full "
                      r"inbox and did not get it \(status messages\.undelivered (\d+)\)",
                      run.sluiced.log.read_text())
    assert [(int(a), int(b)) for a, b in said] == want, (said, want)
    # Too long, or empty: refused with the limits, nothing sent.
    for key, value in (("k" * 64, "v"), ("k", "v" * 256), ("", "v")):
        msg = rpc_error(run.client.call, "flow.request", type="message", service="fc",
                        key=key, value=value)
        assert msg == (f"a message's key is 1 to 63 bytes and its value at most 255 (got "
                       f"{len(key)} and {len(value)}): shorten them"), msg
    # The longest message fits, and reaches both once the resumed replica
    # has read its full inbox again (it polls every 1 ms once it runs).
    wait_until(lambda: run.client.call("flow.request", type="message", service="fc",
                                       key="k" * 63, value="v" * 255) == {"applied": 2},
               10, "the longest message to reach both replicas")
