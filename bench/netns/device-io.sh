#!/usr/bin/env bash
# The I/O backends' capacity sweep on the lent GPU machine (no iproute2, no
# registries there): iproute2 and a stripped release binary are carried in
# .rig/ (see docs/BENCHMARKS.md), results go to $OUT.
#
#   bench/netns/device-io.sh one     # one worker on core 0, loadgen on cores 8-15
#   bench/netns/device-io.sh many    # 8 workers on cores 0-7 (veth with 8 queues), loadgen on 8-15
set -uo pipefail
cd "$(dirname "$0")/../.."
export IP="$PWD/.rig/ip" PYTHONUNBUFFERED=1
bin="$PWD/.rig/srtpgate"
out=${OUT:-/tmp}
ulimit -n 20000 2>/dev/null || true
nproc; uname -r; lscpu | grep -m1 'Model name'
case "${1:-one}" in
  one)
    python3 bench/netns/capacity.py --binary "$bin" --configs "${CONFIGS:-xdp,uring,sockets}" \
      --workers 1 --relay-cpus 0 --loadgen-cpus 8-15 --loadgen-threads 4 --seconds "${SECONDS_PER:-6}" --repeat "${REPEAT:-2}" \
      --counts "${COUNTS:-800,1200,1600,2000,2600,3200,4000,4800}" --out "$out/io-capacity-1core-$(echo "${CONFIGS:-all}" | tr ',+' '--').json"
    ;;
  many)
    QUEUES=8 python3 bench/netns/capacity.py --binary "$bin" --configs "${CONFIGS:-xdp,uring,sockets}" \
      --workers 8 --relay-cpus 0-7 --loadgen-cpus 8-15 --loadgen-threads 6 --seconds "${SECONDS_PER:-6}" --repeat "${REPEAT:-1}" \
      --counts "${COUNTS:-2000,4000,4800}" --out "$out/io-capacity-8workers-$(echo "${CONFIGS:-all}" | tr ',+' '--').json"
    ;;
esac
