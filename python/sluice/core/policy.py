"""Policies: an operator's intent for a service, compiled into a graph (issue 30).

A policy file names the NFs of a service and the templates of OpenPATH
§5.1 (Order, Priority, Position), not the graph::

    policy:
      name: edge
      match: {dst: 192.168.0.0/24}
      nfs: [firewall, ids, monitor, nat, shaper]
      order:    [[firewall, before, nat], [nat, before, shaper]]
      priority: [[firewall, ids]]          # firewall's verdict wins over ids'
      position: [[firewall, first]]
      exit: port:out                       # where the last NF sends (default port:out)
      hops: {nat: ["port:out", "port:in"]}  # more next hops an NF may send to (OUT, drop)
      declare:                             # optional: an NF's operations, overriding
        nat: {reads: [l3_addr, l4_ports], writes: [l3_addr, l3_other, l4_ports, l4_other],
              drops: true, routes: true}   # the table of sluice.core.parallel

The templates define the *chain*, the order a packet would see the NFs in
sequence: Order puts one NF before another, Position puts one first or
last, Priority ``[A, B]`` (A's verdict wins over B's when they run in
parallel) puts A before B, so that the parallel graph gives the verdict the
chain would, and lets B run beside A even if B has history; the NFs the
templates leave free keep the order of ``nfs``.
``parse_policy`` checks a file's data (every problem one line naming the
template); ``sluice.core.parallel.compile_policy`` turns it into a graph
with parallel groups. docs/graphs.md, "Policies", documents the format.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .errors import SluiceError, did_you_mean, kind_of, pydantic_issues, show_value
from .errors import list_words as _list
from .graph import _GRAPH_RE, _PORT_RE, REGIONS, MatchSpec, match_params

DOC = "docs/graphs.md"
BEFORE, AFTER, FIRST, LAST = "before", "after", "first", "last"


class PolicyError(SluiceError):
    """One or more problems in a policy, one line each."""

    def __init__(self, issues: list[str]):
        super().__init__("\n".join(issues))
        self.issues = issues


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class DeclSpec(_Strict):
    """An NF's declared operations (OpenPATH Table 2, per region)."""

    reads: list[str] = Field([], description="Regions it reads: " + ", ".join(REGIONS))
    writes: list[str] = Field([], description="Regions it may write.")
    drops: bool = Field(False, description="It may drop packets (verdict DROP).")
    routes: bool = Field(False, description="It may change routing: TO, OUT, SkipMe, "
                                            "RequestMe, ChangeDefault.")
    headers: bool = Field(False, description="It adds or removes headers (a tunnel): it "
                                             "may rewrite every region.")
    history: bool = Field(False, description="Its verdicts or writes depend on the packets "
                                             "it saw before (per-flow state, meters, "
                                             "sampling).")


class PolicySpec(_Strict):
    name: str
    match: list[MatchSpec] = []
    nfs: list[str]
    order: list[Any] = []
    priority: list[Any] = []
    position: list[Any] = []
    exit: str = "port:out"
    hops: dict[str, list[str]] = {}
    declare: dict[str, DeclSpec] = {}

    @field_validator("match", mode="before")
    @classmethod
    def _match(cls, v: Any) -> Any:
        return [v] if isinstance(v, dict) else v  # one rule may be written without a list

    def matches(self) -> list[MatchSpec]:
        return list(self.match)


class PolicyFile(_Strict):
    policy: PolicySpec


@dataclass(frozen=True)
class Template:
    """One template, checked: ``kind`` order/priority/position, ``index`` in
    its list; ``a`` before ``b`` in the chain (``b`` None for a position)."""

    kind: str
    index: int
    a: str
    b: str | None
    word: str  # before/after, first/last; "" for a priority

    @property
    def label(self) -> str:
        return f"{self.kind}[{self.index}]"

    def text(self) -> str:
        """How the template reads: ``order[0] (firewall before nat)``."""
        if self.kind == "priority":
            return f"{self.label} ({self.a} > {self.b}: {self.a}'s verdict wins)"
        if self.kind == "position":
            return f"{self.label} ({self.a} {self.word})"
        return f"{self.label} ({self.a} before {self.b})"


@dataclass(frozen=True)
class Policy:
    """A checked policy: its spec, its templates and the chain they give."""

    spec: PolicySpec
    templates: tuple[Template, ...]
    chain: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.spec.name


def parse_policy(data: Any, source: str = "<policy>", known: Sequence[str] = ()) -> Policy:
    """Checks a parsed policy file (``{policy: {...}}``); raises PolicyError
    (lines start with ``source``). ``known``: the NFs that have a declaration
    (an NF of ``nfs`` must be one of them or be declared under ``declare``)."""
    if isinstance(data, dict) and "policy" not in data:
        raise PolicyError([f"{source}: no policy: a policy file holds one under policy: (see "
                           f"{DOC}){did_you_mean(str(next(iter(data), '')), ['policy'])}"])
    if not isinstance(data, dict):
        got = "nothing" if data is None else kind_of(data)
        raise PolicyError([f"{source}: expected a mapping with the key policy (name, match, "
                           f"nfs, order, priority, position, exit, hops, declare); got {got} "
                           f"(see {DOC})"])
    try:
        spec = PolicyFile.model_validate(data).policy
    except ValidationError as e:
        raise PolicyError([f"{source}: {m}" for m in pydantic_issues(
            e, PolicyFile, data, doc=DOC)]) from None
    issues, templates = check_policy(spec, known)
    chain: tuple[str, ...] = ()
    if not issues:
        chain, cycles = chain_order(spec.nfs, templates)
        issues += cycles
    if issues:
        lines = []
        for m in issues:
            path, _, msg = m.partition(": ")
            lines.append(f"{source}: {path}: policy '{spec.name}': {msg}")
        raise PolicyError(lines)
    return Policy(spec, tuple(templates), chain)


def check_policy(spec: PolicySpec, known: Sequence[str]) -> tuple[list[str], list[Template]]:
    """Problems of a policy (``key.path: message``) and its templates."""
    issues: list[str] = []
    if not _GRAPH_RE.match(spec.name):
        issues.append(f"policy.name: {spec.name!r} is not a valid name: use 1-31 letters, "
                      f"digits, '_', '.' or '-', starting with a letter (it names the graph)")
    issues += _nfs_issues(spec, known)
    issues += _declare_issues(spec)
    ex = spec.exit
    if not (ex == "drop" or (ex.startswith("port:") and _PORT_RE.match(ex[5:]))):
        issues.append(f"policy.exit: {show_value(ex)} is not port:NAME or drop: it is where "
                      f"the last NF of the chain sends packets")
    for nf, hops in spec.hops.items():
        if nf not in spec.nfs:
            issues.append(f"policy.hops.{nf}: '{nf}' is not one of the policy's nfs "
                          f"({', '.join(spec.nfs)}){did_you_mean(nf, spec.nfs)}")
        for j, h in enumerate(hops):
            if not (h == "drop" or (h.startswith("port:") and _PORT_RE.match(h[5:]))):
                issues.append(f"policy.hops.{nf}[{j}]: {show_value(h)} is not port:NAME or "
                              f"drop: an NF's other next hops are ports (its OUT verdicts) "
                              f"or drop")
    for j, m in enumerate(spec.matches()):
        _, problems = match_params({k: getattr(m, k) for k in type(m).model_fields})
        issues += [f"policy.match[{j}].{k}: {msg}" for k, msg in problems]
    templates: list[Template] = []
    for kind in ("order", "priority", "position"):
        for i, raw in enumerate(getattr(spec, kind)):
            t, problem = _template(kind, i, raw, spec.nfs)
            if problem:
                issues.append(f"policy.{kind}[{i}]: {problem}")
            elif t is not None:
                templates.append(t)
    issues += _position_issues(templates, len(spec.nfs))
    return issues, templates


def _nfs_issues(spec: PolicySpec, known: Sequence[str]) -> list[str]:
    issues: list[str] = []
    first: dict[str, int] = {}
    if not spec.nfs:
        issues.append("policy.nfs: empty: list the NFs of the service, e.g. [firewall, monitor]")
    for i, nf in enumerate(spec.nfs):
        if nf in first:
            issues.append(f"policy.nfs[{i}]: '{nf}' is listed twice (first at nfs[{first[nf]}]):"
                          f" list each NF once")
            continue
        first[nf] = i
        if nf not in known and nf not in spec.declare:
            issues.append(f"policy.nfs[{i}]: '{nf}' is not an NF with a declaration (known: "
                          f"{_list(known)}): fix the name, or declare its operations under "
                          f"declare: {nf}: {{reads, writes, drops, routes, history}}"
                          f"{did_you_mean(nf, known)}")
    return issues


def _declare_issues(spec: PolicySpec) -> list[str]:
    issues: list[str] = []
    for nf, d in spec.declare.items():
        if nf not in spec.nfs:
            issues.append(f"policy.declare.{nf}: '{nf}' is not one of the policy's nfs "
                          f"({', '.join(spec.nfs)}): add it to nfs or remove its declaration"
                          f"{did_you_mean(nf, spec.nfs)}")
        for key in ("reads", "writes"):
            for j, r in enumerate(getattr(d, key)):
                if r not in REGIONS:
                    issues.append(f"policy.declare.{nf}.{key}[{j}]: {show_value(r)} is not a "
                                  f"region (regions: {', '.join(REGIONS)})"
                                  f"{did_you_mean(str(r), REGIONS)}")
    return issues


_SHAPES = {"order": "[NF, before|after, NF]", "priority": "[NF, NF] (the first one's verdict "
           "wins)", "position": "[NF, first|last]"}


def _template(kind: str, i: int, raw: Any, nfs: list[str]) -> tuple[Template | None, str]:
    """A template from its list form, or the problem with it."""
    shape = _SHAPES[kind]
    size = {"order": 3, "priority": 2, "position": 2}[kind]
    if not isinstance(raw, list) or len(raw) != size or not all(isinstance(x, str) for x in raw):
        got = (f"a list of {len(raw)}" if isinstance(raw, list) and len(raw) != size
               else kind_of(raw) if not isinstance(raw, list) else "a list with a non-name")
        return None, f"expected {shape}, got {got}"
    names = [raw[0], raw[2]] if kind == "order" else [raw[0]] if kind == "position" else raw
    what = f"{kind} [{', '.join(raw)}]"
    for n in names:
        if n not in nfs:
            return None, (f"{what}: '{n}' is not one of the policy's nfs ({', '.join(nfs)})"
                          f"{did_you_mean(n, nfs)}")
    if kind == "order":
        if raw[1] not in (BEFORE, AFTER):
            return None, (f"{what}: {raw[1]!r} is not before or after"
                          f"{did_you_mean(raw[1], (BEFORE, AFTER))}")
        if raw[0] == raw[2]:
            return None, f"{what}: an NF cannot be {raw[1]} itself: name two NFs"
        a, b = (raw[0], raw[2]) if raw[1] == BEFORE else (raw[2], raw[0])
        return Template(kind, i, a, b, raw[1]), ""
    if kind == "priority":
        if raw[0] == raw[1]:
            return None, f"{what}: an NF cannot win over itself: name two NFs"
        return Template(kind, i, raw[0], raw[1], ""), ""
    if raw[1] not in (FIRST, LAST):
        return None, f"{what}: {raw[1]!r} is not first or last{did_you_mean(raw[1], (FIRST, LAST))}"
    return Template(kind, i, raw[0], None, raw[1]), ""


def _position_issues(templates: list[Template], n_nfs: int) -> list[str]:
    issues: list[str] = []
    held: dict[str, Template] = {}
    of_nf: dict[str, Template] = {}
    for t in templates:
        if t.kind != "position":
            continue
        other = held.get(t.word)
        if other is not None and other.a != t.a:
            issues.append(f"policy.{t.label}: position [{t.a}, {t.word}]: {other.text()} "
                          f"already puts {other.a} {t.word}: only one NF can be {t.word}")
            continue
        prev = of_nf.get(t.a)
        if prev is not None and prev.word != t.word and n_nfs > 1:
            issues.append(f"policy.{t.label}: position [{t.a}, {t.word}]: {prev.text()} puts "
                          f"{t.a} {prev.word}: an NF cannot be both first and last")
            continue
        held.setdefault(t.word, t)
        of_nf.setdefault(t.a, t)
    return issues


def chain_order(nfs: Sequence[str], templates: Sequence[Template]
                ) -> tuple[tuple[str, ...], list[str]]:
    """The chain the templates give (free NFs in the order of ``nfs``), or
    the cycles among them: one problem per strongly connected part, naming
    every template of one cycle in it."""
    rank = {n: i for i, n in enumerate(nfs)}
    dag: nx.DiGraph[str] = nx.DiGraph()
    dag.add_nodes_from(nfs)
    for t in templates:
        pairs: list[tuple[str, str]]
        if t.kind == "position":
            others = [n for n in nfs if n != t.a]
            pairs = [(t.a, n) for n in others] if t.word == FIRST else [(n, t.a) for n in others]
        else:
            assert t.b is not None
            pairs = [(t.a, t.b)]
        for a, b in pairs:
            if not dag.has_edge(a, b):
                dag.add_edge(a, b, why=[])
            dag.edges[a, b]["why"].append(t)
    problems: list[str] = []
    parts = nx.strongly_connected_components(dag)
    for part in sorted(parts, key=lambda c: min(rank[n] for n in c)):
        if len(part) < 2:
            continue
        start = min(part, key=rank.__getitem__)
        edges = nx.find_cycle(dag.subgraph(part), source=start)
        path = [edges[0][0]] + [v for _, v in edges]
        used: list[Template] = []
        for u, v in edges:
            t = dag.edges[u, v]["why"][0]
            if t not in used:
                used.append(t)
        key = min(used, key=lambda t: (t.kind, t.index)).label
        names = ", ".join(t.text() for t in used)
        note = (" (a priority puts the NF whose verdict wins before the other in the chain)"
                if any(t.kind == "priority" for t in used) else "")
        problems.append(f"policy.{key}: the templates contradict each other: {names} make a "
                        f"cycle {' -> '.join(path)}{note}: remove or reverse one of them")
    if problems:
        return (), problems
    return tuple(nx.lexicographical_topological_sort(dag, key=rank.__getitem__)), []
