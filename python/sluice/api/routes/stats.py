"""Counters: /api/v1/stats as JSON, /metrics for Prometheus."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.responses import Response
from prometheus_client import generate_latest

from ..errors import PREFIX
from ..metrics import METRICS_CONTENT_TYPE
from ..models import _ERRORS, Stats
from ..sluiced import SluicedDep
from .table import Routes

router = Routes()
metrics_router = Routes()


@router.get(f"{PREFIX}/stats", response_model=Stats, responses=_ERRORS, tags=["stats"])
def stats(sluiced: SluicedDep) -> Any:
    """Cumulative counters of ports, NF instances and services, drops by reason."""
    return sluiced.call("stats")


@metrics_router.get("/metrics", tags=["metrics"], response_class=Response, responses={
    **_ERRORS, 200: {"description": "Prometheus text exposition format.",
                     "content": {"text/plain": {"schema": {"type": "string"}}}}})
def metrics(request: Request) -> Response:
    """Prometheus metrics from one ``stats`` call."""
    return Response(generate_latest(request.app.state.registry),
                    media_type=METRICS_CONTENT_TYPE)
