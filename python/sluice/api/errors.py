"""The API's words for sluiced's errors and methods: ApiError (an HTTP status and
a detail), http_error (a client error as one), the endpoints of each
control-socket method."""

from __future__ import annotations

import re
from typing import Any

from ..runtime.client import (
    METHODS,
    ConnectError,
    ConnectionLost,
    RpcError,
    RpcTimeout,
    SluiceError,
    say_methods,
)

PREFIX = "/api/v1"


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


def _short(s: str, n: int) -> str:
    return s if len(s) <= n else s[:n] + "..."


class ApiError(Exception):
    def __init__(self, status: int, detail: str):
        super().__init__(status, detail)
        self.status = status
        self.detail = detail


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
