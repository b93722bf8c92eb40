# shellcheck shell=bash disable=SC2154
# What the namespace rigs (rig.sh, two-networks.sh) share; sourced, not run.
# Expects $IP (iproute2's `ip`) and $name (the rig's name) to be set.

# Exit 0 when this machine can make network namespaces, else say why.
can_make_namespaces() {
  if ! command -v "$IP" >/dev/null 2>&1; then
    echo "no 'ip' command (iproute2) on this machine"
    return 1
  fi
  if [ "$(id -u)" != 0 ]; then
    echo "not root: network namespaces need CAP_NET_ADMIN and CAP_SYS_ADMIN"
    return 1
  fi
  local probe="$name-probe-$$"
  if ! "$IP" netns add "$probe" 2>/dev/null; then
    echo "cannot create a network namespace here (ip netns add failed)"
    return 1
  fi
  "$IP" netns del "$probe"
}

# Removes the namespaces named, ending whatever still runs in them first
# (not this script, nor whoever called it from inside one).
remove_namespaces() {
  local ns pid
  for ns in "$@"; do
    if "$IP" netns list | grep -qw "$ns"; then
      for pid in $("$IP" netns pids "$ns" 2>/dev/null); do
        [ "$pid" = $$ ] || [ "$pid" = "$PPID" ] || kill "$pid" 2>/dev/null || true
      done
      "$IP" netns del "$ns"
    fi
  done
}

# Exit 0 once every NAMESPACE/DEVICE given has its carrier (5 s at most).
wait_for_carrier() {
  local pair ok
  for _ in $(seq 50); do
    ok=1
    for pair in "$@"; do
      "$IP" -n "${pair%%/*}" -o link show "${pair#*/}" | grep -q LOWER_UP || { ok=0; break; }
    done
    [ "$ok" = 1 ] && return 0
    sleep 0.1
  done
  return 1
}
