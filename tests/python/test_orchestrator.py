"""The orchestrator's logic against a fake sluiced, fake processes and a fake
clock: restart backoff, give-up, occupancy and message policies, the
socket, reloads and exits (apply: test_orchestrator_apply.py)."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest
from orchestrator_fakes import (
    BASE,
    Clock,
    FakeRunner,
    FakeSluiced,
    dep_of,
    make,
)

from sluice.core.deploy import Deployment, RestartSpec
from sluice.runtime.orchestrator import (
    Backoff,
    Orchestrator,
    OrchestratorError,
    request,
    substitute,
)

# -- backoff ------------------------------------------------------------------------------

def test_backoff_doubles_up_to_max_then_gives_up_in_the_window() -> None:
    b = Backoff(RestartSpec(backoff_ms=500, max_backoff_ms=1500, stable_ms=10000,
                            give_up_after=5, window_ms=60000))
    assert [b.failed(t, 1.0) for t in (0, 2, 4, 6)] == [0.5, 1.0, 1.5, 1.5]
    assert b.failed(8, 1.0) is None  # the 5th failure within 60 s


def test_backoff_stable_run_resets_the_delay_and_window_forgets() -> None:
    b = Backoff(RestartSpec(backoff_ms=100, max_backoff_ms=10000, stable_ms=5000,
                            give_up_after=3, window_ms=10000))
    assert b.failed(0, 0.1) == 0.1
    assert b.failed(1, 0.1) == 0.2
    assert b.failed(20, 6.0) == 0.1  # ran 6 s >= stable 5 s: first in a row again
    assert b.failed(21, 0.1) == 0.2  # the failures at 0 and 1 left the 10 s window
    assert b.failed(22, 0.1) is None  # 3 within 10 s: 20, 21, 22


def test_substitute() -> None:
    assert substitute(["--prefix", "{value}", "{key}:{from}", "x"], "alarm", "10.0.0.0/24",
                      "ddos-detect") == ("--prefix", "10.0.0.0/24", "alarm:ddos-detect", "x")


# -- restarts -------------------------------------------------------------------------------

def test_crashed_nf_is_restarted_after_backoff(tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(tmp_path)
    orch.tick()
    assert runner.spawned == [] and lines == []
    victim = runner.nfs[0]
    victim.popen.returncode = -signal.SIGKILL
    clock.advance(3.0)
    orch.tick()
    assert lines == ["crashed: fwd was killed by SIGKILL after 3.0 s; restarting in 0.5 s "
                     "(failure 1 in a row); see /tmp/fwd.log"]
    clock.advance(0.4)
    orch.tick()
    assert runner.spawned == []
    clock.advance(0.1)
    orch.tick()
    assert len(runner.spawned) == 1 and runner.spawned[0].label == "fwd"
    assert lines[1] == (f"start: fwd (pid {runner.spawned[0].pid}): restart 1 after it was "
                        f"killed by SIGKILL")
    st = orch.status()["instances"]
    assert [(i["label"], i["state"], i["restarts"]) for i in st] == [("fwd", "running", 1)]
    # a second crash soon after waits twice as long
    runner.spawned[0].popen.returncode = 3
    clock.advance(1.0)
    orch.tick()
    assert lines[2].startswith("crashed: fwd exited with status 3 after 1.0 s; restarting in "
                               "1 s (failure 2 in a row)")


def test_gives_up_after_n_failures_and_apply_retries(tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(tmp_path)
    for _ in range(4):
        (runner.spawned or runner.nfs)[-1].popen.returncode = 1
        orch.tick()
        clock.advance(5.0)
        orch.tick()
    assert lines[-1] == ("gave-up: fwd exited with status 1: 4 failures within 60 s "
                         "(restart.give_up_after 4): not restarting it; `sluice apply` tries "
                         "again; see /tmp/fwd.log")
    n = len(runner.spawned)
    assert n == 3
    clock.advance(100)
    orch.tick()
    assert len(runner.spawned) == n
    assert orch.status()["instances"][0]["state"] == "failed"
    out = orch.apply(dep_of())
    assert out == ["retry: fwd: failed before; starting it again"]
    orch.tick()
    assert len(runner.spawned) == n + 1


def test_nf_that_never_registers_is_killed_and_counted(tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(tmp_path)
    runner.nfs[0].popen.returncode = -9
    orch.tick()
    clock.advance(0.5)
    sluiced.unregistered.add(runner.next_pid + 1)  # the restarted one never registers
    orch.tick()
    new = runner.spawned[0]
    assert orch.status()["instances"][0]["state"] == "starting"
    clock.advance(21)
    orch.tick()
    assert new.popen.returncode == -signal.SIGKILL
    assert lines[-1].startswith("crashed: fwd did not register within 20 s after 21.0 s; "
                                "restarting in 1 s (failure 2 in a row)")


# -- occupancy policy ---------------------------------------------------------------------

OCC = [{"on": "occupancy", "service": "fwd", "above": 0.75, "below": 0.1, "for_ms": 1000,
        "min": 1, "max": 3}]


def test_occupancy_scales_out_when_it_stays_above_and_in_when_below(tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(tmp_path, policies=OCC)
    sluiced.ring["fwd"] = 0.9
    for _ in range(5):  # 0.8 s above: not long enough
        orch.tick()
        clock.advance(0.2)
    assert runner.spawned == []
    sluiced.ring["fwd"] = 0.5  # a dip restarts the count
    orch.tick()
    clock.advance(0.2)
    sluiced.ring["fwd"] = 0.9
    for _ in range(6):
        orch.tick()
        clock.advance(0.2)
    assert lines[0] == ("scale-out: 'fwd' 1 -> 2: service fwd rx ring occupancy 0.89 above "
                        "0.75 for 1000 ms (policies[0])")
    assert [p.label for p in runner.spawned] == ["fwd.2"]
    assert lines[1] == f"start: fwd.2 (pid {runner.spawned[0].pid}): 'fwd' wants 2 instance(s)"
    # the new instance idles: the mean is 0.45, between the bounds: nothing more
    for p in runner.spawned:
        sluiced.ring_override = p
    orch.tick()
    clock.advance(0.2)
    sluiced.ring["fwd"] = 0.0
    for _ in range(7):
        orch.tick()
        clock.advance(0.2)
    assert lines[2] == ("scale-in: 'fwd' 2 -> 1: service fwd rx ring occupancy 0.00 below 0.1 "
                        "for 1000 ms (policies[0])")
    stopped = runner.spawned[0]
    assert lines[3] == (f"stop: fwd.2 (pid {stopped.pid}, nf.stop instance "
                        f"{sluiced.instances[stopped.pid]}): 'fwd' wants 1 instance(s)")
    for _ in range(10):  # at min: stays
        orch.tick()
        clock.advance(0.2)
    assert len(lines) == 4 and stopped.exited() == 0
    assert [i["label"] for i in orch.status()["instances"]] == ["fwd"]


def test_occupancy_stops_at_max(tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(
        tmp_path, policies=[{**OCC[0], "max": 2, "for_ms": 0}])
    sluiced.ring["fwd"] = 1.0
    for _ in range(20):
        orch.tick()
        clock.advance(0.2)
    assert [ln.split(":")[0] for ln in lines] == ["scale-out", "start"]
    assert len([p for p in runner.nfs if p.exited() is None]) == 2


# -- message policy -----------------------------------------------------------------------

MSG = [{"on": "message", "key": "alarm", "from": "fwd", "action": "start", "nf": "scrub",
        "args": ["--prefix", "{value}"], "once": True},
       {"on": "message", "key": "clear", "action": "stop", "nf": "scrub",
        "args": ["--prefix", "{value}"]}]


def test_message_starts_nf_with_substituted_args_once_per_value(tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(tmp_path, policies=MSG)
    orch.on_message({"nf": "fwd", "instance": 0, "key": "alarm", "value": "10.0.0.0/24"})
    orch.on_message({"nf": "other", "key": "alarm", "value": "10.9.0.0/24"})  # not from fwd
    orch.on_message({"from": "control", "key": "noise", "value": "x"})
    orch.tick()
    assert lines[0] == ("start: 'scrub' (args --prefix 10.0.0.0/24): 0 -> 1 instance(s): "
                        "message alarm=10.0.0.0/24 from fwd (policies[0])")
    (p,) = runner.spawned
    assert p.label == "scrub.1"
    assert p.argv == ["sluice-forward", "--tag-src-mac", "--prefix", "10.0.0.0/24"]
    # the same alarm again: nothing; another value: another instance
    orch.on_message({"nf": "fwd", "key": "alarm", "value": "10.0.0.0/24"})
    orch.on_message({"nf": "fwd", "key": "alarm", "value": "10.1.0.0/24"})
    orch.tick()
    assert [q.label for q in runner.spawned] == ["scrub.1", "scrub.2"]
    assert runner.spawned[1].argv[-1] == "10.1.0.0/24"
    # clear stops that group only; once: the same alarm does not start it again
    orch.on_message({"from": "control", "key": "clear", "value": "10.0.0.0/24"})
    orch.tick()
    assert lines[-2] == ("stop: 'scrub' (args --prefix 10.0.0.0/24): 1 -> 0 instance(s): "
                         "message clear=10.0.0.0/24 from control (policies[1])")
    assert lines[-1].startswith(f"stop: scrub.1 (pid {p.pid}, nf.stop instance")
    orch.tick()
    assert p.exited() == 0 and runner.spawned[1].exited() is None
    orch.on_message({"nf": "fwd", "key": "alarm", "value": "10.0.0.0/24"})
    orch.tick()
    assert len(runner.spawned) == 2
    assert [i["label"] for i in orch.status()["instances"]] == ["fwd", "scrub.2"]


def test_message_scale_sets_the_files_instances(tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(tmp_path, policies=[
        {"on": "message", "key": "load", "action": "scale", "nf": "fwd", "replicas": 3}])
    orch.on_message({"from": "control", "key": "load", "value": "high"})
    orch.tick()
    assert lines[0] == ("scale: 'fwd': 1 -> 3 instance(s): message load=high from control "
                        "(policies[0])")
    assert [p.label for p in runner.spawned] == ["fwd.2", "fwd.3"]


# -- the socket, reloads and exits ---------------------------------------------------------

def test_socket_apply_and_status(tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(
        tmp_path, node={"name": "t", "socket": str(tmp_path / "t.sock")})
    f = tmp_path / "d.yaml"
    f.write_text("node: {name: t, socket: t.sock}\n"
                 "ports: [{name: in, device: net_null0}, {name: out, device: net_null1}]\n"
                 "nfs: [{name: fwd, program: /bin/true, service: fwd, replicas: 2}]\n"
                 "chain: [fwd, 'port:out']\n")
    dep = Deployment.from_dict({**BASE, "node": {"name": "t", "socket": str(tmp_path / "t.sock")}},
                               check_env=False)
    orch._serve = True
    with orch:
        assert orch.sock_path == tmp_path / "t.orchestrator"
        st = request(dep, "status")
        assert [i["label"] for i in st["instances"]] == ["fwd"]
        res = request(dep, "apply", path=str(f))
        assert "replicas: NF 'fwd': 1 -> 2" in res["applied"]
        with pytest.raises(OrchestratorError) as e:
            request(dep, "apply", path=str(tmp_path / "missing.yaml"))
        assert str(e.value) == f"{tmp_path / 'missing.yaml'}: no such file"
    assert not orch.sock_path.exists()
    log = (tmp_path / "orchestrator.log").read_text()
    assert "replicas: NF 'fwd': 1 -> 2" in log and "refused: " in log


def test_sighup_reload_reads_the_running_file_again(tmp_path: Path) -> None:
    from sluice.core.deploy import load_deployment

    f = tmp_path / "d.yaml"
    text = ("node: {name: t}\n"
            "ports: [{name: in, device: net_null0}, {name: out, device: net_null1}]\n"
            "nfs: [{name: fwd, program: /bin/true, service: fwd, replicas: 1}]\n"
            "chain: [fwd, 'port:out']\n")
    f.write_text(text)
    dep = load_deployment(f, check_env=False)
    runner = FakeRunner(dep, tmp_path)
    lines: list[str] = []
    orch = Orchestrator(runner, client=FakeSluiced(runner), clock=Clock(), say=lines.append,
                        serve=False, subscribe=False)
    f.write_text(text.replace("replicas: 1", "replicas: 2"))
    orch.reload.set()
    orch.tick()
    assert lines[:2] == [f"reload: SIGHUP: reading {f} again", "replicas: NF 'fwd': 1 -> 2"]
    assert [p.label for p in runner.spawned] == ["fwd.2"]
    orch.reload.set()
    orch.tick()  # the same file again
    assert lines[-2:] == [f"reload: SIGHUP: reading {f} again",
                          f"apply: nothing to change: {f} is what runs"]
    f.write_text(text.replace("chain: [fwd", "chain: [fw"))
    orch.reload.set()
    orch.tick()
    assert lines[-1].startswith(f"refused: {f}: chain[0]: 'fw' is not the service")
    assert orch.dep.nfs[0].replicas == 2


def test_container_nf_command_line_is_wrapped(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    import sluice.runtime.container
    from sluice.runtime.launch import Launcher

    seen: list[tuple[list[str], dict[str, Any]]] = []

    def wrap(argv: list[str], **kw: Any) -> list[str]:
        seen.append((argv, kw))
        return ["podman", "run", kw["image"], *argv]

    monkeypatch.setattr(sluice.runtime.container, "wrap", wrap)
    dep = Deployment.from_dict({**BASE, "nfs": [
        {"name": "fwd", "program": "sluice-forward", "service": "fwd", "run": "container",
         "image": "nfs:1", "args": ["--tag-src-mac"]}]}, base_dir=tmp_path, check_env=False)
    run = Launcher(dep, log_dir=tmp_path)
    argv = run.nf_argv(dep.nfs[0], "sluice-forward", ["--x"], label="fwd.2")
    assert seen == [(["sluice-forward", "--", "--node", "t", "--service", "fwd", "--mode",
                      "shared", "--tag-src-mac", "--x"],
                     {"name": "fwd.2", "image": "nfs:1", "node": "t", "workdir": tmp_path})]
    assert argv[:3] == ["podman", "run", "nfs:1"]


def test_an_nf_sluiced_killed_as_hung_is_said_to_be_hung(tmp_path: Path) -> None:
    """sluiced publishes nf.hung, then SIGKILLs the NF: the restart line says
    it hung, not that it crashed of itself. A SIGKILL exit waits a moment
    for that event; one with no such event is a plain kill."""
    orch, runner, sluiced, clock, lines = make(tmp_path, nfs=[
        {"name": "fwd", "program": "sluice-forward", "service": "fwd", "replicas": 2}])
    orch.subscribed = True
    orch.tick()
    a, b = runner.nfs
    a.popen.returncode = b.popen.returncode = -signal.SIGKILL
    clock.advance(2.0)
    orch.tick()
    assert lines == []  # nf.hung may be a moment behind the exit
    orch.events.put({"kind": "nf.hung", "ts": 0.0, "data": {
        "instance": 0, "service": "fwd", "pid": a.pid, "hang_ms": 1000}})
    clock.advance(0.1)
    orch.tick()
    assert lines == [f"crashed: fwd.1 was hung (no heartbeat for 1000 ms) and killed by "
                     f"sluiced (SIGKILL; --nf-hang-ms) after 2.1 s; restarting in 0.5 s "
                     f"(failure 1 in a row); see {a.log}"]
    clock.advance(0.4)
    orch.tick()  # b: no nf.hung within HUNG_EVENT_WAIT_S
    assert lines[1] == (f"crashed: fwd.2 was killed by SIGKILL after 2.5 s; restarting in "
                        f"0.5 s (failure 1 in a row); see {b.log}")


# -- exits with status 0, and the event subscription --------------------------------------------

def _nf_down(pid: int, reason: str) -> dict[str, Any]:
    return {"kind": "nf.down", "ts": 0.0,
            "data": {"instance": 0, "service": "fwd", "pid": pid, "reason": reason}}


def test_clean_stop_asked_elsewhere_is_not_restarted_until_the_next_apply(
        tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(tmp_path)
    orch.tick()
    (p,) = runner.nfs
    # `sluice nf stop`: sluiced says it deregistered, then it exits 0
    orch.events.put(_nf_down(p.pid, "stopped"))
    p.popen.returncode = 0
    clock.advance(2.0)
    orch.tick()
    assert lines == [
        f"stopped: fwd (pid {p.pid}) stopped cleanly after 2.0 s, asked by someone else than "
        f"the orchestrator (sluice nf stop, the REST API, nf.scale or SIGTERM): not "
        f"restarting it; 'fwd' now wants 0 instance(s) until `sluice apply` (or SIGHUP) "
        f"starts it again"]
    clock.advance(60.0)
    orch.tick()
    assert runner.spawned == [] and len(lines) == 1
    assert {g["nf"]: (g["want"], g["stopped_outside"]) for g in orch.status()["groups"]} \
        == {"fwd": (0, 1), "scrub": (0, 0)}
    # applying the file (even unchanged) starts it again
    assert orch.apply(dep_of()) == [
        "restore: 'fwd': 0 -> 1 instance(s): 1 stopped outside the orchestrator before"]
    assert [s.label for s in runner.spawned] == ["fwd"]


def test_unexpected_exit_0_is_restarted_as_exited_not_crashed(tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(tmp_path)
    orch.tick()
    (p,) = runner.nfs
    p.popen.returncode = 0  # no nf.down 'stopped': it did not deregister first
    clock.advance(3.0)
    orch.tick()
    assert lines == [f"exited: fwd exited with status 0 after 3.0 s without being asked to "
                     f"stop; restarting in 0.5 s (failure 1 in a row); see {p.log}"]
    clock.advance(0.5)
    orch.tick()
    assert lines[-1] == "start: fwd (pid 102): restart 1 after it exited with status 0"
    assert not [ln for ln in lines if ln.startswith("crashed")]


def test_with_events_an_exit_0_waits_a_moment_for_sluiceds_word(tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(tmp_path, nfs=[
        {"name": "fwd", "program": "sluice-forward", "service": "fwd", "replicas": 2}])
    orch.subscribed = True  # as when the event subscription is live
    orch.tick()
    a, b = runner.nfs
    a.popen.returncode = b.popen.returncode = 0
    orch.tick()
    assert lines == []  # nf.down may come just after the exit is seen
    clock.advance(0.5)
    orch.events.put(_nf_down(a.pid, "stopped"))
    orch.tick()
    assert [ln.split(" (pid")[0] for ln in lines] == ["stopped: fwd.1"]
    orch.events.put(_nf_down(b.pid, "died"))  # no word of a clean stop for b
    clock.advance(0.6)
    orch.tick()
    assert lines[-1].startswith("exited: fwd.2 exited with status 0 after ")
    assert not runner.spawned  # b after its backoff; a not at all
    clock.advance(0.5)
    orch.tick()
    assert [s.label for s in runner.spawned] == ["fwd.2"]


def test_status_says_whether_the_event_subscription_is_live(tmp_path: Path) -> None:
    """subscribed: true once sluiced has answered subscribe, false when the
    connection breaks (until it subscribes again)."""
    import json
    import socket
    import threading
    import time

    path = tmp_path / "t.sock"
    conns: list[socket.socket] = []

    def listen() -> socket.socket:
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(str(path))
        srv.listen(4)

        def serve() -> None:
            while True:
                try:
                    c, _ = srv.accept()
                except OSError:
                    return
                req = json.loads(c.makefile().readline())
                assert req["method"] == "subscribe"
                # kept open: events would come on it (listed before the answer,
                # which the test may see before this thread runs on)
                conns.append(c)
                c.sendall(json.dumps({"jsonrpc": "2.0", "id": req["id"],
                                      "result": {"subscribed": True}}).encode() + b"\n")

        threading.Thread(target=serve, daemon=True).start()
        return srv

    def wait_for(want: bool) -> None:
        deadline = time.monotonic() + 10
        while orch.status()["subscribed"] is not want:
            assert time.monotonic() < deadline, f"status never said subscribed: {want}"
            time.sleep(0.02)

    orch, runner, sluiced, clock, lines = make(
        tmp_path, node={"name": "t", "socket": str(path)})
    orch._subscribe = True
    assert orch.status()["subscribed"] is False
    srv = listen()
    with orch:
        wait_for(True)
        srv.close()
        path.unlink()  # sluiced gone: the subscription breaks and cannot be made again
        conns[0].close()
        wait_for(False)
        time.sleep(0.6)  # it tried again (every 0.5 s) and failed
        assert orch.status()["subscribed"] is False
        srv = listen()  # back: subscribed again
        wait_for(True)
        assert len(conns) == 2
    srv.close()
    assert orch.status()["subscribed"] is False


def test_one_way_to_say_how_a_process_ended() -> None:
    """The orchestrator's lines (crashed: ...) and the launcher's errors say
    an exit with the same function, so they cannot drift apart."""
    from sluice.runtime import launch, orchestrator

    assert orchestrator._status_text is launch._status_text
    assert [launch._status_text(rc) for rc in (-signal.SIGKILL, -200, 0, 3)] == [
        "was killed by SIGKILL", "was killed by signal 200", "exited with status 0",
        "exited with status 3"]
