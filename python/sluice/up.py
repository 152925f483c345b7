"""`sluice up`: a deployment run in the foreground until --duration ends or
a signal stops it, with the orchestrator, the live table and, with --api,
the REST API (the layer of the CLI: it starts the API server)."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.text import Text

from .api import ApiServer, check_bind, create_app, parse_listen
from .core.deploy import load_deployment
from .runtime.client import ConnectError, ConnectionLost, RpcTimeout
from .runtime.launch import Launcher
from .runtime.livetable import _si, stats_tables, summary_text, totals, up_console
from .runtime.orchestrator import Orchestrator
from .runtime.procs import Interrupted, LaunchError, check_root

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


def _run_up(sigs: _Signals, path: str | Path, duration: float | None,
            log_dir: str | Path | None, console: Console | None, interval: float,
            api: str | None, api_token: str | None) -> int:
    con = console or up_console()
    if api:
        api_host, api_port = parse_listen(api)
        check_bind(api_host, api_token, option="--api", token_option="--api-token")
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
