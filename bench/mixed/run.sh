#!/usr/bin/env bash
# Pass-through calls beside transcoded ones on one media worker: does a slow
# codec (Opus at complexity 10) move the pass-through calls' delay?
#
#   bench/mixed/run.sh [BIN] [PLUGIN_DIR] [OUT_PREFIX]
#
# One `srtpgate serve` (one worker, CPU engine) on core 0; on core 1 a load
# generator of PASS (default 100) pass-through SRTP calls for DURATION s,
# alone and then beside a second one of TC (default 20) PCMA <-> Opus
# transcoded calls. Each load generator writes its JSON (delay percentiles
# of its own calls). Loopback only; everything started is stopped by PID.
set -euo pipefail
BIN=${1:-target/release/srtpgate}
PLUGINS=${2:-target/release}
OUT=${3:-/tmp/mixed}
PASS=${PASS:-100}
TC=${TC:-20}
DURATION=${DURATION:-10}
NG=127.0.0.1:2410
dir=$(mktemp -d)
for lib in spandsp opus; do ln -s "$(realpath "$PLUGINS/libsrtpgate_plugin_$lib.so")" "$dir/$lib.so"; done
taskset -c 0 "$BIN" serve --listen-ng "$NG" --port-min 33000 --port-max 36000 --workers 1 \
  --codec-plugin-dir "$dir" --codec-complexity 10 --log-level warn &
relay=$!
trap 'kill $relay 2>/dev/null; rm -rf "$dir"' EXIT
sleep 1
taskset -c 1 "$BIN" loadgen --ng "$NG" --calls "$PASS" --duration "$DURATION" --quiet --json "$OUT-alone.json" \
  --local 127.0.0.1
taskset -c 1 "$BIN" loadgen --ng "$NG" --calls "$TC" --duration $((DURATION + 4)) --quiet --codec PCMA \
  --transcode-to opus --codec-plugin-dir "$dir" --json "$OUT-tc.json" --local 127.0.0.1 &
tc=$!
sleep 2
taskset -c 1 "$BIN" loadgen --ng "$NG" --calls "$PASS" --duration "$DURATION" --quiet --json "$OUT-beside.json" \
  --local 127.0.0.1
wait $tc
