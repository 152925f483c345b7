"""Counters: /api/v1/stats as JSON, what each of its fields is (/api/v1/stats/schema),
/metrics for Prometheus."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.responses import Response
from prometheus_client import generate_latest
from pydantic import Field

from ...core.counters import KINDS, Schema, SchemaError, builtin_json
from ..errors import PREFIX
from ..metrics import METRICS_CONTENT_TYPE
from ..models import _ERRORS, Stats, _Model
from ..sluiced import SluicedDep
from .table import Routes

router = Routes()
metrics_router = Routes()


@router.get(f"{PREFIX}/stats", response_model=Stats, responses=_ERRORS, tags=["stats"])
def stats(sluiced: SluicedDep) -> Any:
    """Cumulative counters of ports, NF instances and services, drops by reason."""
    return sluiced.call("stats")


class StatsField(_Model):
    name: str
    kind: str = Field(description=f"One of {', '.join(KINDS)}: a counter only grows, a "
                                  "gauge goes up and down, a label names the row, a list "
                                  "or object holds rows of another table.")
    unit: str = Field(description="packets, bytes, cycles, flows, ms, hz, or \"\".")
    help: str
    type: str | None = Field(None, description="integer, string, number or object (by "
                                               "key); none for a list or object.")
    table: str | None = Field(None, description="The table of the rows a list or object "
                                                "holds.")
    keys: list[str] | None = Field(None, description="An object-typed field's keys.")
    values: list[str] | None = Field(None, description="A string label's fixed values.")


class StatsSchema(_Model):
    root: str = Field(description="The table of the stats result itself.")
    tables: dict[str, list[StatsField]] = Field(
        description="Each table's fields, in the order of the stats result.")


@router.get(f"{PREFIX}/stats/schema", response_model=StatsSchema, responses=_ERRORS,
            tags=["stats"])
def stats_schema(sluiced: SluicedDep) -> Any:
    """What each field of /stats is: name, kind, unit and help, table by table
    (sluiced's ``stats {"schema": true}``; the package's copy for a sluiced that
    does not describe its stats)."""
    raw = sluiced.call("stats", schema=True)
    try:
        Schema.parse(raw)
    except SchemaError:  # an older sluiced answers stats itself
        return builtin_json()
    return raw


@metrics_router.get("/metrics", tags=["metrics"], response_class=Response, responses={
    **_ERRORS, 200: {"description": "Prometheus text exposition format.",
                     "content": {"text/plain": {"schema": {"type": "string"}}}}})
def metrics(request: Request) -> Response:
    """Prometheus metrics from one ``stats`` call."""
    return Response(generate_latest(request.app.state.registry),
                    media_type=METRICS_CONTENT_TYPE)
