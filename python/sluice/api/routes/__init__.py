"""The API's routes, one module per resource (its URL prefix under /api/v1).
Each module declares its routes in a ``Routes`` table (table.py);
create_app installs them in ROUTES' order, the order the endpoints are
listed in the OpenAPI spec."""

from __future__ import annotations

from fastapi import FastAPI

from . import events, flows, graphs, node, policies, requests, rules, services, stats
from .table import Routes

ROUTES: tuple[Routes, ...] = (node.router, services.router, stats.router, graphs.chain_router,
                              node.rx_router, events.router, policies.router, graphs.router,
                              rules.router,
                              flows.router, requests.router, services.scale_router,
                              stats.metrics_router)


def install_routes(app: FastAPI) -> None:
    for routes in ROUTES:
        routes.install(app)
