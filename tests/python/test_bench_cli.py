"""bench/*.py command lines: option values, --help, the one-at-a-time lock, JSON shape.

No benchmark runs here: only argument parsing, the harness's helpers, the
plots from fake results and the refusals that happen before anything starts.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench"
sys.path.insert(0, str(BENCH))

import harness  # noqa: E402

SCRIPTS = ("chain", "port", "flowdir", "micro", "scale", "ovs", "container", "failover", "nfs",
           "placement")


def parser_of(name: str, monkeypatch: pytest.MonkeyPatch) -> argparse.ArgumentParser:
    """The ArgumentParser a script's main() builds (main stops at parse_args)."""
    mod = importlib.import_module(name)
    got: list[argparse.ArgumentParser] = []

    def capture(self: argparse.ArgumentParser, *a: object, **k: object) -> None:
        got.append(self)
        raise SystemExit(99)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", capture)
    with pytest.raises(SystemExit):
        mod.main()
    return got[0]


def run_script(name: str, *args: str, env: dict[str, str] | None = None
               ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(BENCH / f"{name}.py"), *args],
                          capture_output=True, text=True, timeout=60, cwd=REPO,
                          env=env)


# -- --help ------------------------------------------------------------------------

@pytest.mark.parametrize("name", SCRIPTS)
def test_every_option_has_help(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    ap = parser_of(name, monkeypatch)
    missing = [a.option_strings[0] for a in ap._actions
               if a.option_strings and not a.help]
    assert missing == []
    # the description is a whole sentence, not a docstring's first line cut short
    assert ap.description.rstrip().endswith(".")


@pytest.mark.parametrize("name,default_out", [
    ("chain", "chain.json"), ("port", "port.json"), ("micro", "micro.json"),
    ("scale", "scale.json"), ("ovs", "ovs.json"), ("container", "container.json"),
    ("failover", "failover.json")])
def test_results_go_to_bench_results(name: str, default_out: str,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    ap = parser_of(name, monkeypatch)
    out = ap.get_default("out")
    plot = ap.get_default("plot")
    assert out == BENCH / "results" / default_out
    assert plot == BENCH / "results" / default_out.replace(".json", ".png")


def test_help_defaults_match_the_docs(monkeypatch: pytest.MonkeyPatch) -> None:
    chain = parser_of("chain", monkeypatch)
    assert chain.get_default("chains") == [1, 2, 3, 4, 5]
    assert chain.get_default("modes") == ["shared", "poll"]
    assert chain.get_default("packets") == 128
    port = parser_of("port", monkeypatch)
    assert port.get_default("flows") == [1, 100000]
    assert port.get_default("modes") == ["shared", "poll", "shared+off", "poll+off", "alone",
                                         "pipe"]
    assert port.get_default("far_cycles") == 700
    assert port.get_default("wait_near") == 120
    ovs = parser_of("ovs", monkeypatch)
    assert ovs.get_default("flows") == [1000, 100000]
    assert ovs.get_default("rules") == ["exact", "wildcard"]


# -- bad values are refused before anything starts -------------------------------------

@pytest.mark.parametrize("name,args,message", [
    ("chain", ["--runs", "0"], "argument --runs: 0 is too small: give a whole number >= 1"),
    ("chain", ["--duration", "0.5"],
     "argument --duration: 0.5 is too short: give at least 1 (seconds)"),
    ("chain", ["--chains", "1,x"],
     "argument --chains: '1,x': 'x' is not a whole number; give numbers separated by "
     "commas, e.g. 1,100000"),
    ("chain", ["--chains", "17"], "argument --chains: '17': 17 is out of range: each must "
                                  "be 1..16"),
    ("chain", ["--modes", "shard"], "argument --modes: 'shard': unknown 'shard'; choose "
                                    "from shared, poll, pinned (comma-separated)"),
    ("port", ["--flows", "0"], "argument --flows: '0': 0 is out of range: each must be "
                               "1..524288"),
    ("port", ["--warmup", "-1"], "argument --warmup: -1 is negative: give a whole number >= 0"),
    ("port", ["--modes", "shared+foo"], "argument --modes: 'shared+foo': unknown "
                                        "'shared+foo'"),
    ("flowdir", ["--sizes", "10"], "argument --sizes: '10': 10 is out of range: each must "
                                   "be 60..1514"),
    ("flowdir", ["--ovs-rules", "exakt"], "argument --ovs-rules: 'exakt': unknown 'exakt'"),
    ("micro", ["--runs", "0"], "argument --runs: 0 is too small"),
    ("scale", ["--rounds", "0"], "argument --rounds: 0 is too small"),
    ("ovs", ["--rules", "foo"], "argument --rules: 'foo': unknown 'foo'; choose from "
                                "exact, wildcard (comma-separated)"),
    ("ovs", ["--size", "64,128"], "argument --size: '64,128': give one frame size"),
    ("container", ["--runs", "0"], "argument --runs: 0 is too small"),
    ("failover", ["--runs", "0"], "argument --runs: 0 is too small"),
    ("placement", ["--multipliers", "1,x"], "argument --multipliers: '1,x': 'x' is not a "
                                            "number"),
])
def test_bad_value_refused(name: str, args: list[str], message: str) -> None:
    r = run_script(name, *args)
    assert r.returncode == 2
    assert f"{name}.py: error: {message}" in r.stderr
    assert r.stdout == ""


def test_mgr_chains_outside_chains_refused() -> None:
    r = run_script("chain", "--chains", "1", "--mgr-chains", "7")
    assert r.returncode == 2
    assert r.stderr == ("chain.py: --mgr-chains 7: only lengths of --chains (1) are run; "
                        "add them there or leave them out\n")


def test_mgr_chains_default_follows_chains(monkeypatch: pytest.MonkeyPatch) -> None:
    # `--chains 1,3` (a documented command) must not be refused for the default 2,3
    ap = parser_of("chain", monkeypatch)
    assert ap.get_default("mgr_chains") is None


def test_bad_cpus_refused() -> None:
    r = run_script("chain", "--cpus", "a,b")
    assert r.returncode == 2
    assert r.stderr == "chain.py: --cpus a,b: 'a' is not a CPU number or range; give e.g. " \
                       "0,1 or 0-3\n"


def test_flowdir_nothing_to_measure() -> None:
    r = run_script("flowdir", "--sizes", "", "--ovs-flows", "", "--no-latency")
    assert r.returncode == 2
    assert r.stderr == ("flowdir.py: --sizes '' and --ovs-flows '' (and no latency runs): "
                        "nothing to measure; give sizes or OVS flow counts\n")


def test_port_alone_only_refused() -> None:
    r = run_script("port", "--modes", "alone,pipe")
    assert r.returncode == 2
    assert ("port.py: --modes alone,pipe: give at least one mode with an NF (shared or poll, "
            "optionally +off) besides alone and pipe: the ratio is theirs\n") in r.stderr


def test_port_pipe_lines_and_config_names() -> None:
    port = importlib.import_module("port")
    text = ('EAL: Detected CPU lcores: 2\n{"ready": true, "pool": 36863, "ring": 4096, '
            '"rx_burst": 64}\n{"second": 1, "out_pps": 58000000, "reader_stalls": 3}\n'
            '[1, 2]\n{"second": 2, "out_pps": 59000000, "reader_stalls": 0}\n'
            '{"done": true, "in_pkts": 117000064, "out_pkts": 117000000, "nf_pkts": '
            '117000000, "reader_stalls": 3}\n')
    pps, done = port.parse_pipe_lines(text)
    assert pps == [58000000, 59000000]
    assert done == {"done": True, "in_pkts": 117000064, "out_pkts": 117000000,
                    "nf_pkts": 117000000, "reader_stalls": 3}
    assert port.parse_pipe_lines('{"second": 1, "out_pps": 5}\n') == ([5], None)
    assert [port.config_key(m) for m in ("poll+off", "alone", "pipe")] == \
        ["sluice-poll+off", "sluice-alone", "pipe"]


# -- helpers ------------------------------------------------------------------------

def test_list_types() -> None:
    assert harness.int_list(1)("1, 100_000,") == [1, 100000]
    assert harness.int_list(1, empty=True)("") == []
    with pytest.raises(argparse.ArgumentTypeError, match="an empty list"):
        harness.int_list(1)("")
    assert harness.name_list(("a", "b"))("b,a") == ["b", "a"]
    assert harness.seconds("1.5") == 1.5
    with pytest.raises(argparse.ArgumentTypeError):
        harness.seconds("nan")
    assert harness.nonneg_int("0") == 0
    with pytest.raises(argparse.ArgumentTypeError, match="'x' is not a whole number"):
        harness.positive_int("x")


def test_bench_command_is_relative_and_niced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", [str(BENCH / "chain.py"), "--quick", "--mgr-chains", ""])
    monkeypatch.setattr(sys, "executable", str(REPO / ".venv" / "bin" / "python"))
    monkeypatch.setattr(os, "getpriority", lambda *a: -15)
    assert harness.bench_command() == \
        "nice -n -15 .venv/bin/python bench/chain.py --quick --mgr-chains ''"
    monkeypatch.setattr(os, "getpriority", lambda *a: 0)
    assert harness.bench_command() == ".venv/bin/python bench/chain.py --quick --mgr-chains ''"


def test_host_info_has_revision_and_other_dataplanes() -> None:
    info = harness.host_info()
    assert len(info["git_commit"]) == 40
    assert isinstance(info["other_dataplane_processes"], list)
    assert all(x.startswith("pid ") for x in info["other_dataplane_processes"])


# -- one benchmark at a time ----------------------------------------------------------

def test_second_benchmark_refused_with_the_first_named() -> None:
    env = dict(os.environ, SLUICE_BENCH_LOCK=f"sluice-bench-test-{uuid.uuid4().hex}")
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; sys.path.insert(0, 'bench'); import harness; "
         "harness.one_benchmark_at_a_time('test'); print('held', flush=True); "
         "time.sleep(60)"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        r = run_script("chain", "--chains", "1", "--mgr-chains", "", "--runs", "1",
                       "--duration", "1", env=env)
        assert r.returncode == 2
        assert r.stderr.startswith(f"chain.py: another benchmark is running (pid "
                                   f"{holder.pid}: {sys.executable} -c ")
        assert r.stderr.endswith("two at once share the CPUs and both give wrong numbers. "
                                 "Wait until it ends, or stop it with Ctrl-C (kill -INT "
                                 "<pid>), then run chain.py again\n")
    finally:
        holder.kill()
        holder.wait()
    # released with the process: no file, nothing left to clean up
    deadline = time.monotonic() + 5
    while True:
        probe = subprocess.run(
            [sys.executable, "-c", "import sys; sys.path.insert(0, 'bench'); import harness; "
             "harness.one_benchmark_at_a_time('probe'); print('ok')"],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=30)
        if probe.stdout.strip() == "ok" or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert probe.stdout.strip() == "ok", probe.stderr


# -- plots and summaries from fake results --------------------------------------------

def test_chain_summary_and_plot_from_fake_runs(tmp_path: Path) -> None:
    chain = importlib.import_module("chain")
    runs = [{"chain": 2, "config": "shared", "mode": "shared", "handoff": "direct",
             "error": None, "mpps": m, "cycles_per_pkt_per_hop": 100.0,
             "nf_cycles_per_pkt": {"f2": 1.5}} for m in (10.0, 12.0)]
    runs.append({"chain": 2, "config": "shared", "mode": "shared", "handoff": "direct",
                 "error": "speedtest exited with 1"})
    point = chain.summarize(runs)
    assert point["runs_ok"] == 2 and point["runs"] == 3
    assert point["mpps"] == {"median": 11.0, "min": 10.0, "max": 12.0}
    assert chain.best_per_chain([point])[2]["config"] == "shared"
    png = tmp_path / "sub" / "chain.png"
    chain.plot([point], png, "test")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_ovs_plot_from_fake_runs(tmp_path: Path) -> None:
    ovs = importlib.import_module("ovs")
    png = tmp_path / "ovs.png"
    ovs.plot([{"rules": "exact", "flows": 1000, "mpps": 2.5},
              {"rules": "wildcard", "flows": 1000, "mpps": None}], png, "test")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _port_run(mpps: float, before: float, after: float, waited: float = 0.0
              ) -> dict[str, object]:
    return {"error": None, "mpps": mpps,
            "host": {"far_cycles": 700, "round_trip_cycles_before": before, "waited_s": waited,
                     "round_trip_cycles_after": after,
                     "near": before < 700 and after < 700}}


def test_port_ratio_near_counts_only_runs_with_both_probes_near() -> None:
    port = importlib.import_module("port")
    tp = port.summarize([_port_run(60.0, 300, 290), _port_run(64.0, 1300, 310),
                         _port_run(62.0, 280, 300)])
    assert tp["mpps"] == {"median": 62.0, "min": 60.0, "max": 64.0}
    assert tp["runs_near"] == 2 and tp["mpps_near"]["median"] == 61.0
    poll = port.summarize([_port_run(48.0, 300, 300), _port_run(13.0, 300, 1350),
                           _port_run(13.5, 1290, 1300), {"error": "no packet left", "host": {}}])
    assert poll["runs_ok"] == 3 and poll["runs"] == 4 and poll["runs_near"] == 1
    assert poll["mpps"]["median"] == 13.5 and poll["mpps_near"]["median"] == 48.0
    shared = port.summarize([_port_run(12.0, 1300, 1300)])
    assert shared["mpps_near"] is None and shared["runs_near"] == 0
    entry = {"configs": {"testpmd": tp, "sluice-poll": poll, "sluice-shared": shared,
                         "sluice-alone": port.summarize([_port_run(70.0, 300, 300)]),
                         "pipe": port.summarize([_port_run(69.0, 300, 300)])}}
    modes = ["shared", "poll", "alone", "pipe"]  # the references are never the best mode
    assert port.best_ratio(entry, modes, "mpps") == ("poll", 13.5 / 62.0)
    assert port.best_ratio(entry, modes, "mpps_near") == ("poll", 48.0 / 61.0)
    assert port.host_note(_port_run(13.0, 300, 1350)) == \
        "(round trip 300 -> 1350 cycles: CPUs far)"
    assert port.host_note(_port_run(48.0, 300, 290, waited=14.2)) == \
        "(round trip 300 -> 290 cycles, waited 14 s)"


PINGPONG = Path(os.environ.get("SLUICE_BUILD_DIR", REPO / "build")) / "bench" / "micro" / \
    "sluice-pingpong"


def test_pingpong_measures_a_round_trip_between_two_cpus() -> None:
    cpus = sorted(os.sched_getaffinity(0))[:2]
    r = subprocess.run([str(PINGPONG), str(cpus[0]), str(cpus[1]), "2000"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["cpus"] == cpus and got["round_trips"] == 10000
    # a round trip is two cache-line transfers: tens of ns at least, and this
    # VM's slowest state is about 500 ns
    assert 10 < got["round_trip_ns"] < 100000
    assert got["round_trip_cycles"] > 10
    assert harness.cross_core_round_trip(PINGPONG, cpus) > 10
    # near at once: no wait at all
    got = harness.wait_for_near_cpus(PINGPONG, cpus, 1e9, 60)
    assert got["waited_s"] == 0.0 and got["round_trip_cycles"] > 10
    # never near (every round trip is >= 1 cycle): probes again until the wait is over
    got = harness.wait_for_near_cpus(PINGPONG, cpus, 1, 1)
    assert 1.0 <= got["waited_s"] < 10 and got["round_trip_cycles"] > 10


@pytest.mark.parametrize("args,message", [
    (["0", "0"], "sluice-pingpong: CPU_A and CPU_B are both 0: give two different CPUs\n"),
    (["0", "x"], "sluice-pingpong: CPU_B 'x' is not a number in 0..1023\n"),
    (["0", "1", "0"], "sluice-pingpong: ROUND_TRIPS '0' is not a number in 1..100000000\n"),
    (["0", "1023"], "sluice-pingpong: cannot run on CPU 1023 (give CPUs this process may "
                    "use: taskset -p $$)\n"),
    (["1023", "0"], "sluice-pingpong: cannot run on CPU 1023: Invalid argument (give CPUs "
                    "this process may use: taskset -p $$)\n"),
    (["0"], "usage: sluice-pingpong CPU_A CPU_B [ROUND_TRIPS per batch, 20000]\n"),
])
def test_pingpong_errors(args: list[str], message: str) -> None:
    r = subprocess.run([str(PINGPONG), *args], capture_output=True, text=True, timeout=60)
    assert r.stderr == message
    assert r.returncode == (1 if "cannot run" in message else 2)


def test_round_trip_errors_name_the_command_and_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(harness.BenchError) as e:
        harness.cross_core_round_trip(PINGPONG, [0, 0])
    assert str(e.value) == (f"{PINGPONG} 0 0 failed: sluice-pingpong: CPU_A and CPU_B are "
                            f"both 0: give two different CPUs")
    with pytest.raises(harness.BenchError) as e:
        harness.pingpong_binary(tmp_path)
    assert str(e.value) == (f"not built: {tmp_path}/bench/micro/sluice-pingpong "
                            f"(run: ninja -C {tmp_path})")


def test_write_json_is_whole(tmp_path: Path) -> None:
    out = tmp_path / "a" / "r.json"
    harness.write_json(out, {"command": "x", "host": {"git_commit": "0" * 40}})
    assert json.loads(out.read_text()) == {"command": "x", "host": {"git_commit": "0" * 40}}
    assert sorted(p.name for p in out.parent.iterdir()) == ["r.json"]


def test_every_sample_nf_is_measured_by_bench_nfs() -> None:
    """bench/nfs.py measures what nfs/*/bench.json names: every NF but the
    traffic generator has one, and each is a JSON object bench/nfs.py reads."""
    nfs = importlib.import_module("nfs")
    dirs = sorted(d for d in (REPO / "nfs").iterdir() if (d / "meson.build").is_file())
    missing = [d.name for d in dirs if d.name != "speedtest" and not (d / "bench.json").exists()]
    assert not missing, f"write nfs/<name>/bench.json for {missing} (see bench/nfs.py)"
    for d in dirs:
        f = d / "bench.json"
        if f.exists():
            spec = json.loads(f.read_text())
            assert set(spec) <= {"args", "files", "workloads", "variants"}, (f, spec)
            assert all(isinstance(a, str) for a in spec.get("args", [])), f
            assert set(spec.get("workloads", nfs.WORKLOADS)) <= set(nfs.WORKLOADS), f


def test_bench_nfs_points_expand_variants_and_workloads() -> None:
    nfs = importlib.import_module("nfs")
    specs = {"a": {"args": ["-x"]},
             "ids": {"workloads": ["64B"],
                     "variants": {"10": {"args": ["--rules", "{dir}/r10"]},
                                  "100": {"args": ["--rules", "{dir}/r100"]}}}}
    got = [(n, v, w) for n, v, w, _ in nfs.points(specs, ["64B", "http"])]
    assert got == [("a", "", "64B"), ("a", "", "http"), ("ids", "10", "64B"),
                   ("ids", "100", "64B")]
    assert nfs.expand("{dir}/r and {root}", Path("/t")) == f"/t/r and {REPO}"


def test_ids_bench_json_is_what_ids_rules_writes() -> None:
    """nfs/ids/bench.json is generated (bench/ids_rules.py --bench-json): it
    must not drift from the generator, nor the rule counts from its names."""
    ids_rules = importlib.import_module("ids_rules")
    got = json.loads((REPO / "nfs" / "ids" / "bench.json").read_text())
    assert got == ids_rules.bench_json(), "run: .venv/bin/python bench/ids_rules.py --bench-json"
    for n, v in got["variants"].items():
        lines = [x for x in v["files"]["ids.rules"].splitlines() if x and not x.startswith("#")]
        assert len(lines) == int(n)
