#!/usr/bin/env bash
# Removes hugepage files and DPDK runtime folders left by Sluice instances
# that are no longer running (a crashed test, a killed demo).
# Usage: scripts/cleanup.sh [NODE]    (default: every sluice node)
set -u
node=${1:-}
pat="sluice_${node:-*}"
for d in /var/run/dpdk/$pat; do
    [ -d "$d" ] || continue
    prefix=$(basename "$d")
    if [ -S "$d/mp_socket" ] && pgrep -f -- "--file-prefix=$prefix( |$)" >/dev/null 2>&1; then
        continue
    fi
    rm -rf "$d"
    rm -f /dev/hugepages/"$prefix"map_* 2>/dev/null
done
for f in /dev/hugepages/${pat}map_*; do
    [ -e "$f" ] || continue
    prefix=${f##*/}; prefix=${prefix%map_*}
    pgrep -f -- "--file-prefix=$prefix( |$)" >/dev/null 2>&1 || rm -f "$f"
done
exit 0
