"""A Message from an NF that some instances of its service miss: the
sender hears it in its on_reply and libsluice's log, sluiced counts it.

tests/integration/message_nf.c is both ends: a sender that, told by the
control socket, sends numbered Messages to the service rx, one every
millisecond, and prints each on_reply; and the two instances of rx, which
print every Message they get. One rx instance is stopped (SIGSTOP; sluiced
runs with --nf-hang-ms 0, so it is not killed as hung): its inbox fills and
then only the other instance gets the messages.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

import pytest
from conftest import (
    ASAN_BUILD,
    ROOT,
    assert_no_sanitizer_report,
    build_dir,
    deployment,
    needs_asan,
    wait_until,
)

N = 400  # messages sent
# A stopped instance's inbox takes this many: SL_INBOX_SIZE (256) is the
# size of its rte_ring, which holds one less.
INBOX_HOLDS = 255
REASON = ("1 of the 2 instances of 'rx' had a full inbox and did not get it "
          "(status messages.undelivered)")
REPLY = re.compile(r"msgnf-reply: n=(\d+) id=(\d+) result=(-?\d+) reason=(.*)")


def _build(tmp_path: Path, build: Path, asan: bool) -> str:
    """tests/integration/message_nf.c against that build's libsluice."""
    exe = tmp_path / "sluice-msgnf"
    flags = "-O1 -g -fsanitize=address,undefined" if asan else "-O2"
    cmd = (f"cc {flags} -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Iinclude "
           "$(pkg-config --cflags libdpdk) tests/integration/message_nf.c "
           f"{build}/src/nflib/libsluice.a $(pkg-config --libs libdpdk) -ljansson -o {exe}")
    r = subprocess.run(["sh", "-c", cmd], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"{cmd}: {r.stderr}"
    return str(exe)


def _received(log: Path) -> list[str]:
    return re.findall(r"^msgnf-received: key=noop value=(\d+)$", log.read_text(), re.M)


@pytest.mark.parametrize("asan", [False, pytest.param(True, marks=needs_asan)],
                         ids=["release", "asan"])
def test_a_message_some_instances_missed_says_so_to_the_sending_nf(launch, node, tmp_path,
                                                                    asan):
    build = ASAN_BUILD if asan else build_dir()
    exe = _build(tmp_path, build, asan)
    run = launch(deployment(node, ports=[], nfs=[
        {"name": "rx1", "program": exe, "service": "rx"},
        {"name": "rx2", "program": exe, "service": "rx"},
        {"name": "sender", "program": exe, "service": "sender", "args": ["--to", "rx"]}],
        chain=["rx", "drop"], sluiced_args=["--nf-hang-ms", "0"]), build)
    wait_until(lambda: len(run.client.call("nf.list")) == 3, 10, "the three NFs")
    rx1, rx2, sender = run.nfs
    os.kill(rx2.pid, signal.SIGSTOP)
    try:
        assert run.client.call("flow.request", type="message", service="sender", key="send",
                               value=str(N)) == {"applied": 1}
        wait_until(lambda: "msgnf-done:" in sender.log.read_text(), 60,
                   f"the sender to have sluiced's answer to its {N} messages")
    finally:
        os.kill(rx2.pid, signal.SIGCONT)
    status = run.client.call("status")
    # Both read what their inboxes took before we stop them.
    wait_until(lambda: len(_received(rx1.log)) >= N and len(_received(rx2.log)) >= INBOX_HOLDS,
               10, "the two instances of rx to read their inboxes")
    run.stop()
    log = sender.log.read_text()

    # (a) Every message sent; its answer: 0, and a reason once the stopped
    # one's inbox was full (with the first INBOX_HOLDS, none).
    replies = sorted((int(n), int(i), int(r), why) for n, i, r, why in REPLY.findall(log))
    assert replies == [(n, n + 1, 0, "" if n < INBOX_HOLDS else REASON)
                       for n in range(N)], replies
    assert f"msgnf-done: sent={N} replies={N}\n" in log
    assert not re.search(r"^msgnf-(not-queued|stray|ignored)", log, re.M), log
    # (b) libsluice's line on stderr, just before the NF's own, for each
    # partial one, and for no other.
    lines = [ln for ln in log.splitlines() if "(message)" in ln or ln.startswith("msgnf-reply")]
    want = []
    for n in range(N):
        if n >= INBOX_HOLDS:
            want.append(f"{exe}: request {n + 1} (message): {REASON}")
        want.append(f"msgnf-reply: n={n} id={n + 1} result=0 reason="
                    + ("" if n < INBOX_HOLDS else REASON))
    assert lines == want, lines
    # (c) sluiced counted the copies the stopped one missed.
    assert status["messages"]["undelivered"] == N - INBOX_HOLDS, status["messages"]
    # The running instance got every message, the stopped one the first ones.
    assert _received(rx1.log) == [str(n) for n in range(N)]
    assert _received(rx2.log) == [str(n) for n in range(INBOX_HOLDS)]
    if asan:
        assert_no_sanitizer_report("".join(p.log.read_text() for p in [run.sluiced, *run.nfs]))
