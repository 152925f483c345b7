#!/usr/bin/env python3
"""Port benchmark: net_pcap replay -> 1 sluice-forward NF -> net_null, against testpmd.

Input: a capture of 64-byte UDP frames (python/sluice/runtime/traces.py fixed_size)
replayed from memory forever (net_pcap0,...,infinite_rx=1); output: a pure
sink (net_null0,no-rx=1). Two captures: 1 flow and 100,000 flows (one
packet per flow; at least --min-packets packets in each capture).

For each capture and run, in the same run and one after the other:
  testpmd     dpdk-testpmd io forwarding on one forwarding core, same vdevs:
              the ceiling. Rate: port 0 Rx-pps from its per-second stats.
  sluice      sluiced with the two ports and chain forward,port:out, one
              forward NF in a separate process; shared mode and poll mode,
              each with the flow table on (sluiced's default, a lookup per
              packet at ingress) and off (+off: --flow-lookup off).
              Rate: the out port's tx_pkts from sluiced `stats`, sampled
              every second after a warm-up.
  alone       a reference, not a candidate: sluiced by itself, chain
              port:out, no NF and no flow table, poll mode (its I/O thread
              busy-polls the second CPU). What sluiced's own I/O loop costs
              before any NF hop: the ceiling of every mode above.
  pipe        a reference, not a candidate: the bare two-process pipeline
              (build/bench/micro/sluice-pipe): a primary's thread reads the
              port into a ring, a secondary process transmits what it
              dequeues on its own TX queue of the sink; nothing else. The
              same vdevs, pool and core layout as sluiced in poll mode
              (reader on the second CPU, the secondary on the first). What
              any design with its NF in another process pays on this host:
              the ceiling of Sluice's modes with an NF, measured in the same
              run as testpmd.
Reported: Mpps median/min/max per configuration and the ratio
Sluice (best mode with an NF) / testpmd per flow count (target >= 75 %),
alone / testpmd, pipe / testpmd, and Sluice / pipe.

The host's state, around every run: the round trip of a cache line
between the two CPUs (build/bench/micro/sluice-pingpong), before and after.
On this VM the two vCPUs share an L3 at times (about 300 cycles) and at
times do not (about 1,300); every pipeline over the two CPUs, Sluice's or
a bare one, then runs at a quarter of its rate, while testpmd and sluiced
alone, on one CPU each, do not move (docs/performance.md, session 20).
Each run first waits up to --wait-near seconds for a round trip below
--far-cycles and records what it got; a run with either probe at or above
--far-cycles counts as far. The ratio over the runs with the CPUs near
is printed as well, on the line before the last.

Output: JSON on stdout and in bench/results/port.json, a plot in
bench/results/port.png. --quick: one run, 1 s warm-up + 3 s; the last line
is `port ratio: 1flow=..% 100kflows=..%`.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness import (
    RESULTS,
    BenchError,
    Node,
    Processes,
    bench_command,
    binaries,
    cpu_list,
    cross_core_round_trip,
    dpdk_leftovers,
    free_hugepage_mib,
    host_info,
    int_list,
    log,
    log_leftovers,
    micro_binary,
    name_list,
    nf_rates,
    nonneg_int,
    one_benchmark_at_a_time,
    parse_cpus,
    pingpong_binary,
    positive_int,
    remove_paths,
    save_plot,
    sigterm_as_interrupt,
    stats_summary,
    unique_name,
    wait_for_near_cpus,
    write_json,
)
from sluice.runtime.client import SluiceError
from sluice.runtime.traces import fixed_size, write_pcap

FLOW_COUNTS = (1, 100_000)
# The packet pool, the same size for testpmd (--total-num-mbufs) and sluiced
# (--mbufs): the capture (the pcap PMD holds it in buffers of the pool) plus
# --spare-mbufs for what is in flight. A pool much larger than that is
# recycled through memory the caches do not hold: the pool's ring hands out
# the buffer freed longest ago, and when the NF frees what sluiced's I/O
# thread allocates, every buffer goes round that ring (docs/performance.md).
SPARE_MBUFS = 32767
MAX_MBUFS = 1 << 20
TESTPMD = "/usr/bin/dpdk-testpmd"
TARGET_RATIO = 0.75
FAR_CYCLES = 700  # a round trip this long: the two vCPUs do not share an L3
WAIT_NEAR_S = 120
ALONE = "alone"  # reference: sluiced by itself, chain port:out, no NF
PIPE = "pipe"  # reference: the bare two-process pipeline, sluice-pipe
REFERENCES = (ALONE, PIPE)
PIPE_NF_LCORE = 2  # the secondary's lcore id: its own pool cache, not the primary's
MBUF_KIB = 2.5  # one mbuf with its 2 KiB data room, in the pool


def pool_mbufs(packets: int, spare: int) -> int:
    return packets + spare


def need_hugepage_mib(packets: int, spare: int) -> float:
    return pool_mbufs(packets, spare) * MBUF_KIB / 1024 + 300  # one pool at a time, and room
# sluiced/NF modes; +off: sluiced --flow-lookup off (+cached, +naive: the other modes)
MODES = ("shared", "poll", "shared+off", "poll+off", ALONE, PIPE)
ALL_MODES = (*MODES, "shared+cached", "poll+cached", "shared+naive", "poll+naive")


def config_key(mode: str) -> str:
    """A mode's key in a report's configs: 'sluice-MODE', and 'pipe' (not Sluice)."""
    return PIPE if mode == PIPE else f"sluice-{mode}"


def flow_label(flows: int) -> str:
    return f"{flows // 1000}kflows" if flows >= 1000 and flows % 1000 == 0 else (
        "1flow" if flows == 1 else f"{flows}flows")


def pcap_device(path: Path) -> str:
    return f"net_pcap0,rx_pcap={path},infinite_rx=1"


SINK_DEVICE = "net_null0,no-rx=1"


# -- testpmd ------------------------------------------------------------------------

_PORT_RE = re.compile(r"NIC statistics for port (\d+)")
_PPS_RE = re.compile(r"(Rx|Tx)-pps:\s+(\d+)")


def parse_testpmd_stats(text: str) -> dict[str, list[int]]:
    """testpmd --stats-period output -> {'rx0': [...], 'tx1': [...], ...} per-second pps."""
    out: dict[str, list[int]] = {}
    port = None
    for line in text.splitlines():
        m = _PORT_RE.search(line)
        if m:
            port = m.group(1)
            continue
        for m in _PPS_RE.finditer(line):
            if port is not None:
                out.setdefault(f"{m.group(1).lower()}{port}", []).append(int(m.group(2)))
    return out


def run_testpmd(args: argparse.Namespace, pcap: Path, seq: int, logroot: Path
                ) -> dict[str, Any]:
    prefix = unique_name("tp", seq)
    procs = Processes(logroot / prefix)
    c = args.cpus
    argv = ["stdbuf", "-oL", "-eL", "taskset", "-c", cpu_list(c[:2]), TESTPMD,
            "-l", f"{c[0]},{c[1]}", "--no-pci", f"--file-prefix={prefix}", "--huge-unlink",
            "--vdev", pcap_device(pcap), "--vdev", SINK_DEVICE, "--",
            "--forward-mode=io", "--nb-cores=1", "--auto-start", "--stats-period", "1",
            f"--total-num-mbufs={args.pool[pcap.name]}"]
    run: dict[str, Any] = {"prefix": prefix, "error": None,
                           "core_layout": {"testpmd": f"main lcore (stats printing) on CPU "
                                                      f"{c[0]}, io forwarding lcore on CPU "
                                                      f"{c[1]}"}}
    # samples: the first print is at ~1 s (all zero), then one per second
    need = 1 + int(args.warmup) + int(args.duration)
    deadline = time.monotonic() + need + 30
    tp = procs.start("testpmd", argv, cpu_list(c[:2]))
    try:
        while True:
            text = tp.stdout.read_text(errors="replace")
            if len(parse_testpmd_stats(text).get("rx0", [])) >= need + 1:
                break
            if not tp.alive():
                raise BenchError(f"testpmd exited with {tp.proc.returncode}:\n{tp.tail()}")
            if time.monotonic() > deadline:
                raise BenchError(f"testpmd printed no stats within {need + 30} s:\n"
                                 f"{tp.tail()}")
            time.sleep(0.25)
    except BenchError as e:
        run["error"] = str(e)
    finally:
        if tp.alive():
            with contextlib.suppress(ProcessLookupError):
                tp.proc.send_signal(signal.SIGINT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                tp.proc.wait(timeout=10)
        stragglers = procs.stop_all()
        left = dpdk_leftovers(prefix)
        remove_paths(left)
        run["commands"] = procs.records()
        run["stragglers"] = stragglers
        # testpmd leaves its runtime directory; hugepage files would be a problem
        run["hugepage_leftovers"] = [str(p) for p in left if p.name != prefix]
    if run["error"] is None:
        stats = parse_testpmd_stats(tp.stdout.read_text(errors="replace"))
        skip = 1 + int(args.warmup)
        rx = stats["rx0"][skip:skip + int(args.duration)]
        tx = stats.get("tx1", [])[skip:skip + int(args.duration)]
        run["samples_rx0_pps"] = rx
        run["samples_tx1_pps"] = tx
        run["mpps"] = statistics.median(rx) / 1e6
    return run


# -- the bare pipeline --------------------------------------------------------------

def parse_pipe_lines(text: str) -> tuple[list[int], dict[str, Any] | None]:
    """sluice-pipe primary's stdout -> (per-second out_pps, the closing 'done' object)."""
    pps, done = [], None
    for line in text.splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if not isinstance(obj, dict):
            continue
        if "out_pps" in obj:
            pps.append(int(obj["out_pps"]))
        elif obj.get("done"):
            done = obj
    return pps, done


def run_pipe(args: argparse.Namespace, pcap: Path, seq: int, logroot: Path
             ) -> dict[str, Any]:
    prefix = unique_name("pp", seq)
    procs = Processes(logroot / prefix)
    c = args.cpus
    eal = ["--no-pci", f"--file-prefix={prefix}"]
    primary = ["taskset", "-c", cpu_list(c[:2]), str(args.pipe), "-l", f"{c[0]},{c[1]}",
               *eal, "--vdev", pcap_device(pcap), "--vdev", SINK_DEVICE, "--", "primary",
               "--mbufs", str(args.pool[pcap.name]),
               "--seconds", str(int(args.warmup) + int(args.duration))]
    nf = ["taskset", "-c", str(c[0]), str(args.pipe), f"--lcores={PIPE_NF_LCORE}@{c[0]}",
          *eal, "--proc-type=secondary", "--", "nf"]
    run: dict[str, Any] = {"prefix": prefix, "error": None,
                           "core_layout": {"sluice-pipe primary": f"main lcore (prints) on "
                                                                  f"CPU {c[0]}, reader lcore "
                                                                  f"on CPU {c[1]}",
                                           "sluice-pipe nf": f"CPU {c[0]}"}}
    deadline = time.monotonic() + args.warmup + args.duration + 60
    pp = procs.start("pipe-primary", primary, cpu_list(c[:2]))
    try:
        while '"ready"' not in pp.stdout.read_text(errors="replace"):
            if not pp.alive():
                raise BenchError(f"sluice-pipe primary exited with {pp.proc.returncode}:\n"
                                 f"{pp.tail()}")
            if time.monotonic() > deadline:
                raise BenchError(f"sluice-pipe primary not ready:\n{pp.tail()}")
            time.sleep(0.1)
        sec = procs.start("pipe-nf", nf, str(c[0]))
        # the nf stops when the primary says so, just before the primary ends
        while pp.alive() or sec.alive():
            if not sec.alive() and sec.proc.returncode != 0:
                raise BenchError(f"sluice-pipe nf exited with {sec.proc.returncode}:\n"
                                 f"{sec.tail()}")
            if time.monotonic() > deadline:
                raise BenchError(f"sluice-pipe did not end in time:\n{pp.tail()}")
            time.sleep(0.25)
        if pp.proc.returncode != 0 or sec.proc.returncode != 0:
            raise BenchError(f"sluice-pipe primary exited with {pp.proc.returncode}, its nf "
                             f"with {sec.proc.returncode}:\n{pp.tail()}\n{sec.tail()}")
    except BenchError as e:
        run["error"] = str(e)
    finally:
        stragglers = procs.stop_all()
        left = dpdk_leftovers(prefix)
        remove_paths(left)
        run["commands"] = procs.records()
        run["stragglers"] = stragglers
        # a DPDK primary leaves its hugepage files for a next start (testpmd runs with
        # --huge-unlink, which a primary with secondaries cannot): removed here, counted
        run["dpdk_files_removed"] = len(left)
    if run["error"] is None:
        pps, done = parse_pipe_lines(pp.stdout.read_text(errors="replace"))
        samples = pps[int(args.warmup):int(args.warmup) + int(args.duration)]
        if not samples or done is None:
            run["error"] = f"sluice-pipe printed no rates:\n{pp.tail()}"
        else:
            run["samples_tx_pps"] = samples
            run["mpps"] = statistics.median(samples) / 1e6
            run["totals"] = done
    return run


# -- sluice -------------------------------------------------------------------------

def run_sluice(args: argparse.Namespace, progs: dict[str, Path], pcap: Path, mode: str,
               seq: int, logroot: Path) -> dict[str, Any]:
    name = unique_name("bp", seq)
    procs = Processes(logroot / name)
    alone = mode == ALONE
    extra = ["--port", f"in={pcap_device(pcap)}", "--port", f"out={SINK_DEVICE}",
             "--chain", "port:out" if alone else "forward,port:out",
             "--mbufs", str(args.pool[pcap.name])]
    # "MODE+LOOKUP": sluiced --flow-lookup LOOKUP (e.g. shared+off: no flow table)
    mode, _, lookup = ("poll+off" if alone else mode).partition("+")
    if lookup:
        extra += ["--flow-lookup", lookup]
    node = Node(name, procs, progs, args.cpus, mode, args.handoff, extra)
    run: dict[str, Any] = {"name": name, "mode": mode, "error": None}
    deadline = time.monotonic() + args.warmup + args.duration + 60
    try:
        with node:
            nf = None
            if not alone:
                nf = node.start_nf("forward", "forward", "forward", args.cpus[0])
                node.wait_registered("forward", nf)
            # traffic starts once the chain is complete; wait for the first packets out
            while True:
                s = node.stats()
                if out_port(s)["tx_pkts"] > 0:
                    break
                if nf is not None and not nf.alive():
                    raise BenchError(f"forward exited with {nf.proc.returncode}:\n{nf.tail()}")
                if time.monotonic() > deadline:
                    raise BenchError("no packet left the out port")
                time.sleep(0.05)
            time.sleep(args.warmup)
            snaps = []
            for i in range(int(args.duration) + 1):
                if i:
                    time.sleep(max(0.0, snaps[0][0] + i - time.monotonic()))
                t0 = time.monotonic()
                s = node.stats()
                snaps.append(((t0 + time.monotonic()) / 2, s))
            if nf is not None and not nf.alive():
                raise BenchError(f"forward exited during the run with {nf.proc.returncode}")
            run.update(rates(snaps))
    except (BenchError, SluiceError) as e:
        run["error"] = str(e)
    finally:
        node.record_into(run)
    log_leftovers(name, run)
    return run


def out_port(stats: dict[str, Any]) -> dict[str, Any]:
    return next(p for p in stats["ports"] if p["name"] == "out")


def in_port(stats: dict[str, Any]) -> dict[str, Any]:
    return next(p for p in stats["ports"] if p["name"] == "in")


def rates(snaps: list[tuple[float, dict[str, Any]]]) -> dict[str, Any]:
    """Per-second out-port pps samples, whole-interval rates, NF and drop counters."""
    samples = []
    for (t0, a), (t1, b) in zip(snaps, snaps[1:], strict=False):
        samples.append((out_port(b)["tx_pkts"] - out_port(a)["tx_pkts"]) / (t1 - t0))
    (ta, a), (tb, b) = snaps[0], snaps[-1]
    secs = tb - ta
    ia, ib = in_port(a), in_port(b)
    port_drops = {k: v - ia["drops"].get(k, 0) for k, v in ib["drops"].items()
                  if v - ia["drops"].get(k, 0)}
    return {
        "samples_tx_pps": samples,
        "mpps": statistics.median(samples) / 1e6,
        "interval_s": secs,
        "out_tx_mpps_interval": (out_port(b)["tx_pkts"] - out_port(a)["tx_pkts"]) / secs / 1e6,
        "in_rx_mpps_interval": (ib["rx_pkts"] - ia["rx_pkts"]) / secs / 1e6,
        "in_rx_stalls": ib.get("rx_stalls", 0) - ia.get("rx_stalls", 0),
        "in_port_drops": port_drops,
        "drops_total": b.get("drops_total", 0) - a.get("drops_total", 0),
        "nfs": nf_rates(a, b),
    }


# -- the host's state around a run ----------------------------------------------------

def with_host_state(args: argparse.Namespace, run: Callable[[], dict[str, Any]]
                    ) -> dict[str, Any]:
    """Wait (up to --wait-near) for the CPUs to be near, run, probe again; the run's
    dict gets 'host': both round trips, the wait, and near (both below --far-cycles)."""
    host: dict[str, Any] = {"far_cycles": args.far_cycles}
    try:
        got = wait_for_near_cpus(args.pingpong, args.cpus, args.far_cycles, args.wait_near)
        host.update(round_trip_cycles_before=got["round_trip_cycles"],
                    waited_s=got["waited_s"])
    except BenchError as e:
        host["error"] = str(e)
    result = run()
    try:
        host["round_trip_cycles_after"] = cross_core_round_trip(args.pingpong, args.cpus)
    except BenchError as e:
        host["error"] = str(e)
    host["near"] = ("error" not in host
                    and host["round_trip_cycles_before"] < args.far_cycles
                    and host["round_trip_cycles_after"] < args.far_cycles)
    result["host"] = host
    return result


def host_note(run: dict[str, Any]) -> str:
    h = run.get("host", {})
    if "error" in h:
        return f"(round trip not measured: {h['error']})"
    waited = f", waited {h['waited_s']:.0f} s" if h["waited_s"] >= 1 else ""
    return (f"(round trip {h['round_trip_cycles_before']:.0f} -> "
            f"{h['round_trip_cycles_after']:.0f} cycles{waited}"
            f"{'' if h['near'] else ': CPUs far'})")


# -- report -------------------------------------------------------------------------

def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in runs if r["error"] is None]
    near = [r["mpps"] for r in ok if r.get("host", {}).get("near")]
    return {"mpps": stats_summary([r["mpps"] for r in ok]), "runs_ok": len(ok),
            "runs": len(runs), "mpps_near": stats_summary(near), "runs_near": len(near)}


def best_ratio(entry: dict[str, Any], modes: list[str], key: str
               ) -> tuple[str | None, float | None]:
    """(best mode with an NF, its median / testpmd's) over key ('mpps' or 'mpps_near')."""
    tpm = entry["configs"]["testpmd"][key]
    best = None
    for m in modes:
        if m in REFERENCES:
            continue
        sm = entry["configs"][config_key(m)][key]
        if sm and (best is None or sm["median"] > best[1]):
            best = (m, sm["median"])
    if best is None:
        return None, None
    return best[0], best[1] / tpm["median"] if tpm else None


def plot(report: dict[str, Any], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = list(report["flows"])
    configs = ["testpmd", *(config_key(m) for m in report["modes"])]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    width = 0.8 / len(configs)
    for j, cfg in enumerate(configs):
        xs, ys, lo, hi, shown = [], [], [], [], []
        for i, fl in enumerate(labels):
            m = report["flows"][fl]["configs"][cfg]["mpps"]
            if m is None:
                continue
            shown.append(fl)
            xs.append(i + (j - (len(configs) - 1) / 2) * width)
            ys.append(m["median"])
            lo.append(m["median"] - m["min"])
            hi.append(m["max"] - m["median"])
        bars = ax.bar(xs, ys, width, yerr=[lo, hi], capsize=3, label=cfg)
        if cfg != "testpmd":
            for b, fl in zip(bars, shown, strict=True):
                t = report["flows"][fl]["configs"]["testpmd"]["mpps"]
                if t:
                    ax.annotate(f"{100 * b.get_height() / t['median']:.0f}%",
                                (b.get_x() + b.get_width() / 2, b.get_height()),
                                ha="center", va="bottom", fontsize=8)
    for i, fl in enumerate(labels):
        t = report["flows"][fl]["configs"]["testpmd"]["mpps"]
        if t:
            ax.hlines(TARGET_RATIO * t["median"], i - 0.45, i + 0.45, colors="k",
                      linestyles="dotted", label="75 % of testpmd" if i == 0 else None)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels)
    ax.set_ylabel("Mpps (median, min-max bars)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    save_plot(fig, path)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Writes JSON (every run: command lines, core layout, git commit) to --out and "
               "a plot to --plot; the last line printed is the summary "
               "'port ratio: 1flow=..% 100kflows=..%'. Run as root after ninja -C build.")
    ap.add_argument("--quick", action="store_true",
                    help="one run, 1 s warm-up + 3 s measured (unless --runs/--warmup/"
                         "--duration say otherwise)")
    ap.add_argument("--runs", type=positive_int, help="runs per configuration (3; --quick: 1)")
    ap.add_argument("--duration", type=positive_int,
                    help="measured seconds per run (5; --quick: 3)")
    ap.add_argument("--warmup", type=nonneg_int, help="seconds before measuring (2; --quick: 1)")
    ap.add_argument("--flows", type=int_list(1, MAX_MBUFS // 2), default=list(FLOW_COUNTS),
                    help="flow counts, one capture each (1,100000)")
    ap.add_argument("--min-packets", type=positive_int, default=4096,
                    help="packets per capture: max(flows, this) (4096)")
    ap.add_argument("--spare-mbufs", type=positive_int, default=SPARE_MBUFS,
                    help="packet buffers beyond the capture in the pool of testpmd and of "
                         f"sluiced alike (the same pool for both): {SPARE_MBUFS}")
    ap.add_argument("--modes", type=name_list(ALL_MODES), default=list(MODES),
                    help="sluiced/NF modes, each optionally +off (sluiced --flow-lookup off: "
                         "no flow table), and the references 'alone' (sluiced without an NF) "
                         "and 'pipe' (the bare two-process pipeline, sluice-pipe) "
                         "(shared,poll,shared+off,poll+off,alone,pipe)")
    ap.add_argument("--handoff", choices=("direct", "mgr"),
                    help="sluiced --handoff (default: sluiced's own default)")
    ap.add_argument("--cpus", default="0,1", help="CPUs for everything, e.g. 0,1 (0,1)")
    ap.add_argument("--far-cycles", type=positive_int, default=FAR_CYCLES,
                    help="a cache line's round trip between the first two --cpus at or "
                         "above this many TSC cycles, before or after a run, marks the run "
                         f"'CPUs far' (they do not share an L3) ({FAR_CYCLES})")
    ap.add_argument("--wait-near", type=nonneg_int, default=WAIT_NEAR_S, metavar="S",
                    help="before each run, wait up to S seconds for the round trip to fall "
                         f"below --far-cycles; 0: do not wait ({WAIT_NEAR_S})")
    ap.add_argument("--build", type=Path, default=Path(__file__).resolve().parent.parent / "build",
                    metavar="DIR", help="the build folder with sluiced and the NFs (build)")
    ap.add_argument("--out", type=Path, default=RESULTS / "port.json", metavar="FILE",
                    help="JSON results (bench/results/port.json)")
    ap.add_argument("--plot", type=Path, default=RESULTS / "port.png", metavar="FILE",
                    help="plot (bench/results/port.png)")
    return ap


def main() -> int:
    ap = build_parser()
    args = ap.parse_args()
    args.runs = args.runs if args.runs is not None else (1 if args.quick else 3)
    args.duration = args.duration if args.duration is not None else (3 if args.quick else 5)
    args.warmup = args.warmup if args.warmup is not None else (1 if args.quick else 2)
    flows, modes = args.flows, args.modes
    args.pool = {}  # capture file name -> pool size (testpmd and sluiced)
    try:
        progs = _prepare(args, flows, modes)
    except BenchError as e:
        print(f"port.py: {e}", file=sys.stderr)
        return 2

    per_run = (1 + len(modes)) * (args.warmup + args.duration + 75 + args.wait_near)
    log(f"{len(flows)} capture(s) x {args.runs} run(s) x (testpmd + {len(modes)} "
        f"configuration(s)); at most {len(flows) * args.runs * per_run / 60:.0f} min")
    report: dict[str, Any] = {
        "benchmark": "port",
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": bench_command(),
        "argv": sys.argv,
        "host": host_info(),
        "params": {"runs": args.runs, "warmup_s": args.warmup, "duration_s": args.duration,
                   "cpus": cpu_list(args.cpus), "modes": modes, "handoff": args.handoff,
                   "frame_size": 64, "spare_mbufs": args.spare_mbufs,
                   "mbufs": "capture packets + spare_mbufs, for testpmd and sluiced alike "
                            "(per capture: flows.*.pool_mbufs)",
                   "quick": args.quick, "far_cycles": args.far_cycles,
                   "wait_near_s": args.wait_near},
        "method": ("testpmd: median of port 0 Rx-pps from --stats-period 1 after the "
                   "warm-up. Sluice: median of per-second out-port tx_pkts rates from "
                   "sluiced stats after the warm-up. ratio = Sluice best mode median / "
                   "testpmd median, per flow count; testpmd and Sluice runs alternate. "
                   "Around each run, sluice-pingpong measures a cache line's round trip "
                   "between the two CPUs (host.round_trip_cycles_before/after); each run "
                   "first waits up to wait_near_s for it to be below far_cycles; "
                   "ratio_near and mpps_near count only the runs with both probes below. "
                   "pipe (a reference): sluice-pipe, the bare two-process pipeline, median "
                   "of its per-second port 1 tx rates after the warm-up."),
        "target_ratio": TARGET_RATIO,
        "modes": modes,
        "flows": {},
    }
    seq = 0
    failed = 0
    with tempfile.TemporaryDirectory(prefix="sluice-bench-port-") as tmp, sigterm_as_interrupt():
        tmpdir = Path(tmp)
        try:
            for fl in flows:
                entry, seq, bad = _measure_flows(args, progs, tmpdir, fl, modes, seq)
                failed += bad
                report["flows"][flow_label(fl)] = entry
        except KeyboardInterrupt:
            log("interrupted: writing what was measured")
            report["interrupted"] = True
    summary = _summarize_report(report)
    report["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    write_json(args.out, report)
    try:
        if report["flows"]:
            plot(report, args.plot,
                 f"net_pcap (64 B, from memory) -> 1 NF -> net_null; CPUs "
                 f"{cpu_list(args.cpus)}; {args.runs} run(s) x {args.duration} s; "
                 f"{report['started']}")
    except Exception as e:  # the numbers matter more than the picture
        log(f"plot failed: {e}")
    _print_results(report, args, summary)
    return 1 if failed or report.get("interrupted") else 0


def _prepare(args: argparse.Namespace, flows: list[int], modes: list[str]) -> dict[str, Path]:
    """Check the options, the binaries and the hugepages, and take the one-benchmark
    lock; sets args.cpus, args.pingpong (and args.pipe) and returns the binaries.
    BenchError says what is wrong."""
    args.cpus = parse_cpus(args.cpus)
    progs = binaries(args.build)
    args.pingpong = pingpong_binary(args.build)
    if PIPE in modes:
        args.pipe = micro_binary(args.build, "sluice-pipe")
    if not [m for m in modes if m not in REFERENCES]:
        raise BenchError(f"--modes {','.join(modes)}: give at least one mode with an NF "
                         f"(shared or poll, optionally +off) besides {' and '.join(REFERENCES)}"
                         f": the ratio is theirs")
    if not Path(TESTPMD).exists():
        raise BenchError(f"{TESTPMD} not found: apt-get install dpdk-dev")
    packets = [max(f, args.min_packets) for f in flows]
    if max(pool_mbufs(p, args.spare_mbufs) for p in packets) > MAX_MBUFS:
        raise BenchError(f"--min-packets {args.min_packets} / --spare-mbufs "
                         f"{args.spare_mbufs}: the pool (capture + spare) may hold at "
                         f"most {MAX_MBUFS} packet buffers")
    need = max(need_hugepage_mib(p, args.spare_mbufs) for p in packets)
    if free_hugepage_mib() < need:
        raise BenchError(f"only {free_hugepage_mib():.0f} MiB of free hugepages; "
                         f"this benchmark needs about {need:.0f} MiB "
                         f"(scripts/hugepages.sh)")
    one_benchmark_at_a_time("port.py")
    return progs


def _measure_flows(
    args: argparse.Namespace, progs: dict[str, Path], tmpdir: Path, fl: int, modes: list[str],
    seq: int,
) -> tuple[dict[str, Any], int, int]:
    """Every run of testpmd and of each mode on a capture of fl flows: the report's
    entry for them, the last run sequence number and the number of failed runs."""
    failed = 0
    label = flow_label(fl)
    pcap = tmpdir / f"udp64-{label}.pcap"
    n = write_pcap(pcap, fixed_size(max(fl, args.min_packets), fl, 64))
    args.pool[pcap.name] = pool_mbufs(n, args.spare_mbufs)
    log(f"{label}: capture of {n} packets, 64 bytes, {fl} flow(s); pool of "
        f"{args.pool[pcap.name]} packet buffers")
    runs: dict[str, list[dict[str, Any]]] = {"testpmd": []}
    runs.update({config_key(m): [] for m in modes})
    logs = tmpdir / "logs"
    for r in range(args.runs):
        seq += 1
        runs["testpmd"].append(with_host_state(
            args, functools.partial(run_testpmd, args, pcap, seq, logs)))
        for m in modes:
            seq += 1
            one = (functools.partial(run_pipe, args, pcap, seq, logs) if m == PIPE
                   else functools.partial(run_sluice, args, progs, pcap, m, seq,
                                          logs))
            runs[config_key(m)].append(with_host_state(args, one))
        for cfg, rs in runs.items():
            x = rs[-1]
            if x["error"]:
                failed += 1
                log(f"{label} {cfg} run {r + 1}: FAILED: {x['error']}")
            else:
                log(f"{label} {cfg} run {r + 1}: {x['mpps']:.2f} Mpps "
                    f"{host_note(x)}")
    entry: dict[str, Any] = {
        "flows": fl, "capture_packets": n, "pool_mbufs": args.pool[pcap.name],
        "capture": "python/sluice/runtime/traces.py fixed_size(packets, flows, 64), "
                   "written to a temporary file",
        "configs": {cfg: summarize(rs) | {"run_details": rs}
                    for cfg, rs in runs.items()},
    }
    tpm = entry["configs"]["testpmd"]["mpps"]
    entry["best_mode"], entry["ratio"] = best_ratio(entry, modes, "mpps")
    entry["best_mode_near"], entry["ratio_near"] = best_ratio(entry, modes,
                                                              "mpps_near")
    am = entry["configs"].get(f"sluice-{ALONE}", {}).get("mpps")
    entry["alone_ratio"] = am["median"] / tpm["median"] if am and tpm else None
    pm = entry["configs"].get(PIPE, {}).get("mpps")
    entry["pipe_ratio"] = pm["median"] / tpm["median"] if pm and tpm else None
    # Sluice's best mode over the bare pipeline: what Sluice itself costs
    entry["sluice_over_pipe"] = (
        entry["ratio"] * tpm["median"] / pm["median"]
        if pm and tpm and entry["ratio"] is not None else None)
    return entry, seq, failed


def _summarize_report(report: dict[str, Any]) -> str:
    """Set the report's summary lines (summary_near, alone_summary, pipe_summary,
    summary) from its flows; returns the summary."""
    parts, near_parts = [], []
    for label, e in report["flows"].items():
        # one decimal: a ratio of 74.8 % must not read as the target's 75 %
        parts.append(f"{label}={100 * e['ratio']:.1f}%" if e["ratio"] is not None
                     else f"{label}=n/a")
        cfgs = [c for cfg, c in e["configs"].items()
                if cfg not in (f"sluice-{ALONE}", PIPE)]
        counts = f"{sum(c['runs_near'] for c in cfgs)} of {sum(c['runs'] for c in cfgs)} runs"
        near_parts.append(f"{label}={100 * e['ratio_near']:.1f}% ({counts})"
                          if e.get("ratio_near") is not None else f"{label}=n/a ({counts})")
    summary = "port ratio: " + " ".join(parts)
    report["summary_near"] = ("port ratio, runs with the CPUs near only: "
                              + " ".join(near_parts))
    alone = [f"{label}={100 * e['alone_ratio']:.0f}%" for label, e in report["flows"].items()
             if e.get("alone_ratio") is not None]
    if alone:
        report["alone_summary"] = "sluiced alone (no NF) / testpmd: " + " ".join(alone)
    pipe = [f"{label}={100 * e['pipe_ratio']:.0f}%" + (
                f" (Sluice / pipe {100 * e['sluice_over_pipe']:.0f}%)"
                if e.get("sluice_over_pipe") is not None else "")
            for label, e in report["flows"].items() if e.get("pipe_ratio") is not None]
    if pipe:
        report["pipe_summary"] = "bare two-process pipeline / testpmd: " + " ".join(pipe)
    report["summary"] = summary
    return summary


def _print_results(report: dict[str, Any], args: argparse.Namespace, summary: str) -> None:
    """The report without run details as JSON, then one line per flow count and
    the summaries, the ratio last."""
    brief = json.loads(json.dumps(report))
    for e in brief["flows"].values():
        for c in e["configs"].values():
            c.pop("run_details", None)
    print(json.dumps(brief, indent=2))
    print(f"results: {args.out}, plot: {args.plot}")
    for label, e in report["flows"].items():
        cfgs = " ".join(f"{cfg}={c['mpps']['median']:.2f}" if c["mpps"] else f"{cfg}=n/a"
                        for cfg, c in e["configs"].items())
        print(f"{label}: Mpps {cfgs}; best Sluice mode {e['best_mode']}")
    if "alone_summary" in report:
        print(report["alone_summary"])
    if "pipe_summary" in report:
        print(report["pipe_summary"])
    print(report["summary_near"])
    print(summary)


if __name__ == "__main__":
    sys.exit(main())
