"""What an operator who types a name wrong, or scales a service to nothing,
reads from the `sluice` commands against a real sluiced (docs/graphs.md,
"Applying graphs and rules" and "Scaling"): sluiced's own error, and the
name the node has that is close to the one typed."""

from __future__ import annotations

from conftest import deployment, prog, wait_until
from typer.testing import CliRunner

from sluice.cli import app

runner = CliRunner()


def test_typos_get_the_close_name_and_scaling_to_zero_says_how_back(launch, node):
    dep = deployment(node,
                     [{"name": "in", "device": "net_null0,no-rx=1"},
                      {"name": "out", "device": "net_null1,no-rx=1"}],
                     [{"name": "ids", "program": prog("forward"), "service": "ids"},
                      {"name": "scr", "program": prog("forward"), "service": "scrubber"}],
                     ["ids", "port:out"])
    run = launch(dep)
    run.client.call("graph.apply", name="anomaly",
                    nodes={"ids": ["port:out", "scrubber"], "scrubber": ["port:out"]})
    sock = ["--socket", str(run.client.socket_path)]

    def cli(*args: str, code: int = 1) -> tuple[str, str]:
        r = runner.invoke(app, [*args, *sock])
        assert r.exit_code == code, (args, r.output)
        return r.stdout, r.stderr

    assert cli("rule", "add", "--graph", "anomly", "--proto", "udp") == ("", (
        "sluice rule add: no graph named 'anomly': apply it first (`sluice graph apply`); "
        "did you mean 'anomaly'?\n"))
    assert cli("graph", "remove", "anomly")[1] == (
        "sluice graph remove: no graph named 'anomly'; see `sluice graph get` (without a "
        "name: all graphs); did you mean 'anomaly'?\n")
    assert cli("lb", "set", "scrubbr", "rr")[1] == (
        "sluice lb set: no service scrubbr; `sluice nf list` shows the services; did you "
        "mean 'scrubber'?\n")
    assert cli("flow", "list", "--in-port", "inn")[1] == (
        "sluice flow list: --in-port: no port named 'inn'; use a name from `sluice stats`; "
        "did you mean 'in'?\n")
    # nothing close: sluiced's message alone; --json: the error as sluiced gave it
    assert cli("rule", "add", "--graph", "zzz")[1] == (
        "sluice rule add: no graph named 'zzz': apply it first (`sluice graph apply`)\n")
    assert cli("nf", "scale", "idss", "2", "--json")[1] == (
        "nf.scale: no service idss; service.list shows the services (JSON-RPC error "
        "-32000)\n")
    assert run.client.call("rule.list")["total"] == 0

    # A request with a match is refused only when no graph allows it: the
    # chain allows a ChangeDefault to any hop, so this one is kept although
    # graph anomaly has no edge scrubber -> ids (docs/graphs.md).
    assert cli("flow", "request", "change-default", "scrubber", "--to", "ids",
               "--all-flows", code=0)[0] == (
        "change_default: applied to 0 flow(s); kept for new flows as request 1 (sluice flow "
        "request remove 1 forgets it)\n")

    out, _ = cli("nf", "scale", "scrubber", "0", code=0)
    scr = [n["instance"] for n in run.client.call("nf.list") if n["service"] == "scrubber"]
    assert out == (
        f"service scrubber: 0 replica(s): stopping instance(s) {', '.join(map(str, scr))}\n"
        "no instance of scrubber is left to copy: `sluice nf scale scrubber N` cannot start "
        "one again; `sluice apply DEPLOYMENT.yaml` starts the file's replicas\n")
    # and that is so
    wait_until(lambda: not any(n["service"] == "scrubber"
                               for n in run.client.call("nf.list")), 10, "scrubber gone")
    assert cli("nf", "scale", "scrubber", "1")[1] == (
        "sluice nf scale: service 'scrubber' has no running instance to copy: start one "
        "first (sluice apply DEPLOYMENT.yaml starts the file's replicas; or run its "
        "program)\n")


def test_a_chain_or_graph_naming_a_service_nobody_runs_says_so(launch, node, tmp_path):
    """chain.set and graph.apply accept a service with no instance (its NFs
    may come later) but say, in a note, that its packets are dropped until
    one registers; the CLI prints it with the running service whose name is
    close (a typo). With every service running there is no note."""
    dep = deployment(node,
                     [{"name": "in", "device": "net_null0,no-rx=1"},
                      {"name": "out", "device": "net_null1,no-rx=1"}],
                     [{"name": "fw", "program": prog("forward"), "service": "firewall"},
                      {"name": "mon", "program": prog("forward"), "service": "monitor"}],
                     ["firewall", "port:out"])
    run = launch(dep)
    sock = ["--socket", str(run.client.socket_path)]
    one = ("service 'firewal' has no running instance: packets sent to it are dropped "
           "(no_instance) until one registers; see nf.list")
    res = run.client.call("chain.set", hops=["firewal", "monitor", "port:out"])
    assert res == {"version": res["version"], "note": one}
    assert "note" not in run.client.call("chain.set", hops=["firewall", "monitor", "port:out"])
    many = [f"s{i}" for i in range(10)]  # the first 8 named, then how many more
    assert run.client.call("chain.set", hops=[*many, "port:out"])["note"] == (
        "services 's0', 's1', 's2', 's3', 's4', 's5', 's6', 's7' and 2 more have no running "
        "instance: packets sent to them are dropped (no_instance) until one registers; see "
        "nf.list")
    # reading the ports: paused, and not resumed while a service of the chain has no NF
    r = runner.invoke(app, ["rx", "pause", *sock])
    assert (r.exit_code, r.stdout) == (0, (
        "ports paused: sluiced reads none of them (packets in flight drain; `sluice rx resume` "
        "reads them again)\n"))
    assert run.client.call("status")["rx_enabled"] is False
    r = runner.invoke(app, ["rx", "resume", *sock])
    assert (r.exit_code, r.stderr) == (1, (
        "sluice rx resume: the chain is not complete (a service on it has no NF): start the NFs "
        "or `sluice chain set` first\n"))
    run.client.call("chain.set", hops=["firewall", "port:out"])
    r = runner.invoke(app, ["rx", "resume", *sock])
    assert (r.exit_code, r.stdout) == (0, "ports resumed: sluiced reads them again\n")
    assert run.client.call("status")["rx_enabled"] is True

    r = runner.invoke(app, ["chain", "set", "firewal,monitr,port:out", *sock])
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[1] == (
        "note: services 'firewal', 'monitr' have no running instance: packets sent to them "
        "are dropped (no_instance) until one registers; see `sluice nf list`; did you mean "
        "'firewall' for 'firewal', 'monitor' for 'monitr'?")

    (tmp_path / "g.yaml").write_text(
        "graphs:\n  - name: web\n    nodes: {firewall: [ids], ids: ['port:out']}\n")
    r = runner.invoke(app, ["graph", "apply", str(tmp_path / "g.yaml"), *sock])
    assert r.exit_code == 0, r.output
    assert r.stdout == (
        f"graph web: applied (id 1, version {res['version'] + 5}), 2 node(s), entry firewall\n"
        "note: service 'ids' has no running instance: packets sent to it are dropped "
        "(no_instance) until one registers; see `sluice nf list`\n")
    res = run.client.call("graph.apply", name="web2",
                          nodes={"firewall": ["monitor"], "monitor": ["port:out"]})
    assert "note" not in res
