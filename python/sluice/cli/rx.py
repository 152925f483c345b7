"""sluice rx: pause and resume reading the ports."""

from __future__ import annotations

from pathlib import Path

import typer

from .apps import rx_app
from .common import JsonOpt, NodeOpt, SocketOpt, TimeoutOpt, _call, _print_json, errors


@rx_app.command("pause")
@errors
def rx_pause(node: str = NodeOpt, socket: Path = SocketOpt, as_json: bool = JsonOpt,
             timeout: float = TimeoutOpt) -> None:
    """Stop reading the ports; the packets in flight go on to their ends."""
    res = _call(node, socket, "rx.pause", timeout)
    if as_json:
        _print_json(res)
        return
    typer.echo("ports paused: sluiced reads none of them (packets in flight drain; "
               "`sluice rx resume` reads them again)")


@rx_app.command("resume")
@errors
def rx_resume(node: str = NodeOpt, socket: Path = SocketOpt, as_json: bool = JsonOpt,
              timeout: float = TimeoutOpt) -> None:
    """Read the ports again."""
    res = _call(node, socket, "rx.resume", timeout)
    if as_json:
        _print_json(res)
        return
    typer.echo("ports resumed: sluiced reads them again")
