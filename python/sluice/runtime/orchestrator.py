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
from pathlib import Path
from typing import Any, Protocol

from ..core import reconcile
from ..core.deploy import (
    Deployment,
    DeploymentError,
    MessagePolicy,
    NFSpec,
    OccupancyPolicy,
    load_deployment,
)
from ..core.reconcile import (  # noqa: F401 (tests import Backoff and substitute from here)
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
from .applying import ControlApply, ControlLog, OrchestratorError, undo_apply
from .client import (
    Client,
    ConnectError,
    ConnectionLost,
    RpcTimeout,
    SluiceError,
)
from .procs import status_text as _status_text

SAMPLE_S = 0.2  # how often occupancy policies read sluiced's stats
# How long an instance that exited with status 0 waits for sluiced's nf.down event
# (which says whether it deregistered first) before its exit counts as unexpected.
CLEAN_STOP_WAIT_S = 1.0
# sluiced publishes nf.hung just before it kills a hung NF (SIGKILL): how long
# a SIGKILL exit waits for that event, to be told as a hang and not a crash
HUNG_EVENT_WAIT_S = 0.5
ACTIONS_KEPT = 200


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
            busy = any(s.state in ("starting", "stopping", "backoff") for s in g.slots)
            occ = reconcile.ring_occupancy(stats, pol.service)
            n = len(g.active())
            step, self.trends[name] = reconcile.occupancy_step(
                pol, occ, busy, n, self.trends.get(name, _Trend()), now)
            if step > 0:
                g.want = n + 1
                self.say("scale-out", f"'{nf}' {n} -> {n + 1}: service {pol.service} rx ring "
                         f"occupancy {occ:.2f} above {pol.above:g} for {pol.for_ms} ms "
                         f"({name})", nf=nf, replicas=n + 1, occupancy=occ)
            elif step < 0:
                g.want = n - 1
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
        log = ControlLog()
        try:
            ControlApply(self, old, new, note, log).run()
        except SluiceError as e:
            raise undo_apply(self, e, log, nf_done, snapshot, old, src) from None
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
