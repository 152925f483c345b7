"""The DDoS example's capture can be made by a command (`sluice trace gen
--ddos`), the example and `sluice
check` point there, not to the plain `sluice trace gen` mix, which has no
attack in it."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sluice.cli import app
from sluice.core.deploy import DeploymentError, load_deployment
from sluice.runtime import traces

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "ddos.yaml"
runner = CliRunner()


def test_gen_ddos_makes_the_example_capture(tmp_path: Path) -> None:
    out = tmp_path / "ddos.pcap"
    assert traces.generate(out, ddos=True) == (
        f"{out}: 6000 packets, 456 flows, DDoS mix (200 clients; 2119 attack packets, DNS "
        f"queries, from 10.66.6.0/24), 1041574 bytes of frames (seed 1)")
    # the very capture `sluice up examples/ddos.yaml` makes
    frames = traces.read_pcap(out)
    assert frames == traces.ddos_mix(**traces.GENERATED["ddos.pcap"])
    assert sum(traces.in_prefix(f, "10.66.6.0/24") for f in frames) == 2119


def test_gen_ddos_options(tmp_path: Path) -> None:
    out = tmp_path / "syn.pcap"
    assert traces.generate(out, packets=400, ddos=True, clients=10,
                           attack_prefix="10.9.0.0/16", syn=True, seed=3) == (
        f"{out}: 400 packets, 114 flows, DDoS mix (10 clients; 149 attack packets, TCP SYNs "
        f"to port 80, from 10.9.0.0/16), 69116 bytes of frames (seed 3)")
    frames = traces.read_pcap(out)
    assert frames == traces.ddos_mix(400, 10, "10.9.0.0/16", syn=True, seed=3)
    assert sum(traces.in_prefix(f, "10.9.0.0/16") for f in frames) == 149
    assert sum(map(len, frames)) == 69116


@pytest.mark.parametrize(("kw", "message"), [
    ({"ddos": True, "size": 64}, "--ddos makes the DDoS mix, which takes --packets, "
                                 "--clients, --attack-prefix, --syn and --seed: drop --size "
                                 "and --flows"),
    ({"syn": True}, "--clients, --attack-prefix and --syn are options of the DDoS mix: add "
                    "--ddos"),
    ({"attack_prefix": "10.1.0.0/16"}, "--clients, --attack-prefix and --syn are options of "
                                       "the DDoS mix: add --ddos"),
])
def test_gen_ddos_errors(tmp_path: Path, kw: dict, message: str) -> None:
    with pytest.raises(traces.TraceError) as e:
        traces.generate(tmp_path / "x.pcap", **kw)
    assert str(e.value) == message
    assert not (tmp_path / "x.pcap").exists()


def test_command_line(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "sluice", "trace", "gen", "--ddos", "d.pcap"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout == ("d.pcap: 6000 packets, 456 flows, DDoS mix (200 clients; 2119 attack "
                        "packets, DNS queries, from 10.66.6.0/24), 1041574 bytes of frames "
                        "(seed 1)\n")
    r = subprocess.run([sys.executable, "-m", "sluice", "trace", "gen", "--syn", "x.pcap"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr == ("sluice trace gen: --clients, --attack-prefix and --syn are options of "
                        "the DDoS mix: add --ddos\n")


def _fake_build(tmp_path: Path) -> Path:
    build = tmp_path / "build"
    for nf in ("ddos-detect", "forward", "scrubber"):
        exe = build / "nfs" / nf / f"sluice-{nf}"
        exe.parent.mkdir(parents=True)
        exe.write_text("#!/bin/sh\n")
        exe.chmod(0o755)
    return build


def test_a_copy_of_the_example_is_told_the_ddos_command(tmp_path: Path) -> None:
    """`sluice check` of a copy without its capture names the command in the
    example's comment; that command makes a capture with the attack in it,
    and then the copy passes."""
    build = _fake_build(tmp_path)
    site = tmp_path / "site"
    site.mkdir()
    copy = site / "ddos.yaml"
    shutil.copy(EXAMPLE, copy)
    with pytest.raises(DeploymentError) as e:
        load_deployment(copy, build_dir=build)
    pcap = site / "traces" / "ddos.pcap"
    assert e.value.issues == [
        f"{copy}: ports[0].device: rx_pcap=traces/ddos.pcap: no file {pcap} (relative paths "
        f"start at the deployment file's folder): fix the path, or make the DDoS capture "
        f"(normal clients and an attack) with `sluice trace gen --ddos {pcap}`"]
    # the example's own comment gives the same command, for its folder
    cmds = re.findall(r"^#\s+(sluice trace gen .*)$", EXAMPLE.read_text(), re.M)
    assert cmds == ["sluice trace gen --ddos traces/ddos.pcap"]
    (site / "traces").mkdir()
    r = subprocess.run([sys.executable, "-m", *cmds[0].split()], cwd=site, capture_output=True,
                       text=True, timeout=120)
    assert (r.returncode, r.stderr) == (0, ""), r.stderr
    assert r.stdout == ("traces/ddos.pcap: 6000 packets, 456 flows, DDoS mix (200 clients; "
                        "2119 attack packets, DNS queries, from 10.66.6.0/24), 1041574 bytes "
                        "of frames (seed 1)\n")
    # the very bytes `sluice up` writes to examples/traces/ddos.pcap (ensure_trace)
    made = tmp_path / "made.pcap"
    traces.write_pcap(made, traces.ddos_mix(**traces.GENERATED["ddos.pcap"]))  # type: ignore[arg-type]
    assert pcap.read_bytes() == made.read_bytes()
    load_deployment(copy, build_dir=build)
    frames = traces.read_pcap(pcap)
    assert sum(traces.in_prefix(f, "10.66.6.0/24") for f in frames) == 2119


def test_a_renamed_capture_of_a_ddos_deployment_gets_the_ddos_command(tmp_path: Path) -> None:
    """The deployment runs the detector: its missing capture, whatever its
    name, is made with --ddos; another deployment's with `sluice trace gen`."""
    build = _fake_build(tmp_path)
    text = EXAMPLE.read_text().replace("traces/ddos.pcap", "in.pcap")
    dep = tmp_path / "d.yaml"
    dep.write_text(text)
    with pytest.raises(DeploymentError) as e:
        load_deployment(dep, build_dir=build)
    assert e.value.issues[0].endswith(
        f"make the DDoS capture (normal clients and an attack) with "
        f"`sluice trace gen --ddos {tmp_path / 'in.pcap'}`")
    dep.write_text(text.replace("program: sluice-ddos-detect", "program: sluice-forward"))
    with pytest.raises(DeploymentError) as e:
        load_deployment(dep, build_dir=build)
    assert e.value.issues[0].endswith(
        f"make a capture with `sluice trace gen {tmp_path / 'in.pcap'}`")


def test_the_example_comment_says_what_the_nfs_do() -> None:
    """The header said the scrubber also sent ChangeDefault at the detector;
    it does only with --at, which the example does not pass."""
    dep = load_deployment(EXAMPLE, check_env=False)
    args = [a for nf in dep.nfs for a in nf.args] + [a for p in dep.policies
                                                     for a in getattr(p, "args", [])]
    assert "--at" not in args
    header = EXAMPLE.read_text().split("\nnode:")[0]
    assert "one RequestMe" in header
    assert "no --at here, so it sends no ChangeDefault" in header
    assert "read-only detector counts the\n# packets to the servers per source /24" in header


def test_sluice_trace_gen_ddos_options(tmp_path: Path) -> None:
    """`sluice trace gen` takes the DDoS mix's options and passes them on."""
    out = tmp_path / "syn.pcap"
    r = runner.invoke(app, ["trace", "gen", "--ddos", "--packets", "400", "--clients", "10",
                            "--attack-prefix", "10.9.0.0/16", "--syn", "--seed", "3", str(out)])
    assert (r.exit_code, r.stderr) == (0, "")
    assert r.stdout == (f"{out}: 400 packets, 114 flows, DDoS mix (10 clients; 149 attack "
                        f"packets, TCP SYNs to port 80, from 10.9.0.0/16), 69116 bytes of "
                        f"frames (seed 3)\n")
    assert traces.read_pcap(out) == traces.ddos_mix(400, 10, "10.9.0.0/16", syn=True, seed=3)


@pytest.mark.parametrize(("args", "message"), [
    (["--syn"], "--clients, --attack-prefix and --syn are options of the DDoS mix: add "
                "--ddos"),
    (["--clients", "5"], "--clients, --attack-prefix and --syn are options of the DDoS mix: "
                         "add --ddos"),
    (["--ddos", "--size", "64"], "--ddos makes the DDoS mix, which takes --packets, "
                                 "--clients, --attack-prefix, --syn and --seed: drop --size "
                                 "and --flows"),
    (["--ddos", "--attack-prefix", "10.66.6.1/24"],
     "--attack-prefix: 10.66.6.1/24 has host bits set: give an IPv4 prefix such as "
     "10.66.6.0/24"),
    (["--ddos", "--attack-prefix", "2001:db8::/32"],
     "--attack-prefix: 2001:db8::/32 is IPv6; the DDoS capture is IPv4 only"),
    (["--ddos", "--clients", "60001"], "--clients: give 1 to 60000 clients, got 60001"),
])
def test_sluice_trace_gen_ddos_errors(tmp_path: Path, args: list[str], message: str) -> None:
    out = tmp_path / "x.pcap"
    r = runner.invoke(app, ["trace", "gen", *args, str(out)])
    assert (r.exit_code, r.stdout, r.stderr) == (1, "", f"sluice trace gen: {message}\n")
    assert not out.exists()
