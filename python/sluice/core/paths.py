"""Where things are: the source tree, the build folder, sluiced's control
sockets (core layer: names only, nothing is opened)."""

from __future__ import annotations

import os
from pathlib import Path

# The folder of sluiced's control sockets, NAME.sock (sluiced --socket's default).
SOCKET_DIR = Path("/var/run/sluice")


def repo_root() -> Path:
    """The source tree this package runs from (python/sluice/core/ inside it)."""
    return Path(__file__).resolve().parents[3]


def default_build_dir() -> Path:
    env = os.environ.get("SLUICE_BUILD_DIR")
    return Path(env).resolve() if env else repo_root() / "build"


def socket_path_for(node: str, folder: Path | None = None) -> Path:
    """The control socket of the sluiced named ``node`` (in ``folder``,
    default SOCKET_DIR)."""
    return (folder or SOCKET_DIR) / f"{node}.sock"
