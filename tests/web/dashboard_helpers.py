"""Helpers of the browser tests (tests/web/): the integration tests' conftest
(loaded under a name of its own), a free loopback port, and the driver of
headless chromium (drive.mjs). A module with a unique name, so that test
modules need not import `conftest` (which names a different file depending
on what pytest collected last)."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")

_spec = importlib.util.spec_from_file_location(
    "_sluice_integration_conftest", ROOT / "tests" / "integration" / "conftest.py")
assert _spec is not None and _spec.loader is not None
it = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(it)


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
