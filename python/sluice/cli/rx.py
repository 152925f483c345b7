"""sluice rx: pause and resume reading the ports."""

from __future__ import annotations

from pathlib import Path

import typer

from .apps import rx_app
from .common import _call, _print_json, errors, on_node


@rx_app.command("pause")
@errors
@on_node
def rx_pause(*, node: str | None, socket: Path | None, as_json: bool,
             timeout: float) -> None:
    """Stop reading the ports; the packets in flight go on to their ends."""
    res = _call(node, socket, "rx.pause", timeout)
    if as_json:
        _print_json(res)
        return
    typer.echo("ports paused: sluiced reads none of them (packets in flight drain; "
               "`sluice rx resume` reads them again)")


@rx_app.command("resume")
@errors
@on_node
def rx_resume(*, node: str | None, socket: Path | None, as_json: bool,
              timeout: float) -> None:
    """Read the ports again."""
    res = _call(node, socket, "rx.resume", timeout)
    if as_json:
        _print_json(res)
        return
    typer.echo("ports resumed: sluiced reads them again")
