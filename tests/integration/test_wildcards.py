"""Wildcard cross-layer requests are kept for the flows to come, up to
--max-wildcards. The same request made again is kept once (an NF that
restarts asks again), so it does not use up the room; removing one makes
room (test_wildcard_requests.py tests removal itself)."""

from __future__ import annotations

import pytest
from conftest import deployment, prog

from sluice.runtime.client import RpcError


def _nf(name: str) -> dict:
    return {"name": name, "program": prog("forward"), "service": name}


def test_the_same_wildcard_request_is_kept_once(launch, node):
    run = launch(deployment(node, ports=[], nfs=[_nf("a"), _nf("b"), _nf("c")], chain=["drop"],
                            sluiced_args=["--max-wildcards", "2"]))
    run.client.call("graph.apply", name="g", nodes={"a": ["b", "c"], "b": ["drop"],
                                                    "c": ["drop"]})

    def ask(src: str, to: str = "c") -> dict:
        return run.client.call("flow.request", type="change_default",
                               flow={"match": {"proto": "udp", "src": src}},
                               service="a", to=to)

    for _ in range(5):  # one kept, asked five times: the same id
        assert ask("10.9.0.0/16") == {"applied": 0, "id": 1}
    assert ask("10.9.0.0/16", to="b") == {"applied": 0, "id": 2}  # another target: another
    with pytest.raises(RpcError) as full:
        ask("10.8.0.0/16")
    assert full.value.message == (
        "change_default rejected: all 2 wildcard requests are in use: remove one "
        "(flow.requests lists them, flow.request.remove) or raise --max-wildcards")
    assert ask("10.9.0.0/16") == {"applied": 0, "id": 1}  # still there: no room needed
    # Removing one makes room; ids are not reused.
    assert run.client.call("flow.request.remove", id=2) == {"removed": 2}
    assert ask("10.8.0.0/16") == {"applied": 0, "id": 3}
    assert [r["id"] for r in run.client.call("flow.requests")["requests"]] == [1, 3]
