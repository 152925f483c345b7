"""Integration tests: a real sluiced and real NFs on DPDK virtual devices.

They need root, hugepages and a built tree (`make test` provides all three);
without them they fail with a message saying what is missing rather than
being skipped. SLUICE_BUILD_DIR selects the build (default: build/).
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sluice.runtime.launch import Launcher, hugetlbfs_mounts

ROOT = Path(__file__).resolve().parents[2]
_counter = itertools.count()


def build_dir() -> Path:
    return Path(os.environ.get("SLUICE_BUILD_DIR", ROOT / "build")).resolve()


# The ASan+UBSan build (make build-asan); the tests that need it are skipped
# without it, unless SLUICE_REQUIRE_ASAN (make test) says it must be there.
ASAN_BUILD = ROOT / "build-asan"
needs_asan = pytest.mark.skipif(
    not (ASAN_BUILD / "src" / "mgr" / "sluiced").exists()
    and not os.environ.get("SLUICE_REQUIRE_ASAN"),
    reason="no build-asan (make build-asan); make test always builds it")


def prog(name: str, build: Path | None = None, hooks: bool = False) -> str:
    """Absolute path of a built NF program, e.g. prog('forward'). hooks: its
    build with libsluice's fault injection (SLUICE_TEST_KILL_AT), made for
    the tests only (nfs/forward/hooks); the program users run has none."""
    nf_dir = (build or build_dir()) / "nfs" / name
    return str((nf_dir / "hooks" if hooks else nf_dir) / f"sluice-{name}")


@pytest.fixture(scope="session", autouse=True)
def _environment() -> None:
    problems = []
    if os.geteuid() != 0:
        problems.append("run as root (DPDK needs hugepages and the ports)")
    if not (build_dir() / "src" / "mgr" / "sluiced").exists():
        problems.append(f"build first: no sluiced in {build_dir()} (make build)")
    if not hugetlbfs_mounts():
        problems.append("mount hugetlbfs and reserve hugepages (scripts/hugepages.sh)")
    if problems:
        pytest.fail("integration tests cannot run: " + "; ".join(problems), pytrace=False)


@pytest.fixture
def node() -> Iterator[str]:
    """A node name unique to this test; checks nothing of it is left after."""
    name = f"it{os.getpid() % 10000}x{next(_counter)}"
    yield name
    leftovers = [p for d in hugetlbfs_mounts() for p in d.glob(f"sluice_{name}map_*")]
    rundir = Path(f"/var/run/dpdk/sluice_{name}")
    if rundir.exists():
        leftovers.append(rundir)
    assert not leftovers, f"node {name} left files behind: {leftovers}"


def wait_until(pred: Callable[[], Any], timeout: float, what: str, interval: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def attaching(pid: int, node: str) -> bool:
    """Whether the process has mapped sluiced's DPDK config (it is inside
    rte_eal_init or past it), or is gone (nothing more to wait for)."""
    try:
        with open(f"/proc/{pid}/maps") as f:
            return f"/dpdk/sluice_{node}/config" in f.read()  # /var/run is /run
    except (FileNotFoundError, ProcessLookupError):
        return True


def port(stats: dict[str, Any], name: str) -> dict[str, Any]:
    return next(p for p in stats["ports"] if p["name"] == name)


def service(stats: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in stats["services"] if s["name"] == name)


SANITIZER_REPORTS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                     "runtime error:")  # the last: UBSan


def assert_no_sanitizer_report(text: str, name: str = "the logs") -> None:
    """No ASan, LSan or UBSan report in ``text`` (a log, or logs joined)."""
    for bad in SANITIZER_REPORTS:
        i = text.find(bad)
        assert i < 0, f"{name}: {bad}\n{text[max(0, i - 2000):i + 2000]}"


def wait_drained(run: Launcher, timeout: float = 20.0) -> dict[str, Any]:
    """Waits until no packet is in flight: every packet read from a port is
    out of a port or dropped (needs finite sources or rx.pause), and the
    counters stopped moving. Returns the stats."""
    last: list[Any] = [None, None]

    def settled() -> dict[str, Any] | None:
        st = run.client.call("stats")
        rx = sum(p["rx_pkts"] for p in st["ports"])
        tx = sum(p["tx_pkts"] for p in st["ports"])
        key = (rx, tx, st["drops_total"])
        stable = key == last[0] and rx == tx + st["drops_total"]
        last[0], last[1] = key, st
        return st if stable else None

    try:
        return wait_until(settled, timeout, "the packets in flight to drain", interval=0.2)
    except AssertionError as e:
        raise AssertionError(f"{e}; (rx, tx, drops) = {last[0]}; stats: {last[1]}") from None


def deployment(node: str, ports: list[dict[str, str]], nfs: list[dict[str, Any]],
               chain: list[str], **node_opts: Any) -> dict[str, Any]:
    return {
        "node": {"name": node, "mode": "shared", "cores": [0, 1], **node_opts},
        "ports": ports,
        "nfs": nfs,
        "chain": chain,
    }


@pytest.fixture
def launch(tmp_path: Path, node: str) -> Iterator[Callable[..., Launcher]]:
    """launch(dict) starts a deployment; it is stopped after the test (and
    before `node` checks that nothing was left behind)."""
    runs: list[Launcher] = []

    def start(dep: dict[str, Any], build: Path | None = None) -> Launcher:
        run = Launcher(dep, log_dir=tmp_path / f"run{len(runs)}", build_dir=build or build_dir())
        runs.append(run)
        run.start()
        return run

    yield start
    for run in runs:
        run.stop()
