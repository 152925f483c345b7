"""The REST API and /metrics against a fake sluiced (tests/api/apifake.py)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from apifake import EVENTS, NFS, PORTS, SERVICES, STATS, STATUS
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from sluice.api import create_app, stats_metrics


@pytest.fixture
def api(fake: Any, sockdir: Path) -> TestClient:
    return TestClient(create_app("t", str(sockdir / "t.sock")))


def test_get_endpoints_return_sluiceds_results(api: TestClient, fake: Any) -> None:
    for path, expected in [("status", STATUS), ("nfs", NFS), ("ports", PORTS),
                           ("services", SERVICES), ("stats", STATS),
                           ("chain", {"version": 1, "hops": ["fw", "mon", "port:out"]})]:
        r = api.get(f"/api/v1/{path}")
        assert r.status_code == 200, (path, r.text)
        assert r.json() == expected, path
    methods = [q["method"] for q in fake[1].requests]
    assert methods == ["status", "nf.list", "port.list", "service.list", "stats", "chain.get"]
    assert fake[1].connections == 1  # one connection, reused


def test_put_chain(api: TestClient, fake: Any) -> None:
    r = api.put("/api/v1/chain", json={"hops": ["fw", "drop"]})
    assert (r.status_code, r.json()) == (200, {"version": 2})
    assert fake[1].requests[-1]["params"] == {"hops": ["fw", "drop"]}
    assert api.get("/api/v1/chain").json() == {"version": 2, "hops": ["fw", "drop"]}
    r = api.put("/api/v1/chain", json={"hops": ["fw", "port:nope"]})
    assert r.status_code == 409
    assert r.json() == {"detail": "chain hop 2 'port:nope': no port named 'nope'; "
                                  "use a name from `GET /api/v1/ports`"}
    # a service nobody runs: set, with a note in REST words
    r = api.put("/api/v1/chain", json={"hops": ["nat", "drop"]})
    assert (r.status_code, r.json()) == (200, {
        "version": 3, "note": "service 'nat' has no running instance: packets sent to it are "
                              "dropped (no_instance) until one registers; see "
                              "`GET /api/v1/nfs`"})
    r = api.put("/api/v1/chain", json={"hops": "fw"})
    assert r.status_code == 422
    assert r.json() == {"detail": 'hops: expected an array of hops, e.g. ["firewall", '
                                  '"port:out"], got a string (\'fw\')'}
    assert len(fake[1].requests) == 4  # the invalid body never reached sluiced


def test_nf_stop(api: TestClient, fake: Any) -> None:
    r = api.post("/api/v1/nfs/1/stop")
    assert (r.status_code, r.json()) == (200, {"instance": 1, "state": "stopping"})
    assert fake[1].requests[-1]["params"] == {"instance": 1}
    r = api.post("/api/v1/nfs/99/stop")
    assert (r.status_code, r.json()) == (404, {
        "detail": "no running NF instance 99; `GET /api/v1/nfs` shows them"})
    r = api.post("/api/v1/nfs/x/stop")
    assert r.status_code == 422
    assert r.json()["detail"] == ("path.instance: expected an instance id from 0 to 65535 "
                                  "(`GET /api/v1/nfs` lists them), got 'x'")


def test_lb_set(api: TestClient, fake: Any) -> None:
    r = api.put("/api/v1/services/mon/lb", json={"mode": "flow"})
    assert (r.status_code, r.json()) == (200, {"service": "mon", "mode": "flow"})
    assert fake[1].requests[-1]["params"] == {"service": "mon", "mode": "flow"}
    assert api.get("/api/v1/services").json()[1]["lb"] == "flow"
    r = api.put("/api/v1/services/mon/lb", json={"mode": "queue"})
    assert (r.status_code, r.json()) == (200, {"service": "mon", "mode": "queue"})
    assert fake[1].requests[-1]["params"] == {"service": "mon", "mode": "queue"}
    r = api.put("/api/v1/services/mon/lb", json={"mode": "random"})
    assert (r.status_code, r.json()) == (422, {
        "detail": "mode: expected flow, queue or rr, got a string ('random')"})
    fake[0].fail["lb.set"] = (-32602, "param 'mode' 'rr': use flow, queue or rr")
    r = api.put("/api/v1/services/mon/lb", json={"mode": "rr"})
    assert (r.status_code, r.json()) == (422, {
        "detail": "mode: 'rr': use flow, queue or rr"})
    del fake[0].fail["lb.set"]
    r = api.put("/api/v1/services/nat/lb", json={"mode": "rr"})
    assert (r.status_code, r.json()) == (404, {
        "detail": "no service nat; `GET /api/v1/services` shows the services"})


def test_rx_pause_and_resume(api: TestClient, fake: Any) -> None:
    assert api.post("/api/v1/rx/pause").json() == {"rx_enabled": False}
    assert api.get("/api/v1/status").json()["rx_enabled"] is False
    assert api.post("/api/v1/rx/resume").json() == {"rx_enabled": True}
    msg = ("the chain is not complete (a service on it has no NF): start the NFs or "
           "chain.set first")
    fake[0].fail["rx.resume"] = (-32000, msg)
    r = api.post("/api/v1/rx/resume")
    assert (r.status_code, r.json()) == (409, {"detail": msg.replace(
        "chain.set", "`PUT /api/v1/chain`")})


@pytest.mark.parametrize("code,status", [(-32602, 422), (-32000, 409), (-32601, 501),
                                         (-32600, 502), (-32700, 502)])
def test_rpc_error_codes_map_to_http(api: TestClient, fake: Any, code: int,
                                     status: int) -> None:
    fake[0].fail["stats"] = (code, "something is wrong")
    r = api.get("/api/v1/stats")
    assert r.status_code == status
    detail = r.json()["detail"]
    assert detail == {
        409: "something is wrong", 422: "something is wrong",
        501: "something is wrong (sluiced is older than this API)",
        502: f"sluiced answered stats: something is wrong (JSON-RPC error {code})"}[status]


def test_no_such_maps_to_404(api: TestClient, fake: Any) -> None:
    fake[0].fail["nf.stop"] = (-32000, "no such NF: 3")
    r = api.post("/api/v1/nfs/3/stop")
    assert (r.status_code, r.json()) == (404, {"detail": "no such NF: 3"})


def test_sluiced_not_running_is_503(sockdir: Path) -> None:
    api = TestClient(create_app("ghost", str(sockdir / "none.sock")))
    msg = (f"cannot connect to {sockdir}/none.sock: no sluiced is running for node 'ghost' "
           f"(start one with `sluice up DEPLOYMENT.yaml`, or give the node name with --node)")
    for method, path in [("GET", "/api/v1/status"), ("GET", "/api/v1/stats"),
                         ("POST", "/api/v1/rx/pause"), ("GET", "/metrics"),
                         ("GET", "/api/v1/events")]:
        r = api.request(method, path)
        assert (r.status_code, r.json()) == (503, {"detail": msg}), path


def test_sluiced_closing_or_silent(fake: Any, sockdir: Path) -> None:
    api = TestClient(create_app("t", str(sockdir / "t.sock"), timeout=0.3))
    fake[0].fail["status"] = "close"
    r = api.get("/api/v1/status")
    assert r.status_code == 503
    assert r.json() == {"detail": "status: sluiced closed the connection without answering"
                                  ": sluiced may have stopped or restarted; check that it "
                                  "runs (sluice status) and try again (the next request "
                                  "connects anew)"}
    fake[0].fail["status"] = "silence"
    r = api.get("/api/v1/status")
    assert (r.status_code, r.json()) == (504, {
        "detail": "status: no answer from sluiced within 0.3 s"})
    del fake[0].fail["status"]
    assert api.get("/api/v1/status").status_code == 200


def test_events_are_server_sent_events_on_their_own_connection(api: TestClient,
                                                                fake: Any) -> None:
    import json

    assert api.get("/api/v1/status").status_code == 200
    with api.stream("GET", "/api/v1/events") as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        body = "".join(r.iter_text())
    # the stream ends when sluiced closes the subscription
    assert body == ": subscribed\n\n" + "".join(
        f"event: {e['kind']}\ndata: {json.dumps(e, separators=(',', ':'))}\n\n"
        for e in EVENTS)
    assert fake[1].connections == 2
    assert fake[1].requests[-1] == {"jsonrpc": "2.0", "id": 1, "method": "subscribe"}
    with api.stream("GET", "/api/v1/events?max_events=1") as r:
        body = "".join(r.iter_text())
    assert body.count("event: ") == 1 and "event: nf.up\n" in body
    r = api.get("/api/v1/events?max_events=0")
    assert (r.status_code, r.json()) == (422, {
        "detail": "query.max_events: 0 is out of range (less than 1): give a whole number of "
                  "events, 1 or more"})


def test_events_subscribe_refused(api: TestClient, fake: Any) -> None:
    fake[0].fail["subscribe"] = (-32000, "too many subscribers")
    r = api.get("/api/v1/events")
    assert (r.status_code, r.json()) == (409, {"detail": "too many subscribers"})


# -- metrics -------------------------------------------------------------------------------

def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _text(st: dict[str, Any]) -> str:
    """/metrics of a stats result, as the API's collector renders it."""
    class One:
        def collect(self) -> Any:
            return stats_metrics(st)
    reg = CollectorRegistry()
    reg.register(One())
    return generate_latest(reg).decode()


def test_metrics_exact_values(api: TestClient, fake: Any) -> None:
    r = api.get("/metrics")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain")
    text = r.text
    assert [q["method"] for q in fake[1].requests] == ["stats"]  # one call per scrape
    lines = set(text.splitlines())
    for line in [
        'sluice_port_rx_packets_total{port="in"} 1000.0',
        'sluice_port_tx_packets_total{port="out"} 900.0',
        'sluice_port_rx_bytes_total{port="in"} 64000.0',
        'sluice_port_tx_bytes_total{port="out"} 57600.0',
        'sluice_port_drops_total{port="in",reason="no_instance"} 5.0',
        'sluice_port_drops_total{port="out",reason="tx_full"} 1.0',
        'sluice_nf_rx_packets_total{instance="0",service="fw"} 995.0',
        'sluice_nf_tx_packets_total{instance="1",service="mon"} 901.0',
        'sluice_nf_drops_total{instance="0",reason="nf_verdict",service="fw"} 45.0',
        'sluice_nf_ring_occupancy{instance="0",service="fw"} 3.0',
        'sluice_nf_cycles_per_packet{instance="1",service="mon"} 100.0',
        'sluice_service_rx_packets_total{service="fw"} 995.0',
        'sluice_service_drops_total{reason="ring_full",service="mon"} 49.0',
        'sluice_drops_total 100.0',
        'sluice_node_drops_total{reason="nf_verdict"} 45.0',
        'sluice_node_drops_total{reason="ring_full"} 49.0',
        'sluice_node_drops_total{reason="no_instance"} 5.0',
        'sluice_node_drops_total{reason="tx_full"} 1.0',
        'sluice_node_drops_total{reason="port_down"} 0.0',
        'sluice_flows_live 6.0',
        'sluice_flows_capacity 262144.0',
        'sluice_flows_created_total 11.0',
        'sluice_flows_aged_total 3.0',
        'sluice_flows_deleted_total 2.0',
        'sluice_flows_table_full_total 4.0',
        '# TYPE sluice_port_rx_packets_total counter',
        '# TYPE sluice_nf_ring_occupancy gauge',
        '# HELP sluice_node_drops_total Packets dropped on the node, by reason: every drop '
        'once, including those of instances that have left.',
        '# TYPE sluice_node_drops_total counter',
        '# TYPE sluice_flows_live gauge',
        '# TYPE sluice_flows_capacity gauge',
        '# TYPE sluice_flows_created_total counter',
        '# TYPE sluice_flows_aged_total counter',
        '# TYPE sluice_flows_deleted_total counter',
        '# TYPE sluice_flows_table_full_total counter',
    ]:
        assert line in lines, line
    s = _samples(text)
    # every counter of the canned stats, exactly
    for p in STATS["ports"]:
        lab = (("port", p["name"]),)
        assert s[("sluice_port_rx_packets_total", lab)] == p["rx_pkts"]
        assert s[("sluice_port_tx_packets_total", lab)] == p["tx_pkts"]
        assert s[("sluice_port_rx_bytes_total", lab)] == p["rx_bytes"]
        assert s[("sluice_port_tx_bytes_total", lab)] == p["tx_bytes"]
        assert s[("sluice_port_rx_stalls_total", lab)] == p["rx_stalls"]
        for reason, v in p["drops"].items():
            assert s[("sluice_port_drops_total", lab + (("reason", reason),))] == v
    for n in STATS["nfs"]:
        lab = (("instance", str(n["instance"])), ("service", n["service"]))
        for metric, key in [("sluice_nf_rx_packets_total", "rx_pkts"),
                            ("sluice_nf_tx_packets_total", "tx_pkts"),
                            ("sluice_nf_rx_bytes_total", "rx_bytes"),
                            ("sluice_nf_tx_bytes_total", "tx_bytes"),
                            ("sluice_nf_cycles_total", "cycles"),
                            ("sluice_nf_cycles_per_packet", "cycles_per_pkt")]:
            assert s[(metric, lab)] == n[key], metric
        assert s[("sluice_nf_ring_occupancy", lab)] == n["rx_ring"]["count"]
        assert s[("sluice_nf_ring_size", lab)] == n["rx_ring"]["size"]
        assert s[("sluice_nf_running", lab)] == 1
        for reason, v in n["drops"].items():
            assert s[("sluice_nf_drops_total",
                      tuple(sorted(lab + (("reason", reason),))))] == v
    for sv in STATS["services"]:
        lab = (("service", sv["name"]),)
        assert s[("sluice_service_rx_packets_total", lab)] == sv["rx_pkts"]
        assert s[("sluice_service_tx_packets_total", lab)] == sv["tx_pkts"]
        assert s[("sluice_service_rx_bytes_total", lab)] == sv["rx_bytes"]
        assert s[("sluice_service_tx_bytes_total", lab)] == sv["tx_bytes"]
        assert s[("sluice_service_instances", lab)] == 1
        for reason, v in sv["drops"].items():
            assert s[("sluice_service_drops_total", (("reason", reason),) + lab)] == v
    assert s[("sluice_drops_total", ())] == 100
    node = {dict(lab)["reason"]: v for (name, lab), v in s.items()
            if name == "sluice_node_drops_total"}
    assert node == STATS["drops"]  # every reason, zeros included, nothing else
    assert sum(node.values()) == STATS["drops_total"] == s[("sluice_drops_total", ())]
    assert {name: v for (name, _), v in s.items() if name.startswith("sluice_flows_")} == {
        "sluice_flows_live": 6, "sluice_flows_capacity": 262144,
        "sluice_flows_created_total": 11, "sluice_flows_aged_total": 3,
        "sluice_flows_deleted_total": 2, "sluice_flows_table_full_total": 4}
    assert all(name.startswith("sluice_") for name, _ in s)
    api.get("/metrics")
    assert [q["method"] for q in fake[1].requests] == ["stats", "stats"]


def test_metrics_node_drops_keep_instances_that_left() -> None:
    """sluice_node_drops_total is stats.drops as it is: an instance that has left takes its
    series off sluice_nf_drops_total, but its drops stay in the node's (and in the sum)."""
    st = copy.deepcopy(STATS)
    st["nfs"] = st["nfs"][:1]  # mon (ring_full=49) has left
    st["drops"]["nf_lost"] = 7  # and sluiced dropped what was in its ring
    st["drops_total"] = 107
    s = _samples(_text(st))
    assert not any(name == "sluice_nf_drops_total" and ("service", "mon") in lab
                   for name, lab in s)
    node = {dict(lab)["reason"]: v for (name, lab), v in s.items()
            if name == "sluice_node_drops_total"}
    assert (node["ring_full"], node["nf_lost"], sum(node.values())) == (49, 7, 107)
    assert s[("sluice_drops_total", ())] == 107


def test_metrics_without_flows_or_drops() -> None:
    """A stats result without `flows` or `drops` (a sluiced older than them): no flow
    series and no node drops series rather than zeros that would look like real counts."""
    st = {k: v for k, v in STATS.items() if k not in ("flows", "drops")}
    text = _text(st)
    s = _samples(text)
    assert not [name for name, _ in s if name.startswith(("sluice_flows_", "sluice_node_"))]
    assert "sluice_flows_live" not in text
    assert s[("sluice_drops_total", ())] == 100


def test_metrics_error(api: TestClient, fake: Any) -> None:
    fake[0].fail["stats"] = "close"
    r = api.get("/metrics")
    assert (r.status_code, r.json()) == (503, {
        "detail": "stats: sluiced closed the connection without answering: sluiced may "
                  "have stopped or restarted; check that it runs (sluice status) and try "
                  "again (the next request connects anew)"})


# -- auth ----------------------------------------------------------------------------------

def test_token_required_when_set(fake: Any, sockdir: Path) -> None:
    api = TestClient(create_app("t", str(sockdir / "t.sock"), token="s3cret"))
    msg = {"detail": "missing or wrong token: send 'Authorization: Bearer TOKEN' "
                     "or 'X-Sluice-Token: TOKEN'"}
    for headers in [{}, {"Authorization": "Bearer nope"}, {"Authorization": "s3cret"},
                    {"Authorization": "Basic s3cret"}, {"X-Sluice-Token": "s3cre"}]:
        for path in ["/api/v1/status", "/metrics", "/openapi.json", "/api/v1/events"]:
            r = api.get(path, headers=headers)
            assert (r.status_code, r.json()) == (401, msg), (path, headers)
            assert r.headers["www-authenticate"] == "Bearer"
    r = api.put("/api/v1/chain", json={"hops": ["drop"]})
    assert r.status_code == 401
    assert fake[1].requests == []  # nothing reached sluiced
    assert api.get("/api/v1/status", headers={"Authorization": "Bearer s3cret"}).json() == STATUS
    assert api.get("/metrics", headers={"X-Sluice-Token": "s3cret"}).status_code == 200
    spec = api.get("/openapi.json", headers={"authorization": "bearer s3cret"}).json()
    assert spec["security"] == [{"bearer": []}, {"token": []}]


def test_no_token_needed_without_one(api: TestClient, fake: Any) -> None:
    assert api.get("/api/v1/status").status_code == 200
    assert "security" not in api.get("/openapi.json").json()


def test_openapi_spec_has_typed_responses(api: TestClient) -> None:
    spec = api.get("/openapi.json").json()
    paths = spec["paths"]
    assert {p for p in paths if p.startswith("/api/") or p == "/metrics"} == {
        "/api/v1/status", "/api/v1/nfs", "/api/v1/nfs/{instance}/stop", "/api/v1/ports",
        "/api/v1/services", "/api/v1/services/{service}/lb",
        "/api/v1/services/{service}/scale", "/api/v1/stats", "/api/v1/stats/schema",
        "/api/v1/chain",
        "/api/v1/rx/pause", "/api/v1/rx/resume", "/api/v1/events", "/api/v1/graphs",
        "/api/v1/graphs/{name}", "/api/v1/graphs/compile", "/api/v1/policies/{name}",
        "/api/v1/rules", "/api/v1/rule-batches",
        "/api/v1/rules/{rule_id}", "/api/v1/flows",
        "/api/v1/flows/{flow}", "/api/v1/flow-requests", "/api/v1/flow-requests/{request_id}",
        "/metrics"}
    # Every method of the control socket has its endpoint (subscribe: /events).
    from sluice.api import SOCKET_METHODS

    assert set(SOCKET_METHODS) == {
        "status", "nf.list", "nf.stop", "nf.scale", "port.list", "service.list", "stats",
        "chain.get", "chain.set", "lb.set", "graph.apply", "graph.get", "graph.remove",
        "rule.add", "rule.list", "rule.remove", "flow.list", "flow.get", "flow.delete",
        "flow.request", "flow.requests", "flow.request.remove", "rx.pause", "rx.resume",
        "subscribe", "shutdown"} - {"shutdown"}
    ok = paths["/api/v1/stats"]["get"]["responses"]["200"]["content"]["application/json"]
    assert ok["schema"] == {"$ref": "#/components/schemas/Stats"}
    err = paths["/api/v1/nfs/{instance}/stop"]["post"]["responses"]
    assert err["404"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Error"}
    assert err["422"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Error"}


# -- graphs, rules, flows, requests, scaling -----------------------------------------------

def test_graphs(api: TestClient, fake: Any) -> None:
    nodes = {"fw": ["mon", "drop"], "mon": ["port:out"]}
    r = api.put("/api/v1/graphs/g1", json={"nodes": nodes})
    assert (r.status_code, r.json()) == (200, {"name": "g1", "id": 1, "version": 1})
    assert fake[1].requests[-1]["params"] == {"name": "g1", "nodes": nodes}
    r = api.put("/api/v1/graphs/g1", json={"nodes": nodes, "entry": "fw"})
    assert r.json() == {"name": "g1", "id": 1, "version": 2}
    assert fake[1].requests[-1]["params"] == {"name": "g1", "nodes": nodes, "entry": "fw"}
    g = {"name": "g1", "id": 1, "version": 2, "entry": "fw", "nodes": nodes, "chain": False}
    assert api.get("/api/v1/graphs/g1").json() == g
    listed = api.get("/api/v1/graphs").json()["graphs"]
    assert [x["name"] for x in listed] == ["default", "g1"] and listed[1] == g
    r = api.get("/api/v1/graphs/nope")
    assert (r.status_code, r.json()) == (404, {
        "detail": "no graph named 'nope'; see `GET /api/v1/graphs`"})
    r = api.put("/api/v1/graphs/bad", json={"nodes": {"fw": ["zz"]}})
    assert (r.status_code, r.json()) == (422, {
        "detail": "graph 'bad': node 'fw': edge to 'zz', which is not a node of this graph "
                  "(add it under nodes, or use port:NAME or drop)"})
    r = api.put("/api/v1/graphs/bad", json={"nodes": {"fw": "mon"}})
    assert r.status_code == 422 and r.json()["detail"].startswith("nodes.fw: ")
    n = len(fake[1].requests)
    r = api.put("/api/v1/graphs/bad", json={"nodes": {}, "extra": 1})
    assert (r.status_code, r.json()) == (422, {
        "detail": "extra: unknown field: leave it out (this object takes nodes, entry); did you "
                  "mean 'entry'?"})
    assert len(fake[1].requests) == n  # refused by the API, not sent
    r = api.delete("/api/v1/graphs/default")
    assert (r.status_code, r.json()) == (409, {
        "detail": "graph 'default' is the default chain and cannot be removed; replace it "
                  "with `PUT /api/v1/chain` or `PUT /api/v1/graphs/{name}`"})
    r = api.delete("/api/v1/graphs/g1")
    assert (r.status_code, r.json()) == (200, {"removed": "g1", "rules_removed": 0})
    r = api.delete("/api/v1/graphs/g1")
    assert (r.status_code, r.json()) == (404, {
        "detail": "no graph named 'g1'; see `GET /api/v1/graphs`"})


# Bodies POST /api/v1/rule-batches refuses (422) with the detail given.
_BAD_BATCHES: list[tuple[Any, str]] = [
    ({"rules": []}, 'rules: is empty: give an array of rules, e.g. [{"graph": "web", '
                    '"proto": "tcp", "dport": 80}]'),
    ({"rules": [{"graph": "web"}], "x": 1},
     "x: unknown field: leave it out (this object takes rules)"),
    ({"rules": [5]}, 'rules.0: expected a rule, e.g. {"graph": "web", "proto": "tcp", '
                     '"dport": 80}, got a number (5)'),
    ({"rules": [{"graph": "web", "dprt": 5}]},
     "rules.0.dprt: unknown field: leave it out (this object takes proto, src, dst, "
     "sport, dport, in_port, graph, priority); did you mean 'dport'?"),
    ([{"graph": "web"}], "the body is an array, not a JSON object: POST "
                         "/api/v1/rule-batches takes a JSON object with rules (/docs "
                         "describes it)")
]


# Rules POST /api/v1/rules refuses (422) with the detail given, before sluiced.
_BAD_RULES: list[tuple[dict[str, Any], str]] = [
    ({"graph": "web", "proto": "tcpx"},
     "proto: 'tcpx' is not a protocol sluiced knows: use tcp, udp, icmp, icmp6, "
     "icmpv6, sctp, gre, esp, ah, any or a number 0-255; did you mean 'tcp'?"),
    ({"graph": "web", "proto": 256},
     "proto: 256 is not an IP protocol number: use 0 to 255"),
    ({"graph": "web", "proto": "300"},
     "proto: 300 is not an IP protocol number: use 0 to 255"),
    ({"graph": "web", "dport": 70000},
     "dport: 70000 is not a port: ports go from 0 to 65535"),
    ({"graph": "web", "dport": "1-2-3"},
     "dport: '1-2-3' is not a port 0-65535 or a range N-M such as 1024-65535"),
    ({"graph": "web", "sport": "2000-1000"},
     "sport: '2000-1000' is an empty range: write 1000-2000"),
    ({"graph": "web", "sport": "1-70000"},
     "sport: '1-70000': 70000 is not a port: ports go from 0 to 65535"),
    ({"graph": "web", "src": "10.0.0.1/8"},
     "src: '10.0.0.1/8' has bits set after the prefix length: write 10.0.0.0/8 (or "
     "the address alone for one host)"),
    ({"graph": "web", "dst": "10.0.0"},
     "dst: '10.0.0' is not an IPv4 or IPv6 address or prefix: write e.g. 10.0.0.0/8, "
     "10.0.0.1 or 2001:db8::/32"),
    ({"graph": "web", "src": 10},
     "src: expected an address or prefix such as 10.0.0.0/8 or 2001:db8::/32, got a "
     "number (10)"),
    ({"graph": "web", "src": "10.0.0.0/8", "dst": "2001:db8::/32"},
     "dst: src is IPv4 and dst is IPv6: a flow has one address family; make them the "
     "same"),
    ({"graph": "web", "proto": "icmp", "dport": 53},
     "dport: dport needs proto tcp, udp or sctp (or no proto): icmp packets have no "
     "ports"),
    ({"graph": "web", "in_port": "port:in"},
     "in_port: 'port:in' is not a port name: give the port's name alone, "
     '"in_port": "in"'),
    ({"graph": "web", "priority": 2000000},
     "priority: 2000000 is out of range: use -1000000 to 1000000 (higher wins)"),
    ({"graph": "web", "priority": "5"},
     "priority: expected an integer from -1000000 to 1000000, got a string ('5')"),
    ({"graph": "web", "color": "red"},
     "color: unknown field: leave it out (this object takes proto, src, dst, sport, "
     "dport, in_port, graph, priority)"),
    ({"graph": "web", "inport": "in"},
     "inport: unknown field: leave it out (this object takes proto, src, dst, sport, "
     "dport, in_port, graph, priority); did you mean 'in_port'?"),
    ({"graph": 5}, 'graph: expected the name of a graph as a string, e.g. "web" '
                   '(`GET /api/v1/graphs` lists them), got a number (5)'),
    ({"proto": "tcp"}, 'graph: missing: this field is required; give the name of a '
                       'graph as a string, e.g. "web" (`GET /api/v1/graphs` lists '
                       'them)')
]


def test_rules(api: TestClient, fake: Any) -> None:
    api.put("/api/v1/graphs/web", json={"nodes": {"fw": ["port:out"]}})
    r = api.post("/api/v1/rules", json={"graph": "web", "priority": 5, "proto": "tcp",
                                        "dport": 80, "src": "10.0.0.0/8"})
    assert r.status_code == 201
    assert r.json() == {"id": 1, "graph": "web", "priority": 5, "proto": "tcp",
                        "src": "10.0.0.0/8", "dport": "80"}
    assert fake[1].requests[-1]["params"] == {"graph": "web", "priority": 5, "proto": "tcp",
                                              "dport": 80, "src": "10.0.0.0/8"}
    assert api.post("/api/v1/rules", json={"graph": "web", "dport": "1000-2000"}).json()["id"] == 2
    both = [{"id": 1, "graph": "web", "priority": 5, "proto": "tcp", "src": "10.0.0.0/8",
             "dport": "80", "flows": 0},
            {"id": 2, "graph": "web", "priority": 0, "dport": "1000-2000", "flows": 0}]
    assert api.get("/api/v1/rules").json() == {"rules": both, "total": 2, "truncated": False,
                                                "builds": 2}
    assert fake[1].requests[-1]["params"] == {"offset": 0, "limit": 10000}
    assert api.get("/api/v1/rules?limit=1").json() == {"rules": both[:1], "total": 2,
                                                        "truncated": True, "builds": 2}
    assert api.get("/api/v1/rules?offset=1&limit=5").json() == {
        "rules": both[1:], "total": 2, "truncated": False, "builds": 2}
    r = api.get("/api/v1/rules?limit=100001")
    assert (r.status_code, r.json()) == (422, {
        "detail": "query.limit: 100001 is out of range (more than 100000): give a whole "
                  "number from 0 to 100000"})
    # a batch: one call, all or none, the refused rule named
    r = api.post("/api/v1/rule-batches", json={"rules": [
        {"graph": "web", "proto": "udp", "dport": 53}, {"graph": "web", "priority": 9}]})
    assert (r.status_code, r.json()) == (201, {"added": 2, "first_id": 3, "last_id": 4})
    assert fake[1].requests[-1]["params"] == {"rules": [
        {"graph": "web", "priority": 0, "proto": "udp", "dport": 53},
        {"graph": "web", "priority": 9}]}
    assert api.get("/api/v1/rules").json()["total"] == 4
    r = api.post("/api/v1/rule-batches", json={"rules": [{"graph": "web"}, {"graph": "nope"}]})
    assert (r.status_code, r.json()) == (404, {
        "detail": "rules[1]: no graph named 'nope': apply it first (`PUT /api/v1/graphs/{name}`)"})
    assert api.get("/api/v1/rules").json()["total"] == 4
    for body, detail in _BAD_BATCHES:
        r = api.post("/api/v1/rule-batches", json=body)
        assert (r.status_code, r.json()) == (422, {"detail": detail}), body
    r = api.post("/api/v1/rules", json={"graph": "nope"})
    assert (r.status_code, r.json()) == (404, {
        "detail": "no graph named 'nope': apply it first (`PUT /api/v1/graphs/{name}`)"})
    n = len(fake[1].requests)
    for bad, detail in _BAD_RULES:
        r = api.post("/api/v1/rules", json=bad)
        assert (r.status_code, r.json()) == (422, {"detail": detail}), bad
    # the same words in a batch, under the rule's index
    r = api.post("/api/v1/rule-batches", json={"rules": [{"graph": "web"},
                                                         {"graph": "web", "dport": 70000}]})
    assert (r.status_code, r.json()) == (422, {
        "detail": "rules.1.dport: 70000 is not a port: ports go from 0 to 65535"})
    assert len(fake[1].requests) == n  # refused by the API, not sent
    # any is a wildcard, left out; a number as text is sent as a number
    r = api.post("/api/v1/rules", json={"graph": "web", "proto": " TCP ", "src": "any",
                                        "dport": "443"})
    assert r.status_code == 201, r.text
    assert fake[1].requests[-1]["params"] == {"graph": "web", "priority": 0, "proto": "tcp",
                                              "dport": 443}
    assert api.delete(f"/api/v1/rules/{r.json()['id']}").status_code == 200
    assert api.delete("/api/v1/rules/1").json() == {"removed": 1}
    r = api.delete("/api/v1/rules/1")
    assert (r.status_code, r.json()) == (404, {
        "detail": "no rule with id 1; see `GET /api/v1/rules`"})


def test_flows(api: TestClient, fake: Any) -> None:
    from apifake import FLOWS

    r = api.get("/api/v1/flows")
    assert r.json() == {"total": 2, "matched": 2, "flows": FLOWS, "truncated": False}
    assert fake[1].requests[-1]["params"] == {"limit": 100}  # the default limit
    r = api.get("/api/v1/flows", params={"limit": 1, "service": "mon", "proto": "tcp",
                                         "dport": "80", "graph": "", "src": ""})
    assert r.json() == {"total": 2, "matched": 1, "flows": [FLOWS[1]], "truncated": False}
    assert fake[1].requests[-1]["params"] == {"limit": 1, "service": "mon", "proto": "tcp",
                                              "dport": "80"}
    r = api.get("/api/v1/flows", params={"in_port": "in2"})
    assert r.json() == {"total": 2, "matched": 1, "flows": [FLOWS[1]], "truncated": False}
    assert fake[1].requests[-1]["params"] == {"limit": 100, "in_port": "in2"}
    r = api.get("/api/v1/flows", params={"instance": 1})
    assert (r.status_code, r.json()) == (422, {
        "detail": "query.instance: give service too (instance picks an instance of that "
                  "service), e.g. ?service=firewall&instance=2"})
    r = api.get("/api/v1/flows", params={"limit": 100001})
    assert (r.status_code, r.json()) == (422, {
        "detail": "query.limit: 100001 is out of range (more than 100000): give a whole "
                  "number from 0 to 100000"})
    # filters are checked as sluice flow list checks them, one line per problem
    n = len(fake[1].requests)
    for method in ("GET", "DELETE"):
        r = api.request(method, "/api/v1/flows", params={"proto": "tcpx", "dport": "70000",
                                                         "src": "1.2.3.4/8"})
        assert (r.status_code, r.json()) == (422, {
            "detail": "query.proto: 'tcpx' is not a protocol sluiced knows: use tcp, udp, "
                      "icmp, icmp6, icmpv6, sctp, gre, esp, ah, any or a number 0-255; did "
                      "you mean 'tcp'?\n"
                      "query.src: '1.2.3.4/8' has bits set after the prefix length: write "
                      "1.0.0.0/8 (or the address alone for one host)\n"
                      "query.dport: 70000 is not a port: ports go from 0 to 65535"}), method
    r = api.get("/api/v1/flows", params={"proto": "icmp", "sport": "53"})
    assert (r.status_code, r.json()) == (422, {
        "detail": "query.sport: sport needs proto tcp, udp or sctp (or no proto): icmp "
                  "packets have no ports"})
    r = api.get("/api/v1/flows", params={"in_port": "port:in2"})
    assert (r.status_code, r.json()) == (422, {
        "detail": "query.in_port: 'port:in2' is not a port name: give the port's name "
                  "alone, in_port=in2"})
    assert len(fake[1].requests) == n
    r = api.get("/api/v1/flows", params={"graph": "nope"})
    assert (r.status_code, r.json()) == (404, {
        "detail": "no graph named 'nope': apply it first (`PUT /api/v1/graphs/{name}`)"})
    assert api.get("/api/v1/flows/7").json() == FLOWS[0]
    assert fake[1].requests[-1]["params"] == {"id": 7}
    assert api.get(f"/api/v1/flows/{FLOWS[1]['key']}").json() == FLOWS[1]
    assert fake[1].requests[-1]["params"] == {"key": FLOWS[1]["key"]}
    r = api.get("/api/v1/flows/8")
    assert (r.status_code, r.json()) == (404, {
        "detail": "no flow with id 8; see `GET /api/v1/flows`"})
    r = api.get("/api/v1/flows/tcp 1.2.3.4:1 > 5.6.7.8:2")
    assert (r.status_code, r.json()) == (404, {
        "detail": "no flow 'tcp 1.2.3.4:1 > 5.6.7.8:2' in the table (it may have aged out); "
                  "see `GET /api/v1/flows`"})
    r = api.get("/api/v1/flows/bogus")
    assert (r.status_code, r.json()) == (422, {
        "detail": "path.flow: 'bogus' is not a flow key like \"tcp 10.0.0.1:1234 > "
                  "10.0.0.2:80\" or \"udp [2001:db8::1]:53 > [2001:db8::2]:5353\" (IPv6 "
                  "addresses in brackets)"})
    n = len(fake[1].requests)
    for query in ("", "?all=false", "?graph="):
        r = api.delete("/api/v1/flows" + query)
        assert (r.status_code, r.json()) == (422, {
            "detail": "DELETE /api/v1/flows needs filters (query parameters dport, dst, "
                      "graph, in_port, instance, proto, service, sport, src) or all=true: "
                      "`DELETE /api/v1/flows?all=true` deletes every flow, "
                      "`DELETE /api/v1/flows/{flow}` one"}), query
    assert len(fake[1].requests) == n  # refused by the API, not sent
    assert api.delete("/api/v1/flows/7").json() == {"deleted": 1}
    r = api.delete("/api/v1/flows/7")
    assert (r.status_code, r.json()) == (404, {
        "detail": "no flow with id 7; see `GET /api/v1/flows`"})
    assert api.delete("/api/v1/flows", params={"all": "true"}).json() == {"deleted": 1}
    assert fake[1].requests[-1]["params"] == {"all": True}


def test_kept_flow_requests_listed_and_removed(api: TestClient, fake: Any) -> None:
    def ask(dport: int) -> Any:
        return api.post("/api/v1/flow-requests", json={
            "type": "skip_me", "service": "fw", "flow": {"match": {"proto": "udp",
                                                                   "dport": dport}}})

    assert api.get("/api/v1/flow-requests").json() == {"requests": []}
    assert [ask(53).json(), ask(80).json(), ask(53).json()] == [
        {"applied": 2, "id": 1}, {"applied": 2, "id": 2}, {"applied": 2, "id": 1}]
    assert fake[1].requests[-1] == {"jsonrpc": "2.0", "id": fake[1].requests[-1]["id"],
                                    "method": "flow.request", "params": {
                                        "type": "skip_me", "service": "fw",
                                        "flow": {"match": {"proto": "udp", "dport": 53}}}}
    r = api.delete("/api/v1/flow-requests/1")
    assert (r.status_code, r.json()) == (200, {"removed": 1})
    assert fake[1].requests[-1]["method"] == "flow.request.remove"
    assert fake[1].requests[-1]["params"] == {"id": 1}
    r = api.get("/api/v1/flow-requests")
    assert (r.status_code, r.json()) == (200, {"requests": [
        {"id": 2, "type": "skip_me", "service": "fw",
         "match": {"proto": "udp", "dport": "80"}}]})
    r = api.delete("/api/v1/flow-requests/1")
    assert (r.status_code, r.json()) == (404, {
        "detail": "no kept wildcard request with id 1; see `GET /api/v1/flow-requests`"})
    n = len(fake[1].requests)
    r = api.delete("/api/v1/flow-requests/0")
    assert (r.status_code, r.json()) == (422, {
        "detail": "path.request_id: 0 is out of range (less than 1): give a request id from "
                  "1 to 4294967295 (`GET /api/v1/flow-requests` lists them)"})
    r = api.delete("/api/v1/flow-requests/x")
    assert (r.status_code, r.json()) == (422, {
        "detail": "path.request_id: expected a request id from 1 to 4294967295 "
                  "(`GET /api/v1/flow-requests` lists them), got 'x'"})
    assert len(fake[1].requests) == n


def test_flow_requests(api: TestClient, fake: Any) -> None:
    r = api.post("/api/v1/flow-requests", json={
        "type": "change_default", "service": "mon", "to": "port:out",
        "flow": {"match": {"proto": "udp", "dport": 53}}})
    assert (r.status_code, r.json()) == (200, {"applied": 2, "id": 1})  # kept as request 1
    assert fake[1].requests[-1]["params"] == {
        "type": "change_default", "service": "mon", "to": "port:out",
        "flow": {"match": {"proto": "udp", "dport": 53}}}
    key = "udp 192.168.1.2:5353 > 10.0.0.9:53"
    r = api.post("/api/v1/flow-requests", json={"type": "skip_me", "service": "fw",
                                                "flow": {"key": key}})
    assert r.json() == {"applied": 1}
    assert fake[1].requests[-1]["params"] == {"type": "skip_me", "service": "fw",
                                              "flow": {"key": key}}
    r = api.post("/api/v1/flow-requests", json={"type": "message", "service": "fw",
                                                "key": "threshold", "value": "10"})
    assert r.json() == {"applied": 1}
    r = api.post("/api/v1/flow-requests", json={
        "type": "change_default", "service": "mon", "to": "fw", "flow": {"match": {}}})
    assert (r.status_code, r.json()) == (409, {
        "detail": "change_default rejected: graph 'default' has no edge from 'mon' to 'fw': "
                  "ChangeDefault may only pick one of the node's allowed next hops"})
    r = api.post("/api/v1/flow-requests", json={"type": "request_me", "service": "zz",
                                                "flow": {"match": {}}})
    assert (r.status_code, r.json()) == (404, {
        "detail": "no service zz; `GET /api/v1/services` shows the services"})
    n = len(fake[1].requests)
    types = "skip_me, request_me, change_default or message"
    flow = ('{"key": "tcp 10.0.0.1:1234 > 10.0.0.2:80"} for one flow or {"match": {...}} '
            'for every flow that matches ({"match": {}}: all)')
    # only the errors of the type the body names, not one per request type
    for bad, detail in [
            ({"type": "skip", "service": "fw", "flow": {"match": {}}},
             f"type: 'skip' is not a request type: use {types}; did you mean 'skip_me'?"),
            ({"type": "Change-Default", "service": "fw", "flow": {"match": {}}},
             f"type: 'Change-Default' is not a request type: use {types}; did you mean "
             f"'change_default'?"),
            ({"type": 5, "service": "fw"}, f"type: 5 is not a request type: use {types}"),
            ({"type": None, "service": "fw"}, f"type: null is not a request type: use {types}"),
            ({"service": "fw", "flow": {"match": {}}},
             f"type: missing: say which request this is: {types}"),
            ({"type": "change_default", "service": "fw", "flow": {"match": {}}},
             "to: missing: this field is required; give one of the service's next hops as a "
             "string: a service, port:NAME or drop"),
            ({"type": "message", "service": "fw", "key": "k"},
             'value: missing: this field is required; give a string of at most 255 '
             'characters, e.g. "1000"'),
            ({"type": "message", "service": "fw", "key": "k", "value": "v", "flow": {}},
             "flow: unknown field: leave it out (this object takes type, service, key, value)"),
            ({"type": "message", "service": "fw", "key": "", "value": 5},
             'key: is empty: give a string of 1 to 63 characters, e.g. "threshold"\n'
             'value: expected a string of at most 255 characters, e.g. "1000", got a number '
             '(5)'),
            ({"type": "message", "service": "fw", "key": "k" * 64, "value": "v"},
             'key: 64 characters, more than the 63 it takes: give a string of 1 to 63 '
             'characters, e.g. "threshold"'),
            ({"type": "skip_me", "service": "fw", "flow": {"match": 5}},
             "flow.match: expected an object of match fields (proto, src, dst, sport, dport, "
             "in_port); {} for every flow, got a number (5)"),
            ({"type": "skip_me", "service": "fw", "flow": {"match": {"prot": 6}}},
             "flow.match.prot: unknown field: leave it out (this object takes proto, src, "
             "dst, sport, dport, in_port); did you mean 'proto'?"),
            ({"type": "skip_me", "service": "fw", "flow": {"match": {"in_port": "port:in"}}},
             "flow.match.in_port: 'port:in' is not a port name: give the port's name alone, "
             "\"in_port\": \"in\""),
            ({"type": "skip_me", "service": "fw", "flow": {"key": "x", "match": {}}},
             f"flow: give key or match, not both: {flow}"),
            ({"type": "skip_me", "service": "fw", "flow": {}}, f"flow: missing: give {flow}"),
            ({"type": "request_me", "service": "fw", "flow": "x"},
             f"flow: expected an object, got a string ('x'): give {flow}"),
            ({"type": "skip_me", "service": "fw"},
             f"flow: missing: this field is required; give {flow}"),
            ({"type": "skip_me", "service": "fw", "flow": {"key": "k", "zz": 1}},
             "flow.zz: unknown field: leave it out (this object takes key)"),
            ({"type": "skip_me", "service": "fw", "flow": {"match": {"dport": "x"}}},
             "flow.match.dport: 'x' is not a port 0-65535 or a range N-M such as 1024-65535"),
            ({"type": "change_default", "service": "fw", "to": "drop",
              "flow": {"match": {"proto": "icmp", "sport": 7}}},
             "flow.match.sport: sport needs proto tcp, udp or sctp (or no proto): icmp "
             "packets have no ports")]:
        r = api.post("/api/v1/flow-requests", json=bad)
        assert (r.status_code, r.json()) == (422, {"detail": detail}), bad
    assert len(fake[1].requests) == n


def test_scale(api: TestClient, fake: Any) -> None:
    r = api.post("/api/v1/services/fw/scale", json={"replicas": 3})
    assert (r.status_code, r.json()) == (200, {"service": "fw", "replicas": 3,
                                               "started_pids": [5000, 5001], "stopping": []})
    assert fake[1].requests[-1]["params"] == {"service": "fw", "replicas": 3}
    r = api.post("/api/v1/services/nat/scale", json={"replicas": 1})
    assert (r.status_code, r.json()) == (404, {
        "detail": "no service nat; `GET /api/v1/services` shows the services"})
    r = api.post("/api/v1/services/fw/scale", json={"replicas": 65})
    assert (r.status_code, r.json()) == (409, {"detail": "65 replicas is more than --max-nfs 64"})
    r = api.post("/api/v1/services/fw/scale", json={"replicas": -1})
    assert (r.status_code, r.json()) == (422, {
        "detail": "replicas: -1 is out of range (less than 0): give a whole number of "
                  "instances from 0 to 65535, e.g. 2"})


def test_unexpected_answer_is_502(api: TestClient, fake: Any) -> None:
    orig = fake[1].handler
    fake[1].handler = lambda req: {"jsonrpc": "2.0", "id": req["id"], "result": {"graphs": 1}}
    try:
        r = api.get("/api/v1/graphs")
    finally:
        fake[1].handler = orig
    assert r.status_code == 502
    assert r.json()["detail"] == ("sluiced answered something this API does not know (graphs: "
                                  "Input should be a valid list): is sluiced the same version "
                                  "as the sluice package?")


# -- websocket events -----------------------------------------------------------------------

def test_events_over_websocket(api: TestClient, fake: Any) -> None:
    from starlette.websockets import WebSocketDisconnect

    with api.websocket_connect("/api/v1/events/ws") as ws:
        assert [ws.receive_json() for _ in EVENTS] == EVENTS
        with pytest.raises(WebSocketDisconnect) as e:
            ws.receive_json()  # the fake closes the subscription: sluiced stopped
    assert (e.value.code, e.value.reason) == (1001, "sluiced closed the subscription (it stopped)")
    assert fake[1].requests[-1] == {"jsonrpc": "2.0", "id": 1, "method": "subscribe"}
    with api.websocket_connect("/api/v1/events/ws?max_events=1") as ws:
        assert ws.receive_json() == EVENTS[0]
        with pytest.raises(WebSocketDisconnect) as e:
            ws.receive_json()
    assert (e.value.code, e.value.reason) == (1000, "max_events sent")


def test_events_over_websocket_errors(api: TestClient, fake: Any, sockdir: Path) -> None:
    from starlette.websockets import WebSocketDisconnect

    fake[0].fail["subscribe"] = (-32000, "too many subscribers")
    with api.websocket_connect("/api/v1/events/ws") as ws:
        assert ws.receive_json() == {"error": "too many subscribers", "status": 409}
        with pytest.raises(WebSocketDisconnect) as e:
            ws.receive_json()
    assert (e.value.code, e.value.reason) == (1011, "too many subscribers")
    ghost = TestClient(create_app("ghost", str(sockdir / "none.sock")))
    with ghost.websocket_connect("/api/v1/events/ws") as ws:
        msg = ws.receive_json()
    assert msg["status"] == 503
    assert msg["error"] == (f"cannot connect to {sockdir}/none.sock: no sluiced is running "
                            f"for node 'ghost' (start one with `sluice up DEPLOYMENT.yaml`, or "
                            f"give the node name with --node)")


def test_websocket_needs_the_token(fake: Any, sockdir: Path) -> None:
    from starlette.websockets import WebSocketDisconnect

    api = TestClient(create_app("t", str(sockdir / "t.sock"), token="s3cret"))
    for url, headers in [("/api/v1/events/ws", {}), ("/api/v1/events/ws?token=nope", {}),
                         ("/api/v1/events/ws", {"Authorization": "Bearer nope"})]:
        with pytest.raises(WebSocketDisconnect) as e, api.websocket_connect(url, headers=headers):
            pass
        assert (e.value.code, e.value.reason) == (1008, "missing or wrong token"), (url, headers)
    assert fake[1].requests == []
    for url, headers in [("/api/v1/events/ws?max_events=1&token=s3cret", {}),
                         ("/api/v1/events/ws?max_events=1", {"X-Sluice-Token": "s3cret"})]:
        with api.websocket_connect(url, headers=headers) as ws:
            assert ws.receive_json() == EVENTS[0]
    # The token in the query works for websockets only.
    assert api.get("/api/v1/status?token=s3cret").status_code == 401


def test_websocket_over_uvicorn_with_token(fake: Any, sockdir: Path) -> None:
    """A real server and a real websocket client: refused without the token
    (HTTP 403 at the handshake), served with it in a header or the query."""
    import socket

    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    from sluice.api import ApiServer

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = ApiServer(create_app("t", str(sockdir / "t.sock"), token="s3cret"),
                       "127.0.0.1", port)
    server.start()
    try:
        url = f"ws://127.0.0.1:{port}/api/v1/events/ws"
        with pytest.raises(InvalidStatus) as e:
            connect(url, open_timeout=10)
        assert e.value.response.status_code == 403
        assert fake[1].requests == []
        for u, headers in [(f"{url}?token=s3cret", {}),
                           (url, {"Authorization": "Bearer s3cret"})]:
            with connect(u, additional_headers=headers, open_timeout=10) as ws:
                import json

                assert [json.loads(ws.recv(timeout=10)) for _ in EVENTS] == EVENTS
    finally:
        server.stop()


# -- 422: one line per problem ---------------------------------------------------------------

def test_invalid_request_says_one_line_per_problem(api: TestClient, fake: Any) -> None:
    r = api.post("/api/v1/rules", json={"graph": "", "proto": "x", "dport": 70000,
                                        "priority": True, "color": 1})
    assert (r.status_code, r.json()["detail"].split("\n")) == (422, [
        "proto: 'x' is not a protocol sluiced knows: use tcp, udp, icmp, icmp6, icmpv6, "
        "sctp, gre, esp, ah, any or a number 0-255",
        "dport: 70000 is not a port: ports go from 0 to 65535",
        'graph: is empty: give the name of a graph as a string, e.g. "web" (`GET /api/v1/'
        'graphs` lists them)',
        "priority: expected an integer from -1000000 to 1000000, got a boolean (true)",
        "color: unknown field: leave it out (this object takes proto, src, dst, sport, "
        "dport, in_port, graph, priority)"])
    r = api.get("/api/v1/rules", params={"offset": -1, "limit": "x"})
    assert (r.status_code, r.json()["detail"].split("\n")) == (422, [
        "query.offset: -1 is out of range (less than 0): give a whole number from 0 to "
        "4294967295",
        "query.limit: expected a whole number from 0 to 100000, got 'x'"])
    # at most 10 lines of problems, then how many more there are
    rules = [{"graph": "web", "dport": 70000 + i} for i in range(13)]
    r = api.post("/api/v1/rule-batches", json={"rules": rules})
    assert (r.status_code, r.json()["detail"].split("\n")) == (422, [
        f"rules.{i}.dport: {70000 + i} is not a port: ports go from 0 to 65535"
        for i in range(10)] + ["(3 more problems not shown: fix these and send it again)"])
    assert fake[1].requests == []
