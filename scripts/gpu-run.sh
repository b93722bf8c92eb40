#!/usr/bin/env bash
# Runs on the GPU machine (see docs/BENCHMARKS.md): the GPU tests, then
# compute-sanitizer on the kernels, then `srtpgate bench gpu`. Results go to
# $OUT (or ./gpu-out). Usage: .gpu/gpu-run.sh [tests|sanitize|bench|all] [bench args...]
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu-out}"
mkdir -p "$out"
what="${1:-all}"
shift || true
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
if [ "$what" = tests ] || [ "$what" = all ]; then
  echo "== GPU tests (bit-exactness against the CPU engine)"
  .gpu/gpu-tests --test-threads 1 2>&1 | tee "$out/tests.log" | tail -n 8
fi
if [ "$what" = sanitize ] || [ "$what" = all ]; then
  for tool in memcheck racecheck; do
    echo "== compute-sanitizer --tool $tool"
    timeout "${SAN_TIMEOUT:-150}" compute-sanitizer --tool "$tool" --print-limit 20 .gpu/gpu-tests --test-threads 1 launch_mode_contexts \
      > "$out/sanitize-$tool.log" 2>&1
    echo "exit $?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|test result" "$out/sanitize-$tool.log"
  done
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
  echo "== srtpgate bench gpu"
  .gpu/srtpgate bench gpu --json "$@" > "$out/bench-gpu.json" 2> "$out/bench-gpu.err"
  echo "exit $?"; tail -n 5 "$out/bench-gpu.err"
  python3 - "$out/bench-gpu.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("device:", d.get("gpu"), "| host:", d.get("machine"))
for r in d["results"]:
    if r["engine"] in ("pcie", "host"):
        print(f'{r["op"]}: {r["bytes_per_s"]/1e9:.1f} GB/s')
    else:
        print(f'{r["engine"]:<15} {r["suite"]:<24} {r["op"]:<12} batch {r.get("batch", 1):>8} '
              f'{r["ns_per_op"]:>10.1f} ns/op {r["ops_per_s"]/1e6:>9.2f} Mops/s '
              f'p50 {r.get("latency_us_p50", 0):>8.1f} p99 {r.get("latency_us_p99", 0):>8.1f} us blocks {r.get("blocks", "")}')
PY
fi
