"""The REST API against a real sluiced: graphs, rules and flows under traffic,
flow requests, scaling, load-balancer modes and events over a websocket.
The fixtures are tests/integration's (tests/api/conftest.py)."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

from apifake import integration, packets
from fastapi.testclient import TestClient

from sluice.api import SOCKET_METHODS, ApiServer, create_app

wait_until = integration.wait_until


def _fwd(name: str) -> dict[str, Any]:
    return {"name": name, "program": integration.prog("forward"), "service": name}


def _flows(api: TestClient, **params: Any) -> dict[str, Any]:
    r = api.get("/api/v1/flows", params={"limit": 100000, **params})
    assert r.status_code == 200, r.text
    return r.json()


def test_graphs_rules_flows_and_requests(real_sluiced: None, launch: Any, node: str,
                                         tmp_path: Path) -> None:
    frames = packets.mixed(200, flows=20, seed=7)
    conns = {packets.flow_of(f) for f in frames}
    udp = {c for c in conns if c[1] == "UDP"}
    assert udp and len(udp) < len(conns)
    src = packets.write(tmp_path / "in.pcap", frames)
    run = launch(integration.deployment(
        node,
        ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src},infinite_rx=1"},
               {"name": "out", "device": "net_null0,no-rx=1"}],
        nfs=[_fwd("a"), _fwd("b")], chain=["a", "port:out"]))
    api = TestClient(create_app(node, str(run.dep.socket_path())))

    # Every method sluiced offers has its endpoint (but shutdown, on purpose).
    methods = api.get("/api/v1/status").json()["methods"]
    assert set(methods) - {"shutdown"} == set(SOCKET_METHODS)

    _check_graphs(api)
    _check_flows(api, conns, udp)
    rule, in_udp = _check_rule(api, conns, udp)
    _check_flow_requests(api, udp, in_udp)
    _check_graph_removal(api, conns, rule)


def _check_graphs(api: TestClient) -> None:
    # -- graphs: applied over REST, read back exactly
    nodes = {"b": ["port:out", "drop"]}
    r = api.put("/api/v1/graphs/udp", json={"nodes": nodes})
    assert r.status_code == 200, r.text
    gid, v1 = r.json()["id"], r.json()["version"]  # versions count every graph applied
    assert r.json() == {"name": "udp", "id": gid, "version": v1} and gid > 0
    graph = {"name": "udp", "id": gid, "version": v1, "entry": "b", "nodes": nodes,
             "chain": False}
    assert api.get("/api/v1/graphs/udp").json() == graph
    listed = {g["name"]: g for g in api.get("/api/v1/graphs").json()["graphs"]}
    assert listed["udp"] == graph
    assert listed["default"]["nodes"] == {"a": ["port:out"]}
    assert listed["default"]["chain"] is True and listed["default"]["entry"] == "a"
    r = api.put("/api/v1/graphs/udp", json={"nodes": nodes, "entry": "b"})
    assert r.json() == {"name": "udp", "id": gid, "version": v1 + 1}
    assert api.get("/api/v1/graphs/udp").json() == {**graph, "version": v1 + 1}
    r = api.get("/api/v1/graphs/nope")
    assert (r.status_code, r.json()) == (404, {
        "detail": "no graph named 'nope'; see `GET /api/v1/graphs`"})
    r = api.put("/api/v1/graphs/bad", json={"nodes": {"b": ["zz"]}})
    assert (r.status_code, r.json()) == (422, {
        "detail": "graph 'bad': node 'b': edge to 'zz', which is not a node of this graph "
                  "(add it under nodes, or use port:NAME or drop)"})
    r = api.delete("/api/v1/graphs/default")
    assert (r.status_code, r.json()) == (409, {
        "detail": "graph 'default' is the default chain and cannot be removed; replace it "
                  "with `PUT /api/v1/chain` or `PUT /api/v1/graphs/{name}`"})
    assert "bad" not in {g["name"] for g in api.get("/api/v1/graphs").json()["graphs"]}


def _check_flows(api: TestClient, conns: set[Any], udp: set[Any]) -> None:
    # -- flows while traffic runs: one per connection, all in the chain
    st = wait_until(lambda: (s := api.get("/api/v1/stats").json())["flows"]["live"] ==
                    len(conns) and s, 30, f"{len(conns)} flows")
    assert st["flows"]["created"] == len(conns)
    lst = _flows(api)
    assert (lst["total"], lst["matched"], lst["truncated"]) == (len(conns), len(conns), False)
    assert {f["graph"] for f in lst["flows"]} == {"default"}
    assert all(set(f["pins"]) == {"a"} for f in lst["flows"])
    five = api.get("/api/v1/flows", params={"limit": 5}).json()
    assert len(five["flows"]) == 5 and five["truncated"] is True
    assert five["matched"] == len(conns)
    dflt = api.get("/api/v1/flows").json()  # default limit 100: all of them here
    assert len(dflt["flows"]) == len(conns) and dflt["truncated"] is False
    one = lst["flows"][0]
    by_id = api.get(f"/api/v1/flows/{one['id']}").json()
    by_key = api.get(f"/api/v1/flows/{quote(one['key'], safe='')}").json()
    for f in (by_id, by_key):
        assert (f["id"], f["key"], f["graph"], f["pins"]) == (
            one["id"], one["key"], one["graph"], one["pins"])
        assert f["pkts"] >= one["pkts"] > 0  # traffic runs
    r = api.get("/api/v1/flows/99999999")
    assert (r.status_code, r.json()) == (404, {
        "detail": "no flow with id 99999999; see `GET /api/v1/flows`"})
    r = api.get(f"/api/v1/flows/{quote('tcp 1.2.3.4:1 > 5.6.7.8:2', safe='')}")
    assert (r.status_code, r.json()) == (404, {
        "detail": "no flow 'tcp 1.2.3.4:1 > 5.6.7.8:2' in the table (it may have aged out); "
                  "see `GET /api/v1/flows`"})
    r = api.get("/api/v1/flows", params={"graph": "nope"})
    assert (r.status_code, r.json()) == (404, {
        "detail": "no graph named 'nope': apply it first (`PUT /api/v1/graphs/{name}`)"})
    assert _flows(api, proto="udp")["matched"] == len(udp)


def _check_rule(api: TestClient, conns: set[Any], udp: set[Any]) -> tuple[Any, Any]:
    # -- a rule: new UDP flows go to graph 'udp'
    r = api.post("/api/v1/rules", json={"graph": "udp", "proto": "udp", "priority": 7})
    assert r.status_code == 201, r.text
    rule = r.json()
    assert rule == {"id": rule["id"], "graph": "udp", "priority": 7, "proto": "udp"}
    assert api.get("/api/v1/rules").json() == {"rules": [{**rule, "flows": 0}], "total": 1,
                                                "truncated": False, "builds": 1}
    r = api.post("/api/v1/rules", json={"graph": "nope", "proto": "udp"})
    assert (r.status_code, r.json()) == (404, {
        "detail": "no graph named 'nope': apply it first (`PUT /api/v1/graphs/{name}`)"})
    r = api.post("/api/v1/rules", json={"graph": "udp", "src": "10.0.0.1/8"})
    # refused by the API in the CLI's words (graph.match_params), before sluiced
    assert (r.status_code, r.json()["detail"]) == (422, (
        "src: '10.0.0.1/8' has bits set after the prefix length: write 10.0.0.0/8 (or the "
        "address alone for one host)"))
    # existing flows keep their graph until deleted; then they are classified again
    r = api.delete("/api/v1/flows", params={"all": "true"})
    assert (r.status_code, r.json()) == (200, {"deleted": len(conns)})

    def reclassified() -> bool:
        fl = _flows(api)["flows"]
        return len(fl) == len(conns) and all(f["state"] == "live" for f in fl) and sorted(
            (f["proto"], f["graph"]) for f in fl) == sorted(
            (17, "udp") if c[1] == "UDP" else (6, "default") for c in conns)

    wait_until(reclassified, 30, "the flows classified again by the rule")
    assert api.get("/api/v1/rules").json() == {"rules": [{**rule, "flows": len(udp)}],
                                                "total": 1, "truncated": False, "builds": 1}
    in_udp = _flows(api, graph="udp")
    assert in_udp["matched"] == len(udp) and {f["proto"] for f in in_udp["flows"]} == {17}
    assert all(set(f["pins"]) == {"b"} for f in in_udp["flows"])
    assert _flows(api, graph="default", proto="udp")["matched"] == 0
    assert _flows(api, service="b")["matched"] == len(udp)
    b_inst = in_udp["flows"][0]["pins"]["b"]
    assert _flows(api, service="b", instance=b_inst)["matched"] == len(udp)
    assert _flows(api, service="b", instance=b_inst + 1)["matched"] == 0
    return rule, in_udp


def _check_flow_requests(api: TestClient, udp: set[Any], in_udp: Any) -> None:
    # -- flow requests, as service b's NF would make them
    r = api.post("/api/v1/flow-requests", json={
        "type": "change_default", "service": "b", "to": "port:out",
        "flow": {"match": {"proto": "udp"}}})
    assert (r.status_code, r.json()) == (200, {"applied": len(udp), "id": 1})  # kept: id 1
    f = api.get(f"/api/v1/flows/{in_udp['flows'][0]['id']}").json()
    assert f["overrides"] == [{"service": "b", "type": "default", "to": "port:out"}]
    r = api.post("/api/v1/flow-requests", json={
        "type": "change_default", "service": "b", "to": "a",
        "flow": {"key": in_udp["flows"][0]["key"]}})
    assert r.status_code == 409
    assert r.json()["detail"] == ("change_default rejected: graph 'udp' has no edge from 'b' to "
                                  "'a': ChangeDefault may only pick one of the node's allowed "
                                  "next hops")
    r = api.post("/api/v1/flow-requests", json={"type": "message", "service": "a",
                                                "key": "hello", "value": "1"})
    assert (r.status_code, r.json()) == (200, {"applied": 1})
    r = api.post("/api/v1/flow-requests", json={"type": "skip_me", "service": "zz",
                                                "flow": {"match": {}}})
    assert (r.status_code, r.json()) == (404, {
        "detail": "no service zz; `GET /api/v1/services` shows the services"})


def _check_graph_removal(api: TestClient, conns: set[Any], rule: Any) -> None:
    # -- removing the graph takes its rule; a deleted flow comes back
    tcp = _flows(api, proto="tcp")["flows"][0]
    assert api.delete(f"/api/v1/flows/{tcp['id']}").json() == {"deleted": 1}
    r = api.delete(f"/api/v1/rules/{rule['id'] + 100}")
    assert (r.status_code, r.json()) == (404, {
        "detail": f"no rule with id {rule['id'] + 100}; see `GET /api/v1/rules`"})
    assert api.delete("/api/v1/graphs/udp").json() == {"removed": "udp", "rules_removed": 1}
    assert api.get("/api/v1/rules").json() == {"rules": [], "total": 0, "truncated": False,
                                                "builds": 2}
    assert api.get("/api/v1/graphs/udp").status_code == 404
    st = api.get("/api/v1/stats").json()
    assert st["flows"]["deleted"] >= len(conns) + 1
    assert integration.port(st, "out")["tx_pkts"] > 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_scale_lb_and_websocket_events(real_sluiced: None, launch: Any, node: str,
                                       tmp_path: Path) -> None:
    from websockets.sync.client import connect

    run = launch(integration.deployment(
        node, ports=[{"name": "in", "device": "net_null0,no-rx=1"},
                     {"name": "out", "device": "net_null1,no-rx=1"}],
        nfs=[_fwd("a")], chain=["a", "port:out"]))
    server = ApiServer(create_app(node, str(run.dep.socket_path())), "127.0.0.1",
                       _free_port())
    server.start()
    import httpx

    http = httpx.Client(base_url=server.url, timeout=10)
    try:
        with connect(f"ws://127.0.0.1:{server.port}/api/v1/events/ws",
                     open_timeout=10) as ws:
            # The subscription is live once an event made after the handshake arrives.
            def graph_event() -> dict[str, Any] | None:
                assert http.put("/api/v1/graphs/ping",
                                json={"nodes": {"a": ["port:out"]}}).status_code == 200
                try:
                    return json.loads(ws.recv(timeout=0.5))
                except TimeoutError:
                    return None

            ev = wait_until(graph_event, 20, "an event on the websocket", interval=0)
            assert ev["kind"] == "graph.applied" and ev["data"]["name"] == "ping"
            assert set(ev) == {"kind", "ts", "data"}

            r = http.post("/api/v1/services/a/scale", json={"replicas": 2})
            assert r.status_code == 200, r.text
            scaled = r.json()
            assert scaled["service"] == "a" and scaled["replicas"] == 2
            assert len(scaled["started_pids"]) == 1 and scaled["stopping"] == []
            kinds: dict[str, dict[str, Any]] = {}
            deadline = time.monotonic() + 30
            while not {"nf.scale", "nf.up"} <= set(kinds) and time.monotonic() < deadline:
                try:
                    e = json.loads(ws.recv(timeout=1))
                except TimeoutError:
                    continue
                if e["kind"] not in ("graph.applied",):
                    kinds.setdefault(e["kind"], e["data"])
            assert kinds.get("nf.scale") == scaled, kinds
            assert kinds["nf.up"]["service"] == "a", kinds

        svc = wait_until(lambda: len((s := next(x for x in http.get("/api/v1/services").json()
                                                if x["name"] == "a"))["instances"]) == 2 and s,
                         30, "two instances of a")
        running = [n for n in http.get("/api/v1/nfs").json()
                   if n["service"] == "a" and n["state"] == "running"]
        assert sorted(n["instance"] for n in running) == sorted(svc["instances"])
        assert scaled["started_pids"][0] in {n["pid"] for n in running}

        r = http.put("/api/v1/services/a/lb", json={"mode": "queue"})
        assert (r.status_code, r.json()) == (200, {"service": "a", "mode": "queue"})
        assert next(x for x in http.get("/api/v1/services").json()
                    if x["name"] == "a")["lb"] == "queue"
        assert http.put("/api/v1/services/a/lb", json={"mode": "rr"}).json()["mode"] == "rr"

        r = http.post("/api/v1/services/a/scale", json={"replicas": 1})
        assert r.json()["stopping"] == [max(svc["instances"])]
        wait_until(lambda: [x["instances"] for x in http.get("/api/v1/services").json()
                            if x["name"] == "a"] == [[min(svc["instances"])]],
                   30, "back to one instance")
        r = http.post("/api/v1/services/zz/scale", json={"replicas": 1})
        assert (r.status_code, r.json()) == (404, {
            "detail": "no service zz; `GET /api/v1/services` shows the services"})
    finally:
        http.close()
        server.stop()
