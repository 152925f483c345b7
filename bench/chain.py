#!/usr/bin/env python3
"""Chain benchmark: sluice-speedtest + 0..4 sluice-forward NFs, in a loop.

For each chain length L (1..5) the chain is speedtest,f2,..,fL,speedtest:
speedtest creates 128 packets once (OpenNetVM's speed_tester default) and
counts them each time they come back; each forwarder hands them on along
the default edge without touching them. Every run starts a fresh sluiced
under a unique --name and stops it (and anything left) at the end.

Configurations ("modes"):
  shared      sluiced --mode shared, NFs --mode shared (yield, then sleep)
  poll        sluiced --mode poll, NFs busy-poll, pinned round robin on the CPUs
  pinned      as shared, but the NFs pinned round robin on the CPUs (as in poll)
  shared-mgr, poll-mgr
              the same with sluiced --handoff mgr (NF -> NF via sluiced's
              I/O thread instead of direct enqueue), for the lengths of
              --mgr-chains (default 2,3)

Per run: Mpps = median of speedtest's per-second samples after dropping the
first; cycles per packet per hop = n_cpus x tsc_hz / (pps x L); each NF's own
cycles per packet (in its process function) from sluiced's `stats` between
two snapshots taken during the run.

Output: JSON on stdout and in bench/results/chain.json, a plot in
bench/results/chain.png. --quick: one run per point, 3 s each; the last line
is `chain Mpps: 1=.. 2=.. 3=.. 4=.. 5=..` (medians, best mode per point).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from harness import (
    RESULTS,
    ROOT,
    BenchError,
    Node,
    Processes,
    bench_command,
    binaries,
    cpu_list,
    host_info,
    int_list,
    log,
    log_leftovers,
    name_list,
    nf_rates,
    one_benchmark_at_a_time,
    parse_cpus,
    positive_int,
    save_plot,
    seconds,
    sigterm_as_interrupt,
    stats_summary,
    unique_name,
    write_json,
)
from sluice.runtime.client import SluiceError

CHAINS = (1, 2, 3, 4, 5)
# Issue 2's targets (Mpps, best mode, CPUs 0-1) and OpenNetVM 21.10 on the same layout.
TARGETS = {1: 60.0, 2: 12.0, 3: 8.0, 5: 5.0}
CONFIGS = {
    "shared": ("shared", "direct"),
    # shared mode, NFs pinned round robin like poll mode's (sluiced floats)
    "pinned": ("shared", "direct"),
    "poll": ("poll", "direct"),
    "shared-mgr": ("shared", "mgr"),
    "poll-mgr": ("poll", "mgr"),
}


def chain_services(length: int) -> list[str]:
    """The forwarders' services of a chain of ``length`` NFs: f2..fL."""
    return [f"f{i}" for i in range(2, length + 1)]


def one_run(args: argparse.Namespace, progs: dict[str, Path], length: int, config: str,
            seq: int, logroot: Path) -> dict[str, Any]:
    mode, handoff = CONFIGS[config]
    name = unique_name("bc", seq)
    services = chain_services(length)
    chain = ",".join(["speedtest", *services, "speedtest"])
    procs = Processes(logroot / name)
    run: dict[str, Any] = {"name": name, "chain": length, "config": config, "mode": mode,
                           "handoff": handoff, "error": None}
    node = Node(name, procs, progs, args.cpus, mode, handoff, ["--chain", chain])
    deadline = time.monotonic() + args.duration + 60  # hard bound on one run
    try:
        with node:
            # NF at chain position i (speedtest is 0) is pinned to CPU i mod n in poll mode.
            pin = True if config == "pinned" else None
            for i, svc in enumerate(services, start=1):
                nf = node.start_nf(svc, "forward", svc, args.cpus[i % len(args.cpus)],
                                   pin=pin)
                node.wait_registered(svc, nf)
            st = node.start_nf("speedtest", "speedtest", "speedtest", args.cpus[0],
                               ["--packets", str(args.packets), "--duration",
                                f"{args.duration:g}", "--report", "1"], pin=pin)
            run["nf_cycles_per_pkt"], run["nf_counters"] = measure_nfs(node, st, args, deadline)
            try:
                st.proc.wait(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired as e:
                raise BenchError(f"speedtest did not end within its bound "
                                 f"({args.duration:g} s + 60 s)") from e
            if st.proc.returncode != 0:
                raise BenchError(f"speedtest exited with {st.proc.returncode}:\n{st.tail()}")
            result = parse_speedtest(st.stdout.read_text(errors="replace"))
            run["speedtest"] = result
    except (BenchError, SluiceError) as e:
        run["error"] = str(e)
    finally:
        node.record_into(run)
    if run["error"] is None:
        samples = run["speedtest"]["samples_mpps"]
        used = samples[1:] if len(samples) > 1 else samples
        mpps = statistics.median(used) if used else run["speedtest"]["mpps"]
        run["samples_used"] = len(used)
        run["mpps"] = mpps
        hz = run["speedtest"]["tsc_hz"]
        run["cycles_per_pkt_per_hop"] = (len(args.cpus) * hz / (mpps * 1e6 * length)
                                         if mpps > 0 else None)
    log_leftovers(name, run)
    return run


def measure_nfs(node: Node, st: Any, args: argparse.Namespace, deadline: float
                ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Two stats snapshots while speedtest runs; per-NF cycles/packet and counters between."""
    t_inj = None
    while time.monotonic() < deadline and st.alive():
        s = node.stats()
        if any(n["service"] == "speedtest" and n["rx_pkts"] > 0 for n in s["nfs"]):
            t_inj = time.monotonic()
            break
        time.sleep(0.05)
    if t_inj is None:
        if st.alive():
            raise BenchError("speedtest received nothing before the run's time bound")
        return {}, {}
    warm = min(1.0, args.duration / 3)
    end = t_inj + max(warm + 0.2, args.duration - 0.4)
    time.sleep(max(0.0, t_inj + warm - time.monotonic()))
    a = node.stats()
    time.sleep(max(0.0, end - time.monotonic()))
    if not st.alive():
        return {}, {}
    b = node.stats()
    rates = nf_rates(a, b)
    return ({svc: r["cycles_per_pkt"] for svc, r in rates.items()},
            {svc: {k: r[k] for k in ("rx_pkts", "drops", "sleeps", "stalls")}
             for svc, r in rates.items()})


def parse_speedtest(stdout: str) -> dict[str, Any]:
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                break
    raise BenchError(f"speedtest printed no JSON summary; its stdout: {stdout[-300:]!r}")


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in runs if r["error"] is None]
    mpps = [r["mpps"] for r in ok]
    cph = [r["cycles_per_pkt_per_hop"] for r in ok if r["cycles_per_pkt_per_hop"]]
    nf_cyc: dict[str, list[float]] = {}
    for r in ok:
        for svc, c in r.get("nf_cycles_per_pkt", {}).items():
            if c is not None:
                nf_cyc.setdefault(svc, []).append(c)
    first = runs[0]
    return {
        "chain": first["chain"], "config": first["config"], "mode": first["mode"],
        "handoff": first["handoff"], "runs_ok": len(ok), "runs": len(runs),
        "mpps": stats_summary(mpps),
        "cycles_per_pkt_per_hop": stats_summary(cph),
        "nf_cycles_per_pkt_median": {s: statistics.median(v) for s, v in nf_cyc.items()},
        "runs_mpps": mpps,
    }


def best_per_chain(points: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    best: dict[int, dict[str, Any]] = {}
    for p in points:
        if p["mpps"] is None:
            continue
        b = best.get(p["chain"])
        if b is None or p["mpps"]["median"] > b["mpps"]:
            best[p["chain"]] = {"config": p["config"], "mpps": p["mpps"]["median"],
                                "cycles_per_pkt_per_hop": (p["cycles_per_pkt_per_hop"] or {})
                                .get("median")}
    return best


def plot(points: list[dict[str, Any]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    styles = {"shared": "o-", "poll": "s-", "pinned": "^-", "shared-mgr": "o--",
              "poll-mgr": "s--"}
    for config in CONFIGS:
        pts = sorted((p for p in points if p["config"] == config and p["mpps"]),
                     key=lambda p: p["chain"])
        if not pts:
            continue
        xs = [p["chain"] for p in pts]
        med = [p["mpps"]["median"] for p in pts]
        lo = [p["mpps"]["median"] - p["mpps"]["min"] for p in pts]
        hi = [p["mpps"]["max"] - p["mpps"]["median"] for p in pts]
        ax.errorbar(xs, med, yerr=[lo, hi], fmt=styles[config], capsize=3,
                    label=f"{config} ({CONFIGS[config][1]} hand-off)")
    ax.plot(list(TARGETS), list(TARGETS.values()), "kx", markersize=9, label="target (issue 2)")
    ax.set_xlabel("chain length (NFs, speedtest included)")
    ax.set_ylabel("Mpps (median, min-max bars)")
    ax.set_xticks(list(CHAINS))
    ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    save_plot(fig, path)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Writes JSON (every run: command lines, core layout, git commit) to --out and "
               "a plot to --plot; the last line printed is the summary "
               "'chain Mpps: 1=.. 2=..'. Run as root after ninja -C build.")
    ap.add_argument("--quick", action="store_true",
                    help="one run per point, 3 s each (unless --runs/--duration say otherwise)")
    ap.add_argument("--runs", type=positive_int, help="runs per point (3; --quick: 1)")
    ap.add_argument("--duration", type=seconds, help="seconds per run, >= 1 (5; --quick: 3)")
    ap.add_argument("--chains", type=int_list(1, 16), default=list(CHAINS),
                    help="chain lengths to run, NFs with speedtest, 1..16 (1,2,3,4,5)")
    ap.add_argument("--modes", type=name_list(("shared", "poll", "pinned")),
                    default=["shared", "poll"],
                    help="modes for every length: shared, poll, pinned (shared,poll)")
    ap.add_argument("--mgr-chains", type=int_list(1, 16, empty=True),
                    help="lengths (of --chains) also run with sluiced --handoff mgr, in each "
                         "mode; '' for none (those of 2,3 in --chains)")
    ap.add_argument("--packets", type=positive_int, default=128,
                    help="packets in flight (128)")
    ap.add_argument("--cpus", default="0,1",
                    help="CPUs for sluiced and every NF, e.g. 0,1 or 0-3 (0,1)")
    ap.add_argument("--build", type=Path, default=ROOT / "build", metavar="DIR",
                    help="the build folder with sluiced and the NFs (build)")
    ap.add_argument("--out", type=Path, default=RESULTS / "chain.json", metavar="FILE",
                    help="JSON results (bench/results/chain.json)")
    ap.add_argument("--plot", type=Path, default=RESULTS / "chain.png", metavar="FILE",
                    help="plot (bench/results/chain.png)")
    return ap


def main() -> int:
    ap = build_parser()
    args = ap.parse_args()
    args.runs = args.runs if args.runs is not None else (1 if args.quick else 3)
    args.duration = args.duration if args.duration is not None else (3.0 if args.quick else 5.0)
    chains, modes = args.chains, args.modes
    mgr_chains = ({2, 3} & set(chains) if args.mgr_chains is None
                  else set(args.mgr_chains))
    try:
        args.cpus = parse_cpus(args.cpus)
        progs = binaries(args.build)
        if mgr_chains - set(chains):
            raise BenchError(f"--mgr-chains {cpu_list(sorted(mgr_chains))}: only lengths of "
                             f"--chains ({cpu_list(chains)}) are run; add them there or "
                             f"leave them out")
        one_benchmark_at_a_time("chain.py")
    except BenchError as e:
        print(f"chain.py: {e}", file=sys.stderr)
        return 2

    plan = [(c, m) for c in chains for m in modes]
    plan += [(c, f"{m}-mgr") for c in chains if c in mgr_chains for m in modes
             if f"{m}-mgr" in CONFIGS]
    plan.sort(key=lambda p: (p[0], list(CONFIGS).index(p[1])))
    bound = len(plan) * args.runs * (args.duration + 75)
    log(f"{len(plan)} points x {args.runs} run(s), {args.duration:g} s each; "
        f"at most {bound / 60:.0f} min")
    results: dict[str, Any] = {
        "benchmark": "chain",
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": bench_command(),
        "argv": sys.argv,
        "host": host_info(),
        "params": {"runs": args.runs, "duration_s": args.duration, "packets": args.packets,
                   "cpus": cpu_list(args.cpus), "chains": chains, "modes": modes,
                   "mgr_chains": sorted(mgr_chains), "quick": args.quick},
        "method": ("Mpps: median over runs of each run's median per-second speedtest sample "
                   "(first sample dropped). cycles_per_pkt_per_hop = n_cpus * tsc_hz / "
                   "(pps * chain length). nf_cycles_per_pkt: cycles in each NF's process "
                   "function per packet, from sluiced stats between two snapshots during "
                   "the run (excludes ring hand-off and waiting)."),
        "targets_mpps": TARGETS,
        "points": [],
    }
    seq = 0
    failed = 0
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="sluice-bench-chain-") as tmp, sigterm_as_interrupt():
        logroot = Path(tmp)
        try:
            for length, config in plan:
                runs = []
                for r in range(args.runs):
                    seq += 1
                    run = one_run(args, progs, length, config, seq, logroot)
                    runs.append(run)
                    if run["error"]:
                        failed += 1
                        log(f"chain {length} {config} run {r + 1}: FAILED: {run['error']}")
                    else:
                        log(f"chain {length} {config} run {r + 1}: {run['mpps']:.2f} Mpps, "
                            f"{run['cycles_per_pkt_per_hop']:.1f} cycles/pkt/hop, NF cycles/pkt "
                            + json.dumps({k: round(v, 1) for k, v in
                                          run["nf_cycles_per_pkt"].items() if v is not None}))
                point = summarize(runs)
                point["run_details"] = runs
                results["points"].append(point)
        except KeyboardInterrupt:
            log("interrupted: writing what was measured")
            results["interrupted"] = True
            if runs and (not results["points"] or
                         results["points"][-1]["run_details"] is not runs):
                point = summarize(runs)  # the runs of the point under way that ended
                point["run_details"] = runs
                results["points"].append(point)
    best = best_per_chain(results["points"])
    results["best"] = {str(k): v for k, v in sorted(best.items())}
    summary = "chain Mpps: " + " ".join(
        f"{c}={best[c]['mpps']:.1f}" if c in best else f"{c}=n/a" for c in chains)
    modes_line = "best mode: " + " ".join(
        f"{c}={best[c]['config']}" if c in best else f"{c}=n/a" for c in chains)
    results["summary"] = summary
    results["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    write_json(args.out, results)
    try:
        plot(results["points"], args.plot,
             f"Sluice chain, {args.packets} pkts in flight, CPUs {cpu_list(args.cpus)}, "
             f"{args.runs} run(s) x {args.duration:g} s, {results['started']}")
    except Exception as e:  # the numbers matter more than the picture
        log(f"plot failed: {e}")
    print(json.dumps({k: v for k, v in results.items() if k != "points"} |
                     {"points": [{k: v for k, v in p.items() if k != "run_details"}
                                 for p in results["points"]]}, indent=2))
    print(f"results: {args.out}, plot: {args.plot}")
    for c in chains:
        if c in best:
            cph = best[c]["cycles_per_pkt_per_hop"]
            print(f"chain {c}: best {best[c]['config']} {best[c]['mpps']:.2f} Mpps"
                  + (f", {cph:.1f} cycles/pkt/hop" if cph else "")
                  + (f" (target {TARGETS[c]:g})" if c in TARGETS else ""))
    print(modes_line)
    print(summary)
    return 1 if failed or results.get("interrupted") else 0


if __name__ == "__main__":
    sys.exit(main())
