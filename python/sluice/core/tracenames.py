"""The captures of examples/traces/ the package knows how to make: their
names, their generator arguments and the command that writes one (core
layer: the deployment checks name them; traces.py writes them)."""

from __future__ import annotations

from pathlib import Path

from .paths import repo_root

DEMO_PACKETS = 4096
DEMO_FLOWS = 512
DEMO_SEED = 1

DDOS_PACKETS = 6000
DDOS_CLIENTS = 200
DDOS_ATTACK_PREFIX = "10.66.6.0/24"

# examples/anomaly.yaml's capture: the DDoS mix and exploit HTTP connections.
ANOMALY_PACKETS = 8000
ANOMALY_EXPLOITS = 40
ANOMALY_EXPLOIT_PREFIX = "10.77.7.0/24"

# The command that writes the DDoS capture.
DDOS_GEN_COMMAND = "sluice trace gen --ddos"

# Traces the launcher makes when a deployment reads one that is missing:
# file name under examples/traces/ -> generator arguments.
GENERATED: dict[str, dict[str, object]] = {
    "http-mix.pcap": {"packets": DEMO_PACKETS, "flows": DEMO_FLOWS, "seed": DEMO_SEED},
    "ddos.pcap": {"packets": DDOS_PACKETS, "clients": DDOS_CLIENTS,
                  "attack_prefix": DDOS_ATTACK_PREFIX, "seed": DEMO_SEED},
    "anomaly.pcap": {"packets": ANOMALY_PACKETS, "exploits": ANOMALY_EXPLOITS,
                     "exploit_prefix": ANOMALY_EXPLOIT_PREFIX, "seed": DEMO_SEED},
}


def demo_trace_path() -> Path:
    return repo_root() / "examples" / "traces" / "http-mix.pcap"


def generated_trace_params(path: Path) -> dict[str, object] | None:
    """Generator arguments if ``path`` is a trace of examples/traces/ that
    the launcher can make, else None."""
    path = Path(path).resolve()
    if path.parent != demo_trace_path().parent:
        return None
    return GENERATED.get(path.name)


def gen_command(path: Path, ddos: bool = False) -> str:
    """The command that writes a capture at ``path``: the DDoS mix for a
    DDoS deployment (``ddos``) or a file named like one (``*ddos*``), since
    the detector sees nothing in the plain HTTP-like mix; else the mix."""
    if ddos or "ddos" in Path(path).name.lower():
        return f"{DDOS_GEN_COMMAND} {path}"
    return f"sluice trace gen {path}"
