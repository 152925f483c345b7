"""sluice chain: the default chain."""

from __future__ import annotations

from pathlib import Path

import typer

from .apps import chain_app
from .common import _call, _print_json, _say_note, errors, fail, on_node


@chain_app.command("get")
@errors
@on_node
def chain_get(*, node: str | None, socket: Path | None, as_json: bool,
              timeout: float) -> None:
    """Show the default chain."""
    ch = _call(node, socket, "chain.get", timeout)
    if as_json:
        _print_json(ch)
        return
    typer.echo(f"version {ch.get('version')}: {' -> '.join(ch.get('hops', [])) or '(none)'}")


@chain_app.command("set")
@errors
@on_node
def chain_set(hops: list[str] = typer.Argument(
                  ..., help="Hops in order: services, port:NAME or drop "
                            "(separate arguments or one comma-separated list)."),
              *, node: str | None, socket: Path | None, as_json: bool,
              timeout: float) -> None:
    """Replace the default chain, e.g. `sluice chain set firewall forward port:out`."""
    flat = [h.strip() for arg in hops for h in arg.split(",")]
    if any(not h for h in flat):
        raise fail(f"sluice chain set: empty hop in {' '.join(hops)!r}: list the hops, "
                   f"e.g. firewall,monitor,port:out")
    res = _call(node, socket, "chain.set", timeout, hops=flat)
    if as_json:
        _print_json(res)
        return
    typer.echo(f"version {res.get('version')}: {' -> '.join(flat)}")
    _say_note(res, node, socket, timeout)
