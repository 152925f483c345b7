"""Reading topologies and flow sets from YAML/JSON files or from topohub.

This is the only module of the placement package that touches files. The
``*_from_dict`` functions are pure and do the real work; ``load_*`` read a
file and call them. Every problem is reported as an :class:`InputError`
whose lines name the file, the item and what to do.

Topology file (YAML or JSON), one of three forms::

    # 1. explicit
    name: lab
    defaults: {cores: 2, capacity: 1000, delay: 1.0}   # per node / per link
    nodes: [A, B, {name: C, cores: 4}]
    links: [[A, B], {a: B, b: C, capacity: 400, delay: 2.5}]

    # 2. a real topology shipped by the topohub package
    topohub: sndlib/geant          # or topozoo/..., caida/...
    defaults: {cores: 2, capacity: 1000}
    delay_per_km: 0.005            # link delay = length * this (ms per km)

    # 3. a seeded random connected graph
    synthetic: {nodes: 22, edges: 64, seed: 1}
    defaults: {cores: 2, capacity: 1000}

Flows file::

    services: {J1: 10, J2: {flows_per_core: 4}}     # flows one core carries
    chains: {web: [J1, J2]}                          # flow classes
    flows:
      - {id: f1, class: web, ingress: A, egress: C, bandwidth: 100, max_delay: 20}
      - {id: f2, chain: [J2], ingress: B, egress: A, bandwidth: 50}
    generate:                                        # optional, seeded
      - {count: 20, class: web, bandwidth: [50, 150], delay_stretch: 2.0, seed: 1}
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import networkx as nx
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..deploy import UniqueKeyLoader
from .model import (
    Flow,
    Problem,
    ProblemError,
    Service,
    make_problem,
    random_flows,
    synthetic_graph,
)


class InputError(ProblemError):
    """A topology or flows file is missing, unreadable or invalid."""


# ----- schemas ---------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Defaults(_Strict):
    cores: int = Field(2, ge=0)
    capacity: float = Field(1000.0, gt=0)
    delay: float = Field(1.0, ge=0)


class NodeSpec(_Strict):
    name: str
    cores: int | None = Field(None, ge=0)
    flows_per_core: dict[str, int] | None = None
    pos: tuple[float, float] | None = None


class LinkSpec(_Strict):
    a: str
    b: str
    capacity: float | None = Field(None, gt=0)
    delay: float | None = Field(None, ge=0)


# Bounds that keep a generated input from running out of time or memory before
# any check: a synthetic topology lists every missing link of its nodes once
# (a million nodes: half a trillion), generated flows are made one by one.
MAX_SYNTHETIC_NODES = 1000
MAX_GENERATED_FLOWS = 100000


class SyntheticSpec(_Strict):
    nodes: int = Field(gt=1, le=MAX_SYNTHETIC_NODES)
    edges: int = Field(gt=0)
    seed: int | None = None
    delay_per_unit: float = Field(10.0, ge=0)


class TopologySpec(_Strict):
    name: str | None = None
    defaults: Defaults = Defaults()
    nodes: list[NodeSpec | str] = []
    links: list[LinkSpec | tuple[str, str]] = []
    topohub: str | None = None
    synthetic: SyntheticSpec | None = None
    delay_per_km: float = Field(0.005, ge=0)

    @model_validator(mode="after")
    def _one_source(self) -> TopologySpec:
        given = [k for k in ("topohub", "synthetic") if getattr(self, k) is not None]
        if self.nodes or self.links:
            given.append("nodes/links")
        if len(given) != 1:
            raise ValueError(
                "give exactly one of 'nodes'+'links', 'topohub' or 'synthetic' "
                f"(found: {', '.join(given) or 'none'})"
            )
        return self


class ServiceSpec(_Strict):
    flows_per_core: int = Field(gt=0)


class FlowSpec(_Strict):
    id: str | None = None
    flow_class: str | None = Field(None, alias="class")
    chain: list[str] | None = None
    ingress: str
    egress: str
    bandwidth: float = Field(ge=0)
    max_delay: float | None = Field(None, ge=0)

    @model_validator(mode="after")
    def _class_or_chain(self) -> FlowSpec:
        if (self.flow_class is None) == (self.chain is None):
            raise ValueError("give exactly one of 'class' (a name from 'chains') or 'chain'")
        return self


class GenerateSpec(_Strict):
    count: int = Field(gt=0, le=MAX_GENERATED_FLOWS)
    flow_class: str | None = Field(None, alias="class")
    chain: list[str] | None = None
    bandwidth: float | tuple[float, float] = 100.0
    delay_stretch: float | None = Field(2.0, gt=0)
    min_delay: float = Field(0.0, ge=0)
    seed: int | None = None
    prefix: str = "g"

    @model_validator(mode="after")
    def _class_or_chain(self) -> GenerateSpec:
        if (self.flow_class is None) == (self.chain is None):
            raise ValueError("give exactly one of 'class' (a name from 'chains') or 'chain'")
        return self

    @model_validator(mode="after")
    def _bandwidth(self) -> GenerateSpec:
        bw = self.bandwidth
        for x in bw if isinstance(bw, tuple) else (bw,):
            if not math.isfinite(x) or x < 0:
                raise ValueError(f"bandwidth: {x} is not a bandwidth: give a number >= 0, "
                                 f"or a range [low, high] of them")
        if isinstance(bw, tuple) and bw[0] > bw[1]:
            raise ValueError(f"bandwidth: [{bw[0]:g}, {bw[1]:g}] is an empty range: write "
                             f"[{bw[1]:g}, {bw[0]:g}]")
        return self


class DemandSpec(_Strict):
    services: dict[str, ServiceSpec | int]
    chains: dict[str, list[str]] = {}
    flows: list[FlowSpec] = []
    generate: list[GenerateSpec] | GenerateSpec | None = None


# ----- pure conversion ------------------------------------------------------------


_MEMBER_NAMES = frozenset({"NodeSpec", "LinkSpec", "ServiceSpec", "GenerateSpec", "str", "int",
                           "float", "list", "tuple"})


def _pydantic_issues(err: ValidationError, source: str) -> list[str]:
    out: list[tuple[str, str]] = []
    for e in err.errors():
        # pydantic names the member of a union or a validator in the path
        # (list[function-after[...]], NodeSpec, str): not keys of the file
        loc = ".".join(
            str(p) for p in e["loc"]
            if not (isinstance(p, str) and ("[" in p or p in _MEMBER_NAMES))
        )
        msg = e["msg"].removeprefix("Value error, ")
        out.append((loc, msg))
    # a union says why each member did not fit; where one member got further
    # (an error below the same key), the others' "should be a valid ..." is noise
    return [f"{source}: {loc or 'top level'}: {msg}" for loc, msg in out
            if not (msg.startswith("Input should be a valid")
                    and any(other.startswith(f"{loc}.") or (other and not loc)
                            for other, _ in out))]


def _not_a_mapping(data: Any, source: str, keys: str) -> InputError:
    if data is None:
        return InputError(f"{source}: the file is empty: give {keys}")
    return InputError(f"{source}: expected a mapping ({keys}) at the top level, got "
                      f"{type(data).__name__}")


def topology_from_dict(data: Any, source: str = "topology", seed: int = 0) -> nx.Graph:
    """Build the topology graph described by ``data`` (see module docs)."""
    if not isinstance(data, dict):
        raise _not_a_mapping(data, source, "nodes and links, topohub or synthetic")
    try:
        spec = TopologySpec.model_validate(data)
    except ValidationError as err:
        raise InputError(_pydantic_issues(err, source)) from None
    d = spec.defaults
    if spec.topohub is not None:
        g = topohub_graph(spec.topohub, d.cores, d.capacity, spec.delay_per_km)
    elif spec.synthetic is not None:
        s = spec.synthetic
        try:
            g = synthetic_graph(
                s.nodes, s.edges, seed if s.seed is None else s.seed,
                d.cores, d.capacity, s.delay_per_unit,
            )
        except ProblemError as err:
            raise InputError([f"{source}: synthetic: {i}" for i in err.issues]) from None
    else:
        g = nx.Graph(name=spec.name or source)
        overrides: dict[tuple[str, str], int] = {}
        for n in spec.nodes:
            if isinstance(n, str):
                n = NodeSpec(name=n)
            if n.name in g:
                raise InputError(f"{source}: node {n.name!r} is listed twice")
            attrs: dict[str, Any] = {"cores": d.cores if n.cores is None else n.cores}
            if n.pos is not None:
                attrs["pos"] = n.pos
            g.add_node(n.name, **attrs)
            for svc, p in (n.flows_per_core or {}).items():
                overrides[(n.name, svc)] = p
        issues = []
        for i, link in enumerate(spec.links):
            if not isinstance(link, LinkSpec):
                link = LinkSpec(a=link[0], b=link[1])
            missing = [x for x in (link.a, link.b) if x not in g]
            if missing:
                issues.append(
                    f"{source}: links.{i}: {', '.join(repr(m) for m in missing)} not listed "
                    f"under 'nodes'"
                )
                continue
            if g.has_edge(link.a, link.b):
                issues.append(f"{source}: links.{i}: link {link.a}-{link.b} is listed twice")
                continue
            g.add_edge(
                link.a, link.b,
                capacity=d.capacity if link.capacity is None else link.capacity,
                delay=d.delay if link.delay is None else link.delay,
            )
        if issues:
            raise InputError(issues)
        g.graph["flows_per_core"] = overrides
    if spec.name:
        g.graph["name"] = spec.name
    return g


def topohub_graph(key: str, cores: int, capacity: float, delay_per_km: float) -> nx.Graph:
    """A topohub topology as a placement graph: node names as ids when they
    are unique, ``cores`` per node, ``capacity`` per link, delay from length."""
    try:
        import topohub
    except ImportError:  # pragma: no cover - a declared dependency
        raise InputError("the topohub package is not installed (pip install topohub)") from None
    try:
        try:
            data = topohub.get(key, use_names=True)
        except RuntimeError:  # duplicate names: keep integer ids
            data = topohub.get(key)
    except KeyError:
        raise InputError(
            f"topohub has no topology {key!r}; keys look like 'sndlib/geant', "
            "'topozoo/Abilene', 'caida/...'"
        ) from None
    src = nx.node_link_graph(data, edges="edges")
    g = nx.Graph(name=f"topohub:{key}")
    for n, attrs in src.nodes(data=True):
        extra = {"pos": tuple(attrs["pos"])} if "pos" in attrs else {}
        g.add_node(str(n), cores=cores, label=str(attrs.get("name", n)), **extra)
    for u, v, attrs in src.edges(data=True):
        if u == v:
            continue
        km = float(attrs.get("dist", 0.0) or 0.0)
        g.add_edge(str(u), str(v), capacity=float(capacity), delay=round(km * delay_per_km, 4))
    return g


def demand_from_dict(
    data: Any, graph: nx.Graph, source: str = "flows", seed: int = 0
) -> tuple[dict[str, Service], list[Flow]]:
    """Services and flows described by ``data`` (see module docs)."""
    if not isinstance(data, dict):
        raise _not_a_mapping(data, source, "services, chains, flows")
    try:
        spec = DemandSpec.model_validate(data)
    except ValidationError as err:
        raise InputError(_pydantic_issues(err, source)) from None
    services = {
        name: Service(name, s if isinstance(s, int) else s.flows_per_core)
        for name, s in spec.services.items()
    }
    bad = [n for n, s in services.items() if s.flows_per_core <= 0]
    if bad:
        raise InputError(f"{source}: services {', '.join(bad)}: flows_per_core must be > 0")
    issues: list[str] = []

    def chain_of(cls: str | None, chain: list[str] | None, where: str) -> tuple[str, ...]:
        if chain is not None:
            return tuple(chain)
        if cls not in spec.chains:
            known = ", ".join(sorted(spec.chains)) or "none defined"
            issues.append(f"{source}: {where}: class {cls!r} is not under 'chains' ({known})")
            return ()
        return tuple(spec.chains[cls])

    flows: list[Flow] = []
    for i, fs in enumerate(spec.flows):
        where = f"flows.{i}"
        flows.append(
            Flow(
                fs.id if fs.id is not None else f"f{i + 1}",
                chain_of(fs.flow_class, fs.chain, where),
                fs.ingress,
                fs.egress,
                fs.bandwidth,
                math.inf if fs.max_delay is None else fs.max_delay,
                fs.flow_class,
            )
        )
    gens = spec.generate
    if isinstance(gens, GenerateSpec):
        gens = [gens]
    for j, gen in enumerate(gens or []):
        chain = chain_of(gen.flow_class, gen.chain, f"generate.{j}")
        if not chain:
            continue
        bw = gen.bandwidth if isinstance(gen.bandwidth, (int, float)) else tuple(gen.bandwidth)
        try:
            flows.extend(
                random_flows(
                    graph, gen.count, chain, seed if gen.seed is None else gen.seed,
                    bw, gen.delay_stretch, gen.min_delay, gen.flow_class,
                    prefix=gen.prefix if len(gens or []) == 1 else f"{gen.prefix}{j + 1}-",
                )
            )
        except ProblemError as err:
            issues.extend(f"{source}: generate.{j}: {m}" for m in err.issues)
    if issues:
        raise InputError(issues)
    return services, flows


def problem_from_dicts(
    topology: Any,
    demand: Any,
    *,
    topology_source: str = "topology",
    flows_source: str = "flows",
    seed: int = 0,
) -> Problem:
    g = topology_from_dict(topology, topology_source, seed)
    services, flows = demand_from_dict(demand, g, flows_source, seed)
    try:
        return make_problem(
            g, services, flows, name=str(g.graph.get("name", topology_source)),
            node_flows_per_core=g.graph.get("flows_per_core") or None,
        )
    except ProblemError as err:
        raise InputError([f"{flows_source}: {m}" for m in err.issues]) from None


# ----- files ------------------------------------------------------------------------


def read_data(path: Path) -> Any:
    """Parse a YAML or JSON file, with errors that name the file and line."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, expected a YAML or JSON file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"{path}: cannot read: {err}") from None
    if Path(path).suffix.lower() == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as err:
            raise InputError(
                f"{path}: not valid JSON: {err.msg} at line {err.lineno} column {err.colno}"
            ) from None
        except (RecursionError, ValueError) as err:
            raise _too_big(path, "JSON", err) from None
    try:
        # The deployment loader: a key given twice is an error, not the
        # last one silently kept.
        return yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506 (a SafeLoader)
    except (RecursionError, ValueError) as err:
        raise _too_big(path, "YAML", err) from None
    except yaml.reader.ReaderError as err:  # a character YAML does not allow
        char = f"#x{err.character:04x}" if isinstance(err.character, int) else err.character
        raise InputError(f"{path}: not valid YAML: character {char} at position "
                         f"{err.position}: {err.reason}; remove it") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = getattr(err, "problem", None) or str(err)
        raise InputError(f"{path}: not valid YAML: {problem}{where}") from None


def _too_big(path: Path, fmt: str, err: Exception) -> InputError:
    """Nesting deeper than the parser recurses, or a number of more digits
    than int() converts (4300)."""
    if isinstance(err, RecursionError):
        return InputError(f"{path}: not valid {fmt}: lists or mappings nested too deep to "
                          f"read; nest them less deeply")
    return InputError(f"{path}: not valid {fmt}: {str(err).split(':')[0]}: use a smaller "
                      f"number")


def load_problem(topology: str | Path, flows: str | Path, seed: int = 0) -> Problem:
    """Read a topology (a file, or ``topohub:<key>``) and a flows file."""
    ref = str(topology)
    if ref.startswith("topohub:"):
        topo_data: Any = {"topohub": ref.removeprefix("topohub:")}
        topo_src = ref
    else:
        topo_data = read_data(Path(topology))
        topo_src = str(topology)
    demand = read_data(Path(flows))
    return problem_from_dicts(
        topo_data, demand, topology_source=topo_src, flows_source=str(flows), seed=seed
    )
