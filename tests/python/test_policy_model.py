"""The compiler's correctness, by a reference model (issue 30, "Correctness,
proven"): for random chains of NFs with random declarations and templates,
and random packets, running the compiled parallel graph gives the same
output bytes and verdict as running the chain in order.

A packet is a byte string split into the regions of sluice.core.graph.REGIONS.
A model NF reads its declared regions only; from what it read, a seed of its
own and, if it has history, a digest of all it read before, it computes new
bytes for some of the bytes of each region it may write (a new length for
every region if it adds or removes headers) and a verdict among those it
may give (DROP if it drops; OUT or TO to one of two places if it routes;
NEXT). A parallel group is run as the data plane will: every member on the
packet as it entered the group, each member's copied regions taken from its
copy, the verdict of the first member in merge order whose verdict is not
NEXT. What leaves is compared: the bytes (a packet dropped has none) and
the verdict. Four tests show the check can fail: the groups OpenPATH's
Table 3 alone (Write then Write: Y), adjacent pairs alone (Fig. 8's
P(m, m+1)), a router before a writer, or an NF with history after a
dropper would allow give other bytes or verdicts."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from sluice.core.graph import ALL_REGIONS, REGIONS, GraphSpec, GroupSpec
from sluice.core.parallel import Ops, compile_data
from sluice.core.policy import PolicyError

Packet = dict[str, bytes]
Verdict = tuple[str, int]
NEXT: Verdict = ("NEXT", 0)


@dataclass
class ModelNF:
    ops: Ops
    seed: int
    state: bytes = b""  # with history: a digest of every packet it read before

    def fresh(self) -> ModelNF:
        return ModelNF(self.ops, self.seed)

    def run(self, pkt: Packet) -> tuple[Packet, Verdict]:
        seen = b"|".join(r.encode() + b"=" + pkt[r] for r in REGIONS if r in self.ops.reads)
        key = self.seed.to_bytes(8, "little")
        if self.ops.history:
            self.state = hashlib.blake2b(self.state + seen, digest_size=8).digest()
            seen += b"@" + self.state

        def h(tag: str) -> bytes:
            return hashlib.blake2b(seen + b"#" + tag.encode(), key=key).digest()

        out = dict(pkt)
        for r in self.ops.written():
            d = h(r)
            if self.ops.headers:
                out[r] = d[1:1 + d[0] % 13]
            else:  # a partial write: a byte keeps its value or gets a new one
                out[r] = bytes(d[16 + i] if d[i] & 1 else b for i, b in enumerate(pkt[r]))
        choices = [NEXT, NEXT]
        choices += [("DROP", 0)] if self.ops.drops else []
        choices += [("OUT", 0), ("OUT", 1), ("TO", 0), ("TO", 1)] if self.ops.routes else []
        return out, choices[h("verdict")[0] % len(choices)]


def run_chain(chain: tuple[str, ...], nfs: dict[str, ModelNF], pkt: Packet
              ) -> tuple[Packet, Verdict]:
    for name in chain:
        pkt, v = nfs[name].run(pkt)
        if v != NEXT:
            return pkt, v
    return pkt, NEXT


def run_group(grp: GroupSpec, nfs: dict[str, ModelNF], pkt: Packet) -> tuple[Packet, Verdict]:
    outs = {m: nfs[m].run(pkt) for m in grp.members}
    merged = dict(pkt)
    for m in grp.members:
        copied = grp.copies.get(m, [])
        regions = REGIONS if ALL_REGIONS in copied else copied
        for r in REGIONS:
            if r in regions:
                merged[r] = outs[m][0][r]
            else:  # shared, not copied: the member must not have changed it
                assert outs[m][0][r] == pkt[r], (m, r)
    v = next((outs[m][1] for m in grp.merge_order() if outs[m][1] != NEXT), NEXT)
    return merged, v


def run_graph(g: GraphSpec, exit_: str, nfs: dict[str, ModelNF], pkt: Packet
              ) -> tuple[Packet, Verdict]:
    node = g.entry_node()
    for _ in range(len(g.nodes) + 1):
        if node == exit_:
            return pkt, NEXT
        assert node is not None
        grp = g.groups.get(node)
        pkt, v = run_group(grp, nfs, pkt) if grp else nfs[node].run(pkt)
        if v != NEXT:
            return pkt, v
        node = g.nodes[node][0]
    raise AssertionError("the graph loops")


# -- random NFs, templates and packets -------------------------------------------------

regions = st.frozensets(st.sampled_from(REGIONS))
ops_st = st.builds(Ops, regions, regions, st.booleans(), st.booleans(),
                   st.sampled_from([False] * 7 + [True]), st.booleans())
packet_st = st.fixed_dictionaries({r: st.binary(max_size=12) for r in REGIONS})


@st.composite
def policies(draw: st.DrawFn) -> tuple[dict[str, object], dict[str, ModelNF]]:
    n = draw(st.integers(1, 7))
    names = [f"nf{i}" for i in range(n)]
    ops = {nf: draw(ops_st) for nf in names}
    pick = st.sampled_from(names)
    order: list[tuple[str, ...]]
    priority: list[tuple[str, str]]
    position: list[tuple[str, str]]
    if n > 1 and draw(st.integers(0, 3)):
        # most cases: templates true of a hidden order, so they never contradict
        perm = draw(st.permutations(names))
        pair = st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)).filter(
            lambda ij: ij[0] < ij[1]).map(lambda ij: (perm[ij[0]], perm[ij[1]]))
        order = [(a, "before", b) if draw(st.booleans()) else (b, "after", a)
                 for a, b in draw(st.lists(pair, max_size=3))]
        priority = draw(st.lists(pair, max_size=2))
        position = draw(st.lists(st.sampled_from([(perm[0], "first"), (perm[-1], "last")]),
                                 max_size=1))
    elif n == 1:
        order, priority, position = [], [], []
    else:  # any templates: contradictions are refused
        order = draw(st.lists(st.tuples(pick, st.sampled_from(["before", "after"]), pick),
                              max_size=3))
        priority = draw(st.lists(st.tuples(pick, pick), max_size=2))
        position = draw(st.lists(st.tuples(pick, st.sampled_from(["first", "last"])),
                                 max_size=1))
    declare = {nf: {"reads": sorted(o.reads), "writes": sorted(o.writes), "drops": o.drops,
                    "routes": o.routes, "headers": o.headers, "history": o.history}
               for nf, o in ops.items()}
    policy = {"name": "p", "nfs": names, "exit": "port:out", "declare": declare,
              "order": [list(t) for t in order], "priority": [list(t) for t in priority],
              "position": [list(t) for t in position]}
    nfs = {nf: ModelNF(o, draw(st.integers(0, 2**32))) for nf, o in ops.items()}
    return policy, nfs


def chain_keeps_templates(chain: tuple[str, ...], policy: dict[str, object]) -> None:
    at = {nf: i for i, nf in enumerate(chain)}
    for a, word, b in policy["order"]:  # type: ignore[attr-defined]
        assert (at[a] < at[b]) == (word == "before")
    for a, b in policy["priority"]:  # type: ignore[attr-defined]
        assert at[a] < at[b]
    for a, word in policy["position"]:  # type: ignore[attr-defined]
        assert at[a] == (0 if word == "first" else len(chain) - 1)


@settings(max_examples=400, deadline=None)
@given(policies(), st.lists(packet_st, min_size=1, max_size=4))
def test_compiled_graph_gives_the_chain_bytes_and_verdict(
        case: tuple[dict[str, object], dict[str, ModelNF]], packets: list[Packet]) -> None:
    policy, nfs = case
    try:
        c = compile_data({"policy": policy})
    except PolicyError as e:
        # only contradicting templates are refused (declarations are all valid here)
        assert all("templates contradict" in i or "cannot be" in i or "cannot win" in i
                   or "only one NF" in i for i in e.issues), e.issues
        return
    chain_keeps_templates(c.policy.chain, policy)
    allowed = {(a, b) for a, b in policy["priority"]}  # type: ignore[attr-defined]
    if consented(c.graph.groups.values(), nfs, allowed):
        # the operator let an NF with history see packets an earlier member drops or
        # routes away: from the second packet on its state may differ from the chain's
        packets = packets[:1]
    seq = {k: v.fresh() for k, v in nfs.items()}
    par = {k: v.fresh() for k, v in nfs.items()}
    for pkt in packets:
        assert output(run_graph(c.graph, "port:out", par, pkt)) == \
            output(run_chain(c.policy.chain, seq, pkt))


def consented(groups: Iterable[GroupSpec], nfs: dict[str, ModelNF],
              allowed: set[tuple[str, str]]) -> bool:
    """Whether a group has a member with history after one that may drop or
    route, which a priority template allowed."""
    for g in groups:
        for i, a in enumerate(g.members):
            x = nfs[a].ops
            if (x.drops or x.routes) and any(nfs[b].ops.history and (a, b) in allowed
                                             for b in g.members[i + 1:]):
                return True
    return False


def output(res: tuple[Packet, Verdict]) -> tuple[bytes | None, Verdict]:
    """What leaves: the packet's bytes and verdict (a dropped packet has no bytes)."""
    pkt, v = res
    return (None if v[0] == "DROP" else b"".join(pkt[r] for r in REGIONS)), v


# -- the check can fail: what the refinements prevent ----------------------------------

PKT: Packet = {r: bytes(range(8)) for r in REGIONS}


def _differs(members: list[str], nfs: dict[str, ModelNF], copies: dict[str, list[str]]) -> bool:
    grp = GroupSpec(members=members, copies=copies, merge=members)
    pkts = [{r: bytes([s, s + 1, s + 2, s + 3]) for r in REGIONS} for s in range(64)]
    return any(output(run_group(grp, nfs, p)) != output(run_chain(tuple(members), nfs, p))
               for p in pkts)


def test_table3_write_write_group_would_lose_bytes() -> None:
    """Two writers of l3_other in one group (Table 3: Y) lose one's bytes."""
    nfs = {"a": ModelNF(Ops.of(("l3_addr",), ("l3_other",)), 1),
           "b": ModelNF(Ops.of(("l4_ports",), ("l3_other",)), 2)}
    assert _differs(["a", "b"], nfs, {"a": ["l3_other"], "b": ["l3_other"]})
    c = compile_data({"policy": {"name": "p", "nfs": ["a", "b"], "declare": {
        "a": {"reads": ["l3_addr"], "writes": ["l3_other"]},
        "b": {"reads": ["l4_ports"], "writes": ["l3_other"]}}}})
    assert c.nodes == (("a",), ("b",))


def test_adjacent_pairs_alone_would_make_a_wrong_group() -> None:
    """a, b and b, c are parallel but a, b, c is not a group: c reads a's writes."""
    nfs = {"a": ModelNF(Ops.of((), ("l3_addr",)), 1), "b": ModelNF(Ops.of(("payload",)), 2),
           "c": ModelNF(Ops.of(("l3_addr",), drops=True), 3)}
    assert _differs(["a", "b", "c"], nfs, {"a": ["l3_addr"]})
    c = compile_data({"policy": {"name": "p", "nfs": ["a", "b", "c"], "declare": {
        "a": {"writes": ["l3_addr"]}, "b": {"reads": ["payload"]},
        "c": {"reads": ["l3_addr"], "drops": True}}}})
    assert c.nodes == (("a", "b"), ("c",))


def test_router_then_writer_group_would_leak_writes() -> None:
    """A packet the first member sends OUT would leave with the second's writes."""
    nfs = {"r": ModelNF(Ops.of(("l3_addr",), routes=True), 5),
           "w": ModelNF(Ops.of(("l4_ports",), ("l2",)), 6)}
    assert _differs(["r", "w"], nfs, {"w": ["l2"]})


def test_history_after_a_dropper_would_change_later_verdicts() -> None:
    """The second packet: a stateful NF that also saw the packet the first
    member dropped decides otherwise (Table 3: Modify Flow first: N)."""
    d = ModelNF(Ops.of(("l3_addr",), drops=True), 7)
    h = ModelNF(Ops.of(("l4_ports",), drops=True, history=True), 8)
    grp = GroupSpec(members=["d", "h"], merge=["d", "h"])

    def differs(pkts: list[Packet]) -> bool:
        seq, par = {"d": d.fresh(), "h": h.fresh()}, {"d": d.fresh(), "h": h.fresh()}
        return any(output(run_group(grp, par, p)) != output(run_chain(("d", "h"), seq, p))
                   for p in pkts)

    assert any(differs([{r: bytes([s, t]) for r in REGIONS} for s in range(8)])
               for t in range(8))
    c = compile_data({"policy": {"name": "p", "nfs": ["d", "h"], "declare": {
        "d": {"reads": ["l3_addr"], "drops": True},
        "h": {"reads": ["l4_ports"], "drops": True, "history": True}}}})
    assert c.nodes == (("d",), ("h",))
    c = compile_data({"policy": {"name": "p", "nfs": ["d", "h"], "priority": [["d", "h"]],
                                 "declare": {"d": {"reads": ["l3_addr"], "drops": True},
                                             "h": {"reads": ["l4_ports"], "history": True}}}})
    assert c.nodes == (("d", "h"),)


# -- bad input: a PolicyError, never a crash -------------------------------------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(
        ["firewall", "nat", "ids", "before", "after", "first", "last", "l2", "payload", "x",
         "port:out", "drop", "10.0.0.0/8", ""]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["name", "nfs", "order", "priority", "position", "match", "exit",
                         "declare", "reads", "writes", "drops", "nat", "dst", "y"]),
        inner, max_size=4),
    max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["name", "nfs", "order", "priority", "position",
                                        "match", "exit", "declare", "other"]), _json))
def test_any_policy_data_is_compiled_or_refused(policy: dict[str, object]) -> None:
    try:
        c = compile_data({"policy": {"name": "p", "nfs": ["firewall", "nat"], **policy}})
    except PolicyError as e:
        assert e.issues and all(i.startswith("<policy>: ") for i in e.issues)
    else:
        assert c.explain() and c.to_json()["graph"]["name"] == c.policy.name
