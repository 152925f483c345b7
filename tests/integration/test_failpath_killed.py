"""sluiced killed under its NFs, and what it leaves (docs/sluiced.md, "When
sluiced is killed"): the NFs exit within a moment and say what to do; an NF
started for the node then is refused at once (not after EAL errors and a
registration timeout); scripts/cleanup.sh removes the files, but never those
of a sluiced started by hand (whose command line does not say
--file-prefix), and neither does the launcher's cleanup_node."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

from conftest import ROOT, build_dir, deployment, prog, wait_until

from sluice.runtime.client import Client
from sluice.runtime.hostclean import cleanup_node, hugetlbfs_mounts, primary_alive

CLEANUP = ROOT / "scripts" / "cleanup.sh"


def _files(node: str) -> list[Path]:
    left = [p for d in hugetlbfs_mounts() for p in d.glob(f"sluice_{node}map_*")]
    rundir = Path(f"/var/run/dpdk/sluice_{node}")
    return left + ([rundir] if rundir.exists() else [])


def _gone_line(exe: str, node: str, pid: int) -> str:
    return (f"{exe}: sluiced '{node}' (pid {pid}) is gone (killed, or it crashed: see its "
            f"log); stopping. Start sluiced again (sluiced -- --name {node}, or sluice up), "
            f"then this NF")


def test_nfs_of_a_killed_sluiced_exit_and_a_new_nf_is_told_what_to_do(launch, node):
    run = launch(deployment(node, ports=[], nfs=[
        {"name": "a", "program": prog("forward"), "service": "a"},
        {"name": "b", "program": prog("forward"), "service": "b", "mode": "poll"}],
        chain=["a", "b", "drop"]))
    assert run.sluiced is not None
    pid = run.sluiced.pid
    run.sluiced.popen.send_signal(signal.SIGKILL)
    t0 = time.monotonic()
    wait_until(lambda: all(p.exited() is not None for p in run.nfs), 5,
               "the NFs to exit after sluiced was killed")
    assert time.monotonic() - t0 < 2.0
    for p in run.nfs:
        log = p.log.read_text()
        assert _gone_line(p.argv[0], node, pid) in log.splitlines(), log
    # Left: the files (a killed process cannot remove them).
    assert _files(node)
    assert not primary_alive(f"sluice_{node}")

    t0 = time.monotonic()
    r = subprocess.run([prog("forward"), "--", "--node", node, "--service", "c"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 1
    assert r.stderr == (
        f"{prog('forward')}: no sluiced named '{node}' is running: /var/run/dpdk/"
        f"sluice_{node} is left from one that was killed; start sluiced again (sluiced -- "
        f"--name {node}, or sluice up), which replaces it, or remove it with "
        f"scripts/cleanup.sh {node}\n")
    assert time.monotonic() - t0 < 2.0

    r = subprocess.run([str(CLEANUP), node], capture_output=True, text=True, timeout=30)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    assert _files(node) == []


def test_cleanup_leaves_a_sluiced_started_by_hand_alone(node):
    sluiced = subprocess.Popen([str(build_dir() / "src" / "mgr" / "sluiced"), "-l", "0,1",
                                "--", "--name", node],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        with Client(node, timeout=2.0) as c:
            c.wait_ready(20)
        before = sorted(_files(node))
        assert before
        assert primary_alive(f"sluice_{node}")
        r = subprocess.run([str(CLEANUP), node], capture_output=True, text=True, timeout=30)
        assert (r.returncode, r.stderr) == (0, "")
        assert cleanup_node(node) == []
        assert sorted(_files(node)) == before
        # Still usable: an NF attaches and registers.
        nf = subprocess.Popen([prog("forward"), "--", "--node", node, "--service", "a"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            with Client(node, timeout=2.0) as c:
                wait_until(lambda: c.call("status")["n_nfs"] == 1, 20, "the NF to register")
        finally:
            nf.send_signal(signal.SIGTERM)
            assert nf.wait(10) == 0, nf.stderr.read() if nf.stderr else ""
    finally:
        sluiced.send_signal(signal.SIGTERM)
        rc = sluiced.wait(15)
        err = sluiced.stderr.read() if sluiced.stderr else ""
    assert rc == 0, err
    assert _files(node) == []
