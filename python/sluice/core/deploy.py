"""The deployment file: schema, loading and validation (docs/deployment.md).

A deployment file says what one node runs: its cores and mode, its ports,
its NFs, the default chain and, optionally, more service graphs and the
rules that send flows to them (docs/graphs.md). ``load_deployment`` reads and checks one;
every problem becomes one line of the form::

    demo.yaml: nfs[1].program: 'sluice-frewall' not found (looked in build/nfs/*/ and PATH)

that is, the file, the key path, what is wrong and what to do.

Checks come in two kinds. The schema and the cross references (unknown
keys, types, port device syntax, unique names, chain hops) depend only on
the file. The environment checks (programs found, files named in device
strings exist, cores exist) look at this machine; ``sluice check`` runs
both, and so does ``sluice up`` before it starts anything.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
)
from pydantic_core import PydanticCustomError

from . import errors, sluiced_defaults
from .errors import SluiceError, yaml_error_text  # the `X as X`: names api.py, placement/io.py
from .errors import UniqueKeyLoader as UniqueKeyLoader
from .errors import did_you_mean as did_you_mean
from .errors import kind_of as kind_of
from .errors import list_words as _list
from .errors import show_value as show_value
from .graph import GraphError, GraphSet, GraphSpec, RuleSpec, parse_graphs
from .graph import validate as validate_graphs
from .parallel import Ops, compile_data, service_table
from .paths import (
    default_build_dir,
    socket_path_for,
)
from .paths import repo_root as repo_root  # container.py imports it from here
from .policy import PolicyError
from .tracenames import gen_command, generated_trace_params

# Virtual device drivers and the device arguments each accepts (DPDK 22.11;
# a few later additions are accepted too, DPDK itself rejects them if old).
VDEV_KEYS: dict[str, frozenset[str]] = {
    "net_pcap": frozenset({"rx_pcap", "tx_pcap", "rx_iface", "rx_iface_in", "tx_iface",
                           "iface", "phy_mac", "infinite_rx"}),
    "net_tap": frozenset({"iface", "mac", "remote", "persist"}),
    "net_af_packet": frozenset({"iface", "qpairs", "blocksz", "framesz", "framecnt",
                                "qdisc_bypass", "fanout_mode"}),
    "net_null": frozenset({"size", "copy", "no-rx"}),
    "net_ring": frozenset({"nodeaction", "internal"}),
    "net_memif": frozenset({"id", "role", "bsize", "rsize", "socket", "socket-abstract",
                            "owner-uid", "owner-gid", "mac", "zero-copy", "secret"}),
}
# Device arguments that name a file to read (must exist) or to write (its
# folder must exist). Relative paths are resolved against the deployment
# file's folder.
READ_FILE_KEYS = frozenset({"rx_pcap"})
WRITE_FILE_KEYS = frozenset({"tx_pcap"})

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,30}$")  # sluiced: SL_NAME_LEN - 1
_NODE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,15}$")  # SL_NODE_NAME_MAX
_SERVICE_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,30}$")
_VDEV_RE = re.compile(r"^(net_[a-z_]*[a-z])(\d+)$")
_PCI_RE = re.compile(r"^([0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")

DOC = "docs/deployment.md"

# what sluiced takes when the launcher passes no option for a node key: a file
# that writes one of these down runs the same node as one that leaves it out
SLUICED_DEFAULTS = sluiced_defaults.NODE_DEFAULTS  # `sluiced --defaults-json`, on first use


class DeploymentError(SluiceError):
    """One or more problems in a deployment file, one line each."""

    def __init__(self, issues: list[str]):
        super().__init__("\n".join(issues))
        self.issues = issues


# -- schema -------------------------------------------------------------------

class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


def _str_args(v: Any) -> Any:
    """NF and EAL arguments: numbers are taken as their text (`--count 5`)."""
    if isinstance(v, list):
        return [str(x) if isinstance(x, int | float) and not isinstance(x, bool) else x
                for x in v]
    return v


class NodeSpec(_Strict):
    name: str = "sluice"
    mode: Literal["shared", "poll"] = "shared"
    cores: list[int] | None = None
    handoff: Literal["direct", "mgr"] | None = None
    # the ranges sluiced takes (src/mgr/main.c, docs/sluiced.md)
    ring_size: int | None = Field(default=None, ge=64, le=1 << 20)
    mbufs: int | None = Field(default=None, ge=1024, le=1 << 24)
    max_nfs: int | None = Field(default=None, ge=1, le=4096)
    max_services: int | None = Field(default=None, ge=1, le=4096)
    backpressure_us: int | None = Field(default=None, ge=0, le=10_000_000)
    idle_sleep_us: int | None = Field(default=None, ge=0, le=10_000_000)
    socket: str | None = None
    eal_args: list[str] = []
    sluiced_args: list[str] = []

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not _NODE_RE.match(v):
            raise PydanticCustomError(
                "sluice", f"{v!r} is not a valid node name: use 1-16 letters, digits, "
                "'_' or '-', starting with a letter or digit")
        return v

    @field_validator("cores")
    @classmethod
    def _cores(cls, v: list[int] | None) -> list[int] | None:
        if v is None:
            return v
        if not v:
            raise PydanticCustomError("sluice", "empty: list at least one CPU, e.g. [0, 1]")
        seen: set[int] = set()
        for c in v:
            if c < 0:
                raise PydanticCustomError("sluice", "CPU {c} is negative: CPUs count from 0",
                                          {"c": c})
            if c in seen:
                raise PydanticCustomError("sluice", "CPU {c} is listed twice: list each once",
                                          {"c": c})
            seen.add(c)
        return v

    @field_validator("ring_size")
    @classmethod
    def _ring(cls, v: int | None) -> int | None:
        if v is not None and v & (v - 1):
            raise PydanticCustomError(
                "sluice", "{v} is not a power of two: use e.g. {p}",
                {"v": v, "p": 1 << (v.bit_length() - 1)})
        return v

    _args = field_validator("eal_args", "sluiced_args", mode="before")(_str_args)


class PortSpec(_Strict):
    name: str
    device: str

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not _NAME_RE.match(v):
            raise PydanticCustomError(
                "sluice", f"{v!r} is not a valid port name: use 1-31 letters, digits, "
                "'_', '.' or '-', starting with a letter or digit")
        return v

    @field_validator("device")
    @classmethod
    def _device(cls, v: str) -> str:
        msg = device_syntax_error(v)
        if msg:
            raise PydanticCustomError("sluice", msg)
        return v


DEFAULT_IMAGE = "sluice-nfs:latest"


class NFSpec(_Strict):
    name: str
    program: str
    service: str
    args: list[str] = []
    replicas: int = Field(default=1, ge=0)
    mode: Literal["shared", "poll"] | None = None
    core: int | None = Field(default=None, ge=0)
    eal_args: list[str] = []
    run: Literal["process", "container"] = "process"
    image: str = DEFAULT_IMAGE

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not _NAME_RE.match(v):
            raise PydanticCustomError(
                "sluice", f"{v!r} is not a valid NF name: use 1-31 letters, digits, "
                "'_', '.' or '-', starting with a letter or digit")
        return v

    @field_validator("service")
    @classmethod
    def _service(cls, v: str) -> str:
        if v == "drop" or not _SERVICE_RE.match(v):
            raise PydanticCustomError(
                "sluice", f"{v!r} is not a valid service name: use 1-31 letters, digits, "
                "'_', '.' or '-', starting with a letter (and not 'drop')")
        return v

    @field_validator("program")
    @classmethod
    def _program(cls, v: str) -> str:
        if not v.strip():
            raise PydanticCustomError("sluice", "empty: name a program, e.g. sluice-forward")
        return v

    _args = field_validator("args", "eal_args", mode="before")(_str_args)


class RestartSpec(_Strict):
    """How the orchestrator restarts NFs that exit on their own (docs/deployment.md)."""

    backoff_ms: int = Field(default=500, ge=0)
    max_backoff_ms: int = Field(default=30000, ge=0)
    stable_ms: int = Field(default=10000, ge=0)
    give_up_after: int = Field(default=5, ge=1)
    window_ms: int = Field(default=60000, ge=1)


class OccupancyPolicy(_Strict):
    """Scale a service on its instances' mean rx ring occupancy."""

    on: Literal["occupancy"]
    service: str
    nf: str | None = None
    above: float = Field(ge=0.0, le=1.0)
    below: float = Field(ge=0.0, le=1.0)
    for_ms: int = Field(default=2000, ge=0)
    min: int = Field(default=1, ge=1)
    max: int = Field(ge=1)

    @field_validator("above", "below", mode="before")
    @classmethod
    def _fraction(cls, v: Any) -> Any:
        return float(v) if isinstance(v, int) and not isinstance(v, bool) else v


PLACEHOLDERS = ("key", "value", "from")
_PLACEHOLDER_RE = re.compile(r"\{([^{}]*)\}")


class MessagePolicy(_Strict):
    """React to an NF's Message(key, value): start, stop or scale an NF."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True,
                              populate_by_name=True)

    on: Literal["message"]
    key: str
    from_: str | None = Field(default=None, alias="from")
    action: Literal["start", "stop", "scale"]
    nf: str
    replicas: int | None = Field(default=None, ge=0)
    args: list[str] = []
    once: bool = False

    _args = field_validator("args", mode="before")(_str_args)

    @field_validator("key")
    @classmethod
    def _key(cls, v: str) -> str:
        if not v:
            raise PydanticCustomError("sluice", "empty: name the message key, e.g. alarm")
        return v

    @field_validator("args")
    @classmethod
    def _placeholders(cls, v: list[str]) -> list[str]:
        for a in v:
            for name in _PLACEHOLDER_RE.findall(a):
                if name not in PLACEHOLDERS:
                    raise PydanticCustomError(
                        "sluice", "'{a}': unknown placeholder {n}: use {k}, {v} or {f}",
                        {"a": a, "n": "{" + name + "}", "k": "{key}", "v": "{value}",
                         "f": "{from}"})
        return v


Policy = Annotated[OccupancyPolicy | MessagePolicy, Field(discriminator="on")]
POLICY_KINDS: dict[str, type[BaseModel]] = {"occupancy": OccupancyPolicy,
                                            "message": MessagePolicy}
POLICY_UNION = errors.TaggedUnion(
    field="policies", tag="on", variants=POLICY_KINDS,
    missing="say what the policy reacts to: on: occupancy or on: message")


class Deployment(_Strict):
    node: NodeSpec = NodeSpec()
    ports: list[PortSpec]
    nfs: list[NFSpec] = []
    chain: list[str]
    graphs: list[GraphSpec] = []
    rules: list[RuleSpec] = []
    restart: RestartSpec = RestartSpec()
    policies: list[Policy] = []
    graph_policies: list[Any] = Field(
        [], description="Policies (docs/graphs.md, \"Policies\"), each compiled at load into "
                        "a graph with its rules, applied like those of graphs.")

    _source: str = PrivateAttr(default="<deployment>")
    _policy_graphs: list[GraphSpec] = PrivateAttr(default_factory=list)
    _base_dir: Path = PrivateAttr(default_factory=Path.cwd)

    # -- loading ---------------------------------------------------------------

    @classmethod
    def from_dict(cls, data: Any, source: str = "<deployment>",
                  base_dir: str | Path | None = None, check_env: bool = True,
                  build_dir: Path | None = None) -> Deployment:
        """Validates a parsed deployment; raises DeploymentError.

        ``source`` names the file in messages; relative paths are resolved
        against ``base_dir`` (default: the current directory).
        """
        if data is None:
            raise DeploymentError([f"{source}: the file is empty; a deployment needs at least "
                                   f"ports and chain (see {DOC})"])
        if not isinstance(data, dict):
            raise DeploymentError([f"{source}: expected a mapping of keys (node, ports, nfs, "
                                   f"chain), got {kind_of(data)} (see {DOC})"])
        try:
            dep = cls.model_validate(data)
        except ValidationError as e:
            raise DeploymentError([f"{source}: {m}"
                                   for m in pydantic_issues(e, cls, data)]) from None
        dep._source = source
        dep._base_dir = Path(base_dir).resolve() if base_dir is not None else Path.cwd()
        issues = dep._compile_policies()
        issues += dep.structure_issues()
        if check_env:
            issues += dep.environment_issues(build_dir)
        if issues:
            raise DeploymentError([f"{source}: {m}" for m in issues])
        return dep

    @property
    def source(self) -> str:
        return self._source

    @property
    def base_dir(self) -> Path:
        return self._base_dir

    # -- checks that need only the file ---------------------------------------

    def structure_issues(self) -> list[str]:
        issues: list[str] = []
        port_names: dict[str, int] = {}
        devices: dict[str, int] = {}
        for i, p in enumerate(self.ports):
            if p.name in port_names:
                issues.append(f"ports[{i}].name: port '{p.name}' is already declared at "
                              f"ports[{port_names[p.name]}]: give each port its own name")
            else:
                port_names[p.name] = i
            dev = p.device.split(",", 1)[0]
            if dev in devices:
                issues.append(f"ports[{i}].device: device '{dev}' is already used by "
                              f"ports[{devices[dev]}]: give each device its own number, e.g. "
                              f"{_next_instance(dev, devices)}")
            else:
                devices[dev] = i
        nf_names: dict[str, int] = {}
        for i, nf in enumerate(self.nfs):
            if nf.name in nf_names:
                issues.append(f"nfs[{i}].name: NF '{nf.name}' is already declared at "
                              f"nfs[{nf_names[nf.name]}]: give each NF its own name (use "
                              f"replicas for more instances of one NF)")
            else:
                nf_names[nf.name] = i
        if self.node.mode == "poll" and self.node.cores is not None and len(self.node.cores) < 2:
            issues.append(f"node.cores: poll mode needs at least 2 CPUs (sluiced's control and "
                          f"I/O threads each busy-poll one), got {list(self.node.cores)}: list "
                          f"two CPUs or use mode: shared")
        for i, nf in enumerate(self.nfs):
            if nf.run == "process" and "image" in nf.model_fields_set:
                issues.append(f"nfs[{i}].image: only a container has an image: add "
                              f"'run: container' or remove image")
            if nf.run == "container":
                problem = container_program_problem(nf.program)
                if problem:
                    issues.append(f"nfs[{i}].program: {problem}")
        issues += self._chain_issues(list(port_names))
        issues += self._policy_issues()
        issues += self._graph_issues(list(port_names))
        n_inst = sum(nf.replicas for nf in self.nfs)
        if self.node.max_nfs is not None and n_inst > self.node.max_nfs:
            issues.append(f"node.max_nfs: {self.node.max_nfs} is fewer than the {n_inst} NF "
                          f"instances the deployment starts: raise it to at least {n_inst}")
        n_svc = len(self.services())
        if self.node.max_services is not None and n_svc > self.node.max_services:
            issues.append(f"node.max_services: {self.node.max_services} is fewer than the "
                          f"{n_svc} services of the NFs: raise it to at least {n_svc}")
        return issues

    def _compile_policies(self) -> list[str]:
        """Compiles ``graph_policies`` into ``_policy_graphs``; the problems,
        one line each, naming ``graph_policies[N].KEY``."""
        table = self.declaration_table()
        issues: list[str] = []
        self._policy_graphs = []
        for n, item in enumerate(self.graph_policies):
            try:
                self._policy_graphs.append(compile_data({"policy": item}, "", table).graph)
            except PolicyError as e:
                issues += [f"graph_policies[{n}]{m.removeprefix(': policy')}" for m in e.issues]
        return issues

    def declaration_table(self) -> dict[str, Ops]:
        """The operations of every NF a policy may name: the sample NFs' (by
        kind) and each service's, from its first NF's program (sluice-KIND)."""
        return service_table((nf.service, nf.program) for nf in self.nfs)

    def _graph_issues(self, ports: list[str]) -> list[str]:
        """The graphs' and rules' problems; a policy's graph's are named by
        its ``graph_policies[N]`` (a key of the graph it compiled to after it)."""
        def where(x: re.Match[str]) -> str:
            i, key = int(x[2]), x[3] or ""
            if i < len(self.graphs) or key in ("", ".name"):
                return x[1] + self.graph_where(i) + key
            return f"{x[1]}{self.graph_where(i)}: its compiled graph's {key[1:]}"
        return [re.sub(r"(^|at )graphs\[(\d+)\]([.\w\[\]-]*)", where, m)
                for m in validate_graphs(self.all_graphs(), self.rules, self.services(), ports,
                                         allow_default=False)]

    def all_graphs(self) -> list[GraphSpec]:
        """The graphs to apply: ``graphs``, then those ``graph_policies`` compile to."""
        return [*self.graphs, *self._policy_graphs]

    def graph_where(self, i: int) -> str:
        """The key of ``all_graphs()[i]``: ``graphs[i]`` or ``graph_policies[N]``."""
        n = len(self.graphs)
        return f"graphs[{i}]" if i < n else f"graph_policies[{i - n}]"

    def _chain_issues(self, ports: list[str]) -> list[str]:
        issues: list[str] = []
        services = self.services()
        if not self.chain:
            return [f"chain: empty: list the hops, e.g. [{', '.join(services[:2] or ['drop'])}"
                    f"{', port:' + ports[-1] if ports else ''}]"]
        seen: dict[str, int] = {}
        for i, hop in enumerate(self.chain):
            where = f"chain[{i}]"
            if i > 0 and _is_sink(self.chain[i - 1]):
                issues.append(f"{where}: '{hop}' comes after '{self.chain[i - 1]}', which "
                              f"ends the chain: remove it or move the sink to the end")
                break
            if hop == "drop":
                continue
            if hop.startswith("port:"):
                name = hop[5:]
                if name not in ports:
                    issues.append(f"{where}: no port named '{name}' (ports: "
                                  f"{_list(ports)}){did_you_mean(name, ports, 'port:')}")
                continue
            if hop not in services:
                options = services + [f"port:{p}" for p in ports] + ["drop"]
                issues.append(f"{where}: '{hop}' is not the service of any NF in nfs "
                              f"(services: {_list(services)}), nor port:NAME nor drop: "
                              f"add an NF with service '{hop}' or fix the name"
                              f"{did_you_mean(hop, options)}")
                continue
            if not any(nf.replicas for nf in self.nfs if nf.service == hop):
                issues.append(f"{where}: service '{hop}' has no instance at start (its NFs "
                              f"have replicas: 0) and sluiced reads no port until every "
                              f"service on the chain has one: give it replicas, or leave it "
                              f"off the chain (a graph may name it)")
            if hop in seen:
                if i == len(self.chain) - 1:
                    continue  # the last hop may close a loop (the speedtest chain)
                issues.append(f"{where}: service '{hop}' is already hop chain[{seen[hop]}]: "
                              f"a chain visits each service once (only the last hop may "
                              f"repeat an earlier one, to close a loop)")
            seen[hop] = i
        closes_loop = self.chain[-1] in self.chain[:-1]
        if not issues and not _is_sink(self.chain[-1]) and not closes_loop:
            sink = f"port:{ports[-1]}" if ports else "drop"
            issues.append(f"chain: ends with service '{self.chain[-1]}', so its packets would "
                          f"be dropped as end_of_chain: end the chain with port:NAME or drop, "
                          f"e.g. add '{sink}'")
        return issues

    def _policy_issues(self) -> list[str]:
        issues: list[str] = []
        services = self.services()
        names = [nf.name for nf in self.nfs]
        r = self.restart
        if r.max_backoff_ms < r.backoff_ms:
            issues.append(f"restart.max_backoff_ms: {r.max_backoff_ms} is less than "
                          f"backoff_ms ({r.backoff_ms}): raise it to at least {r.backoff_ms}")
        scaled: dict[str, int] = {}
        for i, pol in enumerate(self.policies):
            where = f"policies[{i}]"
            if isinstance(pol, OccupancyPolicy):
                if pol.service not in services:
                    issues.append(f"{where}.service: '{pol.service}' is not the service of any "
                                  f"NF in nfs (services: {_list(services)}): fix the name"
                                  f"{did_you_mean(pol.service, services)}")
                    continue
                owners = [nf for nf in self.nfs if nf.service == pol.service]
                if pol.nf is not None:
                    if pol.nf not in [nf.name for nf in owners]:
                        issues.append(f"{where}.nf: no NF named '{pol.nf}' has service "
                                      f"'{pol.service}' (its NFs: "
                                      f"{_list([nf.name for nf in owners])}): name one of them")
                        continue
                    target = next(nf for nf in owners if nf.name == pol.nf)
                elif len(owners) > 1:
                    issues.append(f"{where}: service '{pol.service}' has several NFs "
                                  f"({_list([nf.name for nf in owners])}): say which one to "
                                  f"scale with nf: NAME")
                    continue
                else:
                    target = owners[0]
                if pol.below >= pol.above:
                    issues.append(f"{where}.below: {pol.below:g} is not below above "
                                  f"({pol.above:g}): scale-in must start under scale-out, "
                                  f"e.g. below: {pol.above / 4:g}")
                if pol.max < pol.min:
                    issues.append(f"{where}.max: {pol.max} is less than min ({pol.min}): "
                                  f"raise max to at least {pol.min}")
                elif not pol.min <= target.replicas <= pol.max:
                    issues.append(f"{where}: NF '{target.name}' starts with {target.replicas} "
                                  f"replica(s), outside min..max ({pol.min}..{pol.max}): "
                                  f"change its replicas or the bounds")
                if target.name in scaled:
                    issues.append(f"{where}: NF '{target.name}' is already scaled by "
                                  f"policies[{scaled[target.name]}]: one occupancy policy "
                                  f"per NF")
                scaled[target.name] = i
            else:
                if pol.nf not in names:
                    issues.append(f"{where}.nf: no NF named '{pol.nf}' in nfs (NFs: "
                                  f"{_list(names)}): name an nfs entry (one with replicas: "
                                  f"0 runs only when a policy starts it)"
                                  f"{did_you_mean(pol.nf, names)}")
                if pol.from_ is not None and pol.from_ != "control" \
                        and pol.from_ not in services:
                    issues.append(f"{where}.from: '{pol.from_}' is not the service of any NF "
                                  f"in nfs (services: {_list(services)}) nor 'control' (a "
                                  f"message sent over the control socket): fix the name"
                                  f"{did_you_mean(pol.from_, services)}")
                if pol.action == "scale" and pol.replicas is None:
                    issues.append(f"{where}.replicas: missing: action scale sets the NF's "
                                  f"replicas to this number; give it")
                if pol.action == "start" and pol.replicas == 0:
                    issues.append(f"{where}.replicas: action start with 0 replicas starts "
                                  f"nothing: give at least 1 (or use action: stop)")
                if pol.action == "stop" and pol.replicas is not None:
                    issues.append(f"{where}.replicas: action stop stops every instance the "
                                  f"policy's args select; remove replicas (or use action: "
                                  f"scale)")
        return issues

    # -- checks that look at this machine -------------------------------------

    def environment_issues(self, build_dir: Path | None = None) -> list[str]:
        issues: list[str] = []
        online = online_cpus()
        if self.node.cores is not None:
            for i, c in enumerate(self.node.cores):
                if c not in online:
                    issues.append(f"node.cores[{i}]: CPU {c} does not exist on this machine "
                                  f"(CPUs: {_ranges(online)}): list existing CPUs")
        for i, nf in enumerate(self.nfs):
            if nf.core is not None and nf.core not in online:
                issues.append(f"nfs[{i}].core: CPU {nf.core} does not exist on this machine "
                              f"(CPUs: {_ranges(online)}): pick an existing CPU")
        for i, p in enumerate(self.ports):
            for key, value in device_args(p.device)[1]:
                if key in READ_FILE_KEYS or key in WRITE_FILE_KEYS:
                    path = self.resolve_path(value)
                    if key in READ_FILE_KEYS and not path.is_file() and not _generated(path):
                        issues.append(f"ports[{i}].device: {key}={value}: no file {path} "
                                      f"(relative paths start at the deployment file's "
                                      f"folder): fix the path, or make "
                                      f"{self._capture_hint(path)}")
                    if key in WRITE_FILE_KEYS and not path.parent.is_dir():
                        issues.append(f"ports[{i}].device: {key}={value}: no folder "
                                      f"{path.parent} (relative paths start at the deployment "
                                      f"file's folder): create it or fix the path")
        bdir = build_dir or default_build_dir()
        for i, nf in enumerate(self.nfs):
            if nf.run == "container":
                continue  # the program is in the image
            if find_program(nf.program, bdir, self.base_dir) is None:
                issues.append(f"nfs[{i}].program: {program_not_found(nf.program, bdir)}")
        return issues

    def _capture_hint(self, path: Path) -> str:
        """How to make a missing capture: the DDoS mix (an attack in it) for a
        deployment with the DDoS detector or a file named ddos, since the
        detector sees nothing in the plain mix of `sluice trace gen`."""
        ddos = any(Path(nf.program).name == "sluice-ddos-detect" for nf in self.nfs)
        cmd = gen_command(path, ddos=ddos)
        if "--anomaly" in cmd.split():
            return f"the anomaly-detection capture (a flood and exploits) with `{cmd}`"
        if "--ddos" not in cmd.split():
            return f"a capture with `{cmd}`"
        return f"the DDoS capture (normal clients and an attack) with `{cmd}`"

    # -- what the launcher needs ------------------------------------------------

    def services(self) -> list[str]:
        """Service names of the NFs, in order of first appearance."""
        return list(dict.fromkeys(nf.service for nf in self.nfs))

    def cores(self) -> list[int]:
        """The node's CPUs: node.cores, or every CPU this process may use."""
        if self.node.cores is not None:
            return list(self.node.cores)
        return sorted(os.sched_getaffinity(0))

    def socket_path(self) -> Path:
        if self.node.socket:
            return self.resolve_path(self.node.socket)
        return socket_path_for(self.node.name)

    def resolve_path(self, value: str) -> Path:
        p = Path(value).expanduser()
        return p if p.is_absolute() else (self.base_dir / p).resolve()

    def device_for(self, port: PortSpec) -> str:
        """The device string with file paths made absolute (for sluiced)."""
        dev, args = device_args(port.device)
        out = [dev]
        for k, v in args:
            if k in READ_FILE_KEYS or k in WRITE_FILE_KEYS:
                v = str(self.resolve_path(v))
            out.append(f"{k}={v}")
        return ",".join(out)

    def trace_files(self) -> list[Path]:
        """Files the ports read from (rx_pcap), resolved."""
        return [self.resolve_path(v) for p in self.ports
                for k, v in device_args(p.device)[1] if k in READ_FILE_KEYS]

    def describe(self) -> str:
        n_inst = sum(nf.replicas for nf in self.nfs)
        cores = _ranges(set(self.cores()))
        text = (f"node {self.node.name} ({self.node.mode} mode, CPUs {cores}), "
                f"{len(self.ports)} port(s), {len(self.nfs)} NF(s) ({n_inst} instance(s)), "
                f"chain {' -> '.join(self.chain)}")
        if self.graphs:
            text += f", graph(s) {', '.join(g.name for g in self.graphs)}"
        if self._policy_graphs:
            text += (f", policy graph(s) {', '.join(g.name for g in self._policy_graphs)} "
                     f"({sum(len(g.groups) for g in self._policy_graphs)} parallel group(s))")
        n_rules = len(self.rule_params())
        if n_rules:
            text += f", {n_rules} rule(s)"
        return text

    def rule_params(self) -> list[dict[str, Any]]:
        """The ``rule.add`` params of every rule: each graph's ``match``, then ``rules``."""
        return GraphSet(graphs=self.all_graphs(), rules=self.rules).rule_params()


def load_deployment(path: str | Path, check_env: bool = True,
                    build_dir: Path | None = None) -> Deployment:
    """Reads and validates a deployment file; raises DeploymentError."""
    path = Path(path)
    data = read_yaml(path)
    return Deployment.from_dict(data, source=str(path), base_dir=path.resolve().parent,
                                check_env=check_env, build_dir=build_dir)


def load_graphs(path: str | Path, services: Iterable[str] | None = None,
                ports: Iterable[str] | None = None) -> GraphSet:
    """Reads and checks a graph file; raises GraphError.

    A deployment file is accepted too: its ``graphs`` and ``rules`` are
    taken, checked against its NFs and ports; and a policy file (``policy:``,
    docs/graphs.md "Policies"): the graph it compiles to, with its rules.
    ``services`` and ``ports`` (if given) are those the graphs may use."""
    source = str(path)
    try:
        data = read_yaml(path, "graph file")
        if isinstance(data, dict) and "policy" in data:
            graph = compile_data(data, source).graph
            return parse_graphs({"graphs": [graph.model_dump()]}, source, services, ports)
        if isinstance(data, dict) and {"ports", "nfs", "chain", "node"} & set(data):
            dep = Deployment.from_dict(data, source=source,
                                       base_dir=Path(path).resolve().parent, check_env=False)
            if not dep.all_graphs() and not dep.rules:
                raise GraphError([f"{source}: a deployment with no graphs and no rules: "
                                  f"nothing for `sluice graph apply` to apply; its chain is "
                                  f"set by `sluice chain set`, the whole file by `sluice "
                                  f"apply {source}`"])
            return GraphSet(graphs=dep.all_graphs(), rules=dep.rules)
    except (DeploymentError, PolicyError) as e:
        raise GraphError(e.issues) from None
    return parse_graphs(data, source, services, ports)


def read_yaml(path: str | Path, what: str = "deployment file") -> Any:
    """The parsed YAML of a file (a key given twice is an error); raises
    DeploymentError with one line that names the file."""
    path = Path(path)
    source = str(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise DeploymentError([f"{source}: no such file"]) from None
    except IsADirectoryError:
        raise DeploymentError([f"{source}: is a folder, not a {what}"]) from None
    except (OSError, UnicodeDecodeError) as e:
        raise DeploymentError([f"{source}: cannot read: {e}"]) from None
    try:
        return yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506 (a SafeLoader)
    except (yaml.YAMLError, RecursionError) as e:
        raise DeploymentError([f"{source}: {yaml_error_text(e)}"]) from None


# -- port devices ---------------------------------------------------------------

def device_args(device: str) -> tuple[str, list[tuple[str, str]]]:
    """Splits 'net_pcap0,rx_pcap=x,infinite_rx=1' into its name and arguments."""
    parts = device.split(",")
    args = []
    for part in parts[1:]:
        k, _, v = part.partition("=")
        args.append((k.strip(), v.strip()))
    return parts[0].strip(), args


def device_syntax_error(device: str) -> str | None:
    """What is wrong with a DPDK device string, or None."""
    known = ", ".join(VDEV_KEYS)
    if not device.strip():
        return (f"empty: give a DPDK device such as net_null0 or "
                f"net_pcap0,rx_pcap=FILE (drivers: {known}, or a PCI address)")
    parts = device.split(",")
    dev = parts[0].strip()
    if _PCI_RE.match(dev):
        driver = None
    else:
        m = _VDEV_RE.match(dev)
        if m is None:
            bare = re.sub(r"\d+$", "", dev)
            if bare in VDEV_KEYS:
                return f"'{dev}' needs an instance number: write {bare}0 (or {bare}1, ...)"
            return (f"'{dev}' is not a known device: use one of {known} followed by a "
                    f"number (e.g. net_pcap0), or a PCI address like 0000:03:00.0"
                    f"{did_you_mean(bare, list(VDEV_KEYS))}")
        driver = m.group(1)
        if driver not in VDEV_KEYS:
            return (f"unknown driver '{driver}' in '{dev}': use one of {known}, or a PCI "
                    f"address like 0000:03:00.0{did_you_mean(driver, list(VDEV_KEYS))}")
    seen: set[str] = set()
    for part in parts[1:]:
        k, eq, v = part.partition("=")
        k = k.strip()
        if not eq or not k or not v.strip():
            return (f"'{part}' is not key=value: device arguments are comma-separated "
                    f"key=value pairs after the device name, e.g. "
                    f"net_pcap0,rx_pcap=FILE,infinite_rx=1")
        if driver is not None and k not in VDEV_KEYS[driver]:
            return (f"{driver} has no argument '{k}' (it takes: "
                    f"{', '.join(sorted(VDEV_KEYS[driver]))})"
                    f"{did_you_mean(k, list(VDEV_KEYS[driver]))}")
        if k in seen:
            return f"argument '{k}' is given twice: give it once"
        seen.add(k)
    return None


# -- programs ---------------------------------------------------------------------

def find_program(program: str, build_dir: Path | None = None,
                 base_dir: Path | None = None) -> Path | None:
    """Where an NF program is: build/nfs/<x>/sluice-<x>, a path, or on PATH."""
    if "/" in program:
        p = Path(program).expanduser()
        if not p.is_absolute():
            p = (base_dir or Path.cwd()) / p
        return p.resolve() if p.is_file() and os.access(p, os.X_OK) else None
    bdir = build_dir or default_build_dir()
    if program.startswith("sluice-"):
        p = bdir / "nfs" / program[len("sluice-"):] / program
        if p.is_file() and os.access(p, os.X_OK):
            return p
    found = shutil.which(program)
    return Path(found) if found else None


def container_program_problem(program: str) -> str | None:
    """Why ``program`` cannot be an NF with ``run: container``, or None: the
    image holds only the Sluice NFs (``sluice-*``) of build/nfs/. The one
    check of this, used by the deployment's validation (``sluice check``,
    ``sluice up``, ``sluice apply``) and by ``sluice.runtime.container.wrap``, so
    that they cannot disagree."""
    if Path(program).name.startswith("sluice-"):
        return None
    return (f"'{program}' is not a Sluice NF, and only the Sluice NFs built in build/nfs/ "
            f"(sluice-*) are in the container image: use run: process for it")


def built_programs(build_dir: Path) -> list[str]:
    return sorted(p.name for p in build_dir.glob("nfs/*/sluice-*")
                  if p.is_file() and os.access(p, os.X_OK))


def program_not_found(program: str, build_dir: Path) -> str:
    if "/" in program:
        return (f"'{program}' not found or not executable (relative paths are resolved "
                f"against the deployment file's folder)")
    msg = f"'{program}' not found (looked in {_show(build_dir)}/nfs/*/ and PATH)"
    if not build_dir.is_dir():
        return f"{msg}; {_show(build_dir)}/ does not exist: build first with `make build`"
    built = built_programs(build_dir)
    if program.startswith("sluice-"):
        # compare what follows the common "sluice-", which alone makes any two
        # names look alike ('sluice-nope' is not close to 'sluice-speedtest')
        hint = did_you_mean(program[len("sluice-"):],
                            [b[len("sluice-"):] for b in built], prefix="sluice-")
    else:
        hint = did_you_mean(program, built)
    if not hint and built:
        hint = f"; the NFs built there: {', '.join(built)}"
    return msg + hint


# -- helpers ------------------------------------------------------------------------

def online_cpus() -> set[int]:
    try:
        text = Path("/sys/devices/system/cpu/online").read_text().strip()
        return set(_parse_ranges(text))
    except (OSError, ValueError):
        return set(range(os.cpu_count() or 1))


def _parse_ranges(text: str) -> Iterable[int]:
    for part in text.split(","):
        a, _, b = part.partition("-")
        yield from range(int(a), int(b or a) + 1)


def _ranges(cpus: set[int]) -> str:
    out: list[str] = []
    for c in sorted(cpus):
        if out and out[-1].split("-")[-1] == str(c - 1):
            out[-1] = f"{out[-1].split('-')[0]}-{c}"
        else:
            out.append(str(c))
    return ",".join(out)


def _is_sink(hop: str) -> bool:
    return hop == "drop" or hop.startswith("port:")


def _generated(path: Path) -> bool:
    return generated_trace_params(path) is not None


def _show(p: Path) -> str:
    """A path as short as it can be said: relative to the current folder if inside."""
    try:
        rel = p.resolve().relative_to(Path.cwd())
        return str(rel) if str(rel) != "." else "."
    except ValueError:
        return str(p)


def _next_instance(dev: str, used: dict[str, int]) -> str:
    m = _VDEV_RE.match(dev)
    if not m:
        return "another PCI address"
    n = int(m.group(2)) + 1
    while f"{m.group(1)}{n}" in used:
        n += 1
    return f"{m.group(1)}{n}"


def pydantic_issues(e: ValidationError, root: type[BaseModel] | None = None,
                    data: Any = None, doc: str = DOC) -> list[str]:
    """One line per schema problem (errors.pydantic_issues): ``root`` is the
    model that was validated (default Deployment), with its policies a
    union told apart by ``on``."""
    return errors.pydantic_issues(e, root or Deployment, data, doc=doc, unions=(POLICY_UNION,))
