"""Serving an app with uvicorn: in this thread (`sluice api`) or on a
background one (`sluice up --api`), ending the event streams when it stops."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from typing import Any

import uvicorn
from fastapi import FastAPI

from ..runtime.client import SluiceError

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
