"""Loops: a port's packet never circulates among NFs for ever.

The default chain allows any hop (an NF's TO may name any service), so a
chain can be made to loop: by an NF that sends packets back upstream, by a
ChangeDefault back upstream (refused), or by a ChangeDefault that was
forward until a later chain.set turned the chain around. sluiced counts a
packet's visits to NFs and drops it as `hop_limit` once it has made
--max-hops of them (docs/control-socket.md), so the packets of a loop
are all dropped, counted, and the chain drains.
"""

from __future__ import annotations

import subprocess
import time

import pytest
from conftest import deployment, port, prog, service, wait_drained, wait_until
from packets import mixed, write

from sluice.runtime.client import RpcError


def _fwd(name: str, *args: str) -> dict:
    return {"name": name, "program": prog("forward"), "service": name, "args": list(args)}


def test_an_nf_that_sends_packets_back_upstream_hits_the_hop_limit(launch, node, tmp_path):
    n = 200
    src = write(tmp_path / "in.pcap", mixed(n, flows=7, seed=3))
    run = launch(deployment(
        node,
        ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src}"},
               {"name": "out", "device": "net_null0,no-rx=1"}],
        nfs=[_fwd("a"), _fwd("b", "--to", "a")],
        chain=["a", "b", "port:out"], sluiced_args=["--max-hops", "8"]))
    assert run.client.call("status")["max_hops"] == 8
    st = wait_drained(run)
    # in -> a -> b -> a -> b -> a -> b -> a -> b: 8 visits, the 9th refused
    a, b = service(st, "a"), service(st, "b")
    assert (a["rx_pkts"], b["rx_pkts"]) == (4 * n, 4 * n), (a, b)
    assert {k: v for k, v in b["drops"].items() if v} == {"hop_limit": n}, b
    assert not any(a["drops"].values()), a
    assert port(st, "in")["rx_pkts"] == n and port(st, "out")["tx_pkts"] == 0
    assert st["drops_total"] == n


def _looping_setup(launch, node, tmp_path, chain):
    src = write(tmp_path / "in.pcap", mixed(50, flows=5, seed=7))
    run = launch(deployment(
        node,
        ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src},infinite_rx=1"},
               {"name": "out", "device": "net_null0,no-rx=1"}],
        nfs=[_fwd(s) for s in "abc"], chain=chain, sluiced_args=["--max-hops", "16"]))
    wait_until(lambda: run.client.call("stats")["flows"]["live"] == 5, 20, "the 5 flows")
    return run


def test_change_default_back_up_a_chain_is_refused(launch, node, tmp_path):
    run = _looping_setup(launch, node, tmp_path, ["a", "b", "c", "port:out"])
    for frm, to in (("b", "a"), ("c", "a"), ("b", "b")):
        with pytest.raises(RpcError) as e:
            run.client.call("flow.request", type="change_default", service=frm, to=to,
                            flow={"match": {}})
        assert e.value.message == (
            f"change_default rejected: graph 'default' is a chain, and '{to}' leads back to "
            f"'{frm}' along it: ChangeDefault from '{frm}' to '{to}' would send the flow "
            f"round a loop; pick a hop after '{frm}' (a later service, a port or drop)")
    # forward along the chain is fine: a skips b
    assert run.client.call("flow.request", type="change_default", service="a", to="c",
                           flow={"match": {}})["applied"] == 5


def test_an_override_that_a_new_chain_turns_back_is_dropped_at_the_hop_limit(
        launch, node, tmp_path):
    run = _looping_setup(launch, node, tmp_path, ["a", "b", "c", "port:out"])
    assert run.client.call("flow.request", type="change_default", service="a", to="c",
                           flow={"match": {}})["applied"] == 5
    # now c -> b -> a -> (the flows' override) c -> b -> a -> ...
    run.client.call("chain.set", hops=["c", "b", "a", "port:out"])
    before = run.client.call("stats")
    hop_drops = lambda st, s: service(st, s)["drops"].get("hop_limit", 0)  # noqa: E731
    wait_until(lambda: hop_drops(run.client.call("stats"), "c") > 1000, 20, "hop_limit drops")
    run.client.call("rx.pause")
    st = wait_drained(run, timeout=10)  # nothing goes round for ever
    # A packet read since the new chain visits c, b, a, c, b, a, ... 16
    # times (c six times) and c, handing it to b a 17th time, drops it.
    assert (hop_drops(st, "a"), hop_drops(st, "b")) == (0, 0), st["services"]
    # Only the packets in the chain when it changed (their graph version
    # is the old one) still left by the port.
    in_flight = (port(before, "in")["rx_pkts"] - port(before, "out")["tx_pkts"]
                 - before["drops_total"])
    assert port(st, "out")["tx_pkts"] - port(before, "out")["tx_pkts"] <= in_flight


def test_an_nf_naming_a_service_not_registered_yet_waits_for_it(launch, node, tmp_path):
    """The NFs of a deployment start together, so `sluice-forward --to a`
    may initialise before a's NF has registered: it waits (up to 5 s,
    saying so: sl_service_id_wait) instead of failing with "no such
    service" (seen in CI with the test above). Here a starts 0.5 s after
    b is up."""
    src = write(tmp_path / "in.pcap", mixed(20, flows=2, seed=1))
    run = launch(deployment(
        node,
        ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src}"},
               {"name": "out", "device": "net_null0,no-rx=1"}],
        nfs=[_fwd("b", "--to", "a")], chain=["b", "port:out"]))
    b = run.nfs[0]
    wait_until(lambda: "service 'a' is not known to sluiced yet: waiting up to 5000 ms for "
                       "an NF of it to register" in b.log.read_text(), 5, "b waiting for a")
    time.sleep(0.5)
    assert b.exited() is None, b.tail()
    with open(tmp_path / "a.log", "w") as log:
        a = subprocess.Popen([prog("forward"), "--", "--node", node, "--service", "a"],
                             stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: {(x["service"], x["state"]) for x in run.client.call("nf.list")}
                   == {("a", "running"), ("b", "running")}, 15, "a and b running")
        time.sleep(0.3)
        assert b.exited() is None, b.tail()
        assert "initialisation failed" not in b.log.read_text()
    finally:
        a.terminate()
        a.wait(timeout=10)
