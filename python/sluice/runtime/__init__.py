"""The I/O layer of sluice (sluice.LAYERS): sluiced's control socket (client),
processes and the launcher, the orchestrator's executor, containers, the
host's leftovers, captures and the live table. Builds on sluice.core only;
sluice.api and sluice.cli build on it."""
