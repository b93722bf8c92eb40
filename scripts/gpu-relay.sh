#!/usr/bin/env bash
# Runs on the GPU machine (carry .gpu/, built by scripts/gpu-build.sh): first
# the GPU tests (GPU contexts against CPU contexts, every suite, both modes:
# bit-exactness), then the relay sweep for the cpu and gpu engines with the
# same load generator: relay on cores 0-7, load generator on cores 8-15.
# Results go to $OUT (default gpu-out): tests.log, sweep.log, sweep.tar.gz
# (sweep.json; the figures are drawn here with --replot, fonts permitting).
# A failed GPU test stops the script before the sweep (exit non-zero): the
# sweep of an engine that computes wrong bytes measures nothing.
#
#   .gpu/gpu-relay.sh [COUNTS] [DURATION]
set -euo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu-out}"
mkdir -p "$out/sweep"
counts="${1:-50:150:10,1000,2000,4000,6000,8000,10000,12000}"
secs="${2:-5}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
nproc | sed 's/^/cores: /' | tee -a "$out/gpu.txt"
echo "== GPU tests (bit-exactness against the CPU engine)"
# A failure stops the script here: no sweep.
scripts/gpu-tests.sh "$out" 4
# Best effort, as before: the hard limit where the machine allows less, and
# socket buffers as large as the sysctls let root set them.
ulimit -n 1048576 2>/dev/null || ulimit -n "$(ulimit -Hn)"
sysctl -qw net.core.rmem_max=16777216 net.core.wmem_max=16777216 2>/dev/null || true
echo "== relay sweep: srtpgate cpu vs gpu engine, 8 workers each"
# The sweep's status is kept, not acted on at once: what it wrote (when a
# relay does not start, sweep.json still holds the configurations measured
# before it) is packed all the same, and the script then exits with it.
status=0
.gpu/srtpgate-bench loadgen sweep --configs srtpgate:cpu:8,srtpgate:gpu:8 --counts "$counts" --duration "$secs" \
  --relay-cpus 0-7 --loadgen-cpus 8-15 --loadgen-threads 6 --out "$out/sweep" 2>&1 | tee "$out/sweep.log" || status=$?
tar czf "$out/sweep.tar.gz" -C "$out" sweep
ls -la "$out"
if [ "$status" -ne 0 ]; then
  echo "relay sweep FAILED (exit $status); see $out/sweep.log"
  exit "$status"
fi
