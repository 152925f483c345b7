"""`python -m sluice`: the `sluice` command."""

from .cli import main

main()
