#!/usr/bin/env python3
"""Per-decision costs with the data path's own code (``sluice-micro``).

- Flow-table lookup, ns and cycles per packet (SDNFV reports 30 ns): key +
  CRC32-C signature + ``rte_hash_lookup_with_hash_bulk`` in bursts of 32 on
  a table made like sluiced's, at 1 / 10k / 100k / 1M flows visited in a random
  order; and the lookup alone.
- The machine's yardstick: one random cache line of a 256 MiB buffer, with
  many reads in flight (what each line of a bulk lookup costs) and one at a
  time (the memory latency). A lookup at 1M flows touches about four.
- Shortest-queue instance choice, ns per choice (SDNFV reports 15 ns), over
  2 / 4 / 8 / 16 instances, next to the flow-hash bucket choice.
- Wildcard rules (sluiced's flow rules, sluice-firewall), 1 / 10 / 100 /
  1,000 / 4,096 random IPv4 rules (prefixes, port ranges, protocols,
  priorities): the rte_acl classifier's build time (sluiced builds one per
  rule.add call) and its classification of a 5-tuple against the linear
  reference (``sl_match_find``, the naive lookup), answers compared.

Each run is one ``sluice-micro`` process pinned to one CPU (TSC-timed, so
preemption by other load inflates a run: the summary takes the minimum
and the median of ``--runs``). Writes bench/results/micro.json and
micro.png; the last lines are ``lookup ns: 1=… 10k=… 1M=… queue ns: 2=… …``
and ``rules (N=build ms/acl ns/linear ns): 1=… 4096=…``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from harness import (
    RESULTS,
    ROOT,
    BenchError,
    bench_command,
    host_info,
    log,
    nonneg_int,
    one_benchmark_at_a_time,
    positive_int,
    save_plot,
    sigterm_as_interrupt,
    write_json,
)


def run_once(prog: Path, cpu: int, quick: bool) -> dict[str, Any]:
    # A prefix of its own: DPDK makes its runtime folder /var/run/dpdk/PREFIX
    # even with --no-shconf, and the default "rte" one was left behind.
    prefix = f"slmicro{os.getpid()}"
    argv = ["taskset", "-c", str(cpu), str(prog), "--no-huge", "--no-shconf", "--no-pci",
            "-m", "1536", "-l", str(cpu), "--log-level=error", f"--file-prefix={prefix}", "--"]
    if quick:
        argv.append("--quick")
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    finally:
        shutil.rmtree(Path("/var/run/dpdk") / prefix, ignore_errors=True)
    if p.returncode != 0:
        raise BenchError(f"{' '.join(argv)} exited with {p.returncode}: {p.stderr.strip()}")
    out = json.loads(p.stdout)
    out["command"] = " ".join(argv)
    return out


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    def agg(rows: list[dict[str, Any]], key: str, field: str) -> dict[str, Any]:
        by: dict[int, list[float]] = {}
        for r in rows:
            by.setdefault(r[key], []).append(r[field])
        return {str(k): {"min": min(v), "median": statistics.median(v)} for k, v in by.items()}

    mem = [r["memory"] for r in runs]
    lookups = [x for r in runs for x in r["lookup"]]
    lbs = [x for r in runs for x in r["lb"]]
    rules = [x for r in runs for x in r.get("rules", [])]
    def med(field: str) -> dict[str, float]:
        v = [m[field] for m in mem]
        return {"min": min(v), "median": statistics.median(v)}

    return {
        "random_line_cycles": med("random_line_cycles"),
        "random_line_ns": med("random_line_ns"),
        "memory_latency_cycles": med("latency_cycles"),
        "key_hash_lookup_ns": agg(lookups, "flows", "key_hash_lookup_ns"),
        "key_hash_lookup_cycles": agg(lookups, "flows", "key_hash_lookup_cycles"),
        "lookup_only_ns": agg(lookups, "flows", "lookup_only_ns"),
        "queue_ns": agg(lbs, "instances", "queue_ns"),
        "queue_cycles": agg(lbs, "instances", "queue_cycles"),
        "flow_bucket_ns": agg(lbs, "instances", "flow_bucket_ns"),
        "rule_build_ms": agg(rules, "rules", "build_ms"),
        "rule_acl_ns": agg(rules, "rules", "acl_ns"),
        "rule_acl_cycles": agg(rules, "rules", "acl_cycles"),
        "rule_linear_ns": agg(rules, "rules", "linear_ns"),
    }


def label(n: str) -> str:
    v = int(n)
    return f"{v // 1_000_000}M" if v >= 1_000_000 else f"{v // 1000}k" if v >= 1000 else n


def plot(summary: dict[str, Any], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a1, a2, a3) = plt.subplots(1, 3, figsize=(15, 4))
    flows = list(summary["key_hash_lookup_ns"])
    x = range(len(flows))
    a1.bar([i - 0.2 for i in x], [summary["key_hash_lookup_ns"][f]["median"] for f in flows],
           0.4, label="key + hash + lookup")
    a1.bar([i + 0.2 for i in x], [summary["lookup_only_ns"][f]["median"] for f in flows],
           0.4, label="lookup only")
    a1.axhline(30, color="gray", ls="--", lw=1, label="SDNFV: 30 ns")
    four = 4 * summary["random_line_ns"]["median"]
    a1.axhline(four, color="tab:red", ls=":", lw=1,
               label=f"4 random memory lines: {four:.0f} ns")
    top = max(four, *(summary[k][f]["median"] for k in ("key_hash_lookup_ns", "lookup_only_ns")
                      for f in flows))
    a1.set_ylim(0, top * 1.2)
    a1.set_xticks(list(x), [label(f) for f in flows])
    a1.set_xlabel("flows in the table")
    a1.set_ylabel("ns per packet (median)")
    a1.set_title("flow-table lookup, bursts of 32")
    a1.legend(fontsize=8)
    inst = list(summary["queue_ns"])
    a2.plot([int(i) for i in inst], [summary["queue_ns"][i]["median"] for i in inst], "o-",
            label="shortest queue")
    a2.plot([int(i) for i in inst], [summary["flow_bucket_ns"][i]["median"] for i in inst],
            "s-", label="flow-hash bucket")
    a2.axhline(15, color="gray", ls="--", lw=1, label="SDNFV: 15 ns")
    a2.set_xlabel("instances of the service")
    a2.set_ylabel("ns per choice (median)")
    a2.set_title("instance choice")
    a2.legend(fontsize=8)
    ns = [int(n) for n in summary["rule_acl_ns"]]
    a3.loglog(ns, [summary["rule_acl_ns"][str(n)]["median"] for n in ns], "o-",
              label="rte_acl, ns per packet")
    a3.loglog(ns, [summary["rule_linear_ns"][str(n)]["median"] for n in ns], "s-",
              label="linear (naive), ns per packet")
    a3.loglog(ns, [summary["rule_build_ms"][str(n)]["median"] * 1e6 for n in ns], "^--",
              label="rte_acl build, ns (one rule.add)")
    a3.set_xlabel("random IPv4 rules")
    a3.set_title("wildcard rules")
    a3.legend(fontsize=8)
    fig.suptitle(title, fontsize=8)
    save_plot(fig, path)


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="Writes JSON (command, every run's command line, core layout, git commit) to "
               "--out and a plot to --plot; the last lines printed are the summary "
               "'lookup ns: ..' and 'rules (..): ..'. Run as root after ninja -C build.")
    ap.add_argument("--quick", action="store_true",
                    help="2M operations per point instead of 20M, 3 runs")
    ap.add_argument("--runs", type=positive_int, default=None, help="runs (5; --quick: 3)")
    ap.add_argument("--cpu", type=nonneg_int, default=1, help="the CPU to pin to (1)")
    ap.add_argument("--build", type=Path, default=ROOT / "build", metavar="DIR",
                    help="the build folder with bench/micro/sluice-micro (build)")
    ap.add_argument("--out", type=Path, default=RESULTS / "micro.json", metavar="FILE",
                    help="JSON results (bench/results/micro.json)")
    ap.add_argument("--plot", type=Path, default=RESULTS / "micro.png", metavar="FILE",
                    help="plot (bench/results/micro.png)")
    args = ap.parse_args()
    runs_n = args.runs if args.runs is not None else (3 if args.quick else 5)
    prog = args.build / "bench" / "micro" / "sluice-micro"
    if not prog.exists():
        print(f"micro.py: {prog} not found: build it with `ninja -C {args.build}`",
              file=sys.stderr)
        return 2
    if args.cpu not in os.sched_getaffinity(0):
        print(f"micro.py: --cpu {args.cpu}: this process may only use CPUs "
              f"{','.join(map(str, sorted(os.sched_getaffinity(0))))}", file=sys.stderr)
        return 2
    try:
        one_benchmark_at_a_time("micro.py")
    except BenchError as e:
        print(f"micro.py: {e}", file=sys.stderr)
        return 2
    report: dict[str, Any] = {"bench": "micro", "benchmark": "micro",
                              "command": bench_command(), "argv": sys.argv, "host": host_info(),
                              "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
                              "core_layout": f"one process pinned to CPU {args.cpu}",
                              "runs": []}
    try:
        with sigterm_as_interrupt():
            for i in range(runs_n):
                log(f"run {i + 1}/{runs_n}")
                report["runs"].append(run_once(prog, args.cpu, args.quick))
    except BenchError as e:
        print(f"micro.py: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        # subprocess.run killed and reaped sluice-micro, run_once removed its runtime
        # folder; the runs that ended are written.
        log(f"interrupted after {len(report['runs'])} of {runs_n} run(s)")
        report["interrupted"] = True
        if not report["runs"]:
            print("micro.py: interrupted before the first run ended; nothing written",
                  file=sys.stderr)
            return 1
    report["summary"] = summarize(report["runs"])
    write_json(args.out, report)
    plot(report["summary"], args.plot,
         f"sluice-micro on CPU {args.cpu}, {runs_n} run(s), {report['started']}")
    json.dump(report["summary"], sys.stdout, indent=1)
    s = report["summary"]
    print(f"\nresults: {args.out}, plot: {args.plot}")
    print("lookup ns: " + " ".join(f"{label(k)}={v['median']:.1f}"
                                   for k, v in s["key_hash_lookup_ns"].items())
          + " queue ns: " + " ".join(f"{k}={v['median']:.1f}"
                                     for k, v in s["queue_ns"].items())
          + f" random line cycles: {s['random_line_cycles']['median']:.1f}")
    print("rules (N=build ms/acl ns/linear ns): " + " ".join(
        f"{n}={s['rule_build_ms'][n]['median']:.1f}/{s['rule_acl_ns'][n]['median']:.1f}/"
        f"{s['rule_linear_ns'][n]['median']:.0f}" for n in s["rule_acl_ns"]))
    return 1 if report.get("interrupted") else 0


if __name__ == "__main__":
    sys.exit(main())
