"""`python -m sluice.cli`, as the `sluice` command."""

from . import main

main()
