"""The launcher: start sluiced, the NFs and the chain; stop it all (``sluice
up`` is up.py; the processes are procs.py's, the host's leftovers
hostclean.py's, the live table livetable.py's).

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
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core.deploy import (
    _PCI_RE,
    Deployment,
    NFSpec,
    default_build_dir,
    find_program,
    program_not_found,
)
from ..core.graph import batch_refusal, format_match, to_rpc
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
from .hostclean import (  # noqa: F401 (the names tests and the CLI import from here)
    OWNER_ENV,
    _cmdline,
    _remove_stale_socket,
    cleanup_node,
    hugetlbfs_mounts,
    owner,
    prefix_users,
)
from .livetable import (  # noqa: F401
    stats_tables,
    summary_text,
    totals,
    up_console,
    words_width,
)
from .procs import (  # noqa: F401
    Interrupted,
    LaunchError,
    Proc,
    _child_setup,
    _signal,
    _wait_all,
    check_root,
    container_argv,
    log_tail,
)
from .procs import status_text as _status_text  # noqa: F401 (tests compare it)
from .traces import ensure_trace


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
        for ``run: container``, wrapped by sluice.runtime.container.wrap."""
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
        hold = bool(d.all_graphs() or d.rule_params())
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
        d = self.dep
        for i, g in enumerate(d.all_graphs()):
            try:
                res = self.client.call("graph.apply", **to_rpc(g))
            except RpcError as e:
                raise LaunchError(f"{d.source}: {d.graph_where(i)}: graph '{g.name}': sluiced "
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


def _is_pci(device: str) -> bool:
    return bool(_PCI_RE.match(device.split(",", 1)[0]))
