"""sluiced's options as sluiced itself describes them: `sluiced --defaults-json`.

The option table in src/mgr/options.c is the one description of sluiced's
options (name, type, range, default, help); this module reads it from the
built binary instead of keeping a copy. It is read on first use, not at
import, and cached per binary (path and modification time), so a rebuild is
seen and importing the package runs nothing.

There is no fallback copy: a second list of defaults is what the table
replaces, and it would drift unseen. Without a built sluiced, using the
defaults raises SluicedDefaultsError naming `make build`; everything that
uses them (the orchestrator comparing node keys, its tests) also starts or
describes a sluiced, which needs the build anyway.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from .errors import SluiceError
from .paths import default_build_dir

# Deployment-file node keys that are sluiced options of the same name
# (`ring_size` is `--ring-size`); docs/deployment.md, "node".
NODE_KEYS = ("handoff", "ring_size", "mbufs", "max_nfs", "max_services",
             "backpressure_us", "idle_sleep_us")


class SluicedDefaultsError(SluiceError):
    """sluiced could not be asked for its options."""


def sluiced_binary() -> Path:
    """src/mgr/sluiced of the build folder (SLUICE_BUILD_DIR, else build/ of
    this source tree)."""
    return default_build_dir() / "src" / "mgr" / "sluiced"


def options(binary: Path | None = None) -> dict[str, dict[str, Any]]:
    """{"--name": {type, default, default_text, min, max | values, repeat,
    help}, ...} in sluiced's --help order."""
    exe = binary or sluiced_binary()
    try:
        mtime = exe.stat().st_mtime_ns
    except OSError:
        raise SluicedDefaultsError(
            f"sluiced not found at {exe}: its options and defaults are read from "
            f"`sluiced --defaults-json`; build it with `make build` (or set "
            f"SLUICE_BUILD_DIR to the build folder)") from None
    return _read(str(exe), mtime)


@lru_cache(maxsize=4)
def _read(exe: str, mtime_ns: int) -> dict[str, dict[str, Any]]:
    del mtime_ns  # part of the cache key only: a rebuilt binary is read again
    try:
        r = subprocess.run([exe, "--defaults-json"], capture_output=True, text=True,
                           timeout=30, check=False)
    except OSError as e:
        raise SluicedDefaultsError(f"cannot run {exe} --defaults-json: {e}; rebuild it "
                                   f"with `make build`") from None
    try:
        if r.returncode != 0:
            raise ValueError(f"exit status {r.returncode}: {r.stderr.strip()}")
        doc = json.loads(r.stdout)
        return {o["name"]: {k: v for k, v in o.items() if k != "name"}
                for o in doc["options"]}
    except (ValueError, KeyError, TypeError) as e:
        raise SluicedDefaultsError(f"{exe} --defaults-json did not give sluiced's options "
                                   f"({e}): is it an older build? rebuild it with "
                                   f"`make build`") from None


def default(option: str, binary: Path | None = None) -> Any:
    """The default of one option ("--ring-size" -> 4096); None when it has no
    fixed one (derived from other options, or none)."""
    return options(binary)[option]["default"]


class NodeDefaults(Mapping[str, Any]):
    """{node key: what sluiced takes when the launcher passes no option for
    it}, read from sluiced on first use: a deployment file that writes one
    of these down runs the same node as one that leaves it out."""

    def __init__(self, keys: tuple[str, ...]):
        self._keys = keys

    def _values(self) -> dict[str, Any]:
        return {k: default("--" + k.replace("_", "-")) for k in self._keys}

    def __getitem__(self, key: str) -> Any:
        if key not in self._keys:
            raise KeyError(key)
        return self._values()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __repr__(self) -> str:
        return f"NodeDefaults({self._keys!r})"


NODE_DEFAULTS = NodeDefaults(NODE_KEYS)
