"""``python -m sluice.container build|check|runtime``, the NF image's command
line that docs/containers.md and scripts/build-image.sh give operators. The
code is sluice.runtime.container; this module only keeps that command line
(the one old module path kept, as it is typed by hand)."""

from __future__ import annotations

import sys

from sluice.runtime.container import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
