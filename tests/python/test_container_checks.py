"""`run: container` NFs: what the file checks say, the same for every command,
and how the launcher reports a container NF's death. Needs no container
runtime, DPDK or root (tests/integration/test_container.py runs them)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from sluice.cli import app
from sluice.core.deploy import Deployment, DeploymentError, container_program_problem
from sluice.runtime import container
from sluice.runtime.container import ContainerError

runner = CliRunner()

NOT_AN_NF = ("nfs[2].program: 'tcpdump' is not a Sluice NF, and only the Sluice NFs built in "
             "build/nfs/ (sluice-*) are in the container image: use run: process for it")


def _deployment(tmp_path: Path, program: str) -> Path:
    build = tmp_path / "build"
    for nf in ("forward", "monitor"):
        exe = build / "nfs" / nf / f"sluice-{nf}"
        exe.parent.mkdir(parents=True)
        exe.write_text("#!/bin/sh\n")
        exe.chmod(0o755)
    path = tmp_path / "dep.yaml"
    path.write_text(f"""\
node: {{name: cprog, cores: [0]}}
ports:
  - {{name: in, device: net_null0}}
  - {{name: out, device: "net_null1,no-rx=1"}}
nfs:
  - {{name: fwd, program: sluice-forward, service: forward}}
  - {{name: mon, program: sluice-monitor, service: monitor, run: container}}
  - {{name: dump, program: {program}, service: dump, run: container}}
chain: [forward, monitor, dump, "port:out"]
""")
    return path


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SLUICE_BUILD_DIR", str(tmp_path / "build"))
    return tmp_path


def test_check_up_and_apply_refuse_a_container_program_alike(in_tmp: Path) -> None:
    """`sluice check` refuses what `sluice up` and `sluice apply` refuse, with
    the same line (one validation path: the deployment's)."""
    _deployment(in_tmp, "sluice-forward")
    ok = runner.invoke(app, ["check", "dep.yaml"])
    assert ok.exit_code == 0, ok.output  # the same file with a Sluice NF passes
    bad = _deployment(in_tmp / "bad", "tcpdump")
    outs = {}
    for cmd in ("check", "up", "apply"):
        r = runner.invoke(app, [cmd, str(bad.relative_to(in_tmp))])
        assert r.exit_code == 1, (cmd, r.output)
        outs[cmd] = r.stderr
    assert outs["check"] == f"bad/dep.yaml: {NOT_AN_NF}\n"
    assert outs["up"] == outs["check"] and outs["apply"] == outs["check"]


def test_programs_by_path_and_the_launcher_path(tmp_path: Path) -> None:
    """A path is judged by its file name; Deployment.from_dict (the
    launcher's and the orchestrator's way in) says the same."""
    assert container_program_problem("/x/build/nfs/forward/sluice-forward") is None
    assert container_program_problem("sluice-forward") is None
    data = {"ports": [{"name": "out", "device": "net_null0"}],
            "nfs": [{"name": "t", "program": "/bin/true", "service": "t", "run": "container"}],
            "chain": ["t", "port:out"]}
    with pytest.raises(DeploymentError) as e:
        Deployment.from_dict(data, check_env=False)
    assert e.value.issues == [
        "<deployment>: nfs[0].program: '/bin/true' is not a Sluice NF, and only the Sluice "
        "NFs built in build/nfs/ (sluice-*) are in the container image: use run: process "
        "for it"]
    data["nfs"][0]["run"] = "process"
    Deployment.from_dict(data, check_env=False)  # a process may run anything


def test_wrap_says_what_check_says() -> None:
    """wrap() refuses the same programs with the same words (before it looks
    for a container runtime)."""
    with pytest.raises(ContainerError) as e:
        container.wrap(["/usr/sbin/tcpdump", "--", "-i", "x"], name="dump", node="n")
    assert str(e.value) == container_program_problem("/usr/sbin/tcpdump") == (
        "'/usr/sbin/tcpdump' is not a Sluice NF, and only the Sluice NFs built in build/nfs/ "
        "(sluice-*) are in the container image: use run: process for it")


class _Exited:
    def __init__(self, rc: int):
        self.returncode = rc
        self.pid = 4242

    def poll(self) -> int:
        return self.returncode


@pytest.mark.parametrize(("run", "rc", "status"), [
    ("container", 137, -9),    # podman run: the NF was killed by SIGKILL
    ("container", 143, -15),   # ... by SIGTERM
    ("container", 125, 125),   # the runtime's own failure
    ("container", 1, 1),
    ("container", 0, 0),
    ("container", 200, 200),   # no signal 72
    ("process", 137, 137),     # a host NF's own exit status is kept
    ("process", -9, -9),
])
def test_a_container_nf_killed_by_a_signal_is_reported_as_killed(run: str, rc: int,
                                                                 status: int) -> None:
    from sluice.core.deploy import NFSpec
    from sluice.runtime.launch import Proc, _status_text

    nf = NFSpec(name="fwd", program="sluice-forward", service="forward", run=run)
    p = Proc("fwd", ["podman"], Path("/nonexistent"), popen=_Exited(rc), nf=nf)  # type: ignore[arg-type]
    assert p.exited() == status
    if (run, rc) == ("container", 137):
        from sluice.runtime import orchestrator

        # the launcher's and the orchestrator's words, as for a host NF's -9
        assert _status_text(p.exited()) == _status_text(-9) == "was killed by SIGKILL"
        assert orchestrator._status_text(p.exited()) == "was killed by SIGKILL"
