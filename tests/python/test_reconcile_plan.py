"""The orchestrator's decisions (sluice.core.reconcile), without a process, a
socket or a clock: a state in, a list of actions out."""

from __future__ import annotations

from sluice.core.deploy import NFSpec, OccupancyPolicy, RestartSpec
from sluice.core.reconcile import (
    Backoff,
    Drop,
    Restart,
    Slot,
    Start,
    Stop,
    Trend,
    new_label,
    occupancy_step,
    plan,
    restarts_due,
    ring_occupancy,
)

FW = ("fw", ())
SCRUB = ("scrub", ("--prefix", "10.0.0.0/8"))


def slot(label: str, state: str = "running", started: float = 0.0, **kw: object) -> Slot:
    return Slot(label, proc=object(), state=state, started_at=started, **kw)  # type: ignore[arg-type]


def test_nothing_to_do_when_each_group_has_what_it_wants() -> None:
    assert plan({FW: 2}, {FW: [slot("fw.1"), slot("fw.2")]}, now=10.0) == []


def test_missing_instances_are_started_with_the_reason() -> None:
    assert plan({FW: 3}, {FW: [slot("fw.1")]}, now=0.0) == [
        Start(FW, "'fw' wants 3 instance(s)"), Start(FW, "'fw' wants 3 instance(s)")]
    assert plan({SCRUB: 1}, {SCRUB: []}, now=0.0) == [
        Start(SCRUB, "'scrub' (args --prefix 10.0.0.0/8) wants 1 instance(s)")]


def test_surplus_stops_newest_and_not_yet_running_first() -> None:
    slots = [slot("fw.1", started=1.0), slot("fw.2", started=3.0),
             slot("fw.3", "starting", started=2.0)]
    assert plan({FW: 1}, {FW: slots}, now=5.0) == [
        Stop(FW, ("fw.3", "fw.2"), "'fw' wants 1 instance(s)")]


def test_stopping_slots_do_not_count() -> None:
    assert plan({FW: 1}, {FW: [slot("fw.1", "stopping"), slot("fw.2")]}, now=0.0) == []


def test_outdated_instances_go_once_the_new_ones_run() -> None:
    old = slot("fw.1", outdated=True)
    assert plan({FW: 1}, {FW: [old, slot("fw.2", "starting")]}, now=0.0) == []
    assert plan({FW: 1}, {FW: [old, slot("fw.2")]}, now=0.0) == [
        Stop(FW, ("fw.1",), "'fw' changed: replaced by its new instances")]
    # its replacement is not started yet: it is, and the old one waits
    assert plan({FW: 1}, {FW: [old]}, now=0.0) == [Start(FW, "'fw' wants 1 instance(s)")]


def test_a_slot_is_restarted_when_its_backoff_is_over() -> None:
    waiting = slot("fw", "backoff", restart_at=5.0)
    assert plan({FW: 1}, {FW: [waiting]}, now=4.9) == []
    assert plan({FW: 1}, {FW: [waiting]}, now=5.0) == [Restart(FW, "fw")]


def test_a_restart_no_longer_wanted_is_dropped_and_the_group_waits() -> None:
    a = slot("fw.1", "backoff", restart_at=1.0)
    b = slot("fw.2", "backoff", restart_at=1.0)
    # wants 1, has 2 active: the first due slot is dropped, the second waits a round
    assert restarts_due({FW: 1}, {FW: [a, b]}, now=2.0) == [Drop(FW, "fw.1")]
    # and the counts are judged without the dropped slot
    assert plan({FW: 1}, {FW: [a, b]}, now=2.0) == [Drop(FW, "fw.1")]
    outdated = slot("fw.1", "backoff", restart_at=1.0, outdated=True)
    assert plan({FW: 1}, {FW: [outdated]}, now=2.0) == [
        Drop(FW, "fw.1"), Start(FW, "'fw' wants 1 instance(s)")]


def test_backoff_doubles_then_gives_up() -> None:
    spec = RestartSpec(backoff_ms=100, max_backoff_ms=300, window_ms=10_000, give_up_after=4)
    b = Backoff(spec)
    assert [b.failed(t, 0.0) for t in (0.0, 1.0, 2.0)] == [0.1, 0.2, 0.3]
    assert b.failed(3.0, 0.0) is None  # the 4th failure within the window


def test_new_labels() -> None:
    one = NFSpec(name="fw", service="fw", program="sluice-firewall")
    assert new_label(one, (), set()) == "fw"
    assert new_label(one, (), {"fw"}) == "fw.2"
    assert new_label(one, ("--x",), set()) == "fw.1"
    assert new_label(one, (), {"fw.1", "fw.2"}) == "fw.3"


POL = OccupancyPolicy(on="occupancy", service="fw", above=0.8, below=0.2, for_ms=1000,
                      min=1, max=3)


def test_ring_occupancy_is_the_mean_over_running_instances() -> None:
    stats = {"nfs": [
        {"service": "fw", "rx_ring": {"count": 512, "size": 1024}},
        {"service": "fw", "rx_ring": {"count": 0, "size": 1024}},
        {"service": "fw", "state": "stopping", "rx_ring": {"count": 1024, "size": 1024}},
        {"service": "lb", "rx_ring": {"count": 1024, "size": 1024}},
    ]}
    assert ring_occupancy(stats, "fw") == 0.25
    assert ring_occupancy(stats, "nat") is None


def test_occupancy_scales_out_after_the_hold_time_then_counts_again() -> None:
    step, t = occupancy_step(POL, 0.9, False, 1, Trend(), now=10.0)
    assert (step, t) == (0, Trend(since_above=10.0, last=0.9))
    step, t = occupancy_step(POL, 0.95, False, 1, t, now=10.5)
    assert (step, t) == (0, Trend(since_above=10.0, last=0.95))
    step, t = occupancy_step(POL, 0.95, False, 1, t, now=11.0)
    assert (step, t) == (1, Trend(last=0.95))
    # at max: no more, the trend is held
    step, t = occupancy_step(POL, 0.95, False, 3, Trend(since_above=5.0), now=11.0)
    assert (step, t) == (0, Trend(since_above=5.0, last=0.95))


def test_occupancy_scales_in_down_to_min() -> None:
    assert occupancy_step(POL, 0.1, False, 2, Trend(since_below=1.0), now=2.0) == \
        (-1, Trend(last=0.1))
    assert occupancy_step(POL, 0.1, False, 1, Trend(since_below=1.0), now=2.0)[0] == 0


def test_occupancy_waits_while_busy_or_unread() -> None:
    t = Trend(since_above=1.0, since_below=None, last=0.9)
    assert occupancy_step(POL, 0.9, True, 1, t, now=5.0) == (0, Trend(last=0.9))
    assert occupancy_step(POL, None, False, 1, t, now=5.0) == (0, Trend(last=0.9))
