"""sluice-vpn against scapy's own IPsec (scapy.layers.ipsec): what Sluice
encrypts scapy decrypts and the reverse, with replayed, tampered, old and
unknown packets refused and counted; on net_pcap ports, with the release
and the ASan+UBSan builds. (test_vpn_gateways.py: real TCP between two
Sluice gateways.)"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import (
    ASAN_BUILD,
    assert_no_sanitizer_report,
    build_dir,
    deployment,
    needs_asan,
    port,
    prog,
    service,
    wait_drained,
    wait_until,
)
from packets import read, write
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.ipsec import ESP, SecurityAssociation
from scapy.layers.l2 import Ether
from scapy.packet import Raw

# Sluice's outbound SA (scapy decrypts) and inbound SA (scapy encrypts).
K_OUT = bytes.fromhex("000102030405060708090a0b0c0d0e0fa0a1a2a3")
K_IN = bytes.fromhex("202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
                     "c0c1c2c3")
LOCAL, REMOTE = "10.64.9.1", "10.64.9.2"
SA_FILE = f"""\
# sluice's side of the tunnel to scapy
sa out spi 0x1001 local {LOCAL} remote {REMOTE} cipher aes128-gcm16 key 0x{K_OUT.hex()}
sa in spi 0x2001 local {LOCAL} remote {REMOTE} cipher aes256-gcm16 key 0x{K_IN.hex()}
policy src 10.64.1.0/24 dst 10.64.2.0/24 sa 0x1001
policy src 2001:db8:1::/48 dst 2001:db8:2::/48 sa 0x1001
"""
ETH = Ether(src="02:64:00:00:00:01", dst="02:64:00:00:00:02")


def scapy_out_sa() -> SecurityAssociation:
    """Decrypts what sluice's SA 0x1001 sends."""
    return SecurityAssociation(ESP, spi=0x1001, crypt_algo="AES-GCM", crypt_key=K_OUT,
                               tunnel_header=IP(src=LOCAL, dst=REMOTE))


def scapy_in_sa(spi: int = 0x2001) -> SecurityAssociation:
    """Encrypts for sluice's SA 0x2001 (32-bit sequence numbers: with an
    ESN a packet older than the window is taken for one of the next 2^32
    and fails its ICV, RFC 4303 A2.2; test_vpn.c checks ESN against
    scapy)."""
    return SecurityAssociation(ESP, spi=spi, crypt_algo="AES-GCM", crypt_key=K_IN,
                               tunnel_header=IP(src=REMOTE, dst=LOCAL))


V6_PLAIN = 2  # plain_packets()'s last ones are IPv6


def plain_packets() -> list[IP | IPv6]:
    """Inner packets from 10.64.1.0/24 to 10.64.2.0/24 of every length
    modulo 4 (so every pad length), TCP and UDP, up to 1400 bytes; then
    V6_PLAIN from 2001:db8:1::/48 to 2001:db8:2::/48."""
    out: list[IP | IPv6] = []
    for i in range(24):
        size = 28 + (i * 61) % 1372
        l4 = TCP(sport=40000 + i, dport=80, flags="PA") if i % 3 == 0 else UDP(
            sport=30000 + i, dport=53)
        pkt = IP(src=f"10.64.1.{1 + i % 7}", dst=f"10.64.2.{1 + i % 5}", id=i, tos=i * 4) / l4
        body = (b"SECRET-%02d-" % i) * 200
        out.append(IP(bytes(pkt / Raw(body[:max(0, size - len(pkt))]))))
    for i in range(V6_PLAIN):
        out.append(IPv6(bytes(IPv6(src=f"2001:db8:1::{i + 1}", dst="2001:db8:2::1", tc=0x20 + i)
                              / UDP(sport=5000 + i, dport=53) / Raw(b"SECRET-v6-" * (5 + i)))))
    return out


def reply_packets(n: int) -> list[IP]:
    return [IP(bytes(IP(src=f"10.64.2.{1 + i % 5}", dst="10.64.1.1", id=1000 + i)
                     / UDP(sport=53, dport=30000 + i) / Raw((b"REPLY-%02d-" % i) * (3 + 7 * i))))
            for i in range(n)]


def esp_frame(sa: SecurityAssociation, inner: IP, seq: int) -> bytes:
    return bytes(ETH / sa.encrypt(inner, seq_num=seq))


def counters(log: str) -> dict[str, int]:
    m = re.search(r"^vpn-stats: reason=exit (.*)$", log, re.M)
    assert m, log
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)\b(?!\.)", m.group(1))}


@pytest.mark.parametrize("asan", [False, pytest.param(True, marks=needs_asan)],
                         ids=["release", "asan"])
def test_interop_with_scapy(launch, node, tmp_path: Path, asan: bool) -> None:
    build = ASAN_BUILD if asan else build_dir()
    plain = plain_packets()
    bypass = ETH / IP(src="10.64.3.1", dst="10.64.4.1") / UDP(sport=1, dport=2) / Raw(b"clear")
    replies = reply_packets(12)
    reply6 = IPv6(bytes(IPv6(src="2001:db8:2::1", dst="2001:db8:1::1") / UDP(sport=53, dport=5000)
                        / Raw(b"REPLY-v6")))
    sa_in = scapy_in_sa()
    esp = [esp_frame(sa_in, replies[i], i + 1) for i in range(10)]
    tampered = bytearray(esp_frame(sa_in, replies[10], 11))
    tampered[70] ^= 0x10  # a ciphertext byte
    frames = ([bytes(ETH / p) for p in plain] + [bytes(bypass)] + esp
              + [esp[2],  # replayed
                 bytes(tampered),
                 esp_frame(scapy_in_sa(0x3003), replies[0], 1),  # unknown SPI
                 esp_frame(sa_in, replies[10], 300),
                 esp_frame(sa_in, replies[11], 100),  # 300 - 100 >= 128: too old
                 esp_frame(sa_in, replies[11], 250),
                 esp_frame(sa_in, reply6, 301)])
    accepted = replies[:10] + [replies[10], replies[11], reply6]
    (tmp_path / "sa.conf").write_text(SA_FILE)
    src, dst = write(tmp_path / "in.pcap", frames), tmp_path / "out.pcap"
    run = launch(deployment(
        node,
        ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src}"},
               {"name": "out", "device": f"net_pcap1,tx_pcap={dst}"}],
        nfs=[{"name": "vpn", "program": prog("vpn", build), "service": "vpn",
              "args": ["--sa", str(tmp_path / "sa.conf")]}],
        chain=["vpn", "port:out"]), build=build)
    wait_until(lambda: port(run.client.call("stats"), "in")["rx_pkts"] == len(frames), 30,
               "the capture to be read")
    st = wait_drained(run)
    assert service(st, "vpn")["drops"]["nf_verdict"] == 4, st
    assert st["drops_total"] == 4, st
    run.stop()
    out = read(dst)
    assert len(out) == len(plain) + 1 + len(accepted)
    dec = scapy_out_sa()
    for i, (p, frame) in enumerate(zip(plain, out, strict=False)):
        f = Ether(frame)
        assert f.src == ETH.src and f.dst == ETH.dst, i
        assert f[IP].proto == 50 and (f[IP].src, f[IP].dst) == (LOCAL, REMOTE), f.summary()
        tos = p.tos if isinstance(p, IP) else p.tc  # the inner TOS; ids from 0
        assert f[IP].tos == tos and f[IP].id == i
        assert f[ESP].spi == 0x1001 and f[ESP].seq == i + 1
        assert b"SECRET" not in frame
        assert len(frame) == 14 + 20 + 8 + 8 + len(p) + (-(len(p) + 2) % 4) + 2 + 16
        assert bytes(dec.decrypt(f[IP])) == bytes(p), i
    assert out[len(plain)] == bytes(bypass)
    for r, frame in zip(accepted, out[len(plain) + 1:], strict=True):
        assert frame == bytes(ETH / r)
    log = next(p for p in run.nfs if p.label == "vpn").log.read_text()
    c = counters(log)
    assert c["packets"] == len(frames)
    assert {k: c[k] for k in ("encrypted", "decrypted", "bypass", "dropped", "replay",
                              "auth_failed", "unknown_spi", "outside_window", "malformed",
                              "no_sa")} == {
        "encrypted": len(plain), "decrypted": len(accepted), "bypass": 1, "dropped": 4,
        "replay": 1, "auth_failed": 1, "unknown_spi": 1, "outside_window": 1, "malformed": 0,
        "no_sa": 0}, log
    assert f"vpn-sa: dir=out spi=0x1001 line=2 packets={len(plain)} " in log
    assert f"vpn-policy: line=4 sa=0x1001 packets={len(plain) - V6_PLAIN}\n" in log
    assert f"vpn-policy: line=5 sa=0x1001 packets={V6_PLAIN}\n" in log
    assert re.search(rf"vpn-sa: dir=in spi=0x2001 line=3 packets={len(accepted)} bytes=\d+ "
                     r"seq=301\n", log), log
    if asan:
        assert_no_sanitizer_report(log, "sluice-vpn's log")



@pytest.fixture
def sender_ns() -> Iterator[str]:
    """A namespace (no IPv6: it sends nothing of its own) to hold the TAP
    port the test writes frames into."""
    ns = f"slv{os.getpid() % 100000}r"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    for conf in ("all", "default"):
        subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-q", "-w",
                        f"net.ipv6.conf.{conf}.disable_ipv6=1"], check=True)
    yield ns
    subprocess.run(["ip", "netns", "del", ns], check=False)


def test_bad_file_and_reload(launch, node, sender_ns: str, tmp_path: Path) -> None:
    """A bad SA file: exit status 1 and one line naming the line. SIGHUP
    with a bad file keeps the SAs (the next packet still decrypts); with a
    good one the unchanged SAs keep their replay windows (a replay stays
    refused)."""
    conf = tmp_path / "sa.conf"
    conf.write_text(SA_FILE)
    tap = f"{sender_ns}i"
    run = launch(deployment(
        node,
        ports=[{"name": "in", "device": f"net_tap0,iface={tap}"},
               {"name": "out", "device": "net_null0,no-rx=1"}],
        nfs=[{"name": "vpn", "program": prog("vpn"), "service": "vpn",
              "args": ["--sa", str(conf)]}],
        chain=["vpn", "port:out"]))
    subprocess.run(["ip", "link", "set", tap, "netns", sender_ns], check=True)
    subprocess.run(["ip", "netns", "exec", sender_ns, "sysctl", "-q", "-w",
                    f"net.ipv6.conf.{tap}.disable_ipv6=1"], check=True)
    subprocess.run(["ip", "-n", sender_ns, "link", "set", tap, "up"], check=True)
    frames = [esp_frame(scapy_in_sa(), r, i + 1) for i, r in enumerate(reply_packets(3))]

    def seen() -> tuple[int, int]:
        v = service(run.client.call("stats"), "vpn")
        return v["rx_pkts"], v["drops"]["nf_verdict"]

    def send(frame: bytes, rx: int, drops: int) -> None:
        (tmp_path / "f.bin").write_bytes(frame)
        subprocess.run(["ip", "netns", "exec", sender_ns, sys.executable, "-c",
                        "import sys; from scapy.all import sendp, Raw; "
                        "sendp(Raw(open(sys.argv[1], 'rb').read()), iface=sys.argv[2], "
                        "verbose=False)", str(tmp_path / "f.bin"), tap], check=True, timeout=30)
        # rx: at least (the TAP may have carried a packet of Linux's own
        # before it moved into the namespace); drops: exactly.
        try:
            wait_until(lambda: seen()[0] >= base[0] + rx and seen()[1] == base[1] + drops, 10,
                       "the vpn's counters")
        except AssertionError:
            raise AssertionError(f"(rx, dropped) {seen()}, not {(rx, drops)} + {base}") from None

    base = seen()
    send(frames[0], 1, 0)
    bad = tmp_path / "bad.conf"
    bad.write_text(SA_FILE.replace("cipher aes256-gcm16", "cipher aes-cbc"))
    r = subprocess.run([prog("vpn"), "--", "--node", node, "--service", "vpn2", "--sa",
                        str(bad)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 1, r.stdout + r.stderr
    assert (f"sluice-vpn: {bad}:3: sa: cipher 'aes-cbc': use aes128-gcm16 or aes256-gcm16\n"
            in r.stdout + r.stderr), r.stdout + r.stderr
    vpn = next(p for p in run.nfs if p.label == "vpn")
    conf.write_text(SA_FILE.replace("key 0x", "key 0xzz", 1))
    os.kill(vpn.pid, signal.SIGHUP)
    wait_until(lambda: "reload failed" in vpn.log.read_text(), 10, "the reload to fail")
    assert (f"sluice-vpn: reload failed, keeping the 2 current SAs and 2 policies: {conf}:2: "
            "sa: key for aes128-gcm16 must be 20 bytes" in vpn.log.read_text())
    send(frames[1], 2, 0)  # the SAs are still there
    conf.write_text(SA_FILE + "sa in spi 0x2002 local 10.64.9.1 remote 10.64.9.2 cipher "
                    f"aes128-gcm16 key 0x{K_OUT.hex()}\n")
    os.kill(vpn.pid, signal.SIGHUP)
    wait_until(lambda: "2 SAs kept their sequence numbers" in vpn.log.read_text(), 10,
               "the reload")
    assert "sluice-vpn: reloaded 3 SAs (2 in, 1 out) and 2 policies" in vpn.log.read_text()
    send(frames[1], 3, 1)  # still a replay
    send(frames[2], 4, 1)
    run.stop()
    c = counters(vpn.log.read_text())
    assert (c["decrypted"], c["replay"], c["dropped"]) == (3, 1, 1), vpn.log.read_text()


def hostile_frames(seed: int) -> list[bytes]:
    """ESP frames of the test's SA mutated and cut at random, ESP inside
    VLAN tags, and random bytes that claim to be ESP."""
    rnd = random.Random(seed)
    sa = scapy_in_sa()
    good = [esp_frame(sa, r, i + 1) for i, r in enumerate(reply_packets(20))]  # one mbuf each
    out = []
    for i in range(3000):
        f = bytearray(rnd.choice(good))
        for _ in range(rnd.randrange(1, 5)):
            f[rnd.randrange(14, len(f))] = rnd.randrange(256)
        if i % 3 == 0:
            f = f[:rnd.randrange(14, len(f) + 1)]
        if i % 7 == 0:  # one or two VLAN tags
            f[12:12] = b"\x81\x00\x00\x07" * (1 + i % 2)
        out.append(bytes(f))
    for _ in range(1000):
        f = bytearray(rnd.randbytes(rnd.randrange(14, 200)))
        f[12:14] = b"\x08\x00"
        if len(f) > 23:
            f[14] = 0x45
            f[23] = 50
        out.append(bytes(f))
    return out + good  # the good ones last: the SA still works


@pytest.mark.parametrize("asan", [False, pytest.param(True, marks=needs_asan)],
                         ids=["release", "asan"])
def test_hostile_frames(launch, node, tmp_path: Path, asan: bool) -> None:
    """Thousands of broken and random ESP frames: each counted once, with a
    reason if refused, nothing crashes, and the good ones still decrypt."""
    build = ASAN_BUILD if asan else build_dir()
    frames = hostile_frames(29)
    (tmp_path / "sa.conf").write_text(SA_FILE)
    src = write(tmp_path / "in.pcap", frames)
    run = launch(deployment(
        node,
        ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src}"},
               {"name": "out", "device": "net_null0,no-rx=1"}],
        nfs=[{"name": "vpn", "program": prog("vpn", build), "service": "vpn",
              "args": ["--sa", str(tmp_path / "sa.conf"), "--replay-window", "4096"]}],
        chain=["vpn", "port:out"]), build=build)
    wait_until(lambda: port(run.client.call("stats"), "in")["rx_pkts"] == len(frames), 30,
               "the capture to be read")
    st = wait_drained(run)
    run.stop()
    log = next(p for p in run.nfs if p.label == "vpn").log.read_text()
    c = counters(log)
    assert c["packets"] == len(frames), log
    assert (c["encrypted"] + c["decrypted"] + c["bypass"] + c["non_ip"] + c["dropped"]
            == len(frames)), log
    assert c["dropped"] == service(st, "vpn")["drops"]["nf_verdict"] == st["drops_total"]
    assert c["crypto_error"] == 0 and c["auth_failed"] > 1000, log
    assert re.search(r"vpn-sa: dir=in spi=0x2001 line=3 packets=\d+ bytes=\d+ seq=20\n", log), log
    if asan:
        assert_no_sanitizer_report(log, "sluice-vpn's log")
