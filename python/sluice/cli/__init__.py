"""The `sluice` command line.

Every command is a thin layer over the client, the deployment loader, the
launcher or the trace generator. Errors print one clear line (no traceback)
on stderr and exit with status 1.

One module per command group (chain, nf, lb, rx, graph, rule, flow,
request, trace; node has the top-level commands), each adding its commands
to its group of apps.py when imported; common.py has what they share. The
modules are imported here in the order `sluice --help` lists the commands.
"""

from __future__ import annotations

from ..runtime.client import COMMANDS, SOCKET_DIR
from . import chain, flow, graph, lb, nf, node, request, rule, rx, trace  # noqa: F401
from .apps import app
from .common import _duration, errors, fail, print_table, user_error
from .main import main, register_place
from .node import event_line

register_place()

__all__ = ["COMMANDS", "SOCKET_DIR", "_duration", "app", "errors", "event_line", "fail", "main",
           "print_table", "user_error"]
