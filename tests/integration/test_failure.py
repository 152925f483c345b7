"""An NF dies mid-run: sluiced survives, its flows move, loss is counted,
and every packet buffer comes back."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time

import pytest
from conftest import attaching, deployment, port, prog, service, wait_drained, wait_until
from packets import mixed, write

REPLAY = 1000  # packets in the replayed capture (held by the pcap PMD)


def _start(launch, node, tmp_path, replicas, nf_txq=0, extra=()):
    src = write(tmp_path / "in.pcap", mixed(REPLAY, flows=64, seed=3))
    return launch(deployment(
        node,
        ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src},infinite_rx=1"},
               {"name": "out", "device": "net_null0,no-rx=1"}],
        nfs=[{"name": "fwd", "program": prog("forward"), "service": "fwd",
              "replicas": replicas}],
        chain=["fwd", "port:out"],
        sluiced_args=["--nf-tx-queues", str(nf_txq), *extra],
    ))


def _out(run):
    return port(run.client.call("stats"), "out")["tx_pkts"]


def _lines(run) -> list[str]:
    """sluiced's log lines without their "sluiced[node] <time>: " head."""
    return [ln.split(": ", 1)[1] for ln in run.sluiced.log.read_text().splitlines()
            if ln.startswith("sluiced[")]


def _died(nf: dict, left: int) -> str:
    return (f"NF died: instance {nf['instance']}, service {nf['service']}, pid {nf['pid']}; "
            f"its flows move to {left} remaining instance(s)")


def _lost_lines(run) -> list[str]:
    return [ln for ln in _lines(run) if ln.endswith(" packet(s) it held were lost")]


@pytest.mark.parametrize("nf_txq", [0, 4], ids=["tx-via-sluiced", "tx-by-nf"])
def test_killed_replica_flows_move_and_loss_is_counted(launch, node, tmp_path, nf_txq):
    run = _start(launch, node, tmp_path, replicas=2, nf_txq=nf_txq)
    wait_until(lambda: _out(run) > 200_000, 20, "traffic through both replicas")
    victim = run.client.call("nf.list")[0]
    events = []
    os.kill(victim["pid"], signal.SIGKILL)
    t0 = time.monotonic()
    wait_until(lambda: all(n["instance"] != victim["instance"] or n["state"] != "running"
                           for n in run.client.call("nf.list")), 2, "the death to be noticed")
    events.append(time.monotonic() - t0)
    # Traffic goes on through the survivor.
    before = _out(run)
    wait_until(lambda: _out(run) > before + 100_000, 10, "traffic after the death")
    svc = next(s for s in run.client.call("service.list") if s["name"] == "fwd")
    assert len(svc["instances"]) == 1 and svc["instances"][0] != victim["instance"]

    # Stop the source, let the rest drain: every packet is accounted for.
    run.client.call("rx.pause")
    st = wait_drained(run)
    rx, tx = port(st, "in")["rx_pkts"], port(st, "out")["tx_pkts"]
    assert rx == tx + st["drops_total"]
    lost = service(st, "fwd")["drops"]["nf_lost"]
    assert st["drops_total"] == lost, st  # the dead replica's packets, nothing else
    # ... and every buffer is back: only the capture the pcap PMD replays is
    # held, plus what sluiced counted as leaked (the dead NF's own cache,
    # only if it died inside a mempool put: then it cannot be trusted).
    mb = wait_until(lambda: (m := run.client.call("status")["mbufs"])["in_use"]
                    == REPLAY + m["leaked"] and m, 5, "every mbuf back in the pool")
    # Whether it died inside a mempool put, and how full its cache was
    # then, is down to the moment of the kill: a bound, and the log says so.
    assert mb["leaked"] <= 2 * 256, mb  # at most one cache's worth
    lines = _lines(run)
    put = [ln for ln in lines if "died inside a mempool put" in ln]
    said = [f"instance {victim['instance']} died inside a mempool put: the {mb['leaked']} "
            "packet buffer(s) of its cache are left out of the pool (status mbufs.leaked)"]
    assert put == said if mb["leaked"] else put in ([], said), (mb, put)
    assert run.sluiced.exited() is None
    assert _died(victim, 1) in lines, lines
    # What it held (a timing matter: how full its rings were) is what sluiced
    # counted as nf_lost, and said so, once.
    assert _lost_lines(run) == ([f"instance {victim['instance']} (fwd): {lost} packet(s) it "
                                 "held were lost"] if lost else []), (lost, _lost_lines(run))


def test_hung_replica_is_killed_and_handled_as_dead(launch, node, tmp_path):
    """An NF that stops looping while not asleep (frozen under traffic) is
    hung: after --nf-hang-ms sluiced kills it, and from there it is a dead
    NF: its flows move to the survivor, its packets are counted lost, every
    buffer comes back. An NF frozen while asleep (idle) is left alone."""
    run = _start(launch, node, tmp_path, replicas=2, extra=["--nf-hang-ms", "300"])
    wait_until(lambda: _out(run) > 200_000, 20, "traffic through both replicas")
    victim = run.client.call("nf.list")[0]
    proc = next(p for p in run.nfs if p.pid == victim["pid"])
    os.kill(victim["pid"], signal.SIGSTOP)
    t0 = time.monotonic()
    wait_until(lambda: all(n["instance"] != victim["instance"]
                           for n in run.client.call("nf.list")), 5, "the hung NF to be gone")
    assert time.monotonic() - t0 >= 0.3  # not before its time
    assert wait_until(lambda: proc.exited(), 5, "the hung NF to exit") == -signal.SIGKILL
    log = run.sluiced.log.read_text()
    assert (f"NF hung: instance {victim['instance']}, service fwd, pid {victim['pid']}: "
            "not one loop in 300 ms with work to do; killing it (sluiced --nf-hang-ms; 0 never "
            "does)") in _lines(run), log
    assert _died(victim, 1) in _lines(run), log
    assert run.client.call("status")["nfs_hung"] == 1
    before = _out(run)
    wait_until(lambda: _out(run) > before + 100_000, 10, "traffic through the survivor")

    run.client.call("rx.pause")
    st = wait_drained(run)
    assert port(st, "in")["rx_pkts"] == port(st, "out")["tx_pkts"] + st["drops_total"]
    assert st["drops_total"] == service(st, "fwd")["drops"]["nf_lost"], st
    wait_until(lambda: (m := run.client.call("status")["mbufs"])["in_use"]
               == REPLAY + m["leaked"], 5, "every mbuf back in the pool")

    # Idle now: the survivor goes to sleep; frozen asleep, it is not hung.
    (alive,) = run.client.call("nf.list")
    sleeps = lambda: run.client.call("stats")["nfs"][0]["sleeps"]  # noqa: E731
    was = sleeps()
    wait_until(lambda: sleeps() > was, 5, "the NF to sleep")
    os.kill(alive["pid"], signal.SIGSTOP)
    try:
        time.sleep(1.0)
        assert [n["pid"] for n in run.client.call("nf.list")] == [alive["pid"]]
    finally:
        os.kill(alive["pid"], signal.SIGCONT)
    assert run.sluiced.log.read_text().count("NF hung:") == 1


def test_killed_last_instance_drops_at_ingress_and_recovers(launch, node, tmp_path):
    run = _start(launch, node, tmp_path, replicas=1)
    wait_until(lambda: _out(run) > 50_000, 20, "traffic")
    nf = run.client.call("nf.list")[0]
    os.kill(nf["pid"], signal.SIGKILL)
    wait_until(lambda: not run.client.call("nf.list"), 2, "the dead NF to be reclaimed")
    dropped = lambda: port(run.client.call("stats"), "in")["drops"]["no_instance"]  # noqa: E731
    first = dropped()
    wait_until(lambda: dropped() > first + 10_000, 10, "no_instance drops at the ingress port")
    assert run.client.call("status")["n_nfs"] == 0
    run.client.call("rx.pause")
    st = wait_drained(run)
    assert port(st, "in")["rx_pkts"] == port(st, "out")["tx_pkts"] + st["drops_total"]
    wait_until(lambda: run.client.call("status")["mbufs"]["in_use"] == REPLAY, 5,
               "every mbuf back in the pool")


def _killed_at(launch, node, tmp_path, at: str, chain: list[str], extra=()):
    """Runs `chain` (one forward NF per service, the first "a"), then a
    replica of a that kills itself at `at` (libsluice's test hook
    SLUICE_TEST_KILL_AT): with round robin, half of a's packets go through
    it. Once it is reclaimed and traffic flows again, pauses RX and
    returns the run and its drained stats, every packet read sent or
    dropped."""
    src = write(tmp_path / "in.pcap", mixed(REPLAY, flows=64, seed=3))
    run = launch(deployment(
        node,
        ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src},infinite_rx=1"},
               {"name": "out", "device": "net_null0,no-rx=1"}],
        nfs=[{"name": n, "program": prog("forward"), "service": n} for n in chain[:-1]],
        chain=chain, sluiced_args=list(extra)))
    wait_until(lambda: _out(run) > 20_000, 20, "traffic")
    run.client.call("lb.set", service="a", mode="rr")
    victim = subprocess.Popen(
        run.nf_argv(run.dep.nfs[0], prog("forward", hooks=True)),
        env={**os.environ, "SLUICE_TEST_KILL_AT": at},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        err = victim.communicate(timeout=20)[1]
    finally:
        victim.kill()
    assert victim.returncode == -signal.SIGKILL, err
    assert err.splitlines()[-1] == (f"{prog('forward', hooks=True)}: SLUICE_TEST_KILL_AT reached: "
                                    "killing myself"), err
    wait_until(lambda: len(run.client.call("nf.list")) == len(chain) - 1, 5,
               "the dead replica to be reclaimed")
    before = _out(run)
    wait_until(lambda: _out(run) > before + 20_000, 10, "traffic after the death")
    run.client.call("rx.pause")
    st = wait_drained(run)
    assert port(st, "in")["rx_pkts"] == port(st, "out")["tx_pkts"] + st["drops_total"]
    return run, st


@pytest.mark.parametrize("at,chain", [
    ("handoff:300", ["a", "b", "port:out"]),  # into b's rx ring
    ("handoff:300", ["a", "port:out"]),       # into its own tx ring
    ("take:300", ["a", "b", "port:out"]),     # taken from its rx ring
])
def test_killed_inside_a_handoff_every_buffer_comes_back(launch, node, tmp_path, at, chain):
    """An NF killed at the worst moment of a hand-off (libsluice's test hook
    SLUICE_TEST_KILL_AT): a run ready for the next hop and not enqueued
    yet, or a burst taken from its ring and not tagged as its own yet.
    Every packet it held is found, freed and counted as nf_lost: the
    packets balance exactly and every buffer is back in the pool."""
    run, st = _killed_at(launch, node, tmp_path, at, chain)
    lost = service(st, "a")["drops"]["nf_lost"]
    assert lost > 0 and st["drops_total"] == lost, st
    mb = wait_until(lambda: (m := run.client.call("status")["mbufs"])["in_use"] == REPLAY
                    and m, 5, "every mbuf back in the pool")
    assert mb["leaked"] == 0, mb
    (said,) = _lost_lines(run)
    assert re.fullmatch(rf"instance \d+ \(a\): {lost} packet\(s\) it held were lost", said), said


@pytest.mark.parametrize("at", ["tx:300", "sent:300"])
def test_killed_inside_its_own_transmit_call_every_packet_is_counted(launch, node, tmp_path,
                                                                      at):
    """An NF that transmits on its own TX queue (--nf-tx-queues) killed
    inside the driver's transmit call (tx:N: the call written down, not
    made) or just after it returned (sent:N: before the NF counted what
    left). After the call sluiced finishes the NF's count: nothing is lost.
    Inside it the burst's fate is unknown: it counts as nf_lost and as
    buffers in doubt, said in the log; here none had left, so exactly that
    many buffers are out of the pool."""
    run, st = _killed_at(launch, node, tmp_path, at, ["a", "port:out"],
                         ["--nf-tx-queues", "4"])
    # net_null has queues to spare: each NF of a transmits on its own.
    assert [p["tx_queues"] for p in run.client.call("port.list") if p["name"] == "out"] == [5]
    lost = service(st, "a")["drops"]["nf_lost"]
    assert st["drops_total"] == lost, st
    held = [int(m.group(1)) for ln in _lost_lines(run)
            if (m := re.fullmatch(r"instance \d+ \(a\): (\d+) packet\(s\) it held were lost",
                                  ln))]
    doubt = [ln for ln in _lines(run) if "died inside its transmit call" in ln]
    if at.startswith("sent:"):
        assert doubt == [] and lost == sum(held), (doubt, held, st)
        mb = wait_until(lambda: (m := run.client.call("status")["mbufs"])["in_use"] == REPLAY
                        and m, 5, "every mbuf back in the pool")
        assert mb["in_doubt"] == mb["leaked"] == 0, mb
        return
    (said,) = doubt
    n = lost - sum(held)
    assert 1 <= n <= 32, (lost, held)
    assert re.fullmatch(
        rf"instance \d+ \(a\) died inside its transmit call on port out: {n} packet\(s\) "
        r"it had handed to the driver may have left or not; counted as nf_lost, and their "
        r"buffers, those the driver had not freed yet, stay out of the pool "
        r"\(status mbufs\.in_doubt\)", said), said
    mb = wait_until(lambda: (m := run.client.call("status")["mbufs"])["in_use"] == REPLAY + n
                    and m, 5, "every mbuf but the burst in doubt back in the pool")
    assert mb["in_doubt"] == n and mb["leaked"] == 0, mb


@pytest.mark.parametrize("nf_txq", [0, 4], ids=["tx-via-sluiced", "tx-by-nf"])
def test_clean_stop_of_a_replica_loses_nothing(launch, node, tmp_path, nf_txq):
    """nf.stop: the NF deregisters, drains its ring and exits; no packet lost
    (and what it sent on its own TX queue still counts for the port)."""
    run = _start(launch, node, tmp_path, replicas=2, nf_txq=nf_txq)
    wait_until(lambda: _out(run) > 100_000, 20, "traffic")
    nfs = run.client.call("nf.list")
    # Each NF frees through a packet-buffer cache of its own: sluiced hands
    # out the caches of lcore ids its EAL does not use from the top down
    # (Debian's DPDK has RTE_MAX_LCORE 128); which replica registered first
    # is a race.
    caches = [n["mbuf_cache"]["lcore"] for n in nfs]
    assert sorted(caches) == [126, 127], nfs
    victim = nfs[0]
    run.client.call("nf.stop", instance=victim["instance"])
    wait_until(lambda: len(run.client.call("nf.list")) == 1, 5, "the replica to leave")
    run.client.call("rx.pause")
    st = wait_drained(run)
    assert st["drops_total"] == 0
    assert port(st, "in")["rx_pkts"] == port(st, "out")["tx_pkts"]
    # The leaver's cache went back to the pool: only the replayed capture
    # is held (a cache's buffers count as free), nothing leaked.
    mb = wait_until(lambda: (m := run.client.call("status")["mbufs"])["in_use"] == REPLAY
                    and m, 5, "every mbuf back in the pool")
    assert mb["leaked"] == 0, mb


def test_answers_to_processes_gone_while_registering_come_back(launch, node):
    """A process that dies while it waits for its registration answer never
    returns the message: sluiced gives it back to the pool (counted in
    status.messages.reclaimed), refused or registered, so crash-looping NFs
    cannot exhaust it."""
    import subprocess

    run = launch(deployment(node, ports=[],
                            nfs=[{"name": "a", "program": prog("forward"), "service": "a"}],
                            chain=["a", "drop"]))
    before = run.client.call("status")["messages"]
    assert before["free"] == before["size"] == 1023 and before["reclaimed"] == 0, before

    def waiting_nf() -> subprocess.Popen:
        """An NF that has posted its registration to a stopped sluiced."""
        os.kill(run.sluiced.pid, signal.SIGSTOP)
        nf = subprocess.Popen([prog("forward"), "--", "--node", node, "--service", "b"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        # Attaching asks the stopped primary for its vdevs, which times
        # out (5 s); then it posts its registration and waits.
        deadline = time.monotonic() + 30
        assert nf.stderr is not None
        line = ""
        while "Failed to request vdev from primary" not in line:
            if time.monotonic() > deadline or (not line and nf.poll() is not None):
                os.kill(run.sluiced.pid, signal.SIGCONT)
                nf.kill()
                raise AssertionError(f"the NF never got past attaching ({nf.poll()})")
            line = nf.stderr.readline()
        time.sleep(0.5)
        return nf

    def reclaimed(n: int) -> dict:
        m = wait_until(lambda: (m := run.client.call("status")["messages"])["reclaimed"] == n
                       and m, 10, f"{n} message(s) given back")
        assert m["free"] == m["size"], m
        assert [x["service"] for x in run.client.call("nf.list")] == ["a"]
        return m

    # Dead before sluiced reads its registration: refused, then given back.
    nf = waiting_nf()
    nf.kill()
    nf.wait(10)
    os.kill(run.sluiced.pid, signal.SIGCONT)
    reclaimed(1)
    assert (f"registration refused: cannot read /proc/{nf.pid}/maps (No such file or "
            "directory): not the NF that asked (another pid namespace? run containers with "
            "--pid host)") in _lines(run), _lines(run)
    # Registered, but dead before it read the answer: given back with the
    # rest of what the dead instance held.
    nf = waiting_nf()
    os.kill(nf.pid, signal.SIGSTOP)
    os.kill(run.sluiced.pid, signal.SIGCONT)
    wait_until(lambda: any(x["service"] == "b" for x in run.client.call("nf.list")), 10,
               "the frozen NF registered")
    nf.kill()
    nf.wait(10)
    reclaimed(2)
    assert f"pid {nf.pid}: 1 message(s) it left unreturned given back" in _lines(run), \
        _lines(run)


def test_nf_killed_while_it_attaches_lets_sluiced_exit(launch, node):
    """NFs SIGKILLed at moments inside DPDK's start-up can leave a reader on
    DPDK's shared memory lock, and sluiced's rte_eal_cleanup() then spun on
    it for ever at shutdown. sluiced gives the clean-up a few seconds, then
    says why, removes its hugepage and runtime files itself (the node
    fixture checks none is left) and exits 0."""
    run = launch(deployment(node, ports=[{"name": "out", "device": "net_null0,no-rx=1"}],
                            nfs=[{"name": "a", "program": prog("forward"), "service": "a"}],
                            chain=["a", "port:out"]))
    for delay_ms in [0, 1, 2, 3, 5, 7, 10, 15, 20, 30, 40, 60, 80, 120, 160]:
        nf = subprocess.Popen([prog("forward"), "--", "--node", node, "--service", "b"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
        wait_until(lambda nf=nf: attaching(nf.pid, node), 10, "the NF to attach", 0.001)
        time.sleep(delay_ms / 1000)  # the moment of the kill inside its start
        nf.kill()
        nf.wait(timeout=20)
    wait_until(lambda: [n["service"] for n in run.client.call("nf.list")] == ["a"], 5,
               "only 'a' to be left")
    run.client.call("shutdown")
    wait_until(lambda: run.sluiced.exited() is not None, 15, "sluiced to exit")
    assert run.sluiced.exited() == 0
