#!/bin/sh
# examples/edge-netns.sh up|down: the network namespaces of examples/edge.yaml
# (docs/edge.md). A deployment file cannot make namespaces, so run this after
# `sluice up examples/edge.yaml` has made its TAP interfaces:
#
#   up:   moves the TAP interface of port lan into namespace sle-lan
#         (10.69.1.2/24, default route via the gateway 10.69.1.1) and that of
#         port wan into sle-wan (10.69.2.1/24, route to the NAT's pool
#         10.69.9.1), gives each side the other interface's MAC as its
#         gateway's, for good (the NAT is a bump in the wire: it answers no
#         ARP), turns IPv6 off in both, and starts a web server
#         (python3 -m http.server 80) in sle-wan serving $SLE_WWW.
#   down: stops the web server, deletes the namespaces (the TAP interfaces
#         go back to the host's; sluiced removes them when it stops).
#
# Names and folders can be changed through the environment (the integration
# test does, to run beside a copy of the example): SLE_LAN_IF (sle-lan0),
# SLE_WAN_IF (sle-wan0), SLE_LAN_NS (sle-lan), SLE_WAN_NS (sle-wan), SLE_WWW
# (/tmp/sle-www, made with a 4 MiB file `blob` if it does not exist),
# SLE_RUN (/tmp/sle-run: the web server's pid and log).
set -eu

LAN_IF=${SLE_LAN_IF:-sle-lan0}
WAN_IF=${SLE_WAN_IF:-sle-wan0}
LAN_NS=${SLE_LAN_NS:-sle-lan}
WAN_NS=${SLE_WAN_NS:-sle-wan}
WWW=${SLE_WWW:-/tmp/sle-www}
RUN=${SLE_RUN:-/tmp/sle-run}
LAN_ADDR=10.69.1.2
LAN_GW=10.69.1.1
WAN_ADDR=10.69.2.1
POOL=10.69.9.1        # examples/edge/nat.yaml's pool
ADMIN=10.69.2.100     # the WAN host the firewall lets reach the port forward

die() { echo "edge-netns.sh: $*" >&2; exit 1; }

mac() { ip -n "$1" -j link show "$2" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["address"])'; }

up() {
    for i in "$LAN_IF" "$WAN_IF"; do
        ip link show "$i" >/dev/null 2>&1 ||
            die "no interface $i: start the node first (sluice up examples/edge.yaml)"
    done
    for ns in "$LAN_NS" "$WAN_NS"; do
        ip netns add "$ns"
        # an empty resolv.conf: nothing in the namespaces asks the host's name server
        mkdir -p "/etc/netns/$ns" && : > "/etc/netns/$ns/resolv.conf"
        for c in all default; do
            ip netns exec "$ns" sysctl -q -w "net.ipv6.conf.$c.disable_ipv6=1"
        done
        ip -n "$ns" link set lo up
    done
    ip link set "$LAN_IF" netns "$LAN_NS"
    ip link set "$WAN_IF" netns "$WAN_NS"
    ip -n "$LAN_NS" addr add "$LAN_ADDR/24" dev "$LAN_IF"
    ip -n "$WAN_NS" addr add "$WAN_ADDR/24" dev "$WAN_IF"
    ip -n "$WAN_NS" addr add "$ADMIN/24" dev "$WAN_IF"
    ip -n "$LAN_NS" link set "$LAN_IF" up
    ip -n "$WAN_NS" link set "$WAN_IF" up
    lan_mac=$(mac "$LAN_NS" "$LAN_IF")
    wan_mac=$(mac "$WAN_NS" "$WAN_IF")
    ip -n "$LAN_NS" route add default via "$LAN_GW" dev "$LAN_IF" onlink
    ip -n "$LAN_NS" neigh replace "$LAN_GW" lladdr "$wan_mac" dev "$LAN_IF" nud permanent
    ip -n "$WAN_NS" route add "$POOL/32" dev "$WAN_IF"
    ip -n "$WAN_NS" neigh replace "$POOL" lladdr "$lan_mac" dev "$WAN_IF" nud permanent
    if [ ! -e "$WWW" ]; then
        mkdir -p "$WWW"
        head -c 4194304 /dev/urandom > "$WWW/blob"
    fi
    mkdir -p "$RUN"
    ip netns exec "$WAN_NS" python3 -m http.server 80 --bind "$WAN_ADDR" --directory "$WWW" \
        > "$RUN/http.log" 2>&1 < /dev/null &
    echo $! > "$RUN/http.pid"
    i=0
    until ip netns exec "$WAN_NS" ss -Hltn "sport = :80" | grep -q "$WAN_ADDR"; do
        i=$((i + 1))
        [ $i -lt 100 ] || die "the web server did not start: see $RUN/http.log"
        sleep 0.1
    done
    echo "edge-netns.sh: up: $LAN_NS ($LAN_ADDR via $LAN_GW) -- sluiced -- $WAN_NS ($WAN_ADDR, $ADMIN); web server http://$WAN_ADDR/ serving $WWW (pid $(cat "$RUN/http.pid"))"
}

down() {
    if [ -f "$RUN/http.pid" ]; then
        kill "$(cat "$RUN/http.pid")" 2>/dev/null || true
        rm -f "$RUN/http.pid"
    fi
    for ns in "$LAN_NS" "$WAN_NS"; do
        ip netns del "$ns" 2>/dev/null || true
        rm -f "/etc/netns/$ns/resolv.conf"
        rmdir "/etc/netns/$ns" 2>/dev/null || true
    done
    echo "edge-netns.sh: down"
}

case "${1:-}" in
    up) up ;;
    down) down ;;
    *) die "usage: edge-netns.sh up|down" ;;
esac
