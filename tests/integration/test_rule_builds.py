"""Rule classifiers are built off the control thread.

A build of a few thousand random IPv4 rules (prefixes and port ranges)
takes seconds. sluiced builds it on a thread of its own and answers the
request that asked for it once the new rules are in force; meanwhile the
control thread answers everything else (status, stats, rule.list with the
rules of before), notices dead NFs, and holds the rule changes that come
in until their turn, in order. The tests send on raw connections and
assert only which reply came first; the big build is what makes the
difference, not a time limit."""

from __future__ import annotations

import json
import os
import random
import select
import signal
import socket
import time
from typing import Any

from conftest import (
    ASAN_BUILD,
    assert_no_sanitizer_report,
    deployment,
    needs_asan,
    prog,
    wait_until,
)

BIG = 3000  # random rules: a build of a second or more here (release)


def _rules(n: int, graph: str = "g", seed: int = 1) -> list[dict[str, Any]]:
    """n random IPv4 rules like bench/micro's: 8-28 bit prefixes of
    10.0.0.0/8, a destination port range, udp or tcp, priority 0-99."""
    rnd = random.Random(seed)

    def prefix() -> str:
        length = rnd.randint(8, 28)
        addr = (0x0A000000 | rnd.getrandbits(24)) & (~0 << (32 - length)) & 0xFFFFFFFF
        return f"{addr >> 24}.{addr >> 16 & 255}.{addr >> 8 & 255}.{addr & 255}/{length}"

    out = []
    for _ in range(n):
        lo = rnd.randrange(60000)
        out.append({"graph": graph, "priority": rnd.randrange(100),
                    "proto": rnd.choice(["udp", "tcp"]), "src": prefix(),
                    "dst": prefix(), "dport": f"{lo}-{lo + rnd.randrange(1000)}"})
    return out


class Conn:
    """A raw control connection: requests go out as lines, replies and
    events come back in the order sluiced sends them."""

    def __init__(self, path: str, name: str) -> None:
        self.name = name
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.buf = b""

    def send(self, rid: Any, method: str, **params: Any) -> None:
        self.s.sendall(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method,
                                   "params": params}).encode() + b"\n")

    def line(self) -> dict[str, Any] | None:
        if b"\n" not in self.buf:
            return None
        ln, self.buf = self.buf.split(b"\n", 1)
        return json.loads(ln)

    def fill(self) -> None:
        got = self.s.recv(1 << 20)
        assert got, f"{self.name}: sluiced closed the connection"
        self.buf += got

    def reply(self, rid: Any, timeout: float = 60) -> dict[str, Any]:
        """The reply to rid (events before it are skipped)."""
        deadline = time.monotonic() + timeout
        while True:
            msg = self.line()
            if msg is not None and msg.get("id") == rid and "method" not in msg:
                return msg
            if msg is None:
                left = deadline - time.monotonic()
                assert left > 0 and select.select([self.s], [], [], left)[0], (
                    f"{self.name}: no reply to {rid} in {timeout} s")
                self.fill()

    def close(self) -> None:
        self.s.close()


def next_message(conns: list[Conn], timeout: float = 60) -> tuple[Conn, dict[str, Any]]:
    """The next message on any of conns, and whose it is: what sluiced sent
    first, as far as the order between connections can be seen."""
    deadline = time.monotonic() + timeout
    while True:
        for c in conns:
            msg = c.line()
            if msg is not None:
                return c, msg
        left = deadline - time.monotonic()
        assert left > 0, f"nothing from {[c.name for c in conns]} in {timeout} s"
        ready, _, _ = select.select([c.s for c in conns], [], [], left)
        for c in conns:
            if c.s in ready:
                c.fill()
                break  # one at a time: keep the order they became readable


def _start(launch, node, *args: str, build=None, nfs=1):
    run = launch(deployment(node, ports=[], nfs=[
        {"name": "a", "program": prog("forward", build), "service": "a", "replicas": nfs}],
        chain=["a", "drop"], sluiced_args=list(args)), build)
    run.client.call("graph.apply", name="g", nodes={"a": ["drop"]})
    return run


def _big_build(run, n: int = BIG) -> Conn:
    """Sends a batch of n random rules on a connection of its own (id
    "big") and lets sluiced read it and start building."""
    big = Conn(str(run.dep.socket_path()), "big")
    big.send("big", "rule.add", rules=_rules(n))
    time.sleep(0.5)  # read and building (the old code: blocked in it)
    return big


def test_status_and_stats_are_answered_during_a_build(launch, node):
    run = _start(launch, node)
    path = str(run.dep.socket_path())
    other = Conn(path, "other")
    big = _big_build(run)
    other.send(1, "status")
    who, msg = next_message([big, other])
    assert (who.name, msg["id"]) == ("other", 1), msg
    assert msg["result"]["n_nfs"] == 1
    other.send(2, "stats")
    who, msg = next_message([big, other])
    assert (who.name, msg["id"]) == ("other", 2), msg
    assert "ports" in msg["result"]
    # ... and the build's reply comes when the rules are in force.
    assert big.reply("big")["result"] == {"added": BIG, "first_id": 1, "last_id": BIG}
    listed = run.client.call("rule.list", limit=1)
    assert (listed["total"], listed["builds"]) == (BIG, 1)


def test_an_nf_killed_during_a_build_is_noticed_before_it_ends(launch, node):
    run = _start(launch, node)
    path = str(run.dep.socket_path())
    events = Conn(path, "events")
    events.send("sub", "subscribe")
    assert events.reply("sub")["result"] == {"subscribed": True}
    (nf,) = run.client.call("nf.list")
    big = _big_build(run)
    os.kill(nf["pid"], signal.SIGKILL)
    # The first message: the death, before the build's events and reply.
    who, msg = next_message([big, events])
    assert (who.name, msg.get("params", {}).get("kind")) == ("events", "nf.down"), msg
    assert (msg["params"]["data"]["instance"], msg["params"]["data"]["reason"]) == (
        nf["instance"], "died"), msg
    lister = Conn(path, "lister")
    lister.send(1, "nf.list")
    who, msg = next_message([big, lister])
    assert (who.name, msg["id"]) == ("lister", 1), msg
    assert [n for n in msg["result"]
            if n["instance"] == nf["instance"] and n["state"] == "running"] == [], msg
    assert big.reply("big")["result"]["added"] == BIG


def test_rule_changes_during_a_build_wait_their_turn_in_order(launch, node):
    """A rule.add and a graph.remove sent on other connections during a
    build are applied after it, in the order they came; rule.list meanwhile
    shows the rules of before; a request after the build's on the same
    connection is answered after it."""
    run = _start(launch, node, "--max-rules", "3100")
    call = run.client.call
    path = str(run.dep.socket_path())
    call("graph.apply", name="h", nodes={"a": ["drop"]})
    assert call("rule.add", graph="h", priority=7, proto="udp")["id"] == 1
    events = Conn(path, "events")
    events.send("sub", "subscribe")
    events.reply("sub")
    big = _big_build(run)
    big.send("after", "rule.list", limit=0)  # same connection: after "big"
    second, third, fourth, reader = (Conn(path, n) for n in ("second", "third", "fourth",
                                                             "reader"))
    second.send(2, "rule.add", graph="g", priority=1, dport=53)
    third.send(3, "rule.add", rules=[{"graph": "g"}] * 99 + [{"graph": "nope"}])
    fourth.send(4, "graph.remove", name="h")
    reader.send(5, "rule.list")
    who, msg = next_message([big, second, third, fourth, reader])
    assert (who.name, msg["id"]) == ("reader", 5), msg
    old = msg["result"]
    assert (old["total"], old["builds"], [r["id"] for r in old["rules"]]) == (1, 1, [1])
    order = []
    replies = {}
    while len(order) < 5:
        who, msg = next_message([big, second, third, fourth])
        order.append(msg["id"])
        replies[msg["id"]] = msg
    assert order == ["big", "after", 2, 3, 4], order  # "after": its connection's next
    assert replies["big"]["result"] == {"added": BIG, "first_id": 2, "last_id": BIG + 1}
    assert replies["after"]["result"]["total"] == BIG + 1
    assert replies[2]["result"] == {"id": BIG + 2, "graph": "g", "priority": 1,
                                    "dport": "53"}
    # Checked on its turn, against the rules then: the whole batch refused.
    assert replies[3]["error"]["message"] == (
        "rules[99]: no graph named 'nope': apply it first (graph.apply)")
    assert replies[4]["result"] == {"removed": "h", "rules_removed": 1}
    listed = call("rule.list", limit=0)
    assert (listed["total"], listed["builds"]) == (BIG + 1, 4)
    # Events: the big batch's rules, then the second's, then the removal.
    kinds = []
    while True:
        msg = events.line()
        if msg is None:
            if not select.select([events.s], [], [], 5)[0]:
                break
            events.fill()
            continue
        p = msg["params"]
        kinds.append((p["kind"], p["data"].get("id", p["data"].get("name"))))
        if p["kind"] == "graph.removed":
            break
    added = [i for k, i in kinds if k == "rule.added"]
    assert sorted(added[:BIG]) == list(range(2, BIG + 2)) and added[BIG:] == [BIG + 2]
    assert kinds[BIG + 1:] == [("graph.removed", "h")], kinds[BIG + 1:]


def test_a_batch_waiting_its_turn_is_checked_against_the_rules_then(launch, node):
    run = _start(launch, node, "--max-rules", "3100")
    path = str(run.dep.socket_path())
    big = _big_build(run)
    more = Conn(path, "more")
    more.send(1, "rule.add", rules=[{"graph": "g", "sport": p} for p in range(1, 201)])
    rm = Conn(path, "rm")
    rm.send(2, "rule.remove", ids=[5, 3001, 7])
    assert big.reply("big")["result"]["added"] == BIG
    assert more.reply(1)["error"]["message"] == (
        "200 rules would make 3200, more than --max-rules 3100 (3000 in use): remove some "
        "or raise --max-rules")
    assert rm.reply(2)["error"]["message"] == (
        "no rule with id 3001; see rule.list (no rule was removed)")
    listed = run.client.call("rule.list", limit=0)
    assert (listed["total"], listed["builds"]) == (BIG, 1)


@needs_asan
def test_builds_under_asan_closed_connections_and_shutdown(launch, node, tmp_path):
    """ASan+UBSan: a parked request whose connection closes still commits;
    a shutdown asked during a build waits for it; nothing leaks."""
    run = _start(launch, node, build=ASAN_BUILD)
    path = str(run.dep.socket_path())
    gone = Conn(path, "gone")
    gone.send("gone", "rule.add", rules=_rules(2000, seed=2))
    time.sleep(0.2)
    gone.close()
    wait_until(lambda: run.client.call("rule.list", limit=0)["builds"] == 1, 60,
               "the closed connection's build")
    listed = run.client.call("rule.list", limit=0)
    assert listed["total"] == 2000
    big = Conn(path, "big")
    big.send("big", "rule.add", rules=_rules(2000, seed=3))
    waiting = Conn(path, "waiting")
    waiting.send("w", "rule.remove", ids=[3])
    time.sleep(0.2)
    run.client.call("shutdown")
    wait_until(lambda: run.sluiced.exited() is not None, 60, "sluiced to exit")
    run.stop()
    assert run.sluiced.exited() == 0
    logs = "".join(p.read_text(errors="replace") for p in tmp_path.glob("run*/*.log"))
    assert_no_sanitizer_report(logs)
