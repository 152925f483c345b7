"""What the benchmarks share: processes, nodes, cleanup, stats, hugepages, sampling.

Every process a benchmark starts goes through ``Processes``, which records its
exact command line and CPU set, keeps its output in a log directory, and stops
it (by its own pid, never by name) when the benchmark ends or is interrupted.
``Node`` runs one ``sluiced`` under a unique name and, when it stops, checks
that sluiced removed its hugepage files and its runtime directory; anything
left is recorded as a leak (a sluiced bug to report) and then removed.

Nothing here sends packets anywhere but DPDK virtual devices: no PCI device
is probed (sluiced and the NFs pass --no-pci) and no ``net_tap`` or
``net_af_packet`` port is ever created. (bench/ovs.py's OVS bridge has a
local port, a Linux tap that stays down and goes with the bridge.)
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import platform
import shlex
import signal
import socket
import statistics
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sluice.runtime.client import Client, SluiceError

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
HUGEPAGE_DIRS = (Path("/dev/hugepages"),)
DPDK_RUN_DIR = Path("/var/run/dpdk")
SOCKET_DIR = Path("/var/run/sluice")


class BenchError(Exception):
    """A run could not be completed; the message says why."""


def log(msg: str) -> None:
    """Progress goes to stderr; stdout carries only the results."""
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def binaries(build: Path) -> dict[str, Path]:
    """The programs under ``build``; raises BenchError naming what is missing."""
    progs = {
        "sluiced": build / "src" / "mgr" / "sluiced",
        "forward": build / "nfs" / "forward" / "sluice-forward",
        "speedtest": build / "nfs" / "speedtest" / "sluice-speedtest",
    }
    missing = [str(p) for p in progs.values() if not os.access(p, os.X_OK)]
    if missing:
        raise BenchError(f"not built: {', '.join(missing)} (run: ninja -C {build})")
    return progs


def parse_cpus(text: str) -> list[int]:
    """'0,1' or '0-3' -> [0, 1] / [0, 1, 2, 3]."""
    cpus: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        try:
            cpus.extend(range(int(lo), int(hi or lo) + 1))
        except ValueError:
            raise BenchError(f"--cpus {text}: {part!r} is not a CPU number or range; give "
                             f"e.g. 0,1 or 0-3") from None
    if len(cpus) < 2:
        raise BenchError(f"--cpus {text}: give at least two CPUs (sluiced needs 2 lcores)")
    allowed = os.sched_getaffinity(0)
    if not set(cpus) <= allowed:
        raise BenchError(f"--cpus {text}: this process may only use CPUs "
                         f"{cpu_list(sorted(allowed))}")
    return cpus


# -- command-line values -------------------------------------------------------------
# argparse ``type=`` functions: a bad value ends the benchmark at once with
# "argument --runs: ..." (exit status 2), before anything is started.

def positive_int(text: str) -> int:
    """An integer >= 1 (runs, rounds, seconds)."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number: give one >= 1"
                                         ) from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"{v} is too small: give a whole number >= 1")
    return v


def nonneg_int(text: str) -> int:
    """An integer >= 0 (warm-up seconds, NF counts)."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number: give one >= 0"
                                         ) from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"{v} is negative: give a whole number >= 0")
    return v


def seconds(text: str) -> float:
    """A duration in seconds, >= 1 (may have a fraction)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds: give one "
                                         f">= 1") from None
    if not v >= 1:  # also refuses nan
        raise argparse.ArgumentTypeError(f"{text} is too short: give at least 1 (seconds)")
    return v


def int_list(lo: int = 1, hi: int | None = None, empty: bool = False
             ) -> Callable[[str], list[int]]:
    """A comma-separated list of integers in [lo, hi], e.g. '1,100000'.
    ``empty``: '' is allowed and means none."""
    def parse(text: str) -> list[int]:
        vals: list[int] = []
        for part in text.split(","):
            part = part.strip().replace("_", "")
            if not part:
                continue
            try:
                vals.append(int(part))
            except ValueError:
                raise argparse.ArgumentTypeError(
                    f"{text!r}: {part!r} is not a whole number; give numbers separated by "
                    f"commas, e.g. 1,100000") from None
        bad = [v for v in vals if v < lo or (hi is not None and v > hi)]
        if bad:
            rng = f"{lo}..{hi}" if hi is not None else f">= {lo}"
            raise argparse.ArgumentTypeError(f"{text!r}: {bad[0]} is out of range: each "
                                             f"must be {rng}")
        if not vals and not empty:
            raise argparse.ArgumentTypeError("an empty list: give at least one number")
        return vals
    parse.__name__ = "list of numbers"  # argparse names the type in its message
    return parse


def name_list(choices: Iterable[str], empty: bool = False) -> Callable[[str], list[str]]:
    """A comma-separated list of names out of ``choices``, e.g. 'shared,poll'."""
    allowed = list(choices)

    def parse(text: str) -> list[str]:
        vals = [v.strip() for v in text.split(",") if v.strip()]
        bad = [v for v in vals if v not in allowed]
        if bad:
            raise argparse.ArgumentTypeError(f"{text!r}: unknown {bad[0]!r}; choose from "
                                             f"{', '.join(allowed)} (comma-separated)")
        if not vals and not empty:
            raise argparse.ArgumentTypeError(f"an empty list: choose from {', '.join(allowed)}")
        return vals
    parse.__name__ = "list of names"
    return parse


def bench_command() -> str:
    """The command that started this benchmark, as typed from the repository root:
    ``nice -n N`` if it runs niced, the interpreter and its arguments."""
    nice = os.getpriority(os.PRIO_PROCESS, 0)
    exe = sys.executable
    if exe.startswith(str(ROOT) + os.sep):
        exe = os.path.relpath(exe, ROOT)
    argv = list(sys.argv)
    if argv and Path(argv[0]).is_absolute() and argv[0].startswith(str(ROOT) + os.sep):
        argv[0] = os.path.relpath(argv[0], ROOT)
    return shlex.join([*(["nice", "-n", str(nice)] if nice else []), exe, *argv])


# -- one benchmark at a time ------------------------------------------------------------
# Two benchmarks at once share CPUs 0-1 and both measure the other's load: their
# numbers are wrong and nothing in them says so. A benchmark holds an abstract
# Unix socket (no file: it goes when the process ends, however it ends); a second
# one finds it taken and is refused, naming the first.

# SLUICE_BENCH_LOCK names another lock (tests use their own).
BENCH_LOCK_ADDR = b"\0" + os.environ.get("SLUICE_BENCH_LOCK",
                                         "sluice-bench-one-at-a-time").encode()
_lock: socket.socket | None = None


def _lock_holder() -> str:
    """'pid N: COMMAND' of the benchmark holding the lock, from its socket's credentials."""
    with contextlib.suppress(OSError), \
            socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
        c.settimeout(2)
        c.connect(BENCH_LOCK_ADDR)
        pid, _, _ = struct.unpack("3i", c.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                     struct.calcsize("3i")))
        with contextlib.suppress(OSError):
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
            return f"pid {pid}: {shlex.join(a.decode(errors='replace') for a in cmd)}"
        return f"pid {pid}"
    return "pid unknown"


def one_benchmark_at_a_time(what: str) -> None:
    """Takes the host's benchmark lock for the life of this process; raises
    BenchError naming the holder if another benchmark has it."""
    global _lock
    if _lock is not None:
        return
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.bind(BENCH_LOCK_ADDR)
    except OSError as e:
        s.close()
        if e.errno != errno.EADDRINUSE:
            raise BenchError(f"cannot take the benchmark lock: {e}") from None
        raise BenchError(f"another benchmark is running ({_lock_holder()}): two at once "
                         f"share the CPUs and both give wrong numbers. Wait until it ends, "
                         f"or stop it with Ctrl-C (kill -INT <pid>), then run {what} "
                         f"again") from None
    s.listen(4)
    _lock = s


def other_dataplanes() -> list[str]:
    """'pid N: comm' of every sluiced, dpdk-testpmd or ovs-vswitchd not started by this
    benchmark (they take CPU from the one measured). Read from /proc."""
    ours = {os.getpid()}
    names = ("sluiced", "dpdk-testpmd", "ovs-vswitchd", "ovs-vswitchd-dp")
    found: list[str] = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) in ours:
            continue
        with contextlib.suppress(OSError):
            comm = (d / "comm").read_text().strip()
            if comm in names:
                found.append(f"pid {d.name}: {comm}")
    return sorted(found, key=lambda x: int(x.split()[1].rstrip(":")))


def cpu_list(cpus: Iterable[int]) -> str:
    return ",".join(str(c) for c in cpus)


def unique_name(tag: str, seq: int) -> str:
    """A node name no other run (or other benchmark process) uses: <= 16 chars."""
    return f"{tag}{os.getpid() % 100000}-{seq}"


def stats_summary(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


# -- host description ---------------------------------------------------------------

def micro_binary(build: Path, name: str) -> Path:
    """build/bench/micro/NAME; raises BenchError when it is not built."""
    prog = build / "bench" / "micro" / name
    if not os.access(prog, os.X_OK):
        raise BenchError(f"not built: {prog} (run: ninja -C {build})")
    return prog


def pingpong_binary(build: Path) -> Path:
    """build/bench/micro/sluice-pingpong; raises BenchError when it is not built."""
    return micro_binary(build, "sluice-pingpong")


def cross_core_round_trip(prog: Path, cpus: list[int]) -> float:
    """A cache line's round trip between cpus[0] and cpus[1], TSC cycles (ns where the
    CPU has no TSC; median of 5 batches of sluice-pingpong). On this VM it tells whether
    the two vCPUs share an L3 (about 300 cycles) or not (about 1,300), which a two-core
    pipeline feels."""
    argv = [str(prog), str(cpus[0]), str(cpus[1])]
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except subprocess.TimeoutExpired:
        raise BenchError(f"{shlex.join(argv)} did not finish in 30 s (is one of the CPUs "
                         f"busy with another process?)") from None
    if r.returncode != 0:
        raise BenchError(f"{shlex.join(argv)} failed: {r.stderr.strip()}")
    try:
        got = json.loads(r.stdout)
        return float(got["round_trip_cycles"] if got["round_trip_cycles"] is not None
                     else got["round_trip_ns"])
    except (ValueError, KeyError, TypeError):
        raise BenchError(f"{shlex.join(argv)} printed {r.stdout.strip()!r}, not its JSON "
                         f"result (rebuild it: ninja -C build)") from None


def wait_for_near_cpus(prog: Path, cpus: list[int], far: float, wait_s: float
                       ) -> dict[str, Any]:
    """Probe the round trip until it is below ``far`` or ``wait_s`` seconds have gone;
    returns {'round_trip_cycles': last probe, 'waited_s': time after the first probe,
    0 when that one was near}."""
    rt = cross_core_round_trip(prog, cpus)
    t0 = time.monotonic()
    while rt >= far and time.monotonic() - t0 < wait_s:
        time.sleep(min(2.0, max(0.0, wait_s - (time.monotonic() - t0))))
        rt = cross_core_round_trip(prog, cpus)
    return {"round_trip_cycles": rt, "waited_s": round(time.monotonic() - t0, 1)}


def _run_text(argv: list[str]) -> str:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=10,
                              check=False).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def host_info() -> dict[str, Any]:
    """What the results depend on: machine, load, software versions, commit."""
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    meminfo: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            k, _, v = line.partition(":")
            if k.startswith("HugePages_") or k == "Hugepagesize":
                meminfo[k] = v.strip()
    dirty = _run_text(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"])
    others = other_dataplanes()
    if others:
        log(f"warning: other data planes are running and share the CPUs, the numbers will "
            f"be low: {', '.join(others)} (recorded as host.other_dataplane_processes)")
    return {
        "hostname": platform.node(),
        "nice": os.getpriority(os.PRIO_PROCESS, 0),
        "kernel": platform.release(),
        "cpu_model": model,
        "online_cpus": os.cpu_count(),
        "loadavg_at_start": os.getloadavg(),
        "hugepages": meminfo,
        "dpdk": _run_text(["pkg-config", "--modversion", "libdpdk"]),
        "git_commit": _run_text(["git", "-C", str(ROOT), "rev-parse", "HEAD"]),
        "git_tracked_files_modified": bool(dirty),
        "python": platform.python_version(),
        "other_dataplane_processes": others,
    }


# -- processes ---------------------------------------------------------------------

@dataclass
class Started:
    role: str
    argv: list[str]
    proc: subprocess.Popen[bytes]
    stdout: Path
    stderr: Path
    cpus: str
    t_start: float = field(default_factory=time.monotonic)

    def record(self) -> dict[str, Any]:
        return {"role": self.role, "cmd": shlex.join(self.argv), "pid": self.proc.pid,
                "cpus": self.cpus, "exit_code": self.proc.returncode}

    def alive(self) -> bool:
        return self.proc.poll() is None

    def tail(self, n: int = 8) -> str:
        """The first and last ``n`` lines of stderr (then stdout): where errors are."""
        lines: list[str] = []
        for p in (self.stderr, self.stdout):
            with contextlib.suppress(OSError):
                lines += p.read_text(errors="replace").splitlines()
        if len(lines) > 2 * n:
            lines = [*lines[:n], "...", *lines[-n:]]
        return "\n".join(lines)


class Processes:
    """The processes of one run; ``stop_all`` ends those still alive, by pid."""

    def __init__(self, logdir: Path):
        self.logdir = logdir
        self.logdir.mkdir(parents=True, exist_ok=True)
        self.started: list[Started] = []

    def start(self, role: str, argv: list[str], cpus: str, env: dict[str, str] | None = None
              ) -> Started:
        n = len(self.started)
        out = self.logdir / f"{n:02d}-{role}.out"
        err = self.logdir / f"{n:02d}-{role}.err"
        with open(out, "wb") as fo, open(err, "wb") as fe:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=fo, stderr=fe,
                                    cwd=ROOT, env=env, start_new_session=True)
        s = Started(role, argv, proc, out, err, cpus)
        self.started.append(s)
        return s

    def records(self) -> list[dict[str, Any]]:
        return [s.record() for s in self.started]

    def stop_all(self, grace: float = 3.0) -> list[str]:
        """SIGTERM, then SIGKILL after ``grace`` s, every process still running.

        Returns the roles of those that had to be killed (stragglers)."""
        stragglers = [s for s in self.started if s.alive()]
        for s in stragglers:
            with contextlib.suppress(ProcessLookupError):
                s.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        for s in stragglers:
            try:
                s.proc.wait(timeout=max(0.05, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    s.proc.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    s.proc.wait(timeout=5)
        return [f"{s.role} (pid {s.proc.pid})" for s in stragglers]


def dpdk_leftovers(prefix: str) -> list[Path]:
    """Hugepage files and the runtime directory of the DPDK file prefix ``prefix``."""
    found: list[Path] = []
    for d in HUGEPAGE_DIRS:
        if d.is_dir():
            found += sorted(d.glob(f"{prefix}map_*"))
    run = DPDK_RUN_DIR / prefix
    if run.exists():
        found.append(run)
    return found


def remove_paths(paths: Iterable[Path]) -> None:
    for p in paths:
        with contextlib.suppress(OSError):
            if p.is_dir() and not p.is_symlink():
                for child in p.iterdir():
                    with contextlib.suppress(OSError):
                        child.unlink()
                p.rmdir()
            else:
                p.unlink()


# -- one sluiced --------------------------------------------------------------------

class Node:
    """One sluiced and its NFs for one run.

    Use as a context manager: on exit sluiced gets SIGINT (it stops its NFs
    and removes its files), stragglers are killed by pid, and leftovers are
    recorded in ``self.leaks`` and removed.
    """

    def __init__(self, name: str, procs: Processes, progs: dict[str, Path], cpus: list[int],
                 mode: str, handoff: str | None, extra: list[str], ready_timeout: float = 15.0):
        self.name = name
        self.ready_timeout = ready_timeout  # big packet pools and captures take longer
        self.procs = procs
        self.progs = progs
        self.cpus = cpus
        self.mode = mode
        self.handoff = handoff
        self.extra = extra
        self.client = Client(node=name, timeout=5.0)
        self.sluiced: Started | None = None
        self.nfs: list[Started] = []
        self.leaks: list[str] = []
        self.stragglers: list[str] = []
        self.sluiced_exit: int | None = None
        self.layout: dict[str, str] = {}

    # sluiced's lcores: shared mode floats both on all CPUs; poll mode pins
    # control to the first CPU and the I/O thread to the second.
    def eal_args(self) -> list[str]:
        c = cpu_list(self.cpus)
        if self.mode == "shared":
            return [f"--lcores=0@({c}),1@({c})"]
        return ["-l", f"{self.cpus[0]},{self.cpus[1]}"]

    def taskset(self) -> list[str]:
        return ["taskset", "-c", cpu_list(self.cpus)]

    def __enter__(self) -> Node:
        argv = [*self.taskset(), str(self.progs["sluiced"]), *self.eal_args(), "--",
                "--name", self.name, "--mode", self.mode]
        if self.handoff is not None:  # None: sluiced's default
            argv += ["--handoff", self.handoff]
        argv += self.extra
        self.sluiced = self.procs.start("sluiced", argv, cpu_list(self.cpus))
        if self.mode == "shared":
            self.layout["sluiced"] = (f"control + 1 I/O thread, both floating on CPUs "
                                      f"{cpu_list(self.cpus)} (yield, then sleep when idle)")
        else:
            self.layout["sluiced"] = (f"control on CPU {self.cpus[0]}, I/O thread busy-polling "
                                      f"on CPU {self.cpus[1]}")
        sl = self.sluiced

        def check() -> None:
            if not sl.alive():
                raise BenchError(f"sluiced exited with {sl.proc.returncode}:\n{sl.tail()}")

        try:
            self.client.wait_ready(timeout=self.ready_timeout, check=check)
        except SluiceError as e:
            check()
            raise BenchError(f"sluiced did not become ready: {e}") from None
        return self

    def start_nf(self, role: str, prog: str, service: str, core: int | None,
                 nf_args: Iterable[str] = (), pin: bool | None = None) -> Started:
        """Starts an NF; pinned to ``core`` in poll mode (or if ``pin``)."""
        argv = [*self.taskset(), str(self.progs[prog]), "--", "--node", self.name,
                "--service", service, "--mode", self.mode]
        if pin is None:
            pin = self.mode == "poll"
        if pin and core is not None:
            argv += ["--core", str(core)]
            self.layout[role] = (f"busy-polling, pinned to CPU {core}" if self.mode == "poll"
                                 else f"shared (yield, then sleep), pinned to CPU {core}")
        else:
            self.layout[role] = f"shared: floating on CPUs {cpu_list(self.cpus)}"
        argv += list(nf_args)
        s = self.procs.start(role, argv, cpu_list(self.cpus))
        self.nfs.append(s)
        return s

    def wait_registered(self, service: str, nf: Started, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not nf.alive():
                raise BenchError(f"{nf.role} exited with {nf.proc.returncode} before "
                                 f"registering:\n{nf.tail()}")
            if any(e.get("service") == service for e in self.client.call("nf.list")):
                return
            time.sleep(0.05)
        raise BenchError(f"{nf.role} did not register service {service} within {timeout:g} s")

    def stats(self) -> dict[str, Any]:
        return self.client.call("stats")

    def record_into(self, run: dict[str, Any]) -> None:
        """Adds to a run's record what it leaves to look at: every command line, the
        core layout, leftovers, processes that had to be killed, sluiced's exit."""
        run.update(commands=self.procs.records(), core_layout=self.layout,
                   leaks=self.leaks, stragglers=self.stragglers,
                   sluiced_exit=self.sluiced_exit)

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self.client.close()
        sl = self.sluiced
        if sl is not None and sl.alive():
            with contextlib.suppress(ProcessLookupError):
                sl.proc.send_signal(signal.SIGINT)
            try:
                sl.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.stragglers.append("sluiced did not exit within 10 s of SIGINT")
        # sluiced stops its NFs on SIGINT; give them a moment, then anything
        # still running is a straggler.
        deadline = time.monotonic() + 3
        for nf in self.nfs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                nf.proc.wait(timeout=max(0.05, deadline - time.monotonic()))
        self.stragglers += self.procs.stop_all()
        if sl is not None:
            self.sluiced_exit = sl.proc.returncode
        prefix = f"sluice_{self.name}"
        left = dpdk_leftovers(prefix)
        sock = SOCKET_DIR / f"{self.name}.sock"
        if sock.exists():
            left.append(sock)
        if left:
            self.leaks = [str(p) for p in left]
            remove_paths(left)


def nf_rates(a: dict[str, Any], b: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per NF instance between two ``stats`` snapshots: packets, cycles/packet."""
    before = {n["instance"]: n for n in a.get("nfs", [])}
    out: dict[str, dict[str, Any]] = {}
    for n in b.get("nfs", []):
        p = before.get(n["instance"])
        if p is None or p.get("service") != n.get("service"):
            continue
        pkts = n["rx_pkts"] - p["rx_pkts"]
        cyc = n["cycles"] - p["cycles"]
        out[n["service"]] = {
            "instance": n["instance"],
            "rx_pkts": pkts,
            "cycles_per_pkt": cyc / pkts if pkts > 0 else None,
            # times the NF slept on its futex / found its next hop full
            "sleeps": n.get("sleeps", 0) - p.get("sleeps", 0),
            "stalls": n.get("stalls", 0) - p.get("stalls", 0),
            "drops": {k: v - p["drops"].get(k, 0) for k, v in n["drops"].items()
                      if v - p["drops"].get(k, 0)},
        }
    return out


def log_leftovers(name: str, run: dict[str, Any]) -> None:
    """Logs what a run's sluiced left behind or how it exited badly (sluiced bugs)."""
    for problem in ("leaks", "stragglers"):
        if run.get(problem):
            log(f"  {name}: {problem}: {run[problem]}")
    if run.get("sluiced_exit") not in (0, None):
        log(f"  {name}: sluiced exited with {run['sluiced_exit']}")


def save_plot(fig: Any, path: Path, dpi: int = 120) -> None:
    """Lays out a matplotlib figure, writes it to ``path`` (its folder made
    if missing) and frees it."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    plt.close(fig)


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    tmp.replace(path)


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM/SIGHUP end the benchmark like Ctrl-C: runs clean up after themselves."""
    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    old = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def free_hugepage_mib() -> float:
    pages = size_kb = 0
    with contextlib.suppress(OSError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("HugePages_Free:"):
                pages = int(line.split()[1])
            elif line.startswith("Hugepagesize:"):
                size_kb = int(line.split()[1])
    return pages * size_kb / 1024


def ensure_hugepages(mib: float) -> str | None:
    """Reserves more 2 MiB hugepages (scripts/hugepages.sh) if fewer than ``mib`` MiB
    are free. Returns the command run, or None; raises BenchError if still short."""
    free = free_hugepage_mib()
    if free >= mib:
        return None
    total = 0
    with contextlib.suppress(OSError, ValueError):
        total = int(Path("/proc/sys/vm/nr_hugepages").read_text())
    pages = total + int((mib - free) // 2) + 1
    argv = [str(ROOT / "scripts" / "hugepages.sh"), str(pages)]
    r = subprocess.run(argv, capture_output=True, text=True, check=False)
    if free_hugepage_mib() < mib:
        raise BenchError(f"{shlex.join(argv)}: still only {free_hugepage_mib():.0f} MiB of "
                         f"free hugepages, {mib:.0f} needed {r.stderr.strip()}")
    return shlex.join(argv)


def sluiced_options(progs: dict[str, Path]) -> str:
    """sluiced's option summary (``sluiced -- --help``): which options this build has."""
    r = subprocess.run([str(progs["sluiced"]), "--", "--help"], capture_output=True,
                       text=True, timeout=10, check=False)
    return r.stdout + r.stderr


def sample_counter(read: Callable[[], int], duration: int
                   ) -> tuple[list[float], float, list[tuple[float, int]]]:
    """Per-second rates of the counter ``read()`` over ``duration`` s, the whole
    interval's rate and the raw (time, value) snapshots. Reads are on a 1 s grid,
    each timed at the midpoint of its call."""
    snaps: list[tuple[float, int]] = []
    t_first = time.monotonic()
    for i in range(duration + 1):
        if i:
            time.sleep(max(0.0, t_first + i - time.monotonic()))
        t0 = time.monotonic()
        v = read()
        snaps.append(((t0 + time.monotonic()) / 2, v))
    samples = [(b - a) / (t1 - t0) for (t0, a), (t1, b) in zip(snaps, snaps[1:], strict=False)]
    whole = (snaps[-1][1] - snaps[0][1]) / (snaps[-1][0] - snaps[0][0])
    return samples, whole, snaps


def start_profile(pids: Iterable[int], seconds: float, out: Path) -> subprocess.Popen[bytes]:
    """``perf record`` of these processes (all their threads) for ``seconds``."""
    argv = ["perf", "record", "-q", "-o", str(out), "-p", ",".join(map(str, pids)),
            "--", "sleep", f"{seconds:g}"]
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def profile_top(data: Path, n: int = 25) -> list[dict[str, Any]]:
    """The ``n`` hottest (process, symbol) pairs of a ``perf record`` file, in %."""
    try:
        text = subprocess.run(["perf", "report", "-i", str(data), "--no-children", "--stdio",
                               "--sort", "comm,sym", "--percent-limit", "0.5"],
                              capture_output=True, text=True, timeout=180, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    top: list[dict[str, Any]] = []
    for line in text.splitlines():
        parts = line.split(None, 2)
        if len(parts) == 3 and parts[0].endswith("%") and not line.lstrip().startswith("#"):
            with contextlib.suppress(ValueError):
                top.append({"pct": float(parts[0][:-1]), "comm": parts[1],
                            "sym": parts[2].strip()})
        if len(top) >= n:
            break
    return top
