"""The control socket under hostile input: a seeded stream of mutated
requests for every method and raw malformed lines, sent to an ASan+UBSan
sluiced that forwards traffic meanwhile.

Every request must get exactly one well-formed JSON-RPC answer with its id
and a known error code; sluiced must stay up, keep forwarding, account for
every packet, and end with no sanitizer report and exit status 0.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import socket
from typing import Any

from conftest import (
    ASAN_BUILD,
    assert_no_sanitizer_report,
    deployment,
    needs_asan,
    port,
    prog,
    wait_drained,
    wait_until,
)
from packets import mixed, write

CODES = {-32700, -32600, -32601, -32602, -32000}
FLOW_KEY = "udp 10.0.0.1:1000 > 10.0.1.1:53"

# Values of every JSON type and the edges of what sluiced parses.
VALUES: list[Any] = [
    None, True, False, 0, -1, 1, 7, 255, 65535, 65536, 2**31 - 1, 2**31, 2**32,
    2**63 - 1, -(2**63), 1.5, -0.0, 1e308, "", "a", "b", "c", "f", "x" * 40,
    "x" * 300, "é☃\U0001F600", "port:out", "port:", "port:nope", "drop", "default",
    "any", "10.0.0.0/8", "10.0.0.1", "10.0.0.0/33", "10.0.0.0/-1", "1.2.3", "::/0",
    "2001:db8::/32", "2001:db8::/129", "1-2", "5-1", "0-65535", "70000", "-1",
    "tcp", "udp", "icmp6", "300", FLOW_KEY, "tcp ::1:1 > ::2:2", "udp 1.2.3.4 > 5.6.7.8",
    [], [1], ["a"], ["a", "b", "port:out"], ["drop", "a"], {}, {"a": 1},
    {"a": ["b"]}, {"match": {}}, {"key": FLOW_KEY}, {"match": {"proto": 300}},
    ["deep"],
]

_deep: Any = "deep"
for _ in range(200):
    _deep = [_deep]
VALUES.append(_deep)

# One valid-looking request per method (the fuzzer's starting points).
# nf.scale, nf.stop and shutdown start from targets that do not exist:
# a mutation may still name a real one, which sluiced must then handle.
TEMPLATES: list[tuple[str, dict[str, Any] | None]] = [
    ("status", None), ("nf.list", None), ("port.list", None), ("service.list", None),
    ("stats", None), ("chain.get", None), ("rule.list", None), ("flow.requests", None),
    ("chain.set", {"hops": ["a", "b", "port:out"]}),
    ("chain.set", {"hops": ["a", "port:out"]}),
    ("lb.set", {"service": "b", "mode": "rr"}),
    ("lb.set", {"service": "b", "mode": "queue"}),
    ("graph.apply", {"name": "g1", "entry": "a", "nodes": {"a": ["b", "drop"],
                                                          "b": ["port:out", "drop"]}}),
    ("graph.apply", {"name": "g2", "nodes": {"b": ["port:out"]}}),
    ("graph.get", {"name": "g1"}), ("graph.get", {}),
    ("graph.remove", {"name": "g2"}),
    ("rule.add", {"graph": "g1", "priority": 5, "proto": "udp", "src": "10.0.0.0/8",
                  "dst": "10.0.1.0/24", "sport": "1000-1100", "dport": 53, "in_port": "in"}),
    ("rule.add", {"graph": "g2", "proto": "tcp"}),
    ("rule.remove", {"id": 1}),
    ("flow.list", {"limit": 3, "graph": "g1", "service": "a", "instance": 0,
                   "proto": "udp", "src": "10.0.0.0/8", "dst": "10.0.1.1", "sport": 1000,
                   "dport": "53"}),
    ("flow.list", {}),
    ("flow.get", {"id": 0}), ("flow.get", {"key": FLOW_KEY}),
    ("flow.delete", {"key": FLOW_KEY}), ("flow.delete", {"proto": "tcp"}),
    ("flow.delete", {"all": True}),
    ("flow.request", {"type": "change_default", "flow": {"match": {"proto": "udp"}},
                      "service": "a", "to": "drop"}),
    ("flow.request", {"type": "skip_me", "flow": {"key": FLOW_KEY}, "service": "a"}),
    ("flow.request", {"type": "request_me", "flow": {"match": {"dport": 53}}, "service": "b"}),
    ("flow.request", {"type": "message", "service": "a", "key": "k", "value": "v"}),
    ("flow.request.remove", {"id": 1}),
    ("rx.pause", None), ("rx.resume", None),
    ("nf.stop", {"instance": 1000}),
    ("nf.scale", {"service": "nosuch", "replicas": 1}),
    ("nf.message", {"service": "a", "key": "k", "value": "v"}),
    ("no.such.method", {}),
]
# Keys a mutation may set (unknown ones included: they must be refused
# or ignored, never crash).
KEYS = ["hops", "service", "mode", "name", "entry", "nodes", "graph", "priority", "proto",
        "src", "dst", "sport", "dport", "in_port", "id", "key", "all", "limit", "instance",
        "type", "flow", "to", "value", "replicas", "match", "zzz"]
# What a mutation must never make: requests that stop sluiced or its NFs
# (the rest of the run would test nothing) or start processes.
FORBIDDEN = {"shutdown", "nf.scale", "nf.stop"}


def _mutate(rnd: random.Random, v: Any, depth: int = 0) -> Any:
    r = rnd.random()
    if depth > 3 or r < 0.35:
        return rnd.choice(VALUES)
    if isinstance(v, dict) and v:
        v = dict(v)
        k = rnd.choice(list(v))
        op = rnd.random()
        if op < 0.3:
            del v[k]
        elif op < 0.5:
            v[rnd.choice(KEYS)] = rnd.choice(VALUES)
        else:
            v[k] = _mutate(rnd, v[k], depth + 1)
        return v
    if isinstance(v, list) and v:
        v = list(v)
        i = rnd.randrange(len(v))
        op = rnd.random()
        if op < 0.3:
            del v[i]
        elif op < 0.5:
            v.insert(i, rnd.choice(VALUES))
        else:
            v[i] = _mutate(rnd, v[i], depth + 1)
        return v
    return rnd.choice(VALUES)


def _request(rnd: random.Random, rid: Any) -> dict[str, Any]:
    method, params = rnd.choice(TEMPLATES)
    req: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        req["params"] = params
    if rnd.random() < 0.75:
        if method in FORBIDDEN:
            req["params"] = _mutate(rnd, params)  # the target stays unknown or bad
            if isinstance(req["params"], dict):
                for k, bad in (("instance", 1000), ("service", "nosuch")):
                    if k in (params or {}):
                        req["params"][k] = bad
        else:
            req["params"] = _mutate(rnd, params if params is not None else {})
    if rnd.random() < 0.03:
        req.pop("params", None)
    return req


class Conn:
    def __init__(self, path: str):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.settimeout(20)
        self.s.connect(path)
        self.f = self.s.makefile("rb")

    def send(self, data: bytes) -> None:
        self.s.sendall(data)

    def answer(self) -> dict[str, Any]:
        """The next line that is not an event notification."""
        while True:
            line = self.f.readline()
            assert line.endswith(b"\n"), f"connection closed or cut line: {line!r}"
            msg = json.loads(line)
            if msg.get("method") != "event":
                return msg

    def close(self) -> None:
        self.f.close()
        self.s.close()


def _check(req: Any, resp: dict[str, Any]) -> None:
    assert resp.get("jsonrpc") == "2.0", resp
    assert ("result" in resp) != ("error" in resp), resp
    want_id = req.get("id") if isinstance(req, dict) else None
    if "error" in resp:
        err = resp["error"]
        assert err["code"] in CODES, (req, resp)
        msg = err["message"]
        assert isinstance(msg, str) and 0 < len(msg) <= 1000, (req, resp)
        if err["code"] in (-32700, -32600) and resp["id"] is None:
            return  # the request's id could not be read, or was bad
    assert resp["id"] == want_id, (req, resp)


@needs_asan
def test_mutated_requests_never_hurt_sluiced(launch, node, tmp_path):
    frames = mixed(2000, flows=100, seed=5)
    src = write(tmp_path / "in.pcap", frames)
    run = launch(deployment(
        node,
        ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src},infinite_rx=1"},
               {"name": "out", "device": "net_null0"}],
        nfs=[{"name": "a", "program": prog("forward", ASAN_BUILD), "service": "a"},
             {"name": "b", "program": prog("forward", ASAN_BUILD), "service": "b"}],
        chain=["a", "b", "port:out"], sluiced_args=["--max-services", "400"]), ASAN_BUILD)
    path = str(run.dep.socket_path())
    # A fixed stream; SLUICE_FUZZ_SEED and SLUICE_FUZZ_N explore others.
    rnd = random.Random(int(os.environ.get("SLUICE_FUZZ_SEED", "20261122")))
    conns = [Conn(path) for _ in range(3)]
    conns[2].send(b'{"jsonrpc":"2.0","id":0,"method":"subscribe"}\n')
    assert conns[2].answer()["result"] == {"subscribed": True}
    errors: dict[int, int] = {}
    n = int(os.environ.get("SLUICE_FUZZ_N", "2500"))
    for i in range(n):
        c = rnd.choice(conns)
        rid: Any = rnd.choice([i, f"r{i}", None, -i, 2**53 + i])
        req = _request(rnd, rid)
        if rnd.random() < 0.1:
            # Sent in pieces: a line may arrive in any number of reads.
            data = json.dumps(req).encode() + b"\n"
            cut = rnd.randrange(1, len(data))
            c.send(data[:cut])
            c.send(data[cut:])
        else:
            c.send(json.dumps(req).encode() + (b"\r\n" if i % 7 == 0 else b"\n"))
        resp = c.answer()
        _check(req, resp)
        if "error" in resp:
            errors[resp["error"]["code"]] = errors.get(resp["error"]["code"], 0) + 1
    # The stream exercised both sides: refusals of each kind and successes.
    assert {-32602, -32000, -32601} <= set(errors), errors
    assert sum(errors.values()) < n * 0.95, errors

    # Malformed lines: each gets one error; the connection stays usable.
    raw = [
        b"\xff\xfe\x00garbage",
        b'{"jsonrpc": "2.0", "id": 1, "method": "status\x00"}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "st\xc3\x28tus"}',
        b"[" * 5000 + b"]" * 5000,
        b'{"jsonrpc": "2.0", "id": 1, "id": 2, "method": "status"}',
        b'{"jsonrpc": "2.0", "id": 1.5, "method": "status"}',
        b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "status"}',
        b'{"jsonrpc": "2.0", "id": 3, "method": 7}',
        b'{"jsonrpc": "2.0", "id": 4, "method": "status", "params": "x"}',
        b'{"jsonrpc": "2.0", "id": 5, "method": "rule.add", "params": {"graph": "g1", '
        b'"dport": 123456789012345678901234567890}}',
        b'{"jsonrpc": "2.0", "id": 6, "method": "graph.apply", "params": {"name": "big", '
        b'"nodes": {' + b",".join(b'"n%d": ["n%d"]' % (k, k + 1) for k in range(300))
        + b', "n300": ["drop"]}}}',
        b"null", b"1", b'"s"', b"{}", b"   ",
    ]
    c = conns[0]
    got = []
    for line in raw:
        c.send(line + b"\n")
        resp = c.answer()
        got.append((resp["id"], resp["error"]["code"]) if "error" in resp else resp)
    assert got[:3] == [(None, -32700)] * 3  # not UTF-8, a NUL, not UTF-8
    assert got[3][1] == -32700  # nested deeper than the parser goes
    assert got[4] == (None, -32700)  # a duplicate key
    assert got[5:10] == [(None, -32600), (None, -32600), (3, -32600), (4, -32602), (None, -32700)]
    assert got[10]["result"]["name"] == "big", got[10]  # 301 nodes: no length limit
    assert got[11:15] == [(None, -32600)] * 4  # valid JSON, not a request object
    assert got[15] == (None, -32700)
    c.send(b'{"jsonrpc": "2.0", "id": 99, "method": "status"}\n')
    assert c.answer()["result"]["node"] == node
    # 100 requests in one write: 100 answers, in order.
    c.send(b"".join(b'{"jsonrpc":"2.0","id":%d,"method":"chain.get"}\n' % k for k in range(100)))
    assert [c.answer()["id"] for _ in range(100)] == list(range(100))
    # A line over the limit (--control-line-kb, 1024 KiB) is refused and
    # that connection closed.
    c.send((b'{"x": "' + b"y" * (1 << 20))[:(1 << 20) + 1])  # all read before the close
    resp = c.answer()
    assert resp["error"] == {"code": -32600,
                             "message": "request line longer than 1048576 bytes "
                                        "(--control-line-kb 1024): send a smaller request "
                                        "or raise the option; closing"}
    with contextlib.suppress(ConnectionResetError):  # the rest unread: a reset
        assert c.f.readline() == b""
    for k in conns:
        k.close()

    # Still in one piece: the chain put back forwards, and after a pause
    # every packet read is out or dropped with a reason.
    cl = run.client
    cl.call("chain.set", hops=["a", "b", "port:out"])
    cl.call("rx.resume")
    sent = port(cl.call("stats"), "out")["tx_pkts"]
    wait_until(lambda: port(cl.call("stats"), "out")["tx_pkts"] > sent + 10000, 20,
               "traffic through the chain after the fuzz")
    cl.call("rx.pause")
    wait_drained(run)
    run.stop()
    logs = "".join(p.read_text(errors="replace") for p in tmp_path.glob("run*/*.log"))
    assert_no_sanitizer_report(logs)
    codes = {p.label: p.exited() for p in run.processes()}
    assert set(codes.values()) == {0}, codes

