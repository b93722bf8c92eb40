#!/usr/bin/env bash
# The namespace rig: two network namespaces joined by a veth pair, for the
# relay and the load generator, with addresses from the benchmarking range
# 198.18.0.0/15 (RFC 2544) and the IPv6 documentation prefix 2001:db8::/32
# (RFC 3849) that exist only inside them and are routed nowhere else.
#
#   bench/netns/rig.sh up [NAME]     # namespaces NAME-lg (198.18.0.1, 2001:db8:18::1)
#                                    # and NAME-relay (198.18.0.2, 2001:db8:18::2)
#   bench/netns/rig.sh down [NAME]   # removes both (and so the veth pair)
#   bench/netns/rig.sh check         # exit 0 when this machine can build the rig, else say why
#
# Then: ip netns exec NAME-relay srtpgate serve --interface 198.18.0.2 --listen-ng 198.18.0.2:2223 ...
#       ip netns exec NAME-lg srtpgate-bench loadgen --local 198.18.0.1 --ng 198.18.0.2:2223 ...
# QUEUES=N gives each end of the veth pair N receive and transmit queues (the
# xdp backend serves one AF_XDP socket per receive queue).
# Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN) and iproute2's `ip`.
set -euo pipefail
cmd=${1:-}
name=${2:-srtpgate}
lg="$name-lg"
relay="$name-relay"
IP=${IP:-ip}
QUEUES=${QUEUES:-1}

# shellcheck source=bench/netns/namespaces.sh
. "$(dirname "$0")/namespaces.sh"

case "$cmd" in
  check)
    can_make_namespaces
    ;;
  up)
    can_make_namespaces >&2 || exit 1
    remove_namespaces "$lg" "$relay"
    "$IP" netns add "$lg"
    "$IP" netns add "$relay"
    "$IP" link add "$name-a" netns "$lg" numtxqueues "$QUEUES" numrxqueues "$QUEUES" type veth \
      peer name "$name-b" netns "$relay" numtxqueues "$QUEUES" numrxqueues "$QUEUES"
    "$IP" -n "$lg" addr add 198.18.0.1/24 dev "$name-a"
    "$IP" -n "$relay" addr add 198.18.0.2/24 dev "$name-b"
    "$IP" -n "$lg" addr add 2001:db8:18::1/64 dev "$name-a" nodad
    "$IP" -n "$relay" addr add 2001:db8:18::2/64 dev "$name-b" nodad
    for ns in "$lg" "$relay"; do
      "$IP" -n "$ns" link set lo up
    done
    "$IP" -n "$lg" link set "$name-a" up
    "$IP" -n "$relay" link set "$name-b" up
    if wait_for_carrier "$lg/$name-a" "$relay/$name-b"; then
      echo "rig $name up: $lg 198.18.0.1 <-> $relay 198.18.0.2"
      exit 0
    fi
    echo "rig $name: the veth pair did not come up" >&2
    exit 1
    ;;
  down)
    remove_namespaces "$lg" "$relay"
    ;;
  *)
    echo "usage: $0 up|down|check [NAME]" >&2
    exit 2
    ;;
esac
