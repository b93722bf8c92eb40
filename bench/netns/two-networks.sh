#!/usr/bin/env bash
# The two-network rig: a relay between a private network and a public one
# behind a 1:1 NAT, as a relay in a cloud or at an operator's edge sits.
# Three network namespaces, two veth pairs, addresses from the
# benchmarking range 198.18.0.0/15 (RFC 2544) and one documentation
# address (RFC 5737) that exist only inside them:
#
#   NAME-priv   198.18.1.2/24       callers and the SIP proxy (private side)
#   NAME-relay  198.18.1.1/24       the relay's private interface   (device NAME-rp)
#               198.18.2.1/24       the relay's public interface    (device NAME-ru)
#   NAME-pub    198.18.2.2/24       callees (public side)
#
# The relay's public address as the public side knows it is 203.0.113.1: a
# NAT in NAME-pub maps it to 198.18.2.1 both ways (what is sent to it goes
# to 198.18.2.1, what comes from 198.18.2.1 arrives from it), so the relay
# must advertise 203.0.113.1 (--interface 'pub/198.18.2.1!203.0.113.1')
# and bind 198.18.2.1. The relay's namespace routes between the two
# networks (SIP from the callees reaches the proxy through it).
#
#   bench/netns/two-networks.sh up [NAME]     # builds it (removing an old one)
#   bench/netns/two-networks.sh down [NAME]   # removes it (and what runs in it)
#   bench/netns/two-networks.sh check [NAME]  # exit 0 when this machine can build it, else say why
#
# Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN), iproute2's `ip` and iptables.
set -euo pipefail
cmd=${1:-}
name=${2:-srtpgate2}
priv="$name-priv"
relay="$name-relay"
pub="$name-pub"
IP=${IP:-ip}
IPTABLES=${IPTABLES:-iptables}
PUBLIC=203.0.113.1

# shellcheck source=bench/netns/namespaces.sh
. "$(dirname "$0")/namespaces.sh"

check() {
  can_make_namespaces || return 1
  if ! command -v "$IPTABLES" >/dev/null 2>&1; then
    echo "no iptables on this machine (the rig's NAT)"
    return 1
  fi
  local probe="$name-probe-$$"
  "$IP" netns add "$probe"
  local nat=0
  "$IP" netns exec "$probe" "$IPTABLES" -t nat -A OUTPUT -d "$PUBLIC" -j DNAT --to-destination 198.18.2.1 \
    2>/dev/null || nat=1
  "$IP" netns del "$probe"
  if [ "$nat" != 0 ]; then
    echo "iptables cannot add a NAT rule in a network namespace here (no nat table in the kernel?)"
    return 1
  fi
}

case "$cmd" in
  check)
    check
    ;;
  up)
    check >&2 || exit 1
    remove_namespaces "$priv" "$pub" "$relay"
    for ns in "$priv" "$relay" "$pub"; do
      "$IP" netns add "$ns"
      "$IP" -n "$ns" link set lo up
    done
    "$IP" link add "$name-pr" netns "$priv" type veth peer name "$name-rp" netns "$relay"
    "$IP" link add "$name-ur" netns "$pub" type veth peer name "$name-ru" netns "$relay"
    "$IP" -n "$priv" addr add 198.18.1.2/24 dev "$name-pr"
    "$IP" -n "$relay" addr add 198.18.1.1/24 dev "$name-rp"
    "$IP" -n "$relay" addr add 198.18.2.1/24 dev "$name-ru"
    "$IP" -n "$pub" addr add 198.18.2.2/24 dev "$name-ur"
    "$IP" -n "$priv" link set "$name-pr" up
    "$IP" -n "$relay" link set "$name-rp" up
    "$IP" -n "$relay" link set "$name-ru" up
    "$IP" -n "$pub" link set "$name-ur" up
    "$IP" -n "$priv" route add default via 198.18.1.1
    "$IP" -n "$pub" route add default via 198.18.2.1
    "$IP" netns exec "$relay" sysctl -qw net.ipv4.ip_forward=1
    # The 1:1 NAT, seen from the public side.
    "$IP" netns exec "$pub" "$IPTABLES" -t nat -A OUTPUT -d "$PUBLIC" -j DNAT --to-destination 198.18.2.1
    "$IP" netns exec "$pub" "$IPTABLES" -t nat -A INPUT -s 198.18.2.1 -j SNAT --to-source "$PUBLIC"
    if wait_for_carrier "$priv/$name-pr" "$pub/$name-ur" "$relay/$name-rp" "$relay/$name-ru"; then
      echo "rig $name up: $priv 198.18.1.2 <-> $relay 198.18.1.1 | 198.18.2.1 (public $PUBLIC) <-> $pub 198.18.2.2"
      exit 0
    fi
    echo "rig $name: the veth pairs did not come up" >&2
    exit 1
    ;;
  down)
    remove_namespaces "$priv" "$pub" "$relay"
    ;;
  *)
    echo "usage: $0 up|down|check [NAME]" >&2
    exit 2
    ;;
esac
