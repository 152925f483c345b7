"""What `sluice apply` prints for a change of `restart:` or `policies:`:
which settings and which policies changed, not "nothing to change" or a
count; and sluiced's refusals in `sluice` commands, not its methods."""

from __future__ import annotations

from pathlib import Path

import pytest
from orchestrator_fakes import BASE, dep_of, make
from test_orchestrator import MSG, OCC

from sluice.runtime.orchestrator import OrchestratorError


def test_a_restart_change_alone_says_what_changed(tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(tmp_path)
    new = dep_of(restart={**BASE["restart"], "backoff_ms": 2000, "give_up_after": 2})
    assert orch.apply(new) == [
        "restart: backoff_ms 500 -> 2000, give_up_after 4 -> 2 (from the next failure of "
        "any NF instance on)"]
    # and it acts: the next crash waits the new backoff
    (fwd,) = runner.nfs
    clock.t += 3
    fwd.popen.returncode = -9
    orch.tick()
    assert lines[-1].startswith("crashed: fwd was killed by SIGKILL after 3.0 s; restarting "
                                "in 2 s (failure 1 in a row)")
    # the same file again: nothing to change
    assert orch.apply(new) == ["apply: nothing to change: d2.yaml is what runs"]


def test_a_policies_change_says_which_policies(tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(tmp_path, policies=OCC)
    assert orch.apply(dep_of(policies=[*MSG, {**OCC[0], "max": 4}])) == [
        "policies: policies[0] added: on message alarm from fwd: start scrub (args --prefix "
        "{value}), once",
        "policies: policies[1] added: on message clear: stop scrub (args --prefix {value})",
        "policies: policies[2] added: on occupancy of service fwd: one more instance above "
        "0.75, one fewer below 0.1, held 1000 ms, 1 to 4 instance(s)",
        "policies: policies[0] removed (was on occupancy of service fwd: one more instance "
        "above 0.75, one fewer below 0.1, held 1000 ms, 1 to 3 instance(s))"]
    assert orch.apply(dep_of(policies=[MSG[1], MSG[0], {**OCC[0], "max": 4}])) == [
        "policies: the same 3 polic(ies) in a new order (a policy's log lines name it by its "
        "new place)"]
    assert orch.apply(dep_of(policies=[])) == [
        "policies: policies[0] removed (was on message clear: stop scrub (args --prefix "
        "{value}))",
        "policies: policies[1] removed (was on message alarm from fwd: start scrub (args "
        "--prefix {value}), once)",
        "policies: policies[2] removed (was on occupancy of service fwd: one more instance "
        "above 0.75, one fewer below 0.1, held 1000 ms, 1 to 4 instance(s))"]


def test_a_refusal_names_commands_not_methods(tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(tmp_path)
    sluiced.refuse["chain.set"] = "chain hop 1 'x': use a name from service.list or port.list"
    with pytest.raises(OrchestratorError) as e:
        orch.apply(dep_of(chain=["fwd", "drop"]))
    assert str(e.value).splitlines()[0] == (
        "d2.yaml: sluiced refused the chain (fwd -> drop): chain hop 1 'x': use a name from "
        "`sluice nf list` or `sluice stats`")
