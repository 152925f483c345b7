"""The wheel of the sluice package holds every file of the package, the
dashboard's static files included (a non-editable `pip install .` is what
operators get; the tests otherwise run on the editable install)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "python" / "sluice"


def _package_files() -> set[str]:
    """Paths, as in a wheel (sluice/...), of the package's files in the source tree."""
    return {f"sluice/{p.relative_to(PKG).as_posix()}" for p in PKG.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}


def test_wheel_holds_every_package_file_and_the_dashboard(tmp_path: Path) -> None:
    # Built from a copy: setuptools writes build/ (meson's folder here) and egg-info.
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(ROOT / "pyproject.toml", src)
    shutil.copytree(ROOT / "python", src / "python",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"))
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                        "--no-build-isolation", "--no-index", "-q", "-w",
                        str(tmp_path / "dist"), str(src)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, (
        f"pip wheel failed (it needs setuptools >= 70.1 in this venv, from the dev "
        f"extras: run scripts/setup.sh):\n{r.stdout}\n{r.stderr}")
    (wheel,) = (tmp_path / "dist").glob("sluice-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        index = z.read("sluice/web/static/index.html") \
            if "sluice/web/static/index.html" in names else b""
    wanted = _package_files()
    for f in ("sluice/web/static/index.html", "sluice/web/static/dashboard.js",
              "sluice/web/static/dashboard.css", "sluice/py.typed"):
        assert f in wanted, f"{f} is no longer in python/sluice: update this test"
    missing = sorted(wanted - names)
    assert not missing, (f"{wheel.name} lacks {missing}: add them to "
                         f"[tool.setuptools.package-data] in pyproject.toml")
    assert index == (PKG / "web" / "static" / "index.html").read_bytes()
