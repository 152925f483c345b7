"""NF operations, the dependency analysis and the parallel graph (issue 30).

Each NF declares its operations (``Ops``): the packet regions it reads and
may write (``graph.REGIONS``: L2, L3 addresses, L3 other fields such as
TTL, DSCP and the header checksum, L4 ports, L4 other fields such as flags
and the checksum, payload), whether it may drop, may change routing (TO,
OUT, SkipMe, RequestMe, ChangeDefault), adds or removes headers, and has
*history* (its verdicts or writes depend on the packets it saw before:
per-flow state, meters, sampling).
``DECLARATIONS`` holds them for every sample NF (from its README and its
``SL_ACCESS_*``); a policy's ``declare:`` overrides them.

The analysis is OpenPATH's (§5.2, Fig. 8): for each pair of NFs of the
chain, the first one's operations against the second's in the capability
table (Table 3) give *parallel without copy*, *parallel with copy* or *not
parallel*. OpenPATH's tables are kept verbatim (``OPENPATH_OPERATIONS``,
``OPENPATH_CAPABILITIES``, ``openpath_parallel``); Sluice applies them per
region, which is finer (two writers of disjoint fields may run in parallel)
and, in two cells, stricter or looser, with the reason:

* Write then Write (Table 3: Y) is *not parallel* when the two write the
  same region: the join takes each region from one writer's copy, so one
  writer's bytes would be lost;
* Modify Flow then anything (Table 3: N) is parallel when the second NF
  writes nothing (or the first only drops) and has no history: verdicts
  merge in chain order (the first member whose verdict is not NEXT
  decides, SDNFV §4.2's "priorities associated with each VM"), which is
  the chain's verdict. An NF with history would also see the packets the
  first one drops or sends away, and its later verdicts could differ: a
  Priority template ``[A, B]`` (OpenPATH: "the Priority of one NF over
  another NF, in parallel execution") says the operator wants them in
  parallel all the same.

The graph (§5.3): the chain cut, left to right, into the longest runs of
NFs that are parallel two by two (not only adjacent ones: OpenPATH's
P(m, m+1) is for adjacent pairs, and its §4 dependency matrix is what a
group of three needs). Pairwise compatibility is hereditary, so this greedy
cut has the fewest nodes. A run of two or more is a parallel group
(``graph.GroupSpec``): members, the regions each writer gets a copy of, and
the merge order. ``tests/python/test_policy_model.py`` checks, on random
chains, declarations, templates and packets, that the compiled graph gives
the bytes and verdict of the chain.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .graph import ALL_REGIONS, REGIONS, GraphSpec, GroupSpec, format_match, rule_params
from .policy import DeclSpec, Policy, parse_policy

PARALLEL, COPY, SEQUENTIAL = "parallel", "copy", "sequential"
MODE_TEXT = {PARALLEL: "parallel, no copy", COPY: "parallel with a copy",
             SEQUENTIAL: "not parallel"}


@dataclass(frozen=True)
class Ops:
    """An NF's declared operations."""

    reads: frozenset[str] = frozenset()
    writes: frozenset[str] = frozenset()
    drops: bool = False
    routes: bool = False
    headers: bool = False
    history: bool = False  # its verdicts or writes depend on the packets it saw before

    @classmethod
    def of(cls, reads: Iterable[str] = (), writes: Iterable[str] = (), drops: bool = False,
           routes: bool = False, headers: bool = False, history: bool = False) -> Ops:
        return cls(frozenset(reads), frozenset(writes), drops, routes, headers, history)

    @classmethod
    def from_decl(cls, d: DeclSpec) -> Ops:
        return cls.of(d.reads, d.writes, d.drops, d.routes, d.headers, d.history)

    def written(self) -> frozenset[str]:
        """The regions it may change: all of them if it adds or removes headers."""
        return frozenset(REGIONS) if self.headers else self.writes

    def copy_regions(self) -> list[str]:
        """What it gets a copy of in a group: its regions, or all (a whole copy)."""
        return [ALL_REGIONS] if self.headers else [r for r in REGIONS if r in self.writes]

    def text(self) -> str:
        parts = [f"reads {_regions(self.reads) or 'nothing'}"]
        if self.written():
            parts.append(f"writes {_regions(self.written())}")
        parts += [w for w, on in (("drops", self.drops), ("routes", self.routes),
                                  ("adds/removes headers", self.headers),
                                  ("has history", self.history)) if on]
        return ", ".join(parts)


_HDR = ("l2", "l3_addr", "l3_other", "l4_ports")
# The sample NFs (nfs/*/README.md, their SL_ACCESS_* and what they touch).
DECLARATIONS: Mapping[str, Ops] = {
    # sends everything on (--to, --out, --bridge: by option, not by the packet);
    # --tag-src-mac writes l2 (declare it if used)
    "forward": Ops.of(routes=True),
    # 5-tuple rules (protocol in l3_other), the ethertype for --non-ip; deny = DROP;
    # --stateful (connection tracking) also reads l4_other and has history: declare it
    "firewall": Ops.of(_HDR, drops=True),
    "monitor": Ops.of(_HDR),  # counts per class and flow; always NEXT
    "flowclass": Ops.of(("l3_addr", "l3_other", "l4_ports"), routes=True, history=True),  # rates
    "ddos-detect": Ops.of(("l3_addr", "l3_other", "l4_ports", "l4_other")),  # SYNs; Message only
    "scrubber": Ops.of(("l3_addr",), drops=True, routes=True),  # RequestMe, DROP
    # addresses, ports, both checksums, the header embedded in ICMP errors
    "nat": Ops.of(REGIONS[1:], REGIONS[1:], drops=True, routes=True, history=True),
    # MACs, TTL and checksum; OUT(port); drops TTL-expired and unrouted packets
    "l3fwd": Ops.of(("l2", "l3_addr", "l3_other"), ("l2", "l3_other"), drops=True, routes=True),
    # destination address, MACs, checksums; OUT(port)
    "lb": Ops.of(_HDR, ("l2", "l3_addr", "l3_other", "l4_other"), drops=True, routes=True,
                 history=True),  # connections
    # ESP tunnel: encapsulates and decapsulates
    "vpn": Ops.of(REGIONS, REGIONS, drops=True, routes=True, headers=True, history=True),
    # signatures over a flow's stream; drop, TO, ChangeDefault
    "ids": Ops.of(REGIONS[1:], drops=True, routes=True, history=True),
    # TO(--to) 1 in N: the draws follow the packets it sees
    "sampler": Ops.of(("l3_addr", "l3_other", "l4_ports"), routes=True, history=True),
    # meters (tokens spent by the packets it sees); remarks DSCP
    "shaper": Ops.of(("l3_addr", "l3_other", "l4_ports"), ("l3_other",), drops=True, history=True),
    # nDPI names a flow from its first packets; TO and DROP by its rules
    "dpi": Ops.of(REGIONS[1:], drops=True, routes=True, history=True),
}

# OpenPATH Table 2 (operation table): packet operation, and whether the VNF
# can modify the flow (Y) -- verbatim, with the paper's names.
OPENPATH_OPERATIONS: Mapping[str, tuple[str, bool]] = {
    "Firewall": ("R", True), "Gateway": ("", False),
    "Intrusion Detection System (IDS)": ("R", False),
    "Video Optimization Controller (VOC)": ("R", False), "Netcache": ("R", False),
    "Virtual Private Networking (VPN)": ("R/W", True),
    "Network Address Translation (NAT)": ("R/W", False),
    "WAN Optimization and Bandwidth Shaper": ("R/W", False), "Traffic Monitor": ("R", False),
}
READ, WRITE, FLOW = "Read Packet", "Write Packet", "Modify Flow"
# OpenPATH Table 3 (capabilities): (first VNF's action, second VNF's action) -> Y/N.
OPENPATH_CAPABILITIES: Mapping[tuple[str, str], bool] = {
    (READ, READ): True, (READ, WRITE): True, (READ, FLOW): True,
    (WRITE, READ): False, (WRITE, WRITE): True, (WRITE, FLOW): True,
    (FLOW, READ): False, (FLOW, WRITE): False, (FLOW, FLOW): False,
}


def openpath_actions(packet: str, flow: bool) -> set[str]:
    """A Table 2 row as Table 3's actions."""
    out = {READ} if "R" in packet else set()
    out |= {WRITE} if "W" in packet else set()
    return out | ({FLOW} if flow else set())


def openpath_parallel(first: tuple[str, bool], second: tuple[str, bool]) -> bool:
    """OpenPATH's P(m, m+1) for two Table 2 rows: every action of the first
    against every action of the second is Y in Table 3."""
    return all(OPENPATH_CAPABILITIES[a, b] for a in openpath_actions(*first)
               for b in openpath_actions(*second))


@dataclass(frozen=True)
class Pair:
    """The analysis of ``a`` then ``b`` (a before b in the chain)."""

    a: str
    b: str
    mode: str  # PARALLEL, COPY or SEQUENTIAL
    reasons: tuple[str, ...]

    def text(self) -> str:
        return f"{self.a}, {self.b}: {MODE_TEXT[self.mode]}: {'; '.join(self.reasons)}"

    def to_json(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "mode": self.mode, "reasons": list(self.reasons)}


def _regions(rs: Iterable[str]) -> str:
    s = set(rs)
    return ", ".join(r for r in REGIONS if r in s)


def analyse(a: str, x: Ops, b: str, y: Ops, consent: str = "") -> Pair:
    """Whether ``b`` may run in parallel with ``a``, which is before it, and
    why. ``consent``: the priority template ``[a, b]`` (its label), if the
    policy has one: it lets ``b`` see the packets ``a`` drops or routes away."""
    raw, waw = x.written() & y.reads, x.written() & y.written()
    if raw:
        why = f"{b} reads {_regions(raw)}, which {a} writes (read after write: Table 3 N)"
        if x.headers:
            why += f"; {a} adds or removes headers, so {b}'s regions move"
        return Pair(a, b, SEQUENTIAL, (why,))
    if waw:
        return Pair(a, b, SEQUENTIAL, (
            f"both write {_regions(waw)}: the join takes a region from one writer, so the "
            f"other's bytes would be lost (Table 3 says Y for Write then Write; per region, "
            f"Sluice keeps them in sequence)",))
    if x.routes and y.written():
        return Pair(a, b, SEQUENTIAL, (
            f"{a} may route the packet away (TO, OUT or a flow request) and {b} writes "
            f"{_regions(y.written())}: a packet {a} sends away would leave with {b}'s "
            f"writes (Table 3: Modify Flow then Write: N)",))
    decides = " or ".join(w for w, on in (("drops", x.drops), ("routes away", x.routes)) if on)
    if decides and y.history and not consent:
        return Pair(a, b, SEQUENTIAL, (
            f"{a} {decides} packets that {b} would see in parallel, and {b} has history (its "
            f"verdicts depend on the packets it saw before): they could differ from the "
            f"chain's (Table 3: Modify Flow first: N); priority [{a}, {b}] runs them in "
            f"parallel all the same",))
    reasons = []
    if y.written() & x.reads:
        reasons.append(f"{b} writes {_regions(y.written() & x.reads)}, which {a} reads: {b} "
                       f"works on a copy (write after read: Table 3 Y)")
    elif y.written():
        reasons.append(f"{b} writes {_regions(y.written())}, which {a} does not touch: {b} "
                       f"gets a copy of them")
    if x.written():
        reasons.append(f"{a} writes {_regions(x.written())}, which {b} does not touch: {a} "
                       f"gets a copy of them")
    if not (x.written() or y.written()):
        reasons.append("neither writes: both read the same packet (Table 3: Read then "
                       "Read: Y)")
    if decides:
        seen = (f"{consent} lets {b}, which has history, see them all the same" if y.history
                else f"{b} has no history, so only its counters notice")
        reasons.append(f"{a} {decides}: its verdict wins the merge over {b}'s, as in the chain "
                       f"(Table 3 says N for Modify Flow first; {b} also sees the packets "
                       f"{a} {decides}: {seen})")
    return Pair(a, b, COPY if x.written() or y.written() else PARALLEL, tuple(reasons))


def service_table(services: Iterable[tuple[str, str]],
                  table: Mapping[str, Ops] = DECLARATIONS) -> dict[str, Ops]:
    """``table`` with each service of ``services`` ((service, program) pairs:
    a deployment's NFs, sluiced's nf.list) given the operations of its
    program's NF kind (``sluice-firewall``: the firewall's); a service the
    table names already, or whose program it does not know, is left as is."""
    out = dict(table)
    for service, program in services:
        kind = program.rsplit("/", 1)[-1].removeprefix("sluice-")
        if service not in out and kind in table:
            out[service] = table[kind]
    return out


def declarations(policy: Policy, table: Mapping[str, Ops] = DECLARATIONS) -> dict[str, Ops]:
    """Every NF of the policy's operations: its ``declare:`` or the table's."""
    out = {}
    for nf in policy.spec.nfs:
        d = policy.spec.declare.get(nf)
        out[nf] = Ops.from_decl(d) if d is not None else table[nf]
    return out


@dataclass(frozen=True)
class Compiled:
    """A compiled policy: the chain, each adjacent pair's analysis, the nodes
    (a tuple of one NF, or of a group's members) and the graph."""

    policy: Policy
    ops: Mapping[str, Ops]
    pairs: tuple[Pair, ...]
    nodes: tuple[tuple[str, ...], ...]
    breaks: Mapping[str, Pair]  # NF that starts a node after a parallel pair -> the conflict
    graph: GraphSpec
    rules: tuple[dict[str, Any], ...] = field(default=())

    def explain(self) -> list[str]:
        """For every adjacent pair of the chain: why it runs in parallel, with a
        copy, or not at all; then the graph."""
        out = [f"policy {self.policy.name}: chain {' -> '.join(self.policy.chain)}"]
        out += [f"  {t.text()}" for t in self.policy.templates]
        for nf in self.policy.chain:
            out.append(f"  {nf}: {self.ops[nf].text()}")
        for p in self.pairs:
            line = p.text()
            brk = self.breaks.get(p.b)
            if brk is not None:
                line += (f"; but {p.b} cannot join the group: {brk.a}, {brk.b}: "
                         f"{MODE_TEXT[brk.mode]}: {'; '.join(brk.reasons)}")
            out.append(line)
        return out + self.lines()

    def lines(self) -> list[str]:
        """The graph, one node a line, groups with their members; its rules."""
        g = self.graph
        out = [f"graph {g.name}: entry {g.entry_node()}, {len(self.nodes)} node(s), "
               f"{len(g.groups)} parallel group(s)"]
        for name, hops in g.nodes.items():
            grp = g.groups.get(name)
            text = name
            if grp is not None:
                copies = "; ".join(f"{m} copies {', '.join(rs)}" for m, rs in grp.copies.items())
                text = (f"{name} = [{' | '.join(grp.members)}] (merge "
                        f"{' > '.join(grp.merge_order())}; {copies or 'no copy'})")
            out.append(f"  {text} -> {', '.join(hops)}")
        out += [f"rule: {format_match(r)} (priority {r['priority']}) -> graph {g.name}"
                for r in self.rules]
        return out

    def to_json(self) -> dict[str, Any]:
        g = self.graph
        graph: dict[str, Any] = {"name": g.name, "entry": g.entry_node(),
                                 "nodes": {k: list(v) for k, v in g.nodes.items()},
                                 "groups": {k: v.model_dump() for k, v in g.groups.items()}}
        graph["match"] = [{k: v for k, v in r.items() if k != "graph"} for r in self.rules]
        return {"policy": self.policy.name, "chain": list(self.policy.chain),
                "nodes": [list(n) for n in self.nodes],
                "pairs": [p.to_json() for p in self.pairs], "graph": graph}


def consents(policy: Policy) -> dict[tuple[str, str], str]:
    """(a, b) -> the label of the priority template [a, b]."""
    out: dict[tuple[str, str], str] = {}
    for t in policy.templates:
        if t.kind == "priority" and t.b is not None:
            out.setdefault((t.a, t.b), t.label)
    return out


def group_nodes(chain: tuple[str, ...], ops: Mapping[str, Ops],
                consent: Mapping[tuple[str, str], str] | None = None
                ) -> tuple[list[tuple[str, ...]], dict[str, Pair]]:
    """The chain cut into the longest runs parallel two by two, and for each
    NF that starts a run after a parallel adjacent pair, the conflict."""
    nodes: list[tuple[str, ...]] = []
    breaks: dict[str, Pair] = {}
    cur: list[str] = []
    for nf in chain:
        bad = next((p for p in (analyse(m, ops[m], nf, ops[nf], (consent or {}).get((m, nf), ""))
                                for m in cur)
                    if p.mode == SEQUENTIAL), None)
        if cur and bad is not None:
            if bad.a != cur[-1]:
                breaks[nf] = bad
            nodes.append(tuple(cur))
            cur = []
        cur.append(nf)
    if cur:
        nodes.append(tuple(cur))
    return nodes, breaks


def compile_policy(policy: Policy, table: Mapping[str, Ops] = DECLARATIONS) -> Compiled:
    """The policy's graph with maximal parallel groups (see the module's text)."""
    ops = declarations(policy, table)
    chain = policy.chain
    ok = consents(policy)
    pairs = tuple(analyse(a, ops[a], b, ops[b], ok.get((a, b), ""))
                  for a, b in zip(chain, chain[1:], strict=False))
    nodes, breaks = group_nodes(chain, ops, ok)
    names: list[str] = []
    groups: dict[str, GroupSpec] = {}
    for members in nodes:
        if len(members) == 1:
            names.append(members[0])
            continue
        k = len(groups) + 1
        name = f"parallel-{k}"
        while name in chain:
            name += "x"
        groups[name] = GroupSpec(members=list(members), merge=list(members), copies={
            m: ops[m].copy_regions() for m in members if ops[m].written()})
        names.append(name)
    spec = policy.spec
    hops: dict[str, list[str]] = {}
    for i, (n, members) in enumerate(zip(names, nodes, strict=True)):
        out = [names[i + 1] if i + 1 < len(names) else spec.exit]
        for m in members:  # a node's other hops: its NFs' (a group's: its members')
            out += [h for h in spec.hops.get(m, []) if h not in out]
        hops[n] = out
    graph = GraphSpec(name=spec.name, entry=names[0], nodes=hops, match=spec.matches(),
                      groups=groups)
    rules = tuple(rule_params(m, spec.name) for m in spec.matches())
    return Compiled(policy, ops, pairs, tuple(nodes), breaks, graph, rules)


def compile_data(data: Any, source: str = "<policy>",
                 table: Mapping[str, Ops] = DECLARATIONS) -> Compiled:
    """A parsed policy file checked (``policy.parse_policy``) and compiled."""
    return compile_policy(parse_policy(data, source, known=list(table)), table)
