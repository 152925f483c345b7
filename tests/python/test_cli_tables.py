"""`sluice flow list` (and nf list, rule list, flow request list) never
cuts a number or an id: into a pipe it prints the whole table whatever
$COLUMNS says; in a narrow terminal it leaves out the less important
columns, and wraps the flow key (the match) between words."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_client import fake_socket

FLOWS = [
    {"id": 1048575, "key": "tcp 10.0.201.99:60736 > 192.168.0.74:443", "graph": "default",
     "pkts": 12345678901, "bytes": 9876543210987, "idle_ms": 3,
     "pins": {"monitor": 1, "forward": 0}, "overrides": []},
    {"id": 7, "key": "udp [2001:db8::1]:5353 > [2001:db8::2]:53", "graph": "web",
     "pkts": 5, "bytes": 420, "idle_ms": 25000, "pins": {},
     "overrides": [{"type": "change_default", "service": "ddos-detect", "to": "scrubber"}]},
]


NFS = [
    {"instance": 0, "service": "firewall", "service_id": 0,
     "prog": "/opt/sluice/build/nfs/firewall/sluice-firewall", "pid": 4194301,
     "state": "running", "mode": "shared", "rx_ring": {"count": 4095, "size": 4095},
     "tx_ring": {"count": 12, "size": 4095}},
    {"instance": 127, "service": "monitor", "service_id": 63,
     "prog": "/opt/sluice/build/nfs/monitor/sluice-monitor", "pid": 77, "state": "stopping",
     "mode": "poll", "rx_ring": {"count": 0, "size": 1048575},
     "tx_ring": {"count": 0, "size": 1048575}},
]
RULES = [{"id": 4095, "priority": 65535, "proto": "tcp", "src": "10.0.0.0/8",
          "dst": "192.168.100.0/24", "sport": "1024-65535", "dport": "443",
          "in_port": "in", "graph": "web", "flows": 1234567}]
REQUESTS = [{"id": 63, "type": "change_default", "service": "ddos-detect", "to": "scrubber",
             "match": {"proto": "udp", "src": "2001:db8:1234::/48", "dport": "53"}}]
RESULTS = {
    "flow.list": {"flows": FLOWS, "total": 2, "matched": 2, "truncated": False},
    "nf.list": NFS,
    "rule.list": {"rules": RULES},
    "flow.requests": {"requests": REQUESTS},
}


def handler(req: Any) -> Any:
    return {"jsonrpc": "2.0", "id": req["id"], "result": RESULTS[req["method"]]}


@pytest.fixture
def sock() -> Iterator[Path]:
    with fake_socket(handler, "slu") as path:
        yield path


def flow_list(sock: Path, columns: int, terminal: bool, cmd: tuple[str, ...] = ("flow", "list"),
              ) -> str:
    argv = [sys.executable, "-m", "sluice", *cmd, "--socket", str(sock)]
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


NF_LIST_50 = """\
┏━━━━━━━━━━┳━━━━━━━━━━┳━━━━━━━━━┳━━━━━━━━━━┳━━━━━━━━━━━┓
┃ instance ┃ service  ┃     pid ┃ state    ┃   rx ring ┃
┡━━━━━━━━━━╇━━━━━━━━━━╇━━━━━━━━━╇━━━━━━━━━━╇━━━━━━━━━━━┩
│        0 │ firewall │ 4194301 │ running  │ 4095/4095 │
│          │ (0)      │         │          │           │
│      127 │ monitor  │      77 │ stopping │ 0/1048575 │
│          │ (63)     │         │          │           │
└──────────┴──────────┴─────────┴──────────┴───────────┘
(not shown in 50 columns: mode, tx ring, program; `sluice nf list --json` shows them)
"""

RULE_LIST_50 = """\
┏━━━━━━┳━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━┳━━━━━━━┳━━━━━━━━━━━┓
┃   id ┃ priority ┃ match            ┃ graph ┃     flows ┃
┡━━━━━━╇━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━╇━━━━━━━╇━━━━━━━━━━━┩
│ 4095 │    65535 │ tcp src          │ web   │ 1,234,567 │
│      │          │ 10.0.0.0/8 dst   │       │           │
│      │          │ 192.168.100.0/24 │       │           │
│      │          │ sport 1024-65535 │       │           │
│      │          │ dport 443        │       │           │
│      │          │ in_port in       │       │           │
└──────┴──────────┴──────────────────┴───────┴───────────┘
"""

REQUEST_LIST_50 = """\
┏━━━━┳━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━┳━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━┓
┃ id ┃ type           ┃ service     ┃ to       ┃ match              ┃
┡━━━━╇━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━╇━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━┩
│ 63 │ change_default │ ddos-detect │ scrubber │ udp src            │
│    │                │             │          │ 2001:db8:1234::/48 │
│    │                │             │          │ dport 53           │
└────┴────────────────┴─────────────┴──────────┴────────────────────┘
"""

# Each row as its cells in order, as a pipe must print them on one line.
WHOLE_ROWS = {
    ("nf", "list"): [
        ["0", "firewall (0)", "/opt/sluice/build/nfs/firewall/sluice-firewall", "4194301",
         "running", "shared", "4095/4095", "12/4095"],
        ["127", "monitor (63)", "/opt/sluice/build/nfs/monitor/sluice-monitor", "77",
         "stopping", "poll", "0/1048575", "0/1048575"]],
    ("rule", "list"): [
        ["4095", "65535", "tcp src 10.0.0.0/8 dst 192.168.100.0/24 sport 1024-65535 dport 443 "
         "in_port in", "web", "1,234,567"]],
    ("flow", "request", "list"): [
        ["63", "change_default", "ddos-detect", "scrubber",
         "udp src 2001:db8:1234::/48 dport 53"]],
}


@pytest.mark.parametrize(("cmd", "expected"), [
    (("nf", "list"), NF_LIST_50), (("rule", "list"), RULE_LIST_50),
    (("flow", "request", "list"), REQUEST_LIST_50)])
def test_the_other_lists_in_a_narrow_terminal(sock: Path, cmd: tuple[str, ...],
                                              expected: str) -> None:
    """nf list, rule list and flow request list never cut a number either:
    the match wraps between words, and nf list leaves columns out."""
    assert flow_list(sock, 50, True, cmd) == expected


@pytest.mark.parametrize("cmd", list(WHOLE_ROWS))
def test_the_other_lists_into_a_pipe(sock: Path, cmd: tuple[str, ...]) -> None:
    out = flow_list(sock, 40, False, cmd)
    lines = [[c.strip() for c in line.split("│")[1:-1]] for line in out.splitlines()
             if line.startswith("│")]
    assert lines == WHOLE_ROWS[cmd]
