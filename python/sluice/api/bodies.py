"""What a request may be before FastAPI reads it: the route class that refuses
unknown query parameters and a body that is not one JSON object, and the
middleware that bounds a body's size."""

from __future__ import annotations

import json
from typing import Any, get_args

from fastapi import Path as PathParam
from fastapi import Request
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel

from .errors import PREFIX, ApiError, _short


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


def name_path() -> Any:
    """A name in a path: longer than any name sluiced has (31 characters) or
    flow key is refused here. One each: FastAPI gives a parameter's FieldInfo
    its name."""
    return PathParam(..., max_length=NAME_MAX)
