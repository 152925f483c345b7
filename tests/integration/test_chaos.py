"""Chaos: a seeded random sequence of kills, stops, freezes, scaling, graph,
chain, load-balancer and flow-table changes while a capture is replayed
through a chain of three services, everything built with ASan+UBSan. After
it every packet is accounted for, every buffer is back, sluiced never died
and no sanitizer said a word.

SLUICE_CHAOS_SEED and SLUICE_CHAOS_SECONDS override the seed and the length
for exploration; every action is printed (pytest -s) so a failure can be
replayed by its seed."""

from __future__ import annotations

import contextlib
import os
import random
import re
import signal
import subprocess
import time

from conftest import (
    ASAN_BUILD,
    assert_no_sanitizer_report,
    attaching,
    deployment,
    needs_asan,
    port,
    prog,
    wait_drained,
    wait_until,
)
from packets import mixed, write

from sluice.runtime.client import RpcError

REPLAY = 1000  # packets in the replayed capture (held by the pcap PMD)
SERVICES = ["s1", "s2", "s3"]
SEED = int(os.environ.get("SLUICE_CHAOS_SEED", "20261122"))
SECONDS = float(os.environ.get("SLUICE_CHAOS_SECONDS", "28"))

# Drop reasons the actions explain; any other one fails the test.
#  nf_lost:     SIGKILL (and hung NFs killed by sluiced): what they held, and
#               the burst of a transmit call they were killed inside (in doubt).
#  no_instance: a service left without an instance for a moment (its last
#               one killed or stopped, deliberately now and then).
#  ring_full:   an NF frozen (SIGSTOP) for up to 300 ms makes the NF before
#               it wait past --backpressure-us (100 ms) and drop the rest.
#  graph_gone:  packets waiting in a frozen NF's ring while graph.remove,
#               graph.apply or chain.set retire the version they travel with.
#  tx_full:     the same wait as ring_full, on the last NF's own tx ring to
#               sluiced's TX thread (an NF's, never the port's: net_null
#               takes everything): an ASan TX thread behind frozen and
#               restarted NFs can leave it full past the bound (seen once,
#               4 packets, in 15 runs).
# Not explained, so failures: forward never drops (nf_verdict) nor routes
# (invalid_dest, policy_violation); every graph and chain ends at port:out
# (end_of_chain, graph_drop); net_null never refuses (port_down, or
# tx_full at a port, checked below).
EXPLAINED = {"nf_lost", "no_instance", "ring_full", "graph_gone", "tx_full"}
# Refusals an action may get in the middle of chaos (-32000: valid, cannot
# be done now), by what their message says; anything else fails.
REFUSALS = ("has no running instance to copy",  # nf.scale of a service with none
            "are still starting: wait until they register",  # nf.scale
            "no running NF instance",  # nf.stop of one that died meanwhile
            "to copy it",  # nf.scale whose model was killed, not yet noticed dead
            "the chain is not complete",  # rx.resume while a service has none
            "graph versions are still in use by packets in flight")  # graph.apply, chain.set

pytestmark = needs_asan


class Chaos:
    def __init__(self, run, rnd: random.Random):
        self.run, self.rnd = run, rnd
        self.killed: set[int] = set()  # pids we sent SIGKILL
        self.rx_paused = False
        self.graph_on = False
        self.t0 = time.monotonic()
        self.n_refused = 0
        self.stopping: set[int] = set()  # pids asked to stop (nf.stop, nf.scale in)
        self.refilling: dict[str, tuple[int, float]] = {}  # service -> (pid, until)

    def say(self, msg: str) -> None:
        print(f"[chaos {time.monotonic() - self.t0:6.2f}s] {msg}", flush=True)

    def call(self, method: str, **params):
        try:
            res = self.run.client.call(method, **params)
        except RpcError as e:
            assert e.code == -32000 and any(r in e.message for r in REFUSALS), \
                f"{method} {params}: unexpected refusal: {e}"
            self.n_refused += 1
            self.say(f"  refused: {e.message}")
            return None
        self.say(f"  -> {res}")
        return res

    def running(self) -> dict[str, list[dict]]:
        """Per service, its running instances not asked to stop."""
        by: dict[str, list[dict]] = {s: [] for s in SERVICES}
        listed = self.run.client.call("nf.list")
        self.stopping &= {n["pid"] for n in listed}
        for n in listed:
            if n["state"] == "running" and n["service"] in by and n["pid"] not in self.stopping:
                by[n["service"]].append(n)
        return by

    def victim(self) -> dict | None:
        """A running instance; the last one of its service only now and
        then (its packets are then no_instance drops for a moment)."""
        by = self.running()
        spare = [n for s in SERVICES for n in by[s] if len(by[s]) > 1]
        if self.rnd.random() < 0.97:
            return self.rnd.choice(spare) if spare else None
        every = [n for s in SERVICES for n in by[s]]
        return self.rnd.choice(every) if every else None

    def alive(self, pid: int) -> bool:
        """Whether a process started for a refill runs (the launcher's are
        its children: zombies until it reaps them; nf.scale's are sluiced's)."""
        mine = next((p for p in self.run.nfs if p.pid == pid), None)
        if mine is not None:
            return mine.exited() is None
        try:
            os.kill(pid, 0)
        except (ProcessLookupError, ValueError):
            return False
        return pid > 0

    def refill(self) -> bool:
        """A service with no instance and none starting gets one back.
        True if every service has a running instance."""
        by = self.running()
        listed = {n["pid"] for ns in by.values() for n in ns}
        for s in SERVICES:
            pid, until = self.refilling.get(s, (0, 0.0))
            if by[s] or (pid not in listed and self.alive(pid) and time.monotonic() < until):
                continue  # has one, or the one started for it has not registered yet
            self.say(f"refill {s}: nf.scale 1")
            res = self.call("nf.scale", service=s, replicas=1)
            if res and res["started_pids"]:
                pid = res["started_pids"][0]
            elif res is None:  # nothing to copy: start one the launcher way
                nf = next(n for n in self.run.dep.nfs if n.service == s)
                pid = self.run.spawn_nf(nf, f"{s}.r{len(self.run.nfs)}").pid
                self.say(f"  started {s} as pid {pid}")
            self.refilling[s] = (pid, time.monotonic() + 20)  # an ASan NF takes a while
        return all(by.values())

    # -- the actions ------------------------------------------------------------

    def kill(self) -> None:
        v = self.victim()
        if v:
            self.say(f"SIGKILL instance {v['instance']} ({v['service']}, pid {v['pid']})")
            self.killed.add(v["pid"])
            os.kill(v["pid"], signal.SIGKILL)

    def scale(self) -> None:
        s, r = self.rnd.choice(SERVICES), self.rnd.randint(1, 3)
        self.say(f"nf.scale {s} {r}")
        pids = {n["instance"]: n["pid"] for n in self.run.client.call("nf.list")}
        res = self.call("nf.scale", service=s, replicas=r)
        if res:
            self.stopping |= {pids[i] for i in res["stopping"] if i in pids}

    def stop(self) -> None:
        v = self.victim()
        if v:
            self.say(f"nf.stop instance {v['instance']} ({v['service']}, pid {v['pid']})")
            if self.call("nf.stop", instance=v["instance"]):
                self.stopping.add(v["pid"])

    def graph(self) -> None:
        if self.graph_on and self.rnd.random() < 0.5:
            self.say("graph.remove side")
            self.call("graph.remove", name="side")
            self.graph_on = False
            return
        order = self.rnd.sample(SERVICES, 3)
        nodes = {a: [b] for a, b in zip(order, order[1:], strict=False)}
        nodes[order[-1]] = ["port:out"]
        self.say(f"graph.apply side {order}")
        if self.call("graph.apply", name="side", entry=order[0], nodes=nodes) is None:
            return
        if not self.graph_on:
            proto = self.rnd.choice(["udp", "tcp"])
            self.say(f"rule.add side proto {proto}")
            self.call("rule.add", graph="side", proto=proto, priority=1)
            self.graph_on = True

    def chain(self) -> None:
        hops = [*self.rnd.sample(SERVICES, 3), "port:out"]
        self.say(f"chain.set {hops}")
        self.call("chain.set", hops=hops)

    def lb(self) -> None:
        s, mode = self.rnd.choice(SERVICES), self.rnd.choice(["flow", "queue", "rr"])
        self.say(f"lb.set {s} {mode}")
        self.call("lb.set", service=s, mode=mode)

    def flows(self) -> None:
        self.say("flow.delete all")
        self.call("flow.delete", all=True)

    def freeze(self) -> None:
        v = self.victim()
        if v:
            ms = self.rnd.randint(50, 300)
            self.say(f"SIGSTOP instance {v['instance']} ({v['service']}) for {ms} ms")
            try:
                os.kill(v["pid"], signal.SIGSTOP)
            except ProcessLookupError:
                return
            try:
                time.sleep(ms / 1000)  # the freeze itself, not a wait for a state
            finally:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(v["pid"], signal.SIGCONT)

    def pause(self) -> None:
        self.say("rx.pause")
        self.call("rx.pause")
        self.rx_paused = True

    def resume(self) -> None:
        self.say("rx.resume")
        if self.call("rx.resume") is not None:
            self.rx_paused = False

    def step(self) -> None:
        action = self.rnd.choices(
            [self.kill, self.scale, self.stop, self.graph, self.chain, self.lb,
             self.flows, self.freeze, self.pause],
            weights=[3, 3, 2, 2, 2, 2, 1, 3, 1])[0]
        action()
        if self.rx_paused and (action != self.pause or self.rnd.random() < 0.5):
            self.resume()
        if self.rnd.random() < 0.3:
            self.refill()


def test_chaos_under_asan(launch, node, tmp_path):
    print(f"chaos seed {SEED}, {SECONDS:g} s (SLUICE_CHAOS_SEED, SLUICE_CHAOS_SECONDS)")
    rnd = random.Random(SEED)
    src = write(tmp_path / "in.pcap", mixed(REPLAY, flows=300, seed=SEED % 1000))
    run = launch(deployment(
        node,
        ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src},infinite_rx=1"},
               {"name": "out", "device": "net_null0,no-rx=1"}],
        nfs=[{"name": s, "program": prog("forward", ASAN_BUILD), "service": s,
              "replicas": 2 if s == "s2" else 1} for s in SERVICES],
        chain=[*SERVICES, "port:out"],
    ), ASAN_BUILD)
    out = lambda: port(run.client.call("stats"), "out")["tx_pkts"]  # noqa: E731
    wait_until(lambda: out() > 20_000, 30, "traffic through the chain")

    chaos = Chaos(run, rnd)
    deadline = time.monotonic() + SECONDS
    steps = 0
    while time.monotonic() < deadline:
        chaos.step()
        steps += 1
        assert run.sluiced.exited() is None, f"sluiced died after step {steps}"
        time.sleep(rnd.uniform(0.0, 0.25))  # pacing between actions
    chaos.say(f"{steps} actions, {chaos.n_refused} refused")

    # Every service gets an instance back; traffic flows again end to end.
    wait_until(chaos.refill, 30, "every service to have a running instance", interval=0.5)
    if chaos.rx_paused:
        chaos.resume()
    assert not chaos.rx_paused
    before = out()
    wait_until(lambda: out() > before + 20_000, 20, "traffic after the chaos")

    run.client.call("rx.pause")
    st = wait_drained(run, timeout=30)
    rx = sum(p["rx_pkts"] for p in st["ports"])
    assert rx == port(st, "out")["tx_pkts"] + st["drops_total"]
    drops = {k: v for k, v in st["drops"].items() if v}
    status = run.client.call("status")
    chaos.say(f"rx {rx}, out {port(st, 'out')['tx_pkts']}, drops {drops}, "
              f"rings_unstuck {status['rings_unstuck']}, nfs_hung {status['nfs_hung']}, "
              f"mbufs {status['mbufs']}")
    where = {x["name"]: {k: v for k, v in x["drops"].items() if v}
             for x in st["ports"] + st["services"]}
    assert set(drops) <= EXPLAINED, (drops, where)
    assert all(not p["drops"]["tx_full"] for p in st["ports"]), where  # net_null
    # Every buffer is back but those left out (leaked) and, at most, those
    # of transmit calls an NF was killed inside (in doubt: the driver may
    # have freed some of each burst before the kill).
    mb = wait_until(lambda: (m := run.client.call("status")["mbufs"])["in_use"]
                    - REPLAY - m["leaked"] in range(m["in_doubt"] + 1) and m, 10,
                    "every mbuf back in the pool")
    log = run.sluiced.log.read_text(errors="replace")
    # Every buffer left out is one sluiced said it left out, in the log.
    assert sum(map(int, re.findall(r": instance \d+ died inside a mempool put: the (\d+) "
                                   r"packet buffer\(s\) of its cache are left out of the "
                                   r"pool \(status mbufs\.leaked\)\n", log))) == mb["leaked"], mb
    assert sum(map(int, re.findall(r": instance \d+ \(\w+\) died inside its transmit call on "
                                   r"port out: (\d+) packet\(s\) it had handed to the driver",
                                   log))) == mb["in_doubt"], mb
    assert run.sluiced.exited() is None

    hung = {int(p) for p in re.findall(r"NF hung: instance \d+, service \w+, pid (\d+)", log)}
    run.client.call("shutdown")
    try:
        wait_until(lambda: run.sluiced.exited() is not None, 20, "sluiced to exit after shutdown")
    except AssertionError as e:
        stacks = subprocess.run(["gdb", "-p", str(run.sluiced.pid), "-batch", "-ex",
                                 "thread apply all bt"], capture_output=True, text=True,
                                timeout=60).stdout
        raise AssertionError(f"{e}; sluiced's threads:\n{stacks}") from None
    run.stop()
    logs = {p.name: p.read_text(errors="replace") for p in tmp_path.glob("run*/*.log")}
    for name, text in logs.items():
        assert_no_sanitizer_report(text, name)
    codes = {p.label: p.exited() for p in run.processes()}
    assert codes.pop("sluiced") == 0, codes
    # The NFs the launcher started: exited cleanly, or killed by us or as hung.
    for p in run.nfs:
        rc = p.exited()
        assert rc == 0 or (rc == -signal.SIGKILL and p.pid in chaos.killed | hung), \
            f"{p.label} (pid {p.pid}) ended with {rc}"


def test_nf_stopped_while_it_attaches_lets_sluiced_exit(launch, node):
    """Found by the chaos test: nf.scale cancels (SIGTERM) a replica that is
    still starting. An NF that died of it inside rte_eal_init left a reader
    on DPDK's shared memory-hotplug lock, and sluiced's rte_eal_cleanup()
    then spun on it for ever at shutdown. NFs now take SIGTERM as a stop
    request from the start: they finish attaching, then exit 0 without
    registering, and sluiced exits at once."""
    run = launch(deployment(node, ports=[{"name": "out", "device": "net_null0,no-rx=1"}],
                            nfs=[{"name": "a", "program": prog("forward"), "service": "a"}],
                            chain=["a", "port:out"]))
    for delay_ms in [0, 1, 2, 5, 10, 20, 40, 80, 160]:
        nf = subprocess.Popen([prog("forward"), "--", "--node", node, "--service", "b"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              start_new_session=True)
        wait_until(lambda nf=nf: attaching(nf.pid, node), 10, "the NF to attach", 0.001)
        time.sleep(delay_ms / 1000)  # the moment of the signal inside its start
        nf.terminate()
        err = nf.communicate(timeout=20)[1]
        # Not killed by it: stopped before registering (0), while
        # registering (1, as before), or after (0).
        assert (nf.returncode, "stopped by a signal while starting" in err) in [
            (0, True), (1, False), (0, False)], \
            f"SIGTERM {delay_ms} ms into attaching: {nf.returncode}\n{err}"
        if nf.returncode == 1:
            assert "stopped by a signal while registering" in err, err
    wait_until(lambda: [n["service"] for n in run.client.call("nf.list")] == ["a"], 5,
               "only 'a' to be left")
    run.client.call("shutdown")
    wait_until(lambda: run.sluiced.exited() is not None, 10, "sluiced to exit")
    assert run.sluiced.exited() == 0
