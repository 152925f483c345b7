"""The entry point, the version option and `sluice place`."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from .. import __version__
from ..runtime.client import SluiceError
from . import common
from .apps import app
from .common import fail


def register_place() -> None:
    """Registers the placement engineer's `place` command (called once the
    other commands are, so --help lists it after them). Until
    python/sluice/placement/cli.py exists (or while it cannot be imported) a
    stub says so; the placement package is not imported before then, as it
    is slow to import."""
    if (Path(__file__).parent.parent / "placement" / "cli.py").exists():
        try:
            from ..placement.cli import place
        except ImportError as e:
            reason = f"sluice.placement.cli: {e}"
        else:
            app.command("place")(place)
            return
    else:
        reason = "python/sluice/placement/cli.py does not exist yet"

    @app.command("place", context_settings={"ignore_unknown_options": True,
                                            "allow_extra_args": True})
    def place_missing() -> None:
        """Plan which NF runs on which node (placement engine not available)."""
        raise fail(f"sluice place: the placement engine is not available ({reason})")



def version_callback(value: bool) -> None:
    if value:
        typer.echo(f"sluice {__version__}")
        raise typer.Exit()


@app.callback()
def _main(version: bool = typer.Option(False, "--version", callback=version_callback,
                                       is_eager=True, help="Print the version.")) -> None:
    """Sluice control plane."""


def main() -> None:
    """Entry point of the `sluice` command."""
    common._IN_MAIN = True
    try:
        app()
    except SluiceError as e:  # raised outside a command body
        typer.echo(str(e), err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
