"""`sluice-X --help` works anywhere: libsluice prints its usage and the NF's
options (sl_nf_ops.usage) to stdout and exits 0 before EAL init, so no
sluiced is needed and nothing is left under /var/run/dpdk."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import deployment, prog

RUN_DIR = Path("/var/run/dpdk")

LIBSLUICE_USAGE = (
    "usage: {prog} [EAL args] -- [--node NAME] [-s|--service NAME] "
    "[--instance N] [--mode shared|poll] [--core N] [NF args]\n"
    "  --node         the sluiced to attach to (default: $SLUICE_NODE or 'sluice')\n"
    "  -s, --service  service to register (default: the NF's own)\n"
    "  --instance     ask for this instance id (default: any free)\n"
    "  --mode         shared (yield/sleep when idle, default) or poll\n"
    "  --core         CPU to pin to (poll mode)\n"
    "  -h, --help     print this help and exit\n"
    "\n"
)

# One line of each NF's own options, exactly as it prints it.
NF_OPTION = {
    "forward": "  --tag-src-mac    write the instance id into the last byte of the source MAC",
    "speedtest": "  --latency      measure each packet's time round the loop",
    "firewall": "  --rules FILE      rule file, .yaml/.yml or .json (see nfs/firewall/README.md)",
    "monitor": "  --top N         flows listed, by bytes (default 10, max 1000)",
    "flowclass": "  --elephant-to HOP   default next hop for elephants",
    "ddos-detect": "  --threshold N       alarm at N packets in one window (default 10000)",
    "l3fwd": "  --max-routes N    routes per family, neighbours included (default 1024)",
    "scrubber": "  --prefix PREFIX  scrub packets from this source prefix, e.g. 10.66.6.0/24 or",
    "dpi": "  --rules FILE        steering rules, 'APP -> SERVICE' a line (README.md)",
    "nat": "  --mappings N          the most mappings at once (default 65536)",
    "sampler": "  --one-in N      sample 1 packet (or flow) in N (default 100)",
    "shaper": "  --config FILE       the classes, a JSON file (see nfs/shaper/README.md)",
    "lb": "  --config FILE         the VIP and the backends (nfs/lb/README.md); SIGHUP re-reads it",
    "ids": "  --rules FILE        rule file, Snort/Suricata syntax (nfs/ids/README.md)",
}


def _run_dir_entries(node: str) -> list[Path]:
    """Everything under /var/run/dpdk that EAL would make for this node."""
    if not RUN_DIR.exists():
        return []
    return sorted(p for p in RUN_DIR.rglob("*") if node in str(p))


def test_every_sample_nf_is_covered() -> None:
    nfs = Path(__file__).resolve().parents[2] / "nfs"
    assert set(NF_OPTION) == {d.name for d in nfs.iterdir() if (d / "meson.build").is_file()}


@pytest.mark.parametrize("args", [["--", "--help"], ["--help"], ["--", "-h"]],
                         ids=["after-dashes", "no-dashes", "short"])
@pytest.mark.parametrize("name", sorted(NF_OPTION))
def test_help_needs_no_sluiced(name: str, args: list[str], node: str) -> None:
    exe = prog(name)
    env = {**os.environ, "SLUICE_NODE": node}  # no sluiced has this name
    r = subprocess.run([exe, *args], env=env, capture_output=True, text=True, timeout=30)
    assert (r.returncode, r.stderr) == (0, ""), r
    assert r.stdout.startswith(LIBSLUICE_USAGE.format(prog=exe)), r.stdout
    nf_part = r.stdout[len(LIBSLUICE_USAGE.format(prog=exe)):]
    assert nf_part.startswith(f"usage: sluice-{name} [EAL args] -- [libsluice args]"), nf_part
    assert NF_OPTION[name] in nf_part.splitlines(), nf_part
    assert _run_dir_entries(node) == []


def _no_sluiced(exe: str, node: str) -> str:
    return (f"{exe}: no sluiced named '{node}' is running (/var/run/dpdk/sluice_{node}/config "
            f"not found): start it first (sluiced -- --name {node}), or pass --node NAME\n")


# -h or --help as the value of an option that takes one: the NF's (as its
# usage spells it, also abbreviated as getopt_long takes it) or libsluice's.
# The value is taken, so the NF goes on to look for its sluiced.
VALUE_HELP = [
    ("firewall", ["--", "--rules", "-h"]),
    ("firewall", ["--", "--rules", "--help"]),
    ("firewall", ["--rules", "-h"]),
    ("firewall", ["--", "--rul", "-h"]),
    ("firewall", ["--", "--non-ip", "-h", "--rules", "r.yaml"]),
    ("forward", ["--", "--to", "-h"]),
    ("forward", ["--", "--bridge", "--help"]),
    ("ddos-detect", ["--", "--count", "-h"]),
    ("ddos-detect", ["--", "--alarm-to", "-h"]),
    ("ddos-detect", ["--", "--prefix-len6", "-h"]),
    ("scrubber", ["--", "--prefix", "-h"]),
    ("dpi", ["--", "--rules", "-h"]),
    ("flowclass", ["--", "--ant-to", "--help"]),
    ("monitor", ["--", "--top", "-h"]),
    ("speedtest", ["--", "--size", "-h"]),
    ("forward", ["--", "-s", "-h"]),
    ("forward", ["--", "--service", "--help"]),
]


@pytest.mark.parametrize(("name", "args"), VALUE_HELP,
                         ids=[f"{n}:{' '.join(a)}" for n, a in VALUE_HELP])
def test_help_as_an_option_value_is_the_value(name: str, args: list[str], node: str) -> None:
    exe = prog(name)
    env = {**os.environ, "SLUICE_NODE": node}
    r = subprocess.run([exe, *args], env=env, capture_output=True, text=True, timeout=30)
    assert (r.returncode, r.stdout, r.stderr) == (1, "", _no_sluiced(exe, node)), r


@pytest.mark.parametrize(("opt", "error"), [
    ("--instance", "--instance '{v}' is not an instance id (0..65534)"),
    ("--mode", "--mode '{v}': use shared or poll"),
    ("--core", "--core '{v}' is not a CPU number"),
])
@pytest.mark.parametrize("value", ["-h", "--help"])
def test_help_as_a_libsluice_value_is_checked_as_one(opt: str, error: str, value: str,
                                                    node: str) -> None:
    exe = prog("forward")
    env = {**os.environ, "SLUICE_NODE": node}
    r = subprocess.run([exe, "--", opt, value], env=env, capture_output=True, text=True,
                       timeout=30)
    assert (r.returncode, r.stdout, r.stderr) == (1, "", f"{exe}: {error.format(v=value)}\n"), r


# Where an option may stand, -h and --help are still the help: after an
# option without a value, after a value, after --opt=VALUE, after an option
# the NF's usage does not list, after an ambiguous abbreviation.
OPTION_HELP = [
    ("forward", ["--", "--tag-src-mac", "-h"]),
    ("speedtest", ["--", "--latency", "--help"]),
    ("firewall", ["--", "--rules", "f.yaml", "-h"]),
    ("firewall", ["--", "--rules=-h", "-h"]),
    ("firewall", ["--", "--rules=f.yaml", "--help"]),
    ("firewall", ["--", "-s", "fw", "-h"]),
    ("firewall", ["--", "--bogus", "-h"]),
    ("ddos-detect", ["--", "--pr", "-h"]),
    ("monitor", ["--top", "5", "--help"]),
]


@pytest.mark.parametrize(("name", "args"), OPTION_HELP,
                         ids=[f"{n}:{' '.join(a)}" for n, a in OPTION_HELP])
def test_help_where_an_option_stands(name: str, args: list[str], node: str) -> None:
    exe = prog(name)
    env = {**os.environ, "SLUICE_NODE": node}
    r = subprocess.run([exe, *args], env=env, capture_output=True, text=True, timeout=30)
    assert (r.returncode, r.stderr) == (0, ""), r
    assert r.stdout.startswith(LIBSLUICE_USAGE.format(prog=exe)), r.stdout
    assert NF_OPTION[name] in r.stdout.splitlines(), r.stdout
    assert _run_dir_entries(node) == []


def test_help_as_a_value_reaches_the_nf(launch, node, tmp_path: Path) -> None:
    """End to end: `--to -h` reaches sluice-forward's own option parsing,
    which looks for a service named '-h' (none here) and says so.
    (deployment is imported at the top: by the time a test runs, the name
    conftest may be another folder's conftest.)"""
    launch(deployment(node, ports=[],
                      nfs=[{"name": "a", "program": prog("forward"), "service": "a"}],
                      chain=["a", "drop"]))
    exe = prog("forward")
    r = subprocess.run([exe, "--", "--node", node, "--service", "b", "--to", "-h"],
                       capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stdout) == (1, ""), r
    assert r.stderr.splitlines() == [
        # init waits for a service not known yet (its NF may be starting)
        f"{exe}: service '-h' is not known to sluiced yet: waiting up to 5000 ms for an "
        "NF of it to register",
        "sluice-forward: --to '-h': no such service (sluice status lists them)",
        f"{exe}: initialisation failed (Invalid argument)",
    ], r.stderr
