#!/usr/bin/env bash
# Short round trips (issue 39, part 3) on the GPU machine. First the GPU tests
# (bit-exactness against the CPU engine in every mode, the relay scenario of
# rounds in flight); a failure stops here. Then the round trips of one batch
# from the pool (`srtpgate-bench engines gpu --only latency`, launch and
# persistent modes, with the persistent mode's stage trace) with the engine
# as it was before the change (B/before/srtpgate-bench, optional) and as it
# is, alternately, RUNS times each, in the same lease. Then, when LOADS is
# given, the relay at NIC speed (bench/device-gpu-relay.sh's engines;
# gpu-persistent-b64 is the persistent mode with `--batch 64`).
#
#   # here: build the bench before the change into .gpurun/before (e.g. from
#   # a worktree of the previous commit), then the current tree:
#   cargo build --release -p srtpgate -p srtpgate-bench
#   B=.gpurun bash bench/device-quality.sh bundle
#   (GPU tests as for bench/device-gpu-relay.sh, in .gpu/gpu-tests.xz)
#
#   # there (the device tool's run, carrying .gpurun and .gpu)
#   bench/device-gpu-round-trips.sh OUT [RUNS] [LOADS] [ENGINES]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/device-common.sh
OUT=${1:?usage: bench/device-gpu-round-trips.sh OUT [RUNS] [LOADS] [ENGINES]}
RUNS=${2:-2}
LOADS=${3:-}
ENGINES=${4:-cpu,gpu-persistent}
# More runs of the current engine with these lane counts (--lanes; the
# default run has one lane per core, 16 here, and a relay of W workers W + 1).
LANES=${LANES:-}
# Sections of `engines gpu` (e.g. latency,kernel: the kernel alone too), and
# more of its options for both sides (e.g. "--lanes 2 --gpus 1").
ONLY=${ONLY:-latency}
ARGS=${ARGS:-}
mkdir -p "$OUT"
machine "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,pcie.link.gen.current,pcie.link.width.current \
  --format=csv >> "$OUT/machine.txt" 2>&1 || true
unpack srtpgate srtpgate-bench before/srtpgate-bench
[ -f .gpu/gpu-tests ] || xz -dkf .gpu/gpu-tests.xz
chmod +x .gpu/gpu-tests
echo "== GPU tests"
scripts/gpu-tests.sh "$OUT" 6
for r in $(seq 1 "$RUNS"); do
  for side in before now $(for l in $LANES; do echo "now-lanes$l"; done); do
    bin=$B/srtpgate-bench
    # shellcheck disable=SC2206 # ARGS is a list of options
    args=($ARGS)
    case $side in
      before) bin=$B/before/srtpgate-bench ;;
      now-lanes*) args+=(--lanes "${side#now-lanes}") ;;
    esac
    [ -x "$bin" ] || continue
    echo "== round trips, $side, run $r"
    "$bin" engines gpu --json --only "$ONLY" --seconds 1 "${args[@]}" > "$OUT/round-trips-$side-$r.json" 2> "$OUT/round-trips-$side-$r.err"
    python3 - "$OUT/round-trips-$side-$r.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
rows = doc["results"] if isinstance(doc, dict) else doc
for x in rows:
    if x.get("op") == "kernel_only":
        print("%-28s %-24s kernel alone %7.1f M ops/s" % (x["engine"], x["suite"], x["ops_per_s"] / 1e6))
    if x.get("op") != "round_trip_pool":
        continue
    st = x.get("stages_us") or {}
    extra = "  " + ", ".join("%s %s/%s" % (k, v[0], v[1]) for k, v in sorted(st.items())) if st else ""
    print("%-28s %5d  p50 %7.1f  p99 %7.1f%s" % (x["engine"], x["batch"], x["latency_us_p50"], x["latency_us_p99"], extra))
PY
  done
done
[ -n "$LOADS" ] || exit 0
for e in ${ENGINES//,/ }; do
  echo "=== engine $e"
  nic_engine "$e" "$OUT" "$LOADS"
done
