#!/usr/bin/env bash
# Installs everything Sluice needs on a fresh Debian 12 machine, idempotently:
# system packages, the Python virtualenv (.venv) and hugepages.
# Usage: scripts/setup.sh            (run as root)
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PKGS=(
    libdpdk-dev dpdk-dev meson ninja-build pkg-config gcc
    libcmocka-dev libjansson-dev libyaml-dev libpcap-dev libnuma-dev
    python3-venv python3-dev iproute2 iputils-ping util-linux
    # make format-check: clang-format 14, as Debian 12 ships it (.clang-format)
    clang-format
    # NFs in containers (docs/containers.md): podman with runc (crun fails
    # here); python/sluice/runtime/container.py points podman at scripts/containers.conf
    # through CONTAINERS_CONF, so no system file is written.
    podman runc
    # NFs of nfs/: sluice-ids (Hyperscan), sluice-dpi (nDPI), sluice-vpn
    # (OpenSSL; DPDK's crypto PMDs come with libdpdk-dev)
    libhyperscan-dev libndpi-dev libssl-dev
    # NF tests against the kernel's own stacks: TCP downloads and streams
    # through the NFs, the hop traceroute shows, tshark's dissectors
    curl iperf3 traceroute tshark
)

if [ "$(id -u)" -ne 0 ]; then
    echo "scripts/setup.sh: must run as root (it installs packages and reserves hugepages); try: sudo $0" >&2
    exit 1
fi

missing=()
for p in "${APT_PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv with $($PY --version)"
    "$PY" -m venv .venv
fi
# Reinstall the package when pyproject.toml changed since the last install.
if [ ! -f .venv/.stamp ] || [ pyproject.toml -nt .venv/.stamp ]; then
    echo "setup: installing the sluice Python package and its dependencies"
    .venv/bin/pip install -q --upgrade pip
    .venv/bin/pip install -q -e '.[dev]'
    touch .venv/.stamp
fi

# The dashboard's browser test (tests/web/): Debian's chromium, driven by
# playwright-core from npm (pinned in tests/web/package-lock.json). Nothing
# downloads a browser of its own: the test uses /usr/bin/chromium.
web_missing=()
dpkg-query -W -f='${Status}' chromium 2>/dev/null | grep -q "install ok installed" || web_missing+=(chromium)
command -v node >/dev/null && command -v npm >/dev/null || web_missing+=(nodejs npm)
if [ ${#web_missing[@]} -gt 0 ]; then
    echo "setup: installing ${web_missing[*]} (browser test of the dashboard)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${web_missing[@]}" >/dev/null
fi
if [ ! -f tests/web/node_modules/.package-lock.json ] ||
   [ tests/web/package-lock.json -nt tests/web/node_modules/.package-lock.json ]; then
    echo "setup: installing playwright-core in tests/web/node_modules (npm ci)"
    (cd tests/web && npm ci --no-audit --no-fund --loglevel=error)
fi

scripts/hugepages.sh
