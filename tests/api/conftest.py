"""Fixtures of the REST API tests: a fake sluiced (apifake.py) and, for
test_api_live.py, a real one with tests/integration's fixtures."""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from apifake import FakeSluiced, Sluiced, integration


@pytest.fixture
def sockdir() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="slapi", dir="/tmp"))  # short: sun_path has 108 bytes
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def fake(sockdir: Path) -> Iterator[tuple[Sluiced, Any]]:
    """(state, server): a fake sluiced listening on sockdir/t.sock."""
    state = Sluiced()
    srv = FakeSluiced(sockdir / "t.sock", handler=state.handler)
    try:
        yield state, srv
    finally:
        srv.close()


launch = integration.launch
_nodes = itertools.count()


@pytest.fixture
def node() -> Iterator[str]:
    """integration's node fixture with names of its own ('ap...'): this copy of
    its module counts from 0 too, and a name must not be reused."""
    name = f"ap{os.getpid() % 10000}x{next(_nodes)}"
    yield name
    leftovers = [p for d in integration.hugetlbfs_mounts()
                 for p in d.glob(f"sluice_{name}map_*")]
    rundir = Path(f"/var/run/dpdk/sluice_{name}")
    if rundir.exists():
        leftovers.append(rundir)
    assert not leftovers, f"node {name} left files behind: {leftovers}"


@pytest.fixture
def real_sluiced() -> None:
    """Fails (never skips) with what is missing to run a real sluiced."""
    integration._environment.__wrapped__()
