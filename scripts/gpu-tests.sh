#!/usr/bin/env bash
# Runs the GPU tests (.gpu/gpu-tests, bit-exactness against the CPU engine)
# on the device machine, its log in OUT/tests.log, and prints its last
# TAIL lines; on a failure prints the failures (or, for a crash, the log's
# end) and exits with the tests' status, so that the calling script stops
# there. Used by gpu-run.sh and gpu-relay.sh.
#   scripts/gpu-tests.sh OUT TAIL
set -euo pipefail
out=$1
keep=$2
status=0
.gpu/gpu-tests --test-threads 1 --show-output > "$out/tests.log" 2>&1 || status=$?
if [ "$status" -ne 0 ]; then
  # libtest ends with the failures (each one's output, then the list); a
  # crash (a signal) has no such section: its last lines say more.
  echo "GPU tests FAILED (exit $status); full log: $out/tests.log"
  if grep -q '^failures:$' "$out/tests.log"; then
    sed -n '/^failures:$/,$p' "$out/tests.log"
  else
    tail -n 40 "$out/tests.log"
  fi
  exit "$status"
fi
tail -n "$keep" "$out/tests.log"
