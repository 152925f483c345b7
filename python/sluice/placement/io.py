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

import datetime
import json
import math
import re
from importlib import resources
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

import networkx as nx
import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from ..core.deploy import UniqueKeyLoader, did_you_mean, kind_of, show_value
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

DOC = "docs/placement.md"
_FINITE = "a finite number"


class _Strict(BaseModel):
    # strict: a number is not taken from a string or a boolean (`cores: "2"`,
    # `cores: yes`); no inf or nan anywhere (YAML .inf/.nan, JSON Infinity/NaN)
    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True,
                              allow_inf_nan=False)


MAX_CORES = 1_000_000  # per node: far above any machine, well inside the solvers' range


class Defaults(_Strict):
    cores: int = Field(2, ge=0, le=MAX_CORES)
    capacity: float = Field(1000.0, gt=0)
    delay: float = Field(1.0, ge=0)


class NodeSpec(_Strict):
    name: str = Field(min_length=1)
    cores: int | None = Field(None, ge=0, le=MAX_CORES)
    flows_per_core: dict[str, Annotated[int, Field(ge=0)]] | None = None
    pos: list[float] | None = None

    @field_validator("pos")
    @classmethod
    def _pos(cls, v: list[float] | None) -> list[float] | None:
        if v is not None and len(v) != 2:
            raise PydanticCustomError(
                "sluice", "expected [x, y] (2 numbers), got {n}",
                {"n": f"{len(v)} number" + ("" if len(v) == 1 else "s")})
        return v


class LinkSpec(_Strict):
    a: str = Field(min_length=1)
    b: str = Field(min_length=1)
    capacity: float | None = Field(None, gt=0)
    delay: float | None = Field(None, ge=0)


# Bounds that keep a generated input from running out of time or memory before
# any check: a synthetic topology lists every missing link of its nodes once
# (a million nodes: half a trillion), generated flows are made one by one.
MAX_SYNTHETIC_NODES = 1000
MAX_GENERATED_FLOWS = 100000

# topohub keys: group/name (sndlib/geant, gabriel/25/0); no '..', no absolute path
_TOPOHUB_KEY = re.compile(r"^[A-Za-z0-9_+-][A-Za-z0-9_.+-]*(/[A-Za-z0-9_+-][A-Za-z0-9_.+-]*)+$")


class SyntheticSpec(_Strict):
    nodes: int = Field(ge=2, le=MAX_SYNTHETIC_NODES)
    edges: int = Field(ge=1)
    seed: int | None = None
    delay_per_unit: float = Field(10.0, ge=0)


class TopologySpec(_Strict):
    name: str | None = None
    defaults: Defaults = Defaults()
    nodes: list[NodeSpec] = []
    links: list[LinkSpec] = []
    topohub: str | None = None
    synthetic: SyntheticSpec | None = None
    delay_per_km: float = Field(0.005, ge=0)

    @field_validator("topohub")
    @classmethod
    def _topohub(cls, v: str | None) -> str | None:
        if v is not None and not _TOPOHUB_KEY.match(v):
            raise PydanticCustomError(
                "sluice", "{key} is not a topohub key: keys are GROUP/NAME, such as "
                "sndlib/geant, topozoo/Abilene or gabriel/25/0", {"key": show_value(v)})
        return v

    @model_validator(mode="after")
    def _one_source(self) -> TopologySpec:
        given = [k for k in ("topohub", "synthetic") if getattr(self, k) is not None]
        if self.nodes or self.links:
            given.append("nodes/links")
        if not given:
            raise PydanticCustomError(
                "sluice", "no nodes: give nodes and links, topohub or synthetic (see {doc})",
                {"doc": DOC})
        if len(given) > 1:
            raise PydanticCustomError(
                "sluice", "{given} are given: give only one of nodes and links, "
                "topohub or synthetic", {"given": " and ".join(given)})
        return self


class ServiceSpec(_Strict):
    flows_per_core: int = Field(ge=1)


def _class_or_chain(flow_class: str | None, chain: list[str] | None) -> None:
    if flow_class is not None and chain is not None:
        raise PydanticCustomError(
            "sluice", "both class and chain are given: give one of them")
    if flow_class is None and chain is None:
        raise PydanticCustomError(
            "sluice", "missing: give class (a name under chains) or chain (a list of services)")


class FlowSpec(_Strict):
    id: str | None = None
    flow_class: str | None = Field(None, alias="class")
    chain: list[str] | None = Field(None, min_length=1)
    ingress: str
    egress: str
    bandwidth: float = Field(ge=0)
    max_delay: float | None = Field(None, ge=0)

    @model_validator(mode="after")
    def _one_chain(self) -> FlowSpec:
        _class_or_chain(self.flow_class, self.chain)
        return self


class GenerateSpec(_Strict):
    count: int = Field(ge=1, le=MAX_GENERATED_FLOWS)
    flow_class: str | None = Field(None, alias="class")
    chain: list[str] | None = Field(None, min_length=1)
    bandwidth: Any = 100.0
    delay_stretch: float | None = Field(2.0, gt=0)
    min_delay: float = Field(0.0, ge=0)
    seed: int | None = None
    prefix: str = "g"

    @field_validator("bandwidth", mode="before")
    @classmethod
    def _bandwidth(cls, v: Any) -> float | tuple[int, int]:
        how = "give a number >= 0, or a range [low, high] of whole numbers"
        if isinstance(v, list) and len(v) == 2 and all(_is_number(x) for x in v):
            low, high = v
            if not all(math.isfinite(x) for x in v):
                raise PydanticCustomError("sluice", "{v} is not a range of finite numbers: "
                                          + how, {"v": f"[{low}, {high}]"})
            if low < 0:
                raise PydanticCustomError("sluice", "must be at least 0, got [{low}, {high}]",
                                          {"low": low, "high": high})
            if low > high:
                raise PydanticCustomError("sluice", "[{low}, {high}] is an empty range: write "
                                          "[{high}, {low}]", {"low": low, "high": high})
            if math.ceil(low) > math.floor(high):
                raise PydanticCustomError(
                    "sluice", "[{low}, {high}] holds no whole number, and generated "
                    "bandwidths are whole numbers: widen the range",
                    {"low": low, "high": high})
            return (math.ceil(low), math.floor(high))
        if _is_number(v):
            if not math.isfinite(v):
                raise PydanticCustomError("sluice", "{v} is not a finite number: " + how,
                                          {"v": v})
            if v < 0:
                raise PydanticCustomError("sluice", "must be at least 0, got {v}", {"v": v})
            return float(v)
        raise PydanticCustomError("sluice", "expected a number or a range [low, high], "
                                  "got {kind}", {"kind": _kind_of(v)})

    @model_validator(mode="after")
    def _one_chain(self) -> GenerateSpec:
        _class_or_chain(self.flow_class, self.chain)
        return self


class DemandSpec(_Strict):
    services: dict[str, ServiceSpec]
    chains: dict[str, Annotated[list[str], Field(min_length=1)]] = {}
    flows: list[FlowSpec] = []
    generate: list[GenerateSpec] | None = None


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _kind_of(v: Any) -> str:
    """A value as a message names it: a list says how long it is."""
    if isinstance(v, list):
        return f"a list of {len(v)} item{'s' if len(v) != 1 else ''}"
    if isinstance(v, datetime.date):
        return f"a date ({v})"
    return kind_of(v)


# ----- schema problems, in the project's wording -------------------------------------

Loc = tuple[int | str, ...]


def _normalise_topology(data: dict[str, Any]) -> tuple[dict[str, Any], dict[Loc, Loc]]:
    """The short forms as the long ones (``A`` as ``{name: A}``, ``[A, B]`` as
    ``{a: A, b: B}``), so the schema has no unions (whose members each add
    their own complaint), and where the file had each key."""
    data = dict(data)
    moved: dict[Loc, Loc] = {}
    if isinstance(data.get("nodes"), list):
        nodes = list(data["nodes"])
        for i, n in enumerate(nodes):
            if not isinstance(n, (dict, list)) and n is not None:  # a name (or a number...)
                nodes[i] = {"name": n}
                moved[("nodes", i, "name")] = ("nodes", i)
        data["nodes"] = nodes
    if isinstance(data.get("links"), list):
        links = list(data["links"])
        for i, link in enumerate(links):
            if isinstance(link, list) and len(link) == 2:
                links[i] = {"a": link[0], "b": link[1]}
                moved[("links", i, "a")] = ("links", i, 0)
                moved[("links", i, "b")] = ("links", i, 1)
        data["links"] = links
    return data, moved


def _normalise_demand(data: dict[str, Any]) -> tuple[dict[str, Any], dict[Loc, Loc]]:
    """``s: 10`` as ``s: {flows_per_core: 10}``, one ``generate`` mapping as a list."""
    data = dict(data)
    moved: dict[Loc, Loc] = {}
    if isinstance(data.get("services"), dict):
        services = dict(data["services"])
        for name, s in services.items():
            if not isinstance(s, dict):
                services[name] = {"flows_per_core": s}
                moved[("services", name, "flows_per_core")] = ("services", name)
        data["services"] = services
    if isinstance(data.get("generate"), dict):
        data["generate"] = [data["generate"]]
        moved[("generate", 0)] = ("generate",)
    return data, moved


def _path(loc: Loc) -> str:
    """A key path as docs/deployment.md writes it: ``flows[0].bandwidth``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _unwrap(tp: Any) -> Any:
    """``X`` of ``X | None`` and of ``Annotated[X, ...]``."""
    while True:
        origin = get_origin(tp)
        if origin is Annotated:
            tp = get_args(tp)[0]
        elif origin in (Union, UnionType):
            args = [a for a in get_args(tp) if a is not type(None)]
            if len(args) != 1:
                return tp
            tp = args[0]
        else:
            return tp


def _type_at(root: type[BaseModel], loc: Loc) -> Any:
    """The declared type of the value at ``loc`` (None if unknown)."""
    tp: Any = root
    for part in loc:
        tp = _unwrap(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            field = next((f for k, f in tp.model_fields.items()
                          if part in (k, f.alias)), None)
            if field is None:
                return None
            tp = field.annotation
        elif get_origin(tp) is list:
            tp = get_args(tp)[0]
        elif get_origin(tp) is dict:
            tp = get_args(tp)[1]
        else:
            return None
    return _unwrap(tp)


def _keys(model: Any) -> list[str]:
    if isinstance(model, type) and issubclass(model, BaseModel):
        return [f.alias or k for k, f in model.model_fields.items()]
    return []


# what a value may also be written as, where the file allows a short form
_SHORT_FORM = {NodeSpec: "a node name or ", LinkSpec: "[A, B] or ",
               ServiceSpec: "an integer or "}
# what to write instead of inf or nan, where there is a meaning for "none"
_NO_LIMIT = {"max_delay": "leave max_delay out for no delay bound",
             "delay_stretch": "write delay_stretch: null for no delay bound"}
_TYPES = {
    "int_type": "an integer", "int_parsing": "an integer", "int_from_float": "an integer",
    "float_type": "a number", "float_parsing": "a number", "string_type": "a string",
    "bool_type": "true or false", "list_type": "a list", "dict_type": "a mapping",
}


def _message(err: Any, root: type[BaseModel], loc: Loc) -> tuple[Loc, str]:
    """One pydantic error as ``(where, what is wrong and what to do)``."""
    typ = err["type"]
    inp = err.get("input")
    ctx = err.get("ctx") or {}
    if loc and loc[-1] == "[key]":  # a mapping's key that is not a name
        return loc[:-2], (f"{kind_of(inp)} cannot be a key: keys are names (write the key in "
                          f"quotes if it is meant as one)")
    if typ == "missing":
        return loc, f"missing: this key is required (see {DOC})"
    if typ == "extra_forbidden":
        known = _keys(_type_at(root, loc[:-1]))
        return loc, (f"unknown key (known keys here: {', '.join(known)})"
                     f"{did_you_mean(str(loc[-1]), known)}")
    if typ in ("model_type", "model_attributes_type"):
        model = _type_at(root, loc)
        short = _SHORT_FORM.get(model, "")
        if loc == ("generate",):
            short = "a mapping or a list of mappings with keys "
            return loc, f"expected {short}{', '.join(_keys(GenerateSpec))}; got {_kind_of(inp)}"
        return loc, (f"expected {short}a mapping with keys {', '.join(_keys(model))}; "
                     f"got {_kind_of(inp)}")
    if typ == "list_type" and loc == ("generate",):
        return loc, (f"expected a mapping or a list of mappings with keys "
                     f"{', '.join(_keys(GenerateSpec))}; got {_kind_of(inp)}")
    if typ == "float_type" and isinstance(inp, int) and not isinstance(inp, bool):
        return loc, f"{show_value(inp)} is too large for a number: use a smaller number"
    if typ == "string_type" and isinstance(inp, (bool, int, float, datetime.date)):
        # YAML reads 1, yes, 2024-01-01 as a number, a boolean, a date
        return loc, (f"expected a string, got {_kind_of(inp)}: write it in quotes if it is "
                     f"meant as a name")
    if typ in _TYPES:
        return loc, f"expected {_TYPES[typ]}, got {_kind_of(inp)}"
    if typ == "finite_number":
        key = next((p for p in reversed(loc) if isinstance(p, str)), "")
        how = _NO_LIMIT.get(str(key), "give an ordinary number")
        return loc, f"{show_value(inp)} is not {_FINITE}: {how}"
    if typ in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        op = {"greater_than_equal": "at least", "greater_than": "more than",
              "less_than_equal": "at most", "less_than": "less than"}[typ]
        bound = next(ctx[k] for k in ("ge", "gt", "le", "lt") if k in ctx)
        shown = bound if isinstance(bound, int) else f"{bound:g}"  # 1000000, not 1e+06
        return loc, f"must be {op} {shown}, got {show_value(inp)}"
    if typ == "string_too_short":
        return loc, "empty: give a name"
    if typ == "invalid_key":  # a key of the file's mapping that is not a name
        return loc[:-1], (f"{kind_of(inp)} cannot be a key: keys are names (write the key in "
                          f"quotes if it is meant as one)")
    if typ == "too_short":
        if not inp:
            return loc, "empty: give at least one" + (" service" if "chain" in loc
                                                      or "chains" in loc else "")
        return loc, f"has {_kind_of(inp)}, needs at least {ctx.get('min_length')}"
    if typ == "too_long":
        return loc, f"has {_kind_of(inp)}, allows at most {ctx.get('max_length')}"
    if typ in ("literal_error", "enum"):
        expected = str(ctx.get("expected", "")).replace("'", "").replace(" or ", ", ")
        return loc, f"{show_value(inp)} is not one of: {expected}"
    if typ == "sluice":
        return loc, err["msg"]
    if typ in ("value_error", "assertion_error"):
        return loc, err["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
    # a kind of problem this file has not met yet: pydantic's words, still one line
    return loc, f"{' '.join(str(err['msg']).split())} (got {_kind_of(inp)})"


def _schema_issues(err: ValidationError, root: type[BaseModel], source: str,
                   moved: dict[Loc, Loc]) -> list[str]:
    """One line per schema problem: ``FILE: key.path: what is wrong``."""
    out: list[str] = []
    for e in err.errors(include_url=False):
        loc: Loc = tuple(e["loc"])
        loc, msg = _message(e, root, loc)
        for n in range(len(loc), 0, -1):  # where the short form had the key
            if loc[:n] in moved:
                loc = moved[loc[:n]] + loc[n:]
                break
        line = f"{source}: {_path(loc)}: {msg}" if loc else f"{source}: {msg}"
        if line not in out:
            out.append(line)
    return out


# ----- pure conversion ------------------------------------------------------------


def _not_a_mapping(data: Any, source: str, keys: str) -> InputError:
    if data is None:
        return InputError(f"{source}: the file is empty: give {keys}")
    return InputError(f"{source}: expected a mapping ({keys}) at the top level, got "
                      f"{_kind_of(data)}")


def _names(names: list[str], limit: int = 8) -> str:
    shown = ", ".join(names[:limit]) or "none"
    return shown + (f", ... ({len(names)} in all)" if len(names) > limit else "")


def topology_from_dict(data: Any, source: str = "topology", seed: int = 0) -> nx.Graph[str]:
    """Build the topology graph described by ``data`` (see module docs)."""
    if not isinstance(data, dict):
        raise _not_a_mapping(data, source, "nodes and links, topohub or synthetic")
    data, moved = _normalise_topology(data)
    try:
        spec = TopologySpec.model_validate(data)
    except ValidationError as err:
        raise InputError(_schema_issues(err, TopologySpec, source, moved)) from None
    d = spec.defaults
    if spec.topohub is not None:
        g = topohub_graph(spec.topohub, d.cores, d.capacity, spec.delay_per_km,
                          at=f"{source}: topohub")
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
        g = _explicit_graph(spec, source)
    if spec.name:
        g.graph["name"] = spec.name
    return g


def _explicit_graph(spec: TopologySpec, source: str) -> nx.Graph[str]:
    d = spec.defaults
    g: nx.Graph[str] = nx.Graph(name=spec.name or source)
    overrides: dict[tuple[str, str], int] = {}
    override_at: dict[tuple[str, str], str] = {}
    first: dict[str, int] = {}
    issues: list[str] = []
    for i, n in enumerate(spec.nodes):
        if n.name in first:
            issues.append(f"{source}: nodes[{i}]: node {n.name!r} is already listed at "
                          f"nodes[{first[n.name]}]: list each node once")
            continue
        first[n.name] = i
        attrs: dict[str, Any] = {"cores": d.cores if n.cores is None else n.cores}
        if n.pos is not None:
            attrs["pos"] = tuple(n.pos)
        g.add_node(n.name, **attrs)
        for svc, p in (n.flows_per_core or {}).items():
            overrides[(n.name, svc)] = p
            override_at[(n.name, svc)] = f"nodes[{i}].flows_per_core.{svc}"
    known = sorted(first)
    seen: dict[frozenset[str], int] = {}
    for i, link in enumerate(spec.links):
        bad = False
        for end, name in (("a", link.a), ("b", link.b)):
            if name not in g:
                issues.append(f"{source}: links[{i}].{end}: {name!r} is not listed under "
                              f"nodes (nodes: {_names(known)}): add it there or fix the name"
                              f"{did_you_mean(name, known)}")
                bad = True
        if bad:
            continue
        if link.a == link.b:
            issues.append(f"{source}: links[{i}]: a link joins two different nodes, this one "
                          f"joins {link.a!r} to itself: remove it or fix a name")
            continue
        pair = frozenset((link.a, link.b))
        if pair in seen:
            issues.append(f"{source}: links[{i}]: link {link.a}-{link.b} is already listed at "
                          f"links[{seen[pair]}]: list each link once (a link carries both "
                          f"directions)")
            continue
        seen[pair] = i
        g.add_edge(
            link.a, link.b,
            capacity=d.capacity if link.capacity is None else link.capacity,
            delay=d.delay if link.delay is None else link.delay,
        )
    if issues:
        raise InputError(issues)
    g.graph["flows_per_core"] = overrides
    g.graph["flows_per_core_at"] = override_at
    return g


def topohub_keys() -> list[str]:
    """Every topology the installed topohub package has (``group/name``)."""
    try:
        import topohub
    except ImportError:  # pragma: no cover - a declared dependency
        return []
    root = resources.files(topohub) / "data"
    out: list[str] = []

    def walk(folder: Any, prefix: str) -> None:
        for entry in folder.iterdir():
            if entry.is_dir():
                walk(entry, f"{prefix}{entry.name}/")
            elif entry.name.endswith(".json"):
                out.append(prefix + entry.name.removesuffix(".json"))

    if root.is_dir():
        walk(root, "")
    return sorted(out)


def topohub_graph(key: str, cores: int, capacity: float, delay_per_km: float,
                  at: str = "topohub") -> nx.Graph[str]:
    """A topohub topology as a placement graph: node names as ids when they
    are unique, ``cores`` per node, ``capacity`` per link, delay from length.
    ``at`` starts every error line (the file and key, or the argument)."""
    try:
        import topohub
    except ImportError:  # pragma: no cover - a declared dependency
        raise InputError(f"{at}: the topohub package is not installed: "
                         f"pip install topohub") from None
    if not isinstance(key, str) or not _TOPOHUB_KEY.match(key):
        raise InputError(f"{at}: {show_value(key)} is not a topohub key: keys are GROUP/NAME, "
                         f"such as sndlib/geant, topozoo/Abilene or gabriel/25/0")
    try:
        try:
            data = topohub.get(key, use_names=True)
        except RuntimeError:  # duplicate names: keep integer ids
            data = topohub.get(key)
    except (KeyError, ValueError):
        keys = topohub_keys()
        group = key.split("/", 1)[0]
        groups = sorted({k.split("/", 1)[0] for k in keys})
        in_group = [k for k in keys if k.startswith(f"{group}/")]
        if in_group:
            hint = f"{group}/ has {_names([k.split('/', 1)[1] for k in in_group])}"
        else:
            hint = f"groups: {', '.join(groups)}; keys look like sndlib/geant, topozoo/Abilene"
        raise InputError(f"{at}: topohub has no topology {key!r} ({hint})"
                         f"{did_you_mean(key, in_group or keys)}") from None
    src = nx.node_link_graph(data, edges="edges")
    g: nx.Graph[str] = nx.Graph(name=f"topohub:{key}")
    for n, attrs in src.nodes(data=True):
        extra = {"pos": tuple(attrs["pos"])} if "pos" in attrs else {}
        g.add_node(str(n), cores=cores, label=str(attrs.get("name", n)), **extra)
    for u, v, attrs in src.edges(data=True):
        if u == v:
            continue
        km = float(attrs.get("dist", 0.0) or 0.0)
        delay = round(km * delay_per_km, 4)
        if not math.isfinite(delay):
            raise InputError(f"{at}: delay_per_km {delay_per_km:g} makes the delay of link "
                             f"{u}-{v} ({km:g} km) too large to count: use a smaller "
                             f"delay_per_km")
        g.add_edge(str(u), str(v), capacity=float(capacity), delay=delay)
    return g


def demand_from_dict(
    data: Any, graph: nx.Graph[str], source: str = "flows", seed: int = 0
) -> tuple[dict[str, Service], list[Flow]]:
    """Services and flows described by ``data`` (see module docs)."""
    if not isinstance(data, dict):
        raise _not_a_mapping(data, source, "services, chains, flows")
    data, moved = _normalise_demand(data)
    try:
        spec = DemandSpec.model_validate(data)
    except ValidationError as err:
        raise InputError(_schema_issues(err, DemandSpec, source, moved)) from None
    services = {name: Service(name, s.flows_per_core) for name, s in spec.services.items()}
    issues: list[str] = []
    svc_names = sorted(services)
    nodes = sorted(str(n) for n in graph.nodes)

    def service_issue(at: str, name: str) -> None:
        issues.append(f"{source}: {at}: {name!r} is not under services (services: "
                      f"{_names(svc_names)}): add it there or fix the name"
                      f"{did_you_mean(name, svc_names)}")

    for cls, names in spec.chains.items():
        for k, s in enumerate(names):
            if s not in services:
                service_issue(f"chains.{cls}[{k}]", s)

    def chain_of(cls: str | None, chain: list[str] | None, at: str) -> tuple[str, ...]:
        if chain is not None:
            for k, s in enumerate(chain):
                if s not in services:
                    service_issue(f"{at}.chain[{k}]", s)
            return tuple(chain)
        assert cls is not None  # the schema asks for one of the two
        if cls not in spec.chains:
            known = sorted(spec.chains)
            issues.append(f"{source}: {at}.class: {cls!r} is not under chains (chains: "
                          f"{_names(known)}): add it there or fix the name"
                          f"{did_you_mean(cls, known)}")
            return ()
        return tuple(spec.chains[cls])

    flows: list[Flow] = []
    first: dict[str, str] = {}  # flow id -> where it was given first
    for i, fs in enumerate(spec.flows):
        at = f"flows[{i}]"
        chain = chain_of(fs.flow_class, fs.chain, at)
        for role, node in (("ingress", fs.ingress), ("egress", fs.egress)):
            if node not in graph:
                issues.append(f"{source}: {at}.{role}: {node!r} is not a node of the "
                              f"topology (nodes: {_names(nodes)}): fix the name or add the node to "
                              f"the topology{did_you_mean(node, nodes)}")
        fid = fs.id if fs.id is not None else f"f{i + 1}"
        if fid in first:
            if fs.id is not None:
                issues.append(f"{source}: {at}.id: {fid!r} is already the id of {first[fid]}: "
                              f"give every flow its own id")
            else:
                issues.append(f"{source}: {at}: its default id {fid!r} (the flow's number) "
                              f"is already the id of {first[fid]}: give it an id")
        first.setdefault(fid, at)
        flows.append(
            Flow(
                fid, chain, fs.ingress, fs.egress, fs.bandwidth,
                math.inf if fs.max_delay is None else fs.max_delay,
                fs.flow_class,
            )
        )
    gens = spec.generate or []
    for j, gen in enumerate(gens):
        at = "generate" if ("generate", 0) in moved else f"generate[{j}]"
        chain = chain_of(gen.flow_class, gen.chain, at)
        if not chain or any(s not in services for s in chain):
            continue
        try:
            made = random_flows(
                graph, gen.count, chain, seed if gen.seed is None else gen.seed,
                gen.bandwidth, gen.delay_stretch, gen.min_delay, gen.flow_class,
                prefix=gen.prefix if len(gens) == 1 else f"{gen.prefix}{j + 1}-",
            )
        except ProblemError as err:
            issues.extend(f"{source}: {at}: {m}" for m in err.issues)
            continue
        clash = next((f.id for f in made if f.id in first), None)
        if clash is not None:
            issues.append(f"{source}: {at}: generated id {clash!r} is already the id of "
                          f"{first[clash]}: set prefix to one no other flow id starts with")
        for f in made:
            first.setdefault(f.id, at)
        flows.extend(made)
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
    return _problem(g, demand, topology_source, flows_source, seed)


def _problem(g: nx.Graph[str], demand: Any, topology_source: str, flows_source: str,
             seed: int) -> Problem:
    services, flows = demand_from_dict(demand, g, flows_source, seed)
    names = sorted(services)
    issues = [
        f"{topology_source}: {at}: {svc!r} is not under services in {flows_source} "
        f"(services: {_names(names)}): fix the name{did_you_mean(svc, names)}"
        for (_, svc), at in (g.graph.get("flows_per_core_at") or {}).items()
        if svc not in services
    ]
    if issues:
        raise InputError(issues)
    try:
        return make_problem(
            g, services, flows, name=str(g.graph.get("name", topology_source)),
            node_flows_per_core=g.graph.get("flows_per_core") or None,
        )
    except ProblemError as err:  # not expected: the checks above come first
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
        # the argument is the whole topology: the defaults, and errors name it
        d = Defaults()
        g = topohub_graph(ref.removeprefix("topohub:"), d.cores, d.capacity,
                          TopologySpec.model_fields["delay_per_km"].default, at=ref)
        return _problem(g, read_data(Path(flows)), ref, str(flows), seed)
    topo_data = read_data(Path(topology))
    demand = read_data(Path(flows))
    return problem_from_dicts(
        topo_data, demand, topology_source=str(topology), flows_source=str(flows), seed=seed
    )
