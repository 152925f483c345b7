"""sluiced against a buggy NF on the shared-memory side: tests/integration/
fuzz_nf.c sends seeded, mutated struct sl_msg through the real message ring
(and, in its other mode, sets random verdicts and metadata on the packets
it hands on) to an ASan+UBSan sluiced that forwards traffic meanwhile.

Every message must get exactly one answer with a known result and a reason
for each refusal; every packet must be accounted for by reason; afterwards
the chain forwards, buffers and messages are all back, and sluiced's log
has no sanitizer report.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    ASAN_BUILD,
    ROOT,
    assert_no_sanitizer_report,
    deployment,
    needs_asan,
    port,
    prog,
    wait_drained,
    wait_until,
)
from packets import mixed, write

RESULTS = {0, 1, 2, 11, 16, 22, 28, 95, 105}  # ok, EPERM, ENOENT, EAGAIN, EBUSY, EINVAL...
SEEDS = [1, 2, 3]
N = 150
REPLY = re.compile(r"^fuzz-reply: n=(\d+) type=(\d+) id=(-?\d+) via=(\w+) result=(-?\d+) "
                   r"error=(.*)$")

pytestmark = needs_asan


@pytest.fixture(scope="module")
def fuzz_nf(tmp_path_factory) -> str:
    """tests/integration/fuzz_nf.c, built against the ASan libsluice."""
    exe = tmp_path_factory.mktemp("fuzz") / "sluice-fuzz"
    cmd = ("cc -O1 -g -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -fsanitize=address,undefined "
           "-Iinclude -Isrc/common $(pkg-config --cflags libdpdk) tests/integration/fuzz_nf.c "
           f"{ASAN_BUILD}/src/nflib/libsluice.a $(pkg-config --libs libdpdk) -ljansson -o {exe}")
    r = subprocess.run(["sh", "-c", cmd], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"{cmd}: {r.stderr}"
    return str(exe)


def _logs(tmp_path: Path, name: str) -> str:
    return "".join(p.read_text(errors="replace") for p in tmp_path.glob(f"run*/{name}.log"))


def _run(launch, node, tmp_path, fuzz_nf, args: list[str], handoff: str) -> tuple[Any, Any]:
    frames = mixed(500, flows=50, seed=3)
    src = write(tmp_path / "in.pcap", frames)
    run = launch(deployment(
        node,
        ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src},infinite_rx=1"},
               {"name": "out", "device": "net_null0"}],
        nfs=[{"name": "a", "program": prog("forward", ASAN_BUILD), "service": "a"},
             {"name": "fuzz", "program": fuzz_nf, "service": "fuzz", "args": args}],
        chain=["a", "fuzz", "port:out"], sluiced_args=["--handoff", handoff]), ASAN_BUILD)
    return run, run.client


def _idle_in_use(run, cl) -> int:
    """Buffers in use with nothing in flight (the NFs' caches hold some)."""
    wait_until(lambda: port(cl.call("stats"), "out")["tx_pkts"] > 0 or
               cl.call("stats")["drops_total"] > 0, 20, "traffic")
    cl.call("rx.pause")
    wait_drained(run)
    n = cl.call("status")["mbufs"]["in_use"]
    cl.call("rx.resume")
    return n


def _after(run, cl, tmp_path: Path, idle_in_use: int) -> dict[str, Any]:
    """What every run must leave: cross-layer requests removed, the chain
    forwards, every packet accounted for, buffers and messages back."""
    for r in cl.call("flow.requests")["requests"]:
        cl.call("flow.request.remove", id=r["id"])
    cl.call("flow.delete", all=True)
    cl.call("chain.set", hops=["a", "port:out"])
    sent = port(cl.call("stats"), "out")["tx_pkts"]
    wait_until(lambda: port(cl.call("stats"), "out")["tx_pkts"] > sent + 5000, 20,
               "traffic through the chain after the fuzz")
    cl.call("rx.pause")
    st = wait_drained(run)
    rx = sum(p["rx_pkts"] for p in st["ports"])
    tx = sum(p["tx_pkts"] for p in st["ports"])
    assert rx == tx + sum(st["drops"].values()) == tx + st["drops_total"], st
    status = wait_until(lambda: (lambda s: s if s["mbufs"]["in_use"] == idle_in_use else None)(
        cl.call("status")), 10, "buffers back to their idle count")
    return status


def test_mutated_messages_are_refused_with_a_reason(launch, node, tmp_path, fuzz_nf):
    run = cl = None
    out: list[str] = []
    for seed in SEEDS:
        run, cl = _run(launch, node, tmp_path, fuzz_nf,
                       ["--msgs", str(N), "--seed", str(seed)], "direct")
        idle = _idle_in_use(run, cl)
        wait_until(lambda: "fuzz-done:" in _logs(tmp_path, "fuzz"), 30,
                   f"the fuzz NF's {N} messages (seed {seed})")
        status = _after(run, cl, tmp_path, idle)
        log = _logs(tmp_path, "fuzz")
        run.stop()
        out.append(log)
        assert_no_sanitizer_report(_logs(tmp_path, "sluiced"))
        refused = status["messages"]["refused"]
        lines = [ln for ln in log.splitlines() if ln.startswith("fuzz-")]
        replies = [REPLY.match(ln) for ln in lines if ln.startswith("fuzz-reply")]
        assert all(replies), lines
        # Exactly one answer per message, in order, none late or stray.
        assert [int(m[1]) for m in replies] == list(range(1, N + 1)), lines
        assert lines[-1] == f"fuzz-done: sent={N} replies={N} timeouts=0 stray=0", lines[-3:]
        for m in replies:
            result = int(m[5])
            assert result in RESULTS, m[0]
            if result != 0:
                assert m[6].strip(), m[0]  # a reason
        assert refused > 0
        assert sum(int(m[5]) != 0 for m in replies) >= refused
        for p in tmp_path.glob("run*"):
            p.rename(p.with_name(f"seed{seed}-{p.name}"))
    text = "\n".join(out)
    for reason in ("unknown message type", "unknown request kind", "flow key family",
                   "is not a running NF of pid", "registered already",
                   "ChangeDefault target", "UTF-8"):
        assert reason in text, reason


def test_random_verdicts_are_counted_drops(launch, node, tmp_path, fuzz_nf):
    run, cl = _run(launch, node, tmp_path, fuzz_nf, ["--verdicts", "--seed", "7"], "mgr")
    idle = _idle_in_use(run, cl)
    wait_until(lambda: port(cl.call("stats"), "out")["tx_pkts"] > 3000, 20, "traffic")
    wait_until(lambda: cl.call("stats")["drops"].get("invalid_dest", 0) > 1000, 20,
               "invalid destinations")
    st = cl.call("stats")
    # Every kind of bad verdict is a counted drop by reason (a chain allows
    # any edge, so no policy_violation here).
    assert st["drops"]["invalid_dest"] > 1000 and st["drops"]["nf_verdict"] > 0, st["drops"]
    assert st["drops"]["graph_gone"] > 0, st["drops"]
    _after(run, cl, tmp_path, idle)
    run.stop()
    assert_no_sanitizer_report(_logs(tmp_path, "sluiced"))
    codes = {p.label: p.exited() for p in run.processes()}
    assert codes["sluiced"] == 0, codes


LEAK = 8  # two of each kind fuzz_nf.c --leak sends


def _leak_run(launch, node, tmp_path: Path, fuzz_nf: str, then: str) -> tuple[Any, int]:
    """fuzz_nf.c --leak: a child of the fuzz NF that never registers takes
    LEAK messages, has each refused in the message itself and returns none.
    Returns the run and the child's pid, once it holds them."""
    run = launch(deployment(
        node, ports=[],
        nfs=[{"name": "fuzz", "program": fuzz_nf, "service": "fuzz",
              "args": ["--leak", str(LEAK), "--leak-then", then]}],
        chain=["fuzz", "drop"]), ASAN_BUILD)
    held = wait_until(lambda: re.search(r"^fuzz-leak: pid=(\d+) held=(\d+)$",
                                        _logs(tmp_path, "fuzz"), re.M), 20,
                      "the leaking child's answers")
    assert held[2] == str(LEAK), _logs(tmp_path, "fuzz")
    pid = int(held[1])
    (inst,) = [n["instance"] for n in run.client.call("nf.list")]
    one = [
        "fuzz-leak-reply: type=1 result=22 error=bad registration: mode 7 is neither 0 "
        "(shared) nor 1 (poll)",
        f"fuzz-leak-reply: type=5 result=1 error=request refused: instance {inst} is not a "
        f"running NF of pid {pid}; send requests between registration and deregistration",
        "fuzz-leak-reply: type=9 result=22 error=unknown message type 9: register (1), "
        "deregister (2) or request (3)",
        f"fuzz-leak-reply: type=2 result=22 error=instance {inst} is not registered to pid {pid}",
    ]
    lines = [ln for ln in _logs(tmp_path, "fuzz").splitlines() if ln.startswith("fuzz-leak")]
    assert lines[:LEAK + 1] == one * (LEAK // 4) + [f"fuzz-leak: pid={pid} held={LEAK}"], lines
    return run, pid


def _messages_stay(cl, free: int, reclaimed: int, seconds: float) -> None:
    """The pool's free and reclaimed counts are these, and stay so."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        m = cl.call("status")["messages"]
        assert (m["size"], m["free"], m["reclaimed"]) == (1023, free, reclaimed), m
        time.sleep(0.1)


def _given_back_line(pid: int) -> str:
    return (f"pid {pid} (no registered NF): {LEAK} answered message(s) it left unreturned "
            "given back (status messages.reclaimed)")


def test_refused_messages_of_an_exited_sender_come_back(launch, node, tmp_path, fuzz_nf):
    """A process that never registered and exits holding refused messages:
    sluiced gives each back exactly once, the pool is whole again."""
    run, pid = _leak_run(launch, node, tmp_path, fuzz_nf, "exit")
    cl = run.client
    m = wait_until(lambda: (m := cl.call("status")["messages"])["free"] == 1023 and m, 10,
                   "the exited child's messages back in the pool")
    assert (m["size"], m["free"], m["reclaimed"], m["refused"]) == (1023, 1023, LEAK,
                                                                    LEAK * 3 // 4), m
    _messages_stay(cl, 1023, LEAK, 1.0)
    assert _logs(tmp_path, "sluiced").count(_given_back_line(pid)) == 1, \
        _logs(tmp_path, "sluiced")
    run.stop()
    assert_no_sanitizer_report(_logs(tmp_path, "sluiced"))


def test_refused_messages_of_a_hung_sender_stay_its_until_it_dies(launch, node, tmp_path,
                                                                  fuzz_nf):
    """While the sender lives, what it holds is its own (none given back
    behind its back); killed, all of it comes back."""
    run, pid = _leak_run(launch, node, tmp_path, fuzz_nf, "hang")
    cl = run.client
    try:
        _messages_stay(cl, 1023 - LEAK, 0, 2.5)
    finally:  # the child is no process the launcher knows: never leave it
        os.kill(pid, signal.SIGKILL)
    wait_until(lambda: cl.call("status")["messages"]["free"] == 1023, 10,
               "the killed child's messages back in the pool")
    _messages_stay(cl, 1023, LEAK, 1.0)
    assert _logs(tmp_path, "sluiced").count(_given_back_line(pid)) == 1, \
        _logs(tmp_path, "sluiced")
    run.stop()
    assert_no_sanitizer_report(_logs(tmp_path, "sluiced"))


def test_refused_messages_returned_late_are_not_given_back_twice(launch, node, tmp_path,
                                                                 fuzz_nf):
    """A sender that returns its refused messages itself, 2 s later: sluiced
    gives none of them back (it would then be in the pool twice)."""
    run, pid = _leak_run(launch, node, tmp_path, fuzz_nf, "late")
    cl = run.client
    _messages_stay(cl, 1023 - LEAK, 0, 1.5)
    wait_until(lambda: f"fuzz-leak: returned={LEAK}" in _logs(tmp_path, "fuzz"), 10,
               "the child returning its messages")
    wait_until(lambda: not Path(f"/proc/{pid}").exists(), 10, "the child to exit")
    _messages_stay(cl, 1023, 0, 1.0)
    assert "(no registered NF)" not in _logs(tmp_path, "sluiced")
    run.stop()
    assert_no_sanitizer_report(_logs(tmp_path, "sluiced"))
