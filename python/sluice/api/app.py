"""create_app: the FastAPI app of one node. What the routes need is on
``app.state`` (sluiced, node, timeout, keepalive, closing, registry), so
they are plain functions of routes/<resource>.py, not closures."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from fastapi import FastAPI
from prometheus_client import CollectorRegistry

from .. import __version__
from ..runtime.client import socket_path_for
from .auth import TokenAuth, _document_token
from .bodies import MAX_BODY, BodyLimit, _PassThrough
from .handlers import install_handlers
from .metrics import StatsCollector
from .routes import install_routes
from .server import Closing
from .sluiced import Sluiced


@contextlib.asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    yield
    app.state.sluiced.close()


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

    app = FastAPI(
        title="Sluice",
        lifespan=_lifespan,
        version=__version__,
        description=f"REST API of the Sluice node '{node}' (docs/api.md): the control "
                    f"socket of sluiced over HTTP, events as server-sent events, and "
                    f"Prometheus metrics at /metrics.",
    )
    app.router.route_class = _PassThrough
    app.state.sluiced = sluiced
    app.state.node = node
    app.state.timeout = timeout          # of the client that says why subscribing failed
    app.state.keepalive = keepalive      # seconds between an event stream's keepalives
    app.state.closing = Closing()        # set by Server when it stops
    app.state.registry = registry        # /metrics

    app.add_middleware(BodyLimit, max_body=max_body)
    if token:
        app.add_middleware(TokenAuth, token=token)  # outside BodyLimit: 401 comes first
        _document_token(app)
    install_handlers(app)
    install_routes(app)

    from ..web import install_dashboard

    install_dashboard(app, sluiced)  # the dashboard at / (docs/api.md, "Dashboard")
    return app
