"""Container start to first packet: how long from the `podman run` call
until the forward NF inside the container has processed its first packet.

OpenNetVM reports 0.526 s from container start to the first packet
processed (its Docker NFs); Sluice's target is < 0.3 s.

Each run starts a fresh sluiced (shared mode, CPUs 0-1) with a finite pcap
in and a pcap out, sets the chain `forward -> port:out` *before* the NF
exists (sluiced reads no port until the chain is complete, i.e. until the
NF registers), then, at wall-clock time T0, starts
`python/sluice/runtime/container.py`'s `wrap()` command (podman run ... sluice-forward).
The result is the time stamp of the first packet in the output capture
(written by the NF's own `rte_eth_tx_burst`, stamped by DPDK's pcap driver
from CLOCK_REALTIME) minus T0. Also recorded per run: when sluiced saw the
NF register (polled every 2 ms), the NF's own `start_to_register_ms` and
`start_to_first_pkt_ms` (from its main(), so `total - start_to_first_pkt`
is what the container runtime adds), and how long `podman run` took to
return after sluiced's shutdown. The same NF started as a plain process is
measured as a baseline.

    .venv/bin/python bench/container.py [--runs 20] [--quick]   # --quick: 5 runs

Prints JSON, writes bench/results/container.json and .png, and ends with
the line `container start->first packet s: median=… p90=… max=… (process median=…)`.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "bench"))

from harness import (  # noqa: E402
    RESULTS,
    BenchError,
    Node,
    Processes,
    bench_command,
    binaries,
    host_info,
    log,
    one_benchmark_at_a_time,
    positive_int,
    sigterm_as_interrupt,
    unique_name,
    write_json,
)
from sluice.runtime import container  # noqa: E402
from sluice.runtime.client import SluiceError  # noqa: E402
from sluice.runtime.traces import fixed_size, write_pcap  # noqa: E402

OPENNETVM_S = 0.526
TARGET_S = 0.3


def first_packet_time(pcap: Path) -> float | None:
    """Wall-clock time stamp of the first packet of a capture (s, µs or ns
    captures), or None if it holds no packet."""
    data = pcap.read_bytes()
    if len(data) < 24 + 16:
        return None
    magic = struct.unpack("<I", data[:4])[0]
    if magic in (0xA1B2C3D4, 0xA1B23C4D):
        end = "<"
    else:
        end = ">"
        magic = struct.unpack(">I", data[:4])[0]
    nano = magic == 0xA1B23C4D
    sec, frac = struct.unpack(end + "II", data[24:32])
    return sec + frac / (1e9 if nano else 1e6)


def pcap_count(pcap: Path) -> int:
    data = pcap.read_bytes()
    end = "<" if struct.unpack("<I", data[:4])[0] in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    off, n = 24, 0
    while off + 16 <= len(data):
        incl = struct.unpack(end + "I", data[off + 8:off + 12])[0]
        off += 16 + incl
        n += 1
    return n


def one_run(kind: str, seq: int, progs: dict[str, Path], trace: Path, npkts: int,
            tmp: Path, image: str) -> dict[str, Any]:
    name = unique_name("ct", seq)
    out = tmp / f"out-{seq}.pcap"
    procs = Processes(tmp / f"logs-{seq}")
    node = Node(name, procs, progs, [0, 1], "shared", None,
                ["--port", f"in=net_pcap0,rx_pcap={trace}",
                 "--port", f"out=net_pcap1,tx_pcap={out}"])
    res: dict[str, Any] = {"kind": kind}
    with node:
        node.client.call("chain.set", hops=["forward", "port:out"])
        argv = [str(progs["forward"]), "--", "--node", name, "--service", "forward",
                "--mode", "shared"]
        env = None
        if kind == "container":
            argv = container.wrap(argv, name="fwd", image=image, node=name)
            env = container.runtime_env()
        res["cmd"] = shlex.join(argv)
        wall0 = time.time()
        t0 = time.monotonic()
        nf = procs.start(kind, argv, "0,1", env=env)
        node.nfs.append(nf)
        registered = None
        entry: dict[str, Any] = {}
        deadline = t0 + 30
        while time.monotonic() < deadline:
            if not nf.alive():
                raise BenchError(f"{kind} NF exited with {nf.proc.returncode}:\n{nf.tail()}")
            listed = node.client.call("nf.list")
            if listed:
                if registered is None:
                    registered = time.monotonic() - t0
                entry = listed[0]
                if entry.get("start_to_first_pkt_ms") is not None:
                    break
            time.sleep(0.002)
        else:
            raise BenchError(f"{kind} NF processed no packet within 30 s:\n{nf.tail()}")
        polled = time.monotonic() - t0
        node.client.call("shutdown")
        ts = time.monotonic()
        try:
            nf.proc.wait(timeout=30)
            res["stop_s"] = time.monotonic() - ts
        except subprocess.TimeoutExpired:
            res["stop_s"] = None
    first = first_packet_time(out)
    if first is None:
        raise BenchError(f"run {seq}: {out} holds no packet")
    res.update({
        "start_to_first_pkt_s": first - wall0,
        "registered_seen_s": registered,
        "first_pkt_seen_s": polled,
        "nf_start_to_register_ms": entry.get("start_to_register_ms"),
        "nf_start_to_first_pkt_ms": entry.get("start_to_first_pkt_ms"),
        "packets_out": pcap_count(out),
        "nf_exit": nf.proc.returncode,
        "leaks": node.leaks,
        "stragglers": node.stragglers,
    })
    res["runtime_overhead_s"] = res["start_to_first_pkt_s"] - \
        (res["nf_start_to_first_pkt_ms"] or 0) / 1e3
    if res["packets_out"] != npkts:
        raise BenchError(f"run {seq}: {res['packets_out']} of {npkts} packets out")
    return res


def summary(v: list[float]) -> dict[str, float]:
    s = sorted(v)
    return {"min": s[0], "median": statistics.median(s),
            "p90": s[min(len(s) - 1, int(round(0.9 * (len(s) - 1))))], "max": s[-1],
            "mean": statistics.fmean(s)}


def plot(path: Path, runs: dict[str, list[float]], title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    labels = list(runs)
    ax.boxplot([runs[k] for k in labels], whis=(0, 100))
    for i, k in enumerate(labels, 1):
        ax.scatter([i] * len(runs[k]), runs[k], s=10, alpha=0.6, zorder=3)
    ax.set_xticks(range(1, len(labels) + 1), labels)
    ax.axhline(OPENNETVM_S, color="tab:red", ls="--", lw=1)
    ax.text(0.55, OPENNETVM_S, f" OpenNetVM {OPENNETVM_S} s", color="tab:red", va="bottom",
            fontsize=8)
    ax.axhline(TARGET_S, color="tab:green", ls=":", lw=1)
    ax.text(0.55, TARGET_S, f" target {TARGET_S} s", color="tab:green", va="bottom", fontsize=8)
    ax.set_ylabel("s from start to first packet processed")
    ax.set_ylim(0, max(OPENNETVM_S * 1.15, max(max(v) for v in runs.values()) * 1.1))
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        description="Container start to first packet: how long from the `podman run` call "
                    "until the forward NF inside the container has processed its first "
                    "packet, against the same NF started as a plain process.",
        epilog="Root, podman. Builds the NF image if it is missing or stale. Writes JSON "
               "(command, every run's command lines, layout, git commit) to --out and a plot "
               "to --plot; the last line printed is the summary 'container start->first "
               "packet s: median=.. p90=.. max=.. (process median=..)'.")
    ap.add_argument("--runs", type=positive_int,
                    help="runs of each, container and process, interleaved (20; --quick: 5)")
    ap.add_argument("--quick", action="store_true", help="5 runs of each (unless --runs says)")
    ap.add_argument("--packets", type=positive_int, default=256,
                    help="packets in the input capture (256)")
    ap.add_argument("--image", default=container.DEFAULT_IMAGE,
                    help=f"the NF image to run (built if missing) ({container.DEFAULT_IMAGE})")
    ap.add_argument("--build", type=Path, default=ROOT / "build", metavar="DIR",
                    help="the build folder with sluiced and the NFs (build)")
    ap.add_argument("--out", type=Path, default=RESULTS / "container.json", metavar="FILE",
                    help="JSON results (bench/results/container.json)")
    ap.add_argument("--plot", type=Path, default=RESULTS / "container.png", metavar="FILE",
                    help="plot (bench/results/container.png)")
    return ap


def main() -> int:
    args = build_parser().parse_args()
    runs = args.runs if args.runs is not None else (5 if args.quick else 20)
    try:
        progs = binaries(args.build.resolve())
        one_benchmark_at_a_time("container.py")
        rt = container.runtime()
        built = container.build_image(args.image, args.build.resolve(), say=log)
    except (BenchError, container.ContainerError) as e:
        print(f"container.py: {e}", file=sys.stderr)
        return 2
    info = host_info()
    results: list[dict[str, Any]] = []
    stopped: str | None = None
    with tempfile.TemporaryDirectory(prefix="sluice-bench-ct-") as t, sigterm_as_interrupt():
        tmp = Path(t)
        trace = tmp / "in.pcap"
        write_pcap(trace, fixed_size(args.packets, 16, 64))
        seq = 0
        try:
            # One warm-up of each (page cache, podman's storage), not counted.
            for kind in ("container", "process"):
                one_run(kind, seq, progs, trace, args.packets, tmp, args.image)
                seq += 1
            for i in range(runs):
                for kind in ("container", "process"):  # interleaved: same load for both
                    r = one_run(kind, seq, progs, trace, args.packets, tmp, args.image)
                    seq += 1
                    log(f"run {i} {kind}: first packet after {r['start_to_first_pkt_s']:.3f} "
                        f"s (NF main -> first packet {r['nf_start_to_first_pkt_ms']:.1f} ms)")
                    results.append(r)
        except (BenchError, container.ContainerError, SluiceError) as e:
            stopped = f"error: {e}"
            print(f"container.py: {e}", file=sys.stderr)
        except KeyboardInterrupt:
            stopped = "interrupted"
            log("interrupted: writing what was measured")
    if not any(r["kind"] == "container" for r in results) or \
            not any(r["kind"] == "process" for r in results):
        write_json(args.out, {"benchmark": "container", "command": bench_command(),
                              "host": info, "stopped": stopped, "runs": results})
        print(f"container.py: no complete pair of runs ({stopped}); {args.out} says what "
              f"was done", file=sys.stderr)
        return 1
    load_end = os.getloadavg()
    by = {k: [r["start_to_first_pkt_s"] for r in results if r["kind"] == k]
          for k in ("container", "process")}
    over = [r["runtime_overhead_s"] for r in results if r["kind"] == "container"]
    inner = [r["nf_start_to_first_pkt_ms"] / 1e3 for r in results if r["kind"] == "container"]
    stop = [r["stop_s"] for r in results if r["kind"] == "container" and r["stop_s"]]
    result = {
        "benchmark": "container",
        "command": bench_command(),
        "argv": sys.argv,
        "stopped": stopped,
        "runtime": rt,
        "image": args.image,
        "image_built_now": built,
        "container_cmd": next(r["cmd"] for r in results if r["kind"] == "container"),
        "layout": "fresh sluiced per run (control + 1 I/O thread floating on CPUs 0-1, shared "
                  f"mode); net_pcap in ({args.packets} x 64 B, 16 flows) -> forward -> "
                  "net_pcap out; chain set before the NF starts",
        "metric": "first output packet's pcap time stamp minus the wall-clock time just before "
                  "the runtime's `run` (or the NF) was started",
        "host": info,
        "loadavg_at_end": load_end,
        "opennetvm_s": OPENNETVM_S,
        "target_s": TARGET_S,
        "container_start_to_first_pkt_s": summary(by["container"]),
        "process_start_to_first_pkt_s": summary(by["process"]),
        "container_nf_main_to_first_pkt_s": summary(inner),
        "container_runtime_overhead_s": summary(over),
        "container_stop_s": summary(stop) if stop else None,
        "runs": results,
    }
    write_json(args.out, result)
    print(__import__("json").dumps({k: v for k, v in result.items() if k != "runs"}, indent=2))
    try:
        load = info["loadavg_at_start"]
        plot(args.plot, {"podman run (container)": by["container"],
                         "plain process": by["process"]},
             f"forward NF: start to first packet, {runs} runs each ({rt}); "
             f"load {load[0]:.2f} at start")
    except ImportError:
        pass
    c, p = result["container_start_to_first_pkt_s"], result["process_start_to_first_pkt_s"]
    print(f"container start->first packet s: median={c['median']:.3f} p90={c['p90']:.3f} "
          f"max={c['max']:.3f} (process median={p['median']:.3f})")
    return 1 if stopped else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (BenchError, container.ContainerError) as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
