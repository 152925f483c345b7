"""`sluice up`: start sluiced, the NFs and the chain; watch; stop it all.

The order matters. sluiced starts without a chain (it reads no port until a
complete chain is set), the NFs start and register, and only when every NF
is in ``nf.list`` does the launcher set the chain, so no packet meets a
missing service. Then come the other graphs and the rules that send flows
to them (and the flows that arrived meanwhile are classified again).
Stopping is the reverse: the ``shutdown`` call (sluiced stops its NFs and
frees its memory), then SIGTERM and SIGKILL for whatever is still running
after a timeout, then removal of DPDK files a crash may have left.

Every process writes its output to a file in the run folder
(``/tmp/sluice-NODE/`` unless told otherwise); nothing else is written,
except the demo capture under examples/traces/ when it is missing.

For tests::

    dep = Deployment.from_dict({...}, base_dir=tmp_path)
    with Launcher(dep) as run:
        run.client.call("stats")
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from rich import box
from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from .client import (
    Client,
    ConnectError,
    ConnectionLost,
    RpcError,
    RpcTimeout,
    SluiceError,
    command_text,
    rule_build_seconds,
)
from .deploy import (
    Deployment,
    NFSpec,
    default_build_dir,
    find_program,
    load_deployment,
    program_not_found,
)
from .traces import ensure_trace

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
                from .container import nf_pid
                self._nf_pid = nf_pid(self.node, self.label)
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


def _status_text(rc: int) -> str:
    if rc < 0:
        try:
            return f"was killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"was killed by signal {-rc}"
    return f"exited with status {rc}"


class Launcher:
    """Runs one deployment: ``start()``, then ``stop()`` (or use ``with``).

    ``log_dir``: the run folder (default /tmp/sluice-NODE). Timeouts in
    seconds: ``ready_timeout`` for sluiced's socket, ``register_timeout`` for
    the NFs to register, ``stop_timeout`` for a clean exit after shutdown,
    ``term_timeout`` between SIGTERM and SIGKILL for what is left,
    ``drain_timeout`` for the packets in flight to leave at the stop.
    ``say`` receives progress lines (default: none). ``should_stop`` is
    called at every poll while starting and running (waiting for sluiced's
    socket, for the NFs to register, ``check_alive``) and may raise to give
    up: `sluice up` raises Interrupted there after a signal, so that a stop
    never begins in the middle of starting a process.
    """

    def __init__(self, deployment: Deployment | dict[str, Any],
                 log_dir: str | Path | None = None, build_dir: str | Path | None = None,
                 ready_timeout: float = 15.0, register_timeout: float = 20.0,
                 stop_timeout: float = 5.0, term_timeout: float = 2.0,
                 drain_timeout: float = 2.0,
                 say: Callable[[str], None] | None = None,
                 should_stop: Callable[[], None] | None = None):
        if isinstance(deployment, dict):
            deployment = Deployment.from_dict(deployment, source="<deployment>",
                                              build_dir=Path(build_dir) if build_dir else None)
        self.dep = deployment
        self.node = deployment.node.name
        self.build_dir = Path(build_dir).resolve() if build_dir else default_build_dir()
        self.run_dir = Path(log_dir) if log_dir else Path(f"/tmp/sluice-{self.node}")
        self.ready_timeout = ready_timeout
        self.register_timeout = register_timeout
        self.stop_timeout = stop_timeout
        self.term_timeout = term_timeout
        self.drain_timeout = drain_timeout
        self.say = say or (lambda _msg: None)
        self.should_stop = should_stop or (lambda: None)
        self.client = Client(self.node, deployment.socket_path(), timeout=5.0)
        self.sluiced: Proc | None = None
        self.nfs: list[Proc] = []
        # (rule.add params, id sluiced gave it) of the rules this launcher added
        self.rules: list[tuple[dict[str, Any], int]] = []
        self.final_stats: dict[str, Any] | None = None
        self.started = False
        self._stopped = False

    # -- command lines -----------------------------------------------------------

    def sluiced_path(self) -> Path:
        return self.build_dir / "src" / "mgr" / "sluiced"

    def sluiced_argv(self) -> list[str]:
        d, n = self.dep, self.dep.node
        cores = d.cores()
        if n.mode == "shared":
            c = ",".join(map(str, cores))
            eal = [f"--lcores=0@({c}),1@({c})"]
        else:
            eal = ["-l", ",".join(map(str, cores[:2]))]
        if not any(_is_pci(p.device) for p in d.ports):
            eal.append("--no-pci")
        eal.append(f"--file-prefix=sluice_{self.node}")
        eal += n.eal_args
        opts = ["--name", self.node, "--mode", n.mode]
        for p in d.ports:
            opts += ["--port", f"{p.name}={d.device_for(p)}"]
        if n.socket:
            opts += ["--socket", str(d.socket_path())]
        for key in ("handoff", "ring_size", "mbufs", "max_nfs", "max_services",
                    "backpressure_us", "idle_sleep_us"):
            v = getattr(n, key)
            if v is not None:
                opts += ["--" + key.replace("_", "-"), str(v)]
        return [str(self.sluiced_path()), *eal, "--", *opts, *n.sluiced_args]

    def nf_argv(self, nf: NFSpec, program: Path | str, extra: list[str] | None = None,
                label: str | None = None) -> list[str]:
        """The command line of one instance of ``nf`` (``extra`` args appended);
        for ``run: container``, wrapped by sluice.container.wrap."""
        argv = [str(program), *nf.eal_args, "--", "--node", self.node,
                "--service", nf.service, "--mode", nf.mode or self.dep.node.mode]
        if nf.core is not None:
            argv += ["--core", str(nf.core)]
        argv += list(nf.args) + list(extra or [])
        if nf.run == "container":
            argv = container_argv(argv, name=label or nf.name, image=nf.image,
                                  node=self.node, workdir=self.dep.base_dir)
        return argv

    def nf_program(self, nf: NFSpec) -> Path | str:
        """Where ``nf``'s program is (for a container: its name, looked up
        in the image); raises LaunchError."""
        prog = find_program(nf.program, self.build_dir, self.dep.base_dir)
        if nf.run == "container":
            return prog or nf.program  # the built one, if here: wrap checks the image has it
        if prog is None:
            i = self.dep.nfs.index(nf) if nf in self.dep.nfs else 0
            raise LaunchError(f"{self.dep.source}: nfs[{i}].program: "
                              f"{program_not_found(nf.program, self.build_dir)}")
        return prog

    # -- start ------------------------------------------------------------------------

    def start(self) -> Launcher:
        """Starts sluiced, the NFs and the chain; raises LaunchError."""
        if self.started:
            return self
        self.started = True
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        d = self.dep
        for trace in d.trace_files():
            if ensure_trace(trace):
                self.say(f"generated the missing capture {trace}")
        sluiced = self.sluiced_path()
        if not (sluiced.is_file() and os.access(sluiced, os.X_OK)):
            raise LaunchError(f"sluiced not found at {sluiced}: build it with `make build` "
                              f"(or set SLUICE_BUILD_DIR to the build folder)")
        programs = [self.nf_program(nf) for nf in d.nfs]
        check_root()
        self.refuse_if_running()
        cleanup_node(self.node)
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise LaunchError(f"cannot create the run folder {self.run_dir}: {e.strerror}; "
                              f"pick another with --log-dir") from None

        (self.run_dir / "commands.txt").write_text("")
        self.sluiced = self._spawn("sluiced", self.sluiced_argv())
        self.say(f"sluiced started (pid {self.sluiced.pid}), log {self.sluiced.log}")
        try:
            self.client.wait_ready(self.ready_timeout, check=self._poll)
        except RpcTimeout as e:
            raise LaunchError(f"{e}; last lines of {self.sluiced.log}:\n"
                              f"{self.sluiced.tail()}") from None

        for nf, prog in zip(d.nfs, programs, strict=True):
            for r in range(nf.replicas):
                label = nf.name if nf.replicas == 1 else f"{nf.name}.{r + 1}"
                p = self._spawn(label, self.nf_argv(nf, prog, label=label), nf)
                self.nfs.append(p)
        self.say(f"started {len(self.nfs)} NF instance(s); waiting for them to register")
        self._wait_registered()
        hold = bool(d.graphs or d.rule_params())
        if hold:
            # Read nothing until the graphs and rules are in: the first
            # packet of every flow is then classified by them.
            self.client.call("rx.pause")
        try:
            self.client.call("chain.set", hops=list(d.chain))
        except RpcError as e:
            raise LaunchError(f"{d.source}: chain: sluiced refused it: {e.message}") from None
        self.say(f"chain set: {' -> '.join(d.chain)}")
        self._apply_graphs()
        if hold:
            self.client.call("rx.resume")

    def _apply_graphs(self) -> None:
        """Applies the deployment's graphs, then its rules (``graph.apply``,
        ``rule.add``). Flows that arrived since the chain was set were all
        classified to the chain; with rules added, ``flow.delete {all}``
        makes their next packet go by the rules."""
        from .graph import batch_refusal, format_match, to_rpc

        d = self.dep
        for i, g in enumerate(d.graphs):
            try:
                res = self.client.call("graph.apply", **to_rpc(g))
            except RpcError as e:
                raise LaunchError(f"{d.source}: graphs[{i}]: graph '{g.name}': sluiced "
                                  f"refused it: {e.message}") from None
            self.say(f"graph {g.name} applied (version {res.get('version')}): "
                     f"{len(g.nodes)} node(s), entry {g.entry_node()}")
            if isinstance(res.get("note"), str):  # a service no NF of the file runs
                self.say(f"graph {g.name}: note: {command_text(res['note'])}")
        rules = d.rule_params()
        if rules:
            # One call for all of them: sluiced builds its classifier once
            # (a call per rule rebuilds it every time: O(N^2) for N rules).
            try:
                with self.client.patience(rule_build_seconds(len(rules))):
                    res = self.client.call("rule.add", rules=rules)
            except RpcError as e:
                raise LaunchError(f"{d.source}: {batch_refusal(rules, e.message)}") from None
            for k, r in enumerate(rules):
                rid = int(res["first_id"]) + k
                self.rules.append((r, rid))
                self.say(f"rule {rid} added: priority {r['priority']}, "
                         f"{format_match(r)} -> graph {r['graph']}")
        if rules:
            try:
                res = self.client.call("flow.delete", all=True)
            except RpcError as e:
                self.say(f"flows seen before the rules were added keep the chain "
                         f"(flow.delete: {e.message})")
            else:
                if res.get("deleted"):
                    self.say(f"{res['deleted']} flow(s) seen before the rules were added "
                             f"will be classified again")

    def refuse_if_running(self) -> None:
        """Raises LaunchError when a sluiced of this node runs (or is
        starting), saying who runs it and how to stop it: the launcher that
        started it (a `sluice up`, see ``owner``), else sluiced itself.
        `sluice up` asks before it prints anything; ``start`` asks again."""
        other = "or give this deployment another node.name"
        pids = prefix_users(f"sluice_{self.node}")
        sock = self.dep.socket_path()
        if not pids:
            probe = Client(self.node, sock, timeout=1.0)
            try:
                pid = probe.call("status").get("pid")
            except (ConnectError, ConnectionLost, RpcTimeout, RpcError):
                return
            finally:
                probe.close()
            pids = [pid] if isinstance(pid, int) else []
            where = f"socket {sock}"
        else:
            where = f"DPDK file prefix sluice_{self.node}"
        for pid in pids:
            up = owner(pid)
            if up is not None:
                raise LaunchError(
                    f"node '{self.node}' is already running, started by pid {up} "
                    f"({_cmdline(up)}): stop that (Ctrl-C in its terminal, or `kill {up}`), "
                    f"{other}")
        if not pids:  # a sluiced that does not say its pid
            raise LaunchError(f"node '{self.node}' is already running ({where}): stop it "
                              f"first, {other}")
        raise LaunchError(f"node '{self.node}' is already running: sluiced pid {pids[0]} "
                          f"({where}), started by no `sluice up` that still runs: stop it "
                          f"with `kill {pids[0]}`, {other}")

    def spawn_nf(self, nf: NFSpec, label: str, extra: list[str] | None = None) -> Proc:
        """Starts one more instance of ``nf`` (``extra`` args appended), its
        output appended to LABEL.log; it is stopped with the rest. Does not
        wait for it to register. Raises LaunchError."""
        p = self._spawn(label, self.nf_argv(nf, self.nf_program(nf), extra, label), nf,
                        append=True)
        self.nfs.append(p)
        return p

    def kill(self, p: Proc, sig: int) -> None:
        """Sends ``sig`` to one of the processes this launcher started, if it runs."""
        _signal(p, sig)

    def _spawn(self, label: str, argv: list[str], nf: NFSpec | None = None,
               append: bool = False) -> Proc:
        log = self.run_dir / f"{label}.log"
        p = Proc(label, argv, log, nf=nf, node=self.node)
        p.logf = open(log, "ab" if append else "wb")  # noqa: SIM115 (open while it runs)
        p.logf.write(("$ " + " ".join(argv) + "\n").encode())
        p.logf.flush()
        # The node's CPUs, as far as this process may use them itself.
        cores = set(self.dep.cores()) & os.sched_getaffinity(0) or os.sched_getaffinity(0)
        try:
            p.popen = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=p.logf, stderr=subprocess.STDOUT,
                cwd=self.dep.base_dir, start_new_session=True,
                env={**os.environ, OWNER_ENV: str(os.getpid())},
                preexec_fn=_child_setup(cores))
        except OSError as e:
            p.logf.close()
            raise LaunchError(f"cannot start {label} ({argv[0]}): {e.strerror}") from None
        with open(self.run_dir / "commands.txt", "a") as f:
            f.write(f"{label} (pid {p.pid}): {' '.join(argv)}\n")
        return p

    def _poll(self) -> None:
        self.should_stop()
        self._check_sluiced()

    def _check_sluiced(self) -> None:
        assert self.sluiced is not None
        rc = self.sluiced.exited()
        if rc is not None:
            raise LaunchError(f"sluiced {_status_text(rc)}; last lines of "
                              f"{self.sluiced.log}:\n{self.sluiced.tail()}")

    def _wait_registered(self) -> None:
        deadline = time.monotonic() + self.register_timeout
        waiting = list(self.nfs)
        while True:
            self._poll()
            for p in self.nfs:
                rc = p.exited()
                if rc is not None:
                    raise LaunchError(f"NF '{p.label}' ({Path(p.argv[0]).name}) {_status_text(rc)} "
                                      f"while starting; last lines of {p.log}:\n{p.tail()}")
            try:
                listed = self.client.call("nf.list")
            except (ConnectionLost, RpcTimeout):
                listed = []
            pids = {e.get("pid") for e in listed if isinstance(e, dict)}
            waiting = [p for p in waiting if p.pid not in pids]
            if not waiting:
                return
            if time.monotonic() >= deadline:
                p = waiting[0]
                names = ", ".join(f"'{w.label}'" for w in waiting)
                raise LaunchError(f"NF {names} did not register with sluiced within "
                                  f"{self.register_timeout:g} s; last lines of {p.log}:\n"
                                  f"{p.tail()}")
            time.sleep(0.05)

    # -- running ------------------------------------------------------------------------

    def check_alive(self) -> None:
        """Raises LaunchError if sluiced has exited (and what ``should_stop``
        raises)."""
        self._poll()

    def wait_sluiced_exit(self, timeout: float) -> None:
        """Waits up to ``timeout`` for sluiced to exit (it may be dying)."""
        if self.sluiced is not None:
            _wait_all([self.sluiced], timeout)

    def processes(self) -> list[Proc]:
        return ([self.sluiced] if self.sluiced else []) + self.nfs

    # -- stop ---------------------------------------------------------------------------

    def stop(self) -> dict[str, Any] | None:
        """Stops everything this launcher started; returns the last stats
        read before the shutdown (None if sluiced did not answer)."""
        if self._stopped:
            return self.final_stats
        self._stopped = True
        sl = self.sluiced
        if sl is not None and sl.exited() is None:
            self.final_stats = self._drain()
            try:
                self.client.call("shutdown")
            except SluiceError:
                _signal(sl, signal.SIGTERM)
        self.client.close()
        procs = self.processes()
        if sl is not None:
            _wait_all([sl], self.stop_timeout)
        # sluiced stops its NFs before it exits: what is left after a
        # moment more was never registered, or does not listen.
        _wait_all(self.nfs, 1.0)
        for p in procs:
            if p.exited() is None:
                self.say(f"{p.label} (pid {p.pid}) still running; sending SIGTERM")
                _signal(p, signal.SIGTERM)
        _wait_all(procs, self.term_timeout)
        for p in procs:
            if p.exited() is None:
                self.say(f"{p.label} (pid {p.pid}) still running; sending SIGKILL")
                _signal(p, signal.SIGKILL)
        _wait_all(procs, 2.0)
        for p in procs:
            if p.logf:
                p.logf.close()
        if self.sluiced is not None:
            cleanup_node(self.node)
            _remove_stale_socket(self.dep.socket_path())
        return self.final_stats

    def _drain(self) -> dict[str, Any] | None:
        """Stops reading the ports (``rx.pause``) and waits, up to
        ``drain_timeout``, until every packet read from a port has left by
        a port or been dropped, so that the final totals add up. Also stops
        waiting once the counters stand still for 0.15 s (NFs that make
        packets of their own, like speedtest, never balance the ports).
        Returns the last stats read (None if sluiced did not answer)."""
        with contextlib.suppress(SluiceError):
            self.client.call("rx.pause")
        deadline = time.monotonic() + self.drain_timeout
        st: dict[str, Any] | None = None
        seen: list[tuple[int, int, int]] = []
        while True:
            try:
                st = self.client.call("stats")
            except SluiceError:
                return st
            t = totals(st)
            seen.append((t.rx, t.tx, t.dropped))
            if (t.in_flight == 0 or (len(seen) >= 4 and len(set(seen[-4:])) == 1)
                    or time.monotonic() >= deadline):
                return st
            time.sleep(0.05)

    def __enter__(self) -> Launcher:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def container_argv(argv: list[str], *, name: str, image: str, node: str,
                   workdir: Path | None = None) -> list[str]:
    """``argv`` run in a container (``run: container``), by sluice.container.wrap
    (imported only then; ``name``: the instance's label, e.g. fwd.2)."""
    try:
        from . import container
    except ImportError as e:
        raise LaunchError(f"NF '{name}' has run: container, but this installation cannot run "
                          f"containers (sluice.container: {e}): use run: process, or install "
                          f"a sluice with container support") from None
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


def _is_pci(device: str) -> bool:
    from .deploy import _PCI_RE
    return bool(_PCI_RE.match(device.split(",", 1)[0]))


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
        import shutil
        shutil.rmtree(rundir, ignore_errors=True)
        removed.append(rundir)
    return removed


# -- the live table -------------------------------------------------------------------

def _rate(now: dict[str, Any], prev: dict[str, Any] | None, key: str, dt: float) -> str:
    if prev is None or dt <= 0:
        return "-"
    return _si(max(0, now.get(key, 0) - prev.get(key, 0)) / dt)


def _si(v: float) -> str:
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if v >= div:
            return f"{v / div:.2f}{unit}"
    return f"{v:.0f}"


def _drops(d: dict[str, int] | None) -> str:
    if not d:
        return ""
    return " ".join(f"{k}={_si(v)}" for k, v in sorted(d.items()) if v)


def _drop_rate(now: dict[str, Any], prev: dict[str, Any] | None, dt: float) -> str:
    if prev is None or dt <= 0:
        return "-"
    a = sum((now.get("drops") or {}).values())
    b = sum((prev.get("drops") or {}).values())
    return _si(max(0, a - b) / dt)


def _by_service(stats: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per service that has instances: sluiced's own per-service
    counters (``services``: packets and drops, those of departed instances
    included, so rates do not jump when one leaves), with what only the
    instances say added up: how many (and how many are not running), their
    rings' counts and sizes, and the mean cycles per packet of those that
    report one. Named "SERVICE xN"."""
    inst: dict[str, dict[str, Any]] = {}
    for n in stats.get("nfs", []):
        a = inst.setdefault(str(n.get("service")), {"n": 0, "down": 0, "count": 0,
                                                    "size": 0, "cpp": []})
        a["n"] += 1
        a["down"] += n.get("state", "running") != "running"
        ring = n.get("rx_ring") or {}
        a["count"] += int(ring.get("count", 0))
        a["size"] += int(ring.get("size", 0))
        cpp = n.get("cycles_per_pkt")
        if isinstance(cpp, int | float) and cpp > 0:
            a["cpp"].append(float(cpp))
    rows = []
    for s in stats.get("services", []):
        a = inst.get(str(s.get("name")))
        if a is None:
            continue
        rows.append({**s, "service": s.get("name"),
                     "rx_ring": {"count": a["count"], "size": a["size"]},
                     "cycles_per_pkt": sum(a["cpp"]) / len(a["cpp"]) if a["cpp"] else None,
                     "label": f"{s.get('name')} x{a['n']}"
                              + (f" ({a['down']} not running)" if a["down"] else "")})
    return rows


# The live table's columns left out first when the terminal is too narrow,
# in this order (a column neither table has is skipped).
STATS_DROP_ORDER = ["cyc/pkt", "ring", "stalls/s", "stalls", "drops by reason",
                    "drop/s", "dropped", "out/s", "out", "in/s", "in"]


def words_width(text: str) -> int:
    """The width of the longest word of ``text``: the least a column that
    breaks only between words can be."""
    return max((len(w) for w in text.split()), default=0)


@dataclass
class FitTable:
    """A table for FitTables: ``columns`` are (header, justify, wrap):
    wrap "" never breaks a cell, "words" breaks it only between words,
    "lines" puts each word on a line of its own when the column has no
    room for the whole cell. A word is never cut."""
    columns: list[tuple[str, str, str]]
    rows: list[list[str]]

    def _cells(self, i: int) -> list[str]:
        return [self.columns[i][0], *(r[i] for r in self.rows)]

    def full(self, i: int) -> int:
        return max(len(x) for x in self._cells(i))

    def least(self, i: int) -> int:
        return (max(words_width(x) for x in self._cells(i)) if self.columns[i][2]
                else self.full(i))

    def keep(self, dropped: list[str]) -> list[int]:
        return [i for i, c in enumerate(self.columns) if c[0] not in dropped]

    @staticmethod
    def frame(n: int) -> int:
        """Columns of a SIMPLE_HEAD table without padding at its edges that
        are not cells: an edge each side, a separator and a space each
        side of it between two columns."""
        return 3 * n - 1 if n else 0

    def width(self, keep: list[int], least: bool = True) -> int:
        w = self.least if least else self.full
        return self.frame(len(keep)) + sum(w(i) for i in keep)

    def _widths(self, keep: list[int], room: int) -> tuple[dict[int, int], list[int]]:
        """The widths of the columns ``keep`` in ``room`` columns: what is
        left after their least widths goes to the columns that may wrap,
        the first first; and the "lines" columns that have not room for
        their cells on one line."""
        widths = {i: self.full(i) for i in keep}
        spare = room - self.width(keep)
        for i in keep:
            if self.columns[i][2]:
                widths[i] = self.least(i) + min(max(spare, 0), self.full(i) - self.least(i))
                spare -= widths[i] - self.least(i)
        lines = [i for i in keep if self.columns[i][2] == "lines" and widths[i] < self.full(i)]
        for i in lines:
            widths[i] = self.least(i)
        return widths, lines

    def row_lines(self, console: Console, keep: list[int], room: int) -> int:
        """How many lines the rows take in ``room`` columns."""
        widths, lines = self._widths(keep, room)

        def height(r: list[str], i: int) -> int:
            if i in lines:
                return max(1, len(r[i].split()))
            if self.columns[i][2]:
                return max(1, len(Text(r[i]).wrap(console, widths[i])))
            return 1
        return sum(max((height(r, i) for i in keep), default=1) for r in self.rows)

    def render(self, keep: list[int], room: int) -> tuple[Table, int]:
        """The table of the columns ``keep`` in ``room`` columns (_widths),
        and its width."""
        widths, lines = self._widths(keep, room)
        t = Table(box=box.SIMPLE_HEAD, expand=False, pad_edge=False)
        for i in keep:
            head, justify, wrap = self.columns[i]
            t.add_column(head, justify=justify, width=widths[i],  # type: ignore[arg-type]
                         no_wrap=not wrap, overflow="fold")
        for r in self.rows:
            t.add_row(*("\n".join(r[i].split()) if i in lines else r[i] for i in keep))
        return t, self.frame(len(keep)) + sum(widths.values())


class FitTables:
    """Tables whose numbers and ids are never cut (what cli.print_table does
    for one table, as a renderable, so that rich.live can redraw it at the
    console's width each time). In a console too narrow for them, the
    columns of ``drop_order`` are left out, in that order and of every table
    alike, until each fits; a line under them says which, and ``note`` where
    to see them. Only what is left then and still does not fit (a name
    longer than the console is wide) is folded: rich crops any longer line
    at the console's width. A console into a pipe or a file has a width
    too (80 unless set): up_console gives it room for every column.
    ``head`` and ``tail`` are printed before and after, as they are."""

    def __init__(self, tables: list[FitTable], drop_order: list[str], note: str = "",
                 head: list[Any] | None = None, tail: list[Any] | None = None) -> None:
        self.tables, self.drop_order, self.note = tables, drop_order, note
        self.head, self.tail = head or [], tail or []
        # printed instead when the last table's rows take more than
        # max_lines lines at the console's width (rows wrap)
        self.fallback: FitTables | None = None
        self.max_lines: int | None = None

    def layout(self, width: int) -> list[str]:
        """The columns left out at ``width``."""
        names = {c[0] for t in self.tables for c in t.columns}
        order = [n for n in self.drop_order if n in names]
        dropped: list[str] = []
        for name in [*order, None]:
            if all(t.width(t.keep(dropped)) <= width for t in self.tables):
                break
            if name is not None:
                dropped.append(name)
        return dropped

    def __rich_console__(self, console: Console, options: Any) -> Any:
        width = options.max_width
        dropped = self.layout(width)
        last = self.tables[-1]
        if (self.fallback is not None and self.max_lines is not None
                and last.row_lines(console, last.keep(dropped), width) > self.max_lines):
            yield from self.fallback.__rich_console__(console, options)
            return
        yield from self.head
        for t in self.tables:
            table, need = t.render(t.keep(dropped), width)
            yield from console.render(table, options.update_width(min(need, width)))
        if dropped:  # wrapped between words even on a soft-wrap console (up_console's)
            yield from console.render(
                Text(f"(not shown in {width} columns: {', '.join(dropped)}"
                     f"{'; ' + self.note if self.note else ''})"),
                options.update(no_wrap=False, overflow="fold"))
        yield from self.tail


def stats_tables(stats: dict[str, Any], prev: dict[str, Any] | None = None,
                 dt: float = 0.0, title: str = "", max_nf_rows: int | None = None) -> FitTables:
    """Ports and NFs as two tables: packets/s (with ``prev`` and ``dt``)
    or cumulative counts, drops by reason, NF ring occupancy, cycles/pkt.
    With more NF instances than ``max_nf_rows`` (the lines the terminal
    has room for), or rows that take more lines than that at the console's
    width (they wrap), one row per service instead of one per instance,
    said in a line under the table. No number or name is ever cut: names and drops by
    reason wrap only between words (reason=count is one), and in a
    terminal too narrow for every column, those of STATS_DROP_ORDER are
    left out, said in a line under the tables (see FitTables)."""
    rates = prev is not None
    pprev = {p.get("name"): p for p in (prev or {}).get("ports", [])}
    nfs = stats.get("nfs", [])
    grouped = max_nf_rows is not None and len(nfs) > max_nf_rows
    if grouped:
        nfs = _by_service(stats)
        nprev = {n["service"]: n for n in _by_service(prev or {})}
    else:
        nprev = {n.get("instance"): n for n in (prev or {}).get("nfs", [])}

    def columns(first: str, extra: list[str]) -> list[tuple[str, str, str]]:
        counts = ["in/s", "out/s", "drop/s"] if rates else ["in", "out", "dropped"]
        return [(first, "left", "words"), *((c, "right", "") for c in [*counts, *extra]),
                ("drops by reason", "left", "lines")]

    def counts(now: dict[str, Any], before: dict[str, Any] | None) -> list[str]:
        if rates:
            return [_rate(now, before, "rx_pkts", dt), _rate(now, before, "tx_pkts", dt),
                    _drop_rate(now, before, dt)]
        return [_si(now.get("rx_pkts", 0)), _si(now.get("tx_pkts", 0)),
                _si(sum((now.get("drops") or {}).values()))]

    prows = []
    for p in stats.get("ports", []):
        pp = pprev.get(p.get("name"))
        stalls = _rate(p, pp, "rx_stalls", dt) if rates else _si(p.get("rx_stalls", 0))
        prows.append([str(p.get("name")), *counts(p, pp), stalls, _drops(p.get("drops"))])
    pt = FitTable(columns("port", ["stalls/s" if rates else "stalls"]), prows)

    nrows = []
    for n in nfs:
        ring = n.get("rx_ring") or {}
        cpp = n.get("cycles_per_pkt")
        if grouped:
            name, before = n["label"], nprev.get(n["service"])
        else:
            name, before = f"{n.get('service')}#{n.get('instance')}", nprev.get(
                n.get("instance"))
            if n.get("state", "running") != "running":
                name += f" ({n.get('state')})"
        nrows.append([name, *counts(n, before),
                      f"{ring.get('count', 0)}/{ring.get('size', 0)}",
                      f"{cpp:.0f}" if isinstance(cpp, int | float) else "-",
                      _drops(n.get("drops"))])
    nt = FitTable(columns("NF", ["ring", "cyc/pkt"]), nrows)
    tail = ([Text(f"{len(stats.get('nfs', []))} NF instances of {len(nfs)} services: one "
                  f"row per service (sluice stats --node NAME lists every instance)")]
            if grouped else [])
    fit = FitTables([pt, nt], STATS_DROP_ORDER, "`sluice stats --json` has them all",
                    head=[Text(title)] if title else [], tail=tail)
    if not grouped and max_nf_rows is not None and nfs and stats.get("services"):
        fit.fallback = stats_tables(stats, prev, dt, title, max_nf_rows=0)
        fit.max_lines = max_nf_rows
    return fit


@dataclass
class Totals:
    rx: int = 0
    tx: int = 0
    drops: dict[str, int] = field(default_factory=dict)

    @property
    def dropped(self) -> int:
        return sum(self.drops.values())

    @property
    def in_flight(self) -> int:
        return self.rx - self.tx - self.dropped


def totals(stats: dict[str, Any]) -> Totals:
    """Packets in and out of the ports, and drops by reason: those counted at
    ports plus those of services (which keep the counts of departed NFs)."""
    t = Totals()
    for p in stats.get("ports", []):
        t.rx += int(p.get("rx_pkts", 0))
        t.tx += int(p.get("tx_pkts", 0))
        for k, v in (p.get("drops") or {}).items():
            t.drops[k] = t.drops.get(k, 0) + int(v)
    for s in stats.get("services", []):
        for k, v in (s.get("drops") or {}).items():
            t.drops[k] = t.drops.get(k, 0) + int(v)
    return t


def summary_text(stats: dict[str, Any]) -> str:
    t = totals(stats)
    lines = [f"packets in: {t.rx:,}   out: {t.tx:,}   dropped: {t.dropped:,}"
             + (f"   in flight: {t.in_flight:,}" if t.in_flight else "")]
    for k, v in sorted(t.drops.items()):
        if v:
            lines.append(f"  dropped {k}: {v:,}")
    return "\n".join(lines)


# -- `sluice up` --------------------------------------------------------------------------

STOP_SIGNALS = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "terminated",
                signal.SIGHUP: "terminal closed"}


def exit_status(sig: int) -> int:
    """`sluice up`'s exit status when ``sig`` stopped it: 128 + the signal
    (130 SIGINT, 143 SIGTERM, 129 SIGHUP with the terminal gone)."""
    return 128 + int(sig)


def _has_terminal() -> bool:
    """Whether this process has a controlling terminal (one it can open)."""
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError:
        return False
    os.close(fd)
    return True


class _Signals:
    """The signals of `sluice up`, while it runs.

    SIGINT and SIGTERM ask it to stop; so does SIGHUP when the terminal it
    had is gone (the terminal was closed: its output then goes to
    /dev/null). Any other SIGHUP asks the orchestrator to re-read the
    deployment file (`sluice apply`), once it runs if it does not yet. The
    handler only takes note: ``check`` raises Interrupted at the launcher's
    next poll, so a stop never begins halfway through starting a process.
    A signal while stopping is acknowledged on stderr and changes nothing:
    the stop goes on (it takes at most a few seconds)."""

    def __init__(self) -> None:
        self.had_terminal = _has_terminal()
        self.sig: int | None = None
        self.raised = False
        self.stopping = False
        self.hung_up = False
        self.reload_pending = False
        self.orch: Any = None
        self._old: dict[int, Any] = {}

    def install(self) -> None:
        for sig in STOP_SIGNALS:
            self._old[sig] = signal.signal(sig, self._handler)

    def restore(self, ignore: bool = False) -> None:
        """Puts the handlers back; ``ignore``: ignores the signals instead,
        for a process that exits next, its stop over (SIG_IGN, which stays
        while Python exits, where a Python handler is reset to the default;
        a process started later would inherit it)."""
        for sig, old in self._old.items():
            signal.signal(sig, signal.SIG_IGN if ignore else old)
        self._old.clear()

    def _handler(self, sig: int, _frame: object) -> None:
        if sig == signal.SIGHUP:
            if self.had_terminal and not _has_terminal():
                self._terminal_closed()
            elif self.sig is None and not self.stopping:
                if self.orch is not None:
                    self.orch.reload.set()
                else:
                    self.reload_pending = True
                return
        if self.sig is not None or self.stopping:
            again = " again" if sig == self.sig else ""
            _err(f"sluice up: already stopping ({signal.Signals(sig).name}{again}); "
                 f"waiting for the processes to exit")
            return
        self.sig = sig

    def _terminal_closed(self) -> None:
        """Nobody reads the output any more and writing it fails (EIO):
        send it to /dev/null."""
        if self.hung_up:
            return
        self.hung_up = True
        with contextlib.suppress(OSError):
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            os.close(null)

    def check(self) -> None:
        if self.sig is not None and not self.raised and not self.stopping:
            self.raised = True
            raise Interrupted(self.sig)

    def reason(self) -> str:
        assert self.sig is not None
        name = signal.Signals(self.sig).name
        return (f"sluice up: stopped by {name} ({STOP_SIGNALS[signal.Signals(self.sig)]}); "
                f"exit status {exit_status(self.sig)}")


def _err(line: str) -> None:
    """One line on stderr, from a signal handler too (os.write: no buffer
    to re-enter); nothing if stderr is gone."""
    with contextlib.suppress(OSError):
        os.write(2, (line + "\n").encode())


def run_up(path: str | Path, duration: float | None = None, log_dir: str | Path | None = None,
           console: Console | None = None, interval: float = 1.0,
           api: str | None = None, api_token: str | None = None,
           restore_signals: bool = True) -> int:
    """What `sluice up` does; returns the exit status (raises LaunchError).

    0 when --duration ends; 128 + the signal when SIGINT (130), SIGTERM
    (143) or the terminal closing (SIGHUP, 129) stops it, with one line on
    stderr saying so; LaunchError (status 1 from the CLI) when starting
    fails or sluiced exits under it. Everything is stopped and cleaned up
    in every case (docs/deployment.md, "Stopping and exit status").

    ``api`` (HOST:PORT) also serves the REST API (docs/api.md) while the
    deployment runs. SIGINT, SIGTERM and SIGHUP are handled until it
    returns; then their handlers are put back, or with ``restore_signals``
    false (the CLI, which exits next) they are ignored."""
    sigs = _Signals()
    sigs.install()
    try:
        return _run_up(sigs, path, duration, log_dir, console, interval, api, api_token)
    except Interrupted as e:  # while the file was read: nothing was started
        _err(sigs.reason())
        return exit_status(e.sig)
    finally:
        sigs.restore(ignore=not restore_signals)


def up_console() -> Console:
    """The console of ``sluice up``. Into a file or a pipe (a log kept by a
    service manager, ``| tee``) its lines are not wrapped at 80 columns, so
    that one event stays one line for grep, and its tables have room for
    their cells ($COLUMNS, if set, still rules); in a terminal they fit it."""
    if sys.stdout.isatty():
        return Console()
    return Console(soft_wrap=True, width=None if os.environ.get("COLUMNS") else 240)


def _run_up(sigs: _Signals, path: str | Path, duration: float | None,
            log_dir: str | Path | None, console: Console | None, interval: float,
            api: str | None, api_token: str | None) -> int:
    con = console or up_console()
    if api:
        from .api import check_bind, parse_listen

        api_host, api_port = parse_listen(api)
        check_bind(api_host, api_token, option="--api", token_option="--api-token")
    from .orchestrator import Orchestrator

    dep = load_deployment(path)
    sigs.check()  # a signal while the file was read: nothing started yet
    run = Launcher(dep, log_dir=log_dir, say=lambda m: con.print(Text(m, style="dim")),
                   should_stop=sigs.check)
    check_root()
    run.refuse_if_running()  # before the banner: a running node's logs are not ours
    con.print(Text(f"sluice up: {dep.describe()}"))
    con.print(Text(f"logs: {run.run_dir}/ (sluiced.log, one .log per NF, "
                   f"orchestrator.log)"))
    failed: LaunchError | None = None
    server: Any = None
    orch: Orchestrator | None = None
    try:
        run.start()
        orch = Orchestrator(run, say=lambda m: con.print(Text(m, style="bold")))
        orch.start()
        sigs.orch = orch
        if sigs.reload_pending:
            orch.reload.set()
        con.print(Text(f"orchestrator: `sluice apply FILE` (or SIGHUP to pid "
                       f"{os.getpid()}, which re-reads {dep.source}) changes the "
                       f"running deployment"))
        if api:
            from .api import ApiServer, create_app

            server = ApiServer(create_app(dep.node.name, str(dep.socket_path()), api_token),
                               api_host, api_port)
            server.start()
            con.print(Text(server.describe()))
        _watch(run, con, duration, interval)
        sigs.stopping = True
        if not con.is_terminal:
            con.print()  # the table's last line ends without a newline there
        con.print(Text(f"stopping: --duration {duration:g} s is over"))
    except Interrupted as e:
        sigs.stopping = True
        con.print()
        con.print(Text(f"stopping ({signal.Signals(e.sig).name})"))
    except LaunchError as e:
        sigs.stopping = True
        failed = e
    except OSError:
        # the terminal closed under a write: its SIGHUP (handled by now)
        # is the reason to stop
        if not sigs.hung_up:
            raise
    finally:
        sigs.stopping = True
        sigs.orch = None
        try:
            if orch is not None:
                orch.stop()
        finally:
            try:
                if server is not None:
                    server.stop()
            finally:
                stats = run.stop()
    if failed is not None:
        raise failed
    if stats:
        con.print()
        con.print(summary_text(stats), markup=False, highlight=False)
    con.print(Text(f"stopped; logs are in {run.run_dir}/"))
    if sigs.sig is not None:
        _err(sigs.reason())
        return exit_status(sigs.sig)
    return 0


def _watch(run: Launcher, con: Console, duration: float | None, interval: float) -> None:
    t0 = time.monotonic()
    end = t0 + duration if duration else None
    prev: dict[str, Any] | None = None
    tprev = t0
    with Live(Text("waiting for statistics..."), console=con, refresh_per_second=4,
              transient=False) as live:
        while True:
            run.check_alive()  # NFs that exit are the orchestrator's to report
            now = time.monotonic()
            try:
                stats = run.client.call("stats")
            except (ConnectionLost, RpcTimeout, ConnectError):
                # sluiced gone (killed): say so, not "cannot connect"; it
                # may take a moment to be seen to exit
                run.wait_sluiced_exit(1.0)
                run.check_alive()
                raise
            elapsed = now - t0
            left = f", {max(0.0, end - now):.0f} s left" if end else ", Ctrl-C to stop"
            title = (f"node {run.node}: {elapsed:.0f} s{left}   "
                     f"(in {_si(totals(stats).rx)}, out {_si(totals(stats).tx)}, "
                     f"dropped {_si(totals(stats).dropped)})")
            # Rows the terminal has room for, after the title, the ports
            # table and both tables' heads and rules (about 10 lines).
            room = (max(4, con.size.height - len(stats.get("ports", [])) - 10)
                    if con.is_terminal else None)
            live.update(stats_tables(stats, prev, now - tprev, title, max_nf_rows=room))
            prev, tprev = stats, now
            if end is not None and now >= end:
                return
            wake = now + interval
            if end is not None:
                wake = min(wake, end)
            while time.monotonic() < wake:
                time.sleep(min(0.1, max(0.0, wake - time.monotonic())))
                run.check_alive()
