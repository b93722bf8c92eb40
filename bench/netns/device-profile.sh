#!/usr/bin/env bash
# Where a relay core's time goes with one `xdp` worker against eight (veth
# with 8 queues), on the lent machine: perf (Debian's, carried with its
# libraries as .rig/perf.tar.xz) samples the relay's cores for 3 s in the
# middle of a bench/netns/capacity.py run, and reports by symbol. The
# binary carried as .rig/srtpgate.xz keeps its symbol table (strip
# --strip-debug).
#
#   bench/netns/device-profile.sh   # raw output in $OUT: perf-{1,8}workers.txt, the runs' JSON
set -uo pipefail
cd "$(dirname "$0")/../.."
export IP="$PWD/.rig/ip" PYTHONUNBUFFERED=1
out=${OUT:-/tmp}
ulimit -n 20000 2>/dev/null || true
for f in .rig/srtpgate .rig/srtpgate-bench; do
  [ -f "$f" ] || { xz -dc "$f.xz" > "$f" && chmod +x "$f"; }
done
mkdir -p /tmp/perf && tar xJf .rig/perf.tar.xz -C /tmp/perf
perf=/tmp/perf/perf
{ nproc; uname -r; lscpu | grep -E 'Model name|Thread'; } | tee "$out/machine.txt"
profile() { # NAME WORKERS QUEUES RELAY_CPUS CALLS
  QUEUES=$3 python3 bench/netns/capacity.py --binary .rig/srtpgate --configs xdp --workers "$2" --relay-cpus "$4" \
    --loadgen-cpus 8-15 --loadgen-threads 6 --seconds 8 --repeat 1 --ptime 5 --counts "$5" --out "$out/$1.json" &
  local run=$!
  sleep $((3 + $5 / 1000))
  "$perf" record -q -o "/tmp/$1.data" -C "$4" -F 1999 -- sleep 3 2>/dev/null
  wait $run
  "$perf" report -i "/tmp/$1.data" --no-children --sort comm,dso,sym --percent-limit 0.4 --stdio 2>/dev/null \
    | grep -v '^$' | head -90 > "$out/perf-$1.txt"
  "$perf" report -i "/tmp/$1.data" --no-children --sort dso --stdio 2>/dev/null | grep -v '^$' | head -25 >> "$out/perf-$1.txt"
}
profile 1worker 1 1 0 400
profile 8workers 8 8 0-7 2000
