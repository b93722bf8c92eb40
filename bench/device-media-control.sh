#!/usr/bin/env bash
# Issue 36's measurement on a lent machine's CPU cores (no GPU used): calls
# per relay core with a prompt played to the callee of every tenth call
# (`play media`, for the call's whole life) beside the same load without,
# for G.711 and for Opus parties, and the player's cost per 20 ms frame
# beside its encoder alone (the codec bench). From binaries built here:
#
#   # here
#   cargo build --release -p srtpgate -p srtpgate-bench -p srtpgate-plugin-opus
#   cargo bench -p srtpgate-codec --no-run      # target/release/deps/codec-*
#   bench/device-media-control.sh bundle        # -> .gpurun/*.xz
#
#   # there (the device tool's run, carrying .gpurun)
#   bench/device-media-control.sh sweep OUT pcmu|opus [COUNTS] [RUNS]
#   bench/device-media-control.sh bench OUT
#
# The relay (one worker, all its threads) is pinned to core 0, the load
# generator to cores 2-5 with two sender/receiver pairs. Each part writes
# its raw output and the machine (lscpu, uname) as one archive in OUT.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/device-common.sh
part=${1:?usage: bench/device-media-control.sh bundle | sweep OUT pcmu|opus [COUNTS] [RUNS] | bench OUT}

unpack_all() {
  unpack srtpgate srtpgate-bench codec-bench opus.so
  mkdir -p "$B/plugins" && cp "$B/opus.so" "$B/plugins/opus.so"
  # The codec bench finds the Opus plugin beside itself.
  cp "$B/opus.so" "$B/libsrtpgate_plugin_opus.so"
}

case "$part" in
bundle)
  mkdir -p "$B"
  strip -o "$B/srtpgate" target/release/srtpgate
  strip -o "$B/srtpgate-bench" target/release/srtpgate-bench
  strip -o "$B/opus.so" target/release/libsrtpgate_plugin_opus.so
  bench=$(ls -t target/release/deps/codec-* | grep -v '\.d$' | head -1)
  strip -o "$B/codec-bench" "$bench"
  (cd "$B" && xz -T2 -6 -f srtpgate srtpgate-bench opus.so codec-bench)
  ls -la "$B"
  ;;
sweep)
  OUT=${2:?OUT}
  codec=${3:?pcmu or opus}
  counts=${4:-400:1600:200}
  runs=${5:-2}
  unpack_all
  W=$B/out-play-$codec && rm -rf "$W" && machine "$W"
  extra=()
  [ "$codec" = opus ] && extra=(--codec opus --codec-plugin-dir "$PWD/$B/plugins")
  SRTPGATE_BIN="$PWD/$B/srtpgate" "$B/srtpgate-bench" loadgen sweep \
    --configs srtpgate:cpu:1,srtpgate:cpu:1:play10 --counts "$counts" --repeat "$runs" --duration 8 \
    --relay-cpus 0 --loadgen-cpus 2-5 --loadgen-threads 2 "${extra[@]}" \
    --out "$W/sweep" > "$W/sweep.log" 2>&1 || true
  tail -4 "$W/sweep.log"
  tar -C "$W" -cJf "$OUT/play-$codec.tar.xz" .
  ;;
bench)
  OUT=${2:?OUT}
  unpack_all
  W=$B/out-bench && rm -rf "$W" && machine "$W"
  taskset -c 0 "$B/codec-bench" --bench player_20ms --noplot > "$W/player-bench.txt" 2>&1 || true
  grep -E 'player_20ms|time:' "$W/player-bench.txt" | head -20
  tar -C "$W" -cJf "$OUT/player-bench.tar.xz" .
  ;;
*)
  echo "unknown part $part" >&2
  exit 2
  ;;
esac
