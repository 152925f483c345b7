"""sluice nf: the NF instances (list, stop, scale)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from .apps import nf_app
from .common import _call, _print_json, errors, on_node, print_table


@nf_app.command("list")
@errors
@on_node
def nf_list(*, node: str | None, socket: Path | None, as_json: bool,
            timeout: float) -> None:
    """List the NF instances registered with sluiced."""
    nfs = _call(node, socket, "nf.list", timeout)
    if as_json:
        _print_json(nfs)
        return
    # numbers never cut (print_table); in a narrow terminal the mode, the
    # tx ring, then the program are left out
    rows = []
    for n in nfs:
        rx, tx = n.get("rx_ring") or {}, n.get("tx_ring") or {}
        rows.append([str(n.get("instance")), f"{n.get('service')} ({n.get('service_id')})",
                     str(n.get("prog", "")), str(n.get("pid")), str(n.get("state")),
                     str(n.get("mode", "")), f"{rx.get('count', 0)}/{rx.get('size', 0)}",
                     f"{tx.get('count', 0)}/{tx.get('size', 0)}"])
    print_table([("instance", "right", False), ("service", "left", True),
                 ("program", "left", False), ("pid", "right", False),
                 ("state", "left", False), ("mode", "left", False),
                 ("rx ring", "right", False), ("tx ring", "right", False)],
                rows, drop_order=["mode", "tx ring", "program"],
                note="`sluice nf list --json` shows them")


@nf_app.command("stop")
@errors
@on_node
def nf_stop(instance: int = typer.Argument(..., min=0, help="The instance to stop."),
            *, node: str | None, socket: Path | None, as_json: bool,
            timeout: float) -> None:
    """Stop one NF instance cleanly: it deregisters, its ring drains, it exits (a launcher's
    orchestrator does not restart an instance stopped so)."""
    res = _call(node, socket, "nf.stop", timeout, instance=instance)
    if as_json:
        _print_json(res)
        return
    typer.echo(f"instance {res.get('instance', instance)}: {res.get('state', 'stopping')} "
               f"(`sluice nf list` shows it until it has gone)")


@nf_app.command("scale")
@errors
@on_node
def nf_scale(service: str = typer.Argument(..., help="The service to scale."),
             replicas: int = typer.Argument(..., min=0,
                                            help="Instances it should have (0 stops them all; "
                                                 "new ones copy the newest running)."),
             *, node: str | None, socket: Path | None, as_json: bool,
             timeout: float) -> None:
    """Start or stop instances of a service until it has REPLICAS (copies of its newest)."""
    res = _call(node, socket, "nf.scale", timeout, service=service, replicas=replicas)
    if as_json:
        _print_json(res)
        return
    started, stopping = res.get("started") or [], res.get("stopping") or []
    pids = res.get("started_pids") or []
    what = []
    if started:
        what.append(f"started instance(s) {_ids(started)}")
    if pids:
        what.append(f"started pid(s) {_ids(pids)} (they appear in `sluice nf list` once "
                    f"registered)")
    if stopping:
        what.append(f"stopping instance(s) {_ids(stopping)}")
    cancelled = res.get("cancelled_pids") or []
    if cancelled:
        what.append(f"stopped pid(s) {_ids(cancelled)} before they registered")
    typer.echo(f"service {res.get('service', service)}: {res.get('replicas', replicas)} "
               f"replica(s): "
               f"{'; '.join(what) or 'nothing to do'}")
    if replicas == 0 and (stopping or cancelled):
        # nf.scale copies a running instance: with none left it cannot start one
        typer.echo(f"no instance of {service} is left to copy: `sluice nf scale {service} N` "
                   f"cannot start one again; `sluice apply DEPLOYMENT.yaml` starts the "
                   f"file's replicas")


def _ids(v: list[Any]) -> str:
    return ", ".join(map(str, v))
