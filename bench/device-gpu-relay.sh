#!/usr/bin/env bash
# Asynchronous rounds on the GPU machine (issue 39): first the GPU tests
# (bit-exactness against the CPU engine, and the relay scenario of rounds in
# flight on the GPU engine in each mode: frames and counters the CPU
# engine's); a failure stops here. Then the relay at NIC speed
# (`serve --io mem`, one worker on core 0, bench/device-nic.sh) with the CPU
# engine, then the GPU engine in the launch and persistent modes, at the
# same loads, busy-polling.
#
#   # here
#   cargo build --release -p srtpgate -p srtpgate-bench
#   B=.gpurun bash bench/device-quality.sh bundle
#   (GPU tests: cargo test --release -p srtp-cuda --test gpu --no-run, the
#    binary stripped and compressed to .gpu/gpu-tests.xz)
#
#   # there (the device tool's run, carrying .gpurun and .gpu)
#   bench/device-gpu-relay.sh OUT [LOADS] [ENGINES]
#
# RUNS (environment, default 1): the engines' loads repeated, the order of
# the engines reversed every other run.
# LOADS as bench/device-nic.sh's (default 4800x4,4800x3,4800x2); ENGINES:
# cpu, gpu-launch, gpu-persistent (default all three, in that order).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/device-common.sh
OUT=${1:?usage: bench/device-gpu-relay.sh OUT [LOADS] [ENGINES]}
LOADS=${2:-4800x4,4800x3,4800x2}
ENGINES=${3:-cpu,gpu-launch,gpu-persistent}
mkdir -p "$OUT"
[ -f .gpu/gpu-tests ] || xz -dkf .gpu/gpu-tests.xz
chmod +x .gpu/gpu-tests
echo "== GPU tests"
scripts/gpu-tests.sh "$OUT" 12
grep -E 'lane below|batches held' "$OUT/tests.log" || true
# RUNS: each engine's loads this many times, the engines' order reversed
# every other run (decided before the run), each run's output in OUT/runR.
RUNS=${RUNS:-1}
# One kernel cache for every run's relays.
export GPU_KERNEL_CACHE=${GPU_KERNEL_CACHE:-$OUT/gpu-kernels}
for r in $(seq 1 "$RUNS"); do
  order=${ENGINES//,/ }
  [ $((r % 2)) = 1 ] || order=$(printf '%s\n' $order | tac | tr '\n' ' ')
  dir=$OUT
  [ "$RUNS" = 1 ] || dir=$OUT/run$r
  for e in $order; do
    echo "=== engine $e, run $r"
    nic_engine "$e" "$dir" "$LOADS"
  done
done
