#!/usr/bin/env bash
# The I/O backends' capacity sweep on the lent GPU machine (no iproute2, no
# registries there): iproute2 and a stripped release binary are carried in
# .rig/ (see docs/BENCHMARKS.md), results go to $OUT.
#
#   bench/netns/device-io.sh one     # one worker on core 0, loadgen on cores 8-15
#   bench/netns/device-io.sh many    # 8 workers on cores 0-7 (veth with 8 queues), loadgen on 8-15
#                                    # (PTIME=10 or 5: call equivalents past the open-file limit)
#   bench/netns/device-io.sh webrtc  # WebRTC<->SDES calls, one worker / one rtpengine thread on core 0
#
# rtpengine is not installed there: `webrtc` takes Debian 12's rtpengine-daemon carried as
# .rig/rtpe.tar.xz (the binary and the libraries `ldd` lists, glibc's own left out, started
# through a wrapper that sets LD_LIBRARY_PATH; see docs/BENCHMARKS.md).
set -uo pipefail
cd "$(dirname "$0")/../.."
export IP="$PWD/.rig/ip" PYTHONUNBUFFERED=1
bin="$PWD/.rig/srtpgate"
for f in "$bin" "$bin-bench"; do
  [ -f "$f" ] || { [ -f "$f.xz" ] && xz -dc "$f.xz" > "$f" && chmod +x "$f"; }
done
out=${OUT:-/tmp}
ulimit -n 20000 2>/dev/null || true
nproc; uname -r; lscpu | grep -m1 'Model name'
case "${1:-one}" in
  one)
    python3 bench/netns/capacity.py --binary "$bin" --configs "${CONFIGS:-xdp,uring,sockets}" \
      --workers 1 --relay-cpus 0 --loadgen-cpus 8-15 --loadgen-threads 4 --seconds "${SECONDS_PER:-6}" --repeat "${REPEAT:-2}" \
      --ptime "${PTIME:-20}" --counts "${COUNTS:-800,1200,1600,2000,2600,3200,4000,4800}" \
      --out "$out/io-capacity-1core-$(echo "${CONFIGS:-all}" | tr ',+' '--')-ptime${PTIME:-20}.json"
    ;;
  many)
    QUEUES=8 python3 bench/netns/capacity.py --binary "$bin" --configs "${CONFIGS:-xdp,uring,sockets}" \
      --workers 8 --relay-cpus 0-7 --loadgen-cpus 8-15 --loadgen-threads 6 --seconds "${SECONDS_PER:-6}" --repeat "${REPEAT:-1}" \
      --ptime "${PTIME:-20}" --counts "${COUNTS:-2000,4000,4800}" \
      --out "$out/io-capacity-8workers-$(echo "${CONFIGS:-all}" | tr ',+' '--')-ptime${PTIME:-20}.json"
    ;;
  webrtc)
    [ -x /tmp/rtpe/bin/rtpengine ] || tar xJf .rig/rtpe.tar.xz -C /tmp
    export PATH="/tmp/rtpe/bin:$PATH"
    rtpengine --version 2>&1 | tail -1
    python3 bench/netns/capacity.py --binary "$bin" --webrtc --configs "${CONFIGS:-uring,rtpengine}" \
      --workers 1 --relay-cpus 0 --loadgen-cpus 8-15 --loadgen-threads 4 --seconds "${SECONDS_PER:-6}" --repeat "${REPEAT:-3}" \
      --counts "${COUNTS:-400,600,800,1000,1200,1400,1600}" --out "$out/webrtc-capacity-1core-$(echo "${CONFIGS:-all}" | tr ',+' '--').json"
    ;;
esac
