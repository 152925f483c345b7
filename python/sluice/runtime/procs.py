"""The processes `sluice up` starts (runtime layer): one Proc per process,
how it ended in words, what a child does between fork and exec (CPUs, a
signal when the launcher dies), and the command of a ``run: container``
NF. The launcher and the orchestrator both start processes through these.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ..core.deploy import NFSpec
from ..core.errors import SluiceError
from . import container

TAIL_LINES = 15


class LaunchError(SluiceError):
    """Starting or running a deployment failed; the message says why."""


class Interrupted(BaseException):  # noqa: N818 (like KeyboardInterrupt)
    """A signal asked `sluice up` to stop (``sig``); raised by the launcher's
    ``should_stop`` check at a poll, never from inside a signal handler."""

    def __init__(self, sig: int):
        super().__init__(sig)
        self.sig = sig


@dataclass
class Proc:
    """One process the launcher started."""

    label: str  # "sluiced", "fw", "fw.2"
    argv: list[str]
    log: Path
    popen: subprocess.Popen[bytes] | None = None
    nf: NFSpec | None = None
    logf: IO[bytes] | None = field(default=None, repr=False)
    node: str = ""
    _nf_pid: int | None = field(default=None, repr=False)

    @property
    def pid(self) -> int:
        """The process's pid; for ``run: container``, the NF's own host pid
        (the one it registers with sluiced) once it runs, not podman's."""
        if self.nf is not None and self.nf.run == "container" and self.popen:
            if self._nf_pid is None and self.popen.poll() is None:
                self._nf_pid = container.nf_pid(self.node, self.label)
            if self._nf_pid is not None:
                return self._nf_pid
        return self.popen.pid if self.popen else -1

    def exited(self) -> int | None:
        """None while running, else the exit status as Popen gives it
        (negative: killed by that signal). A ``run: container`` NF's process
        is ``podman run`` (or ``docker run``), which exits with 128 + N when
        the NF was killed by signal N: that is given as -N, so a container
        NF killed by SIGKILL is reported like a host NF ("was killed by
        SIGKILL"), not as "exited with status 137". (The runtime's own
        failures are 125 to 127; an NF's exit status is never above 128.)"""
        rc = self.popen.poll() if self.popen else None
        if rc is not None and rc > 128 and self.nf is not None and self.nf.run == "container":
            try:
                return -int(signal.Signals(rc - 128))
            except ValueError:
                pass
        return rc

    def tail(self, n: int = TAIL_LINES) -> str:
        return log_tail(self.log, n)


def log_tail(path: Path, n: int = TAIL_LINES) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return f"    ({path} cannot be read)"
    if not lines:
        return f"    ({path} is empty)"
    return "\n".join("    " + line for line in lines[-n:])


def status_text(rc: int) -> str:
    """How a process ended, as the launcher and the orchestrator say it."""
    if rc < 0:
        try:
            return f"was killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"was killed by signal {-rc}"
    return f"exited with status {rc}"




def container_argv(argv: list[str], *, name: str, image: str, node: str,
                   workdir: Path | None = None) -> list[str]:
    """``argv`` run in a container (``run: container``), by sluice.runtime.container.wrap
    (``name``: the instance's label, e.g. fwd.2)."""
    try:
        return list(container.wrap(argv, name=name, image=image, node=node, workdir=workdir))
    except SluiceError:
        raise
    except Exception as e:  # noqa: BLE001 (the container runtime's own errors)
        raise LaunchError(f"NF '{name}': cannot build its container command "
                          f"(image {image}): {e}") from None


_PR_SET_PDEATHSIG = 1
_libc: Any = None


def _child_setup(cores: set[int]) -> Callable[[], None]:
    """What a started process does between fork and exec: take the node's
    CPUs, and get SIGTERM when the launcher dies, so that a `sluice up`
    killed with SIGKILL still stops sluiced cleanly (it stops its NFs; an NF
    whose sluiced is gone exits by itself). The kernel sends that signal
    when the *thread* that started the process exits, so only processes the
    main thread starts ask for it (sluiced and the file's NFs): the
    orchestrator's thread ends before the stop reads the last statistics,
    and its NFs need no such signal. A launcher that died before the child
    asked is noticed by the parent pid check."""
    global _libc
    if threading.current_thread() is not threading.main_thread():
        return lambda: os.sched_setaffinity(0, cores)
    if _libc is None:  # loaded here, not in the child (no dlopen after fork)
        import ctypes
        _libc = ctypes.CDLL(None, use_errno=True)
    parent = os.getpid()

    def setup() -> None:
        os.sched_setaffinity(0, cores)
        _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(143)
    return setup


def _signal(p: Proc, sig: int) -> None:
    if p.popen and p.popen.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            p.popen.send_signal(sig)


def _wait_all(procs: list[Proc], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    for p in procs:
        if p.popen is None:
            continue
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.popen.wait(max(0.0, deadline - time.monotonic()))


def check_root() -> None:
    """Raises LaunchError unless this process runs as root: sluiced would
    refuse to start, and the node's leftovers in /var/run/dpdk (mode 0700)
    could not even be looked at."""
    if os.geteuid() != 0:
        raise LaunchError("sluice up must run as root: sluiced maps hugepages and owns the ports, "
                          "and the NFs attach to its memory; run it with sudo")
