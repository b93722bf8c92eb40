#!/usr/bin/env bash
# The long soak (docs/RELIABILITY.md): the test command's soak test, run for
# longer with more calls, its samples (RSS, open files, calls, the relay's
# p99 per interval) written to a CSV and plotted.
#
#   bench/soak/run.sh OUT_DIR            # 30 min, 2 000 calls, 4 workers, 4 load generator threads
#   SECONDS_TOTAL=600 CALLS=500 bench/soak/run.sh OUT_DIR
#   PTIME=60 WORKERS=1 THREADS=1 bench/soak/run.sh OUT_DIR   # packets of 60 ms: a third of the packets
#
# Needs cargo; the plot needs matplotlib (python3 -m pip install matplotlib).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: bench/soak/run.sh OUT_DIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
export SRTPGATE_SOAK_SECONDS=${SECONDS_TOTAL:-1800} SRTPGATE_SOAK_CALLS=${CALLS:-2000}
export SRTPGATE_SOAK_WORKERS=${WORKERS:-4} SRTPGATE_SOAK_THREADS=${THREADS:-4}
export SRTPGATE_SOAK_CALL_SECONDS=${CALL_SECONDS:-30} SRTPGATE_SOAK_CSV="$out/soak.csv"
export SRTPGATE_SOAK_PTIME=${PTIME:-20}
export SRTPGATE_SOAK_PORT_MIN=${PORT_MIN:-30000} SRTPGATE_SOAK_PORT_MAX=${PORT_MAX:-59999}
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
cargo test --release -p srtpgate --test soak -- --nocapture 2>&1 | tee "$out/soak.log"
python3 bench/soak/plot.py "$out/soak.csv" "$out/soak" \
  "${SRTPGATE_SOAK_CALLS} calls, each ${SRTPGATE_SOAK_CALL_SECONDS} s, for ${SRTPGATE_SOAK_SECONDS} s" || true
