"""Every sample NF (a folder of nfs/ with a meson.build) has a README.md
that is titled with its program's name, names each of its options, and
gives the ranges and numeric defaults its code has."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NF_DIRS = sorted(d for d in (ROOT / "nfs").iterdir() if (d / "meson.build").is_file())
# An NF's options are its `struct sl_nf_opt` table (include/sluice/nf.h):
# `static const struct sl_nf_opt NAME[] = { {.name = "flows", ...}, ... };`
OPT_TABLE = re.compile(r"struct sl_nf_opt\s+\w+\[\]\s*=\s*\{(.*?)\n\};", re.S)
ENTRY = re.compile(r'\{\s*\.name\s*=\s*"([a-z0-9-]+)"(.*?)\}\s*,', re.S)


def _field(body: str, name: str) -> str | None:
    m = re.search(rf"\.{name}\s*=\s*(\"[^\"]*\"|[^,}}]+)", body)
    return m.group(1).strip() if m else None


def nf_options(src: str) -> dict[str, dict[str, str | None]]:
    """Every option of an NF's tables: name -> type, min, max, def as written."""
    out = {}
    for table in OPT_TABLE.findall(src):
        for name, body in ENTRY.findall(table):
            out[name] = {k: _field(body, k) for k in ("type", "min", "max", "def")}
    return out


def test_the_sample_nfs_are_found() -> None:
    names = {d.name for d in NF_DIRS}
    assert {"forward", "speedtest", "firewall", "monitor"} <= names, names


@pytest.mark.parametrize("nf_dir", NF_DIRS, ids=lambda d: d.name)
def test_nf_has_a_readme_naming_every_option(nf_dir: Path) -> None:
    readme = nf_dir / "README.md"
    assert readme.is_file(), f"nfs/{nf_dir.name}/ has no README.md: write one (see nfs/monitor/)"
    text = readme.read_text()
    assert text.splitlines()[0] == f"# sluice-{nf_dir.name}"
    options = set(nf_options("\n".join(c.read_text() for c in nf_dir.glob("*.c"))))
    assert options, f"no struct sl_nf_opt table found in nfs/{nf_dir.name}/*.c"
    missing = sorted(o for o in options if f"`--{o}" not in text)
    assert not missing, f"nfs/{nf_dir.name}/README.md does not describe --{', --'.join(missing)}"


BOUND = r"([0-9][\w.]*|[A-Z_][A-Z0-9_]*|RTE_DIM\([\w.]+\))"
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


def _row(text: str, option: str) -> str:
    rows = [line for line in text.splitlines()
            if re.match(rf"\| `{re.escape(option)}[ `]", line)]
    assert len(rows) == 1, f"no single table row for {option}"
    return rows[0]


@pytest.mark.parametrize("nf_dir", NF_DIRS, ids=lambda d: d.name)
def test_readme_gives_the_ranges_and_defaults_of_the_code(nf_dir: Path) -> None:
    """The README's row of a numeric option names the range its table
    declares (libsluice enforces it) and the default the table gives."""
    text = (nf_dir / "README.md").read_text()
    src = "\n".join(c.read_text() for c in sorted(nf_dir.glob("*.c")))
    defines = dict(DEFINE.findall(src))
    defines.update({f"[{name}]": size for name, size in
                    re.findall(r"\b(\w+)\[([^\]\[]+)\];", src)})
    for name, o in nf_options(src).items():
        option = f"--{name}"
        if o["type"] == "SL_OPT_NUMBER":
            # a number's range is min (0 when not written) to max
            assert o["max"] is not None, f"{nf_dir.name}: {option}: a number without .max"
            meaning = _row(text, option).split(" | ")[-1]
            for bound in (o["min"] or "0", o["max"]):
                assert re.fullmatch(BOUND, bound), f"{nf_dir.name}: {option}: bound {bound}?"
                words = _spellings(bound, defines)
                assert any(re.search(rf"(?<![\w.]){re.escape(w)}(?![\w.])", meaning)
                           for w in words), f"{nf_dir.name}: {option}: bound {bound} not in README"
        default = (o["def"] or "").strip('"')
        if re.fullmatch(r"\d+", default):
            cells = _row(text, option).split(" | ")
            assert re.match(rf"{default}\b", cells[1].strip()), \
                f"{nf_dir.name}: {option}: README default {cells[1]!r}, its table says {default}"
