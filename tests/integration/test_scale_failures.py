"""nf.scale replicas that cannot start or register are reported and cleaned
up, never forgotten silently or left waiting for ever.

Found while looking for a soak run's replica that "never registered within
30 s, with no error in its log": sluiced exec'd a copy by the path
/proc/PID/exe gives, which after a rebuild of the NF (the linker unlinks the
old file) is "... (deleted)": exec failed in the child, which exited 127
without a word, and the replica was forgotten 30 s later, or at the next
nf.scale, also without a word. A replica that exited before registering, or
never registered, was not reported either.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import deployment, prog, wait_until
from packets import mixed, write

from sluice.runtime.client import RpcError


class Events:
    """A subscriber that collects sluiced's events in a thread."""

    def __init__(self, run):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(str(run.dep.socket_path()))
        self.sock.sendall(b'{"jsonrpc":"2.0","id":1,"method":"subscribe"}\n')
        self.lines: list[bytes] = []
        self.thread = threading.Thread(target=lambda: self.lines.extend(self.sock.makefile("rb")))
        self.thread.start()
        wait_until(lambda: self.lines, 5, "the subscription")

    def of(self, kind: str) -> list[dict[str, Any]]:
        msgs = [json.loads(line)["params"] for line in self.lines[1:]]
        return [m["data"] for m in msgs if m["kind"] == kind]

    def close(self) -> None:
        self.sock.shutdown(socket.SHUT_RDWR)
        self.thread.join()
        self.sock.close()


def _dep(node: str, tmp_path: Path, nfs: list[dict[str, Any]], **opts: Any) -> dict[str, Any]:
    src = write(tmp_path / "in.pcap", mixed(50, flows=5, seed=4))
    return deployment(node, ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src}"},
                                   {"name": "out", "device": "net_null0,no-rx=1"}],
                      nfs=nfs, chain=[*(n["service"] for n in nfs), "port:out"], **opts)


def _registered(run, pid: int) -> bool:
    return any(n["pid"] == pid and n["state"] == "running" for n in run.client.call("nf.list"))


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_replica_of_a_program_rebuilt_since_runs_the_same_program(launch, node, tmp_path):
    """The program's file is replaced (as a rebuild does) while instance 0
    runs: nf.scale's replica still starts, runs instance 0's program (the
    one sluiced's shared memory matches), registers, and the log says so."""
    exe = tmp_path / "bin" / "sluice-forward"
    exe.parent.mkdir()
    shutil.copy(prog("forward"), exe)
    run = launch(_dep(node, tmp_path, [{"name": "w", "program": str(exe), "service": "w"}]))
    shutil.copy(exe, f"{exe}.new")
    os.replace(f"{exe}.new", exe)  # what the linker does: a new file, the old one unlinked
    res = run.client.call("nf.scale", service="w", replicas=2)
    assert len(res["started_pids"]) == 1, res
    pid = res["started_pids"][0]
    wait_until(lambda: _registered(run, pid), 30, f"replica pid {pid} to register")
    assert os.readlink(f"/proc/{pid}/exe") == f"{exe} (deleted)"
    assert f": nf.scale: {exe} was replaced or removed since instance 0 started; its " \
           f"replicas run instance 0's program (restart the service to run the new one)\n" \
        in run.sluiced.log.read_text()
    run.client.call("nf.scale", service="w", replicas=1)
    wait_until(lambda: _gone(pid), 10, f"replica pid {pid} to stop")


def test_replica_whose_directory_is_gone_fails_the_call(launch, node, tmp_path):
    """A replica that cannot even start (its model's working directory was
    removed) fails nf.scale with the reason, instead of exiting unseen."""
    run = launch(_dep(node, tmp_path, [{"name": "w", "program": prog("forward"), "service": "w"}]))
    wd = tmp_path / "wd"
    wd.mkdir()
    with open(tmp_path / "v.log", "wb") as out:
        v = subprocess.Popen([prog("forward"), "--", "--node", node, "--service", "v"],
                             cwd=wd, stdin=subprocess.DEVNULL, stdout=out,
                             stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_until(lambda: _registered(run, v.pid), 30, "service v's instance to register")
        wd.rmdir()
        with pytest.raises(RpcError) as e:
            run.client.call("nf.scale", service="v", replicas=2)
        assert e.value.message == (
            f"cannot start a copy of instance 1: its working directory {wd}: No such file "
            "or directory; start the service again from a directory that exists"), e.value
        assert sorted(n["pid"] for n in run.client.call("nf.list")) == \
            sorted([v.pid, *(p.pid for p in run.nfs)])
        assert f": nf.scale v: cannot start a copy of instance 1: its working directory {wd}" \
            in run.sluiced.log.read_text()
    finally:
        v.terminate()
        v.wait(10)


def test_replica_refused_at_registration_is_reported(launch, node, tmp_path):
    """A replica that exits before it registers (here: sluiced has no free
    instance, --max-nfs 2) is logged and published as nf.scale.failed with
    where its reason is; the next nf.scale starts a new one."""
    run = launch(_dep(node, tmp_path, [{"name": s, "program": prog("forward"), "service": s}
                                       for s in "aw"], max_nfs=2))
    ev = Events(run)
    try:
        # (a and w register in either order: w's instance is the model)
        (model,) = [n["instance"] for n in run.client.call("nf.list") if n["service"] == "w"]
        res = run.client.call("nf.scale", service="w", replicas=2)
        pid = res["started_pids"][0]
        log = re.escape(str(run.run_dir / "w.log"))
        line = (rf": nf\.scale w: replica pid {pid} \(copy of instance {model}\) exited before it "
                rf"registered: why is in its log, {log}\n")
        wait_until(lambda: re.search(line, run.sluiced.log.read_text()), 20,
                   "the failed replica to be logged")
        wait_until(lambda: ev.of("nf.scale.failed"), 5, "the nf.scale.failed event")
        assert ev.of("nf.scale.failed") == [{"service": "w", "pid": pid, "model": model,
                                             "reason": "exited",
                                             "log": str(run.run_dir / "w.log")}]
        assert "sluiced refused the registration: all 2 NF instances are in use: raise " \
               "sluiced --max-nfs" in (run.run_dir / "w.log").read_text()
        again = run.client.call("nf.scale", service="w", replicas=2)
        assert len(again["started_pids"]) == 1 and again["started_pids"] != [pid], again
    finally:
        ev.close()


def test_replica_that_never_registers_is_stopped(launch, node, tmp_path):
    """A replica that has not registered within --scale-register-ms (30 s;
    3 s here; stopped with SIGSTOP as it starts; in the wild, stuck
    attaching) is logged and published as nf.scale.failed, asked to stop
    (SIGTERM) and, still there --scale-kill-ms later (5 s; 1.5 s here),
    killed; it then counts no more, so nf.scale starts another."""
    dep = _dep(node, tmp_path, [{"name": "w", "program": prog("forward"), "service": "w"}])
    dep["node"]["sluiced_args"] = ["--scale-register-ms", "3000", "--scale-kill-ms", "1500"]
    run = launch(dep)
    ev = Events(run)
    pid = 0
    try:
        res = run.client.call("nf.scale", service="w", replicas=2)
        pid = res["started_pids"][0]
        os.kill(pid, signal.SIGSTOP)
        t0 = time.monotonic()
        log = str(run.run_dir / "w.log")
        wait_until(lambda: _gone(pid), 20, f"stuck replica pid {pid} to be killed")
        took = time.monotonic() - t0
        assert 4.5 < took < 15, took  # 3 s + 1.5 s, looked at every 50 ms
        text = run.sluiced.log.read_text()
        assert f": nf.scale w: replica pid {pid} (copy of instance 0) has not registered " \
               f"within 3 s: stopping it (SIGTERM, SIGKILL after 1500 ms). What it said is in " \
               f"{log}; if this repeats, look where the next one waits: gdb -p PID -batch " \
               f"-ex 'thread apply all bt'\n" in text, text
        assert f": nf.scale w: replica pid {pid} did not stop within 1500 ms of SIGTERM: killed " \
               f"it (SIGKILL)\n" in text, text
        assert ev.of("nf.scale.failed") == [{"service": "w", "pid": pid, "model": 0,
                                             "reason": "timeout", "log": log}]
        again = run.client.call("nf.scale", service="w", replicas=2)
        assert len(again["started_pids"]) == 1, again
        wait_until(lambda: _registered(run, again["started_pids"][0]), 30, "the new replica")
    finally:
        ev.close()
        if pid and not _gone(pid):
            os.kill(pid, signal.SIGKILL)


def _fd_targets(pid: int) -> list[str]:
    fds = Path(f"/proc/{pid}/fd")
    out = []
    for fd in fds.iterdir():
        with contextlib.suppress(FileNotFoundError):  # closed meanwhile
            out.append(os.readlink(fd))
    return out


def test_replica_inherits_none_of_sluiceds_descriptors(launch, node, tmp_path):
    """A replica is forked from sluiced: it held every descriptor of
    sluiced's (about 300: hugepage and memseg files with their locks, the
    control and DPDK sockets, the DPDK config file whose lock tells NFs
    that sluiced is alive), twice a launched NF's count, and kept them
    after sluiced died. Now it has what its own attach opens, as the NF it
    copies does."""
    run = launch(_dep(node, tmp_path, [{"name": "fwd", "program": prog("forward"),
                                        "service": "forward"}]))
    model = run.nfs[0].pid
    pid = run.client.call("nf.scale", service="forward", replicas=2)["started_pids"][0]
    wait_until(lambda: any(x["pid"] == pid and x["state"] == "running"
                           for x in run.client.call("nf.list")), 15, "the replica running")
    mine, its = _fd_targets(pid), _fd_targets(model)
    sluiced = set(_fd_targets(run.sluiced.pid))
    socks = [t for t in mine if t.startswith("socket:") and t in sluiced]
    assert socks == [], socks
    assert len(mine) <= len(its) + 10, (len(mine), len(its))
