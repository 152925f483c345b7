"""Soak: hundreds of rounds of control operations against an ASan sluiced
while a capture is replayed through two forward NFs, then a check that
nothing sluiced holds grew: its fds, its resident memory, the packet
buffers, the services, graphs, rules, kept flow requests, flows, control
connections, and no zombie children. Then a clean stop with no sanitizer
report and no hugepage or runtime files left.

Each round opens and closes control connections (some closed half-way
through a request line, some before reading the reply, some subscribed
and closed without reading), applies and removes a graph and its rule,
sets the chain and the load balancing, lists and deletes flows with
filters, asks DPDK telemetry, sends malformed requests, and every few
rounds scales service b up and down (real NF processes, some cancelled
before they register). SLUICE_SOAK_ROUNDS overrides the number of rounds.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import time
from pathlib import Path
from typing import Any

from conftest import (
    ASAN_BUILD,
    ROOT,
    assert_no_sanitizer_report,
    deployment,
    needs_asan,
    port,
    prog,
    wait_drained,
    wait_until,
)
from packets import mixed, write

from sluice.runtime.client import RpcError
from sluice.runtime.launch import hugetlbfs_mounts

pytestmark = needs_asan

REPLAY = 500  # packets in the replayed capture (held by the pcap PMD)
ROUNDS = int(os.environ.get("SLUICE_SOAK_ROUNDS", "300"))
SCALE_EVERY = 25  # rounds between nf.scale cycles (an ASan NF starts in ~1 s)
# ASan keeps freed memory in a quarantine (256 MB by default) before reusing
# it, so sluiced's RSS would grow by what the rounds free, leak or not; a
# 2 MB quarantine still catches a use right after a free and bounds that.
ASAN_OPTIONS = "quarantine_size_mb=2"
# VmRSS may grow by this much between the baseline and the end (300
# rounds). Seen: +1.2-1.5 MB. Measured one kind of operation at a time
# (1,000-10,000 of each), none of it is an unbounded growth:
# - flow.delete (60 calls here) grew ~3 KB a call until flow.c paged in
#   its per-position key and side arrays at start (the flows the replay
#   makes again get new positions: rte_hash hands freed slots out in turn,
#   and each position's pages came in on first use, up to 19.7 MB).
# - DPDK telemetry starts a thread per connection and ASan keeps every
#   finished thread's context: ~200 B a connection (ASan only).
# - the rest is ASan's allocator: its size-class regions paged in, the
#   2 MB quarantine filling up, pages given back every 5 s. Without
#   flow.delete, three runs of 300 rounds grew +1156, +652 and -388 KB.
# In the release build every other operation grows nothing after its
# first calls. 4 MB catches a leak of more than ~13 KB a round (a
# flow.list reply of 50 flows, say) and a fd or thread one exactly.
RSS_SLACK_KB = 4096
# Refusals a round may get (-32000: valid, cannot be done now).
REFUSALS = ("graph versions are still in use by packets in flight",  # graph.apply, chain.set
            "are still starting: wait until they register")  # nf.scale
MALFORMED = [  # (line, code, message or its start) -- each answered, none closes
    (b"{not json", -32700, "parse error at column"),
    (b"[1, 2]", -32600, "a request must be a JSON object"),
    (b'{"id": 1, "method": "status"}', -32600, "'jsonrpc' must be \"2.0\""),
    (b'{"jsonrpc": "2.0", "id": 2}', -32600, "'method' (a string) is missing"),
    (b'{"jsonrpc": "2.0", "id": 3, "method": "no.such"}', -32601,
     "method 'no.such' not found; 'status' lists the methods"),
    (b'{"jsonrpc": "2.0", "id": 4, "method": "chain.set", "params": {"hops": "a"}}', -32602,
     ""),
    (b'{"jsonrpc": "2.0", "id": 5, "method": "graph.apply", "params": {"name": "g", '
     b'"nodes": {"a": ["b"], "b": ["a"]}}}', -32602, "graph 'g': cycle "),
    (b'{"jsonrpc": "2.0", "id": 6, "method": "rule.add", "params": {"graph": "nope"}}',
     -32000, ""),
    (b'{"jsonrpc": "2.0", "id": 7, "method": "rule.remove", "params": {"id": 999999}}',
     -32000, ""),
    (b'{"jsonrpc": "2.0", "id": 8, "method": "lb.set", "params": {"service": "a", '
     b'"mode": "x"}}', -32602, "param 'mode' 'x': use flow, queue or rr"),
    (b'{"jsonrpc": "2.0", "id": 9, "method": "status", "params": [1]}', -32602,
     "'params' must be an object of named params"),
    (b'{"jsonrpc": "2.0", "id": 10, "method": "flow.list", "params": {"src": "10.0.0.0/99"}}',
     -32602, ""),
    (b'{"jsonrpc": "2.0", "id": 11, "method": "nf.scale", "params": {"service": "a", '
     b'"replicas": -1}}', -32602, ""),
    (b'{"jsonrpc": "2.0", "id": 12, "method": "graph.remove", "params": {"name": "default"}}',
     -32000, ""),
    (b'{"jsonrpc": "2.0", "id": 13, "method": "flow.delete", "params": {"id": "x"}}',
     -32602, ""),
    (b'{"jsonrpc": "2.0", "id": 14, "method": "\xff\xfe"}', -32700, ""),
    (b'{"jsonrpc": "2.0", "id": 15, "method": "status", "params": {"a": ' + b"[" * 3000
     + b"]" * 3000 + b"}}", -32700, ""),
]


class Conn:
    """A raw control-socket connection (line-delimited JSON-RPC)."""

    def __init__(self, path: Path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.settimeout(10)
        self.s.connect(str(path))
        self.f = self.s.makefile("rwb")

    def send(self, line: bytes) -> None:
        self.f.write(line)
        self.f.flush()

    def ask(self, line: bytes) -> dict[str, Any]:
        self.send(line + b"\n")
        return json.loads(self.f.readline())

    def close(self) -> None:
        self.f.close()
        self.s.close()


def telemetry(path: Path, cmd: str) -> Any:
    """One command over DPDK's telemetry socket (v2: SOCK_SEQPACKET)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
        s.settimeout(10)
        s.connect(str(path))
        max_len = json.loads(s.recv(1024))["max_output_len"]
        s.send(cmd.encode())
        return json.loads(s.recv(max_len))[cmd.split(",", 1)[0]]


def proc_status(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/status") as f:
        return dict(ln.rstrip("\n").split(":\t", 1) for ln in f if ":\t" in ln)


def children(pid: int) -> dict[int, str]:
    """sluiced's child processes: pid -> state letter (Z: a zombie)."""
    out = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[1]) == pid:
            out[int(d.name)] = fields[0]
    return out


class Soak:
    def __init__(self, run, telemetry_path: Path):
        self.run, self.tel = run, telemetry_path
        self.sock = run.dep.socket_path()
        self.refused = 0
        self.t0 = time.monotonic()

    def call(self, method: str, **params: Any) -> Any:
        try:
            return self.run.client.call(method, **params)
        except RpcError as e:
            assert e.code == -32000 and any(r in e.message for r in REFUSALS), \
                f"{method} {params}: unexpected refusal: {e}"
            self.refused += 1
            return None

    def connections(self, i: int) -> None:
        # A whole exchange, then close.
        c = Conn(self.sock)
        assert c.ask(b'{"jsonrpc":"2.0","id":1,"method":"chain.get"}')["result"]["hops"]
        c.close()
        # Closed half-way through a request line.
        c = Conn(self.sock)
        c.send(b'{"jsonrpc":"2.0","id":1,"method":"sta')
        c.close()
        # A request (a big reply) whose reply is never read.
        c = Conn(self.sock)
        c.send(b'{"jsonrpc":"2.0","id":1,"method":"flow.list","params":{"limit":1000}}\n')
        c.close()
        # Subscribed, events sent to it, closed without reading them.
        c = Conn(self.sock)
        assert c.ask(b'{"jsonrpc":"2.0","id":1,"method":"subscribe"}')["result"] == \
            {"subscribed": True}
        self.call("chain.set", hops=["a", "b", "port:out"])  # an event to it
        c.close()
        # An over-long request line: answered with an error, then closed.
        if i % 10 == 0:
            c = Conn(self.sock)
            # sluiced closes it once it has more than --control-line-kb (1024)
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                c.send(b'{"jsonrpc":"2.0","id":1,"method":"status","params":{"x":"'
                       + b"y" * (1100 * 1024) + b'"}}\n')
            r = json.loads(c.f.readline())
            assert r["error"]["code"] == -32600 and "request line longer than" in \
                r["error"]["message"], r
            with contextlib.suppress(ConnectionResetError):  # closed, or reset: unread input
                assert c.f.readline() == b""
            c.close()

    def graphs(self, i: int) -> None:
        name = f"soak{i % 4}"
        order = ["a", "b"] if i % 2 else ["b", "a"]
        if self.call("graph.apply", name=name, entry=order[0],
                     nodes={order[0]: [order[1]], order[1]: ["port:out", "drop"]}) is None:
            return
        rule = self.call("rule.add", graph=name, priority=i % 7, proto=["udp", "tcp"][i % 2],
                         dst=f"192.168.{i % 7}.0/24")
        assert rule["graph"] == name, rule
        if i % 3 == 0:
            assert self.call("rule.remove", id=rule["id"]) == {"removed": rule["id"]}
        removed = self.call("graph.remove", name=name)
        assert removed == {"removed": name, "rules_removed": 0 if i % 3 == 0 else 1}, removed

    def chain_lb(self, i: int) -> None:
        self.call("chain.set", hops=["b", "a", "port:out"] if i % 2 else ["a", "b", "port:out"])
        self.call("lb.set", service="b", mode=["flow", "queue", "rr"][i % 3])

    def flows(self, i: int) -> None:
        filters = [{"proto": "udp"}, {"service": "a"}, {"dst": "192.168.3.0/24"},
                   {"graph": "default"}, {"dport": 53}, {"src": "2001:db8::/32"}]
        f = filters[i % len(filters)]
        lst = self.run.client.call("flow.list", limit=50, **f)
        # (matched and total are counted while traffic creates and removes
        # flows: no order between them; the list holds what matched)
        assert len(lst["flows"]) == min(50, lst["matched"]), lst
        if i % 5 == 0:
            self.run.client.call("flow.delete", **filters[(i // 5) % len(filters)])
        if i % 7 == 0:  # (to a service, a change_default can loop: test_loops.py)
            req = self.run.client.call(
                "flow.request", type="skip_me" if i % 2 else "change_default", service="a",
                flow={"match": {"proto": "udp", "dport": 53}},
                **({} if i % 2 else {"to": "port:out"}))
            assert self.run.client.call("flow.request.remove", id=req["id"]) == \
                {"removed": req["id"]}

    def malformed(self, i: int) -> None:
        c = Conn(self.sock)
        for line, code, msg in [MALFORMED[i % len(MALFORMED)],
                                MALFORMED[(i * 7 + 3) % len(MALFORMED)]]:
            r = c.ask(line)
            assert r["error"]["code"] == code and r["error"]["message"].startswith(msg), \
                (line[:100], r)
        assert c.ask(b'{"jsonrpc":"2.0","id":99,"method":"chain.get"}')["id"] == 99
        c.close()

    def telemetry(self, i: int) -> None:
        cmd = ["/sluice/stats", "/sluice/nfs", "/sluice/service,a", "/sluice/flows",
               "/sluice/edges", "/sluice/port,out"][i % 6]
        assert telemetry(self.tel, cmd) is not None

    def scale(self, i: int) -> None:
        """b to 2 and back to 1: waiting for the new replica to register
        (then it is asked to stop), or not (then it is cancelled)."""
        wait = (i // SCALE_EVERY) % 2 == 0
        res = self.call("nf.scale", service="b", replicas=2)
        if res is None:
            return
        if wait and res["started_pids"]:
            pid = res["started_pids"][0]
            wait_until(lambda: any(n["pid"] == pid and n["state"] == "running"
                                   for n in self.run.client.call("nf.list")), 30,
                       f"replica pid {pid} to register")
        self.call("nf.scale", service="b", replicas=1)

    def round(self, i: int) -> None:
        self.connections(i)
        self.graphs(i)
        self.chain_lb(i)
        self.flows(i)
        self.malformed(i)
        self.telemetry(i)
        if i % SCALE_EVERY == SCALE_EVERY - 1:
            self.scale(i)


def settle(run) -> None:
    """Traffic stopped and drained; every NF instance but one per service
    gone; no replica starting (what nf.scale started has registered and
    left, or exited)."""
    run.client.call("rx.pause")
    wait_drained(run, timeout=30)

    def one_each() -> bool:
        nfs = run.client.call("nf.list")
        return sorted(n["service"] for n in nfs) == ["a", "b"] and \
            all(n["state"] == "running" for n in nfs)

    wait_until(one_each, 30, "one running instance of a and of b")
    sl = run.sluiced.pid
    nf_pids = {n["pid"] for n in run.client.call("nf.list")}
    wait_until(lambda: set(children(sl)) <= nf_pids, 30, "sluiced's other children to exit")
    run.client.call("flow.delete", all=True)  # marked; the RX thread deletes them
    wait_until(lambda: run.client.call("flow.list", limit=0)["total"] == 0, 10,
               "the RX thread to delete the flows")


def measure(run, soak: Soak) -> dict[str, Any]:
    pid = run.sluiced.pid
    c = run.client.call
    status, stats = c("status"), c("stats")
    return {
        "fds": len(os.listdir(f"/proc/{pid}/fd")),
        "threads": int(proc_status(pid)["Threads"]),
        "rss_kb": int(proc_status(pid)["VmRSS"].split()[0]),
        "mbufs": status["mbufs"],
        "messages_free": status["messages"]["free"],
        "control": {k: v for k, v in status["control"].items() if k != "closed_unread"},
        "n_nfs": status["n_nfs"],
        "n_services": status["n_services"],
        "services": sorted(s["name"] for s in c("service.list")),
        "graphs": sorted(g["name"] for g in c("graph.get")["graphs"]),
        "chain": c("chain.get")["hops"],
        "rules": c("rule.list")["rules"],
        "requests": c("flow.requests")["requests"],
        "flows": {k: stats["flows"][k] for k in ("live", "live_v6")},
        "flow_list_total": c("flow.list", limit=0)["total"],
        "zombies": sorted(p for p, st in children(pid).items() if st == "Z"),
    }


def test_soak_control_operations_leak_nothing(launch, node, tmp_path, monkeypatch):
    opts = os.environ.get("ASAN_OPTIONS", "")
    monkeypatch.setenv("ASAN_OPTIONS", f"{opts}:{ASAN_OPTIONS}" if opts else ASAN_OPTIONS)
    if "LSAN_OPTIONS" not in os.environ:  # as make test sets it (see the Makefile)
        monkeypatch.setenv("LSAN_OPTIONS", f"suppressions={ROOT}/scripts/lsan.supp")
    src = write(tmp_path / "in.pcap", mixed(REPLAY, flows=100, seed=7))
    run = launch(deployment(
        node,
        ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src},infinite_rx=1"},
               {"name": "out", "device": "net_null0,no-rx=1"}],
        nfs=[{"name": s, "program": prog("forward", ASAN_BUILD), "service": s} for s in "ab"],
        chain=["a", "b", "port:out"],
    ), ASAN_BUILD)
    out = lambda: port(run.client.call("stats"), "out")["tx_pkts"]  # noqa: E731
    wait_until(lambda: out() > 5_000, 30, "traffic through the chain")
    tel = Path(f"/var/run/dpdk/sluice_{node}/dpdk_telemetry.v2")
    soak = Soak(run, tel)

    warmup = SCALE_EVERY  # one round of everything, one nf.scale cycle included
    for i in range(warmup):
        soak.round(i)
    run.client.call("chain.set", hops=["a", "b", "port:out"])
    settle(run)
    base = measure(run, soak)
    run.client.call("rx.resume")
    t_rounds = time.monotonic()
    for i in range(warmup, warmup + ROUNDS):
        soak.round(i)
        assert run.sluiced.exited() is None, f"sluiced died in round {i}"
    t_rounds = time.monotonic() - t_rounds
    assert out() > 0
    run.client.call("chain.set", hops=["a", "b", "port:out"])
    settle(run)
    end = measure(run, soak)
    print(f"soak: {ROUNDS} rounds in {t_rounds:.1f} s, {soak.refused} refused\n"
          f"  baseline {base}\n  end      {end}")

    # Every buffer back in the pool but the capture the pcap PMD holds.
    assert base["mbufs"]["in_use"] == end["mbufs"]["in_use"] == REPLAY, (base, end)
    assert base["mbufs"]["leaked"] == end["mbufs"]["leaked"] == 0, (base, end)
    assert end["rss_kb"] - base["rss_kb"] <= RSS_SLACK_KB, (base["rss_kb"], end["rss_kb"])
    assert end["zombies"] == [], end
    assert end["control"]["connections"] == 1, end  # run.client's
    assert end["flows"] == {"live": 0, "live_v6": 0} and end["flow_list_total"] == 0, end
    exact = {k: v for k, v in base.items() if k != "rss_kb"}
    assert {k: end[k] for k in exact} == exact

    # A clean stop: exit 0, no sanitizer report, nothing left behind.
    run.client.call("shutdown")
    wait_until(lambda: run.sluiced.exited() is not None, 30, "sluiced to exit")
    run.stop()
    assert run.sluiced.exited() == 0
    logs = {p.name: p.read_text(errors="replace") for p in tmp_path.glob("run*/*.log")}
    for name, text in logs.items():
        assert_no_sanitizer_report(text, name)
    left = [p for d in hugetlbfs_mounts() for p in d.glob(f"sluice_{node}map_*")]
    left += [p for p in [Path(f"/var/run/dpdk/sluice_{node}")] if p.exists()]
    assert left == [], left
    assert re.search(r"nf\.scale b: started pid \d+", logs["sluiced.log"])
