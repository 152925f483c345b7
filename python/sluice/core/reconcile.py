"""The orchestrator's decisions, as pure functions of its state (core
layer: no processes, no sockets, no clock of its own: ``now`` is passed in).

The state is a set of groups (an NF entry and the extra arguments a policy
gave it) and, per group, the wanted number of instances (*desired*) and its
slots, one per instance through its restarts (*observed*). ``plan(desired,
observed, now)`` says what one round does about them, as a list of actions
the orchestrator (orchestrator.py) then carries out in order:

- ``Restart``: a slot whose backoff is over starts again;
- ``Drop``: a slot waiting for its restart is no longer wanted (the group
  wants fewer, or its NF entry changed): it is forgotten;
- ``Start``: a group has fewer active instances than it wants;
- ``Stop``: a group has more (newest first, those not running yet before
  those that are), or has outdated instances and all its new ones run.

Restarts are decided at the start of a round and the counts at its end
(after the exits, registrations and policies of the round are seen):
``restarts_due`` and ``count_actions`` are the two halves, and the
orchestrator calls each at its point; ``plan`` is both, for one state.

Here too: restart backoff (``Backoff``), the diffs an apply reports, and a
message policy's argument substitution.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .deploy import (
    SLUICED_DEFAULTS,
    Deployment,
    MessagePolicy,
    NFSpec,
    OccupancyPolicy,
    RestartSpec,
)

GroupKey = tuple[str, tuple[str, ...]]  # (NF entry's name, extra arguments)


# -- what an apply changed in policies and restart settings ---------------------------

def policy_text(p: OccupancyPolicy | MessagePolicy) -> str:
    """One policy as the file says it, in words: ``on message alarm from
    ddos-detect: start scrub (args --prefix {value}), once``."""
    if isinstance(p, OccupancyPolicy):
        nf = f" (NF {p.nf})" if p.nf else ""
        return (f"on occupancy of service {p.service}{nf}: one more instance above "
                f"{p.above:g}, one fewer below {p.below:g}, held {p.for_ms} ms, "
                f"{p.min} to {p.max} instance(s)")
    frm = f" from {p.from_}" if p.from_ is not None else ""
    to = f" to {p.replicas}" if p.replicas is not None else ""
    args = f" (args {' '.join(p.args)})" if p.args else ""
    return f"on message {p.key}{frm}: {p.action} {p.nf}{to}{args}" + (", once" if p.once else "")


def policy_changes(old: list[Any], new: list[Any]) -> list[str]:
    """What changed from the ``old`` policies to the ``new``, a line each:
    those the new file adds (by their place in it), those it drops (by
    their place in the old one), or that only their order changed."""
    added = [(i, p) for i, p in enumerate(new) if p not in old]
    removed = [(i, p) for i, p in enumerate(old) if p not in new]
    lines = [f"policies[{i}] added: {policy_text(p)}" for i, p in added]
    lines += [f"policies[{i}] removed (was {policy_text(p)})" for i, p in removed]
    return lines or [f"the same {len(new)} polic(ies) in a new order (a policy's log lines "
                     f"name it by its new place)"]


def restart_change(old: RestartSpec, new: RestartSpec) -> str:
    """The ``restart:`` settings that changed, old -> new, and when they act."""
    diff = ", ".join(f"{k} {getattr(old, k)} -> {getattr(new, k)}"
                     for k in type(new).model_fields if getattr(old, k) != getattr(new, k))
    return f"{diff} (from the next failure of any NF instance on)"



# -- restart backoff (pure: a clock is passed in) -----------------------------------

class Backoff:
    """When to restart one instance after it failed, or whether to give up.

    ``failed(now, ran_s)`` records a failure of a run that lasted ``ran_s``
    seconds and returns the delay before the restart, or None to give up:
    the delay is ``backoff_ms``, doubled per failure in a row, at most
    ``max_backoff_ms``; a run of ``stable_ms`` or more starts the row
    again; ``give_up_after`` failures within ``window_ms`` give up.
    """

    def __init__(self, spec: RestartSpec):
        self.spec = spec
        self.streak = 0
        self.times: deque[float] = deque()

    def failed(self, now: float, ran_s: float) -> float | None:
        s = self.spec
        if ran_s * 1000 >= s.stable_ms:
            self.streak = 0
        self.times.append(now)
        while self.times and now - self.times[0] > s.window_ms / 1000:
            self.times.popleft()
        if len(self.times) >= s.give_up_after:
            return None
        self.streak += 1
        return float(min(s.max_backoff_ms, s.backoff_ms * 2 ** (self.streak - 1)) / 1000)

    def reset(self) -> None:
        self.streak = 0
        self.times.clear()



@dataclass
class Slot:
    """One instance of a group, through its restarts."""

    label: str
    proc: Any = None
    state: str = "starting"  # starting, running, backoff, failed, stopping
    started_at: float = 0.0
    up_at: float | None = None  # when it was seen registered (stable_ms counts from here)
    restart_at: float = 0.0
    stop_deadline: float = 0.0
    restarts: int = 0
    outdated: bool = False  # started from an NF entry that has changed since
    backoff: Backoff | None = None
    last_exit: str = ""
    exit_seen_at: float | None = None  # exited with 0; waiting for sluiced's nf.down


@dataclass
class Group:
    """Instances of one NF entry with one set of extra arguments."""

    nf: NFSpec
    extra: tuple[str, ...] = ()
    want: int = 0
    origin: str = "file"  # "file" or "policies[i]"
    slots: list[Slot] = field(default_factory=list)
    stopped_outside: int = 0  # instances stopped by others; the next apply restores them

    @property
    def key(self) -> tuple[str, tuple[str, ...]]:
        return (self.nf.name, self.extra)

    def active(self) -> list[Slot]:
        """Slots that count towards ``want``."""
        return [s for s in self.slots if s.state != "stopping" and not s.outdated]

    def describe(self) -> str:
        return f"'{self.nf.name}'" + (f" (args {' '.join(self.extra)})" if self.extra else "")


@dataclass(frozen=True)
class Trend:
    """An occupancy policy's view of its service: since when the occupancy
    has been above (below) its bound, and the last occupancy read."""

    since_above: float | None = None
    since_below: float | None = None
    last: float | None = None


_Trend = Trend


def substitute(args: list[str], key: str, value: str, sender: str) -> tuple[str, ...]:
    """A message policy's args with {key}, {value} and {from} replaced."""
    out = []
    for a in args:
        out.append(a.replace("{key}", key).replace("{value}", value).replace("{from}", sender))
    return tuple(out)


def orchestrator_socket(sluiced_socket: Path) -> Path:
    """The orchestrator's socket: beside sluiced's, NODE.orchestrator."""
    return sluiced_socket.with_name(sluiced_socket.stem + ".orchestrator")



# -- diffs -------------------------------------------------------------------------------

def _run_spec(nf: NFSpec) -> dict[str, Any]:
    """What decides how an NF's instances run (everything but replicas)."""
    d = nf.model_dump()
    d.pop("replicas")
    return d


def _spec_diff(a: NFSpec, b: NFSpec) -> str:
    da, db = _run_spec(a), _run_spec(b)
    return ", ".join(f"{k}: {da[k]!r} -> {db[k]!r}" for k in da if da[k] != db[k])


def _val(v: Any) -> str:
    return "unset" if v is None else repr(v)


def _fixed_changes(old: Deployment, new: Deployment) -> list[tuple[str, str]]:
    """(key path, what changed) of what cannot change while sluiced runs."""
    out: list[tuple[str, str]] = []
    a, b = old.node.model_dump(), new.node.model_dump()
    a["socket"], b["socket"] = str(old.socket_path()), str(new.socket_path())
    a["cores"], b["cores"] = old.cores(), new.cores()
    if old.node.mode == new.node.mode == "shared":
        # shared mode: sluiced's threads and the NFs float over the set of CPUs
        # (poll mode pins sluiced to the first two, so there the order counts)
        a["cores"], b["cores"] = sorted(a["cores"]), sorted(b["cores"])
    for k in a:
        # a key left out is sluiced's default: writing that default down is no change
        va = SLUICED_DEFAULTS.get(k) if a[k] is None else a[k]
        vb = SLUICED_DEFAULTS.get(k) if b[k] is None else b[k]
        if va != vb:
            out.append((f"node.{k}", f"{_val(a[k])} -> {_val(b[k])}"))
    pa = [(p.name, old.device_for(p)) for p in old.ports]
    pb = [(p.name, new.device_for(p)) for p in new.ports]
    if pa != pb:
        what = []
        na, nb = dict(pa), dict(pb)
        what += [f"port {n} added" for n in nb if n not in na]
        what += [f"port {n} removed" for n in na if n not in nb]
        what += [f"port {n} device {na[n]!r} -> {nb[n]!r}" for n in na
                 if n in nb and na[n] != nb[n]]
        out.append(("ports", ", ".join(what) or "the order of the ports"))
    return out


# -- the plan --------------------------------------------------------------------------

@dataclass(frozen=True)
class Restart:
    """Start the slot ``label`` of group ``key`` again: its backoff is over."""

    key: GroupKey
    label: str


@dataclass(frozen=True)
class Drop:
    """Forget the slot ``label`` of group ``key``, which waited for a restart
    that is no longer wanted."""

    key: GroupKey
    label: str


@dataclass(frozen=True)
class Start:
    """Start one more instance of group ``key`` (a new slot), because ``why``."""

    key: GroupKey
    why: str


@dataclass(frozen=True)
class Stop:
    """Stop the slots ``labels`` of group ``key``, because ``why``."""

    key: GroupKey
    labels: tuple[str, ...]
    why: str


Action = Restart | Drop | Start | Stop


def restarts_due(desired: Mapping[GroupKey, int], observed: Mapping[GroupKey, Sequence[Slot]],
                 now: float) -> list[Action]:
    """The slots whose backoff is over at ``now``: each is restarted, unless
    its group now has more active instances than it wants or the slot is
    outdated; then it is dropped, and the group's other slots wait for the
    next round (the drop changes the count they are judged by)."""
    out: list[Action] = []
    for key, slots in observed.items():
        active = sum(1 for s in slots if s.state != "stopping" and not s.outdated)
        for slot in slots:
            if slot.state == "backoff" and now >= slot.restart_at:
                if active > desired.get(key, 0) or slot.outdated:
                    out.append(Drop(key, slot.label))
                    break
                out.append(Restart(key, slot.label))
    return out


def count_actions(desired: Mapping[GroupKey, int], observed: Mapping[GroupKey, Sequence[Slot]],
                  describe: Mapping[GroupKey, str]) -> list[Action]:
    """Starts and stops that bring each group to the number it wants
    (``describe``: how a group is named in the reasons)."""
    out: list[Action] = []
    for key, slots in observed.items():
        want = desired.get(key, 0)
        name = describe[key]
        active = [s for s in slots if s.state != "stopping" and not s.outdated]
        missing = want - len(active)
        out += [Start(key, f"{name} wants {want} instance(s)")] * max(0, missing)
        surplus = len(active) - want
        stopped: list[Slot] = []
        if surplus > 0:
            # newest first, and those not running yet before those that are
            order = sorted(active, key=lambda s: (s.state == "running", -s.started_at))
            stopped = order[:surplus]
            out.append(Stop(key, tuple(s.label for s in stopped),
                            f"{name} wants {want} instance(s)"))
        outdated = [s for s in slots if s.outdated and s.state != "stopping"]
        # the new instances (none started this round) all run: the old ones go
        rest = [s for s in active if s not in stopped]
        if outdated and missing <= 0 and all(s.state == "running" for s in rest):
            out.append(Stop(key, tuple(s.label for s in outdated),
                            f"{name} changed: replaced by its new instances"))
    return out


def plan(desired: Mapping[GroupKey, int], observed: Mapping[GroupKey, Sequence[Slot]],
         now: float, describe: Mapping[GroupKey, str] | None = None) -> list[Action]:
    """One round's decisions for one state: the restarts due at ``now``, then
    the starts and stops that bring each group to what it wants (as if the
    restarts had been made)."""
    names = describe or {k: f"'{k[0]}'" + (f" (args {' '.join(k[1])})" if k[1] else "")
                         for k in observed}
    due = restarts_due(desired, observed, now)
    dropped = {(a.key, a.label) for a in due if isinstance(a, Drop)}
    left = {k: [s for s in slots if (k, s.label) not in dropped]
            for k, slots in observed.items()}
    return due + count_actions(desired, left, names)


def new_label(nf: NFSpec, extra: Sequence[str], used: set[str]) -> str:
    """The label of a new instance of ``nf``: its name alone for the one
    instance of an NF with one replica and no extra arguments, else the
    first free ``NAME.N``."""
    if not used and nf.replicas == 1 and not extra:
        return nf.name
    n = 1
    while f"{nf.name}.{n}" in used or (n == 1 and nf.name in used):
        n += 1
    return f"{nf.name}.{n}"


# -- occupancy policies ------------------------------------------------------------------

def ring_occupancy(stats: Mapping[str, Any], service: str) -> float | None:
    """The mean fill (0 to 1) of the rx rings of ``service``'s running
    instances in sluiced's ``stats``; None if none has a ring."""
    rings = [(n.get("rx_ring") or {}) for n in stats.get("nfs", [])
             if n.get("service") == service and n.get("state", "running") == "running"]
    fracs = [r.get("count", 0) / r["size"] for r in rings if r.get("size")]
    return sum(fracs) / len(fracs) if fracs else None


def occupancy_step(pol: OccupancyPolicy, occ: float | None, busy: bool, n: int,
                   trend: Trend, now: float) -> tuple[int, Trend]:
    """What an occupancy policy does at ``now``: +1 (one more instance), -1
    (one fewer) or 0, and its trend after. ``n``: the group's active
    instances; ``busy``: one of them is starting, stopping or waiting for a
    restart, and then (as with no occupancy to read) the policy waits and
    counts its hold time again from the next reading."""
    if occ is None or busy:
        return 0, replace(trend, since_above=None, since_below=None)
    above = (trend.since_above or now) if occ > pol.above else None
    below = (trend.since_below or now) if occ < pol.below else None
    held = pol.for_ms / 1000
    if above is not None and now - above >= held and n < pol.max:
        return 1, Trend(None, below, occ)
    if below is not None and now - below >= held and n > pol.min:
        return -1, Trend(above, None, occ)
    return 0, Trend(above, below, occ)
