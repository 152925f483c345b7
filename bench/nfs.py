"""Every sample NF alone: cycles per packet and Mpps on 64-byte packets and the HTTP mix.

One sluiced (shared mode, both CPUs) replays a capture from memory
(``net_pcap``, ``infinite_rx=1``) on port ``in``; the chain is ``NF,
port:out`` with ``out`` a ``net_null`` sink. The NF's cycles per packet
are sluiced's counters for its instance (TSC cycles spent in ``process``
over packets received, between two ``stats`` snapshots after the warm-up);
Mpps is the NF's received rate over the same interval (an NF that drops
still counts what it judged).

The NFs and their arguments come from ``nfs/<name>/bench.json``::

    {"args": ["--rules", "{dir}/rules.yaml"],          # NF arguments
     "files": {"rules.yaml": "default: allow\\n"},     # written to {dir} first
     "workloads": ["64B", "http"],                     # default: both
     "variants": {"10": {"args": [...], "files": {...}}, ...}}   # optional

``{dir}`` is a temporary folder for the run, ``{root}`` the repository.
A ``variants`` entry is a second set of arguments measured as its own
point (the IDS's rule counts: 10, 100, 1,000 rules). sluiced's ports in
and out can be named in arguments as ``in`` and ``out``.
"""

from __future__ import annotations

import argparse
import json
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
    cpu_list,
    ensure_hugepages,
    host_info,
    log,
    log_leftovers,
    name_list,
    nf_rates,
    nonneg_int,
    one_benchmark_at_a_time,
    parse_cpus,
    positive_int,
    save_plot,
    sigterm_as_interrupt,
    unique_name,
    write_json,
)
from sluice.runtime.client import SluiceError
from sluice.runtime.traces import fixed_size, write_pcap

WORKLOADS = ("64B", "http")
HTTP_TRACE = ROOT / "examples" / "traces" / "http-mix.pcap"
FLOWS_64B = 1000
PACKETS_64B = 8192


def nf_specs(build: Path, only: list[str] | None) -> dict[str, dict[str, Any]]:
    """name -> bench.json contents (+ 'prog'), for every NF with a bench.json."""
    specs: dict[str, dict[str, Any]] = {}
    for f in sorted((ROOT / "nfs").glob("*/bench.json")):
        name = f.parent.name
        if only is not None and name not in only:
            continue
        try:
            spec = json.loads(f.read_text())
        except (OSError, ValueError) as e:
            raise BenchError(f"{f}: {e}: fix the file") from None
        prog = build / "nfs" / name / f"sluice-{name}"
        if not prog.exists():
            raise BenchError(f"{prog} is not built (run: ninja -C {build})")
        spec["prog"] = prog
        specs[name] = spec
    if only is not None:
        missing = sorted(set(only) - set(specs))
        if missing:
            raise BenchError(f"no nfs/<name>/bench.json for {', '.join(missing)}")
    return specs


def points(specs: dict[str, dict[str, Any]], workloads: list[str]
           ) -> list[tuple[str, str, str, dict[str, Any]]]:
    """(nf, variant, workload, {args, files}) for every point to measure."""
    out = []
    for name, spec in specs.items():
        variants = spec.get("variants") or {"": {"args": spec.get("args", []),
                                                 "files": spec.get("files", {})}}
        for vname, v in variants.items():
            for w in spec.get("workloads", WORKLOADS):
                if w in workloads:
                    out.append((name, vname, w, v))
    return out


def expand(text: str, d: Path) -> str:
    return text.replace("{dir}", str(d)).replace("{root}", str(ROOT))


def run_point(args: argparse.Namespace, prog: Path, nf: str, variant: dict[str, Any],
              pcap: Path, seq: int, logroot: Path, tmp: Path) -> dict[str, Any]:
    d = tmp / f"p{seq}"
    d.mkdir()
    for rel, content in variant.get("files", {}).items():
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_text(expand(content, d))
    nf_args = [expand(a, d) for a in variant.get("args", [])]
    name = unique_name("nf", seq)
    procs = Processes(logroot / name)
    progs = {"sluiced": args.build / "src" / "mgr" / "sluiced", nf: prog}
    extra = ["--port", f"in=net_pcap0,rx_pcap={pcap},infinite_rx=1",
             "--port", "out=net_null0,no-rx=1", "--chain", f"{nf},port:out"]
    node = Node(name, procs, progs, args.cpus, "shared", None, extra, ready_timeout=60)
    run: dict[str, Any] = {"name": name, "nf_args": nf_args, "error": None}
    try:
        with node:
            s = node.start_nf(nf, nf, nf, None, nf_args)
            node.wait_registered(nf, s)
            time.sleep(args.warmup)
            t0, a = time.monotonic(), node.stats()
            time.sleep(args.duration)
            t1, b = time.monotonic(), node.stats()
            if not s.alive():
                raise BenchError(f"{nf} exited with {s.proc.returncode}:\n{s.tail()}")
            r = nf_rates(a, b).get(nf)
            if r is None or not r["rx_pkts"]:
                raise BenchError(f"{nf} received no packet:\n{s.tail()}")
            run.update(r)
            run["mpps"] = r["rx_pkts"] / (t1 - t0) / 1e6
            run["tsc_hz"] = b.get("tsc_hz")
    except (BenchError, SluiceError) as e:
        run["error"] = str(e)
    finally:
        node.record_into(run)
    log_leftovers(name, run)
    return run


def plot(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = sorted({k.rsplit("/", 1)[0] for k in report["points"]})
    fig, ax = plt.subplots(figsize=(max(6, 0.7 * len(labels) + 2), 4))
    width = 0.4
    for i, w in enumerate(report["params"]["workloads"]):
        ys = [(report["points"].get(f"{lab}/{w}") or {}).get("cycles_per_pkt") or 0
              for lab in labels]
        ax.bar([x + i * width for x in range(len(labels))], ys, width, label=w)
    ax.set_xticks([x + width / 2 for x in range(len(labels))], labels, rotation=30,
                  ha="right")
    ax.set_ylabel("NF cycles per packet")
    ax.set_title(f"each NF alone, pcap -> NF -> null, CPUs {report['params']['cpus']}")
    ax.legend()
    save_plot(fig, path)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Writes JSON to --out and a plot to --plot; the last line printed is "
               "'nfs cycles/pkt: NF/WORKLOAD=... ...'. Run as root after ninja -C build.")
    ap.add_argument("--nfs", type=lambda s: [x for x in s.split(",") if x],
                    help="only these NFs (default: every nfs/*/bench.json)")
    ap.add_argument("--workloads", type=name_list(WORKLOADS), default=list(WORKLOADS),
                    help="64B (64-byte UDP, 1,000 flows) and/or http "
                         "(examples/traces/http-mix.pcap) (64B,http)")
    ap.add_argument("--duration", type=positive_int, default=3, help="measured seconds (3)")
    ap.add_argument("--warmup", type=nonneg_int, default=1, help="seconds before (1)")
    ap.add_argument("--cpus", default="0,1", help="CPUs for everything (0,1)")
    ap.add_argument("--build", type=Path, default=ROOT / "build", metavar="DIR",
                    help="the build folder (build)")
    ap.add_argument("--out", type=Path, default=RESULTS / "nfs.json", metavar="FILE",
                    help="JSON results (bench/results/nfs.json)")
    ap.add_argument("--plot", type=Path, default=RESULTS / "nfs.png", metavar="FILE",
                    help="plot (bench/results/nfs.png)")
    return ap


def main() -> int:
    args = build_parser().parse_args()
    try:
        args.cpus = parse_cpus(args.cpus)
        args.build = args.build.resolve()
        specs = nf_specs(args.build, args.nfs)
        todo = points(specs, args.workloads)
        if not todo:
            raise BenchError("nothing to measure: no NF has a bench.json for these workloads")
        problem = ensure_hugepages(512)
        if problem:
            raise BenchError(problem)
        one_benchmark_at_a_time("bench/nfs.py")
    except BenchError as e:
        print(f"nfs.py: {e}", file=sys.stderr)
        return 2
    log(f"{len(todo)} point(s), about {len(todo) * (args.warmup + args.duration + 4) / 60:.0f}"
        " min")
    report: dict[str, Any] = {
        "benchmark": "nfs", "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": bench_command(), "host": host_info(),
        "params": {"workloads": args.workloads, "cpus": cpu_list(args.cpus),
                   "warmup_s": args.warmup, "duration_s": args.duration,
                   "mode": "shared", "64B": f"{PACKETS_64B} UDP frames of 64 B, "
                   f"{FLOWS_64B} flows", "http": str(HTTP_TRACE.relative_to(ROOT))},
        "method": "NF cycles/packet and received Mpps from sluiced's per-instance "
                  "counters between two stats snapshots after the warm-up",
        "points": {},
    }
    failed = 0
    with tempfile.TemporaryDirectory(prefix="sluice-bench-nfs-") as t, sigterm_as_interrupt():
        tmp = Path(t)
        pcaps = {"http": HTTP_TRACE, "64B": tmp / "64B.pcap"}
        write_pcap(pcaps["64B"], fixed_size(PACKETS_64B, FLOWS_64B, 64))
        try:
            for seq, (nf, vname, w, v) in enumerate(todo):
                key = f"{nf}{'/' + vname if vname else ''}/{w}"
                run = run_point(args, specs[nf]["prog"], nf, v, pcaps[w], seq,
                                RESULTS / "logs" / "nfs", tmp)
                report["points"][key] = run
                if run["error"]:
                    failed += 1
                    log(f"{key}: {run['error']}")
                else:
                    log(f"{key}: {run['cycles_per_pkt']:.0f} cycles/pkt, "
                        f"{run['mpps']:.2f} Mpps")
        except KeyboardInterrupt:
            report["interrupted"] = True
    write_json(args.out, report)
    try:
        plot(report, args.plot)
    except Exception as e:  # the numbers matter more than the picture
        log(f"plot failed: {e}")
    print(json.dumps({k: {"cycles_per_pkt": r.get("cycles_per_pkt"), "mpps": r.get("mpps")}
                      for k, r in report["points"].items()}, indent=1))
    print("nfs cycles/pkt: " + " ".join(
        f"{k}={r['cycles_per_pkt']:.0f}" if r.get("cycles_per_pkt") else f"{k}=error"
        for k, r in report["points"].items()))
    return 1 if failed or report.get("interrupted") else 0


if __name__ == "__main__":
    sys.exit(main())
