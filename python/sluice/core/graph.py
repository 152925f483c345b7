"""Service graphs and the rules that send flows to them (docs/graphs.md).

A graph file lists graphs (and, optionally, rules)::

    graphs:
      - name: anomaly
        entry: firewall            # optional, default: the first node
        nodes:                     # service -> allowed next hops, the first is the default
          firewall: [sampler, drop]
          sampler: [ids, ddos-detect]
          ids: [scrubber]
          ddos-detect: [scrubber]
          scrubber: ["port:out", drop]
        match:                     # optional: rules that send flows to this graph
          - {priority: 10, proto: udp, dst: 10.0.0.0/8, dport: 53, in_port: in}
    rules:                         # optional: more rules, each naming its graph
      - {graph: anomaly, proto: tcp, dport: 80}

A deployment file may hold the same ``graphs:`` and ``rules:`` keys. Everything
is checked here, before anything reaches sluiced (which checks again): every
problem is one line that names the key path, the graph and the node, and
says what to do::

    anomaly.yaml: graphs[0].nodes.sampler[1]: graph 'anomaly': node 'sampler': edge to
    'idss', which is not a node of this graph (add it under nodes, or use port:NAME or
    drop); did you mean 'ids'?

``load_graphs(path)`` reads and checks a file, ``validate(...)`` checks
graphs and rules already parsed (optionally against the services of a
deployment's NFs and its ports), ``to_rpc(graph)`` gives the params of
``graph.apply`` and ``rule_params(...)`` those of ``rule.add``.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import networkx as nx
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .errors import SluiceError, pydantic_issues
from .errors import did_you_mean as did_you_mean  # api.py and cli.py import it from here
from .errors import kind_of as kind_of
from .errors import list_words as _list
from .errors import show_value as show_value

DOC = "docs/graphs.md"

DEFAULT_GRAPH = "default"  # the chain: chain.set writes it, chain.get reads it
# Protocol names sluiced knows (sl_match.h); other protocols go by number.
PROTOS = {"tcp": 6, "udp": 17, "icmp": 1, "icmp6": 58, "icmpv6": 58, "sctp": 132,
          "gre": 47, "esp": 50, "ah": 51}
PORT_PROTOS = (6, 17, 132)  # protocols with ports: a rule may give sport/dport
ANY = "any"  # a field that says "any" is a wildcard, as if left out
_ANY_KEYS = ("proto", "src", "dst", "sport", "dport", "port")
MIN_PRIORITY, MAX_PRIORITY = -1000000, 1000000
MATCH_KEYS = ("priority", "proto", "src", "dst", "sport", "dport", "in_port")

_GRAPH_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,30}$")
_SERVICE_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,30}$")
_PORT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,30}$")
_RANGE_RE = re.compile(r"^\s*([0-9]{1,10})\s*-\s*([0-9]{1,10})\s*$")


class GraphError(SluiceError):
    """One or more problems in a graph file (or in graphs given otherwise), one line each."""

    def __init__(self, issues: list[str]):
        super().__init__("\n".join(issues))
        self.issues = issues


# -- schema -------------------------------------------------------------------------

class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


# The schema of graphs, matches and rules, for a deployment or graph file and
# the REST API alike (sluice.api.models takes its bodies' fields from these:
# the descriptions are what /docs shows).
HOP_DOC = "a service of the graph, port:NAME or drop"
PORTS_DOC = "a number 0-65535, \"LO-HI\" or \"any\""
_PREFIX_DOC = "A prefix or address (IPv4 or IPv6), or any."


class MatchSpec(_Strict):
    """A rule inside a graph (its graph is that graph). Values are checked by
    ``validate`` (their messages name the graph), not by the schema."""

    priority: Any = Field(0, description="-1000000 to 1000000: the highest wins; between "
                                         "equal ones, the older rule.")
    proto: Any = Field(None, description="tcp, udp, icmp, icmp6, sctp, gre, esp, ah, any or "
                                         "a number 0-255", examples=["udp"])
    src: Any = Field(None, description=_PREFIX_DOC, examples=["10.0.0.0/8"])
    dst: Any = Field(None, description=_PREFIX_DOC)
    sport: Any = Field(None, description=PORTS_DOC)
    dport: Any = Field(None, description=PORTS_DOC, examples=[53])
    in_port: Any = Field(None, description="Only packets that came in on this port (its "
                                           "name).")


class RuleSpec(MatchSpec):
    """A rule of the top-level ``rules:`` list: a match and the graph it sends flows to."""

    graph: str = Field(description="New flows that match go to this graph.",
                       examples=["anomaly"])


# The regions of a packet an NF's access declaration names (sluice.core.policy):
# the bytes a parallel group's member may read or write.
REGIONS = ("l2", "l3_addr", "l3_other", "l4_ports", "l4_other", "payload")
ALL_REGIONS = "all"  # a whole copy: a member that adds or removes headers


class GroupSpec(_Strict):
    """A node that is a parallel group (compiled by ``sluice graph compile``):
    a packet entering it goes to every member at once; sluiced runs the
    members in sequence (``flatten``) until issue 30's data plane lands."""

    members: list[str] = Field(description="The services of the group, in chain order.",
                               examples=[["firewall", "ids", "monitor"]])
    copies: dict[str, list[str]] = Field(
        {}, description="Member -> the regions it may write (it gets a copy of them; the "
                        "join takes them from it): " + ", ".join(REGIONS) + ", or all.")
    merge: list[str] = Field(
        [], description="The members in the order their verdicts win: the first one whose "
                        "verdict is not NEXT decides (default: members).")

    def merge_order(self) -> list[str]:
        return list(self.merge) or list(self.members)


class GraphSpec(_Strict):
    name: str
    entry: str | None = Field(None, description="The first node (default: the first of "
                                                "nodes).")
    nodes: dict[str, list[str]] = Field(
        description=f"Service -> its allowed next hops ({HOP_DOC}); the first is the default.",
        examples=[{"fw": ["mon", "drop"], "mon": ["port:out"]}])
    match: list[MatchSpec] = []
    groups: dict[str, GroupSpec] = Field(
        {}, description="Nodes that are parallel groups: node name -> its members (docs/"
                        "graphs.md, \"Parallel groups\").")

    @field_validator("nodes", mode="before")
    @classmethod
    def _nodes(cls, v: Any) -> Any:
        # a lone hop is a list of one (`ids: scrubber`); no hop (`ids:`) is an
        # empty list, which validate() reports as a node without a default
        if isinstance(v, dict):
            return {k: [h] if isinstance(h, str) else [] if h is None else h
                    for k, h in v.items()}
        return v

    def entry_node(self) -> str | None:
        """The entry: ``entry`` if given, else the first node."""
        if self.entry is not None:
            return self.entry
        return next(iter(self.nodes), None)

    def describe(self) -> str:
        return f"{self.name} ({len(self.nodes)} node(s), entry {self.entry_node()})"


class GraphSet(_Strict):
    """A graph file: graphs, and rules that name their graph."""

    graphs: list[GraphSpec] = []
    rules: list[RuleSpec] = []

    def rule_params(self) -> list[dict[str, Any]]:
        """The ``rule.add`` params of every rule: each graph's ``match``, then ``rules``."""
        out = [rule_params(m, g.name) for g in self.graphs for m in g.match]
        return out + [rule_params(r) for r in self.rules]

    def describe(self) -> str:
        n_rules = len(self.rule_params())
        return (f"{len(self.graphs)} graph(s) ({', '.join(g.name for g in self.graphs) or '-'}), "
                f"{n_rules} rule(s)")


# -- loading ------------------------------------------------------------------------

def parse_graphs(data: Any, source: str = "<graphs>", services: Iterable[str] | None = None,
                 ports: Iterable[str] | None = None) -> GraphSet:
    """Checks a parsed graph file; raises GraphError (lines start with ``source``)."""
    if data is None:
        raise GraphError([f"{source}: the file is empty; a graph file needs graphs: "
                          f"(see {DOC})"])
    if not isinstance(data, dict):
        raise GraphError([f"{source}: expected a mapping with keys graphs, rules; got "
                          f"{kind_of(data)} (see {DOC})"])
    if "graphs" not in data:
        raise GraphError([f"{source}: no graphs: a graph file lists them under graphs: "
                          f"(see {DOC})"])
    try:
        gs = GraphSet.model_validate(data)
    except ValidationError as e:
        raise GraphError([f"{source}: {m}"
                          for m in pydantic_issues(e, GraphSet, data, doc=DOC)]) from None
    issues = validate(gs.graphs, gs.rules, services, ports)
    if not gs.graphs:
        issues.insert(0, "graphs: empty: list at least one graph")
    if issues:
        raise GraphError([f"{source}: {m}" for m in issues])
    return gs


# -- checks -------------------------------------------------------------------------

def validate(graphs: Sequence[GraphSpec], rules: Sequence[RuleSpec] = (),
             services: Iterable[str] | None = None, ports: Iterable[str] | None = None,
             allow_default: bool = True) -> list[str]:
    """Problems of graphs and rules, one line each (``key.path: message``).

    ``services``: the services the graphs may use (a deployment's NFs); None
    does not check. ``ports``: the port names; None does not check.
    ``allow_default``: whether a graph may be called "default" (the chain;
    a deployment sets it with ``chain:``)."""
    svc = list(services) if services is not None else None
    prt = list(ports) if ports is not None else None
    issues: list[str] = []
    names: dict[str, int] = {}
    for i, g in enumerate(graphs):
        where = f"graphs[{i}]"
        if g.name in names:
            issues.append(f"{where}.name: graph '{g.name}' is already declared at "
                          f"graphs[{names[g.name]}]: give each graph its own name")
        else:
            names[g.name] = i
        issues += graph_issues(g, where, svc, prt, allow_default)
    known = list(names) + [DEFAULT_GRAPH]
    for i, r in enumerate(rules):
        where = f"rules[{i}]"
        if r.graph not in known:
            options = list(names) or ["..."]
            issues.append(f"{where}.graph: no graph named '{r.graph}' (graphs: "
                          f"{', '.join(known)}): name one of them, or add graph "
                          f"'{r.graph}' under graphs{did_you_mean(r.graph, options)}")
        _, problems = match_params(_fields(r, exclude="graph"), prt)
        issues += [f"{where}.{k}: rule for graph '{r.graph}': {m}" for k, m in problems]
    return issues


def graph_issues(g: GraphSpec, where: str = "graph", services: list[str] | None = None,
                 ports: list[str] | None = None, allow_default: bool = True) -> list[str]:
    """Problems of one graph; ``where`` is its key path (``graphs[0]``)."""
    issues: list[str] = []
    gname = f"graph '{g.name}'"
    if not _GRAPH_RE.match(g.name):
        issues.append(f"{where}.name: {g.name!r} is not a valid graph name: use 1-31 "
                      f"letters, digits, '_', '.' or '-', starting with a letter")
    elif g.name == DEFAULT_GRAPH and not allow_default:
        issues.append(f"{where}.name: graph 'default' is the chain: set it with chain:, "
                      f"or give this graph another name")
    nodes = list(g.nodes)
    if not nodes:
        return issues + [f"{where}.nodes: {gname}: no nodes: list at least one, e.g. "
                         f"firewall: [\"port:out\", drop]"]
    entry = g.entry_node()
    if g.entry is not None and g.entry not in g.nodes:
        issues.append(f"{where}.entry: {gname}: entry '{g.entry}' is not a node of this "
                      f"graph (nodes: {', '.join(nodes)}): name one of them, or leave entry "
                      f"out to start at the first node{did_you_mean(g.entry, nodes)}")
        entry = None
    dag: nx.DiGraph[str] = nx.DiGraph()
    dag.add_nodes_from(nodes)
    for node, hops in g.nodes.items():
        at = f"{where}.nodes.{node}"
        what = f"{gname}: node '{node}'"
        if node == "drop" or node.startswith("port:"):
            issues.append(f"{at}: {gname}: '{node}' cannot be a node: ports and drop are "
                          f"where a graph ends; list them as next hops of a node")
            continue
        if not _SERVICE_RE.match(node):
            issues.append(f"{at}: {what}: not a valid service name: use 1-31 letters, "
                          f"digits, '_', '.' or '-', starting with a letter")
            continue
        if services is not None and node not in services and node not in g.groups:
            issues.append(f"{at}: {what}: no NF in nfs has service '{node}' (services: "
                          f"{_list(services)}): add an NF with service '{node}' or fix the "
                          f"name{did_you_mean(node, services)}")
        if not hops:
            issues.append(f"{at}: {what} has no next hop: list at least one (the first is "
                          f"the default), e.g. [\"port:out\"] or [drop]")
            continue
        seen: set[str] = set()
        for j, hop in enumerate(hops):
            hat = f"{at}[{j}]"
            if hop in seen:
                issues.append(f"{hat}: {what}: next hop '{hop}' is listed twice: list each "
                              f"once")
                continue
            seen.add(hop)
            if hop == "drop":
                continue
            if hop.startswith("port:"):
                port = hop[5:]
                if not _PORT_RE.match(port):
                    issues.append(f"{hat}: {what}: '{hop}' names no valid port: write "
                                  f"port:NAME with a port of the node")
                elif ports is not None and port not in ports:
                    issues.append(f"{hat}: {what}: no port named '{port}' (ports: "
                                  f"{_list(ports)}){did_you_mean(port, ports, 'port:')}")
                continue
            if hop not in g.nodes:
                options = nodes + [f"port:{p}" for p in ports or []] + ["drop"]
                hint = did_you_mean(hop, options)
                issues.append(f"{hat}: {what}: edge to '{hop}', which is not a node of this "
                              f"graph (add it under nodes, or use port:NAME or drop){hint}")
                continue
            dag.add_edge(node, hop)
    issues += _cycle_issues(dag, nodes, where, gname)
    if entry is not None:
        reach = nx.descendants(dag, entry) | {entry}
        for node in nodes:
            if node not in reach and not (node == "drop" or node.startswith("port:")):
                issues.append(f"{where}.nodes.{node}: {gname}: node '{node}' is not "
                              f"reachable from entry '{entry}': add an edge to it from "
                              f"another node, or remove it")
    for j, m in enumerate(g.match):
        _, problems = match_params(_fields(m), ports)
        issues += [f"{where}.match[{j}].{k}: {gname}: {msg}" for k, msg in problems]
    return issues + group_issues(g, where, services)


def group_issues(g: GraphSpec, where: str, services: list[str] | None = None) -> list[str]:
    """Problems of a graph's parallel groups (``groups``)."""
    issues: list[str] = []
    seen: dict[str, str] = {}
    for name, grp in g.groups.items():
        at = f"{where}.groups.{name}"
        what = f"graph '{g.name}': group '{name}'"
        if name not in g.nodes:
            issues.append(f"{at}: {what} is not a node of this graph: list it under nodes "
                          f"with its next hops, or remove it")
        if len(grp.members) < 2:
            issues.append(f"{at}.members: {what}: a group needs at least 2 members, got "
                          f"{len(grp.members)}: make a single NF a plain node")
        for j, m in enumerate(grp.members):
            if not _SERVICE_RE.match(m):
                issues.append(f"{at}.members[{j}]: {what}: {m!r} is not a valid service name")
            elif m in g.nodes:
                issues.append(f"{at}.members[{j}]: {what}: '{m}' is also a node of the graph: "
                              f"a service is either a node or a member of one group")
            elif m in seen:
                issues.append(f"{at}.members[{j}]: {what}: '{m}' is already a member of "
                              f"{seen[m]}: a service is in one group at most")
            elif services is not None and m not in services:
                issues.append(f"{at}.members[{j}]: {what}: no NF in nfs has service '{m}' "
                              f"(services: {_list(services)}){did_you_mean(m, services)}")
            seen.setdefault(m, f"group '{name}'")
        for m, regions in grp.copies.items():
            if m not in grp.members:
                issues.append(f"{at}.copies.{m}: {what}: '{m}' is not a member (members: "
                              f"{', '.join(grp.members)})")
            bad = [r for r in regions if r not in REGIONS + (ALL_REGIONS,)]
            if bad:
                issues.append(f"{at}.copies.{m}: {what}: {bad[0]!r} is not a region (regions: "
                              f"{', '.join(REGIONS)}, or all){did_you_mean(bad[0], REGIONS)}")
        if grp.merge and sorted(grp.merge) != sorted(grp.members):
            issues.append(f"{at}.merge: {what}: merge must list every member once (members: "
                          f"{', '.join(grp.members)})")
    return issues


def _cycle_issues(dag: nx.DiGraph[str], order: list[str], where: str, gname: str) -> list[str]:
    """One cycle per strongly connected part of the graph, as a path
    starting at its first node in file order."""
    issues = []
    rank = {n: i for i, n in enumerate(order)}
    parts = [sorted(c, key=rank.__getitem__) for c in nx.strongly_connected_components(dag)]
    for part in sorted(parts, key=lambda c: rank[c[0]]):
        start = part[0]
        if len(part) == 1 and not dag.has_edge(start, start):
            continue
        sub = dag.subgraph(part)
        edges = nx.find_cycle(sub, source=start)
        path = [edges[0][0]] + [v for _, v in edges]
        issues.append(f"{where}.nodes.{path[0]}: {gname}: cycle {' -> '.join(path)}: a "
                      f"graph must not loop; remove one of its edges (or end the path "
                      f"with port:NAME or drop)")
    return issues


# -- rule fields --------------------------------------------------------------------

def _fields(rule: MatchSpec, exclude: str | None = None) -> dict[str, Any]:
    """A rule's fields as given, not copied: model_dump would copy (and walk) a
    field's value however deep, and a YAML alias bomb in one is billions deep."""
    return {k: getattr(rule, k) for k in type(rule).model_fields if k != exclude}


def match_params(fields: Mapping[str, Any], ports: Iterable[str] | None = None
                 ) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """Checks and normalizes the fields of a rule or a flow filter.

    Returns (params without the unset fields, [(field, problem)]). Fields:
    priority, proto, src, dst, sport, dport, in_port, port (a flow filter:
    source or destination port). Unknown fields are problems too."""
    prt = list(ports) if ports is not None else None
    out: dict[str, Any] = {}
    problems: list[tuple[str, str]] = []
    fams: dict[str, int] = {}
    for key, value in fields.items():
        if value is None:
            continue
        if key in _ANY_KEYS and isinstance(value, str) and value.strip().lower() == ANY:
            continue
        if key == "priority":
            if isinstance(value, bool) or not isinstance(value, int):
                problems.append((key, f"expected an integer from {MIN_PRIORITY} to "
                                      f"{MAX_PRIORITY}, got {kind_of(value)}"))
            elif not MIN_PRIORITY <= value <= MAX_PRIORITY:
                problems.append((key, f"{value} is out of range: use {MIN_PRIORITY} to "
                                      f"{MAX_PRIORITY} (higher wins)"))
            else:
                out[key] = value
        elif key == "proto":
            v, err = _proto(value)
            problems += [(key, err)] if err else []
            if err is None:
                out[key] = v
        elif key in ("src", "dst"):
            net, err = _prefix(value)
            if err:
                problems.append((key, err))
            else:
                assert net is not None
                fams[key] = net.version
                out[key] = value.strip() if isinstance(value, str) else value
        elif key in ("sport", "dport", "port"):
            v, err = _l4port(value)
            problems += [(key, err)] if err else []
            if err is None:
                out[key] = v
        elif key == "in_port":
            if not isinstance(value, str) or not _PORT_RE.match(value):
                hint = (f": write in_port: {value[5:]}" if isinstance(value, str)
                        and value.startswith("port:") else
                        ": give the name of a port of the node, e.g. in")
                problems.append((key, f"{show_value(value)} is not a port name{hint}"))
            elif prt is not None and value not in prt:
                problems.append((key, f"no port named '{value}' (ports: {_list(prt)})"
                                      f"{did_you_mean(value, prt)}"))
            else:
                out[key] = value
        else:
            known = list(MATCH_KEYS) + (["port"] if "port" in fields else [])
            problems.append((key, f"unknown key (known keys here: {', '.join(known)})"
                                  f"{did_you_mean(str(key), known)}"))
    if len(set(fams.values())) > 1:
        problems.append(("dst", f"src is IPv{fams['src']} and dst is IPv{fams['dst']}: a "
                                f"flow has one address family; make them the same"))
    proto = out.get("proto")
    l4 = [k for k in ("sport", "dport", "port") if k in out]
    if l4 and proto is not None and PROTOS.get(str(proto), proto) not in PORT_PROTOS:
        problems.append((l4[0], f"{l4[0]} needs proto tcp, udp or sctp (or no proto): "
                                f"{proto} packets have no ports"))
    return out, problems


def _proto(value: Any) -> tuple[Any, str | None]:
    usage = f"{', '.join(PROTOS)}, any or a number 0-255"
    if isinstance(value, bool):
        return None, f"expected {usage}, got {kind_of(value)}"
    if isinstance(value, int):
        if 0 <= value <= 255:
            return value, None
        return None, f"{value} is not an IP protocol number: use 0 to 255"
    if isinstance(value, str):
        v = value.strip().lower()
        if v in PROTOS:
            return v, None
        if _is_number(v):
            return _proto(int(v))
        if v.isascii() and v.isdigit():
            return None, f"{_short(v)} is not an IP protocol number: use 0 to 255"
        return None, (f"'{_short(value)}' is not a protocol sluiced knows: use {usage}"
                      f"{did_you_mean(v, list(PROTOS))}")
    return None, f"expected {usage}, got {kind_of(value)}"


def _prefix(value: Any) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network | None,
                                 str | None]:
    if not isinstance(value, str):
        return None, (f"expected an address or prefix such as 10.0.0.0/8 or 2001:db8::/32, "
                      f"got {kind_of(value)}")
    try:
        return ipaddress.ip_network(value.strip(), strict=True), None
    except ValueError:
        pass
    # A prefix with host bits is one only the strict reading refuses (not a
    # text that merely says "host bits set": asked by the error's words, the
    # API's fuzzing found that one raising from here).
    try:
        net = ipaddress.ip_network(value.strip(), strict=False)
    except ValueError:
        return None, (f"'{_short(value)}' is not an IPv4 or IPv6 address or prefix: write e.g. "
                      f"10.0.0.0/8, 10.0.0.1 or 2001:db8::/32")
    return None, (f"'{_short(value)}' has bits set after the prefix length: write {net} "
                  f"(or the address alone for one host)")


def _l4port(value: Any) -> tuple[Any, str | None]:
    usage = "a port 0-65535 or a range N-M such as 1024-65535"
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None, f"expected {usage}, got {kind_of(value)}"
    if isinstance(value, str):
        s = value.strip()
        if _is_number(s):
            return _l4port(int(s))
        if s.isascii() and s.isdigit():
            return None, f"{_short(s)} is not a port: ports go from 0 to 65535"
        m = _RANGE_RE.match(s)
        if not m:
            return None, f"'{_short(value)}' is not {usage}"
        lo, hi = int(m.group(1)), int(m.group(2))
        if hi > 65535:
            return None, f"'{value}': {hi} is not a port: ports go from 0 to 65535"
        if lo > hi:
            return None, f"'{value}' is an empty range: write {hi}-{lo}"
        return f"{lo}-{hi}", None
    if not 0 <= value <= 65535:
        return None, f"{value} is not a port: ports go from 0 to 65535"
    return value, None


# -- what sluiced is sent -----------------------------------------------------------

def flatten(graph: GraphSpec) -> GraphSpec:
    """The graph with each parallel group replaced by its members in chain
    order (each member's default is the next one, its other hops the group's
    ports and drop; the last takes all of the group's next hops): what
    sluiced runs until it runs groups (issue 30). A packet
    gets the same bytes and verdict either way when the group was compiled
    by ``sluice.core.policy``."""
    if not graph.groups:
        return graph
    first = {name: grp.members[0] for name, grp in graph.groups.items() if grp.members}

    def hop(h: str) -> str:
        return first.get(h, h)

    nodes: dict[str, list[str]] = {}
    for node, hops in graph.nodes.items():
        grp = graph.groups.get(node)
        out = [hop(h) for h in hops]
        if grp is None or not grp.members:
            nodes[node] = out
            continue
        ends = [h for h in out[1:] if h == "drop" or h.startswith("port:")]
        for a, b in zip(grp.members, grp.members[1:], strict=False):
            nodes[a] = [b, *ends]
        nodes[grp.members[-1]] = out
    entry = graph.entry_node()
    return GraphSpec(name=graph.name, entry=hop(entry) if entry is not None else None,
                     nodes=nodes, match=graph.match)


def to_rpc(graph: GraphSpec) -> dict[str, Any]:
    """The params of ``graph.apply``: ``{name, entry, nodes}`` (entry made
    explicit; parallel groups flattened to their sequence, see ``flatten``)."""
    graph = flatten(graph)
    return {"name": graph.name, "entry": graph.entry_node(),
            "nodes": {k: list(v) for k, v in graph.nodes.items()}}


def rule_params(rule: MatchSpec, graph: str | None = None) -> dict[str, Any]:
    """The params of ``rule.add`` for a rule (``graph``: for a graph's ``match``)."""
    fields = rule.model_dump()
    g = fields.pop("graph", None) or graph
    params, problems = match_params(fields)
    if problems:
        raise GraphError([f"{k}: {m}" for k, m in problems])
    return {"graph": g, "priority": params.pop("priority", 0), **params}


# -- showing graphs, rules and flows ---------------------------------------------------

_BATCH_AT = re.compile(r"^rules\[(\d+)\]: ")


def batch_culprit(message: str, n: int) -> tuple[int, str] | None:
    """The rule sluiced names in its refusal of ``rule.add {rules}`` of n
    rules (``rules[N]: why``): (N, why), or None if it refused the whole
    batch (too many rules, say)."""
    m = _BATCH_AT.match(message)
    if m is None or int(m[1]) >= n:
        return None
    return int(m[1]), message[m.end():]


def batch_refusal(rules: Sequence[Mapping[str, Any]], message: str) -> str:
    """sluiced's refusal of ``rule.add {rules: [...]}`` in the words of the
    rule it names (``rules[N]: ...``): ``rule for graph 'G' (MATCH):
    sluiced refused it: ...``. A refusal of the whole batch (too many
    rules) says so."""
    c = batch_culprit(message, len(rules))
    if c is not None:
        r = rules[c[0]]
        return f"rule for graph '{r.get('graph')}' ({format_match(r)}): sluiced refused it: {c[1]}"
    return f"rules: sluiced refused them: {message}"


def format_match(rule: Mapping[str, Any]) -> str:
    """A rule's match in one line: ``udp dst 10.0.0.0/8 dport 53``."""
    parts = []
    proto = rule.get("proto")
    if proto not in (None, "", "*", "any"):
        parts.append(str(proto))
    for k in ("src", "dst", "sport", "dport", "in_port"):
        v = rule.get(k)
        if v not in (None, "", "*", "any"):
            parts.append(f"{k} {v}")
    return " ".join(parts) or "any flow"


def same_rule(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two rules (params we send, or entries of ``rule.list``) match the
    same flows with the same priority for the same graph."""
    return _rule_key(a) == _rule_key(b)


def _rule_key(r: Mapping[str, Any]) -> tuple[Any, ...]:
    def wild(v: Any) -> bool:
        return v is None or v in ("", "*", "any")

    def proto(v: Any) -> Any:
        if wild(v):
            return None
        return PROTOS.get(str(v).lower(), int(v) if str(v).isdigit() else v)

    def net(v: Any) -> Any:
        if wild(v):
            return None
        try:
            return ipaddress.ip_network(str(v), strict=False)
        except ValueError:
            return v

    def l4(v: Any) -> Any:
        if wild(v):
            return None
        s = str(v).strip()
        m = _RANGE_RE.match(s)
        if m:
            lo, hi = int(m.group(1)), int(m.group(2))
            if lo == 0 and hi == 65535:
                return None
            return (lo, hi)
        return (int(s), int(s)) if s.isdigit() else s

    return (r.get("graph"), int(r.get("priority") or 0), proto(r.get("proto")),
            net(r.get("src")), net(r.get("dst")), l4(r.get("sport")), l4(r.get("dport")),
            None if wild(r.get("in_port")) else r.get("in_port"))


# -- helpers -------------------------------------------------------------------------

def _is_number(s: str) -> bool:
    """Whether int() reads ``s`` as a small number: ASCII digits ('²' is a digit
    int() refuses), at most 10 of them (a longer one is out of any range here,
    and past 4300 int() refuses it too)."""
    return s.isascii() and s.isdigit() and len(s) <= 10


def _short(s: str, limit: int = 60) -> str:
    """A string cut to ``limit`` characters for a message."""
    return s if len(s) <= limit else f"{s[:limit - 5]}...{s[-2:]}"
