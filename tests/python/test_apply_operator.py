"""`sluice apply` as an operator uses it over a long run (docs/deployment.md,
"Changing a running deployment"): what each apply prints is what happens.

Found by running examples/demo.yaml and applying edits of it: an apply that
removed an NF whose instance had been given up printed `retry: ... starting it
again` for that instance (then stopped it), and a file that wrote down
sluiced's default for a node key (`ring_size: 4096`) or listed the same CPUs in
another order in shared mode was refused as a change of the node."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from orchestrator_fakes import BASE, dep_of, make
from test_deploy import DEMO, errors_of, write
from test_deploy import site as _site

from sluice.core.deploy import SLUICED_DEFAULTS
from sluice.runtime.orchestrator import OrchestratorError


def _give_up(orch, runner, clock, label: str) -> None:  # type: ignore[no-untyped-def]
    """Crashes the instance LABEL until the orchestrator gives it up (4 failures)."""
    for _ in range(4):
        proc = [p for p in runner.nfs if p.label == label][-1]
        proc.popen.returncode = 1
        orch.tick()
        clock.advance(5.0)
        orch.tick()
    st = {i["label"]: i["state"] for i in orch.status()["instances"]}
    assert st[label] == "failed"


def test_apply_removing_an_nf_does_not_retry_its_failed_instance(tmp_path: Path) -> None:
    nfs = [*BASE["nfs"], {"name": "mon", "program": "sluice-monitor", "service": "mon"}]
    orch, runner, sluiced, clock, lines = make(tmp_path, nfs=nfs)
    _give_up(orch, runner, clock, "mon")
    n = len(runner.spawned)
    out = orch.apply(dep_of())  # the file without 'mon'
    assert out == ["remove: NF 'mon': its instances stop"]
    assert lines[-1] == "stop: mon (not running): 'mon' wants 0 instance(s)"
    clock.advance(10)
    orch.tick()
    assert len(runner.spawned) == n  # nothing of 'mon' started again
    assert [i["label"] for i in orch.status()["instances"]] == ["fwd"]


def test_apply_lowering_replicas_retries_only_the_failed_instances_still_wanted(
        tmp_path: Path) -> None:
    nfs = [{"name": "fwd", "program": "sluice-forward", "service": "fwd", "replicas": 3},
           BASE["nfs"][1]]
    orch, runner, sluiced, clock, lines = make(tmp_path, nfs=nfs)
    _give_up(orch, runner, clock, "fwd.2")
    _give_up(orch, runner, clock, "fwd.3")
    n = len(runner.spawned)
    out = orch.apply(dep_of(nfs=[{**nfs[0], "replicas": 2}, nfs[1]]))
    # 2 wanted, fwd.1 runs: one of the two failed ones is tried again, not both
    assert out == ["replicas: NF 'fwd': 3 -> 2",
                   "retry: fwd.2: failed before; starting it again"]
    assert lines[-1] == "stop: fwd.3 (not running): 'fwd' wants 2 instance(s)"
    orch.tick()
    assert [p.label for p in runner.spawned[n:]] == ["fwd.2"]
    assert sorted((i["label"], i["state"]) for i in orch.status()["instances"]) == [
        ("fwd.1", "running"), ("fwd.2", "running")]


def test_apply_of_a_replaced_nf_does_not_retry_its_old_failed_instance(
        tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(tmp_path)
    _give_up(orch, runner, clock, "fwd")
    changed = {**BASE["nfs"][0], "args": ["--tag-src-mac"]}
    out = orch.apply(dep_of(nfs=[changed, BASE["nfs"][1]]))
    assert out == ["replace: NF 'fwd' changed (args: [] -> ['--tag-src-mac']): new instances "
                   "start, then the old ones stop"]
    assert not any(line.startswith("retry:") for line in lines)
    orch.tick()
    assert [(i["label"], i["state"]) for i in orch.status()["instances"]] == [
        ("fwd.2", "running")]


def test_apply_still_retries_a_failed_instance_of_an_unchanged_file(tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(tmp_path)
    _give_up(orch, runner, clock, "fwd")
    assert orch.apply(dep_of()) == ["retry: fwd: failed before; starting it again"]


@pytest.mark.parametrize("key", sorted(SLUICED_DEFAULTS))
def test_apply_takes_a_node_key_written_down_with_sluiceds_default(tmp_path: Path,
                                                                   key: str) -> None:
    orch, runner, sluiced, clock, lines = make(tmp_path)
    new = dep_of(node={"name": "t", key: SLUICED_DEFAULTS[key]})
    assert orch.apply(new) == ["apply: nothing to change: d2.yaml is what runs"]
    assert orch.dep is new and runner.spawned == [] and sluiced.calls == []


def test_sluiced_defaults_are_sluiceds() -> None:
    """The defaults (read from the built sluiced) match the option table in
    src/mgr/options.c, which sluiced's parser sets them from."""
    src = (Path(__file__).resolve().parents[2] / "src/mgr/options.c").read_text()
    for key, v in SLUICED_DEFAULTS.items():
        opt = key.replace("_", "-")
        if key == "handoff":  # a choice: the default is an index of its words
            assert 'CHOICE("handoff", handoff, handoff_words, 0,' in src
            assert 'handoff_words[] = {"direct", "mgr", NULL}' in src and v == "direct"
            continue
        assert re.search(rf'NUM\("{opt}", "[^"]+", {key}, [^,]+, [^,]+, {v},', src), key


def test_apply_still_refuses_a_node_key_that_differs_from_the_default(tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(tmp_path)
    with pytest.raises(OrchestratorError) as e:
        orch.apply(dep_of(node={"name": "t", "ring_size": 8192, "handoff": "mgr"}))
    assert str(e.value).splitlines() == [
        "d2.yaml: node.handoff: unset -> 'mgr' cannot change while the node runs: stop "
        "`sluice up` and start it again with the new file (nothing was applied)",
        "d2.yaml: node.ring_size: unset -> 8192 cannot change while the node runs: stop "
        "`sluice up` and start it again with the new file (nothing was applied)"]
    # and back: a file that sets the default, then one that leaves it out
    orch2, *_ = make(tmp_path, node={"name": "t", "ring_size": 4096})
    assert orch2.apply(dep_of()) == ["apply: nothing to change: d2.yaml is what runs"]


def test_apply_takes_the_same_cores_in_another_order_in_shared_mode(tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(tmp_path, node={"name": "t", "cores": [0]})
    assert orch.apply(dep_of(node={"name": "t", "cores": [0]})) == [
        "apply: nothing to change: d2.yaml is what runs"]
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.fail("this test needs 2 CPUs to list them in two orders")
    a, b = cpus[:2]
    orch, runner, sluiced, clock, lines = make(tmp_path, node={"name": "t", "cores": [a, b]})
    assert orch.apply(dep_of(node={"name": "t", "cores": [b, a]})) == [
        "apply: nothing to change: d2.yaml is what runs"]
    # poll mode pins sluiced to the first two: there the order is a change
    poll = {"name": "t", "mode": "poll", "cores": [a, b]}
    orch, runner, sluiced, clock, lines = make(tmp_path, node=poll)
    with pytest.raises(OrchestratorError) as e:
        orch.apply(dep_of(node={**poll, "cores": [b, a]}))
    assert str(e.value) == (
        f"d2.yaml: node.cores: [{a}, {b}] -> [{b}, {a}] cannot change while the node runs: "
        f"stop `sluice up` and start it again with the new file (nothing was applied)")


# -- a program that does not exist ----------------------------------------------------

nf_site = pytest.fixture(_site.__wrapped__)  # test_deploy's: a fake build of 3 NFs; cwd

@pytest.mark.parametrize("program, hint", [
    # 'sluice-' alone made any two NF names look alike: this got "did you mean
    # 'sluice-speedtest'?"
    ("sluice-nope", "; the NFs built there: sluice-firewall, sluice-forward, sluice-monitor"),
    ("tcpdumpx", "; the NFs built there: sluice-firewall, sluice-forward, sluice-monitor"),
    ("sluice-monitr", "; did you mean 'sluice-monitor'?"),
    ("sluice-frward", "; did you mean 'sluice-forward'?"),
])
def test_program_not_found_names_a_close_nf_or_lists_the_built_ones(
        nf_site: Path, program: str, hint: str) -> None:
    p = write(nf_site, DEMO.replace("sluice-monitor", program))
    assert errors_of(p) == [
        f"d.yaml: nfs[1].program: '{program}' not found (looked in build/nfs/*/ and PATH)"
        f"{hint}"]
