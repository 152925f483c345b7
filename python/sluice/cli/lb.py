"""sluice lb: load balancing across a service's instances."""

from __future__ import annotations

from enum import Enum
from pathlib import Path

import typer

from .apps import lb_app
from .common import _call, _print_json, errors, on_node


class LbMode(str, Enum):
    flow = "flow"
    queue = "queue"
    rr = "rr"


LB_MODES = {"flow": "flow-sticky", "queue": "shortest queue", "rr": "round robin"}


@lb_app.command("set")
@errors
@on_node
def lb_set(service: str = typer.Argument(..., help="The service."),
           mode: LbMode = typer.Argument(..., help="flow: a flow stays on one instance; "
                                                   "queue: the shortest queue; rr: round "
                                                   "robin."),
           *, node: str | None, socket: Path | None, as_json: bool,
           timeout: float) -> None:
    """Choose how packets of a service are spread over its instances."""
    res = _call(node, socket, "lb.set", timeout, service=service, mode=mode.value)
    if as_json:
        _print_json(res)
        return
    m = res.get("mode", mode.value)
    typer.echo(f"service {res.get('service', service)}: load balancing {m} "
               f"({LB_MODES.get(m, m)})")
