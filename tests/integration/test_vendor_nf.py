"""An NF vendor's walk through docs/nf-guide.md, past the TTL example:
docs/examples/ttlx.c (its own options after the --, the header pointers of
sluice/pkt.h, a SkipMe, on_message, on_reply, a counters line) is built
out of the tree with the guide's command and -Wall -Wextra -Werror and run
in a chain; and the errors a vendor meets say what was wrong."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from conftest import ROOT, build_dir, deployment, port, wait_drained, wait_until
from packets import write
from scapy.all import IP, TCP, UDP, Dot1Q, Ether

GUIDE = ROOT / "docs" / "nf-guide.md"
SLUICE_CLI = ROOT / ".venv" / "bin" / "sluice"


def _build(tmp_path: Path, source: str, exe: str) -> Path:
    """Builds docs/examples/SOURCE in a folder of its own with the guide's
    first cc command (against the build tree), warnings as errors."""
    cmd = re.search(r"```sh\nSLUICE=\S+\n(cc .*?)\n```", GUIDE.read_text(), re.S).group(1)
    cmd = cmd.replace("\\\n", " ").replace("$SLUICE/build/", f"{build_dir()}/")
    cmd = cmd.replace(" -O2 ", " -O2 -Wall -Wextra -Werror ")
    cmd = cmd.replace("ttl.c", source).replace("-o sluice-ttl", f"-o {exe}")
    vendor = tmp_path / "vendor"
    vendor.mkdir(exist_ok=True)
    shutil.copy(ROOT / "docs" / "examples" / source, vendor)
    r = subprocess.run(["sh", "-c", cmd], cwd=vendor, env={**os.environ, "SLUICE": str(ROOT)},
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"{cmd}: {r.stderr}"
    return vendor / exe


def _frames() -> list[bytes]:
    frames = []
    for _ in range(4):
        frames.append(bytes(Ether() / IP(src="10.0.0.1", dst="10.0.0.2", ttl=64)
                            / UDP(sport=1000, dport=53) / b"q"))
        frames.append(bytes(Ether() / Dot1Q(vlan=7) / IP(src="10.0.0.3", dst="10.0.0.4", ttl=1)
                            / TCP(sport=2000, dport=80)))
        frames.append(bytes(Ether() / IP(src="10.0.0.5", dst="10.0.0.6", ttl=5)
                            / TCP(sport=3000, dport=443)))
    return frames


def test_extended_nf_helpers_skipme_message_stats(launch, node, tmp_path):
    exe = _build(tmp_path, "ttlx.c", "sluice-ttlx")
    frames = _frames()
    src = write(tmp_path / "in.pcap", frames)
    run = launch(deployment(
        node,
        ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src}"},
               {"name": "out", "device": f"net_pcap1,tx_pcap={tmp_path / 'out.pcap'}"}],
        nfs=[{"name": "ttlx", "program": str(exe), "service": "ttlx",
              "args": ["--skip-port", "53", "--stats-ms", "0"]}],
        chain=["ttlx", "port:out"]))
    st = wait_drained(run)
    assert port(st, "in")["rx_pkts"] == 12
    assert port(st, "out")["tx_pkts"] == 8  # the 4 tagged packets had TTL 1
    assert st["nfs"][0]["drops"]["nf_verdict"] == 4
    log = tmp_path / "run0" / "ttlx.log"
    wait_until(lambda: "ttlx: reply to 1: 0 ''\n" in log.read_text(), 10, "the SkipMe's reply")
    assert "ttlx: skip_me request 1\n" in log.read_text()
    flows = {f["key"]: f for f in run.client.call("flow.list")["flows"]}
    assert flows["udp 10.0.0.1:1000 > 10.0.0.2:53"]["overrides"] == [
        {"service": "ttlx", "type": "skip"}]
    assert flows["tcp 10.0.0.5:3000 > 10.0.0.6:443"]["overrides"] == []
    # Packets of the UDP flow already on their way still reached the NF;
    # those after the SkipMe went past it (the guide says so).
    seen = st["nfs"][0]["rx_pkts"]
    assert 9 <= seen <= 12, st["nfs"][0]

    # on_message, sent by hand as the guide says.
    r = subprocess.run([SLUICE_CLI, "flow", "request", "message", "--node", node,
                        "ttlx", "stats", "now"], capture_output=True, text=True, timeout=30)
    assert (r.returncode, r.stdout) == (
        0, "message: queued for 1 instance(s) of ttlx (their on_message gets it)\n"), r.stderr
    line = wait_until(lambda: re.search(r"^ttlx-stats: reason=message .*$", log.read_text(),
                                        re.M), 10, "the message's counters line").group(0)
    assert re.fullmatch(rf"ttlx-stats: reason=message uptime=\d+\.\d packets={seen} "
                        rf"bytes=\d+ pps=\d+ tcp=8 udp={seen - 8} vlan=4", line), line
    assert "ttlx: message stats=now\n" in log.read_text()
    run.stop()
    assert re.search(rf"^ttlx-stats: reason=exit .* packets={seen} ", log.read_text(), re.M)


def test_extended_nf_option_errors(launch, node, tmp_path):
    """The NF's own options are checked in init, after registration: each
    error says what was wrong, then libsluice's line, exit status 1."""
    exe = _build(tmp_path, "ttlx.c", "sluice-ttlx")
    run = launch(deployment(node, ports=[{"name": "out", "device": "net_null0,no-rx=1"}],
                            nfs=[{"name": "fwd", "program": "sluice-forward",
                                  "service": "forward"}],
                            chain=["forward", "port:out"]))
    usage = (ROOT / "docs" / "examples" / "ttlx.c").read_text()
    assert "--skip-port N   SkipMe" in usage
    cases = [
        (["--skip-port", "70000"],
         f"{exe}: --skip-port: '70000' is not a whole number from 0 to 65535\n"),
        (["--stats-ms=1.5"], f"{exe}: --stats-ms: '1.5' is not a whole number from 0 to 3600000\n"),
        (["extra"], f"{exe}: unexpected argument 'extra'\n"),
    ]
    for args, first in cases:
        r = subprocess.run([exe, "--", "--node", node, "-s", "ttlxbad", *args],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 1, r
        assert r.stderr.startswith(first), r.stderr
        assert r.stderr.endswith(f"{exe}: initialisation failed (Invalid argument)\n"), r.stderr
    # Each deregistered on the way out: only the forwarder is left.
    wait_until(lambda: [n["service"] for n in run.client.call("nf.list")] == ["forward"], 5,
               "the refused NFs to be gone from nf.list")


def test_nf_without_init_refuses_options_and_bad_core(tmp_path, node):
    """ttl.c has no init: an argument libsluice does not know (a typo of
    one of its own) is refused before anything else, as the guide says;
    and --core names a CPU the process may run on. Neither needs sluiced."""
    exe = _build(tmp_path, "ttl.c", "sluice-ttl")
    env = {**os.environ, "SLUICE_NODE": node}
    r = subprocess.run([exe, "--", "--mdoe", "poll"], env=env, capture_output=True, text=True,
                       timeout=30)
    assert (r.returncode, r.stdout, r.stderr) == (
        1, "", f"{exe}: unknown option '--mdoe': this NF takes no options of its own (it has"
               " no init); libsluice's are --node, --service (-s), --instance, --mode and"
               " --core (--help)\n")
    guide = " ".join(GUIDE.read_text().split())
    assert ("`PROG: unknown option '--mdoe': this NF takes no options of its own (it has no"
            " init); libsluice's are --node, --service (-s), --instance, --mode and --core"
            " (--help)`") in guide
    allowed = sorted(os.sched_getaffinity(0))
    bad = max(allowed) + 1
    r = subprocess.run(["taskset", "-c", "0", exe, "--", "--core", "1"], env=env,
                       capture_output=True, text=True, timeout=30)
    assert (r.returncode, r.stdout, r.stderr) == (
        1, "", f"{exe}: --core 1: this process may not run on CPU 1; give one of the CPUs it"
               " may run on: 0\n")
    r = subprocess.run([exe, "--", "--core", str(bad)], env=env, capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 1 and r.stderr.startswith(
        f"{exe}: --core {bad}: this process may not run on CPU {bad}; give one of the CPUs"
        " it may run on: "), r.stderr
    # Without a sluiced of that name: the guide's line.
    r = subprocess.run([exe, "--", "--node", node], capture_output=True, text=True, timeout=30)
    assert (r.returncode, r.stderr) == (
        1, f"{exe}: no sluiced named '{node}' is running (/var/run/dpdk/sluice_{node}/config"
           f" not found): start it first (sluiced -- --name {node}), or pass --node NAME\n")
