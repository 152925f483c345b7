"""sluiced's events: /events (server-sent events), /events/ws (a websocket)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from fastapi import Query, Request, WebSocket
from fastapi.responses import StreamingResponse
from starlette.requests import HTTPConnection
from starlette.websockets import WebSocketDisconnect, WebSocketState

from ...runtime.client import Client, SluiceError
from ..errors import PREFIX, ApiError, http_error
from ..events import _event_socket, _event_stream, _subscribe
from ..models import _ERRORS
from .table import Routes

router = Routes()


async def subscribe(conn: HTTPConnection) -> tuple[asyncio.StreamReader,
                                                   asyncio.StreamWriter]:
    """A subscribed connection of its own to sluiced; raises ApiError."""
    state = conn.app.state
    try:
        return await _subscribe(state.sluiced.socket_path)
    except OSError:
        # Let the client say what is wrong (path, and what to do).
        try:
            Client(state.node, state.sluiced.socket_path, timeout=state.timeout).connect()
        except SluiceError as e:
            raise http_error(e) from None
        raise ApiError(503, f"cannot subscribe on {state.sluiced.socket_path}") from None


@router.get(f"{PREFIX}/events", response_class=StreamingResponse, tags=["events"],
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
    reader, writer = await subscribe(request)
    state = request.app.state
    return StreamingResponse(
        _event_stream(request, reader, writer, max_events, state.keepalive, state.closing),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


@router.websocket(f"{PREFIX}/events/ws")
async def events_ws(ws: WebSocket,
                    max_events: int | None = Query(None, ge=1)) -> None:
    """sluiced's events over a websocket: one text message per event, the
    JSON object {kind, ts, data}. If sluiced cannot be subscribed to, one
    message {"error": detail, "status": HTTP status} and close 1011."""
    await ws.accept()
    try:
        reader, writer = await subscribe(ws)
    except ApiError as e:
        with contextlib.suppress(WebSocketDisconnect, RuntimeError, OSError):
            await ws.send_text(json.dumps({"error": e.detail, "status": e.status}))
            await ws.close(code=1011, reason=e.detail[:120])
        return
    await _event_socket(ws, reader, writer, max_events)
    if ws.application_state != WebSocketState.DISCONNECTED:
        with contextlib.suppress(Exception):
            await ws.close()
