#!/usr/bin/env bash
# A change measured before and after on a lent GPU machine (its CPU cores
# only), from binaries built here, and a fuzz target run there:
#
#   # here: the daemon after the change (and the load generator), the
#   # daemon before it, and a fuzz target when one runs
#   cargo build --release -p srtpgate -p srtpgate-bench
#   RUSTC_BOOTSTRAP=1 cargo fuzz build --sanitizer none --release call_table
#   BEFORE=/tmp/srtpgate-before [FUZZ=call_table] bench/device-before-after.sh bundle   # -> .gpurun/*.xz
#
#   # there (the device tool's run, carrying .gpurun):
#   bench/device-before-after.sh fuzz OUT [SECONDS] [WORKERS]   # libFuzzer fork mode from the corpus
#   bench/device-before-after.sh sweep OUT [COUNTS] [ROUNDS]    # SDES calls, before/after alternating
#   bench/device-before-after.sh transcode OUT [COUNTS]         # PCMU -> PCMA calls, before then after
#
# One srtpgate-bench drives both daemons (SRTPGATE_BIN names each in turn).
# Each part writes its raw output and the machine (lscpu, uname) into one
# archive in OUT (fuzz.tar.xz, sweep.tar.xz, transcode.tar.xz): the device
# tool returns few files.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/device-common.sh
part=${1:?usage: bench/device-before-after.sh bundle|fuzz OUT [SECONDS] [WORKERS]|sweep OUT [COUNTS] [ROUNDS]|transcode OUT [COUNTS]}


# One relay worker on core 0, the load generator on cores 2-5 with two
# sender/receiver pairs; one run a count.
sweep() { # which out args...
  local which=$1 out=$2
  shift 2
  SRTPGATE_BIN="$PWD/$B/srtpgate-$which" "$B/srtpgate-bench" loadgen sweep --configs srtpgate:cpu:1 \
    --relay-cpus 0 --loadgen-cpus 2-5 --loadgen-threads 2 --out "$out" "$@" > "$out.log" 2>&1 || true
  tail -3 "$out.log"
}

case "$part" in
bundle)
  mkdir -p "$B"
  strip -o "$B/srtpgate-after" target/release/srtpgate
  strip -o "$B/srtpgate-bench" target/release/srtpgate-bench
  strip -o "$B/srtpgate-before" "${BEFORE:?the earlier build of srtpgate}"
  files=(srtpgate-after srtpgate-before srtpgate-bench)
  if [ -n "${FUZZ:-}" ]; then
    strip -o "$B/fuzz-target" "fuzz/target/x86_64-unknown-linux-gnu/release/$FUZZ"
    tar -C fuzz/corpus -cJf "$B/corpus.tar.xz" "$FUZZ"
    echo "$FUZZ" > "$B/fuzz-target.name"
    files+=(fuzz-target)
  fi
  (cd "$B" && xz -T2 -6 -f "${files[@]}")
  ls -la "$B"
  ;;
fuzz)
  OUT=${2:?OUT}
  secs=${3:-150}
  workers=${4:-$(($(nproc) - 2))}
  unpack srtpgate-before srtpgate-after srtpgate-bench fuzz-target
  name=$(cat "$B/fuzz-target.name")
  W=$B/out-fuzz && rm -rf "$W" && machine "$W"
  rm -rf "$B/corpus" && mkdir -p "$B/corpus" && tar -C "$B/corpus" -xJf "$B/corpus.tar.xz"
  mkdir -p "$B/artifacts"
  # Fork mode: `workers` processes, their executions summed in the log's
  # status lines; a crash stops the run and leaves its input in artifacts/.
  "$B/fuzz-target" -fork="$workers" -ignore_crashes=0 -max_total_time="$secs" -max_len=8192 \
    -artifact_prefix="$B/artifacts/" "$B/corpus/$name" > "$W/fuzz-$name.log" 2>&1 || true
  rm -rf "$B/merged" && mkdir -p "$B/merged"
  "$B/fuzz-target" -merge=1 "$B/merged" "$B/corpus/$name" > "$W/merge.log" 2>&1 || true
  cp -r "$B/merged" "$B/artifacts" "$W/"
  tar -C "$W" -cJf "$OUT/fuzz.tar.xz" .
  grep -E '^#[0-9]+' "$W/fuzz-$name.log" | tail -2
  ls "$B/artifacts" | head
  ;;
sweep)
  OUT=${2:?OUT}
  counts=${3:-900:1500:100}
  rounds=${4:-2}
  unpack srtpgate-before srtpgate-after srtpgate-bench fuzz-target
  W=$B/out-sweep && rm -rf "$W" && machine "$W"
  # Before and after alternate, so a drift of the machine (another
  # tenant, a warmer package) falls on both.
  for r in $(seq 1 "$rounds"); do
    for which in before after; do
      sweep "$which" "$W/sweep-$which-$r" --counts "$counts" --duration 10
    done
  done
  tar -C "$W" -cJf "$OUT/sweep.tar.xz" .
  ;;
transcode)
  OUT=${2:?OUT}
  counts=${3:-200:700:100}
  unpack srtpgate-before srtpgate-after srtpgate-bench fuzz-target
  W=$B/out-transcode && rm -rf "$W" && machine "$W"
  for which in before after; do
    sweep "$which" "$W/transcode-$which" --counts "$counts" --duration 5 --codec PCMU --transcode-to PCMA
  done
  tar -C "$W" -cJf "$OUT/transcode.tar.xz" .
  ;;
*)
  echo "unknown part $part" >&2
  exit 2
  ;;
esac
