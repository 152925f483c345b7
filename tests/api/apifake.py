"""A fake sluiced for the REST API tests: tests/python/test_client.py's
FakeSluiced (a JSON-RPC Unix-socket server thread) with a handler that
answers every method of docs/control-socket.md with canned results; and
tests/integration's helpers for the tests against a real sluiced.

The tests import from here, not from conftest: with tests/api and
tests/integration on one command line, `conftest` may name the other
folder's."""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import ipaddress
import json
import re
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

_Ok = Callable[[Any], dict[str, Any]]
_Err = Callable[[int, str], dict[str, Any]]

_spec = importlib.util.spec_from_file_location(
    "_sluice_fake_server", Path(__file__).resolve().parents[1] / "python" / "test_client.py")
assert _spec is not None and _spec.loader is not None
_mod = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_mod)


STATS_SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "python" / "data" /
                           "stats_schema.json").read_text())

LINE_MAX = 1024 * 1024  # sluiced refuses a longer request line and closes (--control-line-kb)


def _unreadable(line: bytes) -> str | None:
    """What sluiced's JSON parser (jansson, without JSON_ALLOW_NUL) refuses in a
    line Python reads: NUL in a string, a lone surrogate, an integer beyond
    64 bits. None if it reads it."""
    def bad(v: Any) -> str | None:
        if isinstance(v, dict):
            return next((m for k, x in v.items() for m in (bad(k), bad(x)) if m), None)
        if isinstance(v, list):
            return next((m for x in v if (m := bad(x))), None)
        if isinstance(v, str):
            if "\0" in v:
                return "\\u0000 is not allowed without JSON_ALLOW_NUL"
            if any(0xD800 <= ord(c) <= 0xDFFF for c in v):
                return "invalid Unicode escape (lone surrogate)"
        if isinstance(v, int) and not isinstance(v, bool) and not -2**63 <= v < 2**63:
            return "too big integer"
        return None
    try:
        return bad(json.loads(line))
    except (ValueError, RecursionError):
        return None


class FakeSluiced(_mod.FakeSluiced):  # type: ignore[misc,name-defined]
    """tests/python's fake with sluiced's limits on what it reads: a line over
    LINE_MAX (sluiced's default --control-line-kb) is answered -32600 and
    closed; what jansson cannot parse, -32700."""

    def _conn(self, conn: Any) -> None:
        # The API may close a subscription while events are still being sent.
        with contextlib.suppress(OSError):
            self._serve_conn(conn)

    def _error(self, conn: Any, code: int, message: str) -> None:
        conn.sendall(json.dumps({"jsonrpc": "2.0", "id": None, "error": {
            "code": code, "message": message}}).encode() + b"\n")

    def _serve_conn(self, conn: Any) -> None:
        buf = b""
        with conn:
            while True:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                buf += chunk
                while b"\n" in buf or len(buf) > LINE_MAX:
                    line, _, buf = buf.partition(b"\n")
                    if len(line) > LINE_MAX:
                        self.requests.append(line[:100])
                        self._error(conn, -32600, f"request line longer than {LINE_MAX} "
                                                  f"bytes (--control-line-kb "
                                                  f"{LINE_MAX // 1024}): send a smaller "
                                                  f"request or raise the option; closing")
                        return
                    why = _unreadable(line)
                    if why:
                        self.requests.append(line)
                        self._error(conn, -32700, f"parse error: {why}")
                        continue
                    try:
                        req: Any = json.loads(line)
                    except ValueError:
                        req = line
                    self.requests.append(req)
                    actions = self.handler(req)
                    for action in actions if isinstance(actions, list) else [actions]:
                        if action == "close":
                            return
                        if action == "silence":
                            continue
                        conn.sendall(action if isinstance(action, bytes) else (
                            json.dumps(action).encode() + b"\n"))
                    if self.close_after_answer:
                        conn.shutdown(socket.SHUT_RDWR)
                        return


STATUS = {
    "node": "t", "version": "0.1.0", "pid": 4242, "mode": "shared", "handoff": "direct",
    "uptime_s": 12.5, "rx_enabled": True, "max_nfs": 64, "max_services": 32,
    "ring_size": 4096, "burst": 32, "rx_burst": 64, "n_nfs": 2, "n_services": 2, "n_ports": 2,
    "io_threads": 1, "methods": ["status", "nf.list", "stats"],
    "mbufs": {"size": 8191, "in_use": 100, "leaked": 0, "in_doubt": 0,
              "pools": [{"name": "sl_t_pkts", "socket": 0, "size": 8191, "in_use": 100}]},
}
NFS = [
    {"instance": 0, "service": "fw", "service_id": 0, "prog": "/b/sluice-firewall",
     "pid": 100, "state": "running", "mode": "shared", "access": 1,
     "rx_ring": {"count": 3, "size": 4096}, "tx_ring": {"count": 0, "size": 4096}},
    {"instance": 1, "service": "mon", "service_id": 1, "prog": "/b/sluice-monitor",
     "pid": 101, "state": "running", "mode": "shared", "access": 1,
     "rx_ring": {"count": 0, "size": 4096}, "tx_ring": {"count": 1, "size": 4096}},
]
PORTS = [
    {"id": 0, "name": "in", "device": "net_pcap0", "started": True, "link_up": True,
     "rx_queues": 1, "tx_queues": 3, "socket": -1},
    {"id": 1, "name": "out", "device": "net_null0", "started": True, "link_up": False,
     "rx_queues": 1, "tx_queues": 3, "socket": -1},
]
SERVICES = [
    {"id": 0, "name": "fw", "lb": "flow", "instances": [0]},
    {"id": 1, "name": "mon", "lb": "rr", "instances": [1]},
]


def _drops(**kw: int) -> dict[str, int]:
    d = dict.fromkeys(["nf_verdict", "ring_full", "no_instance", "invalid_dest",
                       "end_of_chain", "nf_lost", "tx_full", "port_down"], 0)
    d.update(kw)
    return d


STATS = {
    "tsc_hz": 2400000000,
    "ports": [
        {"id": 0, "name": "in", "rx_pkts": 1000, "rx_bytes": 64000, "tx_pkts": 0,
         "tx_bytes": 0, "rx_stalls": 2, "drops": _drops(no_instance=5)},
        {"id": 1, "name": "out", "rx_pkts": 0, "rx_bytes": 0, "tx_pkts": 900,
         "tx_bytes": 57600, "rx_stalls": 0, "drops": _drops(tx_full=1)},
    ],
    "nfs": [
        {"instance": 0, "service": "fw", "state": "running", "rx_pkts": 995,
         "rx_bytes": 63680, "tx_pkts": 950, "tx_bytes": 60800,
         "drops": _drops(nf_verdict=45), "rx_ring": {"count": 3, "size": 4096},
         "cycles": 199000, "cycles_per_pkt": 200.0, "sleeps": 7, "stalls": 0, "bursts": 40},
        {"instance": 1, "service": "mon", "state": "running", "rx_pkts": 950,
         "rx_bytes": 60800, "tx_pkts": 901, "tx_bytes": 57664,
         "drops": _drops(ring_full=49), "rx_ring": {"count": 0, "size": 4096},
         "cycles": 95000, "cycles_per_pkt": 100.0, "sleeps": 0, "stalls": 1, "bursts": 30},
    ],
    "services": [
        {"id": 0, "name": "fw", "instances": [0], "rx_pkts": 995, "rx_bytes": 63680,
         "tx_pkts": 950, "tx_bytes": 60800, "drops": _drops(nf_verdict=45)},
        {"id": 1, "name": "mon", "instances": [1], "rx_pkts": 950, "rx_bytes": 60800,
         "tx_pkts": 901, "tx_bytes": 57664, "drops": _drops(ring_full=49)},
    ],
    "drops_total": 100,
    "drops": _drops(no_instance=5, tx_full=1, nf_verdict=45, ring_full=49),
    # live == created - aged - deleted; every value distinct so a swapped key shows
    "flows": {"lookup": "cached", "live": 6, "capacity": 262144, "live_v6": 1,
              "capacity_v6": 65536, "lookups": 1000, "hits": 985, "created": 11, "aged": 3,
              "deleted": 2, "table_full": 4, "non_ip": 5, "timeout_ms": 30000,
              "cycles": 51000},
}
EVENTS = [
    {"kind": "nf.up", "ts": 1700000000.5,
     "data": {"instance": 2, "service": "fw", "pid": 7, "prog": "sluice-firewall"}},
    {"kind": "chain.set", "ts": 1700000001.25, "data": {"version": 3, "hops": ["fw", "drop"]}},
]


FLOWS = [
    {"id": 7, "key": "udp 192.168.1.2:5353 > 10.0.0.9:53", "family": 4, "proto": 17,
     "in_port": "in", "graph": "default", "pkts": 1200, "bytes": 96000, "idle_ms": 12,
     "pins": {"fw": 0}, "overrides": [], "state": "live"},
    {"id": 9, "key": "tcp 10.0.0.1:1234 > 10.0.0.2:80", "family": 4, "proto": 6,
     "in_port": "in2", "graph": "default", "pkts": 10, "bytes": 640, "idle_ms": 3,
     "pins": {"fw": 0, "mon": 1},
     "overrides": [{"service": "mon", "type": "default", "to": "port:out"}], "state": "live"},
]
PROTOS = {"tcp": 6, "udp": 17, "icmp": 1, "icmp6": 58, "sctp": 132, "gre": 47, "esp": 50,
          "ah": 51}


def _match_error(p: dict[str, Any]) -> str | None:
    """sl_match_from_json's checks, roughly: the message of the first bad field."""
    proto = p.get("proto")
    if proto is not None and not (
            (isinstance(proto, int) and not isinstance(proto, bool) and 0 <= proto <= 255)
            or (isinstance(proto, str) and (proto.lower() in PROTOS or proto == "any"
                                            or (proto.isdigit() and int(proto) <= 255)))):
        return (f"proto: {json.dumps(proto)} is not a protocol (tcp, udp, icmp, icmp6, sctp, "
                f"gre, esp, ah, any, or a number 0-255)")
    for k in ("src", "dst"):
        v = p.get(k)
        if v is None:
            continue
        try:
            if not isinstance(v, str):
                raise ValueError
            if v != "any":
                ipaddress.ip_network(v, strict=True)
        except ValueError:
            return f"{k}: {json.dumps(v)} is not a valid prefix"
    for k in ("sport", "dport"):
        v = p.get(k)
        if v is None:
            continue
        if isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 65535:
            continue
        if isinstance(v, str) and re.fullmatch(r"any|\d{1,5}(-\d{1,5})?", v) and all(
                int(x) <= 65535 for x in v.split("-") if x != "any"):
            continue
        return f"{k}: {json.dumps(v)} is not a valid port (a number 0-65535, LO-HI or any)"
    return None


class Sluiced:
    """The state behind the fake: the handler mimics sluiced's answers and errors."""

    def __init__(self) -> None:
        self.chain = {"version": 1, "hops": ["fw", "mon", "port:out"]}
        self.rx_enabled = True
        self.services = copy.deepcopy(SERVICES)
        self.graphs: dict[str, dict[str, Any]] = {}
        self.rules: list[dict[str, Any]] = []
        self.rule_id = 0
        self.kept: list[dict[str, Any]] = []  # kept wildcard requests (flow.requests)
        self.kept_id = 0
        self.flows = copy.deepcopy(FLOWS)
        self.fail: dict[str, Any] = {}  # method -> error object or action to return
        self.crashes: list[str] = []  # params the fake could not take

    def graph(self, name: str) -> dict[str, Any] | None:
        if name == "default":
            return {"name": "default", "id": 0, "version": self.chain["version"],
                    "entry": self.chain["hops"][0] if self.chain["hops"] else None,
                    "nodes": {h: [self.chain["hops"][i + 1]]
                              for i, h in enumerate(self.chain["hops"][:-1])},
                    "chain": True}
        return self.graphs.get(name)

    def graph_apply(self, p: dict[str, Any]) -> str | dict[str, Any]:
        """graph.apply's checks (sl_graph_check): an error message or the result."""
        name, nodes, entry = p.get("name"), p.get("nodes"), p.get("entry")
        if not isinstance(name, str):
            return 'graph.apply needs a "name" (string)'
        if not re.fullmatch(r"[A-Za-z0-9_.-]{1,31}", name):
            return (f"graph '{name}': a name is 1-31 letters, digits, '_', '.' or '-'")
        if not isinstance(nodes, dict):
            return (f"graph '{name}': \"nodes\" must be an object mapping each service to "
                    f"its list of next hops")
        if not nodes:
            return f"graph '{name}' has no nodes"
        services = {s["name"] for s in self.services}
        for n, hops in nodes.items():
            if n not in services:
                return f"graph '{name}': node '{n}': no service named '{n}'"
            if not isinstance(hops, list) or not all(isinstance(h, str) for h in hops):
                return f"graph '{name}': node '{n}': next hops must be a list of strings"
            if not hops:
                return (f"graph '{name}': node '{n}' has no next hop: list at least one "
                        f"(the first is the default)")
            for h in hops:
                if h in ("drop", "port:in", "port:out") or h in nodes:
                    continue
                return (f"graph '{name}': node '{n}': edge to '{h}', which is not a node "
                        f"of this graph (add it under nodes, or use port:NAME or drop)")
        first = entry if entry is not None else next(iter(nodes))
        if first not in nodes:
            return f"graph '{name}': entry '{first}' is not a node"
        seen, todo = set(), [first]
        while todo:
            n = todo.pop()
            if n in seen:
                continue
            seen.add(n)
            todo += [h for h in nodes[n] if h in nodes]
        for n in nodes:
            if n not in seen:
                return f"graph '{name}': node '{n}' is not reachable from entry '{first}'"
        old = self.graphs.get(name)
        if name == "default":
            return "graph 'default': use chain.set"
        gid = old["id"] if old else 1 + max([g["id"] for g in self.graphs.values()] or [0])
        self.graphs[name] = {"name": name, "id": gid,
                             "version": old["version"] + 1 if old else 1,
                             "entry": first, "nodes": nodes, "chain": False}
        return {"name": name, "id": gid, "version": self.graphs[name]["version"]}

    def handler(self, req: Any) -> Any:
        try:
            return self._handle(req)
        except (TypeError, KeyError, AttributeError, ValueError) as e:
            # sluiced answers a param of the wrong type with -32602 and a message
            # naming it; the fake only says what it tripped on.
            self.crashes.append(repr(e))
            return {"jsonrpc": "2.0", "id": req.get("id"),
                    "error": {"code": -32602, "message": f"bad params ({e})"}}

    # method -> its handler, called as handler(self, method, params, ok, err)
    METHODS: dict[str, str] = {
        "status": "_status",
        "nf.list": "_nf_list",
        "port.list": "_port_list",
        "service.list": "_service_list",
        "stats": "_stats",
        "chain.get": "_chain_get",
        "chain.set": "_chain_set",
        "nf.stop": "_nf_stop",
        "lb.set": "_lb_set",
        "rx.pause": "_rx_pause",
        "rx.resume": "_rx_resume",
        "nf.scale": "_nf_scale",
        "graph.get": "_graph_get",
        "graph.apply": "_graph_apply",
        "graph.remove": "_graph_remove",
        "rule.add": "_rule_add",
        "rule.list": "_rule_list",
        "rule.remove": "_rule_remove",
        "flow.list": "_flows",
        "flow.delete": "_flows",
        "flow.get": "_flows",
        "flow.request": "_flow_request",
        "flow.requests": "_flow_requests",
        "flow.request.remove": "_flow_request_remove",
        "subscribe": "_subscribe",
    }

    def _handle(self, req: Any) -> Any:
        if not isinstance(req, dict):
            return {"jsonrpc": "2.0", "id": None,
                    "error": {"code": -32700, "message": "parse error at column 1"}}
        rid, method, p = req.get("id"), req.get("method"), req.get("params") or {}

        def ok(result: Any) -> dict[str, Any]:
            return {"jsonrpc": "2.0", "id": rid, "result": result}

        def err(code: int, message: str) -> dict[str, Any]:
            return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}

        if method in self.fail:
            f = self.fail[method]
            return err(*f) if isinstance(f, tuple) else f
        name = self.METHODS.get(method) if isinstance(method, str) else None
        if name is None:
            return err(-32601, f"method '{method}' not found; 'status' lists the methods")
        return getattr(self, name)(method, p, ok, err)

    def _status(self, method: str, p: Any, ok: _Ok, err: _Err) -> Any:
        return ok({**STATUS, "rx_enabled": self.rx_enabled})

    def _nf_list(self, method: str, p: Any, ok: _Ok, err: _Err) -> Any:
        return ok(NFS)

    def _port_list(self, method: str, p: Any, ok: _Ok, err: _Err) -> Any:
        return ok(PORTS)

    def _service_list(self, method: str, p: Any, ok: _Ok, err: _Err) -> Any:
        return ok(self.services)

    def _stats(self, method: str, p: Any, ok: _Ok, err: _Err) -> Any:
        # with schema: what a real sluiced described (captured)
        return ok(STATS_SCHEMA if p.get("schema") is True else STATS)

    def _chain_get(self, method: str, p: Any, ok: _Ok, err: _Err) -> Any:
        return ok(self.chain)

    def _chain_set(self, method: str, p: Any, ok: _Ok, err: _Err) -> Any:
        hops = p.get("hops")
        if not isinstance(hops, list):
            return err(-32602, "param 'hops' (array of strings) is missing")
        # as sluiced: a service it does not know is made (its NFs may come
        # later) and named in a note; a port it does not have is refused
        for i, h in enumerate(hops):
            if h.startswith("port:") and h not in ("port:in", "port:out"):
                return err(-32000, f"chain hop {i + 1} '{h}': no port named '{h[5:]}'; "
                                   f"use a name from port.list")
        live = {s["name"] for s in self.services if s.get("instances")}
        idle = [h for h in hops if h != "drop" and not h.startswith("port:")
                and h not in live]
        self.chain = {"version": self.chain["version"] + 1, "hops": hops}
        res: dict[str, Any] = {"version": self.chain["version"]}
        if len(idle) == 1:
            res["note"] = (f"service '{idle[0]}' has no running instance: packets sent "
                           "to it are dropped (no_instance) until one registers; see "
                           "nf.list")
        return ok(res)

    def _nf_stop(self, method: str, p: Any, ok: _Ok, err: _Err) -> Any:
        i = p.get("instance")
        if not isinstance(i, int):
            return err(-32602, "param 'instance' (integer) is missing")
        if i not in (0, 1):
            return err(-32000, f"no running NF instance {i}; nf.list shows them")
        return ok({"instance": i, "state": "stopping"})

    def _lb_set(self, method: str, p: Any, ok: _Ok, err: _Err) -> Any:
        mode = p.get("mode")
        if mode not in ("flow", "queue", "rr"):
            return err(-32602, f"param 'mode' '{mode}': use flow, queue or rr")
        svc = next((s for s in self.services if s["name"] == p.get("service")), None)
        if svc is None:
            return err(-32000, f"no service {p.get('service')}; service.list shows "
                               f"the services")
        svc["lb"] = mode
        return ok({"service": svc["name"], "mode": mode})

    def _rx_pause(self, method: str, p: Any, ok: _Ok, err: _Err) -> Any:
        self.rx_enabled = False
        return ok({"rx_enabled": False})

    def _rx_resume(self, method: str, p: Any, ok: _Ok, err: _Err) -> Any:
        self.rx_enabled = True
        return ok({"rx_enabled": True})

    def _nf_scale(self, method: str, p: Any, ok: _Ok, err: _Err) -> Any:
        svc = next((s for s in self.services if s["name"] == p.get("service")), None)
        if svc is None:
            return err(-32000, f"no service {p.get('service')}; service.list shows "
                               f"the services")
        n = p.get("replicas")
        if not isinstance(n, int) or n < 0:
            return err(-32602, "param 'replicas' (integer >= 0) is missing")
        if n > 64:
            return err(-32000, f"{n} replicas is more than --max-nfs 64")
        have = len(svc["instances"])
        return ok({"service": svc["name"], "replicas": n,
                   "started_pids": list(range(5000, 5000 + max(0, n - have))),
                   "stopping": svc["instances"][n:][::-1]})

    def _graph_get(self, method: str, p: Any, ok: _Ok, err: _Err) -> Any:
        if "name" not in p:
            return ok({"graphs": [self.graph("default")] + list(self.graphs.values())})
        g = self.graph(p["name"])
        if g is None:
            return err(-32000, f"no graph named '{p['name']}'; see graph.get")
        return ok(g)

    def _graph_apply(self, method: str, p: Any, ok: _Ok, err: _Err) -> Any:
        r = self.graph_apply(p)
        return err(-32602, r) if isinstance(r, str) else ok(r)

    def _graph_remove(self, method: str, p: Any, ok: _Ok, err: _Err) -> Any:
        name = p.get("name")
        if not isinstance(name, str):
            return err(-32602, "param 'name' (graph name) is missing")
        if name == "default":
            return err(-32000, "graph 'default' is the default chain and cannot be "
                               "removed; replace it with chain.set or graph.apply")
        if name not in self.graphs:
            return err(-32000, f"no graph named '{name}'; see graph.get")
        del self.graphs[name]
        n = len([r for r in self.rules if r["graph"] == name])
        self.rules = [r for r in self.rules if r["graph"] != name]
        return ok({"removed": name, "rules_removed": n})

    def _rule_add_batch(self, method: str, p: Any, ok: _Ok, err: _Err) -> Any:
        """rule.add of a list of rules: all or none."""
        saved, first = (list(self.rules), self.rule_id), self.rule_id + 1
        for i, one in enumerate(p["rules"]):
            r = self._handle({"jsonrpc": "2.0", "id": 0, "method": "rule.add",
                             "params": one})
            if "error" in r:
                self.rules, self.rule_id = saved
                return err(r["error"]["code"], f"rules[{i}]: {r['error']['message']}")
        return ok({"added": len(p["rules"]), "first_id": first, "last_id": self.rule_id})

    def _rule_add(self, method: str, p: Any, ok: _Ok, err: _Err) -> Any:
        if "rules" in p:
            return self._rule_add_batch(method, p, ok, err)
        pr = p.get("priority", 0)
        if not isinstance(pr, int) or not -1000000 <= pr <= 1000000:
            return err(-32602, "param 'priority' must be an integer in -1000000..1000000 "
                               "(higher wins)")
        for k in p:
            if k not in ("graph", "priority", "proto", "src", "dst", "sport", "dport",
                         "in_port"):
                return err(-32602, f"unknown param '{k}': use proto, src, dst, sport, "
                                   f"dport, in_port and the method's own")
        e = _match_error(p)
        if e:
            return err(-32602, e)
        if "in_port" in p and p["in_port"] not in ("in", "out"):
            return err(-32602, f"param 'in_port': no port named '{p['in_port']}'; use a "
                               f"name from port.list")
        g = p.get("graph")
        if not isinstance(g, str):
            return err(-32602, "param 'graph' (graph name) is missing")
        if self.graph(g) is None:
            return err(-32000, f"no graph named '{g}': apply it first (graph.apply)")
        self.rule_id += 1
        rule = {"id": self.rule_id, "graph": g, "priority": pr}
        for k in ("proto", "src", "dst", "sport", "dport", "in_port"):
            if k in p and p[k] != "any":
                rule[k] = str(p[k]).lower()
        self.rules.append(rule)
        self.rules.sort(key=lambda r: -r["priority"])
        return ok(rule)

    def _rule_list(self, method: str, p: Any, ok: _Ok, err: _Err) -> Any:
        off, lim = p.get("offset", 0), p.get("limit", 10000)
        return ok({"rules": [{**r, "flows": 0} for r in self.rules[off:off + lim]],
                   "total": len(self.rules), "truncated": off + lim < len(self.rules),
                   "builds": self.rule_id})

    def _rule_remove(self, method: str, p: Any, ok: _Ok, err: _Err) -> Any:
        rule = p.get("id")
        if not isinstance(rule, int):
            return err(-32602, "param 'id' (rule id) is missing")
        if not any(r["id"] == rule for r in self.rules):
            return err(-32000, f"no rule with id {rule}; see rule.list")
        self.rules = [r for r in self.rules if r["id"] != rule]
        return ok({"removed": rule})

    def _flows(self, method: str, p: Any, ok: _Ok, err: _Err) -> Any:
        if method != "flow.list" and ("id" in p or "key" in p):
            if "id" in p:
                f = next((f for f in self.flows if f["id"] == p["id"]), None)
                if f is None:
                    return err(-32000, f"no flow with id {p['id']}; see flow.list")
            else:
                key = p["key"]
                if not re.fullmatch(r"(tcp|udp|sctp) \S+:\d+ > \S+:\d+", key):
                    return err(-32602, f"param 'key' '{key}' is not a flow key like "
                                       f"\"tcp 10.0.0.1:1234 > 10.0.0.2:80\" or \"udp "
                                       f"[2001:db8::1]:53 > [2001:db8::2]:5353\" (IPv6 "
                                       f"addresses in brackets)")
                f = next((f for f in self.flows if f["key"] == key), None)
                if f is None:
                    return err(-32000, f"no flow '{key}' in the table (it may have aged "
                                           f"out); see flow.list")
            if method == "flow.get":
                return ok(f)
            self.flows.remove(f)
            return ok({"deleted": 1})
        if method == "flow.get":
            return err(-32602, "give the flow as 'id' or as 'key' (\"tcp "
                               "10.0.0.1:1234 > 10.0.0.2:80\")")
        e = _match_error(p)
        if e:
            return err(-32602, e)
        if "graph" in p and self.graph(p["graph"]) is None:
            return err(-32000, f"no graph named '{p['graph']}': apply it first "
                               f"(graph.apply)")
        if "service" in p and p["service"] not in {s["name"] for s in self.services}:
            return err(-32000, f"no service {p['service']}; service.list shows the "
                               f"services")
        sel = [f for f in self.flows
               if p.get("graph", f["graph"]) == f["graph"]
               and ("service" not in p or p["service"] in f["pins"])
               and p.get("in_port", f["in_port"]) == f["in_port"]]
        if method == "flow.delete":
            if not p.get("all") and not (set(p) & {"graph", "service", "proto", "src",
                                                   "dst", "sport", "dport", "in_port"}):
                return err(-32602, "flow.delete needs 'id', 'key', filters, or "
                                   "\"all\": true")
            self.flows = [f for f in self.flows if f not in sel]
            return ok({"deleted": len(sel)})
        limit = p.get("limit", 100)
        return ok({"total": len(self.flows), "matched": len(sel), "flows": sel[:limit],
                   "truncated": len(sel) > limit})

    def _flow_request(self, method: str, p: Any, ok: _Ok, err: _Err) -> Any:
        kind = p.get("type")
        if kind not in ("skip_me", "request_me", "change_default", "message"):
            return err(-32602, "param 'type' must be skip_me, request_me, "
                               "change_default or message")
        if p.get("service") not in {s["name"] for s in self.services}:
            return err(-32000, f"no service {p.get('service')}; service.list shows the "
                               f"services")
        if kind == "message":
            return ok({"applied": 1})
        flow = p.get("flow") or {}
        if "key" in flow:
            if not any(f["key"] == flow["key"] for f in self.flows):
                return err(-32000, f"{kind} rejected: no such flow in the table (it may "
                                   f"have aged out)")
            return ok({"applied": 1})
        e = _match_error(flow.get("match") or {})
        if e:
            return err(-32602, e)
        if kind == "change_default" and p.get("to") not in ("port:out", "drop"):
            return err(-32000, f"{kind} rejected: graph 'default' has no edge from "
                               f"'{p['service']}' to '{p.get('to')}': "
                               f"ChangeDefault may only pick one of the node's allowed "
                               f"next hops")
        req = {"type": kind, "service": p["service"],
               **({"to": p["to"]} if kind == "change_default" else {}),
               "match": {k: str(v).lower() for k, v in (flow.get("match") or {}).items()
                         if v != "any"}}
        same = next((k for k in self.kept if {**k, "id": 0} == {**req, "id": 0}), None)
        if same is None:
            self.kept_id += 1
            same = {"id": self.kept_id, **req}
            self.kept.append(same)
        return ok({"applied": len(self.flows), "id": same["id"]})

    def _flow_requests(self, method: str, p: Any, ok: _Ok, err: _Err) -> Any:
        return ok({"requests": self.kept})

    def _flow_request_remove(self, method: str, p: Any, ok: _Ok, err: _Err) -> Any:
        kid = p.get("id")
        if not isinstance(kid, int) or kid < 1:
            return err(-32602, "param 'id' (a kept request's id, from flow.requests) is "
                               "missing or not a positive integer")
        if not any(k["id"] == kid for k in self.kept):
            return err(-32000, f"no kept wildcard request with id {kid}; see "
                               f"flow.requests")
        self.kept = [k for k in self.kept if k["id"] != kid]
        return ok({"removed": kid})

    def _subscribe(self, method: str, p: Any, ok: _Ok, err: _Err) -> Any:
        return [ok({"subscribed": True})] + [
            {"jsonrpc": "2.0", "method": "event", "params": e} for e in EVENTS] + ["close"]



# -- a real sluiced (tests/api/test_api_live.py) ------------------------------------------
# The fixtures of tests/integration/conftest.py, loaded under another name (both
# folders have a conftest.py), without its session-wide autouse check: only the
# tests that start a sluiced need root, hugepages and a build.

def _load(name: str, path: Path) -> Any:
    import sys

    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


_INTEGRATION = Path(__file__).resolve().parents[1] / "integration"
packets = _load("packets", _INTEGRATION / "packets.py")
integration = _load("_sluice_integration_conftest", _INTEGRATION / "conftest.py")
