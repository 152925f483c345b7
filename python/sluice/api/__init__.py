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

The package: ``app`` (create_app), ``routes/<resource>`` (the endpoints),
``models`` (request and response bodies), ``bodies`` (what a request may be
before it is read), ``problems`` and ``handlers`` (the words of errors),
``errors`` (ApiError, sluiced's errors said in REST words), ``sluiced`` (the
shared connection), ``events``, ``metrics``, ``auth``, ``server``.
"""

from __future__ import annotations

from .app import create_app
from .auth import TokenAuth, check_bind, is_loopback, parse_listen
from .bodies import MAX_BODY, MAX_DEPTH, MAX_DIGITS, MAX_PROBLEMS, NAME_MAX, BodyLimit, BodyTooLarge
from .errors import ENDPOINTS, PREFIX, SOCKET_METHODS, ApiError, http_error, rest_text
from .metrics import METRICS_CONTENT_TYPE, StatsCollector, stats_metrics
from .models import (
    REQUEST_TYPES,
    Chain,
    ChainSet,
    ChainVersion,
    ChangeDefault,
    EdgeStats,
    Error,
    Flow,
    FlowByKey,
    FlowByMatch,
    FlowList,
    FlowOverride,
    FlowRef,
    FlowRequest,
    FlowRequestResult,
    FlowsDeleted,
    FlowTableStats,
    Graph,
    GraphApplied,
    GraphList,
    GraphRemoved,
    GraphSpec,
    JsonInt,
    KeptRequest,
    KeptRequestList,
    KeptRequestRemoved,
    LbResult,
    LbSet,
    Match,
    Mbufs,
    Message,
    Nf,
    NfStats,
    NfStopping,
    Pool,
    Port,
    Ports,
    PortStats,
    Prefix,
    Proto,
    RequestMe,
    Ring,
    Rule,
    RuleAdd,
    RuleBatch,
    RuleList,
    RuleRemoved,
    RulesAdded,
    RxState,
    Scale,
    Scaled,
    Service,
    ServiceStats,
    SkipMe,
    Stats,
    Status,
)
from .server import GRACEFUL_S, ApiServer, Closing, Server, base_url, serve, server_config, urls
from .sluiced import Sluiced

# What `from sluice.api import ...` gives: everything api.py had at its top level.
__all__ = [
    "create_app",
    "TokenAuth",
    "check_bind",
    "is_loopback",
    "parse_listen",
    "MAX_BODY",
    "MAX_DEPTH",
    "MAX_DIGITS",
    "MAX_PROBLEMS",
    "NAME_MAX",
    "BodyLimit",
    "BodyTooLarge",
    "ENDPOINTS",
    "PREFIX",
    "SOCKET_METHODS",
    "ApiError",
    "http_error",
    "rest_text",
    "METRICS_CONTENT_TYPE",
    "StatsCollector",
    "stats_metrics",
    "JsonInt",
    "Error",
    "Pool",
    "Mbufs",
    "Status",
    "Ring",
    "Nf",
    "Port",
    "Service",
    "PortStats",
    "NfStats",
    "ServiceStats",
    "FlowTableStats",
    "EdgeStats",
    "Stats",
    "Chain",
    "ChainSet",
    "ChainVersion",
    "NfStopping",
    "LbSet",
    "LbResult",
    "RxState",
    "Scale",
    "Scaled",
    "GraphSpec",
    "Graph",
    "GraphList",
    "GraphApplied",
    "GraphRemoved",
    "Proto",
    "Ports",
    "Prefix",
    "Match",
    "RuleAdd",
    "RuleBatch",
    "RulesAdded",
    "Rule",
    "RuleList",
    "RuleRemoved",
    "FlowOverride",
    "Flow",
    "FlowList",
    "FlowsDeleted",
    "FlowByKey",
    "FlowByMatch",
    "FlowRef",
    "SkipMe",
    "RequestMe",
    "ChangeDefault",
    "Message",
    "FlowRequest",
    "REQUEST_TYPES",
    "FlowRequestResult",
    "KeptRequest",
    "KeptRequestList",
    "KeptRequestRemoved",
    "GRACEFUL_S",
    "ApiServer",
    "Closing",
    "Server",
    "base_url",
    "serve",
    "server_config",
    "urls",
    "Sluiced",
]
