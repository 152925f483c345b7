"""The API's exception handlers: every error body is ``{"detail": "..."}``,
one line saying what went wrong and what to do."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError, ResponseValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match as RouteMatch

from .bodies import MAX_PROBLEMS
from .errors import PREFIX, ApiError, _short
from .problems import _problem


def install_handlers(app: FastAPI) -> None:
    """Adds the handlers to ``app``."""
    app.add_exception_handler(Exception, _bug)
    app.add_exception_handler(ApiError, _api_error)  # type: ignore[arg-type]
    app.add_exception_handler(StarletteHTTPException, _http)  # type: ignore[arg-type]
    app.add_exception_handler(ResponseValidationError, _unexpected)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, _invalid)  # type: ignore[arg-type]


async def _bug(request: Request, e: Exception) -> JSONResponse:
    # Never a traceback in a body (uvicorn logs it); starlette re-raises.
    return JSONResponse({"detail": f"internal error of the API on {request.method} "
                                   f"{request.url.path} ({type(e).__name__}): this is a "
                                   f"bug, please report it with the request"},
                        status_code=500)

async def _api_error(request: Request, e: ApiError) -> JSONResponse:
    return JSONResponse({"detail": e.detail}, status_code=e.status)

async def _http(request: Request, e: StarletteHTTPException) -> JSONResponse:
    headers = dict(e.headers or {})
    detail = e.detail
    path = _short(request.url.path, 200)
    if e.status_code == 405:
        # Allow lists the methods of every route on this path, not just the first.
        allowed: set[str] = set()
        for route in request.app.routes:
            match, _ = route.matches(request.scope)
            if match != RouteMatch.NONE:
                allowed |= set(getattr(route, "methods", None) or ())
        headers["Allow"] = ", ".join(sorted(allowed))
        if detail == "Method Not Allowed":
            detail = (f"{_short(request.method, 20)} {path}: method not allowed here; "
                      f"use {' or '.join(sorted(allowed))}")
    elif e.status_code == 404 and detail == "Not Found":
        ws = {**request.scope, "type": "websocket"}
        if any(r.matches(ws)[0] == RouteMatch.FULL for r in request.app.routes
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
