"""Request and response models of the API (the result shapes of
docs/control-socket.md, and the bodies), and the error responses the
OpenAPI spec lists."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    model_validator,
)
from pydantic_core import PydanticCustomError

from ..core import graph as schema
from ..core.deploy import show_value
from ..core.graph import match_params

# -- models (the result shapes of docs/control-socket.md, and the bodies) ----------------

def _json_number(v: Any) -> Any:
    if isinstance(v, (bool, str)):
        raise PydanticCustomError("int_type", "Input should be an integer, not {kind}",
                                  {"kind": "a boolean" if isinstance(v, bool) else "a string"})
    return v


# An integer of a body: pydantic would take true as 1 and "5" as 5.
JsonInt = Annotated[int, BeforeValidator(_json_number)]


class _Model(BaseModel):
    # sluiced may add fields; they are passed on rather than dropped.
    model_config = ConfigDict(extra="allow")


class Error(BaseModel):
    detail: str = Field(description="What went wrong (sluiced's message when it is its error).")


class Pool(_Model):
    name: str
    socket: int = Field(description="NUMA socket of its memory.")
    size: int
    in_use: int


class Mbufs(_Model):
    size: int = Field(description="Packet buffers, over every pool.")
    in_use: int
    leaked: int = Field(description="Buffers of dead NFs' caches left out of the pool "
                        "(the NF died inside a pool operation).")
    in_doubt: int = Field(description="Packets of dead NFs' transmit calls whose fate "
                          "is unknown (counted nf_lost); at most this many buffers "
                          "more are out of the pool.")
    pools: list[Pool] = Field(
        description="One per NUMA socket in use: the main pool, then one per socket "
        "that has a port and is not the main pool's.")


class Status(_Model):
    node: str
    version: str
    pid: int
    mode: str
    handoff: str
    uptime_s: float
    rx_enabled: bool
    max_nfs: int
    max_services: int
    ring_size: int
    burst: int
    rx_burst: int
    n_nfs: int
    n_services: int
    n_ports: int
    io_threads: int
    methods: list[str]
    mbufs: Mbufs


class Ring(_Model):
    count: int
    size: int


class Nf(_Model):
    instance: int
    service: str
    service_id: int
    prog: str
    pid: int
    state: str
    mode: str
    access: int
    rx_ring: Ring
    tx_ring: Ring
    start_to_first_pkt_ms: float | None = Field(
        None, description="Milliseconds from the process start to its first packet "
                          "(null until then).")
    start_to_register_ms: float | None = Field(
        None, description="Milliseconds from the process start to its registration.")


class Port(_Model):
    id: int
    name: str
    device: str
    started: bool
    link_up: bool
    rx_queues: int
    tx_queues: int
    socket: int = Field(description="The device's NUMA socket, whose packet pool it "
                        "receives into (-1: unknown, the main pool).")


class Service(_Model):
    id: int
    name: str
    lb: str = Field(description="Load balancing across instances: flow, queue or rr.")
    instances: list[int]


class PortStats(_Model):
    id: int
    name: str
    rx_pkts: int
    rx_bytes: int
    tx_pkts: int
    tx_bytes: int
    rx_stalls: int
    drops: dict[str, int] = Field(description="Drops by reason.")


class NfStats(_Model):
    instance: int
    service: str
    state: str
    rx_pkts: int
    rx_bytes: int
    tx_pkts: int
    tx_bytes: int
    drops: dict[str, int] = Field(description="Drops by reason.")
    rx_ring: Ring
    cycles: int
    cycles_per_pkt: float
    sleeps: int = 0
    stalls: int = 0
    bursts: int = 0


class ServiceStats(_Model):
    id: int
    name: str
    instances: list[int]
    rx_pkts: int
    rx_bytes: int = Field(description="Bytes the service's instances received "
                                      "(including instances that have left).")
    tx_pkts: int
    tx_bytes: int = Field(description="Bytes the service's instances handed on "
                                      "(including instances that have left).")
    drops: dict[str, int] = Field(description="Drops by reason.")


class FlowTableStats(_Model):
    lookup: str = Field(description="Flow lookup mode: off, cached or naive.")
    live: int = Field(description="Flows in the table now.")
    capacity: int = Field(description="Most flows the table holds (--flow-capacity).")
    live_v6: int = Field(description="Of the live flows, IPv6 ones.")
    capacity_v6: int = Field(description="Most IPv6 flows (--flow-capacity-v6).")
    lookups: int
    hits: int
    created: int
    aged: int
    deleted: int
    table_full: int = Field(description="New flows not tracked because the table was full.")
    non_ip: int
    timeout_ms: int


class EdgeStats(_Model):
    from_: str = Field(alias="from", description="port:NAME (ingress) or a service.")
    to: str = Field(description="A service, port:NAME or drop.")
    pkts: int
    bytes: int


class Stats(_Model):
    tsc_hz: int
    ports: list[PortStats]
    nfs: list[NfStats]
    services: list[ServiceStats]
    drops_total: int
    drops: dict[str, int] | None = Field(
        None, description="Every drop on the node once, by reason: they add up to drops_total.")
    flows: FlowTableStats | None = Field(None, description="The flow table's counters.")
    edges: list[EdgeStats] | None = Field(
        None, description="Packets per edge that carried any (from, to).")


class Chain(_Model):
    version: int
    hops: list[str]


class ChainSet(BaseModel):
    model_config = ConfigDict(extra="forbid")
    hops: list[str] = Field(description="Services, port:NAME or drop, in order, "
                                        "as in the deployment file.",
                            examples=[["firewall", "monitor", "port:out"]])


class ChainVersion(_Model):
    version: int
    note: str | None = Field(None, description="Services of it with no running instance "
                                               "(their packets are dropped as no_instance "
                                               "until one registers: a typo in a name "
                                               "makes such a service).")


class NfStopping(_Model):
    instance: int
    state: str


class LbSet(BaseModel):
    model_config = ConfigDict(extra="forbid")
    mode: Literal["flow", "queue", "rr"] = Field(
        description="flow (a flow always goes to the same instance), queue (the instance "
                    "with the shortest rx ring) or rr (round robin).",
        examples=["flow"])


class LbResult(_Model):
    service: str
    mode: str


class RxState(_Model):
    rx_enabled: bool


class Scale(BaseModel):
    model_config = ConfigDict(extra="forbid")
    replicas: JsonInt = Field(ge=0, le=65535,
                              description="How many instances the service should have: "
                                          "new ones copy the newest running instance, "
                                          "scaling in stops the newest.", examples=[2])


class Scaled(_Model):
    service: str
    replicas: int
    started_pids: list[int] = Field(description="Processes started (they get their "
                                                "instance ids when they register).")
    stopping: list[int] = Field(description="Instances asked to stop.")
    cancelled_pids: list[int] = Field(
        default_factory=list,
        description="Replicas started by an earlier scale-out that had not registered "
                    "yet, stopped by this scale-in.")


def _spec(model: type[BaseModel], name: str, **checks: Any) -> Any:
    """Field ``name`` of graph.py's ``model`` (its default, description
    and examples) for a body of the API, with the API's own ``checks``
    (min_length=1): one schema, read by the loader, the checker and the API."""
    field = model.model_fields[name]
    docs: dict[str, Any] = {"description": field.description}
    if field.examples:
        docs["examples"] = field.examples
    return Field(... if field.is_required() else field.default, **docs, **checks)


# The body of PUT /graphs/{name}: graph.GraphSpec's nodes and entry (the name
# is the path's; rules are POST /rules'). No docstring: it would be the schema's
# description in the OpenAPI spec.
class GraphSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    nodes: dict[str, list[str]] = _spec(schema.GraphSpec, "nodes")
    entry: str | None = _spec(schema.GraphSpec, "entry", min_length=1)


class Graph(_Model):
    name: str
    id: int
    version: int
    entry: str | None
    nodes: dict[str, list[str | None]]
    chain: bool = Field(description="Whether this is a chain (the default graph written "
                                    "by PUT /chain).")


class GraphList(_Model):
    graphs: list[Graph]


class GraphApplied(_Model):
    name: str
    id: int
    version: int
    note: str | None = Field(None, description="Services of it with no running instance "
                                               "(their packets are dropped as no_instance "
                                               "until one registers: a typo in a name "
                                               "makes such a service).")


class GraphRemoved(_Model):
    removed: str
    rules_removed: int = Field(description="The graph's rules, removed with it.")


def _loose(description: str, shape: dict[str, Any]) -> Any:
    """A policy body's field: documented with its shape, checked by
    sluice.core.policy (its messages, not pydantic's)."""
    return Field(None, description=description, json_schema_extra=shape)


_NAMES = {"type": "array", "items": {"type": "string"}}
_PAIRS = {"type": "array", "items": _NAMES}


class PolicyBody(BaseModel):
    """A policy: what a policy file has under ``policy:`` (docs/graphs.md,
    "Policies"). Checked by the policy compiler: a problem is 422 with its
    messages, one a line."""

    model_config = ConfigDict(extra="allow")
    name: Any = _loose("The policy's name, the graph's (PUT /policies/{name}: the path's; "
                       "leave it out or give the same).", {"type": "string"})
    match: Any = _loose("The rules that send new flows to the graph: one match (proto, src, "
                        "dst, sport, dport, in_port, priority) or a list of them.",
                        {"anyOf": [{"type": "object"}, {"type": "array",
                                                        "items": {"type": "object"}}]})
    nfs: Any = _loose("The NFs (services) of the service.", _NAMES)
    order: Any = _loose("Order templates: [NF, before|after, NF].", _PAIRS)
    priority: Any = _loose("Priority templates: [NF, NF], the first one's verdict wins.",
                           _PAIRS)
    position: Any = _loose("Position templates: [NF, first|last].", _PAIRS)
    exit: Any = _loose("Where the last NF sends: port:NAME or drop (default port:out).",
                       {"type": "string"})
    hops: Any = _loose("NF -> its other next hops (port:NAME or drop).",
                       {"type": "object", "additionalProperties": _NAMES})
    declare: Any = _loose("NF -> its operations (reads, writes, drops, routes, headers, "
                          "history), for an NF the compiler has no declaration of.",
                          {"type": "object", "additionalProperties": {"type": "object"}})

    def data(self) -> dict[str, Any]:
        """The fields the request gave (unknown ones too: the compiler names them)."""
        return {**self.model_dump(exclude_unset=True), **(self.model_extra or {})}


class CompiledGraph(_Model):
    name: str
    entry: str | None
    nodes: dict[str, list[str]] = Field(description="Node -> its next hops (the first is "
                                                    "the default); a group is one node.")
    groups: dict[str, Any] = Field(description="Parallel group -> members, copies, merge "
                                               "(docs/graphs.md, \"Parallel groups\").")
    match: list[dict[str, Any]] = Field(description="Its rules (rule.add params, without "
                                                    "graph).")


class CompiledPolicy(_Model):
    policy: str
    chain: list[str] = Field(description="The order the templates give the NFs.")
    nodes: list[list[str]] = Field(description="The chain cut into the graph's nodes: one "
                                               "NF, or a parallel group's members.")
    pairs: list[dict[str, Any]] = Field(description="Every adjacent pair of the chain: how "
                                                    "it runs (parallel, copy, sequential) "
                                                    "and why.")
    graph: CompiledGraph
    explain: list[str] = Field(description="What `sluice graph compile --explain` prints: "
                                           "the templates, each NF's operations, each "
                                           "pair's reasons, the graph and its rules.")


class PolicyRule(_Model):
    id: int
    added: bool = Field(description="False: the node had this rule already (same graph, "
                                    "priority and match), it was not added again.")


class PolicyApplied(_Model):
    graph: GraphApplied = Field(description="sluiced's graph.apply answer (the groups are "
                                            "sent flattened to their members in sequence).")
    rules: list[PolicyRule] = Field(description="The policy's match rules, in order.")
    compiled: CompiledPolicy


_PORTS_DOC = schema.PORTS_DOC


def _match_problem(key: str, value: Any, problem: str, query: bool = False) -> str:
    """match_params' ``problem`` with ``key`` said as a REST request gives it:
    its hint for in_port: port:NAME is a deployment file's (``write in_port:
    NAME``); here it is ``"in_port": "NAME"`` in a body, ``in_port=NAME`` in a
    query."""
    if key == "in_port" and isinstance(value, str) and value.startswith("port:"):
        name = value[len("port:"):]
        give = f"in_port={name}" if query else f'"in_port": {json.dumps(name)}'
        return (f"{show_value(value)} is not a port name: give the port's name alone, "
                f"{give}")
    return problem


def _match_field(key: str) -> BeforeValidator:
    """Checks and normalizes one match field as the CLI does (graph.match_params):
    a bad value is refused in the words ``sluice rule add --KEY`` uses; any is
    left out (a wildcard); numbers given as strings become numbers."""
    def check(v: Any) -> Any:
        if v is None:
            return None
        out, problems = match_params({key: v})
        if problems:
            raise PydanticCustomError("sluice_match", "{problem}",
                                      {"problem": _match_problem(key, v, problems[0][1])})
        return out.get(key)

    return BeforeValidator(check)


# The types say what each field takes (/docs); the check is match_params'.
Proto = Annotated[int | str | None, _match_field("proto")]
Ports = Annotated[int | str | None, _match_field("sport")]
Prefix = Annotated[str | None, _match_field("src")]


class Match(BaseModel):
    """Wildcard match on the 5-tuple; a field left out matches everything."""
    model_config = ConfigDict(extra="forbid")
    proto: Proto = _spec(schema.MatchSpec, "proto")
    src: Prefix = _spec(schema.MatchSpec, "src")
    dst: Prefix = _spec(schema.MatchSpec, "dst")
    sport: Ports = _spec(schema.MatchSpec, "sport")
    dport: Ports = _spec(schema.MatchSpec, "dport")
    in_port: Annotated[str | None, _match_field("in_port")] = _spec(schema.MatchSpec, "in_port")

    @model_validator(mode="after")
    def _together(self) -> Any:
        # What no one field shows: src and dst of two families, ports
        # without a protocol that has them (match_params, as the CLI).
        _, problems = match_params({k: getattr(self, k) for k in _MATCH_FIELDS})
        if problems:
            key, problem = problems[0]
            raise PydanticCustomError("sluice_match_fields", "{problem}",
                                      {"problem": problem, "field": key})
        return self


_MATCH_FIELDS = ("proto", "src", "dst", "sport", "dport")


class RuleAdd(Match):
    graph: str = _spec(schema.RuleSpec, "graph", min_length=1)
    priority: Annotated[int, _match_field("priority")] = _spec(schema.RuleSpec, "priority")


class RuleBatch(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rules: list[RuleAdd] = Field(min_length=1, max_length=1048576,
                                 description="Added all or none, in this order, with one "
                                             "classifier build.")


class RulesAdded(_Model):
    added: int
    first_id: int = Field(description="The first rule's id; the others follow in order.")
    last_id: int


class Rule(_Model):
    id: int
    graph: str
    priority: int
    proto: str | None = None
    src: str | None = None
    dst: str | None = None
    sport: str | None = None
    dport: str | None = None
    in_port: str | None = None
    flows: int | None = Field(None, description="Flows the rule classified (in the list).")


class RuleList(_Model):
    rules: list[Rule] = Field(description="Highest priority first, from position offset.")
    total: int = Field(description="Rules on the node.")
    truncated: bool = Field(description="Whether rules after these were left out (limit).")
    builds: int = Field(description="Rule classifiers sluiced has built so far.")


class RuleRemoved(_Model):
    removed: int


class FlowOverride(_Model):
    service: str
    type: str = Field(description="skip (SkipMe) or default (ChangeDefault, with to).")
    to: str | None = None


class Flow(_Model):
    id: int
    key: str = Field(examples=["udp 192.168.1.2:5353 > 10.0.0.9:53"])
    family: int = Field(description="4 or 6.")
    proto: int
    in_port: str = Field(description="The port the flow's first packet came in on.")
    graph: str
    pkts: int
    bytes: int
    idle_ms: int
    pins: dict[str, int] = Field(description="Service -> the instance its load balancer "
                                             "chose for the flow.")
    overrides: list[FlowOverride]
    state: str = Field(description="live, or deleting.")


class FlowList(_Model):
    total: int = Field(description="Flows in the table.")
    matched: int = Field(description="Flows that pass the filters.")
    flows: list[Flow]
    truncated: bool = Field(description="Whether some matched flows were left out (limit).")


class FlowsDeleted(_Model):
    deleted: int


class FlowByKey(BaseModel):
    model_config = ConfigDict(extra="forbid")
    key: str = Field(min_length=1, description="One flow.",
                     examples=["tcp 10.0.0.1:1234 > 10.0.0.2:80"])


class FlowByMatch(BaseModel):
    model_config = ConfigDict(extra="forbid")
    match: Match = Field(description="Every flow that matches ({}: every flow).")


def _flow_kind(v: Any) -> str | None:
    """Which of FlowByKey and FlowByMatch ``flow`` is: the one whose field it
    has; None (an error the 422 handler words) if it has neither or both."""
    if isinstance(v, dict) and ("key" in v) != ("match" in v):
        return "by-key" if "key" in v else "by-match"
    if isinstance(v, (FlowByKey, FlowByMatch)):
        return "by-key" if isinstance(v, FlowByKey) else "by-match"
    return None


# Only the errors of the member the body names: {"key": ...} is checked as
# FlowByKey alone, not as both (the tags are left out of the error's loc).
FlowRef = Annotated[Annotated[FlowByKey, Tag("by-key")] | Annotated[FlowByMatch, Tag("by-match")],
                    Discriminator(_flow_kind, custom_error_type="flow_ref",
                                  custom_error_message="give key or match")]
_FLOW_TAGS = ("by-key", "by-match")


class _FlowRequestBase(BaseModel):
    model_config = ConfigDict(extra="forbid")
    service: str = Field(min_length=1, description="The service the request is made for "
                                                   "(as if one of its NFs made it).")


class SkipMe(_FlowRequestBase):
    type: Literal["skip_me"]
    flow: FlowRef


class RequestMe(_FlowRequestBase):
    type: Literal["request_me"]
    flow: FlowRef


class ChangeDefault(_FlowRequestBase):
    type: Literal["change_default"]
    flow: FlowRef
    to: str = Field(min_length=1, description=f"The new default next hop: one of the "
                                              f"service's allowed next hops ({schema.HOP_DOC}).")


class Message(_FlowRequestBase):
    type: Literal["message"]
    key: str = Field(min_length=1, max_length=63, examples=["threshold"])
    value: str = Field(max_length=255, examples=["1000"])


# Discriminator, not Field(discriminator=): FastAPI's Body() replaces a
# Field's, and the body was then checked as every type, each error listed.
FlowRequest = Annotated[SkipMe | RequestMe | ChangeDefault | Message, Discriminator("type")]
REQUEST_TYPES = tuple(get_args(m.model_fields["type"].annotation)[0]
                      for m in get_args(get_args(FlowRequest)[0]))


class FlowRequestResult(_Model):
    applied: int = Field(description="Flows the request applied to (a message: NF "
                                     "instances that got it).")
    id: int | None = Field(None, description="A request with a match: the id it is kept "
                                             "under for new flows (the same request made "
                                             "again: the same id).")
    note: str | None = Field(None, description="A message some instances missed (their "
                                               "inbox was full): how many.")


class KeptRequest(_Model):
    id: int = Field(description="Stable: removing a request does not renumber the others.")
    type: str = Field(description="skip_me, request_me or change_default.")
    service: str
    to: str | None = Field(None, description="change_default: the new default next hop.")
    match: dict[str, str] = Field(description="The fields the request matches on (proto, "
                                              "src, dst, sport, dport, in_port); {}: every "
                                              "flow.")


class KeptRequestList(_Model):
    requests: list[KeptRequest] = Field(description="The oldest first.")


class KeptRequestRemoved(_Model):
    removed: int


_ERRORS = {
    s: {"model": Error, "description": d} for s, d in {
        400: "The body could not be read (not JSON, not UTF-8, nested too deeply).",
        401: "Missing or wrong token (only when the API was started with one).",
        409: "sluiced cannot do it now (its message says why).",
        413: "The body is larger than the API takes (max_body), or the request larger "
             "than sluiced takes (its --control-line-kb).",
        415: "The body is not sent as application/json.",
        422: "Bad parameters.",
        502: "sluiced answered something unexpected or closed the connection.",
        503: "sluiced is not running (or its socket may not be used).",
        504: "sluiced did not answer in time.",
    }.items()
}
_ERRORS_404 = {**_ERRORS, 404: {
    "model": Error,
    "description": "sluiced says a graph, rule, flow, service or NF instance named in the "
                   "request does not exist."}}
