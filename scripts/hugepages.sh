#!/usr/bin/env bash
# Reserves 2 MiB hugepages and mounts hugetlbfs on /dev/hugepages if needed.
# Usage: scripts/hugepages.sh [PAGES]   (default 1024 pages = 2 GiB)
set -euo pipefail
want=${1:-${SLUICE_HUGEPAGES:-1024}}
nr=/proc/sys/vm/nr_hugepages
have=$(cat "$nr")
if [ "$have" -lt "$want" ]; then
    echo "$want" > "$nr"
    have=$(cat "$nr")
    if [ "$have" -lt "$want" ]; then
        echo "hugepages: asked for $want pages of 2 MiB, the kernel gave $have (memory is fragmented or short);" \
             "free memory or reboot, then run $0 again" >&2
        [ "$have" -gt 0 ] || exit 1
    fi
fi
if ! grep -qs ' /dev/hugepages hugetlbfs ' /proc/mounts; then
    mkdir -p /dev/hugepages
    mount -t hugetlbfs nodev /dev/hugepages
fi
