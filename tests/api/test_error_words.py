"""What the API says about a bad request: which field, what was wrong with it
and what to give, in the words of the CLI (tests/api/apifake.py is sluiced)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from sluice.api import create_app

PREFIX = "/api/v1"


@pytest.fixture
def api(fake: Any, sockdir: Path) -> TestClient:
    return TestClient(create_app("t", str(sockdir / "t.sock")))


@pytest.mark.parametrize("method,path,body,detail", [
    ("PUT", "/services/fw/lb", {"mode": "r"},
     "mode: expected flow, queue or rr, got a string ('r'); did you mean 'rr'?"),
    ("PUT", "/services/fw/lb", {"mode": 1}, "mode: expected flow, queue or rr, got a number (1)"),
    ("PUT", "/chain", {"hops": [1]},
     "hops.0: expected a hop as a string: a service, port:NAME or drop, got a number (1)"),
    ("PUT", "/chain", {"hop": ["fw"]},
     'hops: missing: this field is required; give an array of hops, e.g. ["firewall", '
     '"port:out"]\nhop: unknown field: leave it out (this object takes hops); did you mean '
     "'hops'?"),
    ("PUT", "/graphs/g", {"nodes": []},
     'nodes: expected an object of each service\'s next hops, e.g. {"fw": ["mon", "drop"], '
     '"mon": ["port:out"]}, got an array'),
    ("PUT", "/graphs/g", {"nodes": {"fw": "mon"}},
     'nodes.fw: expected an array of next hops, the default first, e.g. ["port:out"], got a '
     "string ('mon')"),
    ("PUT", "/graphs/g", {"nodes": {"fw": [None]}},
     "nodes.fw.0: expected a next hop as a string: a service of the graph, port:NAME or drop, "
     "got null"),
    ("PUT", "/graphs/g", {"nodes": {"fw": ["drop"]}, "entry": ""},
     "entry: is empty: give the name of a node of the graph (or leave entry out: the first "
     "node)"),
    ("POST", "/rule-batches", {"rules": {}},
     'rules: expected an array of rules, e.g. [{"graph": "web", "proto": "tcp", "dport": '
     "80}], got an object"),
    ("POST", "/rule-batches", {"rules": [{"graph": "web"}, {"graph": "web", "in_port": 3}]},
     "rules.1.in_port: 3 is not a port name: give the name of a port of the node, e.g. in"),
    ("POST", "/flow-requests", {"type": "skip_me", "service": "", "flow": {"key": 5}},
     'service: is empty: give the name of a service as a string, e.g. "firewall" '
     '(`GET /api/v1/services` lists them)\nflow.key: expected a flow key, e.g. "tcp '
     '10.0.0.1:1234 > 10.0.0.2:80" (`GET /api/v1/flows` lists them), got a number (5)'),
    ("POST", "/flow-requests", {"type": "skip_me", "service": "fw", "flow": {"key": "k"},
                                "to": "mon"},
     "to: unknown field: leave it out (this object takes type, service, flow)"),
    ("GET", "/events?max_events=x", None,
     "query.max_events: expected a whole number of events, 1 or more, got 'x'"),
    ("DELETE", "/flows?all=maybe", None, "query.all: expected true or false, got 'maybe'"),
    ("POST", "/rules", {"graph": "web", "in_port": "port:out"},
     'in_port: \'port:out\' is not a port name: give the port\'s name alone, "in_port": "out"'),
])
def test_422_says_field_problem_and_what_to_give(api: TestClient, fake: Any, method: str,
                                                 path: str, body: Any, detail: str) -> None:
    r = api.request(method, PREFIX + path, json=body)
    assert (r.status_code, r.json()) == (422, {"detail": detail})
    assert fake[1].requests == []  # refused by the API, never sent to sluiced


def test_sluiceds_param_is_said_as_the_requests_field(api: TestClient, fake: Any) -> None:
    # a body field
    r = api.post(f"{PREFIX}/rules", json={"graph": "web", "in_port": "eth9"})
    assert (r.status_code, r.json()) == (422, {
        "detail": "in_port: no port named 'eth9'; use a name from `GET /api/v1/ports`"})
    # a query parameter of the flow filters
    fake[0].fail["flow.list"] = (-32602, "param 'in_port': no port named 'eth9'; use a "
                                         "name from port.list")
    r = api.get(f"{PREFIX}/flows?in_port=eth9")
    assert (r.status_code, r.json()) == (422, {
        "detail": "query.in_port: no port named 'eth9'; use a name from `GET /api/v1/ports`"})
    assert fake[1].requests[-1]["params"] == {"limit": 100, "in_port": "eth9"}
    # the flow in the path: sluiced's key
    r = api.delete(f"{PREFIX}/flows/bogus")
    assert r.status_code == 422
    assert r.json()["detail"].startswith("path.flow: 'bogus' is not a flow key like "), r.text


def test_flow_request_matches_on_in_port(api: TestClient, fake: Any) -> None:
    r = api.post(f"{PREFIX}/flow-requests", json={
        "type": "request_me", "service": "fw", "flow": {"match": {"in_port": "in",
                                                                  "proto": "udp"}}})
    assert r.status_code == 200, r.text
    assert fake[1].requests[-1]["params"] == {
        "type": "request_me", "service": "fw", "flow": {"match": {"proto": "udp",
                                                                  "in_port": "in"}}}
