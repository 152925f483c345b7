"""Write `stats {"schema": true}` of a real sluiced to stats_schema.json, next to this
file and the package's copy.

The schema does not depend on the deployment; this one is the smallest that
starts (two null ports, one forward NF). Run from the tree's root, as root,
after `ninja -C build`:

    PYTHONPATH=python:tests/integration .venv/bin/python tests/python/data/capture_stats_schema.py

tests/python/test_counters.py reads the file; regenerate it when sluiced's
descriptor tables (src/mgr/stats/) change.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from conftest import build_dir, deployment, prog

from sluice.runtime.launch import Launcher

OUT = Path(__file__).resolve().parent / "stats_schema.json"
# the package's copy (sluice.core.counters.builtin()); test_counters.py checks they are equal
PACKAGE = Path(__file__).resolve().parents[3] / "python" / "sluice" / "core" / "stats_schema.json"


def main() -> None:
    node = f"schema{os.getpid() % 10000}"
    dep = deployment(node,
                     ports=[{"name": "in", "device": "net_null0"},
                            {"name": "out", "device": "net_null1,no-rx=1"}],
                     nfs=[{"name": "fwd", "program": prog("forward"), "service": "forward"}],
                     chain=["forward", "port:out"])
    with tempfile.TemporaryDirectory() as logs:
        run = Launcher(dep, log_dir=Path(logs), build_dir=build_dir())
        run.start()
        try:
            schema = run.client.call("stats", schema=True)
        finally:
            run.stop()
    for out in (OUT, PACKAGE):
        out.write_text(json.dumps(schema, indent=1) + "\n")
        print(f"wrote {out}")


if __name__ == "__main__":
    main()
