#!/usr/bin/env python3
"""Scaling a service at runtime: how many flows move, how fast a replica starts.

One sluiced replays a capture of ``--flows`` UDP flows forever
(``net_pcap ... infinite_rx=1`` → service ``forward`` → ``net_null``), with
the flow director on and ``forward`` in flow-sticky mode. Each round:

1. **join**: ``nf.scale forward 2`` while traffic flows; every flow's pinned
   instance (``flow.list`` pins) before and 1 s after. Target: 0 moved.
2. the flows are deleted (``flow.delete all``) so they are created again and
   spread over both replicas by the load balancer;
3. **leave**: ``nf.scale forward 1`` (the newest replica stops); pins before
   and after. Target: exactly the flows that were on the leaver move.
4. **start to first packet**: with the service in round-robin mode (pins
   are not used, so a new replica gets packets at once), ``nf.scale forward
   2`` and ``nf.list``'s ``start_to_first_pkt_ms`` of the new instance (its
   ``main()`` to its first packet, both read on the TSC); then back to 1.

Writes bench/results/scale.json and scale.png; the last line is
``scale: join moved=… leave moved=…/… (expected …) start_to_first_pkt_ms median=…``.
"""

from __future__ import annotations

import argparse
import statistics
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
    ensure_hugepages,
    host_info,
    log,
    one_benchmark_at_a_time,
    parse_cpus,
    positive_int,
    save_plot,
    sigterm_as_interrupt,
    unique_name,
    write_json,
)
from port import SINK_DEVICE, out_port, pcap_device

sys.path.insert(0, str(ROOT / "python"))
from sluice.runtime.client import SluiceError  # noqa: E402
from sluice.runtime.traces import fixed_size, write_pcap  # noqa: E402


def wait(pred: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    raise BenchError(f"timed out after {timeout:g} s waiting for {what}")


def pins(node: Node, limit: int) -> dict[str, int]:
    fl = node.client.call("flow.list", limit=limit)["flows"]
    return {f["key"]: f["pins"]["forward"] for f in fl if "forward" in f.get("pins", {})}


def running(node: Node) -> list[dict[str, Any]]:
    return [n for n in node.client.call("nf.list")
            if n["service"] == "forward" and n["state"] == "running"]


def scale_to(node: Node, n: int) -> list[dict[str, Any]]:
    node.client.call("nf.scale", service="forward", replicas=n)
    return wait(lambda: len(r := running(node)) == n and
                len(node.client.call("nf.list")) >= n and r, 30, f"{n} replica(s) running")


def one_round(node: Node, flows: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    node.client.call("lb.set", service="forward", mode="flow")
    before = wait(lambda: len(p := pins(node, flows * 2)) >= flows and p, 30,
                  f"{flows} flows pinned")
    r = scale_to(node, 2)
    time.sleep(1.0)
    after = pins(node, flows * 2)
    moved = sum(1 for k, v in before.items() if after.get(k) != v)
    out["join"] = {"flows": len(before), "moved": moved, "instances": [n["instance"] for n in r]}

    node.client.call("flow.delete", all=True)
    time.sleep(1.0)
    spread = wait(lambda: len(p := pins(node, flows * 2)) >= flows and p, 30,
                  "flows created again")
    newest = max(n["instance"] for n in running(node))
    on_leaver = sum(1 for v in spread.values() if v == newest)
    scale_to(node, 1)
    time.sleep(1.0)
    left = pins(node, flows * 2)
    moved = sum(1 for k, v in spread.items() if left.get(k) != v)
    out["leave"] = {"flows": len(spread), "on_leaver": on_leaver, "moved": moved,
                    "leaver": newest}

    node.client.call("lb.set", service="forward", mode="rr")
    old = {n["instance"] for n in running(node)}
    r = scale_to(node, 2)
    new = [n for n in r if n["instance"] not in old][0]
    first = wait(lambda: (x := [n for n in node.client.call("nf.list")
                                if n["instance"] == new["instance"]])
                 and x[0].get("start_to_first_pkt_ms") is not None and x[0], 30,
                 "the new replica's first packet")
    out["start_to_first_pkt_ms"] = first["start_to_first_pkt_ms"]
    scale_to(node, 1)
    return out


def plot(rounds: list[dict[str, Any]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    x = range(1, len(rounds) + 1)
    a1.bar([i - 0.2 for i in x], [r["join"]["moved"] for r in rounds], 0.4,
           label="moved on join (target 0)")
    a1.bar([i + 0.2 for i in x], [r["leave"]["moved"] for r in rounds], 0.4,
           label="moved on leave")
    a1.plot(list(x), [r["leave"]["on_leaver"] for r in rounds], "k_", ms=20,
            label="flows on the leaver (target)")
    a1.set_xlabel("round")
    a1.set_ylabel("flows")
    a1.legend(fontsize=8)
    a2.bar(list(x), [r["start_to_first_pkt_ms"] for r in rounds])
    a2.axhline(100, color="gray", ls="--", lw=1, label="target 100 ms")
    a2.set_xlabel("round")
    a2.set_ylabel("ms, NF main() to first packet")
    a2.legend(fontsize=8)
    fig.suptitle(title, fontsize=8)
    save_plot(fig, path)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="Writes JSON (command, every command line, core layout, git commit) to --out "
               "and a plot to --plot; the last line printed is the summary 'scale: join "
               "moved=.. leave moved=..'. Run as root after ninja -C build.")
    ap.add_argument("--flows", type=positive_int, default=10000,
                    help="flows in the capture (10000)")
    ap.add_argument("--rounds", type=positive_int, help="rounds (5; --quick: 2)")
    ap.add_argument("--quick", action="store_true", help="2 rounds (unless --rounds says)")
    ap.add_argument("--cpus", default="0,1", help="CPUs for sluiced and the NFs, e.g. 0,1 (0,1)")
    ap.add_argument("--build", type=Path, default=ROOT / "build", metavar="DIR",
                    help="the build folder with sluiced and the NFs (build)")
    ap.add_argument("--out", type=Path, default=RESULTS / "scale.json", metavar="FILE",
                    help="JSON results (bench/results/scale.json)")
    ap.add_argument("--plot", type=Path, default=RESULTS / "scale.png", metavar="FILE",
                    help="plot (bench/results/scale.png)")
    return ap


def main() -> int:
    args = build_parser().parse_args()
    rounds_n = args.rounds if args.rounds is not None else (2 if args.quick else 5)
    try:
        args.cpus = parse_cpus(args.cpus)
        progs = binaries(args.build)
        if args.flows > 196607:
            raise BenchError(f"--flows {args.flows}: the capture must fit in sluiced's "
                             f"262,143 mbufs with room for packets in flight: at most 196607")
        one_benchmark_at_a_time("scale.py")
        note = ensure_hugepages(1500)
    except BenchError as e:
        print(f"scale.py: {e}", file=sys.stderr)
        return 2
    if note:
        log(f"reserved hugepages: {note}")
    report: dict[str, Any] = {"bench": "scale", "benchmark": "scale",
                              "command": bench_command(), "argv": sys.argv,
                              "host": host_info(), "hugepages_reserved_by": note,
                              "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
                              "flows": args.flows, "rounds": [], "error": None}
    with tempfile.TemporaryDirectory(prefix="sluice-bench-scale-") as t, \
            sigterm_as_interrupt():
        tmp = Path(t)
        pcap = tmp / "udp64.pcap"
        write_pcap(pcap, fixed_size(max(args.flows, 4096), args.flows, 64))
        name = unique_name("sc", 0)
        procs = Processes(tmp / "logs" / name)
        extra = ["--port", f"in={pcap_device(pcap)}", "--port", f"out={SINK_DEVICE}",
                 "--chain", "forward,port:out", "--mbufs", "262143",
                 "--flow-capacity", str(max(262144, 4 * args.flows))]
        node = Node(name, procs, progs, args.cpus, "shared", None, extra, ready_timeout=60)
        try:
            with node:
                nf = node.start_nf("forward", "forward", "forward", args.cpus[0])
                node.wait_registered("forward", nf)
                wait(lambda: out_port(node.stats())["tx_pkts"] > 0, 30, "traffic")
                for i in range(rounds_n):
                    log(f"round {i + 1}/{rounds_n}")
                    report["rounds"].append(one_round(node, args.flows))
        except (BenchError, SluiceError) as e:
            report["error"] = str(e)
            print(f"scale.py: {e}", file=sys.stderr)
        except KeyboardInterrupt:
            log("interrupted: writing what was measured")
            report["interrupted"] = True
        finally:
            node.record_into(report)  # commands, core_layout, leaks, stragglers
    rs = report["rounds"]
    if rs:
        report["summary"] = {
            "join_moved_total": sum(r["join"]["moved"] for r in rs),
            "leave_moved_total": sum(r["leave"]["moved"] for r in rs),
            "leave_expected_total": sum(r["leave"]["on_leaver"] for r in rs),
            "start_to_first_pkt_ms": {
                "min": min(r["start_to_first_pkt_ms"] for r in rs),
                "median": statistics.median(r["start_to_first_pkt_ms"] for r in rs),
                "max": max(r["start_to_first_pkt_ms"] for r in rs)},
        }
        plot(rs, args.plot, f"{args.flows} flows, {len(rs)} round(s), {report['started']}")
    write_json(args.out, report)
    if not rs:
        print(f"scale.py: no round finished; what happened is in {args.out}", file=sys.stderr)
        return 1
    s = report["summary"]
    print(f"results: {args.out}, plot: {args.plot}")
    print(f"scale: join moved={s['join_moved_total']} leave moved={s['leave_moved_total']}/"
          f"{sum(r['leave']['flows'] for r in rs)} (expected {s['leave_expected_total']}) "
          f"start_to_first_pkt_ms median={s['start_to_first_pkt_ms']['median']:.1f}")
    return 0 if report["error"] is None and not report.get("interrupted") else 1


if __name__ == "__main__":
    sys.exit(main())
