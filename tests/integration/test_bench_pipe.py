"""sluice-pipe (bench/micro/pipe.c), bench/port.py's bare two-process pipeline:
every packet of a finite capture goes through, counted exactly at each end, and
its errors say what to do."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import packets
import pytest
from conftest import build_dir

PIPE = build_dir() / "bench" / "micro" / "sluice-pipe"


def _cpus() -> list[int]:
    return sorted(os.sched_getaffinity(0))[:2]


def _remove_dpdk_files(prefix: str) -> None:
    for p in Path("/dev/hugepages").glob(f"{prefix}map_*"):
        p.unlink()
    run = Path("/var/run/dpdk") / prefix
    if run.is_dir():
        for p in run.iterdir():
            p.unlink()
        run.rmdir()


@pytest.fixture
def prefix() -> str:
    name = f"slpipe{os.getpid() % 10000}"
    yield name
    _remove_dpdk_files(name)


def test_every_packet_of_a_capture_goes_through(tmp_path: Path, prefix: str) -> None:
    cap = packets.write(tmp_path / "in.pcap", packets.mixed(5000, 50))
    c = _cpus()
    primary = subprocess.Popen(
        [str(PIPE), "-l", f"{c[0]},{c[1]}", "--no-pci", f"--file-prefix={prefix}",
         "--vdev", f"net_pcap0,rx_pcap={cap}", "--vdev", "net_null0,no-rx=1", "--",
         "primary", "--mbufs", "8191", "--seconds", "0", "--ring-size", "1024"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = primary.stdout.readline()
        assert json.loads(first) == {"ready": True, "pool": 8191, "ring": 1024,
                                     "rx_burst": 64}, primary.stderr.read()
        # The capture's path is longer than the 64 characters DPDK 22.11's pcap
        # driver keeps for secondaries: its port fails to attach there, which the
        # nf does not need (it only transmits).
        assert len(f"rx_pcap={cap}") > 64
        nf = subprocess.run(
            [str(PIPE), f"--lcores=2@{c[0]}", "--no-pci", f"--file-prefix={prefix}",
             "--proc-type=secondary", "--", "nf"],
            capture_output=True, text=True, timeout=60)
        out, err = primary.communicate(timeout=60)
    finally:
        if primary.poll() is None:
            primary.kill()
            primary.wait()
    assert nf.returncode == 0, nf.stderr
    assert primary.returncode == 0, err
    lines = [json.loads(x) for x in out.splitlines()]
    done = lines[-1]
    assert done["done"] is True
    assert done["in_pkts"] == done["out_pkts"] == done["nf_pkts"] == 5000
    seconds = lines[:-1]
    assert [s["second"] for s in seconds] == list(range(1, len(seconds) + 1))
    assert sum(s["out_pps"] for s in seconds) == 5000


@pytest.mark.parametrize("args,message,code", [
    ([], "usage: sluice-pipe EAL_ARGS -- primary", 2),
    (["primary", "--ring-size", "1000"], "sluice-pipe: --ring-size 1000 is not a power of 2\n",
     2),
    (["primary", "--rx-burst", "0"],
     "sluice-pipe: --rx-burst: '0' is not a whole number from 1 to 256\n", 2),
    (["primary", "--mbufs", "4k"],
     "sluice-pipe: --mbufs: '4k' is not a whole number from 1023 to 16777216\n", 2),
    (["primary", "--mbufs"], "sluice-pipe: unknown option or missing value: --mbufs\n", 2),
    (["primary", "extra"], "sluice-pipe: unexpected argument 'extra'\n", 2),
    (["primary"], "sluice-pipe: primary needs exactly 2 ports (--vdev ...), has 1: port 0 "
                  "is read, port 1 written\n", 1),
    (["nf"], "sluice-pipe: nf runs as a secondary: add --proc-type=secondary and the "
             "primary's --file-prefix to its EAL arguments\n", 1),
])
def test_errors_say_what_to_do(args: list[str], message: str, code: int, prefix: str) -> None:
    r = subprocess.run([str(PIPE), "--no-huge", "-m", "64", "-l", str(_cpus()[0]), "--no-pci",
                        f"--file-prefix={prefix}", "--vdev", "net_null0", "--log-level=7",
                        *(["--"] + args if args else [])],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == code
    assert message in r.stderr, r.stderr


def test_nf_without_a_primary_fails_with_eal_message(prefix: str) -> None:
    started = time.monotonic()
    r = subprocess.run([str(PIPE), "-l", str(_cpus()[0]), "--no-pci",
                        f"--file-prefix={prefix}", "--proc-type=secondary", "--", "nf"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert "EAL: Cannot init config" in r.stderr
    assert r.stderr.endswith("sluice-pipe: EAL init failed (the EAL messages above say why): "
                             "check the EAL arguments before '--' and the hugepages; an nf "
                             "needs its primary running, with the same --file-prefix\n"), \
        r.stderr
    assert time.monotonic() - started < 30
