#!/usr/bin/env bash
# The relay at NIC speed (bench/device-nic.sh), a change measured before and
# after: two bundles (each a directory with srtpgate and srtpgate-bench, or
# their .xz), run in alternation, ROUNDS times each, in busy-poll and sleep
# modes, on the machine this runs on (here or a lent one).
#
#   BEFORE=DIR AFTER=DIR bench/nic-before-after.sh OUT [BUSY_LOADS] [SLEEP_LOADS] [ROUNDS]
#
# The defaults suit a 2-core development machine: the worker on core 0, the
# whole generator on core 1 (RELAY_CPU, BENCH_CPUS, GENERATORS and CHECKERS
# pass through to device-nic.sh). Raw output: OUT/{before,after}-N/ (each
# run's summary and archive) and OUT/summary.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?usage: BEFORE=DIR AFTER=DIR bench/nic-before-after.sh OUT [BUSY_LOADS] [SLEEP_LOADS] [ROUNDS]}
BUSY_LOADS=${2:-2000x20,3000x20,4000x20}
SLEEP_LOADS=${3:-1000x20,2000x20,3000x20}
ROUNDS=${4:-2}
: "${BEFORE:?BEFORE=DIR}" "${AFTER:?AFTER=DIR}"
export RELAY_CPU=${RELAY_CPU:-0} BENCH_CPUS=${BENCH_CPUS:-1} GENERATORS=${GENERATORS:-1} CHECKERS=${CHECKERS:-1}
mkdir -p "$OUT"
for round in $(seq 1 "$ROUNDS"); do
  # Alternating which goes first, so that a drift of the machine falls on both.
  order="before after"
  [ $((round % 2)) -eq 0 ] && order="after before"
  for which in $order; do
    dir=$BEFORE
    [ "$which" = after ] && dir=$AFTER
    B=$dir bash bench/device-nic.sh "$OUT/$which-$round" "$BUSY_LOADS" busy-poll > /dev/null
    B=$dir bash bench/device-nic.sh "$OUT/$which-$round" "$SLEEP_LOADS" sleep > /dev/null
  done
done
for f in "$OUT"/*/*-summary.txt; do
  echo "== ${f#"$OUT"/}"
  grep -vE "^(Model name|CPU|Thread|Core|Socket|Linux|20[0-9][0-9]-)" "$f"
done > "$OUT/summary.txt"
head -8 "$(ls "$OUT"/*/*-summary.txt | head -1)" | grep -E "^(Model name|CPU|Linux)" >> "$OUT/summary.txt" || true
cat "$OUT/summary.txt"
