"""Dead-NF detection: how long after an NF is killed sluiced has taken it out.

A capture replays from memory into 2 replicas of sluice-forward and out to
net_null. Each run SIGKILLs one replica under traffic and polls `nf.list`
every 0.5 ms until that instance is no longer `running` (sluiced removed it
from its service: new packets go to the survivor). Also reported: when the
killed instance's packets have been reclaimed (its slot freed), and the
packets it held (`nf_lost`).

    .venv/bin/python bench/failover.py [--runs 10]

Prints JSON, writes bench/results/failover.json and .png, and ends with the
line `failover ms: detect median=… max=…  reclaim median=…`.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "bench"))

from harness import (  # noqa: E402
    RESULTS,
    BenchError,
    bench_command,
    host_info,
    one_benchmark_at_a_time,
    positive_int,
    sigterm_as_interrupt,
    write_json,
)
from sluice.runtime.client import SluiceError  # noqa: E402
from sluice.runtime.launch import Launcher, LaunchError  # noqa: E402
from sluice.runtime.traces import fixed_size, write_pcap  # noqa: E402


def one_run(pcap: Path, node: str, logdir: Path) -> dict:
    dep = {
        "node": {"name": node, "mode": "shared", "cores": [0, 1]},
        "ports": [{"name": "in", "device": f"net_pcap0,rx_pcap={pcap},infinite_rx=1"},
                  {"name": "out", "device": "net_null0,no-rx=1"}],
        "nfs": [{"name": "fwd", "program": "sluice-forward", "service": "fwd", "replicas": 2}],
        "chain": ["fwd", "port:out"],
    }
    with Launcher(dep, log_dir=logdir) as run:
        run.start()
        time.sleep(1.0)  # traffic through both replicas
        victim = run.client.call("nf.list")[0]
        t0 = time.monotonic()
        os.kill(victim["pid"], signal.SIGKILL)
        detect = reclaim = None
        while time.monotonic() - t0 < 5:
            nfs = {n["instance"]: n for n in run.client.call("nf.list")}
            v = nfs.get(victim["instance"])
            now = time.monotonic() - t0
            if detect is None and (v is None or v["state"] != "running"):
                detect = now
            if v is None:
                reclaim = now
                break
            time.sleep(0.0005)
        st = run.client.call("stats")
        lost = next(s for s in st["services"] if s["name"] == "fwd")["drops"]["nf_lost"]
        commands = (logdir / "commands.txt").read_text().splitlines()
    return {"detect_ms": None if detect is None else detect * 1e3,
            "reclaim_ms": None if reclaim is None else reclaim * 1e3,
            "nf_lost": lost, "commands": commands}


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="Root, after ninja -C build. Writes JSON (command, every run's command lines, "
               "layout, git commit) to --out and a plot to --plot; the last line printed is "
               "the summary 'failover ms: detect median=.. max=..  reclaim median=..'.")
    ap.add_argument("--runs", type=positive_int, default=10, help="runs (10)")
    ap.add_argument("--out", type=Path, default=RESULTS / "failover.json", metavar="FILE",
                    help="JSON results (bench/results/failover.json)")
    ap.add_argument("--plot", type=Path, default=RESULTS / "failover.png", metavar="FILE",
                    help="plot (bench/results/failover.png)")
    return ap


def main() -> int:
    args = build_parser().parse_args()
    try:
        one_benchmark_at_a_time("failover.py")
    except BenchError as e:
        print(f"failover.py: {e}", file=sys.stderr)
        return 2
    info = host_info()
    runs = []
    stopped: str | None = None
    with tempfile.TemporaryDirectory(prefix="sluice-bench-failover-") as tmp, \
            sigterm_as_interrupt():
        pcap = Path(tmp) / "in.pcap"
        write_pcap(pcap, fixed_size(4096, 64, 64))
        try:
            for i in range(args.runs):
                r = one_run(pcap, f"fo{os.getpid() % 10000}x{i}", Path(tmp) / f"run{i}")
                if r["detect_ms"] is None or r["reclaim_ms"] is None:
                    raise BenchError(f"run {i}: the killed NF was still listed 5 s later "
                                     f"(detect {r['detect_ms']}, reclaim {r['reclaim_ms']})")
                print(f"run {i}: detect {r['detect_ms']:.2f} ms, reclaim "
                      f"{r['reclaim_ms']:.2f} ms, lost {r['nf_lost']}", file=sys.stderr)
                runs.append(r)
        except (BenchError, SluiceError, LaunchError) as e:
            stopped = f"error: {e}"
            print(f"failover.py: {e}", file=sys.stderr)
        except KeyboardInterrupt:
            stopped = "interrupted"
            print("failover.py: interrupted: writing what was measured", file=sys.stderr)
    if not runs:
        write_json(args.out, {"benchmark": "failover", "command": bench_command(),
                              "host": info, "stopped": stopped, "runs": []})
        print(f"failover.py: no run ended ({stopped}); {args.out} says what was done",
              file=sys.stderr)
        return 1
    det = [r["detect_ms"] for r in runs]
    rec = [r["reclaim_ms"] for r in runs]
    result = {
        "benchmark": "failover",
        "command": bench_command(),
        "argv": sys.argv,
        "host": info,
        "stopped": stopped,
        "layout": "sluiced (control + 1 I/O thread) and 2 forward replicas, shared mode, "
                  "CPUs 0-1; detection polled through the control socket every 0.5 ms",
        "detect_ms": {"min": min(det), "median": statistics.median(det), "max": max(det)},
        "reclaim_ms": {"min": min(rec), "median": statistics.median(rec), "max": max(rec)},
        "runs": runs,
    }
    write_json(args.out, result)
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}, indent=2))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(6, 3.5))
        ax.boxplot([det, rec])
        ax.set_xticks([1, 2], ["detected", "reclaimed"])
        ax.set_ylabel("ms after SIGKILL")
        ax.set_title("Dead NF: time until sluiced took it out")
        fig.tight_layout()
        args.plot.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(args.plot, dpi=100)
    except ImportError:
        pass
    print(f"failover ms: detect median={statistics.median(det):.2f} max={max(det):.2f}  "
          f"reclaim median={statistics.median(rec):.2f}")
    return 1 if stopped else 0


if __name__ == "__main__":
    sys.exit(main())
