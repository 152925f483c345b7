"""`sluice graph/rule/flow/lb/nf scale/events` against a fake sluiced
(test_client.FakeSluiced with a handler that answers the methods of
docs/control-socket.md in their documented shapes): the exact params sent
and what is printed."""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from test_client import FakeSluiced as _FakeSluiced
from typer.testing import CliRunner

from sluice.cli import app, event_line
from sluice.runtime.client import Client, ConnectionLost

runner = CliRunner()
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "graphs"
WIDE = {"COLUMNS": "200"}

FLOWS = [
    {"id": 7, "key": "udp 192.168.1.2:5353 > 10.0.0.9:53", "family": "ipv4", "proto": 17,
     "graph": "anomaly", "pkts": 1200, "bytes": 96000, "idle_ms": 12,
     "pins": {"ids": 3}, "overrides": [{"service": "sampler", "type": "default",
                                        "to": "ddos-detect"}]},
    {"id": 8, "key": "tcp 10.0.0.1:1234 > 10.0.0.2:80", "family": "ipv4", "proto": 6,
     "graph": "default", "pkts": 3, "bytes": 180, "idle_ms": 25000, "pins": {},
     "overrides": [{"service": "monitor", "type": "skip"}]},
]
EVENTS = [
    {"kind": "graph.applied", "ts": 1700000000.5, "data": {"name": "anomaly", "version": 2}},
    {"kind": "flow.request", "ts": 1700000001.25,
     "data": {"nf": "sampler", "instance": 4, "type": "change_default",
              "flow": {"key": "udp 1.2.3.4:5 > 10.0.0.9:53"}, "service": "sampler",
              "to": "ddos-detect", "result": "rejected", "reason": "no edge sampler -> x"}},
    {"kind": "nf.message", "ts": 1700000002.0,
     "data": {"from": "ddos-detect", "service": "scrubber", "key": "alarm",
              "value": "10.0.0.0/8"}},
]


class FakeSluiced(_FakeSluiced):
    def _conn(self, conn: Any) -> None:
        # `sluice events --count N` may go away while events are still being sent
        with contextlib.suppress(OSError):
            super()._conn(conn)


class Sluiced:
    """State and answers of the fake."""

    def __init__(self) -> None:
        self.graphs: dict[str, dict[str, Any]] = {}
        self.rules: list[dict[str, Any]] = [
            {"id": 1, "graph": "other", "priority": 1, "proto": None, "src": None,
             "dst": None, "sport": None, "dport": 22, "in_port": None, "flows": 0}]
        self.next_rule = 2
        self.fail: dict[str, tuple[int, str]] = {}
        self.live_flows = 0

    def handler(self, req: Any) -> Any:
        rid, m, p = req.get("id"), req.get("method"), req.get("params") or {}

        def ok(result: Any) -> dict[str, Any]:
            return {"jsonrpc": "2.0", "id": rid, "result": result}

        if m in self.fail:
            code, msg = self.fail[m]
            return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": msg}}
        if m == "graph.apply":
            old = self.graphs.get(p["name"])
            g = {"name": p["name"], "id": old["id"] if old else len(self.graphs) + 1,
                 "version": old["version"] + 1 if old else 1,
                 "entry": p.get("entry") or next(iter(p["nodes"])), "nodes": p["nodes"]}
            self.graphs[p["name"]] = g
            return ok({k: g[k] for k in ("name", "id", "version")})
        if m == "graph.get":
            if "name" in p:
                return ok(self.graphs[p["name"]])
            return ok({"graphs": list(self.graphs.values())})
        if m == "graph.remove":
            n = sum(r["graph"] == p["name"] for r in self.rules)
            self.rules = [r for r in self.rules if r["graph"] != p["name"]]
            self.graphs.pop(p["name"], None)
            return ok({"removed": p["name"], "rules_removed": n})
        if m == "rule.add":
            first = self.next_rule
            for q in p.get("rules", [p]):
                r = {"id": self.next_rule, "priority": 0, "proto": None, "src": None,
                     "dst": None, "sport": None, "dport": None, "in_port": None, **q,
                     "flows": 0}
                self.next_rule += 1
                self.rules.append(r)
            if "rules" in p:
                return ok({"added": len(p["rules"]), "first_id": first,
                           "last_id": self.next_rule - 1})
            return ok({"id": first})
        if m == "rule.list":  # pages of at most 2, as sluiced's of 10,000
            off, lim = p.get("offset", 0), min(p.get("limit", 2), 2)
            return ok({"rules": self.rules[off:off + lim], "total": len(self.rules),
                       "truncated": off + lim < len(self.rules), "builds": 1})
        if m == "rule.remove":
            return ok({"removed": p["id"]})
        if m == "flow.list":
            flows = FLOWS[:p.get("limit", 100)]
            return ok({"total": 1000000, "matched": 2 if len(p) > 1 else 1000000,
                       "flows": flows, "truncated": len(flows) < 2 or len(p) == 1})
        if m == "flow.get":
            return ok(FLOWS[0])
        if m == "flow.delete":
            return ok({"deleted": 1 if "id" in p else 42})
        if m == "flow.request":  # a message: the instances it was queued for
            if p["type"] == "message" and p["key"] == "full":
                return ok({"applied": 2, "note": "1 of the 3 instances of 'scrubber' had a "
                                                 "full inbox and did not get it (status "
                                                 "messages.undelivered)"})
            return ok({"applied": 2 if p["type"] == "message" else 5})
        if m == "stats":
            return ok({"flows": {"lookup": "cached", "live": self.live_flows,
                                 "capacity": 1048576, "timeout_ms": 30000}})
        if m == "lb.set":
            return ok({"service": p["service"], "mode": p["mode"]})
        if m == "nf.stop":
            if p["instance"] == 9:
                return {"jsonrpc": "2.0", "id": rid, "error": {
                    "code": -32000, "message": "no running NF instance 9; nf.list shows them"}}
            return ok({"instance": p["instance"], "state": "stopping"})
        if m == "nf.scale":
            if p["replicas"] > 2:  # the spec's form
                return ok({"service": p["service"], "started": [4, 5], "stopping": []})
            if p["replicas"] == 2:  # sluiced's: new replicas have no instance id yet
                return ok({"service": p["service"], "replicas": 2,
                           "started_pids": [4242], "stopping": []})
            return ok({"service": p["service"], "replicas": p["replicas"],
                       "started_pids": [], "stopping": [2]})
        if m == "subscribe":
            return [ok({"subscribed": True})] + [
                {"jsonrpc": "2.0", "method": "event", "params": e} for e in EVENTS] + ["close"]
        return {"jsonrpc": "2.0", "id": rid,
                "error": {"code": -32601, "message": f"method '{m}' not found"}}


@pytest.fixture
def fake() -> Iterator[tuple[Sluiced, FakeSluiced, list[str]]]:
    """(state, server, the --socket options to give a command)."""
    d = Path(tempfile.mkdtemp(prefix="slg", dir="/tmp"))  # short: sun_path has 108 bytes
    state = Sluiced()
    srv = FakeSluiced(d / "n.sock", handler=state.handler)
    yield state, srv, ["--socket", str(d / "n.sock")]
    srv.close()
    shutil.rmtree(d, ignore_errors=True)


Fake = tuple[Sluiced, FakeSluiced, list[str]]


def sent(srv: FakeSluiced) -> list[tuple[str, Any]]:
    """(method, params) of every request, in order."""
    return [(r["method"], r.get("params")) for r in srv.requests]


def run(args: list[str], fake: Fake, code: int = 0) -> Any:
    r = runner.invoke(app, [*args, *fake[2]], env=WIDE)
    assert r.exit_code == code, (r.output, r.exception)
    return r


# -- graph ---------------------------------------------------------------------------------

ANOMALY_NODES = {"firewall": ["sampler", "drop"],
                 "sampler": ["port:out", "ddos-detect", "ids"],
                 "ddos-detect": ["ids", "scrubber"], "ids": ["port:out", "scrubber"],
                 "scrubber": ["port:out", "drop"]}
ANOMALY_RULES = [
    {"graph": "anomaly", "priority": 10, "proto": "udp", "dst": "10.0.0.0/8", "dport": 53,
     "in_port": "in"},
    {"graph": "anomaly", "priority": 5, "proto": "tcp", "dst": "10.0.0.0/8", "dport": "80-443"}]


def test_graph_apply_dry_run_sends_nothing(fake: Fake) -> None:
    f = str(EXAMPLES / "anomaly.yaml")
    r = runner.invoke(app, ["graph", "apply", f, "--dry-run", "--socket", "/nonexistent"])
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines() == [
        f"{f}: ok: 1 graph(s) (anomaly), 2 rule(s); nothing sent (--dry-run). The calls:",
        "  graph.apply " + json.dumps({"name": "anomaly", "entry": "firewall",
                                       "nodes": ANOMALY_NODES}),
        "  rule.add " + json.dumps({"rules": ANOMALY_RULES})]
    r = runner.invoke(app, ["graph", "apply", f, "--dry-run", "--json"])
    assert json.loads(r.stdout) == [
        {"method": "graph.apply", "params": {"name": "anomaly", "entry": "firewall",
                                             "nodes": ANOMALY_NODES}},
        {"method": "rule.add", "params": {"rules": ANOMALY_RULES}}]
    assert fake[1].requests == []


def test_graph_apply_sends_graphs_then_rules_once(fake: Fake) -> None:
    state, srv, _ = fake
    f = str(EXAMPLES / "anomaly.yaml")
    r = run(["graph", "apply", f], fake)
    assert sent(srv) == [
        ("graph.apply", {"name": "anomaly", "entry": "firewall", "nodes": ANOMALY_NODES}),
        ("rule.list", {"offset": 0, "limit": 10000}),
        ("rule.add", {"rules": ANOMALY_RULES}),
        ("stats", None)]  # an empty flow table: nothing to say
    assert r.stdout.splitlines() == [
        "graph anomaly: applied (id 1, version 1), 5 node(s), entry firewall",
        "rule 2: added: priority 10, udp dst 10.0.0.0/8 dport 53 in_port in -> graph anomaly",
        "rule 3: added: priority 5, tcp dst 10.0.0.0/8 dport 80-443 -> graph anomaly"]
    # again: the graph is replaced, the rules are there already; a hand-made rule is kept
    state.rules.append({"id": 9, "graph": "anomaly", "priority": 1, "proto": "tcp",
                        "dport": 22, "flows": 3})
    srv.requests.clear()
    r = run(["graph", "apply", f], fake)
    # three rules: two pages
    assert [m for m, _ in sent(srv)] == ["graph.apply", "rule.list", "rule.list", "stats"]
    assert r.stdout.splitlines() == [
        "graph anomaly: applied (id 1, version 2), 5 node(s), entry firewall",
        "rule 2: already there: priority 10, udp dst 10.0.0.0/8 dport 53 in_port in -> graph "
        "anomaly",
        "rule 3: already there: priority 5, tcp dst 10.0.0.0/8 dport 80-443 -> graph anomaly",
        "rule 9: not in " + f + ", kept: priority 1, tcp dport 22 -> graph anomaly (`sluice "
        "rule remove 9` removes it)"]


def test_graph_apply_says_live_flows_keep_their_graph(fake: Fake) -> None:
    state, srv, _ = fake
    state.live_flows = 1234
    f = str(EXAMPLES / "anomaly.yaml")
    r = run(["graph", "apply", f], fake)
    assert r.stdout.splitlines()[-1] == (
        "1,234 existing flow(s) keep the graph they were classified into until they end (no "
        "packet for 30 s) or are deleted: `sluice flow delete --all` (or with filters, e.g. "
        "--graph NAME) has their next packet classified by the rules again")
    assert len(r.stdout.splitlines()) == 4 and sent(srv)[-1] == ("stats", None)
    # the count cannot be read: the apply is made all the same, nothing said
    state.fail["stats"] = (-32603, "out of memory")
    r = run(["graph", "apply", f], fake)
    assert len(r.stdout.splitlines()) == 3 and "existing flow" not in r.stdout


def test_graph_apply_json_and_top_level_rules(fake: Fake) -> None:
    state, srv, _ = fake
    r = run(["graph", "apply", str(EXAMPLES / "video.yaml"), "--json"], fake)
    out = json.loads(r.stdout)
    assert out["graphs"] == [{"name": "video", "id": 1, "version": 1}]
    assert [(x["id"], x["added"], x["dport"]) for x in out["rules"]] == [
        (2, True, 80), (3, True, 443), (4, True, 443), (5, True, 443)]
    assert sent(srv)[2][1]["rules"][0] == {"graph": "video", "priority": 20, "proto": "tcp",
                                           "src": "192.168.0.0/16", "dport": 80}
    assert [m for m, _ in sent(srv)] == ["graph.apply", "rule.list", "rule.add"]  # no stats


def test_graph_apply_errors(fake: Fake, tmp_path: Path) -> None:
    state, srv, _ = fake
    bad = tmp_path / "g.yaml"
    bad.write_text("graphs:\n  - name: g\n    nodes: {a: [b], b: [a]}\n")
    r = run(["graph", "apply", str(bad)], fake, code=1)
    assert r.stderr == (f"{bad}: graphs[0].nodes.a: graph 'g': cycle a -> b -> a: a graph "
                        f"must not loop; remove one of its edges (or end the path with "
                        f"port:NAME or drop)\n")
    assert srv.requests == []
    state.fail["graph.apply"] = (-32602, "graph 'anomaly': node 'firewall': no port 'out'")
    r = run(["graph", "apply", str(EXAMPLES / "anomaly.yaml")], fake, code=1)
    assert r.stderr == (f"{EXAMPLES}/anomaly.yaml: graph 'anomaly': sluiced refused it: graph "
                        f"'anomaly': node 'firewall': no port 'out'\n")
    r = run(["graph", "apply", str(EXAMPLES / "anomaly.yaml"), "--json"], fake, code=1)
    assert r.stderr == (f"{EXAMPLES}/anomaly.yaml: graph 'anomaly': graph.apply: graph "
                        f"'anomaly': node 'firewall': no port 'out' (JSON-RPC error -32602)\n")
    del state.fail["graph.apply"]
    state.fail["rule.add"] = (-32602, "rules[0]: param 'in_port': no port 'in'")
    r = run(["graph", "apply", str(EXAMPLES / "anomaly.yaml")], fake, code=1)
    assert r.stderr == (f"{EXAMPLES}/anomaly.yaml: rule for graph 'anomaly' (udp dst "
                        f"10.0.0.0/8 dport 53 in_port in): sluiced refused it: param "
                        f"'in_port': no port 'in'\n")
    state.fail["rule.add"] = (-32000, "2 rules would make 4100, more than --max-rules 4096 "
                              "(4098 in use): remove some or raise --max-rules")
    r = run(["graph", "apply", str(EXAMPLES / "anomaly.yaml")], fake, code=1)
    assert r.stderr == (f"{EXAMPLES}/anomaly.yaml: rules: sluiced refused them: 2 rules would "
                        f"make 4100, more than --max-rules 4096 (4098 in use): remove some or "
                        f"raise --max-rules\n")


def test_graph_get_and_remove(fake: Fake) -> None:
    state, srv, _ = fake
    run(["graph", "apply", str(EXAMPLES / "anomaly.yaml")], fake)
    run(["graph", "apply", str(EXAMPLES / "video.yaml")], fake)
    srv.requests.clear()
    r = run(["graph", "get", "anomaly"], fake)
    assert sent(srv) == [("graph.get", {"name": "anomaly"})]
    assert r.stdout == (
        "graph anomaly: id 1, version 1, entry firewall\n"
        "  firewall    -> sampler (default), drop\n"
        "  sampler     -> port:out (default), ddos-detect, ids\n"
        "  ddos-detect -> ids (default), scrubber\n"
        "  ids         -> port:out (default), scrubber\n"
        "  scrubber    -> port:out (default), drop\n")
    r = run(["graph", "get"], fake)
    assert sent(srv)[-1] == ("graph.get", None)
    assert r.stdout.count("graph ") == 2 and "\n\ngraph video: id 2, version 1" in r.stdout
    r = run(["graph", "get", "video", "--json"], fake)
    assert json.loads(r.stdout)["nodes"]["shaper"] == ["port:out"]
    r = run(["graph", "remove", "anomaly"], fake)
    assert sent(srv)[-1] == ("graph.remove", {"name": "anomaly"})
    assert r.stdout == "graph anomaly: removed, with its 2 rule(s)\n"
    state.graphs = {"default": {"name": "default", "id": 0, "version": 3, "entry": "fw",
                                "nodes": {"fw": ["mon"], "mon": ["port:out"]}, "chain": True}}
    assert run(["graph", "get"], fake).stdout == (
        "graph default: id 0, version 3, entry fw (the chain: NFs may also send to any "
        "service)\n"
        "  fw  -> mon (default)\n"
        "  mon -> port:out (default)\n")
    state.graphs.clear()
    assert run(["graph", "get"], fake).stdout == "no graphs\n"
    state.fail["graph.remove"] = (-32000, "graph 'default' is the chain; it cannot be removed")
    r = run(["graph", "remove", "default"], fake, code=1)
    assert r.stderr == "sluice graph remove: graph 'default' is the chain; it cannot be removed\n"


# -- rule ----------------------------------------------------------------------------------

def test_rule_add(fake: Fake) -> None:
    srv = fake[1]
    r = run(["rule", "add", "--graph", "anomaly", "--priority", "10", "--proto", "UDP",
             "--src", "192.168.0.0/16", "--dst", "10.0.0.0/8", "--sport", "1024-65535",
             "--dport", "53", "--in-port", "in"], fake)
    assert sent(srv) == [("rule.add", {"graph": "anomaly", "priority": 10, "proto": "udp",
                                       "src": "192.168.0.0/16", "dst": "10.0.0.0/8",
                                       "sport": "1024-65535", "dport": 53, "in_port": "in"})]
    assert r.stdout == ("rule 2: added: priority 10, udp src 192.168.0.0/16 dst 10.0.0.0/8 "
                        "sport 1024-65535 dport 53 in_port in -> graph anomaly\n")
    run(["rule", "add", "-g", "video"], fake)
    assert sent(srv)[-1] == ("rule.add", {"graph": "video", "priority": 0})
    r = run(["rule", "add", "--json", "-g", "video", "--proto", "6"], fake)
    assert json.loads(r.stdout) == {"id": 4}
    assert sent(srv)[-1] == ("rule.add", {"graph": "video", "priority": 0, "proto": 6})


def test_rule_add_checks_before_sending(fake: Fake) -> None:
    r = run(["rule", "add", "-g", "x", "--proto", "icmp", "--dport", "80",
             "--dst", "10.0.0.1/8", "--priority", "7000000"], fake, code=1)
    assert r.stderr == (
        "sluice rule add: --priority: 7000000 is out of range: use -1000000 to 1000000 "
        "(higher wins)\n"
        "sluice rule add: --dst: '10.0.0.1/8' has bits set after the prefix length: write "
        "10.0.0.0/8 (or the address alone for one host)\n"
        "sluice rule add: --dport: dport needs proto tcp, udp or sctp (or no proto): icmp "
        "packets have no ports\n")
    assert fake[1].requests == []
    r = run(["rule", "add", "--proto", "udp"], fake, code=2)
    assert "Missing option '--graph'" in r.output


def test_rule_list_and_remove(fake: Fake) -> None:
    state, srv, _ = fake
    state.rules.append({"id": 2, "graph": "anomaly", "priority": 10, "proto": "udp",
                        "src": None, "dst": "10.0.0.0/8", "sport": None, "dport": 53,
                        "in_port": "in", "flows": 12345})
    state.rules.append({"id": 7, "graph": "anomaly", "priority": 0, "proto": "tcp",
                        "src": None, "dst": None, "sport": None, "dport": 80,
                        "in_port": None, "flows": 0})
    r = run(["rule", "list"], fake)
    # the fake's pages hold 2 rules (sluiced's 10,000): all three are listed
    assert sent(srv) == [("rule.list", {"offset": 0, "limit": 10000}),
                         ("rule.list", {"offset": 2, "limit": 10000})]
    lines = [line.split() for line in r.stdout.splitlines() if line.strip("━─┃│ ")]
    assert ["2", "10", "udp", "dst", "10.0.0.0/8", "dport", "53", "in_port", "in", "anomaly",
            "12,345"] in [[w for w in line if w not in "│┃"] for line in lines]
    assert ["7", "0", "tcp", "dport", "80", "anomaly", "0"] in [
        [w for w in line if w not in "│┃"] for line in lines]
    assert any("dport 22" in line and "other" in line for line in r.stdout.splitlines())
    r = run(["rule", "list", "--json"], fake)
    assert json.loads(r.stdout) == {"rules": state.rules}
    state.rules.clear()
    assert run(["rule", "list"], fake).stdout == "no rules (every new flow takes the chain)\n"
    r = run(["rule", "remove", "2"], fake)
    assert sent(srv)[-1] == ("rule.remove", {"id": 2}) and r.stdout == "rule 2: removed\n"
    run(["rule", "remove", "x"], fake, code=2)


# -- flow ----------------------------------------------------------------------------------

def test_flow_list_defaults_to_100_and_says_how_many_more(fake: Fake) -> None:
    srv = fake[1]
    r = run(["flow", "list"], fake)
    assert sent(srv) == [("flow.list", {"limit": 100})]
    assert "udp 192.168.1.2:5353 > 10.0.0.9:53" in r.stdout
    row = next(line for line in r.stdout.splitlines() if "udp 192" in line)
    assert "anomaly" in row and "1,200" in row and "96,000" in row and "12 ms" in row
    assert "ids#3, sampler default ddos-detect" in row
    row = next(line for line in r.stdout.splitlines() if "tcp 10.0" in line)
    assert "25 s" in row and "skip monitor" in row
    assert r.stdout.splitlines()[-1] == (
        "2 of 1,000,000 flow(s) shown; --limit N shows more")


def test_flow_list_filters(fake: Fake) -> None:
    srv = fake[1]
    r = run(["flow", "list", "--graph", "anomaly", "--proto", "udp", "--src", "192.168.0.0/16",
             "--dst", "10.0.0.9", "--port", "53", "--service", "ids", "--limit", "1"], fake)
    assert sent(srv) == [("flow.list", {"limit": 1, "proto": "udp", "src": "192.168.0.0/16",
                                        "dst": "10.0.0.9", "dport": 53, "graph": "anomaly",
                                        "service": "ids"})]
    assert r.stdout.splitlines()[-1] == (
        "1 of 2 matching flow(s) shown (1,000,000 in the table); --limit N shows more")
    r = run(["flow", "list", "--graph", "anomaly"], fake)
    assert r.stdout.splitlines()[-1] == "2 matching flow(s) (1,000,000 in the table)"
    run(["flow", "list", "--in-port", "in2"], fake)
    assert sent(srv)[-1] == ("flow.list", {"limit": 100, "in_port": "in2"})
    run(["flow", "delete", "--in-port", "in2"], fake)
    assert sent(srv)[-1] == ("flow.delete", {"in_port": "in2"})
    r = run(["flow", "list", "--json", "--limit", "1"], fake)
    assert json.loads(r.stdout) == {"total": 1000000, "matched": 1000000, "flows": FLOWS[:1],
                                    "truncated": True}
    r = run(["flow", "list", "--port", "http"], fake, code=1)
    assert r.stderr == ("sluice flow list: --port: 'http' is not a port 0-65535 or a range "
                        "N-M such as 1024-65535\n")
    r = run(["flow", "list", "--limit", "0"], fake)
    assert sent(srv)[-1] == ("flow.list", {"limit": 0})
    assert r.stdout == "1,000,000 flow(s)\n"
    run(["flow", "list", "--limit", "100001"], fake, code=2)
    run(["flow", "list", "--limit", "-1"], fake, code=2)


def test_flow_get(fake: Fake) -> None:
    srv = fake[1]
    r = run(["flow", "get", "7"], fake)
    assert sent(srv) == [("flow.get", {"id": 7})]
    assert r.stdout == (
        "flow 7: udp 192.168.1.2:5353 > 10.0.0.9:53\n"
        "  graph:     anomaly\n"
        "  packets:   1,200\n"
        "  bytes:     96,000\n"
        "  idle:      12 ms\n"
        "  pinned:    ids -> instance 3\n"
        "  overrides: default of sampler is ddos-detect\n")
    run(["flow", "get", "--key", "udp 192.168.1.2:5353 > 10.0.0.9:53", "--json"], fake)
    assert sent(srv)[-1] == ("flow.get", {"key": "udp 192.168.1.2:5353 > 10.0.0.9:53"})
    for args in ([], ["7", "--key", "k"]):
        r = run(["flow", "get", *args], fake, code=1)
        assert r.stderr == "sluice flow get: give a flow ID or --key KEY (one of them)\n"
    state = fake[0]
    state.fail["flow.get"] = (-32000, "no flow 99")
    r = run(["flow", "get", "99"], fake, code=1)
    assert r.stderr == "sluice flow get: no flow 99\n"


def test_flow_delete(fake: Fake) -> None:
    srv = fake[1]
    assert run(["flow", "delete", "7"], fake).stdout == "deleted 1 flow(s)\n"
    assert run(["flow", "delete", "--all"], fake).stdout == "deleted 42 flow(s)\n"
    run(["flow", "delete", "--graph", "video", "--proto", "tcp", "--port", "443"], fake)
    run(["flow", "delete", "--key", "udp 192.168.1.2:5353 > 10.0.0.9:53"], fake)
    assert sent(srv) == [("flow.delete", {"id": 7}), ("flow.delete", {"all": True}),
                         ("flow.delete", {"proto": "tcp", "dport": 443, "graph": "video"}),
                         ("flow.delete", {"key": "udp 192.168.1.2:5353 > 10.0.0.9:53"})]
    for args in ([], ["7", "--all"], ["--all", "--graph", "g"], ["7", "--proto", "tcp"],
                 ["7", "--key", "k"], ["--key", "k", "--all"]):
        r = run(["flow", "delete", *args], fake, code=1)
        assert r.stderr == ("sluice flow delete: say which flows: a flow ID, --key KEY, --all, "
                            "or filters (--graph, --proto, --src, --dst, --port, --service, "
                            "--in-port); one of the four\n")
    assert len(srv.requests) == 4


def test_flow_requests(fake: Fake) -> None:
    srv = fake[1]
    key = "udp 192.168.1.2:5353 > 10.0.0.9:53"
    r = run(["flow", "request", "skip-me", "monitor", "--flow", key], fake)
    assert r.stdout == "skip_me: applied to 5 flow(s)\n"
    run(["flow", "request", "request-me", "scrubber", "--proto", "udp", "--dst", "10.0.0.0/8",
         "--dport", "53"], fake)
    run(["flow", "request", "change-default", "sampler", "--to", "ddos-detect",
         "--all-flows"], fake)
    r = run(["flow", "request", "message", "scrubber", "alarm", "10.0.0.0/8"], fake)
    assert r.stdout == "message: queued for 2 instance(s) of scrubber (their on_message gets it)\n"
    r = run(["flow", "request", "message", "scrubber", "full", "x"], fake)
    assert r.stdout == ("message: queued for 2 instance(s) of scrubber (their on_message gets "
                        "it); 1 of the 3 instances of 'scrubber' had a full inbox and did not "
                        "get it (status messages.undelivered)\n")
    r = run(["flow", "request", "skip-me", "ids", "--sport", "1-2", "--src", "10.0.0.1",
             "--json"], fake)
    assert json.loads(r.stdout) == {"applied": 5}
    assert sent(srv) == [
        ("flow.request", {"type": "skip_me", "flow": {"key": key}, "service": "monitor"}),
        ("flow.request", {"type": "request_me",
                          "flow": {"match": {"proto": "udp", "dst": "10.0.0.0/8", "dport": 53}},
                          "service": "scrubber"}),
        ("flow.request", {"type": "change_default", "flow": {"match": {}},
                          "service": "sampler", "to": "ddos-detect"}),
        ("flow.request", {"type": "message", "service": "scrubber", "key": "alarm",
                          "value": "10.0.0.0/8"}),
        ("flow.request", {"type": "message", "service": "scrubber", "key": "full",
                          "value": "x"}),
        ("flow.request", {"type": "skip_me", "flow": {"match": {"src": "10.0.0.1",
                                                                "sport": "1-2"}},
                          "service": "ids"})]


def test_flow_request_errors(fake: Fake) -> None:
    for args in (["skip-me", "ids"], ["skip-me", "ids", "--flow", "k", "--proto", "tcp"],
                 ["request-me", "ids", "--all-flows", "--dport", "80"]):
        r = run(["flow", "request", *args], fake, code=1)
        cmd = " ".join(args[:1])
        assert r.stderr == (f"sluice flow request {cmd}: say which flows: --flow KEY, a match "
                            f"(--proto, --src, --dst, --sport, --dport) or --all-flows; one of "
                            f"the three\n")
    r = run(["flow", "request", "change-default", "sampler", "--all-flows"], fake, code=2)
    assert "Missing option '--to'" in r.output
    r = run(["flow", "request", "request-me", "ids", "--proto", "xyz"], fake, code=1)
    assert r.stderr.startswith("sluice flow request request-me: --proto: 'xyz' is not a ")
    assert fake[1].requests == []
    fake[0].fail["flow.request"] = (-32000, "graph 'anomaly' has no edge sampler -> scrubber")
    r = run(["flow", "request", "change-default", "sampler", "--to", "scrubber",
             "--all-flows"], fake, code=1)
    assert r.stderr == ("sluice flow request change-default: graph 'anomaly' has no edge "
                        "sampler -> scrubber\n")


# -- lb, nf scale ------------------------------------------------------------------------------

def test_lb_set(fake: Fake) -> None:
    srv = fake[1]
    for mode, text in (("flow", "flow-sticky"), ("queue", "shortest queue"),
                       ("rr", "round robin")):
        r = run(["lb", "set", "ids", mode], fake)
        assert r.stdout == f"service ids: load balancing {mode} ({text})\n"
        assert sent(srv)[-1] == ("lb.set", {"service": "ids", "mode": mode})
    r = run(["lb", "set", "ids", "random"], fake, code=2)
    assert "'random' is not one of" in r.output
    assert len(srv.requests) == 3


def test_nf_stop(fake: Fake) -> None:
    srv = fake[1]
    r = run(["nf", "stop", "3"], fake)
    assert sent(srv) == [("nf.stop", {"instance": 3})]
    assert r.stdout == "instance 3: stopping (`sluice nf list` shows it until it has gone)\n"
    r = run(["nf", "stop", "3", "--json"], fake)
    assert json.loads(r.stdout) == {"instance": 3, "state": "stopping"}
    r = run(["nf", "stop", "9"], fake, code=1)
    assert r.stderr == "sluice nf stop: no running NF instance 9; `sluice nf list` shows them\n"
    run(["nf", "stop", "-1"], fake, code=2)
    assert len(srv.requests) == 3


def test_nf_scale(fake: Fake) -> None:
    srv = fake[1]
    r = run(["nf", "scale", "ids", "3"], fake)
    assert sent(srv) == [("nf.scale", {"service": "ids", "replicas": 3})]
    assert r.stdout == "service ids: 3 replica(s): started instance(s) 4, 5\n"
    r = run(["nf", "scale", "ids", "1"], fake)
    assert r.stdout == "service ids: 1 replica(s): stopping instance(s) 2\n"
    r = run(["nf", "scale", "ids", "2"], fake)
    assert r.stdout == ("service ids: 2 replica(s): started pid(s) 4242 (they appear in "
                        "`sluice nf list` once registered)\n")
    r = run(["nf", "scale", "ids", "2", "--json"], fake)
    assert json.loads(r.stdout) == {"service": "ids", "replicas": 2, "started_pids": [4242],
                                    "stopping": []}
    run(["nf", "scale", "ids", "0"], fake)
    assert sent(srv)[-1] == ("nf.scale", {"service": "ids", "replicas": 0})
    run(["nf", "scale", "ids", "-1"], fake, code=2)
    assert len(srv.requests) == 5


# -- events ----------------------------------------------------------------------------------

def when(ts: float) -> str:
    return datetime.fromtimestamp(ts).strftime("%H:%M:%S.%f")[:-3]


def test_events_until_sluiced_goes_away(fake: Fake) -> None:
    srv = fake[1]
    r = run(["events"], fake, code=1)
    assert sent(srv) == [("subscribe", None)]
    assert r.stdout.splitlines() == [
        f"{when(1700000000.5)} graph.applied name=anomaly version=2",
        f"{when(1700000001.25)} flow.request nf=sampler instance=4 type=change_default "
        f'flow={{"key": "udp 1.2.3.4:5 > 10.0.0.9:53"}} service=sampler to=ddos-detect '
        f'result=rejected reason="no edge sampler -> x"',
        f"{when(1700000002.0)} nf.message from=ddos-detect service=scrubber key=alarm "
        f"value=10.0.0.0/8"]
    sock = fake[2][1]
    assert r.stderr == (f"events of {sock} (Ctrl-C stops)\nevents: sluiced closed the "
                        f"connection on {sock} (it stopped, or this client left more "
                        f"than its --control-out-kb unread)\n")


def test_events_filters_count_and_json(fake: Fake) -> None:
    r = run(["events", "--kind", "flow", "--kind", "nf.message", "--json"], fake, code=1)
    assert [json.loads(line) for line in r.stdout.splitlines()] == EVENTS[1:]
    r = run(["events", "--count", "1"], fake)
    assert r.stdout.splitlines() == [f"{when(1700000000.5)} graph.applied name=anomaly "
                                     f"version=2"]
    r = run(["events", "-k", "graph.applied", "-c", "1"], fake)
    assert len(r.stdout.splitlines()) == 1


def test_client_events(fake: Fake) -> None:
    with Client("t", fake[2][1]) as c:
        it = c.events()
        assert next(it) == EVENTS[0]
        assert [next(it), next(it)] == EVENTS[1:]
        with pytest.raises(ConnectionLost) as e:
            next(it)
    assert str(e.value) == (f"events: sluiced closed the connection on {fake[2][1]} (it "
                            f"stopped, or this client left more than its --control-out-kb "
                            f"unread)")


def test_event_line() -> None:
    assert event_line({"kind": "nf.up", "ts": None, "data": {"service": "fw", "ok": True}}) \
        == "--:--:--.--- nf.up service=fw ok=true"
    assert event_line({"kind": "x", "ts": 0, "data": None}) == f"{when(0)} x"
