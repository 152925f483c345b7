"""POST /api/v1/graphs/compile and PUT /api/v1/policies/{name} (issue 30)
against the fake sluiced: the compiled graph with its groups and explain
lines, the compiler's messages as 422, the graph applied flattened and its
rules added once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from sluice.api import create_app
from sluice.core.parallel import compile_data

EDGE = Path(__file__).parents[2] / "examples" / "policies" / "edge.yaml"
# the fake sluiced's services are fw and mon: NFs the compiler has no declaration of
POLICY = {"name": "web", "match": [{"proto": "tcp", "dport": 80}], "nfs": ["fw", "mon"],
          "priority": [["fw", "mon"]],
          "declare": {"fw": {"reads": ["l3_addr", "l4_ports"], "drops": True},
                      "mon": {"reads": ["l3_addr"]}}}


@pytest.fixture
def api(fake: Any, sockdir: Path) -> TestClient:
    return TestClient(create_app("t", str(sockdir / "t.sock")))


def test_compile_gives_the_graph_its_groups_and_the_explain_lines(api: TestClient,
                                                                   fake: Any) -> None:
    policy = yaml.safe_load(EDGE.read_text())["policy"]
    r = api.post("/api/v1/graphs/compile", json=policy)
    assert r.status_code == 200
    want = compile_data({"policy": policy}, str(EDGE))
    assert r.json() == {**want.to_json(), "explain": want.explain()}
    got = r.json()
    assert got["graph"]["groups"]["parallel-1"]["members"] == ["firewall", "ids", "monitor"]
    assert got["graph"]["nodes"] == {"parallel-1": ["nat"], "nat": ["shaper"],
                                     "shaper": ["port:out"]}
    assert got["graph"]["match"] == [{"priority": 0, "dst": "192.168.0.0/24"}]
    assert got["explain"][0] == ("policy edge: chain firewall -> ids -> monitor -> nat -> "
                                 "shaper")
    assert "graph edge: entry parallel-1, 3 node(s), 1 parallel group(s)" in got["explain"]
    assert fake[1].requests == []  # compiling sends nothing to sluiced


@pytest.mark.parametrize(("body", "detail"), [
    ({"name": "e", "nfs": ["firewall", "nat"], "order": [["nat", "before", "fw"]]},
     "order[0]: policy 'e': order [nat, before, fw]: 'fw' is not one of the policy's nfs "
     "(firewall, nat)"),
    ({"name": "e", "nfs": ["firewall", "nat"], "order": [["nat", "before", "firewall"]],
      "position": [["firewall", "first"]]},
     "order[0]: policy 'e': the templates contradict each other: position[0] (firewall "
     "first), order[0] (nat before firewall) make a cycle firewall -> nat -> firewall: remove "
     "or reverse one of them"),
    ({"name": "e", "nfs": ["firewall"], "bogus": 1},
     "bogus: unknown key (known keys here: name, match, nfs, order, priority, position, exit, "
     "hops, declare)"),
    ({"nfs": "firewall"},
     "name: missing: this key is required (see docs/graphs.md)\n"
     "nfs: expected a list, got a string ('firewall')"),
])
def test_a_bad_policy_is_422_with_the_compilers_messages(api: TestClient, body: Any,
                                                         detail: str) -> None:
    r = api.post("/api/v1/graphs/compile", json=body)
    assert (r.status_code, r.json()) == (422, {"detail": detail})
    r = api.put("/api/v1/policies/e", json=body)
    assert r.status_code == 422 and r.json()["detail"] == detail.replace(
        "name: missing: this key is required (see docs/graphs.md)\n", "")


def test_an_unknown_nf_is_named_with_the_known_ones(api: TestClient) -> None:
    r = api.post("/api/v1/graphs/compile", json={"name": "e", "nfs": ["firewal"]})
    assert r.status_code == 422
    detail = r.json()["detail"]
    assert detail.startswith("nfs[0]: policy 'e': 'firewal' is not an NF with a declaration "
                             "(known: ")
    assert detail.endswith("; did you mean 'firewall'?")


def test_put_policy_applies_its_graph_flattened_and_adds_its_rules_once(
        api: TestClient, fake: Any) -> None:
    body = {k: v for k, v in POLICY.items() if k != "name"}
    r = api.put("/api/v1/policies/web", json=body)
    assert r.status_code == 200, r.json()
    got = r.json()
    assert got["graph"] == {"name": "web", "id": 1, "version": 1}
    assert got["rules"] == [{"id": 1, "added": True, "graph": "web", "priority": 0,
                             "proto": "tcp", "dport": 80}]
    assert got["compiled"]["graph"]["groups"]["parallel-1"]["members"] == ["fw", "mon"]
    calls = [(q["method"], q.get("params")) for q in fake[1].requests]
    assert calls[0] == ("nf.list", None)
    assert calls[1] == ("graph.apply", {"name": "web", "entry": "fw",
                                        "nodes": {"fw": ["mon"], "mon": ["port:out"]}})
    assert calls[-1] == ("rule.add", {"rules": [{"graph": "web", "priority": 0,
                                                  "proto": "tcp", "dport": 80}]})
    n = len(fake[1].requests)
    r = api.put("/api/v1/policies/web", json=POLICY)  # the same name in the body is fine
    assert r.json()["graph"]["version"] == 2
    assert r.json()["rules"] == [{"id": 1, "added": False, "graph": "web", "priority": 0,
                                  "proto": "tcp", "dport": 80}]
    assert [q["method"] for q in fake[1].requests[n:]] == ["nf.list", "graph.apply",
                                                            "rule.list"]
    assert api.get("/api/v1/graphs/web").json()["nodes"] == {"fw": ["mon"],
                                                              "mon": ["port:out"]}


def test_put_policy_takes_a_services_operations_from_its_program(api: TestClient,
                                                                 fake: Any) -> None:
    # GET /nfs: fw runs /b/sluice-firewall, mon /b/sluice-monitor: no declare needed
    r = api.put("/api/v1/policies/web", json={"nfs": ["fw", "mon"]})
    assert r.status_code == 200, r.json()
    ops = [x for x in r.json()["compiled"]["explain"] if x.startswith(("  fw: ", "  mon: "))]
    want = compile_data({"policy": {"name": "web", "nfs": ["firewall", "monitor"]}}).explain()
    assert [x.split(": ", 1)[1] for x in ops] == [
        x.split(": ", 1)[1] for x in want if x.startswith(("  firewall: ", "  monitor: "))]
    assert r.json()["compiled"]["nodes"] == [["fw", "mon"]]
    # POST /graphs/compile asks sluiced nothing: there fw is not an NF it knows
    r = api.post("/api/v1/graphs/compile", json={"name": "web", "nfs": ["fw", "mon"]})
    assert r.status_code == 422 and r.json()["detail"].startswith(
        "nfs[0]: policy 'web': 'fw' is not an NF with a declaration (known: ")


def test_put_policy_refuses_a_name_other_than_the_paths(api: TestClient, fake: Any) -> None:
    r = api.put("/api/v1/policies/other", json=POLICY)
    assert (r.status_code, r.json()) == (422, {
        "detail": "name: 'web' is not the path's 'other': leave it out or give the same "
                  "(PUT /api/v1/policies/other)"})
    assert fake[1].requests == []


def test_put_policy_says_sluiceds_refusal(api: TestClient, fake: Any) -> None:
    body = {**POLICY, "nfs": ["fw", "ids"], "priority": [],
            "declare": {"fw": {}, "ids": {"reads": ["payload"]}}}
    r = api.put("/api/v1/policies/web", json=body)
    assert (r.status_code, r.json()) == (422, {
        "detail": "graph 'web': node 'ids': no service named 'ids'"})


def test_the_openapi_spec_documents_both(api: TestClient) -> None:
    paths = api.get("/openapi.json").json()["paths"]
    op = paths["/api/v1/graphs/compile"]["post"]
    assert op["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/PolicyBody"}
    assert op["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/CompiledPolicy"}
    put = paths["/api/v1/policies/{name}"]["put"]
    assert put["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/PolicyApplied"}
    assert "422" in put["responses"]
