"""Graph ids are reused: a removed graph's id goes to the next graph applied.
A flow classified under the removed graph must not follow the graph that
got its id (no rule chose it); its next packet classifies it again.

Traffic in phases through a TAP port, as in test_crosslayer.py (whose rig
this reuses): every NF tags the last byte of the source MAC, so the output
says which path each packet took."""

from __future__ import annotations

from conftest import deployment
from test_crosslayer import F_KEY, F, Rig, flow_frames, paths, tag_nf


def test_a_removed_graphs_flows_do_not_follow_the_graph_given_its_id(launch, node, tmp_path):
    rig = Rig(launch, node, tmp_path, [tag_nf("p"), tag_nf("q"), tag_nf("d")])
    rig.call("chain.set", hops=["d", "port:out"])  # what an unruled flow takes
    # ... and Linux's own packets on the TAP (the MLD reports it sends as the
    # link comes up, at a moment of its own): not ours, not checked by count.
    rig.linux_out = True
    rig.apply("g1", {"p": ["port:out"]}, src="10.77.0.0/16")
    rig.send(flow_frames("F", "1", 3, *F))
    rig.wait_out()
    assert rig.call("flow.get", key=F_KEY)["graph"] == "g1"
    g1_id = next(g["id"] for g in rig.call("graph.get")["graphs"] if g["name"] == "g1")

    assert rig.call("graph.remove", name="g1") == {"removed": "g1", "rules_removed": 1}
    g2 = rig.call("graph.apply", name="g2", nodes={"q": ["port:out"]})  # no rule
    assert g2["id"] == g1_id  # the id is reused
    # The entry is g1's, whose graph is gone: not g2's.
    assert rig.call("flow.get", key=F_KEY)["graph"] == "(removed)"
    assert rig.call("flow.list", graph="g2")["flows"] == []

    rig.send(flow_frames("F", "2", 3, *F))
    rig.wait_out()
    fl = rig.call("flow.get", key=F_KEY)
    assert fl["graph"] == "default" and fl["pkts"] == 6, fl  # classified again, same entry
    got = rig.stop()

    assert paths(got, "F", "1") == ["p"] * 3
    assert paths(got, "F", "2") == ["d"] * 3  # the default chain, not g2's q
    assert len(got) == rig.n_out


def test_a_graph_longer_than_the_pins_is_warned_of(launch, node, tmp_path):
    """A flow is pinned at its first --flow-pins services; past them its
    instance follows the hash buckets (which move when a replica joins).
    sluiced says so when a graph has more services than that."""
    run = launch(deployment(node, ports=[], nfs=[tag_nf("a"), tag_nf("b"), tag_nf("c")],
                            chain=["drop"], sluiced_args=["--flow-pins", "2"]))
    run.client.call("graph.apply", name="two", nodes={"a": ["b"], "b": ["drop"]})
    run.client.call("graph.apply", name="three", nodes={"a": ["b"], "b": ["c"], "c": ["drop"]})
    log = (run.run_dir / "sluiced.log").read_text()
    assert ("graph 'three' has 3 services but a flow is pinned to an instance at 2 at most "
            "(--flow-pins)") in log, log
    assert "graph 'two'" not in log, log
