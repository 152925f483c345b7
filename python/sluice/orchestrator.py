"""The orchestrator of `sluice up`: keeps a running deployment as its file says.

Once the launcher has started sluiced, the NFs, the chain and the graphs,
the orchestrator takes over the NF instances and runs a reconcile loop (a
thread, every ``tick_s``):

- **missing instances are started**, extra ones stopped (``nf.stop``: the
  NF deregisters and drains, nothing is lost; SIGKILL if it has not exited
  after ``stop_timeout``);
- **an instance that exits without being asked is restarted** after a
  backoff that doubles per failure in a row (``restart:`` in the file),
  and given up on (state ``failed``) after ``give_up_after`` failures within
  ``window_ms`` ("crashed" when killed by a signal or its status is not 0,
  "exited" for status 0);
- **an instance stopped cleanly at someone else's request** (it deregistered
  from sluiced, whose ``nf.down`` event says ``reason: stopped``, then
  exited with status 0: ``sluice nf stop``, ``POST /nfs/{i}/stop``,
  ``nf.scale``, SIGTERM) is not a failure and is not restarted: its group
  wants one instance fewer until the next apply;
- **policies** act: ``on: occupancy`` scales an NF on its service's rx ring
  occupancy (sluiced's ``stats``), ``on: message`` starts, stops or scales
  an NF when an NF sends ``Message(key, value)`` (sluiced's ``nf.message``
  event, on an event subscription of its own);
- **``sluice apply FILE``** (or SIGHUP to `sluice up`, which re-reads its
  own file) diffs the running deployment against the new file and changes
  NFs, graphs, chain and rules live; ports and node options cannot change
  while sluiced runs and such a file is refused whole. A step sluiced
  refuses undoes the apply (its control steps newest first, then its NFs);
  what cannot be undone is reported, and the next apply pushes graphs,
  chain and rules again instead of diffing.

Instances are the orchestrator's own child processes (``Launcher.spawn_nf``),
not sluiced's ``nf.scale`` copies: it must see them exit to restart them,
start NFs that have no instance to copy (``replicas: 0``), and add a
policy's arguments. Instances are grouped: a *group* is an NF entry plus
the extra arguments a message policy gave it (the file's own instances are
the group with none), and each group has a wanted number of instances.

Every action is one line, with its reason: printed by `sluice up`, appended
to ``RUN_DIR/orchestrator.log``, and kept (the last 200) for ``status`` on
the orchestrator's socket (``ORCH_SOCKET``, beside sluiced's: `sluice apply`
talks to it).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from . import reconcile
from .client import (
    METHODS,
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
    DeploymentError,
    MessagePolicy,
    NFSpec,
    OccupancyPolicy,
    load_deployment,
)
from .graph import batch_culprit, format_match, to_rpc
from .procs import status_text as _status_text
from .reconcile import (  # noqa: F401 (tests import Backoff and substitute from here)
    Backoff,
    Group,
    GroupKey,
    Slot,
    _fixed_changes,
    _run_spec,
    _spec_diff,
    _Trend,
    orchestrator_socket,
    policy_changes,
    policy_text,
    restart_change,
    substitute,
)

SAMPLE_S = 0.2  # how often occupancy policies read sluiced's stats
# How long an instance that exited with status 0 waits for sluiced's nf.down event
# (which says whether it deregistered first) before its exit counts as unexpected.
CLEAN_STOP_WAIT_S = 1.0
# sluiced publishes nf.hung just before it kills a hung NF (SIGKILL): how long
# a SIGKILL exit waits for that event, to be told as a hang and not a crash
HUNG_EVENT_WAIT_S = 0.5
ACTIONS_KEPT = 200


class OrchestratorError(SluiceError):
    """An apply that was refused or failed, or no orchestrator to talk to."""


# -- what the orchestrator drives (the Launcher, or fakes in tests) ---------------------

class ProcLike(Protocol):
    label: str
    log: Path

    @property
    def pid(self) -> int: ...

    def exited(self) -> int | None: ...


class Runner(Protocol):
    dep: Deployment
    node: str
    run_dir: Path
    register_timeout: float
    rules: list[tuple[dict[str, Any], int]]

    def spawn_nf(self, nf: NFSpec, label: str, extra: list[str] | None = None) -> Any: ...

    def kill(self, proc: Any, sig: int) -> None: ...


@dataclass
class _Undo:
    """Control steps an apply made (one, or the rules of one batch), and the
    call that undoes them all."""

    texts: list[str]  # ["graph g added (version 2)"], oldest first
    # raises SluiceError; returns what it did for each text ("" if not worth saying)
    undo: Callable[[], list[str]]
    leaves: str | None = None  # a graph left in sluiced if the undo fails


@dataclass
class _ControlLog:
    """The control steps of one apply: those made, and the one being made."""

    made: list[_Undo] = field(default_factory=list)
    step: str = ""  # the change being made, in the words of the file (the chain (a -> b))
    leaves: str | None = None  # the graph that call may add


def _without_method(e: SluiceError) -> str:
    """The client's error without the method it begins with (``chain.set:
    connection to ... lost``): apply lines say the change, not the call."""
    method, sep, rest = str(e).partition(": ")
    return rest if sep and method in METHODS else str(e)


def _rule_ids(ids: list[int]) -> str:
    """Rule ids as a step names them: ``rule 7``, ``rules 7, 8 and 9``, or for
    many ``500 rules (7, 8, ..., 506)``."""
    if len(ids) == 1:
        return f"rule {ids[0]}"
    if len(ids) <= 8:
        return f"rules {', '.join(map(str, ids[:-1]))} and {ids[-1]}"
    return f"{len(ids)} rules ({ids[0]}, {ids[1]}, ..., {ids[-1]})"


# -- the orchestrator --------------------------------------------------------------------

class Orchestrator:
    """Reconciles a running deployment (see the module doc).

    ``run``: the Launcher that started it. ``client``: a Client of its own
    (default: a new one on the deployment's socket). ``clock``: monotonic
    seconds (tests pass a fake). ``say``: receives each action line.
    ``serve``: listen on the orchestrator socket for `sluice apply`.
    """

    def __init__(self, run: Runner, client: Any = None,
                 clock: Callable[[], float] = time.monotonic,
                 say: Callable[[str], None] | None = None, tick_s: float = 0.1,
                 stop_timeout: float = 5.0, serve: bool = True, subscribe: bool = True):
        self.run = run
        self.dep = run.dep
        self.client = client or Client(run.node, run.dep.socket_path(), timeout=5.0)
        self.clock = clock
        self.say_fn = say or (lambda _m: None)
        self.tick_s = tick_s
        self.stop_timeout = stop_timeout
        self.groups: dict[tuple[str, tuple[str, ...]], Group] = {}
        self.actions: deque[dict[str, Any]] = deque(maxlen=ACTIONS_KEPT)
        self.fired: set[tuple[str, str]] = set()  # (policy, value) of once policies
        self.trends: dict[str, _Trend] = {}
        self.next_sample = 0.0
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.requests: queue.Queue[tuple[str, dict[str, Any], queue.Queue[Any]]] = \
            queue.Queue()
        self.reload = threading.Event()  # SIGHUP: re-read the deployment file
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._serve = serve
        self._subscribe = subscribe
        self._server: socket.socket | None = None
        self._events_client: Client | None = None
        self.subscribed = False  # the event subscription is live (status: subscribed)
        self.clean_stops: dict[int, float] = {}  # pid -> when sluiced said it stopped
        # pid -> (when, hang_ms): NFs sluiced killed as hung (nf.hung)
        self.hung_kills: dict[int, tuple[float, int]] = {}
        self._log: Any = None
        # True after an apply whose undo failed in part (or one of whose steps got
        # no answer): sluiced's graphs, chain and rules may differ from self.dep,
        # so the next apply pushes them all instead of diffing, and removes
        # stale_graphs (graphs such an apply may have left in sluiced)
        self.resync = False
        self.stale_graphs: set[str] = set()
        self.sock_path = orchestrator_socket(run.dep.socket_path())
        self._adopt()

    # -- bookkeeping ---------------------------------------------------------------

    def _adopt(self) -> None:
        """Takes over the instances the launcher started (one group per NF)."""
        now = self.clock()
        for nf in self.dep.nfs:
            self.groups[(nf.name, ())] = Group(nf, (), nf.replicas)
        for p in getattr(self.run, "nfs", []):
            nf = getattr(p, "nf", None)
            if nf is None or (nf.name, ()) not in self.groups:
                continue
            self.groups[(nf.name, ())].slots.append(
                Slot(p.label, p, "running", now, now, backoff=Backoff(self.dep.restart)))

    def say(self, action: str, text: str, **data: Any) -> None:
        """One action line: printed, logged to orchestrator.log, kept for status."""
        line = f"{action}: {text}"
        self.actions.append({"ts": time.time(), "action": action, "text": text, **data})
        if self._log is None:
            with contextlib.suppress(OSError):
                self._log = open(self.run.run_dir / "orchestrator.log", "a")  # noqa: SIM115
        if self._log is not None:
            stamp = time.strftime("%H:%M:%S")
            with contextlib.suppress(OSError):
                self._log.write(f"{stamp} {line}\n")
                self._log.flush()
        self.say_fn(line)

    def _labels(self, nf: str) -> set[str]:
        return {s.label for g in self.groups.values() if g.nf.name == nf for s in g.slots}

    def _new_label(self, g: Group) -> str:
        return reconcile.new_label(g.nf, g.extra, self._labels(g.nf.name))

    def _spawn(self, g: Group, slot: Slot, why: str) -> bool:
        now = self.clock()
        try:
            slot.proc = self.run.spawn_nf(g.nf, slot.label, list(g.extra))
        except SluiceError as e:
            slot.state = "failed"
            slot.last_exit = str(e)
            self.say("failed", f"cannot start NF {g.describe()} as {slot.label}: {e}",
                     nf=g.nf.name, label=slot.label)
            return False
        slot.state, slot.started_at, slot.up_at = "starting", now, None
        self.say("start", f"{slot.label} (pid {slot.proc.pid}): {why}", nf=g.nf.name,
                 label=slot.label, pid=slot.proc.pid)
        return True

    # -- the loop ----------------------------------------------------------------------

    def start(self) -> Orchestrator:
        """Runs the loop (and the socket server, and the event subscription) in threads."""
        if self._serve:
            self._listen()
        if self._subscribe:
            self._thread(self._event_loop, "events")
        self._thread(self._loop, "reconcile")
        return self

    def _thread(self, fn: Callable[[], None], name: str) -> None:
        t = threading.Thread(target=fn, name=f"orchestrator-{name}", daemon=True)
        t.start()
        self._threads.append(t)

    def stop(self) -> None:
        """Stops the threads (not the NFs: the launcher stops those)."""
        self._stop.set()
        ec = self._events_client
        if ec is not None and ec._sock is not None:
            with contextlib.suppress(OSError):
                ec._sock.shutdown(socket.SHUT_RDWR)
        if self._server is not None:
            with contextlib.suppress(OSError):
                self._server.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                self._server.close()
        for t in self._threads:
            t.join(10.0)
        self._threads.clear()
        if self._server is not None:
            with contextlib.suppress(OSError):
                self.sock_path.unlink()
            self._server = None
        self.client.close()
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> Orchestrator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.tick()
            except (ConnectionLost, RpcTimeout, ConnectError) as e:
                # sluiced is gone or busy: the launcher notices the former
                self.say("warning", f"sluiced did not answer: {e}")
                self._stop.wait(1.0)
            self._stop.wait(self.tick_s)

    def tick(self) -> None:
        """One round: requests, events, exits, restarts, counts, policies."""
        self._serve_requests()
        if self.reload.is_set():
            self.reload.clear()
            self.say("reload", f"SIGHUP: reading {self.dep.source} again")
            try:
                self.apply_file(self.dep.source)
            except (SluiceError, DeploymentError) as e:
                for line in str(e).splitlines():
                    self.say("refused", line)
        self._handle_events()
        self._reap()
        self._restart_due()
        self._check_registered()
        now = self.clock()
        if now >= self.next_sample and any(isinstance(p, OccupancyPolicy)
                                           for p in self.dep.policies):
            self.next_sample = now + SAMPLE_S
            self._occupancy(self.client.call("stats"))
        self._reconcile()

    def _reap(self) -> None:
        now = self.clock()
        for g in list(self.groups.values()):
            for slot in list(g.slots):
                if slot.proc is None or slot.state in ("backoff", "failed"):
                    continue
                rc = slot.proc.exited()
                if rc is None:
                    if slot.state == "stopping" and now >= slot.stop_deadline:
                        self.say("kill", f"{slot.label} (pid {slot.proc.pid}) did not stop "
                                 f"within {self.stop_timeout:g} s; sending SIGKILL",
                                 label=slot.label)
                        self.run.kill(slot.proc, signal.SIGKILL)
                        slot.stop_deadline = now + 3600
                    continue
                if slot.state == "stopping":
                    self.clean_stops.pop(slot.proc.pid, None)
                    self._forget(slot.proc)
                    g.slots.remove(slot)
                    continue
                if rc == 0:
                    if self.clean_stops.pop(slot.proc.pid, None) is not None:
                        self._stopped_outside(g, slot, now)
                        continue
                    # sluiced's nf.down may come a moment after the exit is seen
                    if slot.exit_seen_at is None:
                        slot.exit_seen_at = now
                    if self.subscribed and now - slot.exit_seen_at < CLEAN_STOP_WAIT_S:
                        continue
                hung = self.hung_kills.pop(slot.proc.pid, None)
                if rc == -signal.SIGKILL and hung is None and self.subscribed:
                    # sluiced's nf.hung, if it killed it, may be a moment behind
                    if slot.exit_seen_at is None:
                        slot.exit_seen_at = now
                    if now - slot.exit_seen_at < HUNG_EVENT_WAIT_S:
                        continue
                slot.exit_seen_at = None
                self._forget(slot.proc)
                what = _status_text(rc)
                if hung is not None and rc == -signal.SIGKILL:
                    what = (f"was hung (no heartbeat for {hung[1]} ms) and killed by sluiced "
                            f"(SIGKILL; --nf-hang-ms)")
                self._failed(g, slot, what, now, crashed=rc != 0)
            if not g.slots and g.want == 0 and g.origin != "file":
                del self.groups[g.key]

    def _forget(self, proc: Any) -> None:
        nfs = getattr(self.run, "nfs", None)
        if nfs is not None and proc in nfs:
            nfs.remove(proc)
            if getattr(proc, "logf", None) is not None:
                proc.logf.close()

    def _stopped_outside(self, g: Group, slot: Slot, now: float) -> None:
        """An instance that deregistered and exited 0 at someone else's request."""
        self._forget(slot.proc)
        g.slots.remove(slot)
        g.want = max(0, g.want - 1)
        g.stopped_outside += 1
        self.say("stopped", f"{slot.label} (pid {slot.proc.pid}) stopped cleanly after "
                 f"{now - slot.started_at:.1f} s, asked by someone else than the "
                 f"orchestrator (sluice nf stop, the REST API, nf.scale or SIGTERM): not "
                 f"restarting it; {g.describe()} now wants {g.want} instance(s) until "
                 f"`sluice apply` (or SIGHUP) starts it again", nf=g.nf.name,
                 label=slot.label, replicas=g.want)

    def _failed(self, g: Group, slot: Slot, what: str, now: float,
                crashed: bool = True) -> None:
        if slot.backoff is None:
            slot.backoff = Backoff(self.dep.restart)
        slot.last_exit = what
        ran = now - slot.started_at
        delay = slot.backoff.failed(now, now - slot.up_at if slot.up_at is not None else 0.0)
        log = f"; see {slot.proc.log}" if slot.proc is not None else ""
        slot.proc = None
        if delay is None:
            slot.state = "failed"
            r = self.dep.restart
            self.say("gave-up", f"{slot.label} {what}: {len(slot.backoff.times)} failures "
                     f"within {r.window_ms / 1000:g} s (restart.give_up_after "
                     f"{r.give_up_after}): not restarting it; `sluice apply` tries "
                     f"again{log}", nf=g.nf.name, label=slot.label)
            return
        slot.state, slot.restart_at = "backoff", now + delay
        unasked = "" if crashed else " without being asked to stop"
        self.say("crashed" if crashed else "exited",
                 f"{slot.label} {what} after {ran:.1f} s{unasked}; restarting in "
                 f"{delay:g} s (failure {slot.backoff.streak} in a row){log}",
                 nf=g.nf.name, label=slot.label, delay_s=delay)

    def _plan_state(self) -> tuple[dict[GroupKey, int], dict[GroupKey, list[Slot]]]:
        return ({k: g.want for k, g in self.groups.items()},
                {k: list(g.slots) for k, g in self.groups.items()})

    def _restart_due(self) -> None:
        desired, observed = self._plan_state()
        self._carry_out(reconcile.restarts_due(desired, observed, self.clock()))

    def _check_registered(self) -> None:
        starting = [(g, s) for g in self.groups.values() for s in g.slots
                    if s.state == "starting" and s.proc is not None]
        if not starting:
            return
        pids = self._registered_pids()
        now = self.clock()
        for g, s in starting:
            if s.proc.pid in pids:
                s.state, s.up_at = "running", now
            elif now - s.started_at > self.run.register_timeout:
                self.run.kill(s.proc, signal.SIGKILL)
                with contextlib.suppress(Exception):
                    s.proc.popen.wait(5)
                self._forget(s.proc)
                self._failed(g, s, f"did not register within "
                             f"{self.run.register_timeout:g} s", now)

    def _registered_pids(self) -> dict[int, int]:
        """pid -> instance of the running NFs."""
        return {e["pid"]: e["instance"] for e in self.client.call("nf.list")
                if isinstance(e, dict) and e.get("state", "running") == "running"}

    def _reconcile(self) -> None:
        desired, observed = self._plan_state()
        self._carry_out(reconcile.count_actions(
            desired, observed, {k: g.describe() for k, g in self.groups.items()}))

    def _carry_out(self, actions: list[reconcile.Action]) -> None:
        """Makes the plan's actions, in order."""
        for a in actions:
            g = self.groups[a.key]
            slot = {s.label: s for s in g.slots}
            if isinstance(a, reconcile.Drop):
                g.slots.remove(slot[a.label])
            elif isinstance(a, reconcile.Restart):
                s = slot[a.label]
                s.restarts += 1
                self._spawn(g, s, f"restart {s.restarts} after it {s.last_exit}")
            elif isinstance(a, reconcile.Start):
                s = Slot(self._new_label(g), backoff=Backoff(self.dep.restart))
                g.slots.append(s)
                self._spawn(g, s, a.why)
            else:
                self._stop_slots(g, [slot[label] for label in a.labels], a.why)

    def _stop_slots(self, g: Group, slots: list[Slot], why: str) -> None:
        pids: dict[int, int] | None = None
        now = self.clock()
        for s in slots:
            if s.proc is None or s.state in ("backoff", "failed"):
                g.slots.remove(s)
                self.say("stop", f"{s.label} (not running): {why}", nf=g.nf.name,
                         label=s.label)
                continue
            if pids is None:
                try:
                    pids = self._registered_pids()
                except SluiceError:  # sluiced does not answer: signal them
                    pids = {}
            inst = pids.get(s.proc.pid)
            how = "SIGTERM"
            if inst is not None:
                try:
                    self.client.call("nf.stop", instance=inst)
                    how = f"nf.stop instance {inst}"
                except SluiceError:
                    self.run.kill(s.proc, signal.SIGTERM)
            else:
                self.run.kill(s.proc, signal.SIGTERM)
            s.state, s.stop_deadline = "stopping", now + self.stop_timeout
            self.say("stop", f"{s.label} (pid {s.proc.pid}, {how}): {why}", nf=g.nf.name,
                     label=s.label)

    # -- policies ----------------------------------------------------------------------

    def _policy_name(self, pol: Any) -> str:
        for i, p in enumerate(self.dep.policies):
            if p is pol:
                return f"policies[{i}]"
        return "policy"

    def _occupancy(self, stats: dict[str, Any]) -> None:
        now = self.clock()
        for pol in self.dep.policies:
            if not isinstance(pol, OccupancyPolicy):
                continue
            name = self._policy_name(pol)
            nf = pol.nf or next(n.name for n in self.dep.nfs if n.service == pol.service)
            g = self.groups.get((nf, ()))
            if g is None:
                continue
            tr = self.trends.setdefault(name, _Trend())
            fracs = [(n.get("rx_ring") or {}) for n in stats.get("nfs", [])
                     if n.get("service") == pol.service
                     and n.get("state", "running") == "running"]
            fracs = [r.get("count", 0) / r["size"] for r in fracs if r.get("size")]
            busy = any(s.state in ("starting", "stopping", "backoff") for s in g.slots)
            if not fracs or busy:
                tr.since_above = tr.since_below = None  # count again from here
                continue
            occ = sum(fracs) / len(fracs)
            tr.last = occ
            tr.since_above = (tr.since_above or now) if occ > pol.above else None
            tr.since_below = (tr.since_below or now) if occ < pol.below else None
            held = pol.for_ms / 1000
            n = len(g.active())
            if tr.since_above is not None and now - tr.since_above >= held and n < pol.max:
                g.want = n + 1
                tr.since_above = None
                self.say("scale-out", f"'{nf}' {n} -> {n + 1}: service {pol.service} rx ring "
                         f"occupancy {occ:.2f} above {pol.above:g} for {pol.for_ms} ms "
                         f"({name})", nf=nf, replicas=n + 1, occupancy=occ)
            elif tr.since_below is not None and now - tr.since_below >= held \
                    and n > pol.min:
                g.want = n - 1
                tr.since_below = None
                self.say("scale-in", f"'{nf}' {n} -> {n - 1}: service {pol.service} rx ring "
                         f"occupancy {occ:.2f} below {pol.below:g} for {pol.for_ms} ms "
                         f"({name})", nf=nf, replicas=n - 1, occupancy=occ)

    def _handle_events(self) -> None:
        while True:
            try:
                ev = self.events.get_nowait()
            except queue.Empty:
                return
            data = ev.get("data")
            if not isinstance(data, dict):
                continue
            if ev.get("kind") == "nf.message":
                self.on_message(data)
            elif ev.get("kind") == "nf.down" and data.get("reason") == "stopped" \
                    and isinstance(data.get("pid"), int):
                # it deregistered before it went: asked to stop, not a failure
                now = self.clock()
                self.clean_stops[data["pid"]] = now
                for pid, t in list(self.clean_stops.items()):
                    if now - t > 60:  # not one of ours (an nf.scale copy)
                        del self.clean_stops[pid]
            elif ev.get("kind") == "nf.hung" and isinstance(data.get("pid"), int):
                now = self.clock()
                self.hung_kills[data["pid"]] = (now, int(data.get("hang_ms") or 0))
                for pid, (t, _) in list(self.hung_kills.items()):
                    if now - t > 60:  # not one of ours
                        del self.hung_kills[pid]

    def on_message(self, data: dict[str, Any]) -> None:
        """Applies the message policies to one ``nf.message`` event's data."""
        key, value = str(data.get("key", "")), str(data.get("value", ""))
        sender = str(data.get("nf") or data.get("from") or "?")
        for pol in self.dep.policies:
            if not isinstance(pol, MessagePolicy) or pol.key != key:
                continue
            if pol.from_ is not None and pol.from_ != sender:
                continue
            name = self._policy_name(pol)
            if pol.once and (name, value) in self.fired:
                continue
            nf = next((n for n in self.dep.nfs if n.name == pol.nf), None)
            if nf is None:
                continue
            extra = substitute(pol.args, key, value, sender)
            why = f"message {key}={value} from {sender} ({name})"
            acted = self._act(pol, nf, extra, why, name)
            if pol.once and acted:
                self.fired.add((name, value))

    def _act(self, pol: MessagePolicy, nf: NFSpec, extra: tuple[str, ...], why: str,
             name: str) -> bool:
        if pol.action == "stop":
            targets = [g for g in self.groups.values() if g.nf.name == nf.name
                       and (not pol.args or g.extra == extra) and g.want > 0]
            for g in targets:
                self.say("stop", f"{g.describe()}: {g.want} -> 0 instance(s): {why}",
                         nf=nf.name, policy=name)
                g.want = 0
            return bool(targets)
        g = self.groups.get((nf.name, extra))
        if g is None:
            g = self.groups[(nf.name, extra)] = Group(nf, extra, 0, origin=name)
        want = pol.replicas if pol.replicas is not None else 1
        if pol.action == "start" and g.want >= want:
            return True  # already running: nothing to do
        if pol.action == "scale" and g.want == want:
            return True
        self.say(pol.action, f"{g.describe()}: {g.want} -> {want} instance(s): {why}",
                 nf=nf.name, policy=name, args=list(extra))
        g.want = want
        return True

    def _event_loop(self) -> None:
        """Feeds sluiced's events to the loop; subscribes again if the
        connection breaks while sluiced still runs."""
        while not self._stop.is_set():
            c = Client(self.run.node, self.run.dep.socket_path(), timeout=5.0)
            self._events_client = c
            try:
                for ev in c.events(on_subscribed=self._on_subscribed):
                    self.events.put(ev)
                    if self._stop.is_set():
                        break
            except SluiceError:
                pass
            finally:
                self.subscribed = False
                c.close()
            self._stop.wait(0.5)

    def _on_subscribed(self) -> None:
        self.subscribed = True

    # -- status --------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        now = self.clock()
        out = []
        for g in self.groups.values():
            for s in g.slots:
                e: dict[str, Any] = {
                    "nf": g.nf.name, "label": s.label, "args": list(g.extra),
                    "state": "outdated" if s.outdated and s.state == "running" else s.state,
                    "pid": s.proc.pid if s.proc is not None else None,
                    "restarts": s.restarts, "origin": g.origin}
                if s.state == "backoff":
                    e["restart_in_s"] = round(max(0.0, s.restart_at - now), 3)
                if s.last_exit:
                    e["last_exit"] = s.last_exit
                out.append(e)
        return {"node": self.run.node, "deployment": self.dep.source,
                # message policies and clean-stop detection need sluiced's events
                "subscribed": self.subscribed,
                "groups": [{"nf": g.nf.name, "args": list(g.extra), "want": g.want,
                            "origin": g.origin, "stopped_outside": g.stopped_outside}
                           for g in self.groups.values()],
                "instances": out,
                "occupancy": {k: t.last for k, t in self.trends.items()},
                "actions": list(self.actions)}

    # -- apply ---------------------------------------------------------------------------

    def apply_file(self, path: str | Path) -> list[str]:
        """Loads ``path`` and applies it (see ``apply``)."""
        return self.apply(load_deployment(path))

    def apply(self, new: Deployment) -> list[str]:
        """Changes the running deployment into ``new``; returns what changed,
        one line each. Raises OrchestratorError when refused (nothing
        changed), when an NF does not start, or when sluiced refuses a step
        of graphs, chain and rules: then what was made is undone, and the
        lines say what (and what could not be undone, see ``resync``)."""
        old = self.dep
        src = new.source
        refused = _fixed_changes(old, new)
        if refused:
            raise OrchestratorError("\n".join(
                f"{src}: {k}: {what} cannot change while the node runs: stop `sluice up` "
                f"and start it again with the new file (nothing was applied)"
                for k, what in refused))
        done: list[str] = []

        def note(action: str, text: str) -> None:
            done.append(f"{action}: {text}")
            self.say(action, text)

        snapshot = {k: (g.nf, g.want, [s.outdated for s in g.slots], g.stopped_outside)
                    for k, g in self.groups.items()}
        old_nfs = {n.name: n for n in old.nfs}
        new_nfs = {n.name: n for n in new.nfs}
        # 1. start what the new file adds, and replacements of changed NFs
        starting: list[Group] = []
        for name, nf in new_nfs.items():
            before = old_nfs.get(name)
            if before is None:
                g = self.groups[(name, ())] = Group(nf, (), nf.replicas)
                note("add", f"NF '{name}' ({nf.program}, service {nf.service}): "
                     f"{nf.replicas} instance(s)")
                starting.append(g)
                continue
            groups = [g for g in self.groups.values() if g.nf.name == name]
            if _run_spec(before) != _run_spec(nf):
                for g in groups:
                    g.nf = nf
                    for s in g.slots:
                        s.outdated = s.state != "stopping"
                    starting.append(g)
                note("replace", f"NF '{name}' changed ({_spec_diff(before, nf)}): new "
                     f"instances start, then the old ones stop")
            base = self.groups.get((name, ()))
            if base is not None:
                base.nf = nf
                if before.replicas != nf.replicas:
                    note("replicas", f"NF '{name}': {before.replicas} -> {nf.replicas}")
                    base.want = nf.replicas
                    base.stopped_outside = 0  # the file's new count is what runs
                    starting.append(base)
        self.dep = new
        try:
            self._reconcile_only_up(starting)
            self._wait_started(starting, src)
        except OrchestratorError:
            self._rollback(snapshot, old)
            raise
        # 2. graphs, chain, rules over the control socket; a step sluiced refuses
        # undoes the steps made before it, then the NF part
        nf_done = list(done)
        log = _ControlLog()
        try:
            self._apply_control(old, new, note, log)
        except SluiceError as e:
            raise self._undo_apply(e, log, nf_done, snapshot, old, src) from None
        self.resync = False
        self.stale_graphs.clear()
        # 3. stop what the new file removes (now nothing routes to it)
        for name in old_nfs.keys() - new_nfs.keys():
            for g in [g for g in self.groups.values() if g.nf.name == name]:
                g.want = 0
                g.origin = "removed"
            note("remove", f"NF '{name}': its instances stop")
        # 4. policies and restart settings; failed instances and instances stopped
        # outside the orchestrator get another chance
        for g in self.groups.values():
            if g.stopped_outside and g.origin != "removed":
                g.want += g.stopped_outside
                note("restore", f"{g.describe()}: {g.want - g.stopped_outside} -> {g.want} "
                     f"instance(s): {g.stopped_outside} stopped outside the orchestrator "
                     f"before")
                g.stopped_outside = 0
        if old.policies != new.policies:
            for line in policy_changes(old.policies, new.policies):
                note("policies", line)
            self.trends.clear()
        if old.restart != new.restart:
            note("restart", restart_change(old.restart, new.restart))
        for g in self.groups.values():
            # only as many failed instances as the group still wants: those of a
            # removed NF, or beyond fewer replicas, are dropped by _reconcile below
            # (`stop: LABEL (not running)`), not started again
            running = sum(1 for s in g.active() if s.state != "failed")
            retries = max(0, g.want - running) if g.origin != "removed" else 0
            for s in g.slots:
                s.backoff = s.backoff or Backoff(new.restart)
                s.backoff.spec = new.restart
                if s.state == "failed" and not s.outdated and retries > 0:
                    retries -= 1
                    s.backoff.reset()
                    s.state, s.restart_at = "backoff", self.clock()
                    note("retry", f"{s.label}: failed before; starting it again")
        self.run.dep = new
        self._reconcile()
        if not done:
            note("apply", f"nothing to change: {src} is what runs")
        return done

    def _reconcile_only_up(self, groups: list[Group]) -> None:
        for g in groups:
            for _ in range(g.want - len(g.active())):
                slot = Slot(self._new_label(g), backoff=Backoff(self.dep.restart))
                g.slots.append(slot)
                if not self._spawn(g, slot, f"{g.describe()} wants {g.want} instance(s) "
                                   f"({self.dep.source})"):
                    raise OrchestratorError(f"{self.dep.source}: {slot.last_exit}")

    def _wait_started(self, groups: list[Group], src: str) -> None:
        slots = [(g, s) for g in groups for s in g.slots
                 if s.state == "starting" and s.proc is not None]
        deadline = self.clock() + self.run.register_timeout
        while slots:
            pids = self._registered_pids()
            for g, s in list(slots):
                rc = s.proc.exited()
                if rc is not None:
                    raise OrchestratorError(
                        f"{src}: nfs: NF {g.describe()} ({s.label}) {_status_text(rc)} while "
                        f"starting, so nothing else was changed; see {s.proc.log}")
                if s.proc.pid in pids:
                    s.state, s.up_at = "running", self.clock()
                    slots.remove((g, s))
            if slots and self.clock() >= deadline:
                g, s = slots[0]
                raise OrchestratorError(
                    f"{src}: nfs: NF {g.describe()} ({s.label}) did not register within "
                    f"{self.run.register_timeout:g} s, so nothing else was changed; see "
                    f"{s.proc.log}")
            if slots:
                time.sleep(0.05)

    def _rollback(self, snapshot: dict[Any, Any], old: Deployment) -> None:
        """Undoes the NF part of a failed apply: new instances stop, old ones stay."""
        self.dep = old
        for key in list(self.groups):
            g = self.groups[key]
            if key not in snapshot:
                g.want = 0
                g.origin = "removed"
                self._stop_slots(g, list(g.active()), "the apply failed")
                continue
            nf, want, outdated, stopped_outside = snapshot[key]
            new_slots = g.slots[len(outdated):]
            g.nf, g.want, g.stopped_outside = nf, want, stopped_outside
            for s, o in zip(g.slots, outdated, strict=False):
                s.outdated = o
            live = [s for s in new_slots if s.state != "stopping"]
            if live:
                self._stop_slots(g, live, "the apply failed")

    def _apply_control(self, old: Deployment, new: Deployment,
                       note: Callable[[str, str], None], log: _ControlLog) -> None:
        """Graphs, chain and rules; each step made goes into ``log`` with its undo.

        ``self.run.rules`` follows each step (it is always what sluiced has, as
        far as its answers tell). With ``self.resync`` every graph and the chain
        are pushed even if unchanged, and ``self.stale_graphs`` are removed.

        The rules a step removes go in one ``rule.remove {ids}``, those it adds
        in one ``rule.add {rules}`` (and so do their undos): sluiced builds its
        classifier once per call, and one call per rule is O(N^2) for N rules."""
        rules = self.run.rules

        def call(method: str, **params: Any) -> Any:
            if method not in ("rule.add", "rule.remove", "graph.remove"):
                return self.client.call(method, **params)
            # these rebuild sluiced's rule classifier: seconds for thousands
            n = len(rules) + len(params.get("rules", []))
            with self.client.patience(rule_build_seconds(n)):
                return self.client.call(method, **params)

        resync = self.resync
        old_graphs = {g.name: to_rpc(g) for g in old.graphs}
        new_graphs = {g.name: to_rpc(g) for g in new.graphs}
        gone = [n for n in old_graphs if n not in new_graphs] + \
            sorted(self.stale_graphs - old_graphs.keys() - new_graphs.keys())
        pos = {rid: i for i, (_, rid) in enumerate(rules)}  # a rule's place before

        def made(action: str, text: str, undo: Callable[[], str],
                 leaves: str | None = None) -> None:
            note(action, text)
            log.made.append(_Undo([f"{action} {text}"], lambda: [undo()], leaves))

        def at(what: str, leaves: str | None = None) -> None:
            log.step, log.leaves = what, leaves

        def drop_rules(ids: list[int]) -> None:
            drop = set(ids)
            rules[:] = [r for r in rules if r[1] not in drop]

        def add_rules_back(gone_rules: list[tuple[dict[str, Any], int]]
                           ) -> Callable[[], list[str]]:
            def undo() -> list[str]:
                # in their old order, so that rules of equal priority keep theirs
                order = sorted(gone_rules, key=lambda r: pos.get(r[1], len(pos)))
                res = call("rule.add", rules=[params for params, _ in order])
                new_ids: dict[int, int] = {}
                for k, (params, rid) in enumerate(order):
                    new_id = new_ids[rid] = int(res["first_id"]) + k
                    pos[new_id] = pos.get(rid, len(pos))
                    i = sum(1 for _, r in rules if pos.get(r, len(pos)) < pos[new_id])
                    rules.insert(i, (params, new_id))
                return [f"added again as rule {new_ids[rid]}" for _, rid in gone_rules]
            return undo

        def remove_rules(ids: list[int]) -> Callable[[], list[str]]:
            def undo() -> list[str]:
                call("rule.remove", ids=ids)
                drop_rules(ids)
                return [""] * len(ids)
            return undo

        def remove_graph(name: str) -> Callable[[], str]:
            def undo() -> str:
                call("graph.remove", name=name)
                return ""
            return undo

        def apply_graph(params: dict[str, Any], what: str) -> Callable[[], str]:
            def undo() -> str:
                return f"{what} (version {call('graph.apply', **params).get('version')})"
            return undo

        def set_chain_back() -> str:
            call("chain.set", hops=list(old.chain))
            return f"back to {' -> '.join(old.chain)}"

        for name, params in new_graphs.items():
            before = old_graphs.get(name)
            if before == params and not resync:
                continue
            at(f"the graph {name}", None if before else name)
            res = call("graph.apply", **params)
            how = "added" if before is None else "changed" if before != params else \
                "pushed again"
            if before is None:
                made("graph", f"{name} added (version {res.get('version')})",
                     remove_graph(name), leaves=name)
            else:
                made("graph", f"{name} {how} (version {res.get('version')})",
                     apply_graph(before, "old graph applied again"))
        if list(old.chain) != list(new.chain) or resync:
            hops = " -> ".join(new.chain)
            at(f"the chain ({hops})")
            call("chain.set", hops=list(new.chain))
            made("chain", hops + ("" if list(old.chain) != list(new.chain)
                                  else " (pushed again)"), set_chain_back)
        # rules: the ones no longer in the file go, new ones are added
        wanted = [json.dumps(r, sort_keys=True) for r in new.rule_params()]
        with_graph: dict[str, list[str]] = {}  # graph -> its rules' lines
        removing: list[tuple[dict[str, Any], int, str]] = []  # (params, id, line)
        for params, rid in list(rules):
            k = json.dumps(params, sort_keys=True)
            if k in wanted:
                wanted.remove(k)
                continue
            text = f"{rid} removed ({format_match(params)} -> graph {params['graph']})"
            if params["graph"] in gone:  # it goes with its graph below, said then
                with_graph.setdefault(params["graph"], []).append(text)
                continue
            removing.append((params, rid, text))
        if removing:
            ids = [rid for _, rid, _ in removing]
            at(f"the removal of {_rule_ids(ids)}")
            gone_ids: set[int] = set()
            try:
                call("rule.remove", ids=ids)
            except RpcError:
                # all or none: if sluiced no longer has some of them (gone with
                # their graph, or removed by someone else), they are gone and
                # the others are removed again; if it has them all, it refused
                step = log.step
                at(f"the list of rules (read to see which of {_rule_ids(ids)} sluiced still "
                   f"has, after it refused their removal)")
                have = {r.get("id") for r in self.client.rules()}
                if all(rid in have for rid in ids):
                    at(step)
                    raise
                gone_ids = {rid for rid in ids if rid not in have}
                drop_rules(list(gone_ids))
                left = [rid for rid in ids if rid in have]
                if left:
                    at(f"the removal of {_rule_ids(left)}")
                    call("rule.remove", ids=left)
            drop_rules(ids)
            for _, _, text in removing:
                note("rule", text)
            removed = [(params, rid, text) for params, rid, text in removing
                       if rid not in gone_ids]
            if removed:
                log.made.append(_Undo([f"rule {text}" for _, _, text in removed],
                                      add_rules_back([(p, rid) for p, rid, _ in removed])))
        if wanted:
            adding = [json.loads(k) for k in wanted]
            whats = [f"priority {p['priority']}, {format_match(p)} -> graph {p['graph']}"
                     for p in adding]
            at(f"the rule ({whats[0]})" if len(adding) == 1 else
               f"the {len(adding)} new rules")
            try:
                res = call("rule.add", rules=adding)
            except RpcError as e:
                c = batch_culprit(e.message, len(adding))
                if c is None:
                    raise  # the whole batch (too many rules, say)
                # the rule sluiced names, in the words of a refused rule.add of it
                at(f"the rule ({whats[c[0]]})")
                raise RpcError(e.code, c[1], e.data, e.method) from None
            added = [(params, int(res["first_id"]) + k) for k, params in enumerate(adding)]
            rules.extend(added)
            for (_, rid), what in zip(added, whats, strict=True):
                note("rule", f"{rid} added ({what})")
            log.made.append(_Undo([f"rule {rid} added ({what})"
                                   for (_, rid), what in zip(added, whats, strict=True)],
                                  remove_rules([rid for _, rid in added])))
        for name in gone:
            with_it = [r for r in rules if r[0]["graph"] == name]
            at(f"the removal of graph {name}")
            if name not in old_graphs:  # left by an apply that could not be undone
                with contextlib.suppress(RpcError):  # it may not have made it
                    call("graph.remove", name=name)
                    note("graph", f"{name} removed (left by an apply that could not be "
                         f"undone)")
                self.stale_graphs.discard(name)
                drop_rules([rid for _, rid in with_it])
                continue
            res = call("graph.remove", name=name)
            for text in with_graph.get(name, []):
                note("rule", text)
            drop_rules([rid for _, rid in with_it])
            if with_it:
                log.made.append(_Undo([f"rule {rid} removed with graph {name}"
                                       for _, rid in with_it], add_rules_back(with_it)))
            made("graph", f"{name} removed ({res.get('rules_removed', 0)} rule(s) with it)",
                 apply_graph(old_graphs[name], "applied again"))

    def _undo_apply(self, e: SluiceError, log: _ControlLog, nf_done: list[str],
                    snapshot: dict[Any, Any], old: Deployment, src: str) -> OrchestratorError:
        """Undoes the control steps of ``log`` (newest first), then the NF part;
        returns the error that says what was refused and what was undone."""
        if isinstance(e, RpcError):
            lines = [f"{src}: sluiced refused {log.step}: {command_text(e.message)}"]
        else:  # no answer: the step may have been made
            lines = [f"{src}: sluiced did not answer about {log.step}, so it may or may not "
                     f"have been made: {_without_method(e)}"]
            self.resync = True
            if log.leaves:
                self.stale_graphs.add(log.leaves)
        results: list[str] = []
        failed = False
        for u in reversed(log.made):
            try:
                whats = u.undo()
            except SluiceError as err:
                failed = self.resync = True
                if u.leaves:
                    self.stale_graphs.add(u.leaves)
                why = (f"sluiced refused it: {command_text(err.message)}"
                       if isinstance(err, RpcError) else f"no answer: {_without_method(err)}")
                for text in reversed(u.texts):  # a batch is undone all or none
                    results.append(f"not undone: {text}: {why}")
                    self.say("undo-failed", f"{text}: {why}")
                continue
            for text, what in reversed(list(zip(u.texts, whats, strict=True))):
                line = text + (f": {what}" if what else "")
                results.append(f"undone: {line}")
                self.say("undo", line)
        for d in reversed(nf_done):
            action, text = d.split(": ", 1)
            results.append(f"undone: {action} {text} (its new instances stop)")
        self._rollback(snapshot, old)
        if failed:
            lines.append(f"the apply could not be undone in full: the NFs run as "
                         f"{old.source} says, but sluiced's graphs, chain and rules may "
                         f"not; the next `sluice apply` (of either file) pushes them all "
                         f"again:")
        elif self.resync:
            lines.append(f"the apply was undone and the NFs run as {old.source} says, but "
                         f"sluiced's graphs, chain and rules may not; the next `sluice "
                         f"apply` (of either file) pushes them all again:")
        else:
            lines.append(f"the apply was undone: {old.source} runs as before; fix {src} "
                         f"and apply it again:")
        if not results:  # refused at its first step: a list of nothing would follow
            lines[-1] = lines[-1][:-1] + " (it had changed nothing yet)"
        return OrchestratorError("\n".join(lines + ["  " + r for r in results]))

    # -- the socket `sluice apply` talks to --------------------------------------------------

    def _serve_requests(self) -> None:
        while True:
            try:
                method, params, reply = self.requests.get_nowait()
            except queue.Empty:
                return
            try:
                if method == "apply":
                    lines = self.apply_file(str(params.get("path", "")))
                    reply.put({"result": {"applied": lines}})
                elif method == "status":
                    reply.put({"result": self.status()})
                else:
                    reply.put({"error": {"message": f"unknown method {method!r} (apply, "
                                                    f"status)"}})
            except (SluiceError, DeploymentError) as e:
                for line in str(e).splitlines():
                    self.say("refused", line)
                reply.put({"error": {"message": str(e)}})

    def _listen(self) -> None:
        path = self.sock_path
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.bind(str(path))
        except OSError as e:
            s.close()
            self.say("warning", f"cannot listen on {path} ({e.strerror}): `sluice apply` "
                     f"will not reach this node; send SIGHUP to re-read {self.dep.source}")
            return
        os.chmod(path, 0o600)
        s.listen(4)
        self._server = s
        self._thread(self._accept_loop, "server")

    def _accept_loop(self) -> None:
        assert self._server is not None
        while not self._stop.is_set():
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(5.0)
                try:
                    req = json.loads(_read_line(conn))
                    method = str(req.get("method", ""))
                    params = req.get("params") or {}
                except (OSError, ValueError, AttributeError) as e:
                    _send(conn, {"error": {"message": f"bad request: {e}"}})
                    continue
                reply: queue.Queue[Any] = queue.Queue()
                self.requests.put((method, params, reply))
                try:
                    answer = reply.get(timeout=120.0)
                except queue.Empty:
                    answer = {"error": {"message": "the orchestrator did not answer within "
                                                   "120 s"}}
                _send(conn, answer)


def _read_line(conn: socket.socket) -> bytes:
    buf = b""
    while b"\n" not in buf:
        chunk = conn.recv(65536)
        if not chunk:
            break
        buf += chunk
        if len(buf) > 1 << 20:
            raise ValueError("request longer than 1 MiB")
    return buf.split(b"\n", 1)[0]


def _send(conn: socket.socket, msg: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):
        conn.sendall(json.dumps(msg).encode() + b"\n")


# -- the client side: `sluice apply` -------------------------------------------------------

def request(dep: Deployment, method: str, timeout: float = 130.0,
            **params: Any) -> Any:
    """Sends one request to the orchestrator of ``dep``'s node; returns its result."""
    path = orchestrator_socket(dep.socket_path())
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(str(path))
    except OSError as e:
        s.close()
        raise OrchestratorError(
            f"cannot reach the orchestrator of node '{dep.node.name}' at {path} "
            f"({e.strerror or e}): is `sluice up` running for it?") from None
    try:
        s.sendall(json.dumps({"method": method, "params": params}).encode() + b"\n")
        line = _read_line(s)
    except OSError as e:
        raise OrchestratorError(f"orchestrator of node '{dep.node.name}': {e}") from None
    finally:
        s.close()
    if not line:
        raise OrchestratorError(f"the orchestrator of node '{dep.node.name}' closed the "
                                f"connection without answering")
    msg = json.loads(line)
    if "error" in msg:
        raise OrchestratorError(str(msg["error"].get("message", "error")))
    return msg.get("result")
