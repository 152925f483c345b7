"""Every sample NF (a folder of nfs/ with a meson.build) has a README.md
that is titled with its program's name, names each of its options, and
gives the ranges and numeric defaults its code has."""

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


# Numeric options: sl_opt_number(PROG, "--opt", optarg, MIN, MAX, ...) and the
# monitor's mon_parse_u32("--opt", optarg, MIN, MAX, ...).
BOUND = r"([0-9][\w.]*|[A-Z_][A-Z0-9_]*|RTE_DIM\([\w.]+\))"
RANGE = re.compile(r'\(\s*(?:\w+,\s*)?"(--[a-z0-9-]+)",\s*optarg,\s*' + BOUND + r",\s*"
                   + BOUND + ",")
# Every such call, whatever its bounds: each must be one RANGE reads.
NUMBER_CALL = re.compile(r'\b(?:sl_opt_number|mon_parse_u32)\(\s*(?:\w+,\s*)?"(--[a-z0-9-]+)"')
DEFINE = re.compile(r"^#define\s+([A-Z_][A-Z0-9_]*)\s+([^/\n]+?)\s*(?:/\*.*)?$", re.M)


def _spellings(token: str, defines: dict[str, str]) -> set[str]:
    """How a README may write a bound: as the C literal, or its value in digits."""
    text = defines.get(token, token)
    m = re.fullmatch(r"RTE_DIM\((?:\w+\.)*(\w+)\)", text)
    if m:  # the size of the array: `name[SIZE]` where it is declared
        text = defines[f"[{m.group(1)}]"]
    m = re.fullmatch(r"\(?\s*1u?\s*<<\s*(\d+)\s*\)?", text)
    if m:
        return {str(1 << int(m.group(1)))}
    text = text.rstrip("uUlL")
    value = float(text)
    return {text, str(int(value)) if value == int(value) else text}


def _usage(src: str) -> str:
    """The text of the NF's `..._usage[]` string (C literals joined)."""
    m = re.search(r'_usage\[\]\s*=\s*((?:\s*"(?:[^"\\]|\\.)*"|\s*\w+_PROG)+)\s*;', src)
    assert m, "no usage string"
    return "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1))).replace("\\n", "\n")


def _row(text: str, option: str) -> str:
    rows = [line for line in text.splitlines()
            if re.match(rf"\| `{re.escape(option)}[ `]", line)]
    assert len(rows) == 1, f"no single table row for {option}"
    return rows[0]


@pytest.mark.parametrize("nf_dir", NF_DIRS, ids=lambda d: d.name)
def test_readme_gives_the_ranges_and_defaults_of_the_code(nf_dir: Path) -> None:
    """The README's row of a numeric option names the range its parse code
    enforces and the default its --help says."""
    text = (nf_dir / "README.md").read_text()
    src = "\n".join(c.read_text() for c in sorted(nf_dir.glob("*.c")))
    defines = dict(DEFINE.findall(src))
    defines.update({f"[{name}]": size for name, size in
                    re.findall(r"\b(\w+)\[([^\]\[]+)\];", src)})
    ranges = RANGE.findall(src)
    assert sorted(o for o, _, _ in ranges) == sorted(NUMBER_CALL.findall(src)), \
        f"{nf_dir.name}: a numeric option whose bounds this test cannot read"
    for option, lo, hi in ranges:
        cells = _row(text, option).split(" | ")
        meaning = cells[-1]
        for bound in (lo, hi):
            words = _spellings(bound, defines)
            assert any(re.search(rf"(?<![\w.]){re.escape(w)}(?![\w.])", meaning)
                       for w in words), f"{nf_dir.name}: {option}: bound {bound} not in README"
    for m in re.finditer(r"^\s*(--[a-z0-9-]+)\b[^\n]*?\(default (\d+)", _usage(src), re.M):
        option, default = m.groups()
        cells = _row(text, option).split(" | ")
        assert re.match(rf"{default}\b", cells[1].strip()), \
            f"{nf_dir.name}: {option}: README default {cells[1]!r}, --help says {default}"
