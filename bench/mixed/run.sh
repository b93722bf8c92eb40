#!/usr/bin/env bash
# Pass-through calls beside transcoded ones on one media worker: does a slow
# codec (Opus at complexity 10) move the pass-through calls' delay?
#
#   bench/mixed/run.sh [BIN] [PLUGIN_DIR] [OUT_PREFIX]
#
# One `srtpgate serve` (WORKERS workers, default 1, CPU engine) on the cores
# RELAY_CPUS (default 0); on LG_CPUS (default 1) a load generator of PASS
# (default 100) pass-through SRTP calls for DURATION s, alone and then beside
# a second one, on TC_CPUS (default LG_CPUS), of TC (default 20) PCMA <-> Opus
# transcoded calls. TC_WORKERS, when set, is passed as --transcode-workers
# (0: every worker carries both kinds of call); PIN=1 adds --pin-workers. Each load generator writes
# its JSON (delay percentiles of its own calls). Loopback only; everything
# started is stopped by PID.
set -euo pipefail
BIN=${1:-target/release/srtpgate}
PLUGINS=${2:-target/release}
OUT=${3:-/tmp/mixed}
PASS=${PASS:-100}
TC=${TC:-20}
DURATION=${DURATION:-10}
WORKERS=${WORKERS:-1}
RELAY_CPUS=${RELAY_CPUS:-0}
LG_CPUS=${LG_CPUS:-1}
TC_CPUS=${TC_CPUS:-$LG_CPUS}
tcw=()
[ -n "${TC_WORKERS:-}" ] && tcw=(--transcode-workers "$TC_WORKERS")
[ -n "${PIN:-}" ] && tcw+=(--pin-workers)
NG=127.0.0.1:2410
dir=$(mktemp -d)
for lib in spandsp opus; do ln -s "$(realpath "$PLUGINS/libsrtpgate_plugin_$lib.so")" "$dir/$lib.so"; done
taskset -c "$RELAY_CPUS" "$BIN" serve --listen-ng "$NG" --port-min 30000 --port-max 40000 --workers "$WORKERS" \
  "${tcw[@]}" --codec-plugin-dir "$dir" --codec-complexity 10 --log-level warn &
relay=$!
trap 'kill $relay 2>/dev/null; rm -rf "$dir"' EXIT
sleep 1
taskset -c "$LG_CPUS" "$(dirname "$BIN")/srtpgate-bench" loadgen --ng "$NG" --calls "$PASS" --duration "$DURATION" --quiet --json "$OUT-alone.json" \
  --local 127.0.0.1
taskset -c "$TC_CPUS" "$(dirname "$BIN")/srtpgate-bench" loadgen --ng "$NG" --calls "$TC" --duration $((DURATION + 4)) --quiet --codec PCMA \
  --transcode-to opus --codec-plugin-dir "$dir" --json "$OUT-tc.json" --local 127.0.0.1 &
tc=$!
sleep 2
taskset -c "$LG_CPUS" "$(dirname "$BIN")/srtpgate-bench" loadgen --ng "$NG" --calls "$PASS" --duration "$DURATION" --quiet --json "$OUT-beside.json" \
  --local 127.0.0.1
wait $tc
