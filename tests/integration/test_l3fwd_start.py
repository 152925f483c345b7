"""sluice-l3fwd refuses a bad routes file at start, as a real process beside
a real sluiced: one line naming the file, the line and the problem, then
libsluice's, and exit status 1 (nfs/l3fwd/README.md, "Routes file")."""

from __future__ import annotations

import subprocess

from conftest import deployment, prog, wait_until


def _start(node: str, routes: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([prog("l3fwd"), "--", "--node", node, "-s", "l3bad", "--routes",
                           routes, *args], capture_output=True, text=True, timeout=60)


def test_bad_routes_refused_at_start(launch, node, tmp_path):
    run = launch(deployment(node, ports=[{"name": "out", "device": "net_null0,no-rx=1"}],
                            nfs=[{"name": "fwd", "program": prog("forward"),
                                  "service": "forward"}],
                            chain=["forward", "port:out"]))
    exe = prog("l3fwd")
    cases = [
        ("port out address 10.62.1.1\nroute 10.62.0.0/16 via 10.62.1.7\n",
         "2: route via 10.62.1.7: no neigh line gives its MAC and port"),
        ("port out\nport nowhere\n", "2: port 'nowhere': no such port (sluice status lists them)"),
        ("route 10.62.0.0/16 port out mac 02:00:00:00:00:01\n"
         "route 10.62.0.0/16 port out mac 02:00:00:00:00:02\n",
         "2: 10.62.0.0/16 is given twice (first on line 1)"),
    ]
    for i, (text, want) in enumerate(cases):
        f = tmp_path / f"routes{i}"
        f.write_text(text)
        r = _start(node, str(f))
        assert r.returncode == 1, r
        assert f"sluice-l3fwd: {f}:{want}\n" in r.stderr, r.stderr
        assert r.stderr.endswith(f"{exe}: initialisation failed (Invalid argument)\n"), r.stderr
    # Each deregistered on the way out: only the forwarder is left.
    wait_until(lambda: [n["service"] for n in run.client.call("nf.list")] == ["forward"], 5,
               "the refused NFs to be gone from nf.list")
