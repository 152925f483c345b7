"""`sluice flow list` never cuts a number or an id: into a pipe it prints
the whole table whatever $COLUMNS says; in a narrow terminal it leaves out
the less important columns, and wraps the flow key between words."""

from __future__ import annotations

import os
import pty
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_client import FakeSluiced

FLOWS = [
    {"id": 1048575, "key": "tcp 10.0.201.99:60736 > 192.168.0.74:443", "graph": "default",
     "pkts": 12345678901, "bytes": 9876543210987, "idle_ms": 3,
     "pins": {"monitor": 1, "forward": 0}, "overrides": []},
    {"id": 7, "key": "udp [2001:db8::1]:5353 > [2001:db8::2]:53", "graph": "web",
     "pkts": 5, "bytes": 420, "idle_ms": 25000, "pins": {},
     "overrides": [{"type": "change_default", "service": "ddos-detect", "to": "scrubber"}]},
]


def handler(req: Any) -> Any:
    assert req["method"] == "flow.list", req
    return {"jsonrpc": "2.0", "id": req["id"], "result": {
        "flows": FLOWS, "total": 2, "matched": 2, "truncated": False}}


@pytest.fixture
def sock() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="slu", dir="/tmp"))
    srv = FakeSluiced(d / "n.sock", handler=handler)
    try:
        yield d / "n.sock"
    finally:
        srv.close()
        shutil.rmtree(d, ignore_errors=True)


def flow_list(sock: Path, columns: int, terminal: bool) -> str:
    argv = [sys.executable, "-m", "sluice", "flow", "list", "--socket", str(sock)]
    env = {**os.environ, "COLUMNS": str(columns)}
    if not terminal:
        r = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)
        assert (r.returncode, r.stderr) == (0, "")
        return r.stdout
    master, slave = pty.openpty()
    p = subprocess.Popen(argv, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 1 << 16)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert p.wait(timeout=60) == 0
    # the terminal's colours and line ends
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.decode()).replace("\r\n", "\n")


FULL = (  # lines of 140 characters, each said in two halves
    "┏━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━┳━━━━━"
    "━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━┳━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┓\n"
    "┃      id ┃ flow                                      ┃ graph   ┃     "
    "      pkts ┃             bytes ┃ idle ┃ pins, overrides              ┃\n"
    "┡━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━╇━━━━━"
    "━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━╇━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┩\n"
    "│ 1048575 │ tcp 10.0.201.99:60736 > 192.168.0.74:443  │ default │ 12,3"
    "45,678,901 │ 9,876,543,210,987 │ 3 ms │ monitor#1, forward#0         │\n"
    "│       7 │ udp [2001:db8::1]:5353 > [2001:db8::2]:53 │ web     │     "
    "         5 │               420 │ 25 s │ ddos-detect default scrubber │\n"
    "└─────────┴───────────────────────────────────────────┴─────────┴─────"
    "───────────┴───────────────────┴──────┴──────────────────────────────┘\n"
    "2 flow(s)\n"
)


@pytest.mark.parametrize("columns", [80, 40])
def test_into_a_pipe_the_whole_table(sock: Path, columns: int) -> None:
    assert flow_list(sock, columns, terminal=False) == FULL


def test_a_wide_terminal_shows_it_all(sock: Path) -> None:
    assert flow_list(sock, 200, terminal=True) == FULL


def test_an_80_column_terminal(sock: Path) -> None:
    out = flow_list(sock, 80, terminal=True)
    assert out == """\
┏━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━┳━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━┓
┃      id ┃ flow                ┃ graph   ┃           pkts ┃             bytes ┃
┡━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━╇━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━┩
│ 1048575 │ tcp                 │ default │ 12,345,678,901 │ 9,876,543,210,987 │
│         │ 10.0.201.99:60736 > │         │                │                   │
│         │ 192.168.0.74:443    │         │                │                   │
│       7 │ udp                 │ web     │              5 │               420 │
│         │ [2001:db8::1]:5353  │         │                │                   │
│         │ > [2001:db8::2]:53  │         │                │                   │
└─────────┴─────────────────────┴─────────┴────────────────┴───────────────────┘
(not shown in 80 columns: idle, pins, overrides; `sluice flow get ID` shows them)
2 flow(s)
"""


def test_a_terminal_too_narrow_for_the_numbers(sock: Path) -> None:
    """The numbers and the longest word of the key need 68 columns: the table
    takes them (the terminal folds its lines); every column that can go went."""
    assert flow_list(sock, 40, terminal=True) == """\
┏━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━┓
┃      id ┃ flow               ┃           pkts ┃             bytes ┃
┡━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━┩
│ 1048575 │ tcp                │ 12,345,678,901 │ 9,876,543,210,987 │
│         │ 10.0.201.99:60736  │                │                   │
│         │ > 192.168.0.74:443 │                │                   │
│       7 │ udp                │              5 │               420 │
│         │ [2001:db8::1]:5353 │                │                   │
│         │ > [2001:db8::2]:53 │                │                   │
└─────────┴────────────────────┴────────────────┴───────────────────┘
(not shown in 40 columns: idle, pins, overrides, graph; `sluice flow get ID` shows \
them)
2 flow(s)
"""
