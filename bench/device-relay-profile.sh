#!/usr/bin/env bash
# Where the relay's worker spends its time, engine against engine (issue 39):
# one load of bench/device-nic.sh per engine, while `perf record` samples the
# worker thread (media-0) for SECS seconds once packets flow; the report (self
# time by symbol, and by caller) per engine. The lent machine has no perf: the
# bundle carries this machine's (linux-perf, with its libraries) and the
# daemon with its symbols, in B/perf.tar.xz:
#
#   # here
#   mkdir -p /tmp/p/lib && cp /usr/bin/perf /tmp/p/ && ldd /usr/bin/perf ...  (the libraries but glibc's, into lib/)
#   strip --strip-debug -o /tmp/p/srtpgate-sym target/release/srtpgate
#   tar -C /tmp/p -cJf .gpurun/perf.tar.xz .
#
#   # there (the device tool's run, carrying .gpurun)
#   bench/device-relay-profile.sh OUT [LOAD] [ENGINES]
#
# ENGINES as bench/device-gpu-round-trips.sh's (default cpu,gpu-persistent-b64).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/device-common.sh
OUT=${1:?usage: bench/device-relay-profile.sh OUT [LOAD] [ENGINES]}
LOAD=${2:-4000x20}
ENGINES=${3:-cpu,gpu-persistent-b64}
SECS=${SECS:-4}
mkdir -p "$OUT" "$B/perf"
tar -C "$B/perf" -xJf "$B/perf.tar.xz"
cp "$B/perf/srtpgate-sym" "$B/srtpgate"
perf() { LD_LIBRARY_PATH="$PWD/$B/perf/lib" "$PWD/$B/perf/perf" "$@"; }
unpack srtpgate-bench
# A fresh lease's first CUDA start takes long enough to miss the relay's
# health wait: start the driver once before.
case $ENGINES in
  *gpu*) timeout 120 "$B/srtpgate-bench" engines gpu --only links --seconds 0.05 > /dev/null 2>&1 || true ;;
esac
for e in ${ENGINES//,/ }; do
  (
    # The first load of device-nic.sh serves HTTP on port 21001.
    pid=
    for _ in $(seq 1 600); do
      n=$(curl -s 127.0.0.1:21001/metrics 2>/dev/null |
        awk '/^srtpgate_packets_received_total/ {s += $NF} END {print s + 0}' || true)
      if [ "${n%.*}" -gt 100000 ] 2>/dev/null; then
        pid=$(pgrep -f "$B/srtpgate serve" | head -1 || true)
        break
      fi
      sleep 0.1
    done
    [ -n "$pid" ] || { echo "profile $e: no traffic seen"; exit 0; }
    tid=$(ps -L -o tid=,comm= -p "$pid" | awk '$2 == "media-0" {print $1}')
    echo "profile $e: relay $pid, worker thread $tid, $SECS s"
    perf record -F 4999 -g -t "$tid" -o "$OUT/perf-$e.data" -- sleep "$SECS" > "$OUT/perf-$e.record.log" 2>&1 || true
    perf report -i "$OUT/perf-$e.data" --no-children --sort sym --stdio -g none 2>/dev/null | head -80 > "$OUT/perf-$e.txt" || true
    perf report -i "$OUT/perf-$e.data" --children --sort sym --stdio -g none 2>/dev/null | head -80 > "$OUT/perf-$e-children.txt" || true
    rm -f "$OUT/perf-$e.data"
  ) &
  prof=$!
  nic_engine "$e" "$OUT" "$LOAD"
  wait "$prof"
done
