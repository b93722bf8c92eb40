#!/usr/bin/env bash
# The call-table issue's two runs on a lent GPU machine (its CPU cores only),
# from binaries built here:
#
#   # here: the daemon before and after the change, and the fuzz target
#   cargo build --release -p srtpgate              # after; BEFORE=path of the earlier build
#   RUSTC_BOOTSTRAP=1 cargo fuzz build --sanitizer none --release call_table
#   BEFORE=/tmp/srtpgate-before bench/device-call-table.sh bundle   # -> .gpurun/*.xz
#
# Both daemons of the 2026-11-27 run still held the load generator
# (`srtpgate loadgen`); it is `srtpgate-bench loadgen` since, and a sweep
# with a later pair runs one srtpgate-bench with SRTPGATE_BIN naming each
# daemon in turn.
#   # there (the device tool's run, carrying .gpurun):
#   bench/device-call-table.sh fuzz "$OUT" [SECONDS] [WORKERS]     # libFuzzer fork mode from the corpus
#   bench/device-call-table.sh sweep "$OUT"                          # the same SDES sweep, before then after
#
# Each part writes its raw output and the machine (lscpu, uname) into one
# archive in OUT (fuzz.tar.xz, sweep.tar.xz): the device tool returns few files.
set -euo pipefail
cd "$(dirname "$0")/.."
B=.gpurun
part=${1:?usage: bench/device-call-table.sh bundle|fuzz OUT [SECONDS] [WORKERS]|sweep OUT}

machine() {
  mkdir -p "$1"
  { lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket)'; uname -sr; date -u +%FT%TZ; } > "$1/machine.txt"
}

unpack() {
  for f in srtpgate-before srtpgate-after call_table; do
    # A part carries only what it runs.
    [ -x "$B/$f" ] || [ ! -f "$B/$f.xz" ] || { xz -dkf "$B/$f.xz" && chmod +x "$B/$f"; }
  done
}

case "$part" in
bundle)
  mkdir -p "$B"
  strip -o "$B/srtpgate-after" target/release/srtpgate
  strip -o "$B/srtpgate-before" "${BEFORE:?the earlier build of srtpgate}"
  strip -o "$B/call_table" fuzz/target/x86_64-unknown-linux-gnu/release/call_table
  (cd "$B" && xz -T2 -6 -f srtpgate-after srtpgate-before call_table)
  tar -C fuzz/corpus -cJf "$B/corpus.tar.xz" call_table
  ls -la "$B"
  ;;
fuzz)
  OUT=${2:?OUT}
  secs=${3:-150}
  workers=${4:-$(($(nproc) - 2))}
  unpack
  W=$B/out-fuzz && rm -rf "$W" && machine "$W"
  rm -rf "$B/corpus" && mkdir -p "$B/corpus" && tar -C "$B/corpus" -xJf "$B/corpus.tar.xz"
  mkdir -p "$B/artifacts"
  # Fork mode: `workers` processes, their executions summed in the log's
  # status lines; a crash stops the run and leaves its input in artifacts/.
  "$B/call_table" -fork="$workers" -ignore_crashes=0 -max_total_time="$secs" -max_len=8192 \
    -artifact_prefix="$B/artifacts/" "$B/corpus/call_table" > "$W/fuzz-call_table.log" 2>&1 || true
  rm -rf "$B/merged" && mkdir -p "$B/merged"
  "$B/call_table" -merge=1 "$B/merged" "$B/corpus/call_table" > "$W/merge.log" 2>&1 || true
  cp -r "$B/merged" "$B/artifacts" "$W/"
  tar -C "$W" -cJf "$OUT/fuzz.tar.xz" .
  grep -E '^#[0-9]+' "$W/fuzz-call_table.log" | tail -2
  ls "$B/artifacts" | head
  ;;
sweep)
  OUT=${2:?OUT}
  unpack
  W=$B/out-sweep && rm -rf "$W" && machine "$W"
  # One relay worker on core 0, the load generator on cores 2-5 with two
  # sender/receiver pairs; ten seconds a count, one run a count (the issue
  # asks for one run of the same sweep before and after).
  for which in before after; do
    "$B/srtpgate-$which" loadgen sweep --configs srtpgate:cpu:1 --relay-cpus 0 --loadgen-cpus 2-5 \
      --loadgen-threads 2 --counts 500,1000,1500,2000,2500,3000,3500,4000 --duration 10 \
      --out "$W/sweep-$which" > "$W/sweep-$which.log" 2>&1 || true
    tail -3 "$W/sweep-$which.log"
  done
  tar -C "$W" -cJf "$OUT/sweep.tar.xz" .
  ;;
*)
  echo "unknown part $part" >&2
  exit 2
  ;;
esac
