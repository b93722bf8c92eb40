#!/usr/bin/env bash
# Runs on the GPU machine (see docs/BENCHMARKS.md): the GPU tests, then
# compute-sanitizer on the kernels, then `srtpgate-bench engines gpu`. Results go to
# $OUT (or ./gpu-out). Usage: .gpu/gpu-run.sh [tests|sanitize|bench|all] [bench args...]
# Exits non-zero, and runs nothing after, when a step fails: a failed GPU test
# must not be followed by figures that look like results.
#
# SAN_TESTS: the GPU tests compute-sanitizer runs (default below); SAN_TOOLS:
# its tools (default memcheck racecheck); SAN_TIMEOUT: seconds per tool and
# test (default 150).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu-out}"
mkdir -p "$out"
what="${1:-all}"
shift || true   # no arguments at all is fine
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
if [ "$what" = tests ] || [ "$what" = all ]; then
  echo "== GPU tests (bit-exactness against the CPU engine)"
  # A failure stops the script here: no sanitizer, no bench.
  scripts/gpu-tests.sh "$out" 8
fi
if [ "$what" = sanitize ] || [ "$what" = all ]; then
  # The kernels under compute-sanitizer, one run per tool and test: the
  # contexts of both modes (packed batches), the property test in registered
  # memory (the relay's pools: packets at every alignment, read and written
  # in place over PCIe) and several threads each through its own lane at
  # once. Every run goes through before the section fails, so that one
  # remote run reports them all; bench then does not run.
  read -r -a san_tests <<< "${SAN_TESTS:-launch_mode_contexts gpu_matches_cpu_in_registered_memory many_threads_one_gpu}"
  read -r -a san_tools <<< "${SAN_TOOLS:-memcheck racecheck}"
  san_failed=()
  for tool in "${san_tools[@]}"; do
    for t in "${san_tests[@]}"; do
      log="$out/sanitize-$tool-$t.log"
      echo "== compute-sanitizer --tool $tool: $t"
      status=0
      # --error-exitcode: errors (memcheck) and hazards (racecheck) fail the
      # run even where the test itself passes. --exact: one test by its full
      # name.
      timeout -k 10 "${SAN_TIMEOUT:-150}" compute-sanitizer --tool "$tool" --print-limit 20 --error-exitcode 86 \
        .gpu/gpu-tests --test-threads 1 --exact "$t" > "$log" 2>&1 || status=$?
      # No summary line (a crash, a timeout) is no reason to stop here.
      grep -E "ERROR SUMMARY|RACECHECK SUMMARY|test result" "$log" || true
      case "$status" in
        0)
          # A test filter that names no test runs nothing and passes: that
          # is a failure of this script, not a clean kernel.
          if ! grep -qE 'test result: ok\. [1-9]' "$log"; then
            echo "FAILED: no test named $t in .gpu/gpu-tests ($log)"
            san_failed+=("$tool/$t (no such test)")
          fi
          ;;
        86) echo "FAILED: compute-sanitizer --tool $tool found errors in $t ($log)"; san_failed+=("$tool/$t") ;;
        124 | 137) echo "FAILED: $t under $tool did not finish in ${SAN_TIMEOUT:-150} s (SAN_TIMEOUT)"; san_failed+=("$tool/$t (timeout)") ;;
        *) echo "FAILED: $t under $tool exited $status ($log)"; tail -n 20 "$log"; san_failed+=("$tool/$t (exit $status)") ;;
      esac
    done
  done
  if [ "${#san_failed[@]}" -gt 0 ]; then
    (IFS=,; echo "compute-sanitizer FAILED: ${san_failed[*]}")
    exit 1
  fi
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
  echo "== srtpgate-bench engines gpu"
  status=0
  .gpu/srtpgate-bench engines gpu --json "$@" > "$out/bench-gpu.json" 2> "$out/bench-gpu.err" || status=$?
  echo "exit $status"; tail -n 5 "$out/bench-gpu.err"
  if [ "$status" -ne 0 ]; then
    exit "$status"
  fi
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
