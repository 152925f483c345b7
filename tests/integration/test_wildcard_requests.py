"""Kept wildcard cross-layer requests are listed (flow.requests) and removed
(flow.request.remove) by a stable id. A removed request no longer touches
the flows created after it; the live flows it was applied to keep their
overrides until they are deleted.

The rig is test_crosslayer's: frames written into a TAP port, every NF a
``sluice-forward --tag-src-mac``, so the output capture says which service
each packet saw last, and each packet is compared byte for byte (but the
tag) with the one sent."""

from __future__ import annotations

import json
from typing import Any

from conftest import service, wait_until
from fastapi.testclient import TestClient
from test_crosslayer import Rig, flow_frames, paths, rpc_error, tag_nf
from typer.testing import CliRunner

from sluice.api import create_app
from sluice.cli import app as cli_app

F1 = ("10.77.0.1", "10.77.0.2", 1000, 2000)  # matches A: live before A is removed
F1_KEY = "udp 10.77.0.1:1000 > 10.77.0.2:2000"
F2 = ("10.77.0.5", "10.77.0.2", 1005, 2000)  # matches A: new after A is removed
F2_KEY = "udp 10.77.0.2:2000 > 10.77.0.5:1005"
H1 = ("10.77.1.1", "10.77.0.2", 1001, 2000)  # matches B, before A is removed
H2 = ("10.77.1.2", "10.77.0.2", 1002, 2000)  # matches B, after

A_MATCH = {"proto": "udp", "src": "10.77.0.0/24", "dport": 2000}
A_LISTED = {"id": 1, "type": "change_default", "service": "cls", "to": "q",
            "match": {"proto": "udp", "src": "10.77.0.0/24", "dport": "2000"}}
B_LISTED = {"id": 2, "type": "skip_me", "service": "p",
            "match": {"src": "10.77.1.0/24", "in_port": "in"}}


def test_kept_requests_listed_removed_and_stable(launch, node, tmp_path):
    """cls -> {p, q} -> out. A = ChangeDefault(cls -> q) for 10.77.0.0/24,
    B = SkipMe(p) for 10.77.1.0/24 (p's default is out: the packet leaves
    with cls's tag). Both are listed exactly; removing A (the first) leaves
    B with its id; F1, live before, still goes to q; F2, new after, takes
    the default p; H2, new after, still skips p. Deleting F1 resets it.
    Ids are never reused and a duplicate gets the kept one's id."""
    rig = Rig(launch, node, tmp_path, [tag_nf("cls"), tag_nf("p"), tag_nf("q")])
    rig.apply("g", {"cls": ["p", "q"], "p": ["port:out"], "q": ["port:out"]},
              src="10.77.0.0/16")
    call = rig.call
    assert call("flow.requests") == {"requests": []}

    # Kept (no flow yet: applied to none), listed oldest first, exactly.
    assert call("flow.request", type="change_default", flow={"match": A_MATCH},
                service="cls", to="q") == {"applied": 0, "id": 1}
    assert call("flow.request", type="skip_me",
                flow={"match": {"src": "10.77.1.0/24", "in_port": "in"}},
                service="p") == {"applied": 0, "id": 2}
    assert call("flow.requests") == {"requests": [A_LISTED, B_LISTED]}
    # The same request again: kept once, under its id.
    assert call("flow.request", type="change_default", flow={"match": A_MATCH},
                service="cls", to="q") == {"applied": 0, "id": 1}
    assert call("flow.requests") == {"requests": [A_LISTED, B_LISTED]}

    rig.send(flow_frames("F1", "1", 3, *F1) + flow_frames("H1", "1", 3, *H1))
    rig.wait_out()
    assert call("flow.get", key=F1_KEY)["overrides"] == [
        {"service": "cls", "type": "default", "to": "q"}]

    # Remove A, the first: B keeps id 2; A cannot be removed twice.
    assert call("flow.request.remove", id=1) == {"removed": 1}
    assert call("flow.requests") == {"requests": [B_LISTED]}
    assert rpc_error(call, "flow.request.remove", id=1) == (
        "no kept wildcard request with id 1; see flow.requests")
    assert rpc_error(call, "flow.request.remove", id=99) == (
        "no kept wildcard request with id 99; see flow.requests")
    rig.wait_event(lambda e: e["kind"] == "flow.request.removed", 5,
                   "the flow.request.removed event")

    rig.send(flow_frames("F1", "2", 3, *F1) + flow_frames("F2", "2", 3, *F2)
             + flow_frames("H2", "2", 3, *H2))
    rig.wait_out()
    f1 = call("flow.get", key=F1_KEY)
    f2 = call("flow.get", key=F2_KEY)
    assert (f1["overrides"], f2["overrides"]) == (
        [{"service": "cls", "type": "default", "to": "q"}], [])

    # The way to reset a live flow: delete it; its next packet starts a new one.
    assert call("flow.delete", src="10.77.0.1") == {"deleted": 1}
    wait_until(lambda: call("flow.list", src="10.77.0.1")["matched"] == 0, 5,
               "F1 to be deleted")
    rig.send(flow_frames("F1", "3", 3, *F1))
    rig.wait_out()
    assert call("flow.get", key=F1_KEY)["overrides"] == []

    # Ids are not reused: A again is 3 (and its duplicate says 3).
    assert call("flow.request.remove", id=2) == {"removed": 2}
    assert call("flow.requests") == {"requests": []}
    assert call("flow.request", type="change_default", flow={"match": A_MATCH},
                service="cls", to="q") == {"applied": 2, "id": 3}  # F1 and F2 are live
    assert call("flow.request", type="change_default", flow={"match": A_MATCH},
                service="cls", to="q") == {"applied": 2, "id": 3}
    assert call("flow.requests") == {"requests": [{**A_LISTED, "id": 3}]}
    st = call("stats")
    # Events come in order on one connection: the last request's is the last.
    wait_until(lambda: sum(e["kind"] == "flow.request" for e in list(rig.events)) == 5, 5,
               "the five flow.request events")
    events = list(rig.events)
    got = rig.stop()

    assert paths(got, "F1", "1") == ["q"] * 3
    assert paths(got, "H1", "1") == ["cls"] * 3  # p skipped
    assert paths(got, "F1", "2") == ["q"] * 3    # live: keeps A's override
    assert paths(got, "F2", "2") == ["p"] * 3    # new: A removed, the default
    assert paths(got, "H2", "2") == ["cls"] * 3  # new: B still kept
    assert paths(got, "F1", "3") == ["p"] * 3    # deleted, then new
    assert len(got) == rig.n_out == 18

    def nbytes(*prefixes: str) -> int:
        return sum(len(f) for m, f in rig.sent.items() if m.startswith(prefixes))

    assert [service(st, s)["rx_pkts"] for s in ("cls", "p", "q")] == [18, 6, 6]
    ours = [(e["from"], e["to"], e["pkts"], e["bytes"]) for e in st["edges"]
            if "drop" not in (e["from"], e["to"])]  # Linux's own packets: chain -> drop
    qb, pb, hb = nbytes("F1:1:", "F1:2:"), nbytes("F2:", "F1:3:"), nbytes("H1:", "H2:")
    assert sorted(ours) == sorted([
        ("port:in", "cls", 18, qb + pb + hb), ("cls", "q", 6, qb), ("cls", "p", 6, pb),
        ("cls", "port:out", 6, hb), ("q", "port:out", 6, qb), ("p", "port:out", 6, pb)])
    assert [e["data"] for e in events if e["kind"] == "flow.request.removed"] == [
        {"id": 1}, {"id": 2}]
    # Each request's event names the id it is kept under.
    assert [(e["data"]["type"], e["data"].get("kept")) for e in events
            if e["kind"] == "flow.request"] == [
        ("change_default", 1), ("skip_me", 2), ("change_default", 1),
        ("change_default", 3), ("change_default", 3)]


def test_kept_requests_cli_and_api(launch, node, tmp_path):
    """`sluice flow request list/remove` and GET/DELETE /flow-requests
    against a real sluiced: the same lists, the same errors."""
    rig = Rig(launch, node, tmp_path, [tag_nf("cls"), tag_nf("p"), tag_nf("q")])
    rig.apply("g", {"cls": ["p", "q"], "p": ["port:out"], "q": ["port:out"]})
    sock = ["--socket", str(rig.run.dep.socket_path())]
    runner = CliRunner()

    def cli(*args: str, code: int = 0) -> Any:
        r = runner.invoke(cli_app, ["flow", "request", *args, *sock], env={"COLUMNS": "200"})
        assert r.exit_code == code, (r.output, r.exception)
        return r

    assert cli("list").stdout == (
        "no kept requests (a request with a match is kept for the flows to come)\n")
    assert cli("change-default", "cls", "--to", "q", "--proto", "udp", "--src",
               "10.77.0.0/24", "--dport", "2000").stdout == (
        "change_default: applied to 0 flow(s); kept for new flows as request 1 (sluice flow "
        "request remove 1 forgets it)\n")
    assert cli("skip-me", "p", "--src", "10.77.1.0/24").stdout == (
        "skip_me: applied to 0 flow(s); kept for new flows as request 2 (sluice flow request "
        "remove 2 forgets it)\n")
    listed = {"requests": [A_LISTED, {**B_LISTED, "match": {"src": "10.77.1.0/24"}}]}
    assert rig.call("flow.requests") == listed
    assert json.loads(cli("list", "--json").stdout) == listed
    rows = [[w for w in line.split() if w not in "│┃"] for line in cli("list").stdout.splitlines()]
    assert [r for r in rows if r and r[0].isdigit()] == [
        ["1", "change_default", "cls", "q", "udp", "src", "10.77.0.0/24", "dport", "2000"],
        ["2", "skip_me", "p", "-", "src", "10.77.1.0/24"]], rows

    api = TestClient(create_app(node, str(rig.run.dep.socket_path())))
    r = api.get("/api/v1/flow-requests")
    assert (r.status_code, r.json()) == (200, listed)
    r = api.delete("/api/v1/flow-requests/1")
    assert (r.status_code, r.json()) == (200, {"removed": 1})
    r = api.delete("/api/v1/flow-requests/1")
    assert (r.status_code, r.json()) == (404, {
        "detail": "no kept wildcard request with id 1; see `GET /api/v1/flow-requests`"})

    assert cli("remove", "2").stdout == (
        "request 2: removed (new flows no longer get it; live flows keep what it gave them)\n")
    r = cli("remove", "2", code=1)
    assert r.stderr == ("sluice flow request remove: no kept wildcard request with id 2; see "
                        "`sluice flow request list`\n")
    r = cli("remove", "2", "--json", code=1)
    assert r.stderr == ("flow.request.remove: no kept wildcard request with id 2; see "
                        "flow.requests (JSON-RPC error -32000)\n")
    assert rig.call("flow.requests") == {"requests": []}
    rig.stop()
