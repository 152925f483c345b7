"""Sluice control plane: client, launcher, CLI, graph compiler, placement."""

__version__ = "0.1.0"
