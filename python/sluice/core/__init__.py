"""The pure layer of sluice (sluice.LAYERS): schemas of the deployment, NF,
graph, match and rule; error text; rates and counters; the graph compiler;
the orchestrator's decisions. Nothing here opens a socket or starts a process,
but sluiced_defaults, which runs the built sluiced once, lazily, for its option
table. Imports nothing from sluice.runtime, sluice.api or sluice.cli."""
