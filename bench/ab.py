#!/usr/bin/env python3
"""Old build against new build, alternated in one measuring run.

    bench/ab.py --old DIR --new DIR [--pairs 3] [--bench chain,port] [-- ARGS]

Runs `bench/chain.py --quick` and/or `bench/port.py --quick` (this tree's
scripts) with `--build OLD`, then `--build NEW`, `--pairs` times in turn, so
that the machine's speed, which moves 2-5x from one minute to the next here,
weighs on both builds alike. For every point (chain: length/config, Mpps;
port: flows/Sluice mode, Mpps and the ratio to testpmd measured in the same
run) it takes the ratio new/old within each pair and prints the median over
the pairs. A structural change passes when that median is >= --min-ratio
(0.97) for every point; the exit status is 1 otherwise, 2 on a usage error
or when a run failed.

JSON goes to stdout and --out (bench/results/ab.json), a plot of the
per-point median ratios to --plot (bench/results/ab.png); the last line is
the summary `ab: worst=POINT RATIO, N points, pass|FAIL`.
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

from harness import RESULTS, host_info, positive_int

ROOT = Path(__file__).resolve().parent.parent
BENCHES = ("chain", "port")


def chain_points(report: dict[str, Any]) -> dict[str, float]:
    """chainN/config -> median Mpps of the point."""
    out = {}
    for p in report["points"]:
        if p.get("mpps"):
            out[f"chain{p['chain']}/{p['config']}"] = p["mpps"]["median"]
    return out


def port_points(report: dict[str, Any]) -> dict[str, float]:
    """flows/sluice-MODE -> median Mpps, and flows/ratio -> best Sluice / testpmd."""
    out = {}
    for fl, entry in report["flows"].items():
        for cfg, c in entry["configs"].items():
            if cfg.startswith("sluice-") and c.get("mpps"):
                out[f"{fl}/{cfg}"] = c["mpps"]["median"]
        if entry.get("ratio"):
            out[f"{fl}/ratio"] = entry["ratio"]
    return out


POINTS = {"chain": chain_points, "port": port_points}


def one_run(bench: str, build: Path, extra: list[str], tmp: Path, seq: int) -> dict[str, Any]:
    out = tmp / f"{bench}-{seq}.json"
    argv = [sys.executable, str(ROOT / "bench" / f"{bench}.py"), "--quick",
            "--build", str(build), "--out", str(out), "--plot", str(tmp / f"{bench}-{seq}.png"),
            *extra]
    print(f"ab: {' '.join(argv)}", file=sys.stderr, flush=True)
    p = subprocess.run(argv, stdout=subprocess.DEVNULL, check=False)
    if p.returncode != 0 or not out.exists():
        raise SystemExit(f"ab: {bench}.py --build {build} failed (exit {p.returncode}); "
                         "run it alone to see why")
    report = json.loads(out.read_text())
    return {"build": str(build), "command": argv, "summary": report.get("summary"),
            "points": POINTS[bench](report)}


def compare(pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Per point: the new/old ratio within each pair and its median."""
    keys = sorted(set.intersection(*(set(o["points"]) & set(n["points"]) for o, n in pairs)))
    out = {}
    for k in keys:
        ratios = [n["points"][k] / o["points"][k] for o, n in pairs if o["points"][k] > 0]
        if ratios:
            out[k] = {"ratios": ratios, "median": statistics.median(ratios)}
    return out


def plot(points: dict[str, dict[str, Any]], path: Path, floor: float, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = list(points)
    fig, ax = plt.subplots(figsize=(max(6, 0.45 * len(names)), 4))
    ax.bar(range(len(names)), [points[k]["median"] for k in names])
    ax.axhline(floor, color="k", linestyle="dotted", label=f"{floor:g}")
    ax.set_xticks(range(len(names)), names, rotation=70, ha="right", fontsize=7)
    ax.set_ylabel("new / old (median over pairs)")
    ax.set_title(title, fontsize=9)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="Arguments after -- go to every benchmark run.")
    ap.add_argument("--old", type=Path, required=True, metavar="DIR", help="old build directory")
    ap.add_argument("--new", type=Path, default=ROOT / "build", metavar="DIR",
                    help="new build directory (build/)")
    ap.add_argument("--pairs", type=positive_int, default=3, help="old/new pairs (3)")
    ap.add_argument("--bench", default="chain,port", help="benchmarks, of chain,port (both)")
    ap.add_argument("--min-ratio", type=float, default=0.97, help="pass mark (0.97)")
    ap.add_argument("--out", type=Path, default=RESULTS / "ab.json", metavar="FILE")
    ap.add_argument("--plot", type=Path, default=RESULTS / "ab.png", metavar="FILE")
    ap.add_argument("extra", nargs="*", help=argparse.SUPPRESS)
    a = ap.parse_args()
    benches = [b for b in a.bench.split(",") if b]
    bad = [b for b in benches if b not in BENCHES]
    if bad or not benches:
        ap.error(f"--bench: {','.join(bad) or 'nothing'} is not one of {','.join(BENCHES)}")
    for d in (a.old, a.new):
        if not (d / "src" / "mgr" / "sluiced").exists():
            ap.error(f"no sluiced in {d}: build it first (ninja -C {d})")
    result: dict[str, Any] = {"argv": sys.argv, "host": host_info(),
                              "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                              "old": str(a.old.resolve()), "new": str(a.new.resolve()),
                              "pairs": a.pairs, "min_ratio": a.min_ratio, "benches": {}}
    seq = 0
    with tempfile.TemporaryDirectory(prefix="sluice-bench-ab-") as t:
        tmp = Path(t)
        for bench in benches:
            pairs = []
            for _ in range(a.pairs):
                seq += 1
                old = one_run(bench, a.old, a.extra, tmp, seq)
                seq += 1
                pairs.append((old, one_run(bench, a.new, a.extra, tmp, seq)))
            result["benches"][bench] = {"runs": [r for p in pairs for r in p],
                                        "points": compare(pairs)}
    points = {f"{b}:{k}": v for b, r in result["benches"].items() for k, v in r["points"].items()}
    if not points:
        print("ab: no point was measured by both builds", file=sys.stderr)
        return 2
    worst = min(points, key=lambda k: points[k]["median"])
    ok = points[worst]["median"] >= a.min_ratio
    result["worst"] = {"point": worst, "median": points[worst]["median"]}
    result["pass"] = ok
    result["summary"] = (f"ab: worst={worst} {points[worst]['median']:.3f}, "
                         f"{len(points)} points, {'pass' if ok else 'FAIL'}")
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(result, indent=2))
    plot(points, a.plot, a.min_ratio, f"new/old, {a.pairs} pairs, {result['started']}")
    print(json.dumps({k: v for k, v in result.items() if k != "benches"}
                     | {"points": points}, indent=2))
    print(result["summary"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
