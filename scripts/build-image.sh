#!/usr/bin/env bash
# Builds the NF container image (sluice-nfs:latest) from build/nfs/* unless it
# is up to date with the binaries. Options: --image NAME, --build-dir DIR,
# --force. See docs/containers.md.
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python -m sluice.container build "$@"
