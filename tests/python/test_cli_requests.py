"""`sluice flow request list/remove` and the kept id in the answer of a
request with a match, against a fake sluiced (test_client.FakeSluiced)
answering flow.requests, flow.request.remove and flow.request in their
documented shapes (docs/control-socket.md): the params sent and what is
printed. tests/integration/test_wildcard_requests.py runs them against a
real sluiced."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_client import FakeSluiced
from typer.testing import CliRunner

from sluice.cli import app

KEPT = [
    {"id": 3, "type": "change_default", "service": "sampler", "to": "ddos-detect",
     "match": {"proto": "udp", "dst": "10.0.0.0/8", "dport": "53"}},
    {"id": 7, "type": "request_me", "service": "scrubber",
     "match": {"src": "10.66.6.0/24", "in_port": "in"}},
    {"id": 9, "type": "skip_me", "service": "monitor", "match": {}},
]


class Node:
    def __init__(self) -> None:
        self.kept = [dict(k) for k in KEPT]

    def handler(self, req: Any) -> Any:
        rid, m, p = req.get("id"), req.get("method"), req.get("params") or {}
        if m == "flow.requests":
            return {"jsonrpc": "2.0", "id": rid, "result": {"requests": self.kept}}
        if m == "flow.request.remove":
            if not any(k["id"] == p["id"] for k in self.kept):
                return {"jsonrpc": "2.0", "id": rid, "error": {
                    "code": -32000,
                    "message": f"no kept wildcard request with id {p['id']}; see "
                               f"flow.requests"}}
            self.kept = [k for k in self.kept if k["id"] != p["id"]]
            return {"jsonrpc": "2.0", "id": rid, "result": {"removed": p["id"]}}
        if m == "flow.request":
            res = {"applied": 4}
            if "match" in p.get("flow", {}):
                res["id"] = 12
            return {"jsonrpc": "2.0", "id": rid, "result": res}
        return {"jsonrpc": "2.0", "id": rid,
                "error": {"code": -32601, "message": f"method '{m}' not found"}}


Fake = tuple[Node, FakeSluiced, list[str]]


@pytest.fixture
def fake() -> Iterator[Fake]:
    d = Path(tempfile.mkdtemp(prefix="slr", dir="/tmp"))  # short: sun_path has 108 bytes
    state = Node()
    srv = FakeSluiced(d / "n.sock", handler=state.handler)
    yield state, srv, ["--socket", str(d / "n.sock")]
    srv.close()
    shutil.rmtree(d, ignore_errors=True)


def run(args: list[str], fake: Fake, code: int = 0) -> Any:
    r = CliRunner().invoke(app, ["flow", "request", *args, *fake[2]], env={"COLUMNS": "200"})
    assert r.exit_code == code, (r.output, r.exception)
    return r


def sent(srv: FakeSluiced) -> list[tuple[str, Any]]:
    return [(r["method"], r.get("params")) for r in srv.requests]


def test_list_table_json_and_empty(fake: Fake) -> None:
    state, srv, _ = fake
    r = run(["list"], fake)
    rows = [[w for w in line.split() if w not in "│┃"] for line in r.stdout.splitlines()]
    rows = [row for row in rows if row and row[0].isdigit()]
    assert rows == [
        ["3", "change_default", "sampler", "ddos-detect", "udp", "dst", "10.0.0.0/8", "dport",
         "53"],
        ["7", "request_me", "scrubber", "-", "src", "10.66.6.0/24", "in_port", "in"],
        ["9", "skip_me", "monitor", "-", "any", "flow"]]
    assert json.loads(run(["list", "--json"], fake).stdout) == {"requests": KEPT}
    state.kept.clear()
    assert run(["list"], fake).stdout == (
        "no kept requests (a request with a match is kept for the flows to come)\n")
    assert sent(srv) == [("flow.requests", None)] * 3


def test_remove(fake: Fake) -> None:
    state, srv, _ = fake
    assert run(["remove", "7"], fake).stdout == (
        "request 7: removed (new flows no longer get it; live flows keep what it gave them)\n")
    assert [k["id"] for k in state.kept] == [3, 9]
    assert json.loads(run(["remove", "9", "--json"], fake).stdout) == {"removed": 9}
    r = run(["remove", "7"], fake, code=1)
    assert r.stderr == ("sluice flow request remove: no kept wildcard request with id 7; see "
                        "`sluice flow request list`\n")
    r = run(["remove", "7", "--json"], fake, code=1)
    assert r.stderr == ("flow.request.remove: no kept wildcard request with id 7; see "
                        "flow.requests (JSON-RPC error -32000)\n")
    assert sent(srv) == [("flow.request.remove", {"id": 7}), ("flow.request.remove", {"id": 9}),
                         ("flow.request.remove", {"id": 7}), ("flow.request.remove", {"id": 7})]
    run(["remove", "x"], fake, code=2)
    assert len(srv.requests) == 4


def test_a_request_with_a_match_says_its_kept_id(fake: Fake) -> None:
    r = run(["skip-me", "monitor", "--proto", "udp"], fake)
    assert r.stdout == ("skip_me: applied to 4 flow(s); kept for new flows as request 12 "
                        "(sluice flow request remove 12 forgets it)\n")
    r = run(["skip-me", "monitor", "--flow", "udp 10.0.0.1:1 > 10.0.0.2:2"], fake)
    assert r.stdout == "skip_me: applied to 4 flow(s)\n"
