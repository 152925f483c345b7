"""sluice trace: packet captures."""

from __future__ import annotations

from pathlib import Path

import typer

from ..runtime.traces import TraceError, generate
from .apps import trace_app
from .common import errors, fail


@trace_app.command("gen")
@errors
def trace_gen(out: Path = typer.Argument(..., help="pcap file to write."),
              ddos: bool = typer.Option(False, "--ddos",
                                        help="The DDoS scenario's mix (docs/ddos.md): normal "
                                             "clients, and from 30 % of the packets on an "
                                             "attack from --attack-prefix; with the defaults, "
                                             "the capture of examples/ddos.yaml."),
              anomaly: bool = typer.Option(False, "--anomaly",
                                           help="The anomaly-detection mix (docs/anomaly.md): "
                                                "the DDoS mix and 40 HTTP connections asking "
                                                "for /etc/passwd; with the defaults, the "
                                                "capture of examples/anomaly.yaml."),
              packets: int = typer.Option(None, "--packets", min=1,
                                          help="Packets (mix: 4096; --size: max(flows, 4096); "
                                               "--ddos: 6000; --anomaly: 8000)."),
              flows: int = typer.Option(None, "--flows", min=1,
                                        help="Flows (mix: 512; --size: 1)."),
              seed: int = typer.Option(1, "--seed", help="Random seed; same seed, same bytes."),
              size: int = typer.Option(None, "--size",
                                       help="Fixed-size UDP frames of this many bytes instead "
                                            "of the HTTP-like mix (benchmarks)."),
              clients: int = typer.Option(None, "--clients", min=1,
                                          help="--ddos: normal clients, each in its own /24 "
                                               "(default 200)."),
              attack_prefix: str = typer.Option(None, "--attack-prefix",
                                                help="--ddos: the attacking IPv4 prefix "
                                                     "(default 10.66.6.0/24)."),
              syn: bool = typer.Option(False, "--syn",
                                       help="--ddos: the attack is TCP SYNs to port 80, not "
                                            "DNS queries.")) -> None:
    """Write a deterministic capture: the HTTP-like demo mix, fixed-size UDP (--size) or
    the DDoS mix (--ddos) or the anomaly-detection mix (--anomaly)."""

    try:
        typer.echo(generate(out, packets=packets, flows=flows, seed=seed, size=size,
                            ddos=ddos, clients=clients, attack_prefix=attack_prefix, syn=syn,
                            anomaly=anomaly))
    except TraceError as e:
        raise fail(f"sluice trace gen: {e}") from None
