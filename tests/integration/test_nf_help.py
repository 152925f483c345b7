"""`sluice-X --help` works anywhere: libsluice prints its usage and the NF's
options (sl_nf_ops.usage) to stdout and exits 0 before EAL init, so no
sluiced is needed and nothing is left under /var/run/dpdk."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import prog

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
    "scrubber": "  --prefix PREFIX  scrub packets from this source prefix, e.g. 10.66.6.0/24 or",
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
