#!/usr/bin/env bash
# Removes hugepage files and DPDK runtime folders left by Sluice instances
# that are no longer running (a crashed test, a killed demo).
# Usage: scripts/cleanup.sh [NODE]    (default: every sluice node)
#
# A prefix is in use while a process started with --file-prefix=PREFIX
# runs, or while a DPDK primary holds its lock on /var/run/dpdk/PREFIX/config
# (a sluiced started by hand, `sluiced -- --name NODE`, adds its
# --file-prefix itself, so its command line does not show it).
set -u
node=${1:-}
pat="sluice_${node:-*}"

in_use() { # PREFIX
    local cfg=/var/run/dpdk/$1/config ino
    if [ -e "$cfg" ]; then
        ino=$(stat -c %i "$cfg" 2>/dev/null) &&
            grep -q ":$ino " /proc/locks 2>/dev/null && return 0
    fi
    pgrep -f -- "--file-prefix=$1( |$)" >/dev/null 2>&1
}

for d in /var/run/dpdk/$pat; do
    [ -d "$d" ] || continue
    prefix=$(basename "$d")
    in_use "$prefix" && continue
    rm -rf "$d"
    rm -f /dev/hugepages/"$prefix"map_* 2>/dev/null
done
for f in /dev/hugepages/${pat}map_*; do
    [ -e "$f" ] || continue
    prefix=${f##*/}; prefix=${prefix%map_*}
    in_use "$prefix" || rm -f "$f"
done
exit 0
