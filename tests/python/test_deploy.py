"""The deployment file: schema, references, environment checks, and the exact
error messages documented in docs/deployment.md."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from sluice.core.deploy import Deployment, DeploymentError, device_syntax_error, load_deployment

DEMO = """\
node: {name: demo, mode: shared, cores: [0]}
ports:
  - {name: in,  device: "net_pcap0,rx_pcap=traces/t.pcap,infinite_rx=1"}
  - {name: out, device: "net_null0"}
nfs:
  - {name: fw,  program: sluice-firewall, service: firewall, args: [--rules, fw-rules.yaml]}
  - {name: mon, program: sluice-monitor,  service: monitor}
  - {name: fwd, program: sluice-forward,  service: forward}
chain: [firewall, monitor, forward, "port:out"]
"""


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder with a fake build (three NF programs) and a capture; cwd."""
    for nf in ("firewall", "monitor", "forward"):
        p = tmp_path / "build" / "nfs" / nf / f"sluice-{nf}"
        p.parent.mkdir(parents=True)
        p.write_text("#!/bin/sh\n")
        p.chmod(0o755)
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "t.pcap").write_bytes(b"")
    monkeypatch.setenv("SLUICE_BUILD_DIR", str(tmp_path / "build"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write(site: Path, text: str, name: str = "d.yaml") -> Path:
    """Writes a deployment file; returns its path as the user would give it."""
    p = site / name
    p.write_text(textwrap.dedent(text))
    return p.relative_to(Path.cwd()) if p.is_relative_to(Path.cwd()) else p


def errors_of(path: Path) -> list[str]:
    with pytest.raises(DeploymentError) as e:
        load_deployment(path)
    return e.value.issues


def edit(old: str, new: str) -> str:
    assert old in DEMO
    return DEMO.replace(old, new)


def test_demo_file_is_valid(site: Path) -> None:
    dep = load_deployment(write(site, DEMO))
    assert dep.node.name == "demo"
    assert dep.services() == ["firewall", "monitor", "forward"]
    assert [nf.replicas for nf in dep.nfs] == [1, 1, 1]
    assert dep.nfs[0].args == ["--rules", "fw-rules.yaml"]
    assert dep.source == "d.yaml"
    assert dep.base_dir == site


def test_relative_paths_resolve_against_the_file_folder(site: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    sub = site / "conf"
    sub.mkdir()
    (sub / "traces").mkdir()
    (sub / "traces" / "t.pcap").write_bytes(b"")
    p = sub / "d.yaml"
    p.write_text(DEMO)
    monkeypatch.chdir("/")
    dep = load_deployment(p)
    assert dep.device_for(dep.ports[0]) == (
        f"net_pcap0,rx_pcap={sub}/traces/t.pcap,infinite_rx=1")
    assert dep.device_for(dep.ports[1]) == "net_null0"


def test_the_repository_demo_is_valid() -> None:
    demo = Path(__file__).resolve().parents[2] / "examples" / "demo.yaml"
    dep = load_deployment(demo, check_env=False)
    assert dep.chain == ["firewall", "monitor", "forward", "port:out"]
    assert [p.name for p in dep.ports] == ["in", "out"]
    assert dep.node.cores == [0, 1] and dep.node.mode == "shared"
    assert dep.trace_files() == [demo.parent / "traces" / "http-mix.pcap"]


def test_defaults(site: Path) -> None:
    dep = Deployment.from_dict({"ports": [{"name": "o", "device": "net_null0"}],
                                "chain": ["port:o"]})
    assert dep.node.name == "sluice" and dep.node.mode == "shared"
    assert dep.nfs == [] and dep.node.handoff is None
    assert dep.socket_path() == Path("/var/run/sluice/sluice.sock")


def test_numbers_in_args_are_text(site: Path) -> None:
    dep = load_deployment(write(site, edit("args: [--rules, fw-rules.yaml]",
                                           "args: [--count, 100, --rate, 1.5]")))
    assert dep.nfs[0].args == ["--count", "100", "--rate", "1.5"]


@pytest.mark.parametrize(("old", "new", "expected"), [
    ("cores: [0]}", "cores: [0], colour: red}",
     "d.yaml: node.colour: unknown key (known keys here: name, mode, cores, handoff, ring_size, "
     "mbufs, max_nfs, max_services, backpressure_us, idle_sleep_us, socket, eal_args, "
     "sluiced_args)"),
    ("service: monitor}", "servce: monitor}",
     "d.yaml: nfs[1].service: missing: this key is required (see docs/deployment.md)\n"
     "d.yaml: nfs[1].servce: unknown key (known keys here: name, program, service, args, "
     "replicas, mode, core, eal_args, run, image); did you mean 'service'?"),
    ("mode: shared", "mode: fast", "d.yaml: node.mode: 'fast' is not one of: shared, poll"),
    ("cores: [0]", "cores: [0, '1']",
     "d.yaml: node.cores[1]: expected an integer, got a string ('1')"),
    ("cores: [0]", "cores: [0, true]",
     "d.yaml: node.cores[1]: expected an integer, got a boolean (true)"),
    ("cores: [0]", "cores: '0,1'", "d.yaml: node.cores: expected a list, got a string ('0,1')"),
    ("cores: [0]", "cores: []", "d.yaml: node.cores: empty: list at least one CPU, e.g. [0, 1]"),
    ("cores: [0]", "cores: [0, 0]", "d.yaml: node.cores: CPU 0 is listed twice: list each once"),
    ("name: demo", "name: 'my node'",
     "d.yaml: node.name: 'my node' is not a valid node name: use 1-16 letters, digits, '_' or "
     "'-', starting with a letter or digit"),
    # names and numbers as long and as large as sluiced takes, no more
    ("name: demo", "name: node-name-is-17ch",
     "d.yaml: node.name: 'node-name-is-17ch' is not a valid node name: use 1-16 letters, "
     "digits, '_' or '-', starting with a letter or digit"),
    ("service: firewall", "service: " + "s" * 32,
     "d.yaml: nfs[0].service: '" + "s" * 32 + "' is not a valid service name: use 1-31 "
     "letters, digits, '_', '.' or '-', starting with a letter (and not 'drop')"),
    ("cores: [0]}", "cores: [0], max_nfs: 4097}",
     "d.yaml: node.max_nfs: must be at most 4096, got 4097"),
    ("cores: [0]}", "cores: [0], backpressure_us: 10000001}",
     "d.yaml: node.backpressure_us: must be at most 10000000, got 10000001"),
    ("cores: [0]}", "cores: [0], ring_size: 1000}",
     "d.yaml: node.ring_size: 1000 is not a power of two: use e.g. 512"),
    ("service: forward}", "service: forward, replicas: -1}",
     "d.yaml: nfs[2].replicas: must be at least 0, got -1"),
    ("service: forward}", "}", "d.yaml: nfs[2].service: missing: this key is required "
                               "(see docs/deployment.md)"),
    ("  - {name: mon, program: sluice-monitor,  service: monitor}", "  - mon",
     "d.yaml: nfs[1]: expected a mapping with keys name, program, service, args, replicas, mode, "
     "core, eal_args, run, image; got a string ('mon')"),
    ("service: firewall", "service: drop",
     "d.yaml: nfs[0].service: 'drop' is not a valid service name: use 1-31 letters, digits, '_', "
     "'.' or '-', starting with a letter (and not 'drop')"),
    ('"net_null0"', '"net_pcp0"',
     "d.yaml: ports[1].device: unknown driver 'net_pcp' in 'net_pcp0': use one of net_pcap, "
     "net_tap, net_af_packet, net_null, net_ring, net_memif, or a PCI address like "
     "0000:03:00.0; did you mean 'net_pcap'?"),
    ('"net_null0"', '"net_null"',
     "d.yaml: ports[1].device: 'net_null' needs an instance number: write net_null0 "
     "(or net_null1, ...)"),
    ('"net_null0"', '"eth0"',
     "d.yaml: ports[1].device: 'eth0' is not a known device: use one of net_pcap, net_tap, "
     "net_af_packet, net_null, net_ring, net_memif followed by a number (e.g. net_pcap0), or a "
     "PCI address like 0000:03:00.0"),
    ('"net_null0"', '"net_null0,foo"',
     "d.yaml: ports[1].device: 'foo' is not key=value: device arguments are comma-separated "
     "key=value pairs after the device name, e.g. net_pcap0,rx_pcap=FILE,infinite_rx=1"),
    ('"net_null0"', '"net_null0,no_rx=1"',
     "d.yaml: ports[1].device: net_null has no argument 'no_rx' (it takes: copy, no-rx, size); "
     "did you mean 'no-rx'?"),
    ('"net_null0"', '"net_null0,size=64,size=128"',
     "d.yaml: ports[1].device: argument 'size' is given twice: give it once"),
    ('"net_null0"', "7", "d.yaml: ports[1].device: expected a string, got a number (7)"),
])
def test_schema_errors(site: Path, old: str, new: str, expected: str) -> None:
    assert errors_of(write(site, edit(old, new))) == expected.split("\n")


@pytest.mark.parametrize(("old", "new", "expected"), [
    ("name: in, ", "name: out, ",
     "d.yaml: ports[1].name: port 'out' is already declared at ports[0]: give each port its own "
     "name"),
    ('"net_null0"', '"net_pcap0"',
     "d.yaml: ports[1].device: device 'net_pcap0' is already used by ports[0]: give each device "
     "its own number, e.g. net_pcap1"),
    ("name: fwd", "name: fw",
     "d.yaml: nfs[2].name: NF 'fw' is already declared at nfs[0]: give each NF its own name (use "
     "replicas for more instances of one NF)"),
    ("[firewall, monitor", "[firewall, monitr",
     "d.yaml: chain[1]: 'monitr' is not the service of any NF in nfs (services: firewall, "
     "monitor, forward), nor port:NAME nor drop: add an NF with service 'monitr' or fix the "
     "name; did you mean 'monitor'?"),
    ('"port:out"', '"port:outt"',
     "d.yaml: chain[3]: no port named 'outt' (ports: in, out); did you mean 'port:out'?"),
    (', "port:out"]', "]",
     "d.yaml: chain: ends with service 'forward', so its packets would be dropped as "
     "end_of_chain: end the chain with port:NAME or drop, e.g. add 'port:out'"),
    ('"port:out"]', '"port:out", drop]',
     "d.yaml: chain[4]: 'drop' comes after 'port:out', which ends the chain: remove it or move "
     "the sink to the end"),
    ("[firewall, monitor, forward", "[firewall, monitor, firewall",
     "d.yaml: chain[2]: service 'firewall' is already hop chain[0]: a chain visits each service "
     "once (only the last hop may repeat an earlier one, to close a loop)"),
    ("chain: [firewall, monitor, forward, \"port:out\"]", "chain: []",
     "d.yaml: chain: empty: list the hops, e.g. [firewall, monitor, port:out]"),
    ("mode: shared", "mode: poll",
     "d.yaml: node.cores: poll mode needs at least 2 CPUs (sluiced's control and I/O threads "
     "each busy-poll one), got [0]: list two CPUs or use mode: shared"),
    ("cores: [0]}", "cores: [0], max_nfs: 2}",
     "d.yaml: node.max_nfs: 2 is fewer than the 3 NF instances the deployment starts: raise it "
     "to at least 3"),
])
def test_reference_errors(site: Path, old: str, new: str, expected: str) -> None:
    assert errors_of(write(site, edit(old, new))) == [expected]


def test_program_not_found(site: Path) -> None:
    p = write(site, edit("sluice-monitor", "sluice-frewall"))
    assert errors_of(p) == [
        "d.yaml: nfs[1].program: 'sluice-frewall' not found (looked in build/nfs/*/ and PATH); "
        "did you mean 'sluice-firewall'?"]


def test_program_not_built(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLUICE_BUILD_DIR", str(site / "nobuild"))
    p = write(site, DEMO.replace("sluice-monitor", "sluice-nothere"))
    issues = errors_of(p)
    assert issues[1] == (
        "d.yaml: nfs[1].program: 'sluice-nothere' not found (looked in nobuild/nfs/*/ and PATH); "
        "nobuild/ does not exist: build first with `make build`")
    assert len(issues) == 3


def test_program_path_and_path_lookup(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (site / "bin").mkdir()
    tool = site / "bin" / "my-nf"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{site / 'bin'}:/usr/bin:/bin")
    dep = load_deployment(write(site, edit("sluice-monitor", "my-nf")
                                .replace("sluice-forward", "./bin/my-nf")))
    assert dep.nfs[1].program == "my-nf"
    assert errors_of(write(site, edit("sluice-monitor", "./bin/none"))) == [
        "d.yaml: nfs[1].program: './bin/none' not found or not executable (relative paths are "
        "resolved against the deployment file's folder)"]


def test_missing_capture(site: Path) -> None:
    (site / "traces" / "t.pcap").unlink()
    assert errors_of(write(site, DEMO)) == [
        f"d.yaml: ports[0].device: rx_pcap=traces/t.pcap: no file {site}/traces/t.pcap (relative "
        f"paths start at the deployment file's folder): fix the path, or make a capture with "
        f"`sluice trace gen {site}/traces/t.pcap`"]


def test_tx_pcap_folder_must_exist(site: Path) -> None:
    p = write(site, edit('"net_null0"', '"net_pcap1,tx_pcap=out/o.pcap"'))
    assert errors_of(p) == [
        f"d.yaml: ports[1].device: tx_pcap=out/o.pcap: no folder {site}/out (relative paths "
        f"start at the deployment file's folder): create it or fix the path"]
    (site / "out").mkdir()
    dep = load_deployment(p)
    assert dep.device_for(dep.ports[1]) == f"net_pcap1,tx_pcap={site}/out/o.pcap"


def test_cores_must_exist(site: Path) -> None:
    issues = errors_of(write(site, edit("cores: [0]", "cores: [0, 4095]")))
    assert len(issues) == 1
    assert issues[0].startswith("d.yaml: node.cores[1]: CPU 4095 does not exist on this machine "
                                "(CPUs: 0")
    assert issues[0].endswith("): list existing CPUs")


def test_several_problems_are_all_reported(site: Path) -> None:
    text = edit("[firewall, monitor", "[firewall, monitr").replace("sluice-forward", "sluice-fwd")
    issues = errors_of(write(site, text))
    assert [i.split(":")[1].strip() for i in issues] == ["chain[1]", "nfs[2].program"]


def test_yaml_errors(site: Path) -> None:
    assert errors_of(write(site, "node: {name: a\n")) == [
        "d.yaml: line 2, column 1: invalid YAML (while parsing a flow mapping expected ',' or "
        "'}', but got '<stream end>')"]
    assert errors_of(write(site, "node:\n  name: a\n  name: b\n")) == [
        "d.yaml: line 3, column 3: invalid YAML (key 'name' is given twice in one mapping)"]
    assert errors_of(write(site, "")) == [
        "d.yaml: the file is empty; a deployment needs at least ports and chain "
        "(see docs/deployment.md)"]
    assert errors_of(write(site, "- a\n")) == [
        "d.yaml: expected a mapping of keys (node, ports, nfs, chain), got a list "
        "(see docs/deployment.md)"]
    assert errors_of(Path("none.yaml")) == ["none.yaml: no such file"]


def test_missing_top_level_keys(site: Path) -> None:
    assert errors_of(write(site, "node: {name: a}\n")) == [
        "d.yaml: ports: missing: this key is required (see docs/deployment.md)",
        "d.yaml: chain: missing: this key is required (see docs/deployment.md)"]


def test_from_dict_names_its_source(site: Path) -> None:
    with pytest.raises(DeploymentError) as e:
        Deployment.from_dict({"ports": [], "chain": ["drop"], "x": 1}, source="<test>")
    assert str(e.value) == ("<test>: x: unknown key (known keys here: node, ports, nfs, chain, "
                            "graphs, rules, restart, policies, graph_policies)")


@pytest.mark.parametrize("device", [
    "net_null0", "net_null1,no-rx=1", "net_pcap0,rx_pcap=a.pcap,infinite_rx=1",
    "net_tap0,iface=sl0", "net_af_packet0,iface=veth0", "net_ring0", "net_memif0,role=server",
    "0000:03:00.0", "03:00.1",
])
def test_good_devices(device: str) -> None:
    assert device_syntax_error(device) is None


# -- run, image, replicas 0, restart, policies (the orchestrator's keys) ----------------

POLICY_BASE = DEMO.replace(
    "chain: [firewall, monitor, forward, \"port:out\"]\n",
    "  - {name: scrubber, program: sluice-forward, service: scrub, replicas: 0}\n"
    "chain: [firewall, monitor, forward, \"port:out\"]\n")


def with_policies(text: str) -> str:
    return POLICY_BASE + "policies:\n" + textwrap.indent(textwrap.dedent(text), "  ")


def test_policies_parse(site: Path) -> None:
    dep = load_deployment(write(site, with_policies("""\
        - on: occupancy
          service: firewall
          above: 0.75
          below: 0.1
          for_ms: 2000
          max: 4
        - on: message
          key: alarm
          from: monitor
          action: start
          nf: scrubber
          args: ["--prefix", "{value}", 7]
          once: true
        """)))
    occ, msg = dep.policies
    assert (occ.on, occ.service, occ.above, occ.below, occ.for_ms, occ.min, occ.max) == \
        ("occupancy", "firewall", 0.75, 0.1, 2000, 1, 4)
    assert (msg.on, msg.key, msg.from_, msg.action, msg.nf, msg.args, msg.once) == \
        ("message", "alarm", "monitor", "start", "scrubber", ["--prefix", "{value}", "7"], True)
    assert dep.nfs[3].replicas == 0 and dep.nfs[3].run == "process"
    assert dep.nfs[3].image == "sluice-nfs:latest"
    assert dep.restart.backoff_ms == 500 and dep.restart.give_up_after == 5
    assert "4 NF(s) (3 instance(s))" in dep.describe()


@pytest.mark.parametrize(("policies", "expected"), [
    ("- {on: cpu}", "d.yaml: policies[0].on: 'cpu' is not one of: occupancy, message"),
    ("- {service: firewall}", "d.yaml: policies[0].on: missing: say what the policy reacts to: "
                              "on: occupancy or on: message (see docs/deployment.md)"),
    ("- {on: occupancy, service: firewall, above: 2, below: 0.1, max: 4}",
     "d.yaml: policies[0].above: must be at most 1.0, got 2.0"),
    ("- {on: occupancy, service: firewall, above: 0.5, below: 0.1, max: 4, colour: red}",
     "d.yaml: policies[0].colour: unknown key (known keys here: on, service, nf, above, below, "
     "for_ms, min, max)"),
    ("- {on: message, key: alarm, action: start, nf: scrubber, frm: x}",
     "d.yaml: policies[0].frm: unknown key (known keys here: on, key, from, action, nf, "
     "replicas, args, once); did you mean 'from'?"),
    ("- {on: message, key: alarm, action: start, nf: scrubber, args: ['{vlue}']}",
     "d.yaml: policies[0].args: '{vlue}': unknown placeholder {vlue}: use {key}, {value} or "
     "{from}"),
    ("- {on: message, key: alarm, action: restart, nf: scrubber}",
     "d.yaml: policies[0].action: 'restart' is not one of: start, stop, scale"),
    ("- {on: occupancy, service: firewal, above: 0.5, below: 0.1, max: 4}",
     "d.yaml: policies[0].service: 'firewal' is not the service of any NF in nfs (services: "
     "firewall, monitor, forward, scrub): fix the name; did you mean 'firewall'?"),
    ("- {on: occupancy, service: firewall, above: 0.5, below: 0.6, max: 4}",
     "d.yaml: policies[0].below: 0.6 is not below above (0.5): scale-in must start under "
     "scale-out, e.g. below: 0.125"),
    ("- {on: occupancy, service: firewall, above: 0.5, below: 0.1, min: 2, max: 4}",
     "d.yaml: policies[0]: NF 'fw' starts with 1 replica(s), outside min..max (2..4): change "
     "its replicas or the bounds"),
    ("- {on: occupancy, service: firewall, above: 0.5, below: 0.1, min: 3, max: 2}",
     "d.yaml: policies[0].max: 2 is less than min (3): raise max to at least 3"),
    ("- {on: occupancy, service: firewall, nf: mon, above: 0.5, below: 0.1, max: 2}",
     "d.yaml: policies[0].nf: no NF named 'mon' has service 'firewall' (its NFs: fw): name one "
     "of them"),
    ("- {on: message, key: alarm, action: start, nf: scrubb}",
     "d.yaml: policies[0].nf: no NF named 'scrubb' in nfs (NFs: fw, mon, fwd, scrubber): name "
     "an nfs entry (one with replicas: 0 runs only when a policy starts it); did you mean "
     "'scrubber'?"),
    ("- {on: message, key: alarm, from: nobody, action: start, nf: scrubber}",
     "d.yaml: policies[0].from: 'nobody' is not the service of any NF in nfs (services: "
     "firewall, monitor, forward, scrub) nor 'control' (a message sent over the control "
     "socket): fix the name"),
    ("- {on: message, key: alarm, action: scale, nf: scrubber}",
     "d.yaml: policies[0].replicas: missing: action scale sets the NF's replicas to this "
     "number; give it"),
    ("- {on: message, key: alarm, action: start, nf: scrubber, replicas: 0}",
     "d.yaml: policies[0].replicas: action start with 0 replicas starts nothing: give at "
     "least 1 (or use action: stop)"),
    ("- {on: message, key: alarm, action: stop, nf: scrubber, replicas: 1}",
     "d.yaml: policies[0].replicas: action stop stops every instance the policy's args select; "
     "remove replicas (or use action: scale)"),
    ("- {on: message, key: '', action: stop, nf: scrubber}",
     "d.yaml: policies[0].key: empty: name the message key, e.g. alarm"),
])
def test_policy_errors(site: Path, policies: str, expected: str) -> None:
    assert errors_of(write(site, with_policies(policies))) == [expected]


@pytest.mark.parametrize(("old", "new", "expected"), [
    ("service: forward}", "service: forward, image: x}",
     "d.yaml: nfs[2].image: only a container has an image: add 'run: container' or remove "
     "image"),
    ("service: forward}", "service: forward, run: vm}",
     "d.yaml: nfs[2].run: 'vm' is not one of: process, container"),
    ("service: forward}", "service: forward, replicas: 0}",
     "d.yaml: chain[2]: service 'forward' has no instance at start (its NFs have replicas: 0) "
     "and sluiced reads no port until every service on the chain has one: give it replicas, "
     "or leave it off the chain (a graph may name it)"),
    ("chain:", "restart: {backoff_ms: 1000, max_backoff_ms: 10}\nchain:",
     "d.yaml: restart.max_backoff_ms: 10 is less than backoff_ms (1000): raise it to at least "
     "1000"),
])
def test_run_replicas_restart_errors(site: Path, old: str, new: str, expected: str) -> None:
    assert errors_of(write(site, edit(old, new))) == [expected]


def test_container_nf_needs_no_program_here(site: Path) -> None:
    dep = load_deployment(write(site, edit(
        "program: sluice-forward,  service: forward}",
        "program: sluice-nat, service: forward, run: container, image: my/nfs:1}")))
    assert (dep.nfs[2].run, dep.nfs[2].image, dep.nfs[2].program) == \
        ("container", "my/nfs:1", "sluice-nat")
