"""The REST API and /metrics against a fake sluiced (tests/api/conftest.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import EVENTS, NFS, PORTS, SERVICES, STATS, STATUS
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from sluice.api import create_app


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
    r = api.put("/api/v1/chain", json={"hops": ["fw", "nat"]})
    assert r.status_code == 409
    assert r.json() == {"detail": "chain hop 2 'nat': no service or port named 'nat'; "
                                  "use a name from service.list or port.list"}
    r = api.put("/api/v1/chain", json={"hops": "fw"})
    assert r.status_code == 422
    assert r.json() == {"detail": "hops: Input should be a valid list"}
    assert len(fake[1].requests) == 3  # the invalid body never reached sluiced


def test_nf_stop(api: TestClient, fake: Any) -> None:
    r = api.post("/api/v1/nfs/1/stop")
    assert (r.status_code, r.json()) == (200, {"instance": 1, "state": "stopping"})
    assert fake[1].requests[-1]["params"] == {"instance": 1}
    r = api.post("/api/v1/nfs/99/stop")
    assert (r.status_code, r.json()) == (404, {
        "detail": "no running NF instance 99; nf.list shows them"})
    r = api.post("/api/v1/nfs/x/stop")
    assert r.status_code == 422
    assert r.json()["detail"].startswith("path.instance: ")


def test_lb_set(api: TestClient, fake: Any) -> None:
    r = api.put("/api/v1/services/mon/lb", json={"mode": "flow"})
    assert (r.status_code, r.json()) == (200, {"service": "mon", "mode": "flow"})
    assert fake[1].requests[-1]["params"] == {"service": "mon", "mode": "flow"}
    assert api.get("/api/v1/services").json()[1]["lb"] == "flow"
    r = api.put("/api/v1/services/mon/lb", json={"mode": "random"})
    assert (r.status_code, r.json()) == (422, {"detail": "mode: Input should be 'flow' or 'rr'"})
    fake[0].fail["lb.set"] = (-32602, "param 'mode' 'rr': use flow or rr")
    r = api.put("/api/v1/services/mon/lb", json={"mode": "rr"})
    assert (r.status_code, r.json()) == (422, {"detail": "param 'mode' 'rr': use flow or rr"})
    del fake[0].fail["lb.set"]
    r = api.put("/api/v1/services/nat/lb", json={"mode": "rr"})
    assert (r.status_code, r.json()) == (404, {
        "detail": "no service nat; service.list shows the services"})


def test_rx_pause_and_resume(api: TestClient, fake: Any) -> None:
    assert api.post("/api/v1/rx/pause").json() == {"rx_enabled": False}
    assert api.get("/api/v1/status").json()["rx_enabled"] is False
    assert api.post("/api/v1/rx/resume").json() == {"rx_enabled": True}
    msg = ("the chain is not complete (a service on it has no NF): start the NFs or "
           "chain.set first")
    fake[0].fail["rx.resume"] = (-32000, msg)
    r = api.post("/api/v1/rx/resume")
    assert (r.status_code, r.json()) == (409, {"detail": msg})


@pytest.mark.parametrize("code,status", [(-32602, 422), (-32000, 409), (-32601, 501),
                                         (-32600, 502), (-32700, 502)])
def test_rpc_error_codes_map_to_http(api: TestClient, fake: Any, code: int,
                                     status: int) -> None:
    fake[0].fail["stats"] = (code, "something is wrong")
    r = api.get("/api/v1/stats")
    assert r.status_code == status
    detail = r.json()["detail"]
    if status in (409, 422):
        assert detail == "something is wrong"
    else:
        assert "something is wrong" in detail


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
    assert r.status_code == 502
    assert r.json() == {"detail": "status: sluiced closed the connection without answering"}
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
    assert api.get("/api/v1/events?max_events=0").status_code == 422


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
        '# TYPE sluice_port_rx_packets_total counter',
        '# TYPE sluice_nf_ring_occupancy gauge',
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
        assert s[("sluice_service_instances", lab)] == 1
        for reason, v in sv["drops"].items():
            assert s[("sluice_service_drops_total", (("reason", reason),) + lab)] == v
    assert s[("sluice_drops_total", ())] == 100
    assert all(name.startswith("sluice_") for name, _ in s)
    api.get("/metrics")
    assert [q["method"] for q in fake[1].requests] == ["stats", "stats"]


def test_metrics_error(api: TestClient, fake: Any) -> None:
    fake[0].fail["stats"] = "close"
    r = api.get("/metrics")
    assert (r.status_code, r.json()) == (502, {
        "detail": "stats: sluiced closed the connection without answering"})


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
    assert set(paths) == {
        "/api/v1/status", "/api/v1/nfs", "/api/v1/nfs/{instance}/stop", "/api/v1/ports",
        "/api/v1/services", "/api/v1/services/{service}/lb", "/api/v1/stats",
        "/api/v1/chain", "/api/v1/rx/pause", "/api/v1/rx/resume", "/api/v1/events",
        "/metrics"}
    ok = paths["/api/v1/stats"]["get"]["responses"]["200"]["content"]["application/json"]
    assert ok["schema"] == {"$ref": "#/components/schemas/Stats"}
    err = paths["/api/v1/nfs/{instance}/stop"]["post"]["responses"]
    assert err["404"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Error"}
    assert err["422"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Error"}
