#!/usr/bin/env python3
"""Flow director ablation (OpenNetVM Fig. 3) and Open vSwitch-DPDK comparison.

Ablation: sluiced with two vdev ports (a capture replayed from memory,
``net_pcap0,rx_pcap=F,infinite_rx=1`` -> ``net_null0,no-rx=1``, the strings
of bench/port.py) and a chain of --chain-nfs sluice-forward NFs
(``f1,f2,port:out``), in three flow-director modes:

  off     ``--flow-lookup off``: no flow table, every packet takes the
          default chain ("default chain" in the paper)
  cached  ``--flow-lookup cached`` (sluiced's default): one flow-table lookup
          at ingress, the entry cached in the packet's metadata
  naive   ``--flow-lookup naive``: every hop re-parses, re-hashes and looks
          the table up again

at 64, 256 and 1024-byte UDP frames (python/sluice/runtime/traces.py fixed_size) and
1, 10,000 and 1,000,000 flows (one packet per flow; at least --min-packets).
Throughput: the median of per-second rates of the out port's tx_pkts from
sluiced ``stats`` after a warm-up; ratios cached/default and naive/default.
Per packet: ns per packet at that rate (1000 / Mpps), the machine's cycles
per packet (CPUs x TSC Hz / pps) and each NF's cycles in ``process``.
Latency: sluice-speedtest --latency on a loop speedtest,f2..,speedtest with
``--handoff mgr`` (every hop through sluiced's I/O thread, as the paper's
NF -> TX thread -> NF test), a few packets in flight, per mode.

Comparison: the same vdevs and 64-byte captures of 1,000 and 100,000 flows
through a private OVS-DPDK (bench/ovs.py: one exact-match OpenFlow rule per
flow, and one wildcard rule; EMC/SMC/megaflow caches at their defaults) and
through Sluice in cached mode (a flow-table entry per flow), in the same run,
alternating. Sluice runs twice per point (--ovs-sluice-nfs): chain
``port:out`` (sluiced alone classifies and forwards: the switch's job) and
the ablation's chain of NFs. Ratios Sluice / OVS-exact at 100,000 flows
(target >= 5).

    nice -n -15 .venv/bin/python bench/flowdir.py [--quick]

JSON on stdout and in bench/results/flowdir.json (--quick: flowdir-quick.json),
a plot beside it (copied to docs/perf/flowdir.png by a full run). --quick:
64-byte frames, 1,000,000 flows, the three modes, one run of 1 s warm-up +
3 s, plus OVS exact and the two Sluice chains (cached) at 100,000 flows; no
latency. The last
line is ``cached/default=X naive/default=Y`` (64 bytes, the largest flow
count). --dry-run: for a sluiced without --flow-lookup: the mode option is
left out (the three modes are then the same configuration).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from chain import parse_speedtest
from harness import (
    RESULTS,
    ROOT,
    BenchError,
    Node,
    Processes,
    bench_command,
    binaries,
    cpu_list,
    ensure_hugepages,
    free_hugepage_mib,
    host_info,
    int_list,
    log,
    log_leftovers,
    name_list,
    nonneg_int,
    one_benchmark_at_a_time,
    parse_cpus,
    positive_int,
    profile_top,
    save_plot,
    seconds,
    sigterm_as_interrupt,
    sluiced_options,
    start_profile,
    stats_summary,
    unique_name,
    write_json,
)
from ovs import capture_flows, ensure_installed, run_ovs
from port import SINK_DEVICE, out_port, pcap_device, rates
from sluice.runtime.client import SluiceError
from sluice.runtime.traces import MAX_FRAME, MIN_FRAME, fixed_size, write_pcap

MODES = ("off", "cached", "naive")
MODE_NAMES = {"off": "default chain", "cached": "cached lookup", "naive": "naive rehash"}
SIZES = (64, 256, 1024)
FLOWS = (1, 10_000, 1_000_000)
OVS_FLOWS = (1_000, 100_000)
OVS_TARGET = 5.0
DEFAULT_CAPACITY = 1 << 18  # sluiced's own default --flow-capacity (recorded per run)
MBUF_BYTES = 2432  # what sluiced counts per mbuf (data room + header + 128)
DOCS_PLOT = ROOT / "docs" / "perf" / "flowdir.png"


def flows_label(n: int) -> str:
    if n >= 1_000_000 and n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    if n >= 1000 and n % 1000 == 0:
        return f"{n // 1000}k"
    return str(n)


def mbufs_for(packets: int) -> int:
    """The pcap PMD copies the whole capture into mbufs of the pool: room for it
    and 128k packets in flight."""
    return max(262143, packets + 131071)


def capacity_for(flows: int) -> int:
    """--flow-capacity: sluiced's default (262,144), or twice the flows (a power of two),
    whichever is more: the table a user would size for this many flows."""
    cap = DEFAULT_CAPACITY
    while cap < 2 * flows:
        cap *= 2
    return cap


def hugepage_need_mib(packets: int, flows: int) -> float:
    """Roughly what one sluiced of this point reserves (its own --socket-mem is exact)."""
    return (mbufs_for(packets) * MBUF_BYTES + capacity_for(flows) * 600) / 2**20 + 600


# -- one Sluice run -----------------------------------------------------------------

def chain_services(n: int) -> list[str]:
    return [f"f{i}" for i in range(1, n + 1)]


def run_sluice(args: argparse.Namespace, progs: dict[str, Path], pcap: Path, packets: int,
               flows: int, mode: str, seq: int, logroot: Path, nfs: int | None = None
               ) -> dict[str, Any]:
    """One sluiced on the capture with ``nfs`` forwarders (default --chain-nfs)."""
    name = unique_name("fd", seq)
    procs = Processes(logroot / name)
    services = chain_services(args.chain_nfs if nfs is None else nfs)
    chain = ",".join([*services, "port:out"])
    extra = ["--port", f"in={pcap_device(pcap)}", "--port", f"out={SINK_DEVICE}",
             "--chain", chain,
             "--mbufs", str(mbufs_for(packets))]
    if not args.dry_run:
        extra += ["--flow-lookup", mode, "--flow-capacity", str(capacity_for(flows))]
    node = Node(name, procs, progs, args.cpus, args.sluice_mode, args.handoff, extra,
                ready_timeout=60)
    run: dict[str, Any] = {"name": name, "flow_lookup": mode, "flows": flows,
                           "capture_packets": packets, "chain": chain, "error": None,
                           "loadavg_at_start": os.getloadavg()}
    deadline = time.monotonic() + args.warmup + args.duration + 90
    try:
        with node:
            for i, svc in enumerate(services):
                nf = node.start_nf(svc, "forward", svc, args.cpus[i % len(args.cpus)])
                node.wait_registered(svc, nf)
            while out_port(node.stats())["tx_pkts"] == 0:
                for nf in node.nfs:
                    if not nf.alive():
                        raise BenchError(f"{nf.role} exited with {nf.proc.returncode}:\n"
                                         f"{nf.tail()}")
                if time.monotonic() > deadline:
                    raise BenchError("no packet left the out port")
                time.sleep(0.05)
            time.sleep(args.warmup)
            prof = None
            if args.profile is not None:
                args.profile.mkdir(parents=True, exist_ok=True)
                prof_data = args.profile / f"{name}-{mode}-{flows_label(flows)}.data"
                prof = start_profile([s.proc.pid for s in procs.started], args.duration,
                                     prof_data)
            snaps = []
            t_first = time.monotonic()
            for i in range(args.duration + 1):
                if i:
                    time.sleep(max(0.0, t_first + i - time.monotonic()))
                t0 = time.monotonic()
                s = node.stats()
                snaps.append(((t0 + time.monotonic()) / 2, s))
            for nf in node.nfs:
                if not nf.alive():
                    raise BenchError(f"{nf.role} exited during the run with "
                                     f"{nf.proc.returncode}")
            run.update(rates(snaps))
            if prof is not None:
                prof.wait(timeout=args.duration + 30)
                run["profile"] = {"data": str(prof_data), "top": profile_top(prof_data)}
            a, b = snaps[0][1], snaps[-1][1]
            run["flow_table"] = flow_table_delta(a, b)
            during = (run["flow_table"] or {}).get("during", {})
            if during.get("lookups") and b.get("tsc_hz"):
                # In place: the RX thread's cycles in the flow director.
                run["lookup_cycles_per_pkt"] = during["cycles"] / during["lookups"]
                run["lookup_ns_per_pkt"] = run["lookup_cycles_per_pkt"] * 1e9 / b["tsc_hz"]
            hz = b.get("tsc_hz") or 0
            pps = run["mpps"] * 1e6
            run["ns_per_pkt"] = 1e3 / run["mpps"] if run["mpps"] > 0 else None
            run["machine_cycles_per_pkt"] = len(args.cpus) * hz / pps if pps > 0 else None
    except (BenchError, SluiceError) as e:
        run["error"] = str(e)
    finally:
        node.record_into(run)
    log_leftovers(name, run)
    return run


def flow_table_delta(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any] | None:
    """sluiced's flow-table counters at the end and their change during the measurement."""
    fa, fb = a.get("flows"), b.get("flows")
    if not isinstance(fb, dict):
        return None
    out: dict[str, Any] = {"at_end": fb}
    if isinstance(fa, dict):
        out["during"] = {k: v - fa[k] for k, v in fb.items()
                         if isinstance(v, int) and isinstance(fa.get(k), int)}
    return out


# -- latency (speedtest loop) -------------------------------------------------------

def run_latency(args: argparse.Namespace, progs: dict[str, Path], mode: str, seq: int,
                logroot: Path) -> dict[str, Any]:
    name = unique_name("fl", seq)
    procs = Processes(logroot / name)
    services = [f"f{i}" for i in range(2, args.latency_nfs + 2)]
    extra = ["--chain", ",".join(["speedtest", *services, "speedtest"])]
    if not args.dry_run:
        extra += ["--flow-lookup", mode]
    node = Node(name, procs, progs, args.cpus, args.latency_mode, args.latency_handoff, extra)
    run: dict[str, Any] = {"name": name, "flow_lookup": mode, "error": None,
                           "handoff": args.latency_handoff, "packets": args.latency_packets,
                           "flows": args.latency_flows}
    try:
        with node:
            for i, svc in enumerate(services, start=1):
                nf = node.start_nf(svc, "forward", svc, args.cpus[i % len(args.cpus)])
                node.wait_registered(svc, nf)
            st = node.start_nf("speedtest", "speedtest", "speedtest", args.cpus[0],
                               ["--packets", str(args.latency_packets), "--flows",
                                str(args.latency_flows), "--duration",
                                f"{args.latency_duration:g}", "--latency"])
            try:
                st.proc.wait(timeout=args.latency_duration + 60)
            except subprocess.TimeoutExpired as e:
                raise BenchError("speedtest did not end within its bound") from e
            if st.proc.returncode != 0:
                raise BenchError(f"speedtest exited with {st.proc.returncode}:\n{st.tail()}")
            b = node.stats()
            result = parse_speedtest(st.stdout.read_text(errors="replace"))
            run["speedtest"] = result
            run["latency_ns"] = result.get("latency_ns")
            run["mpps"] = result.get("mpps")
            run["flow_table"] = flow_table_delta({}, b)
    except (BenchError, SluiceError) as e:
        run["error"] = str(e)
    finally:
        node.record_into(run)
    return run


# -- captures -----------------------------------------------------------------------

@contextlib.contextmanager
def capture(tmpdir: Path, flows: int, size: int, min_packets: int) -> Any:
    """A capture of ``max(flows, min_packets)`` frames of ``size`` bytes; removed after."""
    path = tmpdir / f"udp{size}-{flows_label(flows)}.pcap"
    t0 = time.monotonic()
    n = write_pcap(path, fixed_size(max(flows, min_packets), flows, size))
    log(f"capture: {n} packets of {size} B, {flows} flow(s) "
        f"({time.monotonic() - t0:.1f} s)")
    try:
        yield path, n
    finally:
        with contextlib.suppress(OSError):
            path.unlink()


# -- report -------------------------------------------------------------------------

def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in runs if r["error"] is None]
    out = {"mpps": stats_summary([r["mpps"] for r in ok]), "runs_ok": len(ok),
           "runs": len(runs)}
    for key in ("ns_per_pkt", "machine_cycles_per_pkt", "lookup_ns_per_pkt",
                "lookup_cycles_per_pkt"):
        vals = [r[key] for r in ok if r.get(key) is not None]
        out[key] = statistics.median(vals) if vals else None
    nf_cyc: dict[str, list[float]] = {}
    for r in ok:
        for svc, n in r.get("nfs", {}).items():
            if n.get("cycles_per_pkt") is not None:
                nf_cyc.setdefault(svc, []).append(n["cycles_per_pkt"])
    out["nf_cycles_per_pkt_median"] = {s: statistics.median(v) for s, v in nf_cyc.items()}
    return out


def ratio(a: dict[str, Any] | None, b: dict[str, Any] | None) -> float | None:
    if not a or not b or not a.get("mpps") or not b.get("mpps"):
        return None
    return a["mpps"]["median"] / b["mpps"]["median"]


def strip_details(report: dict[str, Any]) -> dict[str, Any]:
    brief = json.loads(json.dumps(report))
    for p in brief.get("ablation", {}).values():
        for c in p["modes"].values():
            c.pop("run_details", None)
    for p in brief.get("ovs", {}).get("points", {}).values():
        for c in p["configs"].values():
            c.pop("run_details", None)
    for c in brief.get("latency", {}).values():
        c.pop("run_details", None)
    return brief


def plot(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    abl = report.get("ablation", {})
    ovs = report.get("ovs", {}).get("points", {})
    ncols = 1 + (1 if ovs else 0)
    fig, axes = plt.subplots(1, ncols, figsize=(11 if ovs else 8, 4.8),
                             gridspec_kw={"width_ratios": [3, 1.3][:ncols]})
    axes = list(axes) if ncols > 1 else [axes]
    ax = axes[0]
    labels = list(abl)
    modes = report["params"]["modes"]
    width = 0.8 / max(1, len(modes))
    for j, mode in enumerate(modes):
        xs, ys, lo, hi = [], [], [], []
        for i, lab in enumerate(labels):
            m = abl[lab]["modes"].get(mode, {}).get("mpps")
            if not m:
                continue
            xs.append(i + (j - (len(modes) - 1) / 2) * width)
            ys.append(m["median"])
            lo.append(m["median"] - m["min"])
            hi.append(m["max"] - m["median"])
        bars = ax.bar(xs, ys, width, yerr=[lo, hi], capsize=2,
                      label=f"{mode} ({MODE_NAMES[mode]})")
        if mode != "off":
            for b, x in zip(bars, xs, strict=True):
                lab = labels[round(x)]
                r = abl[lab]["ratios"].get(f"{mode}/default")
                if r is not None:
                    ax.annotate(f"{r:.2f}", (b.get_x() + b.get_width() / 2, b.get_height()),
                                ha="center", va="bottom", fontsize=6)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels([lab.replace(" ", "\n") for lab in labels], fontsize=8)
    ax.set_ylabel("Mpps out (median, min-max bars)")
    ax.set_title(f"flow director: pcap -> {report['params']['chain']} "
                 f"({report['params']['sluice_mode']} mode)", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(True, axis="y", alpha=0.3)
    if ovs:
        ax2 = axes[1]
        cfgs: list[str] = []
        for p in ovs.values():
            cfgs += [c for c in p["configs"] if c not in cfgs]
        w = 0.8 / len(cfgs)
        olabels = list(ovs)
        for j, cfg in enumerate(cfgs):
            xs, ys = [], []
            for i, lab in enumerate(olabels):
                m = ovs[lab]["configs"].get(cfg, {}).get("mpps")
                if m:
                    xs.append(i + (j - (len(cfgs) - 1) / 2) * w)
                    ys.append(m["median"])
            bars = ax2.bar(xs, ys, w, label=cfg)
            if cfg.startswith("sluice"):
                for b, x in zip(bars, xs, strict=True):
                    r = ovs[olabels[round(x)]]["ratios"].get(f"{cfg}/ovs-exact")
                    if r:
                        ax2.annotate(f"{r:.1f}x", (b.get_x() + b.get_width() / 2,
                                                   b.get_height()),
                                     ha="center", va="bottom", fontsize=6)
        ax2.set_xticks(range(len(olabels)))
        ax2.set_xticklabels(olabels, fontsize=8)
        ax2.set_title("vs OVS-DPDK 3.1, 64 B (labels: x OVS exact)", fontsize=9)
        ax2.legend(fontsize=7)
        ax2.grid(True, axis="y", alpha=0.3)
    fig.suptitle(f"CPUs {report['params']['cpus']}; {report['params']['runs']} run(s) x "
                 f"{report['params']['duration_s']} s; {report['started']}"
                 + ("; DRY RUN (modes identical)" if report.get("dry_run") else ""),
                 fontsize=8)
    save_plot(fig, path)


def summary_line(report: dict[str, Any]) -> str:
    """``cached/default=X naive/default=Y`` at 64 bytes and the largest flow count."""
    pts = [p for p in report.get("ablation", {}).values() if p["size"] == 64]
    if not pts:
        pts = list(report.get("ablation", {}).values())
    parts = []
    best = max(pts, key=lambda p: p["flows"]) if pts else None
    for mode in ("cached", "naive"):
        r = best["ratios"].get(f"{mode}/default") if best else None
        parts.append(f"{mode}/default=" + (f"{r:.2f}" if r is not None else "n/a"))
    return " ".join(parts)


# -- main ---------------------------------------------------------------------------

def main() -> int:
    args = _parser().parse_args()
    q = args.quick
    args.runs = args.runs if args.runs is not None else (1 if q else 3)
    args.duration = args.duration if args.duration is not None else (3 if q else 5)
    args.warmup = args.warmup if args.warmup is not None else (1 if q else 2)
    sizes = args.sizes if args.sizes is not None else ([64] if q else list(SIZES))
    flows = args.flows if args.flows is not None else ([1_000_000] if q else list(FLOWS))
    modes = [m for m in args.modes.split(",") if m]
    ovs_flows = (args.ovs_flows if args.ovs_flows is not None
                 else ([100_000] if q else list(OVS_FLOWS)))
    ovs_rules = (args.ovs_rules if args.ovs_rules is not None
                 else (["exact"] if q else ["exact", "wildcard"]))
    latency = not (args.no_latency or q)
    tag = "flowdir" + ("-dryrun" if args.dry_run else "-quick" if q else "")
    args.out = args.out or RESULTS / f"{tag}.json"
    args.plot = args.plot or RESULTS / f"{tag}.png"
    try:
        progs, hp_cmd, ovs_install = _prepare(args, sizes, flows, modes, ovs_flows, latency)
    except (BenchError, ValueError, OSError) as e:
        print(f"flowdir.py: {e}", file=sys.stderr)
        return 2

    chain = ",".join([*chain_services(args.chain_nfs), "port:out"])
    command = bench_command()
    report: dict[str, Any] = {
        "benchmark": "flowdir",
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": command,
        "argv": sys.argv,
        "dry_run": args.dry_run,
        "host": host_info(),
        "hugepages_reserved_by": hp_cmd,
        "params": {
            "quick": q, "runs": args.runs, "warmup_s": args.warmup,
            "duration_s": args.duration, "sizes": sizes, "flows": flows, "modes": modes,
            "cpus": cpu_list(args.cpus), "chain": chain, "chain_nfs": args.chain_nfs,
            "sluice_mode": args.sluice_mode, "handoff": args.handoff,
            "flow_capacity": {str(f): capacity_for(f) for f in sorted(set(flows + ovs_flows))},
            "mbufs": "max(262143, capture packets + 131071)",
            "min_packets": args.min_packets,
            "ovs_flows": ovs_flows, "ovs_rules": ovs_rules,
            "ovs_sluice_chains": [",".join([*chain_services(k), "port:out"])
                                  for k in args.ovs_sluice_nfs],
        },
        "core_layout": {
            "sluiced": (f"control + 1 I/O thread floating on CPUs {cpu_list(args.cpus)}"
                        if args.sluice_mode == "shared" else
                        f"control on CPU {args.cpus[0]}, I/O thread busy-polling CPU "
                        f"{args.cpus[1]}"),
            "nfs": (f"{args.chain_nfs} sluice-forward, floating on CPUs "
                    f"{cpu_list(args.cpus)} (shared mode: yield, then sleep when idle)"
                    if args.sluice_mode == "shared" else
                    f"{args.chain_nfs} sluice-forward, busy polling, f<i> pinned to CPU "
                    f"(i-1) mod {len(args.cpus)}"),
            "ovs-vswitchd": (f"1 PMD thread pinned to CPU {args.cpus[1]}; main, handler, "
                             f"revalidator and other threads, and ovsdb-server, moved to CPU "
                             f"{args.cpus[0]} once running (per run: 'threads')"),
            "latency": (f"sluiced --mode {args.latency_mode}: control on CPU {args.cpus[0]}, "
                        f"I/O thread busy-polling CPU {args.cpus[1]}; speedtest pinned to CPU "
                        f"{args.cpus[0]}" if args.latency_mode == "poll" else
                        f"sluiced and speedtest floating on CPUs {cpu_list(args.cpus)}"),
        },
        "method": ("Mpps: median of per-second out-port tx_pkts rates (sluiced stats; OVS: "
                   "ovs-ofctl dump-ports) after the warm-up. Modes of a point alternate "
                   "within each run; ratio = median / median of off. Captures: "
                   "sluice.runtime.traces.fixed_size(max(flows, min_packets), flows, size), one "
                   "packet per flow, replayed from memory (net_pcap infinite_rx)."),
        "ablation": {},
    }
    if args.dry_run:
        report["dry_run_note"] = ("sluiced without --flow-lookup: the option was left out, "
                                  "all modes ran the same configuration")
    cnt = _Count()
    with tempfile.TemporaryDirectory(prefix="sluice-bench-flowdir-") as tmp, \
            sigterm_as_interrupt():
        tmpdir = Path(tmp)
        logs = tmpdir / "logs"
        try:
            n_points = len(sizes) * len(flows)
            log(f"ablation: {n_points} point(s) x {len(modes)} mode(s) x {args.runs} run(s)"
                f"; chain {chain}; {args.sluice_mode} mode")
            for size in sizes:
                for fl in flows:
                    label = f"{size}B {flows_label(fl)}"
                    report["ablation"][label] = _ablation_point(
                        args, progs, tmpdir, logs, size, fl, modes, cnt)
            if latency:
                _latency_runs(args, progs, logs, modes, cnt, report)
            if ovs_flows:
                report["ovs"] = {"install": ovs_install, "points": {},
                                 "target_ratio_at_100k": OVS_TARGET}
                for fl in ovs_flows:
                    report["ovs"]["points"][flows_label(fl)] = _ovs_point(
                        args, progs, tmpdir, logs, fl, ovs_rules, cnt)
        except KeyboardInterrupt as e:
            log(f"interrupted ({str(e) or 'Ctrl-C'}): writing what was measured")
            report["interrupted"] = str(e) or "Ctrl-C"
    _finish(args, report)
    return 1 if cnt.failed or report.get("interrupted") else 0


@dataclasses.dataclass
class _Count:
    """Runs so far: seq numbers each run (its log files), failed counts the failures."""
    seq: int = 0
    failed: int = 0


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Writes JSON (command, every run's command lines, core layout, git commit) to "
               "--out and a plot to --plot; the last line printed is the summary "
               "'cached/default=X naive/default=Y'. Run as root after ninja -C build.")
    ap.add_argument("--quick", action="store_true",
                    help="64 B at 1M flows, 3 modes, 1 run of 1+3 s; OVS exact at 100k")
    ap.add_argument("--dry-run", action="store_true",
                    help="for a sluiced without --flow-lookup: leave the mode option out")
    ap.add_argument("--runs", type=positive_int, help="runs per point (3; --quick: 1)")
    ap.add_argument("--duration", type=positive_int,
                    help="measured seconds per run (5; --quick: 3)")
    ap.add_argument("--warmup", type=nonneg_int, help="seconds before measuring (2; --quick: 1)")
    ap.add_argument("--sizes", type=int_list(MIN_FRAME, MAX_FRAME, empty=True),
                    help=f"frame sizes, {MIN_FRAME}..{MAX_FRAME}; '' for no ablation "
                         f"(64,256,1024; --quick: 64)")
    ap.add_argument("--flows", type=int_list(1),
                    help="flow counts (1,10000,1000000; --quick: 1000000)")
    ap.add_argument("--modes", default=",".join(MODES), help="flow-lookup modes (all)")
    ap.add_argument("--min-packets", type=positive_int, default=4096,
                    help="packets per capture: max(flows, this) (4096)")
    ap.add_argument("--chain-nfs", type=nonneg_int, default=2,
                    help="sluice-forward NFs in the ablation's chain (2)")
    ap.add_argument("--sluice-mode", choices=("shared", "poll"), default="shared",
                    help="sluiced/NF mode (shared: the faster one on 2 CPUs)")
    ap.add_argument("--handoff", choices=("direct", "mgr"),
                    help="sluiced --handoff for the port runs (sluiced's default)")
    ap.add_argument("--ovs-flows", type=int_list(1, empty=True),
                    help="OVS comparison flow counts, '' to skip (1000,100000; --quick: "
                         "100000)")
    ap.add_argument("--ovs-rules", type=name_list(("exact", "wildcard")),
                    help="exact and/or wildcard (both; --quick: exact)")
    ap.add_argument("--ovs-sluice-nfs", type=int_list(0), default=[0, 2],
                    help="Sluice runs next to OVS: forwarders in the chain, 0 = port to "
                         "port through sluiced alone, the same job as the switch (0,2)")
    ap.add_argument("--ovs-warmup", type=seconds, default=5.0,
                    help="OVS warm-up in seconds, at least (then until its datapath holds "
                         "every flow) (5)")
    ap.add_argument("--no-latency", action="store_true", help="skip the latency runs")
    ap.add_argument("--profile", type=Path, default=None, metavar="DIR",
                    help="perf record sluiced and the NFs during each measured window into "
                         "DIR; the hottest symbols go into the JSON (perf slows the run)")
    ap.add_argument("--latency-handoff", choices=("direct", "mgr"), default="mgr",
                    help="latency loop: NF -> sluiced's I/O thread -> NF (mgr)")
    ap.add_argument("--latency-mode", choices=("shared", "poll"), default="poll",
                    help="latency loop: sluiced/NF mode (poll: I/O thread and speedtest "
                         "each busy-poll a CPU)")
    ap.add_argument("--latency-nfs", type=nonneg_int, default=0,
                    help="forwarders in the latency loop besides speedtest (0: "
                         "speedtest,speedtest)")
    ap.add_argument("--latency-packets", type=positive_int, default=32,
                    help="latency loop: packets in flight (32)")
    ap.add_argument("--latency-flows", type=positive_int, default=32,
                    help="latency loop: flows of those packets (32)")
    ap.add_argument("--latency-duration", type=seconds, default=4.0,
                    help="latency loop: seconds per run (4)")
    ap.add_argument("--cpus", default="0,1", help="CPUs for everything, e.g. 0,1 (0,1)")
    ap.add_argument("--build", type=Path, default=ROOT / "build", metavar="DIR",
                    help="the build folder with sluiced and the NFs (build)")
    ap.add_argument("--out", type=Path, metavar="FILE",
                    help="JSON results (bench/results/flowdir.json; --quick: "
                         "flowdir-quick.json; --dry-run: flowdir-dryrun.json)")
    ap.add_argument("--plot", type=Path, metavar="FILE",
                    help="plot (as --out, .png; a full run also copies it to "
                         "docs/perf/flowdir.png)")
    return ap


def _prepare(
    args: argparse.Namespace, sizes: list[int], flows: list[int], modes: list[str],
    ovs_flows: list[int], latency: bool,
) -> tuple[dict[str, Path], str | None, Any]:
    """Check the options and the binaries, take the one-benchmark lock, reserve
    hugepages and install OVS if needed; sets args.cpus. Returns the binaries,
    the command that reserved hugepages (or None) and what OVS's install did."""
    if any(m not in MODES for m in modes) or not modes:
        raise BenchError(f"--modes {args.modes}: use off, cached, naive")
    if "off" not in modes:
        raise BenchError("--modes must include off: the ratios are against it")
    if not sizes and not ovs_flows and not latency:
        raise BenchError("--sizes '' and --ovs-flows '' (and no latency runs): nothing "
                         "to measure; give sizes or OVS flow counts")
    args.cpus = parse_cpus(args.cpus)
    one_benchmark_at_a_time("flowdir.py")
    progs = binaries(args.build)
    has_lookup = "--flow-lookup" in sluiced_options(progs)
    if not has_lookup and not args.dry_run:
        raise BenchError(f"{progs['sluiced']} has no --flow-lookup option: build the "
                         f"flow director (ninja -C {args.build}), or pass --dry-run")
    need = max([hugepage_need_mib(max(f, args.min_packets), f)
                for f in flows + ovs_flows] or [hugepage_need_mib(args.min_packets, 1)])
    hp_cmd = ensure_hugepages(need)
    if hp_cmd:
        log(f"reserved hugepages: {hp_cmd}")
    ovs_install = ensure_installed() if ovs_flows else None
    return progs, hp_cmd, ovs_install


def _ablation_point(
    args: argparse.Namespace, progs: dict[str, Path], tmpdir: Path, logs: Path, size: int,
    fl: int, modes: list[str], cnt: _Count,
) -> dict[str, Any]:
    """Every run of every mode on a capture of fl flows of size-byte frames; the
    report's point for them."""
    label = f"{size}B {flows_label(fl)}"
    with capture(tmpdir, fl, size, args.min_packets) as (pcap, n):
        runs: dict[str, list[dict[str, Any]]] = {m: [] for m in modes}
        for r in range(args.runs):
            for m in modes:
                cnt.seq += 1
                x = run_sluice(args, progs, pcap, n, fl, m, cnt.seq, logs)
                runs[m].append(x)
                if x["error"]:
                    cnt.failed += 1
                    log(f"{label} {m} run {r + 1}: FAILED: {x['error']}")
                else:
                    log(f"{label} {m} run {r + 1}: {x['mpps']:.2f} Mpps")
    point: dict[str, Any] = {
        "size": size, "flows": fl, "capture_packets": n,
        "mbufs": mbufs_for(n), "flow_capacity": capacity_for(fl),
        "modes": {m: summarize(rs) | {"run_details": rs}
                  for m, rs in runs.items()},
    }
    point["ratios"] = {f"{m}/default": ratio(point["modes"][m],
                                             point["modes"]["off"])
                       for m in modes if m != "off"}
    log(f"{label}: " + " ".join(
        f"{k}={v:.2f}" for k, v in point["ratios"].items() if v is not None))
    return point


def _latency_runs(
    args: argparse.Namespace, progs: dict[str, Path], logs: Path, modes: list[str],
    cnt: _Count, report: dict[str, Any],
) -> None:
    """The latency loop's runs per mode, into report["latency"] and its method."""
    report["latency"] = {}
    lat_runs: dict[str, list[dict[str, Any]]] = {m: [] for m in modes}
    for _r in range(args.runs):
        for m in modes:
            cnt.seq += 1
            x = run_latency(args, progs, m, cnt.seq, logs)
            lat_runs[m].append(x)
            if x["error"]:
                cnt.failed += 1
                log(f"latency {m}: FAILED: {x['error']}")
            else:
                log(f"latency {m}: {x['latency_ns']} ns, {x['mpps']:.2f} Mpps")
    for m, rs in lat_runs.items():
        ok = [x for x in rs if x["error"] is None and x.get("latency_ns")]
        report["latency"][m] = {
            "avg_ns": stats_summary([x["latency_ns"]["avg"] for x in ok]),
            "min_ns": stats_summary([x["latency_ns"]["min"] for x in ok]),
            "loop_mpps": stats_summary([x["mpps"] for x in ok]),
            "run_details": rs,
        }
    loop = ",".join(["speedtest", *(f"f{i}" for i in range(2, args.latency_nfs + 2)),
                     "speedtest"])
    report["latency_method"] = (
        f"sluice-speedtest --packets {args.latency_packets} --flows "
        f"{args.latency_flows} --latency on the loop {loop}, sluiced --mode "
        f"{args.latency_mode} --handoff {args.latency_handoff} (each hop through "
        f"sluiced's I/O thread, as the paper's NF -> TX thread -> NF): time "
        f"around the loop (speedtest stamps a packet when it sends it and reads "
        f"the stamp when it comes back); min and avg over all packets of a run. "
        f"Packets made by an NF have no ingress lookup, so off and cached do "
        f"the same work here; naive parses, hashes and looks up at every hop.")


def _ovs_point(
    args: argparse.Namespace, progs: dict[str, Path], tmpdir: Path, logs: Path, fl: int,
    ovs_rules: list[str], cnt: _Count,
) -> dict[str, Any]:
    """OVS (each rule kind) and Sluice (each chain length) on a capture of fl flows
    of 64 B; the report's OVS point for them."""
    label = flows_label(fl)
    with capture(tmpdir, fl, 64, args.min_packets) as (pcap, n):
        tuples = capture_flows(pcap)
        cfgs: dict[str, list[dict[str, Any]]] = {f"ovs-{k}": []
                                                 for k in ovs_rules}
        for k in args.ovs_sluice_nfs:
            cfgs[f"sluice-cached-{k}nf"] = []
        for r in range(args.runs):
            for k in ovs_rules:
                cnt.seq += 1
                free_mib = free_hugepage_mib()
                x = run_ovs(pcap, k, args.cpus, args.ovs_warmup,
                            args.duration, logs, cnt.seq, tuples)
                x["free_hugepage_mib_before"] = free_mib
                cfgs[f"ovs-{k}"].append(x)
                if x["error"]:
                    cnt.failed += 1
                    log(f"ovs {label} {k} run {r + 1}: FAILED: {x['error']}")
                else:
                    log(f"ovs {label} {k} run {r + 1}: {x['mpps']:.2f} Mpps "
                        f"(warm-up {x['warmup_s']:.0f} s)")
            for k in args.ovs_sluice_nfs:
                cnt.seq += 1
                x = run_sluice(args, progs, pcap, n, fl, "cached", cnt.seq, logs,
                               nfs=k)
                cfgs[f"sluice-cached-{k}nf"].append(x)
                what = f"sluice {label} cached {x['chain']} run {r + 1}"
                if x["error"]:
                    cnt.failed += 1
                    log(f"{what}: FAILED: {x['error']}")
                else:
                    log(f"{what}: {x['mpps']:.2f} Mpps")
    pt: dict[str, Any] = {
        "flows": fl, "capture_packets": n, "size": 64,
        "configs": {c: summarize(rs) | {"run_details": rs}
                    for c, rs in cfgs.items()},
    }
    pc = pt["configs"]
    pt["ratios"] = {f"sluice-cached-{k}nf/ovs-{rule}": ratio(
        pc[f"sluice-cached-{k}nf"], pc[f"ovs-{rule}"])
        for k in args.ovs_sluice_nfs for rule in ovs_rules}
    return pt


def _finish(args: argparse.Namespace, report: dict[str, Any]) -> None:
    """Complete the report (OVS's 100k ratios, summary, end), write it and its
    plot, and print it without run details, the summary last."""
    q = args.quick
    p100 = report.get("ovs", {}).get("points", {}).get("100k")
    if p100:
        rs = {k: v for k, v in p100["ratios"].items() if k.endswith("/ovs-exact")}
        report["ovs"]["ratios_at_100k_vs_exact"] = rs
        report["ovs"]["target_met"] = {k: v is not None and v >= OVS_TARGET
                                       for k, v in rs.items()}
    report["summary"] = summary_line(report)
    report["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    report["loadavg_at_end"] = os.getloadavg()
    write_json(args.out, report)
    try:
        if report["ablation"]:
            plot(report, args.plot)
            if not q and not args.dry_run and args.plot == RESULTS / "flowdir.png":
                shutil.copy(args.plot, DOCS_PLOT)
    except Exception as e:  # the numbers matter more than the picture
        log(f"plot failed: {e}")
    print(json.dumps(strip_details(report), indent=2))
    print(f"results: {args.out}, plot: {args.plot}")
    for label, p in report["ablation"].items():
        cells = " ".join(f"{m}={c['mpps']['median']:.2f}" if c["mpps"] else f"{m}=n/a"
                         for m, c in p["modes"].items())
        print(f"{label}: Mpps {cells}")
    for label, p in report.get("ovs", {}).get("points", {}).items():
        cells = " ".join(f"{c}={v['mpps']['median']:.2f}" if v["mpps"] else f"{c}=n/a"
                         for c, v in p["configs"].items())
        rs = " ".join(f"{k}={v:.1f}x" for k, v in p["ratios"].items() if v)
        print(f"ovs {label}: Mpps {cells}; {rs}")
    print(report["summary"])

if __name__ == "__main__":
    sys.exit(main())
