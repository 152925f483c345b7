"""The dashboard in a real browser: headless Debian chromium driven by
playwright-core (tests/web/drive.mjs), against a real sluiced with traffic.

Needs what the integration tests need (root, hugepages, a built tree: their
fixtures are reused from tests/integration/conftest.py) plus chromium and
tests/web/node_modules, which scripts/setup.sh installs. Without them the
tests fail saying what to run, rather than being skipped.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sluice.launch import hugetlbfs_mounts

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")

_spec = importlib.util.spec_from_file_location(
    "_sluice_integration_conftest", ROOT / "tests" / "integration" / "conftest.py")
assert _spec is not None and _spec.loader is not None
it = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(it)

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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Browser:
    """tests/web/drive.mjs: one JSON command a line, one JSON answer a line."""

    def __init__(self, log: Path):
        self.log = log
        self.errf = log.open("w")
        self.proc = subprocess.Popen(
            ["node", str(HERE / "drive.mjs")], cwd=HERE, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self.errf, text=True,
            env={**os.environ, "CHROMIUM": CHROMIUM})
        self.console: list[str] = []  # console errors and failed loads of the page

    def __call__(self, cmd: str, **args: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"cmd": cmd, **args}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait(10)
            raise AssertionError(f"the browser driver exited ({self.proc.returncode}) on {cmd}: "
                                 f"{self.log.read_text()[-3000:]}")
        r: dict[str, Any] = json.loads(line)
        self.console += r.get("console", [])
        if not r.get("ok"):
            raise AssertionError(f"browser: {cmd} {args}: {r.get('error')}")
        return r

    def eval(self, js: str) -> Any:
        return self("eval", js=js)["value"]

    def wait(self, js: str, timeout: float, what: str) -> None:
        try:
            self("wait", js=js, timeout=timeout)
        except AssertionError as e:
            raise AssertionError(f"the page did not show {what} within {timeout} s ({e})") \
                from None

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self("quit")
                self.proc.wait(20)
            except (AssertionError, OSError, subprocess.TimeoutExpired, ValueError):
                self.proc.kill()
                self.proc.wait(10)
        self.errf.close()


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
