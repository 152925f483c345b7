"""`sluice up` stops cleanly however it is interrupted (docs/deployment.md,
"Stopping and exit status").

Each test runs the real command line on a small deployment (a capture
replayed in a loop, three sluice-forward NFs, a null port) and interrupts it
at one moment: SIGINT while sluiced starts, while the NFs register, right
after the chain is set, during the live table; a second SIGINT during the
stop; SIGTERM; the terminal closing (SIGHUP with the controlling terminal
gone); the end of --duration; sluiced killed under it. After each the
launcher has exited with the documented status within 15 s, said why in one
line on stderr without a traceback, and left no process of the node, no
hugepage file, no /var/run/dpdk folder and no socket.

The moments are found by polling (sluiced's pid, the NFs' pids, the chain
sluiced reports, the line printed before the live table); the only timed
ones are "during the live table" and the second SIGINT, which are sent at a
few spread delays after a polled moment.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import signal
import subprocess
import termios
import threading
import time
from pathlib import Path

import pytest
import yaml
from conftest import build_dir, prog, wait_until
from packets import mixed, write
from test_demo import sluice_cmd

from sluice.runtime.client import SOCKET_DIR, Client, SluiceError
from sluice.runtime.launch import cleanup_node, hugetlbfs_mounts, prefix_users

CHAIN = ["s1", "s2", "s3", "port:out"]
STOP_S = 15.0  # the stop must take less than this


def reason(sig: str) -> str:
    code = 128 + signal.Signals[sig].value
    what = {"SIGINT": "Ctrl-C", "SIGTERM": "terminated", "SIGHUP": "terminal closed"}[sig]
    return f"sluice up: stopped by {sig} ({what}); exit status {code}"


class Up:
    """A `sluice up` subprocess of a three-NF deployment of node ``node``."""

    def __init__(self, node: str, tmp: Path, *args: str, tty: bool = False) -> None:
        self.node, self.tmp = node, tmp
        pcap = tmp / "in.pcap"
        if not pcap.exists():
            write(pcap, mixed(200, flows=20))
        self.file = tmp / "dep.yaml"
        self.file.write_text(yaml.safe_dump(self.deployment()))
        self.logs = tmp / "logs"
        env = {**os.environ, "COLUMNS": "200", "SLUICE_BUILD_DIR": str(build_dir())}
        argv = [*sluice_cmd(), "up", str(self.file), "--log-dir", str(self.logs), *args]
        self.out_path, self.err_path = tmp / "stdout", tmp / "stderr"
        self.master = -1
        self.tty, self.tty_out = tty, b""
        if tty:
            # A terminal of its own: `sluice up` leads a session whose
            # controlling terminal is a pty; closing its master is the
            # terminal window closing (the kernel sends SIGHUP).
            self.master, slave = pty.openpty()
            self.popen = subprocess.Popen(
                argv, stdin=slave, stdout=slave, stderr=slave, cwd=tmp, env=env,
                start_new_session=True,
                preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
            os.close(slave)
            self.reader = threading.Thread(target=self._drain, daemon=True)
            self.reader.start()
        else:
            with open(self.out_path, "wb") as o, open(self.err_path, "wb") as e:
                self.popen = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=o,
                                              stderr=e, cwd=tmp, env=env)
        self.t_signal: float | None = None

    def deployment(self, replicas3: int = 1) -> dict:
        return {
            "node": {"name": self.node, "mode": "shared", "cores": [0, 1]},
            "ports": [{"name": "in", "device": f"net_pcap0,rx_pcap={self.tmp / 'in.pcap'},"
                                                "infinite_rx=1"},
                      {"name": "out", "device": "net_null0,no-rx=1"}],
            "nfs": [{"name": f"f{i}", "program": prog("forward"), "service": f"s{i}",
                     **({"replicas": replicas3} if i == 3 and replicas3 > 1 else {})}
                    for i in (1, 2, 3)],
            "chain": CHAIN,
        }

    def _drain(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            self.tty_out += data

    def stdout(self) -> str:
        if self.tty:
            return self.tty_out.decode(errors="replace")
        return self.out_path.read_text(errors="replace")

    def stderr(self) -> str:
        if self.tty:  # the terminal has both
            return ""
        return self.err_path.read_text(errors="replace")

    def send(self, sig: int) -> None:
        if self.t_signal is None:
            self.t_signal = time.monotonic()
        self.popen.send_signal(sig)

    def hang_up(self) -> None:
        """Closes the terminal."""
        self.t_signal = time.monotonic()
        os.close(self.master)
        self.master = -1

    # -- moments ----------------------------------------------------------------

    def running(self) -> bool:
        assert self.popen.poll() is None, (f"sluice up exited ({self.popen.returncode}) "
                                           f"too early:\n{self.stdout()}\n{self.stderr()}")
        return True

    def wait_sluiced(self) -> None:
        wait_until(lambda: self.running() and prefix_users(f"sluice_{self.node}"), 20,
                   "sluiced to start", interval=0.002)

    def wait_nf_started(self) -> None:
        wait_until(lambda: self.running() and node_processes(self.node, nfs_only=True), 20,
                   "an NF to start", interval=0.002)

    def wait_chain(self) -> None:
        def chain() -> bool:
            self.running()
            try:
                with Client(self.node, timeout=1.0) as c:
                    return c.call("chain.get").get("hops") == CHAIN
            except SluiceError:
                return False
        wait_until(chain, 30, "the chain to be set", interval=0.005)

    def wait_table(self) -> None:
        wait_until(lambda: self.running() and "orchestrator: `sluice apply" in self.stdout(),
                   30, "the live table")

    # -- after ------------------------------------------------------------------

    def wait_exit(self, timeout: float = STOP_S) -> int:
        try:
            rc = self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"sluice up still runs {timeout} s after it was stopped:\n"
                                 f"{self.stdout()}\n{self.stderr()}") from None
        if self.t_signal is not None:
            took = time.monotonic() - self.t_signal
            assert took < timeout, took
        return rc


def _cmdline(pid: str) -> list[bytes]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return []


def node_processes(node: str, nfs_only: bool = False) -> list[int]:
    """Live processes of the node: sluiced (--file-prefix=sluice_NODE) and
    its NFs (--node NODE)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        args = _cmdline(d)
        nf = any(a == b"--node" and b == node.encode()
                 for a, b in zip(args, args[1:], strict=False))
        if nf or (not nfs_only and f"--file-prefix=sluice_{node}".encode() in args):
            out.append(int(d))
    return out


def leftovers(node: str) -> list[str]:
    left = [f"process {pid}: {b' '.join(_cmdline(str(pid)))[:120]!r}"
            for pid in node_processes(node)]
    left += [str(p) for d in hugetlbfs_mounts() for p in d.glob(f"sluice_{node}map_*")]
    for p in (Path(f"/var/run/dpdk/sluice_{node}"), SOCKET_DIR / f"{node}.sock",
              SOCKET_DIR / f"{node}.orchestrator"):
        if p.exists():
            left.append(str(p))
    return left


@pytest.fixture
def up(node: str, tmp_path: Path):
    ups: list[Up] = []

    def start(*args: str, tty: bool = False) -> Up:
        u = Up(node, tmp_path, *args, tty=tty)
        ups.append(u)
        return u

    yield start
    for u in ups:  # whatever a failed test left: never disturb the next tests
        if u.popen.poll() is None:
            u.popen.kill()
            u.popen.wait()
        if u.master >= 0:
            os.close(u.master)
    for pid in node_processes(node):
        os.kill(pid, signal.SIGKILL)
    if ups:
        wait_until(lambda: not node_processes(node), 5, "the node's processes to die")
        cleanup_node(node)
        for p in (SOCKET_DIR / f"{node}.sock", SOCKET_DIR / f"{node}.orchestrator"):
            p.unlink(missing_ok=True)


def assert_stopped(u: Up, code: int, err_lines: list[str]) -> None:
    rc = u.wait_exit()
    out, err = u.stdout(), u.stderr()
    assert leftovers(u.node) == [], f"{out}\n{err}"
    assert "Traceback" not in out + err, f"{out}\n{err}"
    assert (rc, err.splitlines()) == (code, err_lines), f"{out}\n{err}"


SIGINT_LINES = [reason("SIGINT")]


def test_sigint_as_sluiced_starts(up) -> None:
    u = up()
    u.wait_sluiced()
    u.send(signal.SIGINT)
    assert_stopped(u, 130, SIGINT_LINES)
    assert "stopping (SIGINT)" in u.stdout()


def test_sigint_while_nfs_register(up) -> None:
    u = up()
    u.wait_nf_started()
    u.send(signal.SIGINT)
    assert_stopped(u, 130, SIGINT_LINES)


def test_sigint_right_after_the_chain_is_set(up) -> None:
    u = up()
    u.wait_chain()
    u.send(signal.SIGINT)
    assert_stopped(u, 130, SIGINT_LINES)


@pytest.mark.parametrize("delay", [0.0, 1.2])  # timed: into the table's first second or later
def test_sigint_during_the_live_table(up, delay: float) -> None:
    u = up()
    u.wait_table()
    time.sleep(delay)
    u.send(signal.SIGINT)
    assert_stopped(u, 130, SIGINT_LINES)
    out = u.stdout()
    assert re.search(r"^packets in: [\d,]+   out: [\d,]+", out, re.M), out
    assert out.rstrip().endswith(f"stopped; logs are in {u.logs}/"), out


AGAIN = ["sluice up: already stopping (SIGINT again); waiting for the processes to exit",
         *SIGINT_LINES]


# Timed: a second Ctrl-C right after the first (the two may merge into one
# pending signal), 0.05 s or 0.4 s later (early in the stop, or after it);
# 'sluiced': both while sluiced starts. Polled: 'stopping', once the launcher
# printed that it stops and while sluiced still runs: it must be acknowledged.
@pytest.mark.parametrize(("moment", "gap"), [("table", 0.0), ("table", 0.05),
                                             ("table", 0.4), ("sluiced", 0.02),
                                             ("table", "stopping")])
def test_second_sigint_while_stopping(up, moment: str, gap: float | str) -> None:
    u = up()
    (u.wait_table if moment == "table" else u.wait_sluiced)()
    u.send(signal.SIGINT)
    if gap == "stopping":
        wait_until(lambda: "stopping (SIGINT)" in u.stdout(), 10, "the stop to begin",
                   interval=0.002)
        assert prefix_users(f"sluice_{u.node}"), "sluiced stopped before the 2nd SIGINT"
    else:
        time.sleep(float(gap))
    u.send(signal.SIGINT)
    rc = u.wait_exit()
    err = u.stderr().splitlines()
    assert leftovers(u.node) == [], u.stdout() + u.stderr()
    assert err == AGAIN if gap == "stopping" else err in (AGAIN, SIGINT_LINES), u.stderr()
    assert rc == 130 and "Traceback" not in u.stdout() + u.stderr()


def test_sigterm_while_nfs_register_and_during_the_table(up) -> None:
    u = up()
    u.wait_nf_started()
    u.send(signal.SIGTERM)
    assert_stopped(u, 143, [reason("SIGTERM")])
    u = up()
    u.wait_table()
    u.send(signal.SIGTERM)
    assert_stopped(u, 143, [reason("SIGTERM")])


@pytest.mark.parametrize("moment", ["sluiced", "table"])
def test_terminal_closed(up, moment: str) -> None:
    u = up(tty=True)
    if moment == "sluiced":
        u.wait_sluiced()
    else:
        wait_until(lambda: u.running() and "orchestrator: `sluice apply" in u.stdout(), 30,
                   "the live table")
    u.hang_up()
    rc = u.wait_exit()
    assert leftovers(u.node) == [], u.stdout()
    assert rc == 129, u.stdout()
    assert "Traceback" not in u.stdout()


def test_sighup_without_terminal_still_reloads(up) -> None:
    """SIGHUP with no terminal gone is `sluice apply` of the file (documented):
    sent while the NFs register, it is applied once the orchestrator runs."""
    u = up()
    u.wait_nf_started()
    u.file.write_text(yaml.safe_dump(u.deployment(replicas3=2)))
    u.send(signal.SIGHUP)
    u.t_signal = None
    wait_until(lambda: u.running() and "start: f3.2 (pid" in u.stdout(), 30,
               "the reloaded file's second f3")
    u.send(signal.SIGINT)
    assert_stopped(u, 130, SIGINT_LINES)


def test_duration_ends(up) -> None:
    u = up("--duration", "1")
    u.wait_table()
    u.t_signal = time.monotonic()
    assert_stopped(u, 0, [])
    out = u.stdout()
    assert "stopping: --duration 1 s is over" in out.splitlines(), out
    assert out.rstrip().endswith(f"stopped; logs are in {u.logs}/"), out


def test_sluiced_killed(up) -> None:
    u = up()
    u.wait_table()
    [pid] = prefix_users(f"sluice_{u.node}")
    hugefiles = [p for d in hugetlbfs_mounts() for p in d.glob(f"sluice_{u.node}map_*")]
    assert hugefiles
    u.t_signal = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    rc = u.wait_exit()
    err = u.stderr()
    assert rc == 1, err
    assert err.startswith(f"sluiced was killed by SIGKILL; last lines of "
                          f"{u.logs}/sluiced.log:\n"), err
    assert "Traceback" not in u.stdout() + err
    assert leftovers(u.node) == [], err


def test_launcher_killed(up) -> None:
    # SIGKILL gives `sluice up` no chance to stop anything: sluiced gets
    # SIGTERM from the kernel when its parent dies (PR_SET_PDEATHSIG), stops
    # its NFs and removes its files. Only the orchestrator's socket file,
    # which `sluice up` itself owned, is left (the next `sluice up` of the
    # node replaces it).
    u = up()
    u.wait_table()
    [pid] = prefix_users(f"sluice_{u.node}")
    nfs = node_processes(u.node, nfs_only=True)
    assert len(nfs) == 3
    u.popen.kill()
    assert u.popen.wait(5) == -signal.SIGKILL
    wait_until(lambda: not node_processes(u.node), STOP_S, "the node's processes to exit")
    orch_sock = SOCKET_DIR / f"{u.node}.orchestrator"
    assert leftovers(u.node) == [str(orch_sock)]
    log = (u.logs / "sluiced.log").read_text()
    assert re.search(r"^sluiced\[\S+\] \d+\.\d{3}: shutting down: SIGTERM$", log, re.M), \
        log[-2000:]
