"""SDNFV Fig. 5 again: flows the greedy baseline, the division heuristic and
the optimal MILP accommodate, for capacity multipliers 1x..100x.

The paper used Rocketfuel AS-16631 (22 nodes, 64 edges), which is not
available here. Two substitutes, both labelled as such in every output:

* ``geant``: SNDlib GEANT from the topohub package (22 nodes, 36 links; link
  delay = fibre length x 5 us/km);
* ``synthetic``: a seeded random connected graph with 22 nodes and 64 links
  (the paper's counts; delay = Euclidean length in the unit square x 20 ms).

As in the paper: every node has 2 cores; every flow has the chain J1-J5; one
core carries 10 flows of J1-J4 or 4 flows of J5. Not given by the paper and
chosen here: links of 1 Gbit/s, flows of 50-150 Mbit/s between random node
pairs, each tolerating twice its shortest-path delay (at least 5 ms). A
multiplier m scales link capacity and flows per core by m (cores per node stay
2). At m the offered flows are the first ceil(1.125 * B(m)) of one seeded
sequence, where B(m) is the most flows the cores could carry at all
(B(1) = 64), so no algorithm can accept every offered flow.

    .venv/bin/python bench/placement.py [--quick] [--json FILE] [--plot FILE]

``--quick`` (under 10 minutes): multipliers 1 and 2, optimal MILP at 1x with
a 180 s limit. The full run: multipliers 1, 2, 5, 10, 25, 100, optimal MILP at
1x with a 600 s limit (as in the paper, the MILP does not scale further).
Prints JSON (also written to --json), draws --plot, and ends with the line
``division/optimal=X greedy/optimal=Y``: flows accepted at 1x, both
topologies pooled, over the best MILP solution (which is the optimum only
where its status is "optimal"; the JSON also gives ratios to the MILP's
proved upper bound). Division runs with its default batch order (most
constrained flows first); at the MILP's multipliers a ``division-input`` row
gives the paper's plain input order for comparison. The MILP starts from the
better heuristic plan, so its best is never below division's.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shlex
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import networkx as nx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

from sluice.placement.division import division  # noqa: E402
from sluice.placement.greedy import greedy  # noqa: E402
from sluice.placement.io import topohub_graph  # noqa: E402
from sluice.placement.milp import milp  # noqa: E402
from sluice.placement.model import (  # noqa: E402
    Problem,
    make_problem,
    random_flows,
    synthetic_graph,
)
from sluice.placement.validate import validate  # noqa: E402

RESULTS = ROOT / "bench" / "results"
CHAIN = ("J1", "J2", "J3", "J4", "J5")
FLOWS_PER_CORE = {"J1": 10, "J2": 10, "J3": 10, "J4": 10, "J5": 4}
CORES = 2
LINK_MBPS = 1000.0
BANDWIDTH = (50, 150)
DELAY_STRETCH = 2.0
MIN_DELAY_MS = 5.0
OFFER = 1.125
TOPOLOGIES = {
    "geant": "SNDlib GEANT via topohub (22 nodes, 36 links), substitute for Rocketfuel AS-16631",
    "synthetic": "seeded random graph, 22 nodes / 64 links, substitute for Rocketfuel AS-16631",
}


def topology(name: str, seed: int) -> nx.Graph:
    if name == "geant":
        return topohub_graph("sndlib/geant", CORES, LINK_MBPS, 0.005)
    return synthetic_graph(22, 64, seed=seed, cores=CORES, capacity=LINK_MBPS,
                           delay_per_unit=20.0)


def core_bound(total_cores: int, multiplier: float) -> int:
    """Most J1-J5 flows that whole cores can carry (every service needs
    ceil(flows / per-core) cores)."""
    per = {s: max(1, round(p * multiplier)) for s, p in FLOWS_PER_CORE.items()}
    lo, hi = 0, total_cores * max(per.values())
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if sum(math.ceil(mid / p) for p in per.values()) <= total_cores:
            lo = mid
        else:
            hi = mid - 1
    return lo


def instance(name: str, multiplier: float, seed: int) -> tuple[Problem, int]:
    g = topology(name, seed)
    total = CORES * g.number_of_nodes()
    offered = math.ceil(OFFER * core_bound(total, multiplier))
    flows = random_flows(g, offered, CHAIN, seed=seed, bandwidth=BANDWIDTH,
                         delay_stretch=DELAY_STRETCH, min_delay=MIN_DELAY_MS)
    base = make_problem(g, dict(FLOWS_PER_CORE), flows, name)
    return base.scaled(multiplier) if multiplier != 1 else base, offered


def record(topo: str, m: float, p: Problem, algo: str, plan: Any, extra: dict) -> dict:
    bad = validate(p, plan)
    row = {
        "topology": topo,
        "multiplier": m,
        "offered": len(p.flows),
        "algorithm": algo,
        "accepted": plan.accepted,
        "status": plan.status,
        "accepted_bound": plan.accepted_bound,
        "solve_time_s": round(plan.solve_time, 2),
        "utilisation": round(plan.utilisation, 4),
        "cores_used": plan.cores_used,
        "violations": len(bad),
        **extra,
    }
    if bad:
        row["first_violation"] = str(bad[0])
    print(f"  {topo:9s} x{m:<4g} {algo:8s} accepted {plan.accepted:5d}/{len(p.flows):<5d} "
          f"status {plan.status:9s} bound {plan.accepted_bound!s:5s} "
          f"{plan.solve_time:7.1f} s  U={plan.utilisation:.2f}"
          + (f"  VIOLATIONS {len(bad)}" if bad else ""), file=sys.stderr, flush=True)
    return row


def run(args: argparse.Namespace) -> dict:
    rows: list[dict] = []
    for topo in args.topologies:
        for m in args.multipliers:
            p, _ = instance(topo, m, args.seed)
            g = greedy(p)
            rows.append(record(topo, m, p, "greedy", g, {}))
            d = division(p, time_limit=None, seed=args.seed)
            rows.append(record(topo, m, p, "division", d, {
                "batches": d.details["batches"], "batch_status": d.details["batch_status"],
                "admission_status": d.details["admission_status"]}))
            if m in args.optimal_multipliers:
                # the paper's plain order, to show what the constrained-first
                # batch order (division's default) adds
                di = division(p, time_limit=None, seed=args.seed, order="input")
                rows.append(record(topo, m, p, "division-input", di, {
                    "batches": di.details["batches"],
                    "batch_status": di.details["batch_status"],
                    "admission_status": di.details["admission_status"]}))
            if m in args.optimal_multipliers:
                # started from the better heuristic plan (the MILP also builds
                # its own relax-and-lift start and keeps the best)
                start = d if d.accepted >= g.accepted else g
                o = milp(p, time_limit=args.optimal_time_limit, seed=args.seed,
                         polish_time=0.0, start=start, relax_share=0.5)
                rows.append(record(topo, m, p, "optimal", o, {
                    "milp": {k: o.details.get(k) for k in (
                        "variables", "constraints", "admission", "core_count_bound",
                        "relax_lift_start", "warm_start")},
                    "time_limit_s": args.optimal_time_limit}))
    return {"rows": rows}


def ratios(rows: list[dict], topo: str | None = None) -> dict[str, float | None]:
    sel = [r for r in rows if r["multiplier"] == 1 and (topo is None or r["topology"] == topo)]

    def total(algo: str) -> int | None:
        vals = [r["accepted"] for r in sel if r["algorithm"] == algo]
        return sum(vals) if vals else None

    def bound() -> int | None:
        vals = [r["accepted_bound"] for r in sel if r["algorithm"] == "optimal"]
        return sum(vals) if vals and None not in vals else None

    opt, ub = total("optimal"), bound()
    out: dict[str, float | None] = {}
    for algo in ("division", "division-input", "greedy"):
        got = total(algo)
        out[f"{algo}/optimal"] = round(got / opt, 3) if got is not None and opt else None
        out[f"{algo}/bound"] = round(got / ub, 3) if got is not None and ub else None
    return out


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["rows"]
    topos = list(dict.fromkeys(r["topology"] for r in rows))
    colours = {"greedy": "tab:red", "division": "tab:blue", "optimal": "tab:green"}
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5))
    width = 0.25
    for i, algo in enumerate(("greedy", "division", "optimal")):
        xs, ys = [], []
        for j, topo in enumerate(topos):
            r = [x for x in rows if x["topology"] == topo and x["multiplier"] == 1
                 and x["algorithm"] == algo]
            if r:
                xs.append(j + (i - 1) * width)
                ys.append(r[0]["accepted"])
                if algo == "optimal" and r[0]["accepted_bound"] is not None:
                    left.plot([xs[-1] - width / 2, xs[-1] + width / 2],
                              [r[0]["accepted_bound"]] * 2, color="black", lw=1.5)
        label = "MILP (best found; * = proved optimal)" if algo == "optimal" else algo
        left.bar(xs, ys, width, label=label, color=colours[algo])
        for x, y in zip(xs, ys, strict=True):
            left.text(x, y + 0.5, str(y), ha="center", fontsize=8)
        if algo == "optimal":
            for x, topo in zip(xs, topos, strict=False):
                r = [q for q in rows if q["topology"] == topo and q["multiplier"] == 1
                     and q["algorithm"] == "optimal"]
                if r and r[0]["status"] == "optimal":
                    left.text(x, r[0]["accepted"] + 3, "*", ha="center", fontsize=14)
    left.set_xticks(range(len(topos)))
    left.set_xticklabels([f"{t}\n(substitute for AS-16631)" for t in topos])
    left.set_ylabel("flows accommodated (1x capacity)")
    left.set_title("1x capacity; black line: MILP's proved upper bound")
    top = max([r["accepted_bound"] or r["accepted"] for r in rows if r["multiplier"] == 1])
    left.set_ylim(0, top * 1.45)
    left.legend(loc="upper left", fontsize=8)
    styles = {t: s for t, s in zip(topos, ("-", "--", ":"), strict=False)}
    for algo in ("greedy", "division", "optimal"):
        for topo in topos:
            pts = sorted((r["multiplier"], r["accepted"]) for r in rows
                         if r["topology"] == topo and r["algorithm"] == algo)
            if pts:
                name = "MILP best" if algo == "optimal" else algo
                right.plot([p[0] for p in pts], [p[1] for p in pts], styles[topo],
                           marker="o", color=colours[algo], label=f"{name} ({topo})")
    offered = sorted({(r["multiplier"], r["offered"]) for r in rows})
    right.plot([o[0] for o in offered], [o[1] for o in offered], color="grey", lw=0.8,
               label="offered (1.125 x core bound)")
    right.set_xscale("log")
    right.set_yscale("log")
    right.set_xlabel("capacity multiplier (links and flows per core)")
    right.set_ylabel("flows accommodated")
    right.set_title("scaling with capacity")
    right.legend(fontsize=7)
    fig.suptitle("SDNFV Fig. 5 reproduction (Rocketfuel AS-16631 substituted)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def multipliers(text: str) -> list[float]:
    """'1,2,5' -> [1.0, 2.0, 5.0]; each > 0."""
    vals: list[float] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        try:
            v = float(part)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: {part!r} is not a number; give "
                                             f"multipliers separated by commas, e.g. 1,2,5"
                                             ) from None
        if not v > 0:
            raise argparse.ArgumentTypeError(f"{text!r}: {part} must be above 0")
        vals.append(v)
    if not vals:
        raise argparse.ArgumentTypeError("an empty list: give at least one multiplier, e.g. 1")
    return vals


def main() -> None:
    ap = argparse.ArgumentParser(
        description="SDNFV Fig. 5 again: flows the greedy baseline, the division heuristic "
                    "and the optimal MILP accommodate, for capacity multipliers 1x..100x.",
        epilog="Writes JSON (with the command) to --json and a plot to --plot; the last line "
               "printed is the summary 'division/optimal=X greedy/optimal=Y'. No root needed.")
    ap.add_argument("--quick", action="store_true", help="multipliers 1,2; optimal at 1x, 180 s")
    ap.add_argument("--multipliers", type=multipliers,
                    help="comma-separated capacity multipliers (1,2,5,10,25,100; --quick: 1,2)")
    ap.add_argument("--optimal-multipliers", type=multipliers,
                    help="multipliers at which to run the MILP (1)")
    ap.add_argument("--optimal-time-limit", type=float,
                    help="seconds per MILP run (600; --quick: 180)")
    ap.add_argument("--topologies", default="geant,synthetic",
                    help=f"comma-separated, of {', '.join(TOPOLOGIES)} (geant,synthetic)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the flows and the synthetic "
                                                         "topology (1)")
    ap.add_argument("--json", type=Path, default=RESULTS / "placement.json", metavar="FILE",
                    help="JSON results (bench/results/placement.json)")
    ap.add_argument("--plot", type=Path, default=RESULTS / "placement.png", metavar="FILE",
                    help="plot (bench/results/placement.png)")
    ap.add_argument("--from-json", type=Path,
                    help="do not run: redraw the plot and summary from an earlier --json file")
    args = ap.parse_args()
    if args.from_json:
        result = json.loads(args.from_json.read_text())
        plot(result, args.plot)
        summary(result)
        return
    if args.multipliers is None:
        args.multipliers = [1.0, 2.0] if args.quick else [1.0, 2.0, 5.0, 10.0, 25.0, 100.0]
    if args.optimal_multipliers is None:
        args.optimal_multipliers = [1.0]
    if args.optimal_time_limit is None:
        args.optimal_time_limit = 180.0 if args.quick else 600.0
    args.topologies = [t for t in args.topologies.split(",") if t]
    unknown = [t for t in args.topologies if t not in TOPOLOGIES]
    if unknown:
        ap.error(f"unknown topology {unknown[0]!r}; choose from {', '.join(TOPOLOGIES)}")

    t0 = time.time()
    result = run(args)
    import pulp

    result["meta"] = {
        "command": " ".join(shlex.quote(a) for a in [".venv/bin/python", "bench/placement.py",
                                                      *sys.argv[1:]]),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "wall_s": round(time.time() - t0, 1),
        "load_average_at_end": os.getloadavg(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "pulp": pulp.__version__,
        "solver": "CBC (PuLP bundled), 1 thread",
        "topologies": {t: TOPOLOGIES[t] for t in args.topologies},
        "setup": {
            "cores_per_node": CORES, "chain": CHAIN, "flows_per_core": FLOWS_PER_CORE,
            "link_mbps_1x": LINK_MBPS, "flow_mbps": BANDWIDTH,
            "max_delay": f"max({MIN_DELAY_MS} ms, {DELAY_STRETCH} x shortest path)",
            "offered": f"ceil({OFFER} x core bound B(m)), B(1) = 64", "seed": args.seed,
            "multipliers": args.multipliers, "optimal_multipliers": args.optimal_multipliers,
            "optimal_time_limit_s": args.optimal_time_limit,
            "division": "batches of 5, most constrained flows first, CBC, no overall "
                        "time limit; division-input: the same in input order (1x only)",
            "optimal": "milp(): CBC, started from the better of greedy/division, "
                       "half the time on its relax-and-lift start, core-count cut",
        },
    }
    result["ratios_1x"] = {"pooled": ratios(result["rows"])} | {
        t: ratios(result["rows"], t) for t in args.topologies
    }
    text = json.dumps(result, indent=2)
    print(text)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(text + "\n")
    args.plot.parent.mkdir(parents=True, exist_ok=True)
    plot(result, args.plot)
    summary(result)


def summary(result: dict) -> None:
    for t in result["meta"]["topologies"]:
        r = result["ratios_1x"][t]
        print(f"{t}: division/optimal={r['division/optimal']} greedy/optimal="
              f"{r['greedy/optimal']} (division/bound={r['division/bound']}, "
              f"input order: division-input/optimal={r.get('division-input/optimal')})")
    r = result["ratios_1x"]["pooled"]
    print(f"division/optimal={r['division/optimal']} greedy/optimal={r['greedy/optimal']}")


if __name__ == "__main__":
    main()
