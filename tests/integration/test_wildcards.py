"""Wildcard cross-layer requests are kept for the flows to come, up to
--max-wildcards. The same request made again is kept once (an NF that
restarts asks again), so it does not use up the room."""

from __future__ import annotations

import pytest
from conftest import deployment, prog

from sluice.client import RpcError


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

    for _ in range(5):  # one kept, asked five times
        assert ask("10.9.0.0/16") == {"applied": 0}
    assert ask("10.9.0.0/16", to="b") == {"applied": 0}  # another target: another request
    with pytest.raises(RpcError) as full:
        ask("10.8.0.0/16")
    assert "all 2 wildcard requests are in use: raise --max-wildcards" in full.value.message
    assert ask("10.9.0.0/16") == {"applied": 0}  # still there: no room needed
