"""Network namespaces for the integration tests that put real Linux hosts
on sluiced's TAP ports: running commands, making and removing the
namespaces, moving a TAP interface into one with its address, and static
neighbours (no ARP, no IPv6: the test's packets are the only ones on the
wire). Each test keeps its own names and subnets; this is only the how."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from collections.abc import Iterable, Iterator
from pathlib import Path


def sh(*args: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
    """Runs a command, its output captured as text; check: raise on failure."""
    return subprocess.run(args, capture_output=True, text=True, check=check, timeout=timeout)


def ns_run(ns: str, *args: str, **kw) -> subprocess.CompletedProcess:
    """sh() inside namespace ns."""
    return sh("ip", "netns", "exec", ns, *args, **kw)


def tag() -> str:
    """What makes a test's names its own: the pid (5 digits at most, so a
    name of prefix + tag + a letter or two stays under IFNAMSIZ)."""
    return f"{os.getpid() % 100000}"


def _kill_all(ns: str) -> None:
    for pid in sh("ip", "netns", "pids", ns, check=False).stdout.split():
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGKILL)


@contextlib.contextmanager
def namespaces(names: Iterable[str], resolv: bool = False, kill: bool = False) -> Iterator[None]:
    """Adds the namespaces, and deletes them at the end. resolv: each gets
    an empty resolv.conf (ip netns exec mounts /etc/netns/NS/resolv.conf on
    /etc/resolv.conf), so no program asks the host's name server. kill:
    the processes left in them (all the test's own) are killed first."""
    names = list(names)
    for ns in names:
        sh("ip", "netns", "add", ns)
        if resolv:
            etc = Path("/etc/netns") / ns
            etc.mkdir(parents=True, exist_ok=True)
            (etc / "resolv.conf").write_text("")
    try:
        yield
    finally:
        for ns in names:
            if kill:
                _kill_all(ns)
            sh("ip", "netns", "del", ns, check=False)
            if resolv:
                (Path("/etc/netns") / ns / "resolv.conf").unlink(missing_ok=True)
                with contextlib.suppress(OSError):
                    (Path("/etc/netns") / ns).rmdir()


def mac_of(ns: str, ifname: str) -> str:
    return json.loads(sh("ip", "-n", ns, "-j", "link", "show", ifname).stdout)[0]["address"]


def host(ns: str, ifname: str, addr: str, mac: str | None = None) -> str:
    """Moves ifname into ns with addr/24, IPv6 off in ns (nothing of
    Linux's own on the wire: no neighbour discovery, no MLD), the interface
    and lo up; mac: set the interface's MAC first. Returns its MAC."""
    for conf in ("all", "default"):
        ns_run(ns, "sysctl", "-q", "-w", f"net.ipv6.conf.{conf}.disable_ipv6=1")
    sh("ip", "link", "set", ifname, "netns", ns)
    if mac is not None:
        sh("ip", "-n", ns, "link", "set", ifname, "address", mac)
    sh("ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", ifname)
    sh("ip", "-n", ns, "link", "set", ifname, "up")
    sh("ip", "-n", ns, "link", "set", "lo", "up")
    return mac_of(ns, ifname)


def neigh(ns: str, ifname: str, addr: str, mac: str) -> None:
    """A permanent neighbour: ns reaches addr at mac with no ARP."""
    sh("ip", "-n", ns, "neigh", "replace", addr, "lladdr", mac, "dev", ifname, "nud", "permanent")


def wire_pair(names: list[str], ifs: list[str], addrs: tuple[str, str]) -> list[str]:
    """Two hosts (host()) that know each other's MAC for good; returns
    their MACs."""
    macs = [host(ns, i, a) for ns, i, a in zip(names, ifs, addrs, strict=True)]
    for ns, ifname, addr, mac in zip(names, ifs, reversed(addrs), reversed(macs), strict=True):
        neigh(ns, ifname, addr, mac)
    return macs


class Bg:
    """A test's background processes in namespaces (servers, iperf3), each
    with its output in a log; stop_all() ends them by pid at the end."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen] = []

    def start(self, ns: str, *args: str, log: Path) -> subprocess.Popen:
        f = open(log, "wb")  # noqa: SIM115 (the process writes it)
        p = subprocess.Popen(["ip", "netns", "exec", ns, *args], stdout=f,
                             stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        f.close()
        self.procs.append(p)
        return p

    def stop(self, p: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
        if p.poll() is None:
            p.send_signal(sig)
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)

    def stop_all(self) -> None:
        for p in self.procs:
            self.stop(p)
