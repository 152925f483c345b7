"""Sluice control plane: client, launcher, CLI, graph compiler, placement."""

__version__ = "0.1.0"

# The package in layers, lowest first: a module imports only from its own
# layer or a lower one, at module top, and the imports between modules form no
# cycle (tests/python/test_layers.py checks it; docs/architecture.md, "Python
# layers"). The layer of a module in sluice.core or sluice.runtime is its
# package; every other top-level module or package of sluice is named here
# ("__init__" is this file, a package such as api/ counts as one module).
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    # pure: schemas, checks, error text, names, decisions; no sockets, no
    # processes (but core.sluiced_defaults, which asks the built sluiced once,
    # lazily, for its option table: the one description of sluiced's options).
    # placement/ is the placement engine, a library with its own documented
    # path (`from sluice.placement import solve`, docs/placement.md): pure
    # algorithms, plus the loading of its input files, plots and `sluice place`
    ("core", ("__init__", "core", "placement")),
    # I/O: sluiced's socket, processes, the host, containers, captures
    ("runtime", ("runtime",)),
    # the REST API and the dashboard's static files it serves
    ("api", ("api", "web")),
    # the command line; container is `python -m sluice.container`'s entry point
    ("cli", ("cli", "top", "up", "container", "__main__")),
]
