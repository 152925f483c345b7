#!/usr/bin/env python3
"""Open vSwitch with DPDK as a benchmark peer: a private OVS-DPDK on the same vdevs.

Everything runs by hand in a private run directory (never the system's
service, database or sockets): its own ovsdb-server and conf.db, its own
ovs-vswitchd with DPDK (``--no-pci``, a unique ``--file-prefix``, a
hugepage limit) and one PMD thread on one core. One bridge
(``datapath_type=netdev``) with two ``dpdk`` ports on the vdevs
bench/port.py uses: ``net_pcap0,rx_pcap=<capture>,infinite_rx=1`` (in,
OpenFlow port 1) and ``net_null0,no-rx=1`` (out, port 2); the bridge's own
local port is a Linux tap named after the bridge (``sl<tag>``), left down,
and removed with the bridge (a leftover is recorded as a leak). Rules, installed
with ``ovs-ofctl add-flows`` from a file before the ports exist (so no packet
meets an empty table):

  exact     one rule per flow of the capture:
            in_port=1,udp,nw_src=S,nw_dst=D,tp_src=SP,tp_dst=DP,actions=output:2
  wildcard  one rule: in_port=1,udp,actions=output:2

The EMC, SMC and megaflow cache settings are left at OVS's defaults and
recorded (with ``dpif-netdev/pmd-stats-show``: EMC/SMC/megaflow hits and
upcalls during the measurement, and ``upcall/show``: datapath flows and the
flow limit). Rate: out port tx packets from ``ovs-ofctl dump-ports``,
sampled every second after a warm-up (at least --warmup s, and until the
datapath holds a megaflow per flow: OVS's default dynamic flow limit starts
at 10,000 and grows by 1,000 per revalidator round, so 100,000 exact flows
take a minute or more to reach their steady state); the median of the
per-second rates.
At the end: ``exit --cleanup``, SIGTERM (SIGKILL if needed) by pid, and the
hugepage files of the prefix, its DPDK runtime directory and the run
directory are removed.

As a command (root; installs openvswitch-switch-dpdk with apt if missing):

    nice -n -15 .venv/bin/python bench/ovs.py --flows 1000,100000 --rules exact,wildcard

prints JSON, writes it to bench/results/ovs.json (--out) and a plot to
bench/results/ovs.png (--plot); the last line is
``ovs Mpps: exact/1000=… wildcard/1000=… …``. As a module:
``run_ovs(pcap, rules, cpus=[0, 1], warmup=5, duration=5, logdir=...)``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harness import (
    RESULTS,
    BenchError,
    Processes,
    Started,
    bench_command,
    cpu_list,
    dpdk_leftovers,
    free_hugepage_mib,
    host_info,
    int_list,
    log,
    name_list,
    one_benchmark_at_a_time,
    parse_cpus,
    positive_int,
    remove_paths,
    sample_counter,
    save_plot,
    seconds,
    sigterm_as_interrupt,
    unique_name,
    write_json,
)
from port import SINK_DEVICE, pcap_device  # the same vdev strings as port.py

PACKAGE = "openvswitch-switch-dpdk"
VSWITCHD_DPDK = Path("/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk")
SCHEMA = Path("/usr/share/openvswitch/vswitch.ovsschema")
IN_OFPORT = 1
OUT_OFPORT = 2
SOCKET_MEM_MB = 1024  # OVS's shared mempool: 262,144 mbufs of ~2.4 KiB (MTU 1500)
MAX_WARMUP_S = 240.0
WILDCARD_RULE = f"in_port={IN_OFPORT},udp,actions=output:{OUT_OFPORT}"
TOOLS = ("ovsdb-tool", "ovsdb-server", "ovs-vsctl", "ovs-ofctl", "ovs-appctl")


# -- installation -------------------------------------------------------------------

def ensure_installed() -> dict[str, Any]:
    """apt-get installs openvswitch-switch-dpdk if it is missing and points the
    ovs-vswitchd alternative at the DPDK build. Returns what was done and the version."""
    done: list[str] = []
    if not VSWITCHD_DPDK.exists() or any(shutil.which(t) is None for t in TOOLS):
        log(f"installing {PACKAGE} (apt-get)")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        r = subprocess.run(["apt-get", "install", "-y", PACKAGE], capture_output=True,
                           text=True, env=env, check=False)
        if r.returncode != 0:
            subprocess.run(["apt-get", "update"], capture_output=True, env=env, check=False)
            r = subprocess.run(["apt-get", "install", "-y", PACKAGE], capture_output=True,
                               text=True, env=env, check=False)
        if r.returncode != 0:
            raise BenchError(f"apt-get install -y {PACKAGE} failed:\n{r.stderr[-2000:]}")
        done.append(f"apt-get install -y {PACKAGE}")
    if not VSWITCHD_DPDK.exists():
        raise BenchError(f"{VSWITCHD_DPDK} not found after installing {PACKAGE}")
    link = Path("/usr/sbin/ovs-vswitchd")
    if link.exists() and link.resolve() != VSWITCHD_DPDK.resolve():
        argv = ["update-alternatives", "--set", "ovs-vswitchd", str(VSWITCHD_DPDK)]
        subprocess.run(argv, capture_output=True, check=False)
        done.append(shlex.join(argv))
    version = subprocess.run([str(VSWITCHD_DPDK), "--version"], capture_output=True,
                             text=True, check=False).stdout.strip().replace("\n", ", ")
    return {"actions": done, "vswitchd": str(VSWITCHD_DPDK), "version": version}


# -- rules --------------------------------------------------------------------------

def capture_flows(pcap: Path) -> list[tuple[str, str, int, int]]:
    """The distinct IPv4/UDP (src, dst, sport, dport) of a capture, in first-seen order."""
    data = pcap.read_bytes()
    magic = struct.unpack_from("<I", data)[0]
    if magic in (0xA1B2C3D4, 0xA1B23C4D):
        end = "<"
    elif magic in (0xD4C3B2A1, 0x4D3CB2A1):
        end = ">"
    else:
        raise BenchError(f"{pcap}: not a classic pcap file")
    seen: dict[tuple[str, str, int, int], None] = {}
    off = 24
    rec = struct.Struct(end + "IIII")
    while off + 16 <= len(data):
        _, _, caplen, _ = rec.unpack_from(data, off)
        off += 16
        f = data[off:off + caplen]
        off += caplen
        if len(f) < 42 or f[12:14] != b"\x08\x00" or f[23] != 17:
            continue
        ihl = (f[14] & 0x0F) * 4
        sport, dport = struct.unpack_from("!HH", f, 14 + ihl)
        key = (".".join(map(str, f[26:30])), ".".join(map(str, f[30:34])), sport, dport)
        seen.setdefault(key, None)
    return list(seen)


def exact_rules(flows: Iterable[tuple[str, str, int, int]]) -> list[str]:
    return [f"in_port={IN_OFPORT},udp,nw_src={s},nw_dst={d},tp_src={sp},tp_dst={dp},"
            f"actions=output:{OUT_OFPORT}" for s, d, sp, dp in flows]


# -- one private OVS-DPDK -----------------------------------------------------------

class Ovs:
    """A private ovsdb-server + ovs-vswitchd (DPDK) with one bridge and two vdev ports.

    Use as a context manager; ``stop`` (on exit) tears everything down and
    records leftovers in ``self.leaks``."""

    def __init__(self, procs: Processes, cpus: list[int], tag: str,
                 socket_mem_mb: int = SOCKET_MEM_MB, isolate_pmd: bool = True):
        self.procs = procs
        self.cpus = cpus
        self.pmd_cpu = cpus[1]
        self.prefix = tag  # DPDK file prefix
        self.bridge = f"sl{tag}"[:15]  # the netdev datapath's local port is a tap of this name
        self.socket_mem_mb = socket_mem_mb
        self.isolate_pmd = isolate_pmd
        self.thread_layout: dict[str, str] = {}
        self.rundir = Path(tempfile.mkdtemp(prefix=f"sluice-ovs-{tag}-"))
        self.db_sock = self.rundir / "db.sock"
        self.env = dict(os.environ, OVS_RUNDIR=str(self.rundir), OVS_DBDIR=str(self.rundir),
                        OVS_LOGDIR=str(self.rundir), OVS_PKGDATADIR="/usr/share/openvswitch")
        self.ovsdb: Started | None = None
        self.vswitchd: Started | None = None
        self.commands: list[str] = []  # every ovs-* control command, in order
        self.leaks: list[str] = []
        self.stragglers: list[str] = []
        self.layout: dict[str, str] = {}
        self.dpdk_extra = (f"--no-pci --file-prefix={self.prefix} --huge-unlink "
                           f"--socket-mem={socket_mem_mb} --socket-limit={socket_mem_mb}")

    # control commands
    def run(self, argv: list[str], timeout: float = 60, record: bool = True,
            check: bool = True) -> str:
        if record:
            self.commands.append(shlex.join(argv))
        try:
            r = subprocess.run(argv, capture_output=True, text=True, env=self.env,
                               timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            raise BenchError(f"{shlex.join(argv)}: no answer within {timeout:g} s") from None
        if check and r.returncode != 0:
            raise BenchError(f"{shlex.join(argv)} failed ({r.returncode}): "
                             f"{r.stderr.strip()[-1500:]}")
        return r.stdout

    def vsctl(self, *args: str, wait: bool = True, **kw: Any) -> str:
        argv = ["ovs-vsctl", f"--db=unix:{self.db_sock}", "--timeout=30"]
        if not wait:
            argv.append("--no-wait")
        return self.run([*argv, *args], **kw)

    def ofctl(self, *args: str, **kw: Any) -> str:
        return self.run(["ovs-ofctl", *args], **kw)

    def appctl(self, *args: str, **kw: Any) -> str:
        return self.run(["ovs-appctl", "-t", str(self.rundir / "ovs-vswitchd.ctl"), *args],
                        **kw)

    def _check_alive(self, s: Started | None, what: str) -> None:
        if s is not None and not s.alive():
            raise BenchError(f"{what} exited with {s.proc.returncode}:\n{s.tail()}\n"
                             f"log: {self._log_tail(what)}")

    def _log_tail(self, what: str, n: int = 15) -> str:
        with contextlib.suppress(OSError):
            return "\n".join((self.rundir / f"{what}.log").read_text(
                errors="replace").splitlines()[-n:])
        return ""

    def __enter__(self) -> Ovs:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        d = self.rundir
        cpus = cpu_list(self.cpus)
        self.run(["ovsdb-tool", "create", str(d / "conf.db"), str(SCHEMA)])
        self.ovsdb = self.procs.start("ovsdb-server", [
            "taskset", "-c", cpus, "ovsdb-server", str(d / "conf.db"),
            f"--remote=punix:{self.db_sock}", f"--unixctl={d / 'ovsdb-server.ctl'}",
            f"--pidfile={d / 'ovsdb-server.pid'}", f"--log-file={d / 'ovsdb-server.log'}"],
            cpus, env=self.env)
        deadline = time.monotonic() + 15
        while not self.db_sock.exists():
            self._check_alive(self.ovsdb, "ovsdb-server")
            if time.monotonic() > deadline:
                raise BenchError("ovsdb-server did not create its socket within 15 s")
            time.sleep(0.05)
        self.vsctl("init", wait=False)
        self.vsctl("set", "Open_vSwitch", ".", "other_config:dpdk-init=true",
                   f'other_config:dpdk-extra="{self.dpdk_extra}"',
                   f"other_config:pmd-cpu-mask={1 << self.pmd_cpu:#x}", wait=False)
        self.vswitchd = self.procs.start("ovs-vswitchd", [
            "taskset", "-c", cpus, str(VSWITCHD_DPDK), f"unix:{self.db_sock}",
            f"--unixctl={d / 'ovs-vswitchd.ctl'}", f"--pidfile={d / 'ovs-vswitchd.pid'}",
            f"--log-file={d / 'ovs-vswitchd.log'}"], cpus, env=self.env)
        others = (f"CPU {self.cpus[0]} (moved there once running: the PMD core is left to "
                  f"the PMD)" if self.isolate_pmd else f"floating on CPUs {cpus}")
        self.layout = {
            "ovsdb-server": others,
            "ovs-vswitchd": (f"1 PMD thread pinned to CPU {self.pmd_cpu} "
                             f"(pmd-cpu-mask={1 << self.pmd_cpu:#x}); main, handler, "
                             f"revalidator and other threads: {others}"),
        }
        deadline = time.monotonic() + 60
        while True:
            self._check_alive(self.vswitchd, "ovs-vswitchd")
            out = self.vsctl("--if-exists", "get", "Open_vSwitch", ".", "dpdk_initialized",
                             wait=False, record=False, check=False).strip()
            if out == "true":
                break
            if time.monotonic() > deadline:
                raise BenchError(f"ovs-vswitchd: DPDK not initialized within 60 s:\n"
                                 f"{self._log_tail('ovs-vswitchd')}")
            time.sleep(0.2)

    def setup(self, in_device: str, out_device: str, rules: list[str]) -> None:
        """Bridge, rules (from a file), then both ports in one transaction."""
        br = self.bridge
        self.vsctl("add-br", br, "--", "set", "bridge", br, "datapath_type=netdev",
                   "fail_mode=secure")
        self.ofctl("del-flows", br)
        rules_file = self.rundir / "rules.txt"
        rules_file.write_text("\n".join(rules) + "\n")
        t0 = time.monotonic()
        self.ofctl("add-flows", br, str(rules_file), timeout=600)
        self.rules_install_s = time.monotonic() - t0
        n = self.ofctl("dump-aggregate", br, record=False)
        m = re.search(r"flow_count=(\d+)", n)
        self.rules_installed = int(m.group(1)) if m else None
        if self.rules_installed != len(rules):
            raise BenchError(f"{len(rules)} rules added, the bridge has {self.rules_installed}")
        self.vsctl("add-port", br, "in", "--", "set", "Interface", "in", "type=dpdk",
                   f'options:dpdk-devargs="{in_device}"', f"ofport_request={IN_OFPORT}",
                   "--", "add-port", br, "out", "--", "set", "Interface", "out", "type=dpdk",
                   f'options:dpdk-devargs="{out_device}"', f"ofport_request={OUT_OFPORT}")
        for port, want in (("in", IN_OFPORT), ("out", OUT_OFPORT)):
            err = self.vsctl("get", "Interface", port, "error", record=False).strip()
            ofp = self.vsctl("get", "Interface", port, "ofport", record=False).strip()
            if ofp != str(want) or (err and err != "[]"):
                raise BenchError(f"OVS port {port}: ofport {ofp}, error {err}:\n"
                                 f"{self._log_tail('ovs-vswitchd')}")
        self.pin_threads()

    def pin_threads(self) -> dict[str, str]:
        """With ``isolate_pmd``: every ovs-vswitchd thread but the PMD threads (which pin
        themselves to the PMD core) and ovsdb-server move to the first CPU, the usual
        OVS-DPDK practice of keeping the PMD core to the PMD. Returns thread -> CPUs."""
        out: dict[str, str] = {}
        for s in (self.vswitchd, self.ovsdb):
            if s is None or not s.alive():
                continue
            for task in Path(f"/proc/{s.proc.pid}/task").iterdir():
                try:
                    comm = (task / "comm").read_text().strip()
                    tid = int(task.name)
                    if self.isolate_pmd and not comm.startswith("pmd"):
                        os.sched_setaffinity(tid, {self.cpus[0]})
                    out[f"{comm}[{tid}]"] = cpu_list(sorted(os.sched_getaffinity(tid)))
                except (OSError, ValueError):
                    continue
        self.thread_layout = out
        return out

    def out_tx_packets(self) -> int:
        text = self.ofctl("dump-ports", self.bridge, str(OUT_OFPORT), record=False, timeout=10)
        m = re.search(r"tx pkts=(\d+)", text)
        if m is None:
            raise BenchError(f"ovs-ofctl dump-ports: no tx pkts in:\n{text}")
        return int(m.group(1))

    def cache_config(self) -> dict[str, Any]:
        """The cache settings in effect: all defaults (nothing is set), as OVS reports them."""
        oc = self.vsctl("get", "Open_vSwitch", ".", "other_config", record=False).strip()
        return {
            "other_config": oc,
            "emc": "enabled, emc-insert-inv-prob unset (default 100: 1 in 100 misses inserted), "
                   "8192 entries per PMD",
            "smc": "smc-enable unset (default false)",
            "megaflow": "enabled (dpif-netdev, per-PMD dpcls); flow-limit unset (default "
                        "200000), max-idle unset (default 10000 ms)",
            "dpif_impl": self.appctl("dpif-netdev/dpif-impl-get", record=False,
                                     check=False).strip(),
            "upcall_show": self.appctl("upcall/show", record=False, check=False).strip(),
        }

    def pmd_stats(self) -> str:
        return self.appctl("dpif-netdev/pmd-stats-show", record=False, check=False)

    def upcall_flows(self) -> tuple[int, int]:
        """(datapath flows now, the dynamic flow limit) from upcall/show."""
        text = self.appctl("upcall/show", record=False, check=False)
        m = re.search(r"\(current (\d+)\).*\(limit (\d+)\)", text)
        return (int(m.group(1)), int(m.group(2))) if m else (0, 0)

    def datapath_flows(self) -> int | None:
        m = re.search(r"flows:\s*(\d+)", self.appctl("dpctl/show", record=False, check=False))
        return int(m.group(1)) if m else None

    def stop(self) -> None:
        if self.vswitchd is not None and self.vswitchd.alive():
            with contextlib.suppress(BenchError):
                self.vsctl("--if-exists", "del-br", self.bridge, timeout=20)
            with contextlib.suppress(BenchError):
                self.appctl("exit", "--cleanup", timeout=20)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.vswitchd.proc.wait(timeout=10)
        if self.ovsdb is not None and self.ovsdb.alive():
            with contextlib.suppress(ProcessLookupError):
                self.ovsdb.proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.ovsdb.proc.wait(timeout=5)
        self.stragglers = self.procs.stop_all()
        left = dpdk_leftovers(self.prefix)
        # the runtime directory stays after a normal DPDK exit; hugepage files must not
        self.leaks = [str(p) for p in left if p.name != self.prefix]
        remove_paths(left)
        if Path(f"/sys/class/net/{self.bridge}").exists():
            self.leaks.append(f"network interface {self.bridge}")
        for name in ("ovs-vswitchd.log", "ovsdb-server.log"):
            src = self.rundir / name
            if src.exists():
                with contextlib.suppress(OSError):
                    shutil.copy(src, self.procs.logdir / name)
        shutil.rmtree(self.rundir, ignore_errors=True)


def run_ovs(pcap: Path, rules: str, cpus: list[int], warmup: float, duration: int,
            logdir: Path, seq: int = 0, flows: list[tuple[str, str, int, int]] | None = None,
            max_warmup: float = MAX_WARMUP_S, isolate_pmd: bool = True) -> dict[str, Any]:
    """One measurement: a fresh OVS-DPDK, ``rules`` = exact | wildcard, on ``pcap``.

    Measures after ``warmup`` s, or once the datapath has a megaflow for every
    flow (exact rules) if that takes longer, up to ``max_warmup`` s."""
    if rules not in ("exact", "wildcard"):
        raise BenchError(f"rules {rules!r}: use exact or wildcard")
    tag = unique_name("ovs", seq)
    procs = Processes(logdir / tag)
    if flows is None:
        flows = capture_flows(pcap)
    rule_lines = exact_rules(flows) if rules == "exact" else [WILDCARD_RULE]
    run: dict[str, Any] = {"rules": rules, "n_rules": len(rule_lines), "flows": len(flows),
                           "rule_example": rule_lines[0], "prefix": tag, "error": None,
                           "loadavg_at_start": os.getloadavg()}
    ovs = Ovs(procs, cpus, tag, isolate_pmd=isolate_pmd)
    try:
        with ovs:
            ovs.setup(pcap_device(pcap), SINK_DEVICE, rule_lines)
            run["rules_install_s"] = ovs.rules_install_s
            deadline = time.monotonic() + 60
            while ovs.out_tx_packets() == 0:
                ovs._check_alive(ovs.vswitchd, "ovs-vswitchd")
                if time.monotonic() > deadline:
                    raise BenchError("no packet left the out port within 60 s")
                time.sleep(0.1)
            # Warm-up: at least ``warmup`` s, and until the datapath holds a megaflow
            # per flow and the dynamic flow limit (starts at 10,000, grows by 1,000
            # per revalidator round) has room for them all: before that, flows are
            # evicted and re-upcalled and the rate is a fraction of the steady one.
            t_traffic = time.monotonic()
            want = len(flows) if rules == "exact" else 1
            time.sleep(warmup)
            while True:
                dp, limit = ovs.upcall_flows()
                if dp >= want and limit >= want:
                    break
                ovs._check_alive(ovs.vswitchd, "ovs-vswitchd")
                if time.monotonic() - t_traffic > max_warmup:
                    run["steady_warning"] = (f"after {max_warmup:g} s the datapath held {dp} "
                                             f"of {want} flows: measured anyway")
                    log(f"  {tag}: {run['steady_warning']}")
                    break
                time.sleep(1.0)
            if time.monotonic() - t_traffic > warmup + 0.5:
                time.sleep(3.0)  # let the last upcalls and revalidation settle
            run["warmup_s"] = time.monotonic() - t_traffic
            run["threads"] = ovs.pin_threads()  # again: threads started since
            ovs.appctl("dpif-netdev/pmd-stats-clear", record=False)
            samples, whole, _ = sample_counter(ovs.out_tx_packets, duration)
            ovs._check_alive(ovs.vswitchd, "ovs-vswitchd")
            run["pmd_stats"] = ovs.pmd_stats()
            run["pmd_summary"] = parse_pmd_stats(run["pmd_stats"])
            run["datapath_flows"] = ovs.datapath_flows()
            run["caches"] = ovs.cache_config()
            run["samples_tx_pps"] = samples
            run["mpps"] = statistics.median(samples) / 1e6
            run["out_tx_mpps_interval"] = whole / 1e6
    except BenchError as e:
        run["error"] = str(e)
    finally:
        run["commands"] = procs.records()
        run["control_commands"] = [c if len(c) < 400 else c[:400] + "..."
                                   for c in ovs.commands]
        run["dpdk_extra"] = ovs.dpdk_extra
        run["core_layout"] = ovs.layout
        run["leaks"] = ovs.leaks
        run["stragglers"] = ovs.stragglers
    for problem in ("leaks", "stragglers"):
        if run[problem]:
            log(f"  {tag}: {problem}: {run[problem]}")
    return run


def parse_pmd_stats(text: str) -> dict[str, float]:
    """pmd-stats-show of the (one) PMD thread -> {'packets received': ..., 'emc hits': ...}."""
    out: dict[str, float] = {}
    in_pmd = False
    for line in text.splitlines():
        if line.startswith("pmd thread"):
            in_pmd = True
            continue
        if line.startswith("main thread"):
            in_pmd = False
        if not in_pmd:
            continue
        m = re.match(r"\s*([a-z][a-z /-]*?):\s*([0-9.]+)", line)
        if m:
            out[m.group(1).strip()] = float(m.group(2))
    return out


def plot(runs: list[dict[str, Any]], path: Path, title: str) -> None:
    """Mpps per (rules, flows) run, one bar each."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [r for r in runs if r.get("mpps")]
    if not ok:
        return
    fig, ax = plt.subplots(figsize=(max(4.0, 1.2 * len(ok) + 2), 4))
    labels = [f"{r['rules']}\n{r['flows']} flows" for r in ok]
    ax.bar(range(len(ok)), [r["mpps"] for r in ok], color=[
        "tab:blue" if r["rules"] == "exact" else "tab:orange" for r in ok])
    ax.set_xticks(range(len(ok)), labels, fontsize=8)
    ax.set_ylabel("Mpps (median of per-second rates)")
    ax.set_title(title, fontsize=8)
    save_plot(fig, path)


def build_parser() -> argparse.ArgumentParser:
    from sluice.runtime.traces import MAX_FRAME, MIN_FRAME

    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Root; installs openvswitch-switch-dpdk with apt if it is missing. Writes JSON "
               "(command, every command line, core layout, git commit) to --out and a plot "
               "to --plot; the last line printed is the summary 'ovs Mpps: exact/1000=.. ..'.")
    ap.add_argument("--flows", type=int_list(1), default=[1000, 100000],
                    help="flow counts, one capture each (1000,100000)")
    ap.add_argument("--rules", type=name_list(("exact", "wildcard")),
                    default=["exact", "wildcard"],
                    help="exact (one rule per flow) and/or wildcard (one rule) "
                         "(exact,wildcard)")
    ap.add_argument("--min-packets", type=positive_int, default=4096,
                    help="packets per capture: max(flows, this) (4096)")
    def frame_size(text: str) -> int:
        vals = int_list(MIN_FRAME, MAX_FRAME)(text)
        if len(vals) != 1:
            raise argparse.ArgumentTypeError(f"{text!r}: give one frame size")
        return vals[0]

    ap.add_argument("--size", type=frame_size, default=64,
                    help=f"frame size in bytes, {MIN_FRAME}..{MAX_FRAME} (64)")
    ap.add_argument("--warmup", type=seconds, default=5.0,
                    help="seconds before measuring, at least (5)")
    ap.add_argument("--max-warmup", type=seconds, default=MAX_WARMUP_S,
                    help="longest warm-up waiting for the datapath to hold every flow "
                         f"({MAX_WARMUP_S:g})")
    ap.add_argument("--duration", type=positive_int, default=5, help="measured seconds (5)")
    ap.add_argument("--cpus", default="0,1", help="CPUs; the PMD thread gets the second (0,1)")
    ap.add_argument("--no-isolate-pmd", action="store_true",
                    help="leave OVS's non-PMD threads floating on all --cpus (default: "
                         "they move to the first CPU, the PMD keeps the second)")
    ap.add_argument("--out", type=Path, default=RESULTS / "ovs.json", metavar="FILE",
                    help="JSON results (bench/results/ovs.json)")
    ap.add_argument("--plot", type=Path, default=RESULTS / "ovs.png", metavar="FILE",
                    help="plot (bench/results/ovs.png)")
    return ap


def main() -> int:
    from sluice.runtime.traces import fixed_size, write_pcap

    args = build_parser().parse_args()
    size = args.size
    flows, kinds = args.flows, args.rules
    try:
        cpus = parse_cpus(args.cpus)
        one_benchmark_at_a_time("ovs.py")
        install = ensure_installed()
        if free_hugepage_mib() < SOCKET_MEM_MB + 64:
            raise BenchError(f"only {free_hugepage_mib():.0f} MiB of free hugepages; OVS "
                             f"needs {SOCKET_MEM_MB} (scripts/hugepages.sh)")
    except BenchError as e:
        print(f"ovs.py: {e}", file=sys.stderr)
        return 2
    report: dict[str, Any] = {"benchmark": "ovs", "command": bench_command(),
                              "argv": sys.argv, "host": host_info(),
                              "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                              "install": install, "cpus": cpu_list(cpus),
                              "params": {"flows": flows, "rules": kinds, "size": size,
                                         "min_packets": args.min_packets,
                                         "warmup_s": args.warmup,
                                         "max_warmup_s": args.max_warmup,
                                         "duration_s": args.duration,
                                         "isolate_pmd": not args.no_isolate_pmd},
                              "runs": []}
    failed = 0
    with tempfile.TemporaryDirectory(prefix="sluice-bench-ovs-") as tmp, sigterm_as_interrupt():
        tmpdir = Path(tmp)
        seq = 0
        try:
            for fl in flows:
                pcap = tmpdir / f"udp{size}-{fl}flows.pcap"
                n = write_pcap(pcap, fixed_size(max(fl, args.min_packets), fl, size))
                tuples = capture_flows(pcap)
                log(f"{fl} flows: capture of {n} packets ({len(tuples)} distinct 5-tuples)")
                for kind in kinds:
                    seq += 1
                    r = run_ovs(pcap, kind, cpus, args.warmup, args.duration,
                                tmpdir / "logs", seq, tuples, args.max_warmup,
                                not args.no_isolate_pmd)
                    r["capture_packets"] = n
                    report["runs"].append(r)
                    if r["error"]:
                        failed += 1
                        log(f"{fl} flows {kind}: FAILED: {r['error']}")
                    else:
                        log(f"{fl} flows {kind}: {r['mpps']:.2f} Mpps")
        except KeyboardInterrupt:
            log("interrupted: writing what was measured")
            report["interrupted"] = True
    summary = "ovs Mpps: " + " ".join(
        f"{r['rules']}/{r['flows']}=" + (f"{r['mpps']:.2f}" if r.get("mpps") else "n/a")
        for r in report["runs"])
    report["summary"] = summary
    report["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    write_json(args.out, report)
    try:
        plot(report["runs"], args.plot,
             f"private OVS-DPDK, {size} B, PMD on CPU {cpus[1]}, {args.duration} s, "
             f"{report['started']}")
    except Exception as e:  # the numbers matter more than the picture
        log(f"plot failed: {e}")
    brief = json.loads(json.dumps(report))
    for r in brief["runs"]:
        r.pop("pmd_stats", None)
    print(json.dumps(brief, indent=2))
    print(f"results: {args.out}, plot: {args.plot}")
    print(summary)
    return 1 if failed or report.get("interrupted") else 0


if __name__ == "__main__":
    sys.exit(main())
