"""Every sample NF (a folder of nfs/ with a meson.build) has a README.md
that is titled with its program's name and names each of its options."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NF_DIRS = sorted(d for d in (ROOT / "nfs").iterdir() if (d / "meson.build").is_file())
# getopt_long tables: {"name", required_argument, ...}
LONG_OPT = re.compile(r'\{"([a-z0-9-]+)",\s*(?:required|no|optional)_argument')


def test_the_sample_nfs_are_found() -> None:
    names = {d.name for d in NF_DIRS}
    assert {"forward", "speedtest", "firewall", "monitor"} <= names, names


@pytest.mark.parametrize("nf_dir", NF_DIRS, ids=lambda d: d.name)
def test_nf_has_a_readme_naming_every_option(nf_dir: Path) -> None:
    readme = nf_dir / "README.md"
    assert readme.is_file(), f"nfs/{nf_dir.name}/ has no README.md: write one (see nfs/monitor/)"
    text = readme.read_text()
    assert text.splitlines()[0] == f"# sluice-{nf_dir.name}"
    options = {o for c in nf_dir.glob("*.c") for o in LONG_OPT.findall(c.read_text())}
    options.discard("help")
    assert options, f"no getopt_long options found in nfs/{nf_dir.name}/*.c"
    missing = sorted(o for o in options if f"`--{o}" not in text)
    assert not missing, f"nfs/{nf_dir.name}/README.md does not describe --{', --'.join(missing)}"
