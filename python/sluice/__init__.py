"""Sluice control plane: client, launcher, CLI, graph compiler, placement."""

__version__ = "0.1.0"

# The package's modules in layers, lowest first: a module imports only from
# its own layer or a lower one, at module top (tests/python/test_layers.py
# checks it, docs/architecture.md, "Python layers"). A package (api/, cli/,
# placement/, web/) counts as one module; "__init__" is this file.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    # pure: schemas, checks, error text, names, decisions; no sockets, no processes
    # (but sluiced_defaults, which asks the built sluiced once, lazily, for its
    # option table: the one description of sluiced's options and defaults)
    ("core", ("__init__", "errors", "paths", "sluiced_defaults", "tracenames", "counters",
              "graph", "deploy", "reconcile",
              "placement")),
    # I/O: sluiced's socket, processes, the host, containers, captures
    ("runtime", ("client", "traces", "container", "procs", "hostclean", "livetable",
                 "launch", "applying", "orchestrator")),
    ("api", ("api", "web")),
    ("cli", ("top", "up", "cli", "__main__")),
]
