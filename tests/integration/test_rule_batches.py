"""Rules in batches, and list replies that fit the client's buffer.

Every change of the rule set rebuilds the rte_acl classifier, whose cost
grows with the rules in it: N rules added one request at a time cost
O(N^2) (docs/control-socket.md has the figures). ``rule.add {rules: [...]}``
and ``rule.remove {ids: [...]}`` change many with one build, all or none;
``rule.list`` counts the builds, so the tests check there is exactly one.
``rule.list`` pages (offset, limit), and a ``rule.list`` or ``flow.list``
reply larger than ``--control-out-kb`` is refused with an error instead of
closing the connection unanswered."""

from __future__ import annotations

from conftest import deployment, prog, wait_until
from packets import write
from test_crosslayer import rpc_error

from sluice.runtime.traces import fixed_size


def _run(launch, node, *args: str, ports=None):
    run = launch(deployment(node, ports=ports or [],
                            nfs=[{"name": "a", "program": prog("forward"), "service": "a"}],
                            chain=["drop"], sluiced_args=list(args)))
    run.client.call("graph.apply", name="g", nodes={"a": ["drop"]})
    return run


def test_a_batch_of_rules_is_one_build_all_or_none(launch, node):
    run = _run(launch, node, "--max-rules", "6")
    call = run.client.call
    builds = call("rule.list")["builds"]
    got = call("rule.add", rules=[
        {"graph": "g", "priority": 1, "proto": "udp", "dport": 53},
        {"graph": "g", "priority": 5, "src": "10.1.0.0/16"},
        {"graph": "g", "priority": 1, "proto": "tcp", "dport": "80-89"},
        {"graph": "g", "dst": "192.168.0.1"},
    ])
    assert got == {"added": 4, "first_id": 1, "last_id": 4}  # in the order given
    listed = call("rule.list")
    assert [{k: v for k, v in r.items() if k != "flows"} for r in listed["rules"]] == [
        {"id": 2, "graph": "g", "priority": 5, "src": "10.1.0.0/16"},
        {"id": 1, "graph": "g", "priority": 1, "proto": "udp", "dport": "53"},
        {"id": 3, "graph": "g", "priority": 1, "proto": "tcp", "dport": "80-89"},
        {"id": 4, "graph": "g", "priority": 0, "dst": "192.168.0.1/32"},
    ]
    listed = call("rule.list")
    assert listed["builds"] == builds + 1  # four rules, one classifier build
    assert (listed["total"], listed["truncated"]) == (4, False)
    assert [(r["id"], r["flows"]) for r in listed["rules"]] == [(2, 0), (1, 0), (3, 0), (4, 0)]
    # A single add goes between equal priorities by age, as before.
    assert call("rule.add", graph="g", priority=1, proto="icmp")["id"] == 5
    assert [r["id"] for r in call("rule.list")["rules"]] == [2, 1, 3, 5, 4]

    # All or none: a bad rule, too many rules, an unknown or repeated id.
    assert rpc_error(call, "rule.add", rules=[{"graph": "g"}, {"graph": "nope"}]) == (
        "rules[1]: no graph named 'nope': apply it first (graph.apply)")
    assert rpc_error(call, "rule.add", rules=[{"graph": "g"}, {"graph": "g", "dport": "x"}]
                     ).startswith("rules[1]: ")
    assert rpc_error(call, "rule.add", rules=[{"graph": "g"}, {"graph": "g"}]) == (
        "2 rules would make 7, more than --max-rules 6 (5 in use): remove some or "
        "raise --max-rules")
    assert rpc_error(call, "rule.add", rules=[]) == (
        "param 'rules' must be a non-empty list of rules")
    assert rpc_error(call, "rule.add", rules=[{"graph": "g"}], graph="g") == (
        "param 'rules' goes alone: give each rule's fields inside it")
    assert rpc_error(call, "rule.remove", ids=[1, 9]) == (
        "no rule with id 9; see rule.list (no rule was removed)")
    assert rpc_error(call, "rule.remove", ids=[3, 1, 3]) == (
        "rule id 3 is given twice: give each once")
    assert rpc_error(call, "rule.remove", ids=[1, "x"]) == "ids[1] is not a rule id; see rule.list"
    listed = call("rule.list")
    assert listed["builds"] == builds + 2  # the failed calls built nothing
    assert [r["id"] for r in listed["rules"]] == [2, 1, 3, 5, 4]

    assert call("rule.remove", ids=[4, 2, 1]) == {"removed": [4, 2, 1]}
    listed = call("rule.list")
    assert listed["builds"] == builds + 3
    assert [r["id"] for r in listed["rules"]] == [3, 5]
    assert call("rule.add", graph="g")["id"] == 6  # ids are not reused


def test_rule_list_pages(launch, node):
    run = _run(launch, node)
    call = run.client.call
    call("rule.add", rules=[{"graph": "g", "priority": p, "sport": 1000 + p} for p in range(7)])
    page = call("rule.list", offset=2, limit=3)
    assert (page["total"], page["truncated"]) == (7, True)
    assert [r["priority"] for r in page["rules"]] == [4, 3, 2]
    page = call("rule.list", offset=5, limit=3)
    assert (page["total"], page["truncated"], len(page["rules"])) == (7, False, 2)
    assert call("rule.list", offset=9)["rules"] == []
    assert rpc_error(call, "rule.list", limit=100001) == (
        "param 'limit' must be an integer in 0..100000")
    assert rpc_error(call, "rule.list", page=2) == (
        "unknown param 'page': rule.list takes offset and limit")


def test_a_list_reply_too_big_for_the_client_is_refused(launch, node, tmp_path):
    """At --control-out-kb 4, 100 flows or 100 rules do not fit: the call
    fails with the reason and the connection stays usable."""
    src = write(tmp_path / "in.pcap", fixed_size(200, flows=200))
    run = _run(launch, node, "--control-out-kb", "4",
               ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src}"}])
    call = run.client.call
    call("chain.set", hops=["port:in"])
    wait_until(lambda: call("stats")["flows"]["live"] == 200, 20, "200 flows")
    msg = rpc_error(call, "flow.list")
    assert msg.startswith("the reply would be ") and msg.endswith(
        " KiB, more than --control-out-kb 4: ask for fewer flows (limit) or narrow the "
        "filters"), msg
    assert len(call("flow.list", limit=5)["flows"]) == 5  # the same connection
    call("rule.add", rules=[{"graph": "g", "sport": p} for p in range(1, 101)])
    msg = rpc_error(call, "rule.list")
    assert msg.startswith("the reply would be ") and msg.endswith(
        " KiB, more than --control-out-kb 4: ask for fewer rules (limit, then offset)"), msg
    assert len(call("rule.list", limit=10)["rules"]) == 10
