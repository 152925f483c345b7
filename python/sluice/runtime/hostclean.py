"""What a node leaves on the host and who still uses it (runtime layer):
the processes that map a node's DPDK files, the `sluice up` that owns
them, and the removal of hugepage files, runtime folders and sockets a
killed node left behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import socket
from pathlib import Path


def _remove_stale_socket(path: Path) -> None:
    """Removes the control socket a killed sluiced left, if nobody listens."""
    if not path.is_socket():
        return
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(str(path))
    except ConnectionRefusedError:
        with contextlib.suppress(OSError):
            path.unlink()
    except OSError:
        pass
    finally:
        s.close()


# -- leftovers ------------------------------------------------------------------------

# Set in the environment of every process the launcher starts, to its own
# pid: another `sluice up` of the node can then say which process to stop.
OWNER_ENV = "SLUICE_UP_PID"


def owner(pid: int) -> int | None:
    """The pid of the launcher (`sluice up`) that started process ``pid``
    and still runs it: its parent, when the launcher marked it (OWNER_ENV,
    its own pid). None for a process started otherwise (by hand), or whose
    launcher is gone, or that cannot be read."""
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return ppid if f"{OWNER_ENV}={ppid}".encode() in env else None


def _cmdline(pid: int, limit: int = 80) -> str:
    """Process ``pid``'s command line, shortened to ``limit`` characters."""
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
    except OSError:
        return "?"
    text = " ".join(a.decode(errors="replace") for a in args)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def prefix_users(prefix: str) -> list[int]:
    """Live processes started with --file-prefix=PREFIX (the launcher always
    passes it, so this finds a node's sluiced even before its socket is up)."""
    needle = f"--file-prefix={prefix}".encode()
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            args = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if needle in args:
            pids.append(int(d.name))
    return pids


def primary_alive(prefix: str) -> bool:
    """Whether a DPDK primary (a sluiced) runs with file prefix ``prefix``:
    it holds a write lock on /var/run/dpdk/PREFIX/config while it runs
    (what rte_eal_primary_proc_alive tests). This finds a sluiced started
    by hand, whose command line need not say --file-prefix."""
    try:
        fd = os.open(f"/var/run/dpdk/{prefix}/config", os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # drops the lock, if this took it
    return False


def _prefix_in_use(prefix: str) -> bool:
    return primary_alive(prefix) or bool(prefix_users(prefix))


def hugetlbfs_mounts() -> list[Path]:
    try:
        lines = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return []
    return [Path(f[1]) for f in (line.split() for line in lines)
            if len(f) > 2 and f[2] == "hugetlbfs"]


def cleanup_node(node: str) -> list[Path]:
    """Removes the hugepage files and /var/run/dpdk folder of a node whose
    processes are gone (what scripts/cleanup.sh NODE does); returns what it
    removed. Does nothing while a process still uses the node's prefix."""
    prefix = f"sluice_{node}"
    if _prefix_in_use(prefix):
        return []
    removed: list[Path] = []
    for mount in hugetlbfs_mounts():
        with contextlib.suppress(OSError):
            for f in mount.glob(f"{prefix}map_*"):
                with contextlib.suppress(OSError):
                    f.unlink()
                    removed.append(f)
    rundir = Path("/var/run/dpdk") / prefix
    if rundir.is_dir():
        shutil.rmtree(rundir, ignore_errors=True)
        removed.append(rundir)
    return removed
