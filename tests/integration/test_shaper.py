"""sluice-shaper against real traffic: iperf3 sends UDP at 12 Mbit/s from
one network namespace to another through sluiced's TAP ports, bridged
through the shaper, whose class for iperf3's data (UDP to port 5201) has
an srTCM of 4 Mbit/s that drops red packets. What the server receives is
within 10 % of 4 Mbit/s (the meter counts whole frames, iperf3 its
payload); a Message then doubles the rate at run time and the next run
gets 8 Mbit/s. iperf3's TCP control connection is not metered, and the
shaper's counters add up to what went through."""

from __future__ import annotations

import json
import re
import subprocess

import netns
import pytest
from conftest import (
    ASAN_BUILD,
    assert_no_sanitizer_report,
    build_dir,
    deployment,
    needs_asan,
    prog,
    service,
    wait_until,
)
from netns import sh

CLIENT, SERVER = "10.66.3.1", "10.66.3.2"
CIR = 4_000_000  # bits/s
SEND = "12M"
LEN = 1200  # UDP payload bytes
FRAME = 14 + 20 + 8 + LEN
SECONDS = 4


@pytest.fixture
def namespaces():
    names = [f"sls{netns.tag()}{x}" for x in "st"]  # client, server
    with netns.namespaces(names):
        yield names


def _wire(namespaces: list[str], ifs: list[str]) -> None:
    netns.wire_pair(namespaces, ifs, (CLIENT, SERVER))


def _iperf(namespaces: list[str], streams: int = 1) -> tuple[float, int, int, list[float]]:
    """One iperf3 UDP run of streams streams, client to server: the rate
    the server received (bits/s of payload), datagrams sent, datagrams
    received, and each stream's received rate."""
    server = subprocess.Popen(
        ["ip", "netns", "exec", namespaces[1], "iperf3", "-s", "-B", SERVER, "-1", "-J"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: SERVER in sh("ip", "netns", "exec", namespaces[1], "ss", "-Htln",
                                        "sport = :5201", check=False).stdout,
                   10, "iperf3 -s to listen")
        r = sh("ip", "netns", "exec", namespaces[0], "iperf3", "-c", SERVER, "-u", "-b", SEND,
               "-l", str(LEN), "-t", str(SECONDS), "-P", str(streams), "-J",
               "--get-server-output",
               check=False, timeout=SECONDS + 30)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr
        server.wait(10)
    finally:
        if server.poll() is None:
            server.terminate()
            server.wait(10)
    res = json.loads(r.stdout)
    assert "server_output_json" in res, sorted(res)
    srv = res["server_output_json"]["end"]["sum"]
    got = srv["packets"] - srv["lost_packets"]
    each = [(u["packets"] - u["lost_packets"]) * LEN * 8 / u["seconds"]
            for u in (st["udp"] for st in res["server_output_json"]["end"]["streams"])]
    return got * LEN * 8 / srv["seconds"], res["end"]["sum"]["packets"], got, each


@pytest.mark.parametrize("asan", [False, pytest.param(True, marks=needs_asan)],
                         ids=["release", "asan"])
def test_iperf3_udp_is_limited_to_the_class_rate(launch, node, namespaces, tmp_path, asan):
    build = ASAN_BUILD if asan else build_dir()
    ifs = [f"{ns}i" for ns in namespaces]
    cfg = tmp_path / "shaper.json"
    cfg.write_text(json.dumps({"classes": [
        {"name": "iperf-udp", "match": {"proto": "udp", "dport": 5201},
         "cir": CIR, "cbs": 20000, "ebs": 0, "red": "drop"}]}))
    run = launch(deployment(
        node,
        ports=[{"name": "left", "device": f"net_tap0,iface={ifs[0]}"},
               {"name": "right", "device": f"net_tap1,iface={ifs[1]}"}],
        nfs=[{"name": "sh", "program": prog("shaper", build), "service": "shaper",
              "args": ["--config", str(cfg), "--stats-ms", "0"]},
             {"name": "br", "program": prog("forward", build), "service": "bridge",
              "args": ["--bridge", "left,right"]}],
        chain=["shaper", "bridge", "drop"]), build)
    shp = next(p for p in run.nfs if p.label.startswith("sh"))
    _wire(namespaces, ifs)
    rate, sent, got, _each = _iperf(namespaces)
    expect = CIR * LEN / FRAME  # the meter counts frames, iperf3 payload
    print(f"sent {sent} datagrams at {SEND}, received {rate / 1e6:.3f} Mbit/s "
          f"(class rate {CIR / 1e6} Mbit/s of frames = {expect / 1e6:.3f} of payload)")
    assert sent * LEN * 8 / SECONDS > 2.5 * CIR  # it did send well above the rate
    assert abs(rate - expect) <= 0.10 * expect, (rate, expect)
    # The rate at run time: a Message to the shaper doubles it.
    assert run.client.call("flow.request", type="message", service="shaper", key="rate",
                           value=f"iperf-udp cir={2 * CIR}") == {"applied": 1}
    wait_until(lambda: f"shaper-message: key=rate value=iperf-udp cir={2 * CIR} applied\n"
               in shp.log.read_text(), 10, "the shaper to take the new rate")
    rate2, sent2, got2, _each = _iperf(namespaces)
    print(f"then received {rate2 / 1e6:.3f} Mbit/s (class rate {2 * CIR / 1e6} Mbit/s)")
    assert abs(rate2 - 2 * expect) <= 0.10 * 2 * expect, (rate2, 2 * expect)
    st = run.client.call("stats")
    drops = service(st, "shaper")["drops"]["nf_verdict"]
    run.stop()
    assert shp.exited() == 0
    log = shp.log.read_text()
    assert_no_sanitizer_report(log, shp.log.name)
    m = re.search(r"shaper-class: class=1 name=iperf-udp per=class meter=srtcm cir=8000000 "
                  r"cbs=20000 ebs=0 green=(\d+) green_bytes=(\d+) yellow=0 yellow_bytes=0 "
                  r"red=(\d+) red_bytes=(\d+) dropped=(\d+) remarked=0 flows_full=0\n", log)
    assert m, log
    green, green_bytes, red, red_bytes, dropped = map(int, m.groups())
    sent, got = sent + sent2, got + got2
    assert red == dropped == drops  # sluiced counted the shaper's drops
    # iperf3's datagrams, each metered once (a few more: its last ones)
    assert green + red >= sent
    # full-size datagrams but for iperf3's few small ones (its UDP hello)
    assert (green + red - 4) * FRAME <= green_bytes + red_bytes <= (green + red) * FRAME
    # what passed: the rates over the two runs, and two bursts
    assert green_bytes <= 3 * (CIR / 8) * (SECONDS + 1.5) + 2 * 20000
    assert green >= got
    m = re.search(r"shaper-stats: reason=exit .* packets=(\d+) .* classes=1 non_ip=(\d+) "
                  r"unclassified=(\d+) dropped=(\d+) remarked=0 ", log)
    assert m, log
    packets, non_ip, unclassified, total_dropped = map(int, m.groups())
    assert total_dropped == dropped
    assert unclassified > 0  # iperf3's TCP control connection, not metered
    assert packets == green + red + non_ip + unclassified


def test_iperf3_udp_streams_are_limited_each_per_flow(launch, node, namespaces, tmp_path):
    """per: flow: two iperf3 UDP streams (two source ports), each limited
    to the class's 2 Mbit/s on its own meter."""
    ifs = [f"{ns}i" for ns in namespaces]
    cfg = tmp_path / "shaper.json"
    cfg.write_text(json.dumps({"classes": [
        {"name": "per-stream", "match": {"proto": "udp", "dport": 5201}, "per": "flow",
         "cir": CIR // 2, "cbs": 20000, "ebs": 0}]}))
    run = launch(deployment(
        node,
        ports=[{"name": "left", "device": f"net_tap0,iface={ifs[0]}"},
               {"name": "right", "device": f"net_tap1,iface={ifs[1]}"}],
        nfs=[{"name": "sh", "program": prog("shaper"), "service": "shaper",
              "args": ["--config", str(cfg), "--stats-ms", "0", "--flows", "64"]},
             {"name": "br", "program": prog("forward"), "service": "bridge",
              "args": ["--bridge", "left,right"]}],
        chain=["shaper", "bridge", "drop"]))
    shp = next(p for p in run.nfs if p.label.startswith("sh"))
    _wire(namespaces, ifs)
    _rate, _sent, _got, each = _iperf(namespaces, streams=2)
    expect = CIR / 2 * LEN / FRAME
    print(f"received {[round(r / 1e6, 3) for r in each]} Mbit/s, {expect / 1e6:.3f} each "
          "expected")
    assert len(each) == 2
    for r in each:
        assert abs(r - expect) <= 0.10 * expect, (each, expect)
    run.stop()
    log = shp.log.read_text()
    m = re.search(r" flows=(\d+) flows_capacity=64 flows_created=(\d+) flows_evicted=0 "
                  r"flows_full=0\n", log)
    assert m, log
    assert int(m[2]) >= 2  # the two streams (and iperf3's hello datagrams' flows)
