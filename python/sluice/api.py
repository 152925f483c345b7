"""REST API and Prometheus metrics of a Sluice node (docs/api.md).

``create_app(node)`` returns a FastAPI app that serves what the control
socket of sluiced offers (docs/control-socket.md) as JSON over HTTP, events
as server-sent events and over a websocket, and the statistics as
Prometheus metrics::

    serve(create_app("demo"), host="127.0.0.1", port=8080)

(``uvicorn.run`` works too, but an open event stream then holds its
shutdown until uvicorn's ``timeout_graceful_shutdown``; ``serve`` and
``ApiServer`` end the streams as soon as the server stops.)

Every error body is ``{"detail": "..."}``: sluiced's own message for the
errors it reports, else one line saying what went wrong and what to do (a
request refused for its fields: one line per problem, ``field.path: what is
wrong; what to give``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import json
import re
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Annotated, Any, Literal, get_args, get_origin

import uvicorn
from fastapi import Body, FastAPI, Query, Request, WebSocket
from fastapi import Path as PathParam
from fastapi.exceptions import RequestValidationError, ResponseValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, Response, StreamingResponse
from fastapi.routing import APIRoute
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
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
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match as RouteMatch
from starlette.websockets import WebSocketDisconnect, WebSocketState

from . import __version__
from .client import (
    METHODS,
    Client,
    ConnectError,
    ConnectionLost,
    RpcError,
    RpcTimeout,
    SluiceError,
    rule_build_seconds,
    say_methods,
    socket_path_for,
)
from .deploy import kind_of, show_value
from .graph import did_you_mean, match_params

PREFIX = "/api/v1"
METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# The endpoints of each control-socket method (docs/api.md), from
# client.METHODS, the one table the CLI says commands from. shutdown has
# none: stopping the node is for whoever started it (sluice up, systemd),
# not HTTP.
SOCKET_METHODS = {m: rest for m, (_, rest) in METHODS.items() if rest is not None}


def _endpoint(endpoints: str) -> str:
    """The first of ``endpoints`` (``GET /graphs, GET /graphs/{name}``) with
    the prefix: ``GET /api/v1/graphs``."""
    verb, _, path = endpoints.split(", ")[0].partition(" ")
    return f"{verb} {PREFIX}{path.split(' ')[0]}"


# What a REST user is told instead of a method sluiced's message names.
ENDPOINTS = {m: _endpoint(rest) for m, rest in SOCKET_METHODS.items()}


def _rest_note(res: Any) -> Any:
    """sluiced's answer with its ``note`` (which names control-socket
    methods) in REST words."""
    if isinstance(res, dict) and isinstance(res.get("note"), str):
        res = {**res, "note": rest_text(res["note"])}
    return res


def rest_text(message: str) -> str:
    """``message`` with the methods it names said as endpoints: ``see
    rule.list`` -> ``see `GET /api/v1/rules```."""
    return say_methods(message, ENDPOINTS)


# -32000 messages that say a thing named in the request does not exist.
# (A batch's refusal names the rule first: "rules[N]: no graph named ...".)
_NOT_FOUND = re.compile(r"^(?:rules\[\d+\]: )?no (such |service |running NF instance "
                        r"|graph named |rule with id |flow with id |flow '"
                        r"|kept wildcard request with id )")


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


_HOP_DOC = "a service of the graph, port:NAME or drop"


class GraphSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    nodes: dict[str, list[str]] = Field(
        description=f"Service -> its allowed next hops ({_HOP_DOC}); the first is the "
                    f"default.",
        examples=[{"fw": ["mon", "drop"], "mon": ["port:out"]}])
    entry: str | None = Field(None, min_length=1,
                              description="The first node (default: the first of nodes).")


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


_PORTS_DOC = "a number 0-65535, \"LO-HI\" or \"any\""


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
    proto: Proto = Field(None, description="tcp, udp, icmp, icmp6, sctp, gre, esp, "
                         "ah, any or a number 0-255", examples=["udp"])
    src: Prefix = Field(None, description="A prefix or address (IPv4 or IPv6), "
                        "or any.", examples=["10.0.0.0/8"])
    dst: Prefix = Field(None, description="A prefix or address (IPv4 or IPv6), "
                        "or any.")
    sport: Ports = Field(None, description=_PORTS_DOC)
    dport: Ports = Field(None, description=_PORTS_DOC, examples=[53])
    in_port: Annotated[str | None, _match_field("in_port")] = Field(
        None, description="Only packets that came in on this port (its name).")

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
    graph: str = Field(min_length=1, description="New flows that match go to this graph.",
                       examples=["anomaly"])
    priority: Annotated[int, _match_field("priority")] = Field(
        0, description="-1000000 to 1000000: the highest wins; between equal ones, the "
                       "older rule.")


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
                                              f"service's allowed next hops ({_HOP_DOC}).")


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


class _PassThrough(APIRoute):
    """Routes answer with what sluiced sent: a field it left out is not added
    with the model's default (the models type what sluiced sends). Before
    FastAPI reads a request, the routes under /api/v1 refuse query parameters
    they do not take, and a body that is not one JSON object (what is wrong
    with it and what to send; _check_body)."""

    def __init__(self, *args: Any, **kwargs: Any):
        kwargs["response_model_exclude_unset"] = True
        super().__init__(*args, **kwargs)

    def get_route_handler(self) -> Any:
        handler = super().get_route_handler()
        if not self.path.startswith(PREFIX):
            return handler
        known = sorted({f.alias for f in self.dependant.query_params})

        async def checked(request: Request) -> Any:
            where = f"{request.method} {self.path}"
            for name in request.query_params:
                if name not in known:
                    takes = f"takes {', '.join(known)}" if known else "takes none"
                    raise ApiError(422, f"unknown query parameter '{_short(name, 40)}': "
                                        f"{where} {takes}")
            if self.body_field is not None:
                await _check_body(request, where, _body_shape(self.body_field))
            return await handler(request)

        return checked


# -- request bodies -----------------------------------------------------------------------

MAX_BODY = 1 << 20   # bytes of a request body, by default (create_app's max_body)
MAX_DEPTH = 32       # levels of JSON nesting in a body (no field nests more than 4)
MAX_DIGITS = 30      # digits of an integer in a body (no field takes more than 7)
NAME_MAX = 255       # characters of a name or flow key in a path or query
MAX_PROBLEMS = 10    # lines of a 422 detail that lists what is wrong with a request


class BodyTooLarge(Exception):
    """Raised by BodyLimit's receive when the body grows past the limit."""


class BodyLimit:
    """ASGI middleware: an HTTP request body of more than ``max_body`` bytes
    is refused with 413, by its Content-Length before anything is read, else
    (a chunked body) as soon as more has arrived."""

    def __init__(self, app: Any, max_body: int):
        self.app = app
        self.max_body = max_body

    def _too_large(self, size: str) -> JSONResponse:
        return JSONResponse({"detail": f"the body is {size} bytes, more than this API "
                                       f"takes ({self.max_body} bytes): send a smaller one"},
                            status_code=413)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                if not value.strip().isdigit():
                    resp = JSONResponse({"detail": f"Content-Length "
                                                   f"{_short(value.decode('latin-1'), 40)!r} "
                                                   f"is not a number of bytes"},
                                        status_code=400)
                    await resp(scope, receive, send)
                    return
                n = value.strip().decode("latin-1")
                if len(n) > 18 or int(n) > self.max_body:
                    await self._too_large(_short(n, 40))(scope, receive, send)
                    return
        seen = 0
        started = False

        async def counted() -> Any:
            nonlocal seen
            msg = await receive()
            if msg.get("type") == "http.request":
                seen += len(msg.get("body", b""))
                if seen > self.max_body:
                    raise BodyTooLarge
            return msg

        async def watched(msg: Any) -> None:
            nonlocal started
            started = started or msg.get("type") == "http.response.start"
            await send(msg)

        try:
            await self.app(scope, counted, watched)
        except BodyTooLarge:
            if started:
                raise
            await self._too_large(f"more than {self.max_body}")(scope, receive, send)


def _body_shape(field: Any) -> str:
    """What a route's body is, for messages: 'a JSON object with hops'."""
    ann = getattr(getattr(field, "field_info", None), "annotation", None)
    names: list[str] = []
    for model in (get_args(ann) or (ann,)) if ann is not None else ():
        for m in get_args(model) or (model,):
            if isinstance(m, type) and issubclass(m, BaseModel):
                names += [n for n in m.model_fields if n not in names]
    if not names:
        return "a JSON object (/docs describes it)"
    return f"a JSON object with {', '.join(names)} (/docs describes it)"


class _BigNumber(ValueError):
    pass


class _NotJson(ValueError):
    pass


def _parse_int(s: str) -> int:
    if len(s.lstrip("-")) > MAX_DIGITS:
        raise _BigNumber(len(s.lstrip("-")))
    return int(s)


def _no_constant(s: str) -> Any:
    raise _NotJson(f"{s} is not JSON (a number must be finite)")


def _depth(value: Any) -> int:
    """Levels of arrays and objects in a parsed JSON value."""
    depth, level = 0, [value]
    while level:
        level = [c for v in level if isinstance(v, (dict, list))
                 for c in (v.values() if isinstance(v, dict) else v)]
        depth += 1
    return depth - 1


_JSON_KINDS = {list: "an array", str: "a string", int: "a number", float: "a number",
               bool: "a boolean", type(None): "null"}


async def _check_body(request: Request, where: str, shape: str) -> None:
    """Raises ApiError unless the body is one JSON object (UTF-8, not too deep,
    no number too large); FastAPI then validates its fields."""
    body = await request.body()  # BodyTooLarge: BodyLimit answers 413
    if not body:
        raise ApiError(422, f"the body is missing: {where} takes {shape}")
    ctype = request.headers.get("content-type", "")
    mime = ctype.split(";")[0].strip().lower()
    if not (mime == "application/json" or (mime.startswith("application/")
                                           and mime.endswith("+json"))):
        got = f"'{_short(ctype, 60)}'" if ctype else "none"
        raise ApiError(415, f"the body must be JSON, sent with 'Content-Type: "
                            f"application/json' (Content-Type was {got})")
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ApiError(400, f"the body is not UTF-8 (byte 0x{body[e.start]:02x} at offset "
                            f"{e.start}): send JSON encoded as UTF-8") from None
    try:
        value = json.loads(text, parse_int=_parse_int, parse_constant=_no_constant)
    except RecursionError:
        value, depth = None, None
    except json.JSONDecodeError as e:
        raise ApiError(400, f"the body is not valid JSON ({e.msg} at line {e.lineno} "
                            f"column {e.colno}): {where} takes {shape}") from None
    except _BigNumber as e:
        raise ApiError(422, f"the body has a number of {e.args[0]} digits: no field of "
                            f"this API takes one that large") from None
    except _NotJson as e:
        raise ApiError(400, f"the body is not valid JSON ({e}): {where} takes "
                            f"{shape}") from None
    else:
        depth = _depth(value)
    if depth is None or depth > MAX_DEPTH:
        raise ApiError(400, f"the body's JSON is nested more than {MAX_DEPTH} levels deep; "
                            f"{where} takes {shape}")
    if not isinstance(value, dict):
        raise ApiError(422, f"the body is {_JSON_KINDS.get(type(value), 'not an object')}, "
                            f"not a JSON object: {where} takes {shape}")


def _short(s: str, n: int) -> str:
    return s if len(s) <= n else s[:n] + "..."


# -- errors -------------------------------------------------------------------------------

class ApiError(Exception):
    def __init__(self, status: int, detail: str):
        super().__init__(status, detail)
        self.status = status
        self.detail = detail


# What pydantic adds to an error's loc for a member of a union, not a field.
_PYDANTIC_TAG = re.compile(r"^((function-(before|after|wrap|plain)|literal|list|dict|nullable|"
                           r"tagged-union|union)\[.*\]|constrained-\w+|int|str|bool|float)$")

# What each field takes, said in a 422 (`replicas: expected a whole number ...`): by
# its path, a list index or a node name as *; a rule of a batch is said as a rule.
_TAKES = {
    "hops": 'an array of hops, e.g. ["firewall", "port:out"]',
    "hops.*": "a hop as a string: a service, port:NAME or drop",
    "nodes": 'an object of each service\'s next hops, e.g. {"fw": ["mon", "drop"], '
             '"mon": ["port:out"]}',
    "nodes.*": 'an array of next hops, the default first, e.g. ["port:out"]',
    "nodes.*.*": "a next hop as a string: a service of the graph, port:NAME or drop",
    "entry": "the name of a node of the graph (or leave entry out: the first node)",
    "mode": "flow, queue or rr",
    "replicas": "a whole number of instances from 0 to 65535, e.g. 2",
    "rules": 'an array of rules, e.g. [{"graph": "web", "proto": "tcp", "dport": 80}]',
    "rules.*": 'a rule, e.g. {"graph": "web", "proto": "tcp", "dport": 80}',
    "graph": 'the name of a graph as a string, e.g. "web" (`GET /api/v1/graphs` lists them)',
    "service": 'the name of a service as a string, e.g. "firewall" (`GET /api/v1/services` '
               'lists them)',
    "to": "one of the service's next hops as a string: a service, port:NAME or drop",
    "key": 'a string of 1 to 63 characters, e.g. "threshold"',
    "value": 'a string of at most 255 characters, e.g. "1000"',
    "flow": '{"key": "tcp 10.0.0.1:1234 > 10.0.0.2:80"} for one flow or {"match": {...}} '
            'for every flow that matches ({"match": {}}: all)',
    "flow.key": 'a flow key, e.g. "tcp 10.0.0.1:1234 > 10.0.0.2:80" (`GET /api/v1/flows` '
                'lists them)',
    "flow.match": "an object of match fields (proto, src, dst, sport, dport, in_port); {} "
                  "for every flow",
    "query.limit": "a whole number from 0 to 100000",
    "query.offset": "a whole number from 0 to 4294967295",
    "query.instance": "an instance id from 0 to 65535 (`GET /api/v1/nfs` lists them)",
    "query.max_events": "a whole number of events, 1 or more",
    "query.all": "true or false",
    "path.instance": "an instance id from 0 to 65535 (`GET /api/v1/nfs` lists them)",
    "path.rule_id": "a rule id from 0 to 4294967295 (`GET /api/v1/rules` lists them)",
    "path.request_id": "a request id from 1 to 4294967295 (`GET /api/v1/flow-requests` "
                       "lists them)",
    "path.flow": "a flow id, or a flow key URL-encoded (`GET /api/v1/flows` lists them)",
}

# What pydantic's type errors expected, for a field _TAKES does not name.
_TYPE_NAMES = {
    "int_type": "an integer", "int_parsing": "an integer", "int_from_float": "an integer",
    "int_parsing_size": "an integer", "string_type": "a string", "list_type": "an array",
    "dict_type": "an object", "bool_type": "true or false", "bool_parsing": "true or false",
    "float_type": "a number", "float_parsing": "a number", "model_type": "an object",
    "model_attributes_type": "an object", "literal_error": "",
}


def _json_kind(v: Any) -> str:
    """What a JSON value is, in JSON's words: ``a string ('x')``, ``an array``."""
    if isinstance(v, (list, dict)) or v is None:
        return {list: "an array", dict: "an object"}.get(type(v), "null")
    return kind_of(v)


def _unwrap(tp: Any) -> Any:
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    return tp


def _model_at(tp: Any, loc: list[Any]) -> type[BaseModel] | None:
    """The model of a request whose key ``loc`` (an error's loc after ``body``,
    tags of unions included) ends at: for the fields it takes."""
    for part in loc[:-1]:
        tp = _unwrap(tp)
        args = [_unwrap(a) for a in get_args(tp) if a is not type(None)]
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            field = tp.model_fields.get(str(part))
            if field is None:
                return None
            tp = field.annotation
        elif get_origin(tp) is list:
            tp = args[0]
        elif get_origin(tp) is dict:
            tp = args[-1]
        elif part in REQUEST_TYPES:  # FlowRequest: the member the body's type names
            tp = dict(zip(REQUEST_TYPES, args, strict=True))[part]
        elif part in _FLOW_TAGS:  # FlowRef: the member the body's flow is
            tp = dict(zip(_FLOW_TAGS, args, strict=True))[part]
        elif args and not _PYDANTIC_TAG.match(str(part)):
            return None
    tp = _unwrap(tp)
    return tp if isinstance(tp, type) and issubclass(tp, BaseModel) else None


def _takes(where: list[Any]) -> str | None:
    """What the field at ``where`` (a cleaned loc) takes, from _TAKES."""
    parts = [str(x) for x in where]
    if parts and parts[0] == "nodes" and len(parts) > 1:
        parts[1] = "*"
    key = ".".join("*" if p.isdigit() and i else p for i, p in enumerate(parts))
    for prefix in ("rules.*.", "flow.match."):  # a rule of a batch, a request's match
        if key.startswith(prefix) and key not in _TAKES:
            key = key[len(prefix):]
    return _TAKES.get(key)


def _problem(err: Any, body: Any = None) -> tuple[str, str]:
    """The field path and the message of one pydantic error of a request:
    ``skip_me.flow`` and what is wrong there and what to give. ``body`` is the
    type of the route's body (for the fields an object takes)."""
    kind, ctx, value = err.get("type"), err.get("ctx") or {}, err.get("input")
    raw = list(err.get("loc", ()))
    where = list(raw)
    if where[:1] == ["body"] and len(where) > 1 and where[1] in REQUEST_TYPES:
        del where[1]  # the member of FlowRequest the body's type named
    where = [x for x in where if x != "body" and x not in _FLOW_TAGS
             and not _PYDANTIC_TAG.match(str(x))]
    # a query or path value is text: shown as given; a body's value by its JSON kind
    in_url = bool(where) and where[0] in ("query", "path")
    got = show_value(value) if in_url and isinstance(value, str) else _json_kind(value)
    takes = _takes(where)
    msg = str(err.get("msg"))
    if kind == "sluice_match_fields":
        where.append(ctx.get("field", ""))  # the field to fix
    elif kind == "sluice_match":
        pass  # match_params' words (_match_field)
    elif kind == "extra_forbidden":
        model = _model_at(body, raw[1:]) if raw[:1] == ["body"] else None
        known = list(model.model_fields) if model is not None else []
        if model is not None and "type" in known:
            known.remove("type")
            known.insert(0, "type")
        fields = f" (this object takes {', '.join(known)})" if known else ""
        msg = f"unknown field: leave it out{fields}{did_you_mean(str(raw[-1]), known)}"
    elif kind == "missing":
        msg = f"missing: this field is required; give {takes}" if takes else \
            "missing: this field is required (/docs lists the fields)"
    elif kind in ("union_tag_invalid", "union_tag_not_found"):
        # FlowRequest's type (the one string discriminator of the bodies)
        where.append("type")
        types = f"{', '.join(REQUEST_TYPES[:-1])} or {REQUEST_TYPES[-1]}"
        if kind == "union_tag_not_found":
            msg = f"missing: say which request this is: {types}"
        else:
            given = value.get("type") if isinstance(value, dict) else ctx.get("tag")
            hint = did_you_mean(str(given), REQUEST_TYPES)
            shown = "null" if given is None else show_value(given)
            msg = f"{shown} is not a request type: use {types}{hint}"
    elif kind == "flow_ref":
        one = ('{"key": "tcp 10.0.0.1:1234 > 10.0.0.2:80"} for one flow or '
               '{"match": {...}} for every flow that matches ({"match": {}}: all)')
        if not isinstance(value, dict):
            msg = f"expected an object, got {_json_kind(value)}: give {one}"
        elif "key" in value:
            msg = f"give key or match, not both: {one}"
        else:
            msg = f"missing: give {one}"
    elif kind in _TYPE_NAMES:
        if takes is None:
            model = _model_at(body, raw[1:] + ["x"]) if raw[:1] == ["body"] else None
            takes = (f"an object with {', '.join(model.model_fields)}" if model is not None
                     else _TYPE_NAMES[kind] or f"one of {ctx.get('expected')}")
        hint = ""
        if kind == "literal_error" and isinstance(value, str):
            hint = did_you_mean(value, re.findall(r"'([^']*)'", str(ctx.get("expected"))))
        msg = f"expected {takes}, got {got}{hint}"
    elif kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        op = {"greater_than_equal": "less than", "greater_than": "not more than",
              "less_than_equal": "more than", "less_than": "not less than"}[kind]
        bound = next(iter(ctx.values()), "")
        shown = value if in_url else show_value(value)
        msg = f"{shown} is out of range ({op} {bound}): give {takes or 'a number in range'}"
    elif kind in ("string_too_short", "too_short"):
        msg = f"is empty: give {takes}" if takes else \
            f"{msg[0].lower()}{msg[1:]}: give more (/docs describes the field)"
    elif kind in ("string_too_long", "too_long"):
        size = len(value) if isinstance(value, (str, list)) else ctx.get("actual_length")
        unit = "characters" if kind == "string_too_long" else "items"
        most = ctx.get("max_length")
        msg = f"{size} {unit}, more than the {most} it takes: " + (
            f"give {takes}" if takes else f"give at most {most}" + (
                " (send the rest in another request)" if kind == "too_long" else ""))
    else:
        msg = f"{msg[0].lower()}{msg[1:]}, got {got}: /docs says what this field takes"
    return ".".join(str(x) for x in where), msg


# How Client words a connection that broke (not an answer it could not read).
_LOST = re.compile(r": (connection to .* lost|sluiced closed the connection)")


def http_error(e: SluiceError, fields: dict[str, str] | None = None) -> ApiError:
    """The HTTP status and detail of an error of the client (``fields``: see
    _param_said)."""
    if isinstance(e, RpcError):
        # sluiced's message names methods (see rule.list): said as endpoints
        text = rest_text(e.message)
        if e.code == -32602:
            return ApiError(422, _param_said(text, fields or {}))
        if e.code == -32000:
            return ApiError(404 if _NOT_FOUND.match(e.message) else 409, text)
        if e.code == -32601:
            return ApiError(501, f"{text} (sluiced is older than this API)")
        if e.code == -32600 and e.message.startswith("request line longer than"):
            return ApiError(413, f"sluiced refused {e.method}: {text}")
        return ApiError(502, f"sluiced answered {e.method}: {text} "
                             f"(JSON-RPC error {e.code})")
    if isinstance(e, ConnectError):
        return ApiError(503, str(e))
    if isinstance(e, RpcTimeout):
        return ApiError(504, str(e))
    if isinstance(e, ConnectionLost) and _LOST.search(str(e)):
        return ApiError(503, f"{e}: sluiced may have stopped or restarted; check that it "
                             f"runs (sluice status) and try again (the next request "
                             f"connects anew)")
    return ApiError(502, str(e))


# How sluiced names a param in a refusal: "param 'in_port': no port named 'x'".
_PARAM = re.compile(r"^param '(\w+)':? ")


def _param_said(detail: str, fields: dict[str, str]) -> str:
    """sluiced's refusal of a param said with the field of the request it came
    from, as the API's own 422s say it: ``param 'in_port': no port ...`` is
    ``in_port: no port ...`` (a body field) or ``query.in_port: ...``."""
    m = _PARAM.match(detail)
    return f"{fields.get(m[1], m[1])}: {detail[m.end():]}" if m else detail


def _check_params(method: str, params: dict[str, Any]) -> None:
    """Raises ApiError for what sluiced cannot read (it would answer -32700).
    A request line longer than sluiced's --control-line-kb is sluiced's to
    refuse (-32600, then it closes the connection: 413, see http_error)."""
    todo: list[tuple[str, Any]] = [(k, v) for k, v in params.items()]
    while todo:
        where, v = todo.pop()
        if isinstance(v, dict):
            todo += [(f"{where}.{k}", x) for k, x in v.items()]
            todo += [(f"{where} (a key)", k) for k in v]
        elif isinstance(v, list):
            todo += [(f"{where}.{i}", x) for i, x in enumerate(v)]
        elif isinstance(v, str):
            if "\0" in v:
                raise ApiError(422, f"{where}: contains a NUL character (\\u0000), which "
                                    f"sluiced does not take: leave it out")
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                raise ApiError(422, f"{where}: is not valid Unicode (a lone surrogate "
                                    f"\\u{ord(v[_surrogate(v)]):04x}): send UTF-8 "
                                    f"text") from None


def _surrogate(s: str) -> int:
    return next(i for i, c in enumerate(s) if 0xD800 <= ord(c) <= 0xDFFF)


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


# -- sluiced ------------------------------------------------------------------------------

class Sluiced:
    """One connection to sluiced shared by the request threads."""

    def __init__(self, node: str, socket_path: str | Path | None, timeout: float = 5.0):
        self.client = Client(node, socket_path, timeout=timeout)
        self.lock = threading.Lock()

    @property
    def socket_path(self) -> Path:
        return self.client.socket_path

    def call(self, method: str, wait: float = 0.0, fields: dict[str, str] | None = None,
             **params: Any) -> Any:
        """``wait``: seconds to wait for the answer at least (rule builds).
        ``fields``: where the request has sluiced's params that are not body
        fields (``{"key": "path.flow"}``), for its messages (_param_said)."""
        _check_params(method, params)
        with self.lock:
            try:
                with self.client.patience(wait):
                    return self.client.call(method, **params)
            except RpcError as e:
                if e.code in (-32700, -32600):
                    # sluiced could not read the request and may close the
                    # connection (a long line): the next call connects anew.
                    self.client.close()
                raise http_error(e, fields) from None
            except SluiceError as e:
                raise http_error(e) from None

    def close(self) -> None:
        with self.lock:
            self.client.close()


# -- metrics ------------------------------------------------------------------------------

class StatsCollector:
    """Prometheus collector: one ``stats`` call per scrape."""

    def __init__(self, sluiced: Sluiced):
        self.sluiced = sluiced

    def describe(self) -> list[Any]:
        return []

    def collect(self) -> Iterator[Any]:
        st = self.sluiced.call("stats")
        yield from stats_metrics(st)


def _drop_items(d: Any) -> list[tuple[str, int]]:
    return sorted((str(k), int(v)) for k, v in (d or {}).items())


def stats_metrics(st: dict[str, Any]) -> list[Any]:
    """The metric families of one ``stats`` result (docs/api.md lists them)."""
    def counter(name: str, doc: str, labels: list[str]) -> CounterMetricFamily:
        return CounterMetricFamily(name, doc, labels=labels)

    def gauge(name: str, doc: str, labels: list[str]) -> GaugeMetricFamily:
        return GaugeMetricFamily(name, doc, labels=labels)

    p_rx = counter("sluice_port_rx_packets", "Packets read from the port.", ["port"])
    p_tx = counter("sluice_port_tx_packets", "Packets sent on the port.", ["port"])
    p_rxb = counter("sluice_port_rx_bytes", "Bytes read from the port.", ["port"])
    p_txb = counter("sluice_port_tx_bytes", "Bytes sent on the port.", ["port"])
    p_st = counter("sluice_port_rx_stalls", "Times reading the port stalled.", ["port"])
    p_dr = counter("sluice_port_drops", "Packets that entered through the port and were "
                   "dropped before the first NF, plus TX drops on it, by reason.",
                   ["port", "reason"])
    for p in st.get("ports", []):
        lab = [str(p["name"])]
        p_rx.add_metric(lab, p["rx_pkts"])
        p_tx.add_metric(lab, p["tx_pkts"])
        p_rxb.add_metric(lab, p["rx_bytes"])
        p_txb.add_metric(lab, p["tx_bytes"])
        p_st.add_metric(lab, p.get("rx_stalls", 0))
        for reason, v in _drop_items(p.get("drops")):
            p_dr.add_metric(lab + [reason], v)

    nl = ["service", "instance"]
    n_rx = counter("sluice_nf_rx_packets", "Packets the NF instance received.", nl)
    n_tx = counter("sluice_nf_tx_packets", "Packets the NF instance handed on.", nl)
    n_rxb = counter("sluice_nf_rx_bytes", "Bytes the NF instance received.", nl)
    n_txb = counter("sluice_nf_tx_bytes", "Bytes the NF instance handed on.", nl)
    n_cyc = counter("sluice_nf_cycles", "TSC cycles the NF instance spent on packets.", nl)
    n_dr = counter("sluice_nf_drops", "Packets the NF instance dropped or could not hand "
                   "on, by reason.", nl + ["reason"])
    n_occ = gauge("sluice_nf_ring_occupancy", "Packets waiting in the NF instance's "
                  "rx ring.", nl)
    n_size = gauge("sluice_nf_ring_size", "Capacity of the NF instance's rx ring.", nl)
    n_cpp = gauge("sluice_nf_cycles_per_packet", "TSC cycles per packet of the NF "
                  "instance (cumulative average).", nl)
    n_up = gauge("sluice_nf_running", "1 when the NF instance is running, else 0.", nl)
    for n in st.get("nfs", []):
        lab = [str(n["service"]), str(n["instance"])]
        n_rx.add_metric(lab, n["rx_pkts"])
        n_tx.add_metric(lab, n["tx_pkts"])
        n_rxb.add_metric(lab, n["rx_bytes"])
        n_txb.add_metric(lab, n["tx_bytes"])
        n_cyc.add_metric(lab, n.get("cycles", 0))
        for reason, v in _drop_items(n.get("drops")):
            n_dr.add_metric(lab + [reason], v)
        ring = n.get("rx_ring") or {}
        n_occ.add_metric(lab, ring.get("count", 0))
        n_size.add_metric(lab, ring.get("size", 0))
        n_cpp.add_metric(lab, n.get("cycles_per_pkt", 0.0))
        n_up.add_metric(lab, 1 if n.get("state") == "running" else 0)

    s_rx = counter("sluice_service_rx_packets", "Packets the service's instances received "
                   "(including instances that have left).", ["service"])
    s_tx = counter("sluice_service_tx_packets", "Packets the service's instances handed on.",
                   ["service"])
    s_rxb = counter("sluice_service_rx_bytes", "Bytes the service's instances received "
                    "(including instances that have left).", ["service"])
    s_txb = counter("sluice_service_tx_bytes", "Bytes the service's instances handed on.",
                    ["service"])
    s_dr = counter("sluice_service_drops", "Packets dropped at the service, by reason.",
                   ["service", "reason"])
    s_inst = gauge("sluice_service_instances", "Live instances of the service.", ["service"])
    for s in st.get("services", []):
        lab = [str(s["name"])]
        s_rx.add_metric(lab, s["rx_pkts"])
        s_tx.add_metric(lab, s["tx_pkts"])
        s_rxb.add_metric(lab, s["rx_bytes"])
        s_txb.add_metric(lab, s["tx_bytes"])
        for reason, v in _drop_items(s.get("drops")):
            s_dr.add_metric(lab + [reason], v)
        s_inst.add_metric(lab, len(s.get("instances", [])))

    total = counter("sluice_drops", "All packets dropped on the node.", [])
    total.add_metric([], st.get("drops_total", 0))
    # stats.drops counts each drop once (ports, instances, sluiced on their behalf, the TX
    # thread, instances gone), so sum(sluice_node_drops_total) == sluice_drops_total.
    node_dr = counter("sluice_node_drops", "Packets dropped on the node, by reason: every "
                      "drop once, including those of instances that have left.", ["reason"])
    for reason, v in _drop_items(st.get("drops")):
        node_dr.add_metric([reason], v)
    out = [p_rx, p_tx, p_rxb, p_txb, p_st, p_dr, n_rx, n_tx, n_rxb, n_txb, n_cyc, n_dr,
           n_occ, n_size, n_cpp, n_up, s_rx, s_tx, s_rxb, s_txb, s_dr, s_inst, total, node_dr]

    fl = st.get("flows")
    if fl is not None:  # sluiced before the flow table has no stats.flows
        for fam, key in [
            (gauge("sluice_flows_live", "Flows in the flow table now.", []), "live"),
            (gauge("sluice_flows_capacity", "Most flows the flow table holds "
                   "(--flow-capacity).", []), "capacity"),
            (counter("sluice_flows_created", "Flow table entries created.", []), "created"),
            (counter("sluice_flows_aged", "Flow table entries removed because they were "
                     "idle longer than --flow-timeout.", []), "aged"),
            (counter("sluice_flows_deleted", "Flow table entries deleted on request.", []),
             "deleted"),
            (counter("sluice_flows_table_full", "New flows not tracked because the flow "
                     "table was full.", []), "table_full")]:
            fam.add_metric([], fl.get(key, 0))
            out.append(fam)
    return out


# -- auth ---------------------------------------------------------------------------------

class TokenAuth:
    """ASGI middleware: every HTTP request must carry the token."""

    def __init__(self, app: Any, token: str):
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket") or self._ok(scope):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            # Refused before the handshake completes: the client sees HTTP 403.
            await send({"type": "websocket.close", "code": 1008,
                        "reason": "missing or wrong token"})
            return
        resp = JSONResponse(
            {"detail": "missing or wrong token: send 'Authorization: Bearer TOKEN' "
                       "or 'X-Sluice-Token: TOKEN'"},
            status_code=401, headers={"WWW-Authenticate": "Bearer"})
        await resp(scope, receive, send)

    def _ok(self, scope: Any) -> bool:
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                scheme, _, cred = value.partition(b" ")
                if scheme.lower() == b"bearer" and hmac.compare_digest(cred.strip(),
                                                                        self.token):
                    return True
            elif name == b"x-sluice-token" and hmac.compare_digest(value.strip(), self.token):
                return True
        if scope["type"] == "websocket":
            # Browsers cannot set headers on a websocket: ?token=TOKEN works there.
            from urllib.parse import parse_qs

            qs = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            for cred in qs.get("token", []):
                if hmac.compare_digest(cred.encode("latin-1"), self.token):
                    return True
        return False


def _document_token(app: FastAPI) -> None:
    """Declares the token in the OpenAPI spec (both headers work)."""
    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version,
                                 description=app.description, routes=app.routes)
            schema.setdefault("components", {})["securitySchemes"] = {
                "bearer": {"type": "http", "scheme": "bearer"},
                "token": {"type": "apiKey", "in": "header", "name": "X-Sluice-Token"},
            }
            schema["security"] = [{"bearer": []}, {"token": []}]
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None, option: str = "--host",
               token_option: str = "--token") -> None:
    """Refuses to serve beyond loopback without a token (raises SluiceError)."""
    if not token and not is_loopback(host):
        raise SluiceError(f"{option} {host} is not a loopback address: give {token_option} "
                          f"TOKEN too (clients then send 'Authorization: Bearer TOKEN')")


def parse_listen(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:8080`` for IPv6) as (host, port); raises SluiceError."""
    host, sep, port = value.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise SluiceError(f"--api {value!r}: give HOST:PORT, e.g. 127.0.0.1:8080")
    return host, int(port)


# Seconds uvicorn lets requests finish once it stops; then it cancels them. Event
# streams end at once (Closing); this bounds anything else (a slow sluiced call).
GRACEFUL_S = 2.0


class Closing:
    """Set when the server stops: the event streams of the app end then,
    instead of holding the shutdown (uvicorn waits for open responses)."""

    def __init__(self) -> None:
        self.is_set = False
        self._waiters: set[asyncio.Future[None]] = set()

    def set(self) -> None:
        """Wakes every stream; safe from any thread."""
        self.is_set = True
        for f in list(self._waiters):
            with contextlib.suppress(RuntimeError):  # its loop is closed: nothing waits
                f.get_loop().call_soon_threadsafe(_wake, f)

    async def wait(self) -> None:
        if self.is_set:
            return
        f: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.add(f)
        try:
            if not self.is_set:
                await f
        finally:
            self._waiters.discard(f)


def _wake(f: asyncio.Future[None]) -> None:
    if not f.done():
        f.set_result(None)


class Server(uvicorn.Server):
    """uvicorn's server that, when it stops, first ends the event streams of
    an app made by ``create_app`` (so an open dashboard does not hold it)."""

    def __init__(self, config: uvicorn.Config, banner: str | None = None):
        super().__init__(config)
        self.banner = banner

    async def startup(self, sockets: list[Any] | None = None) -> None:
        await super().startup(sockets)
        if self.started and self.banner:
            print(self.banner, flush=True)

    async def shutdown(self, sockets: list[Any] | None = None) -> None:
        closing = getattr(getattr(self.config.app, "state", None), "closing", None)
        if isinstance(closing, Closing):
            closing.set()
        await super().shutdown(sockets)


def server_config(app: FastAPI, host: str, port: int, **kw: Any) -> uvicorn.Config:
    kw.setdefault("timeout_graceful_shutdown", GRACEFUL_S)
    return uvicorn.Config(app, host=host, port=port, **kw)


def base_url(host: str, port: int) -> str:
    return f"http://{f'[{host}]' if ':' in host else host}:{port}"


def urls(base: str) -> str:
    """Where the API, the metrics and the dashboard of a server at ``base`` are."""
    return f"{base}/api/v1/status, metrics at {base}/metrics, dashboard at {base}/"


def serve(app: FastAPI, host: str, port: int, log_level: str = "info",
          banner: str | None = None) -> None:
    """Serves ``app`` in this thread until SIGINT or SIGTERM (``sluice api``);
    prints ``banner`` once listening. Exits (SystemExit) if it cannot listen."""
    Server(server_config(app, host, port, log_level=log_level), banner=banner).run()


class ApiServer:
    """The API served by uvicorn on a background thread (``sluice up --api``)."""

    def __init__(self, app: FastAPI, host: str, port: int):
        self.host, self.port = host, port
        self.server = Server(server_config(app, host, port, log_level="warning",
                                           access_log=False))
        self.thread = threading.Thread(target=self._run, name="sluice-api", daemon=True)

    def _run(self) -> None:
        with contextlib.suppress(SystemExit):  # uvicorn exits when it cannot listen
            self.server.run()

    @property
    def url(self) -> str:
        return base_url(self.host, self.port)

    def describe(self) -> str:
        """The line `sluice up --api` prints: API, metrics and dashboard URLs."""
        return f"API: {urls(self.url)}"

    def start(self, timeout: float = 10.0) -> None:
        """Starts serving; raises SluiceError if it cannot listen."""
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise SluiceError(f"--api {self.host}:{self.port}: cannot listen there "
                                  f"(address in use, or not an address of this machine?)")
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        if self.thread.is_alive():
            self.thread.join(10)


# -- events -------------------------------------------------------------------------------

async def _subscribe(path: Path) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A dedicated connection to sluiced with ``subscribe`` sent and answered."""
    reader, writer = await asyncio.open_unix_connection(str(path), limit=1 << 20)
    try:
        writer.write(b'{"jsonrpc":"2.0","id":1,"method":"subscribe"}\n')
        await writer.drain()
        while True:
            line = await asyncio.wait_for(reader.readline(), 5.0)
            if not line:
                raise ApiError(503, "subscribe: sluiced closed the connection without "
                                    "answering: sluiced may have stopped or restarted; "
                                    "check that it runs (sluice status) and try again")
            msg = json.loads(line)
            if isinstance(msg, dict) and msg.get("id") == 1:
                break
        if "error" in msg:
            err = msg["error"]
            raise http_error(RpcError(err.get("code", 0), str(err.get("message")),
                                      method="subscribe"))
    except (ValueError, OSError, asyncio.TimeoutError) as e:
        writer.close()
        raise ApiError(502, f"subscribe: no valid answer from sluiced ({e})") from None
    except BaseException:
        writer.close()
        raise
    return reader, writer


async def _read_events(reader: asyncio.StreamReader) -> AsyncIterator[dict[str, Any]]:
    """The params ``{kind, ts, data}`` of each event on a subscribed connection;
    ends when sluiced closes it."""
    while True:
        try:
            line = await reader.readline()
        except (OSError, ValueError):
            return
        if not line:
            return  # sluiced went away
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if isinstance(msg, dict) and msg.get("method") == "event":
            params = msg.get("params")
            yield params if isinstance(params, dict) else {}


async def _close(writer: asyncio.StreamWriter) -> None:
    writer.close()
    with contextlib.suppress(Exception):
        await writer.wait_closed()


async def _event_stream(request: Request, reader: asyncio.StreamReader,
                        writer: asyncio.StreamWriter, max_events: int | None,
                        keepalive: float, closing: Closing) -> AsyncIterator[bytes]:
    sent = 0
    events = _read_events(reader).__aiter__()
    pending: asyncio.Task[dict[str, Any]] | None = None
    stopping = asyncio.ensure_future(closing.wait())
    try:
        yield b": subscribed\n\n"
        while max_events is None or sent < max_events:
            if await request.is_disconnected():
                return
            if pending is None:
                pending = asyncio.ensure_future(events.__anext__())
            done, _ = await asyncio.wait({pending, stopping}, timeout=keepalive,
                                         return_when=asyncio.FIRST_COMPLETED)
            if stopping in done:
                yield b": closing: the API server is stopping\n\n"
                return
            if not done:
                yield b": keepalive\n\n"
                continue
            task, pending = pending, None
            try:
                params = task.result()
            except StopAsyncIteration:
                return
            kind = str(params.get("kind", "event")).replace("\n", " ")
            data = json.dumps(params, separators=(",", ":"))
            yield f"event: {kind}\ndata: {data}\n\n".encode()
            sent += 1
    finally:
        stopping.cancel()
        if pending is not None:
            pending.cancel()
        await _close(writer)


async def _event_socket(ws: WebSocket, reader: asyncio.StreamReader,
                        writer: asyncio.StreamWriter, max_events: int | None) -> None:
    """Sends each event as a text message until the client goes, sluiced
    stops (close 1001) or max_events were sent (close 1000)."""
    sent = 0
    events = _read_events(reader).__aiter__()
    client = asyncio.ensure_future(ws.receive())
    pending: asyncio.Task[dict[str, Any]] | None = None
    code, reason = 1000, "max_events sent"
    try:
        while max_events is None or sent < max_events:
            if pending is None:
                pending = asyncio.ensure_future(events.__anext__())
            done, _ = await asyncio.wait({pending, client},
                                         return_when=asyncio.FIRST_COMPLETED)
            if client in done:
                if client.result().get("type") == "websocket.disconnect":
                    return
                client = asyncio.ensure_future(ws.receive())  # messages are ignored
            if pending not in done:
                continue
            task, pending = pending, None
            try:
                params = task.result()
            except StopAsyncIteration:
                code, reason = 1001, "sluiced closed the subscription (it stopped)"
                break
            await ws.send_text(json.dumps(params, separators=(",", ":")))
            sent += 1
        await ws.close(code=code, reason=reason)
    except (WebSocketDisconnect, RuntimeError, OSError):
        return
    finally:
        for t in (pending, client):
            if t is not None:
                t.cancel()
        await _close(writer)


# -- the app ------------------------------------------------------------------------------

def create_app(node: str, socket_path: str | Path | None = None,
               token: str | None = None, timeout: float = 5.0,
               keepalive: float = 15.0, max_body: int = MAX_BODY) -> FastAPI:
    """The REST API of the sluiced named ``node`` (socket ``socket_path`` if given).

    With ``token``, every request must carry it (``Authorization: Bearer``
    or ``X-Sluice-Token``), else 401. A request body of more than
    ``max_body`` bytes is refused with 413.
    """
    sluiced = Sluiced(node, socket_path or socket_path_for(node), timeout)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StatsCollector(sluiced))

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        sluiced.close()

    app = FastAPI(
        title="Sluice",
        lifespan=lifespan,
        version=__version__,
        description=f"REST API of the Sluice node '{node}' (docs/api.md): the control "
                    f"socket of sluiced over HTTP, events as server-sent events, and "
                    f"Prometheus metrics at /metrics.",
    )
    app.router.route_class = _PassThrough
    app.state.sluiced = sluiced
    app.state.closing = closing = Closing()  # set by Server when it stops

    async def subscribe() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A subscribed connection of its own to sluiced; raises ApiError."""
        try:
            return await _subscribe(sluiced.socket_path)
        except OSError:
            # Let the client say what is wrong (path, and what to do).
            try:
                Client(node, sluiced.socket_path, timeout=timeout).connect()
            except SluiceError as e:
                raise http_error(e) from None
            raise ApiError(503, f"cannot subscribe on {sluiced.socket_path}") from None

    app.add_middleware(BodyLimit, max_body=max_body)
    if token:
        app.add_middleware(TokenAuth, token=token)  # outside BodyLimit: 401 comes first
        _document_token(app)

    @app.exception_handler(Exception)
    async def _bug(request: Request, e: Exception) -> JSONResponse:
        # Never a traceback in a body (uvicorn logs it); starlette re-raises.
        return JSONResponse({"detail": f"internal error of the API on {request.method} "
                                       f"{request.url.path} ({type(e).__name__}): this is a "
                                       f"bug, please report it with the request"},
                            status_code=500)

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, e: ApiError) -> JSONResponse:
        return JSONResponse({"detail": e.detail}, status_code=e.status)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, e: StarletteHTTPException) -> JSONResponse:
        headers = dict(e.headers or {})
        detail = e.detail
        path = _short(request.url.path, 200)
        if e.status_code == 405:
            # Allow lists the methods of every route on this path, not just the first.
            allowed: set[str] = set()
            for route in app.routes:
                match, _ = route.matches(request.scope)
                if match != RouteMatch.NONE:
                    allowed |= set(getattr(route, "methods", None) or ())
            headers["Allow"] = ", ".join(sorted(allowed))
            if detail == "Method Not Allowed":
                detail = (f"{_short(request.method, 20)} {path}: method not allowed here; "
                          f"use {' or '.join(sorted(allowed))}")
        elif e.status_code == 404 and detail == "Not Found":
            ws = {**request.scope, "type": "websocket"}
            if any(r.matches(ws)[0] == RouteMatch.FULL for r in app.routes
                   if not isinstance(r, APIRoute)):
                detail = (f"{path} is a websocket: connect to it with a websocket client "
                          f"(ws://...)")
            else:
                detail = (f"no endpoint {_short(request.method, 20)} {path}: the API is "
                          f"under {PREFIX} (/docs lists the endpoints; a name in a path "
                          f"cannot contain '/', not even as %2F)")
        elif e.status_code == 400 and e.__cause__ is not None:
            # FastAPI could not read the body (_check_body covers the routes
            # under /api/v1; this is for any other).
            detail = (f"the body could not be read ({type(e.__cause__).__name__}): send "
                      f"one JSON object, UTF-8, with 'Content-Type: application/json'")
        return JSONResponse({"detail": detail}, status_code=e.status_code, headers=headers)

    @app.exception_handler(ResponseValidationError)
    async def _unexpected(request: Request, e: ResponseValidationError) -> JSONResponse:
        # sluiced's answer does not have the documented shape (a newer or older sluiced).
        parts = []
        for err in e.errors()[:3]:
            loc = ".".join(str(x) for x in err.get("loc", ()) if x != "response")
            parts.append(f"{loc}: {err.get('msg')}" if loc else str(err.get("msg")))
        return JSONResponse(
            {"detail": f"sluiced answered something this API does not know "
                       f"({'; '.join(parts)}): is sluiced the same version as the "
                       f"sluice package?"}, status_code=502)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, e: RequestValidationError) -> JSONResponse:
        # One line per problem, `field.path: what is wrong; what to give`
        # (_problem). A field whose value failed several ways (the members of
        # a union) is one line, its messages joined by " / ".
        parts: dict[str, list[str]] = {}
        errors = e.errors()
        shown = 0  # errors said in the lines
        route = request.scope.get("route")
        field = getattr(route, "body_field", None)
        body = getattr(getattr(field, "field_info", None), "annotation", None)
        for err in errors:
            loc, msg = _problem(err, body)
            loc = _short(loc, 80)
            if loc not in parts and len(parts) == MAX_PROBLEMS:
                break
            msgs = parts.setdefault(loc, [])
            if msg not in msgs:
                msgs.append(msg)
            shown += 1
        lines = [f"{loc}: {' / '.join(m)}" if loc else " / ".join(m)
                 for loc, m in parts.items()]
        if shown < len(errors):
            lines.append(f"({len(errors) - shown} more problems not shown: fix these and "
                         f"send it again)")
        detail = "\n".join(lines)
        return JSONResponse({"detail": detail or "invalid request"}, status_code=422)

    # Longer than any name sluiced has (31 characters) or flow key: refused here.
    def _name() -> Any:  # one each: FastAPI gives a parameter's FieldInfo its name
        return PathParam(..., max_length=NAME_MAX)

    @app.get(f"{PREFIX}/status", response_model=Status, responses=_ERRORS, tags=["node"])
    def status() -> Any:
        """sluiced's status: node, version, mode, limits, uptime, mbufs."""
        return sluiced.call("status")

    @app.get(f"{PREFIX}/nfs", response_model=list[Nf], responses=_ERRORS, tags=["nfs"])
    def nfs() -> Any:
        """The NF instances registered with sluiced."""
        return sluiced.call("nf.list")

    @app.post(f"{PREFIX}/nfs/{{instance}}/stop", response_model=NfStopping,
              responses=_ERRORS_404, tags=["nfs"])
    def nf_stop(instance: int = PathParam(..., ge=0, le=65535)) -> Any:
        """Ask an NF instance to stop."""
        return sluiced.call("nf.stop", instance=instance)

    @app.get(f"{PREFIX}/ports", response_model=list[Port], responses=_ERRORS, tags=["ports"])
    def ports() -> Any:
        """The ports of the node."""
        return sluiced.call("port.list")

    @app.get(f"{PREFIX}/services", response_model=list[Service], responses=_ERRORS,
             tags=["services"])
    def services() -> Any:
        """The services, their load-balancing mode and live instances."""
        return sluiced.call("service.list")

    @app.put(f"{PREFIX}/services/{{service}}/lb", response_model=LbResult,
             responses=_ERRORS_404, tags=["services"])
    def lb_set(service: str = _name(), body: LbSet = Body(...)) -> Any:
        """Set how a service spreads packets across its instances."""
        return sluiced.call("lb.set", service=service, mode=body.mode)

    @app.get(f"{PREFIX}/stats", response_model=Stats, responses=_ERRORS, tags=["stats"])
    def stats() -> Any:
        """Cumulative counters of ports, NF instances and services, drops by reason."""
        return sluiced.call("stats")

    @app.get(f"{PREFIX}/chain", response_model=Chain, responses=_ERRORS, tags=["chain"])
    def chain_get() -> Any:
        """The default chain."""
        return sluiced.call("chain.get")

    @app.put(f"{PREFIX}/chain", response_model=ChainVersion, responses=_ERRORS,
             tags=["chain"])
    def chain_set(body: ChainSet) -> Any:
        """Replace the default chain; returns its new version."""
        return _rest_note(sluiced.call("chain.set", hops=body.hops))

    @app.post(f"{PREFIX}/rx/pause", response_model=RxState, responses=_ERRORS, tags=["rx"])
    def rx_pause() -> Any:
        """Stop reading the ports (packets in flight drain)."""
        return sluiced.call("rx.pause")

    @app.post(f"{PREFIX}/rx/resume", response_model=RxState, responses=_ERRORS,
              tags=["rx"])
    def rx_resume() -> Any:
        """Read the ports again (fails while a service on the chain has no NF)."""
        return sluiced.call("rx.resume")

    @app.get(f"{PREFIX}/events", response_class=StreamingResponse, tags=["events"],
             responses={**_ERRORS, 200: {
                 "description": "Server-sent events: `event: KIND` and `data: "
                                "{kind, ts, data}` per sluiced event (nf.up, nf.down, "
                                "nf.freed, chain.set); comment lines as keepalive.",
                 "content": {"text/event-stream": {"schema": {
                     "type": "object", "required": ["data"],
                     "properties": {"event": {"type": "string"},
                                    "data": {"type": "string",
                                             "description": "JSON: {kind, ts, data}"}}}}}}})
    async def events(request: Request,
                     max_events: int | None = Query(
                         None, ge=1, description="Close the stream after this many "
                                                 "events (default: never).")) -> Any:
        """sluiced's events as they happen, on a connection of their own."""
        reader, writer = await subscribe()
        return StreamingResponse(
            _event_stream(request, reader, writer, max_events, keepalive, closing),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    @app.websocket(f"{PREFIX}/events/ws")
    async def events_ws(ws: WebSocket,
                        max_events: int | None = Query(None, ge=1)) -> None:
        """sluiced's events over a websocket: one text message per event, the
        JSON object {kind, ts, data}. If sluiced cannot be subscribed to, one
        message {"error": detail, "status": HTTP status} and close 1011."""
        await ws.accept()
        try:
            reader, writer = await subscribe()
        except ApiError as e:
            with contextlib.suppress(WebSocketDisconnect, RuntimeError, OSError):
                await ws.send_text(json.dumps({"error": e.detail, "status": e.status}))
                await ws.close(code=1011, reason=e.detail[:120])
            return
        await _event_socket(ws, reader, writer, max_events)
        if ws.application_state != WebSocketState.DISCONNECTED:
            with contextlib.suppress(Exception):
                await ws.close()

    # -- graphs, rules, flows, requests, scaling (docs/control-socket.md) ----

    @app.get(f"{PREFIX}/graphs", response_model=GraphList, responses=_ERRORS,
             tags=["graphs"])
    def graphs() -> Any:
        """Every service graph, the default chain included."""
        return sluiced.call("graph.get")

    @app.get(f"{PREFIX}/graphs/{{name}}", response_model=Graph, responses=_ERRORS_404,
             tags=["graphs"])
    def graph_get(name: str = _name()) -> Any:
        """One graph: its nodes and their allowed next hops (the first is the default)."""
        return sluiced.call("graph.get", name=name)

    @app.put(f"{PREFIX}/graphs/{{name}}", response_model=GraphApplied,
             responses=_ERRORS, tags=["graphs"])
    def graph_apply(body: GraphSpec, name: str = _name()) -> Any:
        """Create or replace a graph, atomically (its version goes up). The name
        default is the chain. A graph sluiced cannot use is 422 with its reason;
        one it has no room for (--max-graphs) is 409."""
        params: dict[str, Any] = {"name": name, "nodes": body.nodes}
        if body.entry is not None:
            params["entry"] = body.entry
        return _rest_note(sluiced.call("graph.apply", **params))

    @app.delete(f"{PREFIX}/graphs/{{name}}", response_model=GraphRemoved,
                responses=_ERRORS_404, tags=["graphs"])
    def graph_remove(name: str = _name()) -> Any:
        """Remove a graph and its rules; its flows are classified again on their next
        packet. default cannot be removed (409)."""
        return sluiced.call("graph.remove", name=name)

    @app.get(f"{PREFIX}/rules", response_model=RuleList, responses=_ERRORS, tags=["rules"])
    def rules(offset: int = Query(0, ge=0, le=4294967295,
                                  description="Rules to skip (a page's start)."),
              limit: int = Query(10000, ge=0, le=100000,
                                 description="At most this many rules.")) -> Any:
        """The rules that send new flows to graphs, highest priority first, a page
        at a time (truncated says whether more follow)."""
        return sluiced.call("rule.list", offset=offset, limit=limit)

    @app.post(f"{PREFIX}/rules", response_model=Rule, status_code=201,
              responses=_ERRORS_404, tags=["rules"])
    def rule_add(body: RuleAdd) -> Any:
        """Add a rule: new flows that match go to its graph (404 if there is no such
        graph). Existing flows keep theirs until deleted or aged out."""
        return sluiced.call("rule.add", **body.model_dump(exclude_none=True))

    @app.post(f"{PREFIX}/rule-batches", response_model=RulesAdded, status_code=201,
              responses=_ERRORS_404, tags=["rules"])
    def rules_add(body: RuleBatch) -> Any:
        """Add many rules at once: sluiced builds its classifier once for all of them
        (one POST /rules each rebuilds it every time). All or none; a refused rule is
        named rules[N] in the error (404 if its graph does not exist)."""
        return sluiced.call("rule.add", wait=rule_build_seconds(len(body.rules)),
                            rules=[r.model_dump(exclude_none=True) for r in body.rules])

    @app.delete(f"{PREFIX}/rules/{{rule_id}}", response_model=RuleRemoved,
                responses=_ERRORS_404, tags=["rules"])
    def rule_remove(rule_id: int = PathParam(..., ge=0, le=4294967295)) -> Any:
        """Remove a rule."""
        return sluiced.call("rule.remove", id=rule_id)

    def flow_filters(graph: str | None, service: str | None, instance: int | None,
                     proto: str | None, src: str | None, dst: str | None,
                     sport: str | None, dport: str | None,
                     in_port: str | None) -> dict[str, Any]:
        if instance is not None and not service:
            raise ApiError(422, "query.instance: give service too (instance picks an "
                                "instance of that service), e.g. ?service=firewall&"
                                "instance=2")
        f = {"graph": graph, "service": service, "instance": instance, "proto": proto,
             "src": src, "dst": dst, "sport": sport, "dport": dport, "in_port": in_port}
        # An empty filter (?graph=, as an HTML form sends it) is no filter.
        f = {k: v for k, v in f.items() if v is not None and v != ""}
        # Checked as sluice flow list checks them (match_params), sent as given.
        _, problems = match_params({k: v for k, v in f.items()
                                    if k in (*_MATCH_FIELDS, "in_port")})
        if problems:
            raise ApiError(422, "\n".join(f"query.{k}: {_match_problem(k, f[k], m, True)}"
                                          for k, m in problems))
        return f

    def _filter(description: str) -> Any:
        return Query(None, max_length=NAME_MAX, description=description)

    _both = "matched against both directions"
    _f_graph = _filter("Flows of this graph.")
    _f_service = _filter("Flows pinned to an instance of this service.")
    _f_instance = Query(None, ge=0, le=65535,
                        description="... to this instance of it (needs service).")
    _f_proto = _filter("tcp, udp, icmp, ... or a number.")
    _f_src = _filter(f"Prefix or address; {_both}.")
    _f_dst = _filter(f"Prefix or address; {_both}.")
    _f_sport = _filter(f"{_PORTS_DOC}; {_both}.")
    _f_dport = _filter(f"{_PORTS_DOC}; {_both} (so dport=80 finds replies from port 80 too).")
    _f_in_port = _filter("Flows whose first packet came in on this port.")

    @app.get(f"{PREFIX}/flows", response_model=FlowList, responses=_ERRORS_404,
             tags=["flows"])
    def flows(limit: int = Query(100, ge=0, le=100000,
                                 description="At most this many flows."),
              graph: str | None = _f_graph, service: str | None = _f_service,
              instance: int | None = _f_instance, proto: str | None = _f_proto,
              src: str | None = _f_src, dst: str | None = _f_dst,
              sport: str | None = _f_sport, dport: str | None = _f_dport,
              in_port: str | None = _f_in_port) -> Any:
        """Flows in the table that pass the filters (404 if the graph or service
        filtered on does not exist)."""
        return sluiced.call("flow.list", limit=limit, fields=_QUERY, **flow_filters(
            graph, service, instance, proto, src, dst, sport, dport, in_port))

    @app.delete(f"{PREFIX}/flows", response_model=FlowsDeleted, responses=_ERRORS_404,
                tags=["flows"])
    def flows_delete(all_: bool = Query(False, alias="all",
                                        description="Every flow (without filters)."),
                     graph: str | None = _f_graph, service: str | None = _f_service,
                     instance: int | None = _f_instance, proto: str | None = _f_proto,
                     src: str | None = _f_src, dst: str | None = _f_dst,
                     sport: str | None = _f_sport, dport: str | None = _f_dport,
                     in_port: str | None = _f_in_port) -> Any:
        """Delete the flows that pass the filters, or all=true; each is classified
        again on its next packet. Without either, 422."""
        params = flow_filters(graph, service, instance, proto, src, dst, sport, dport,
                              in_port)
        if all_:
            params["all"] = True
        elif not params:
            raise ApiError(422, f"DELETE {PREFIX}/flows needs filters (query parameters "
                                f"{', '.join(sorted(_QUERY))}) or all=true: "
                                f"`DELETE {PREFIX}/flows?all=true` deletes every flow, "
                                f"`DELETE {PREFIX}/flows/{{flow}}` one")
        return sluiced.call("flow.delete", fields=_QUERY, **params)

    _QUERY = {k: f"query.{k}" for k in ("graph", "service", "instance", "proto", "src",
                                          "dst", "sport", "dport", "in_port")}
    _PATH_FLOW = {"key": "path.flow", "id": "path.flow"}

    def flow_ref(flow: str) -> dict[str, Any]:
        if not (flow.isascii() and flow.isdigit()):
            return {"key": flow}
        if len(flow) > 10 or int(flow) > 4294967295:
            raise ApiError(422, f"flow: id {_short(flow, 20)} is out of range "
                                f"(0-4294967295): give an id from GET {PREFIX}/flows, or "
                                f"the flow's key")
        return {"id": int(flow)}

    _flow_path = PathParam(..., max_length=NAME_MAX,
                           description="The flow's id (from GET /flows) or its key, e.g. "
                                       "'tcp 10.0.0.1:1234 > 10.0.0.2:80' (URL-encoded).")

    @app.get(f"{PREFIX}/flows/{{flow}}", response_model=Flow, responses=_ERRORS_404,
             tags=["flows"])
    def flow_get(flow: str = _flow_path) -> Any:
        """One flow."""
        return sluiced.call("flow.get", fields=_PATH_FLOW, **flow_ref(flow))

    @app.delete(f"{PREFIX}/flows/{{flow}}", response_model=FlowsDeleted,
                responses=_ERRORS_404, tags=["flows"])
    def flow_delete(flow: str = _flow_path) -> Any:
        """Delete one flow; its next packet is classified again."""
        return sluiced.call("flow.delete", fields=_PATH_FLOW, **flow_ref(flow))

    @app.post(f"{PREFIX}/flow-requests", response_model=FlowRequestResult,
              responses=_ERRORS_404, tags=["flows"])
    def flow_request(body: Annotated[FlowRequest, Body()]) -> Any:
        """Make a request as the service's NFs make them (include/sluice/flow.h):
        skip_me, request_me, change_default (to one of its next hops) for one flow
        (key) or many (match), or a message to the service's instances. A request
        the graph does not allow is 409 with the reason; no such service is 404."""
        return sluiced.call("flow.request", **body.model_dump(exclude_none=True))

    @app.get(f"{PREFIX}/flow-requests", response_model=KeptRequestList, responses=_ERRORS,
             tags=["flows"])
    def flow_requests() -> Any:
        """The requests with a match kept for new flows, the oldest first."""
        return sluiced.call("flow.requests")

    @app.delete(f"{PREFIX}/flow-requests/{{request_id}}", response_model=KeptRequestRemoved,
                responses=_ERRORS_404, tags=["flows"])
    def flow_request_remove(request_id: int = PathParam(..., ge=1, le=4294967295)) -> Any:
        """Forget a kept request: flows created from now on no longer get it; live
        flows keep what it gave them (DELETE /flows with filters resets them). 404 if
        no request has this id."""
        return sluiced.call("flow.request.remove", id=request_id)

    @app.post(f"{PREFIX}/services/{{service}}/scale", response_model=Scaled,
              responses=_ERRORS_404, tags=["services"])
    def nf_scale(body: Scale, service: str = _name()) -> Any:
        """Start or stop instances so the service has this many (nf.scale)."""
        return sluiced.call("nf.scale", service=service, replicas=body.replicas)

    @app.get("/metrics", tags=["metrics"], response_class=Response, responses={
        **_ERRORS, 200: {"description": "Prometheus text exposition format.",
                         "content": {"text/plain": {"schema": {"type": "string"}}}}})
    def metrics() -> Response:
        """Prometheus metrics from one ``stats`` call."""
        return Response(generate_latest(registry), media_type=METRICS_CONTENT_TYPE)

    from .web import install_dashboard

    install_dashboard(app, sluiced)  # the dashboard at / (docs/api.md, "Dashboard")
    return app
