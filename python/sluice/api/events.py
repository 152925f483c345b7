"""sluiced's events on a subscribed connection of their own, as server-sent
events or websocket messages."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from fastapi import Request, WebSocket
from starlette.websockets import WebSocketDisconnect

from ..runtime.client import RpcError
from .errors import ApiError, http_error
from .server import Closing

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
