"""The `sluice` command and its groups; each group's commands are in a module of its own."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="sluice",
    help="Sluice: run network functions as processes and steer packets through them.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
chain_app = typer.Typer(help="Show or replace the default chain of a running node.",
                        no_args_is_help=True)
nf_app = typer.Typer(help="The NF instances of a running node.", no_args_is_help=True)
trace_app = typer.Typer(help="Packet captures for the demo and the benchmarks.",
                        no_args_is_help=True)
graph_app = typer.Typer(help="Service graphs of a running node (docs/graphs.md).",
                        no_args_is_help=True)
rule_app = typer.Typer(help="Rules that send new flows to graphs.", no_args_is_help=True)
flow_app = typer.Typer(help="The flow table of a running node.", no_args_is_help=True)
request_app = typer.Typer(help="Cross-layer requests about flows, as NFs make them "
                               "(SkipMe, RequestMe, ChangeDefault, Message).",
                          no_args_is_help=True)
lb_app = typer.Typer(help="Load balancing across the instances of a service.",
                     no_args_is_help=True)
rx_app = typer.Typer(help="Reading the ports of a running node: pause it (packets in flight "
                          "drain, so counters stand still) and resume it.",
                     no_args_is_help=True)
app.add_typer(chain_app, name="chain")
app.add_typer(graph_app, name="graph")
app.add_typer(rule_app, name="rule")
app.add_typer(flow_app, name="flow")
flow_app.add_typer(request_app, name="request")
app.add_typer(lb_app, name="lb")
app.add_typer(rx_app, name="rx")
app.add_typer(nf_app, name="nf")
app.add_typer(trace_app, name="trace")
