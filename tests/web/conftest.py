"""The dashboard in a real browser: headless Debian chromium driven by
playwright-core (tests/web/drive.mjs), against a real sluiced with traffic.

Needs what the integration tests need (root, hugepages, a built tree: their
fixtures are reused from tests/integration/conftest.py) plus chromium and
tests/web/node_modules, which scripts/setup.sh installs. Without them the
tests fail saying what to run, rather than being skipped.
"""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from dashboard_helpers import CHROMIUM, HERE, Browser, it

from sluice.runtime.launch import hugetlbfs_mounts

# fixtures of tests/integration (launch uses the `node` below)
_environment = it._environment
launch = it.launch
_counter = itertools.count()


@pytest.fixture
def node() -> Iterator[str]:
    """A node name unique to this test; checks nothing of it is left after."""
    name = f"web{os.getpid() % 10000}x{next(_counter)}"
    yield name
    leftovers = [p for d in hugetlbfs_mounts() for p in d.glob(f"sluice_{name}map_*")]
    rundir = Path(f"/var/run/dpdk/sluice_{name}")
    if rundir.exists():
        leftovers.append(rundir)
    assert not leftovers, f"node {name} left files behind: {leftovers}"


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    problems = []
    if not Path(CHROMIUM).exists():
        problems.append(f"no {CHROMIUM}: install Debian's chromium (scripts/setup.sh does)")
    if shutil.which("node") is None:
        problems.append("no node: install nodejs (scripts/setup.sh does)")
    if not (HERE / "node_modules" / "playwright-core").is_dir():
        problems.append("no tests/web/node_modules/playwright-core: run scripts/setup.sh "
                        "(npm ci in tests/web)")
    if problems:
        pytest.fail("browser tests cannot run: " + "; ".join(problems), pytrace=False)
    b = Browser(tmp_path / "browser.log")
    try:
        yield b
    finally:
        b.close()
