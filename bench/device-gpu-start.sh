#!/usr/bin/env bash
# The GPU engine's start on a lent GPU machine: first the GPU tests
# (bit-exactness against the CPU engine; a failure stops the script), then
# `srtpgate serve --engine gpu` started again and again, each time timed
# from exec to the first `/health` that answers 200:
#   cold     an empty kernel cache (NVRTC compiles, the cubin is kept)
#   warm     the cache from the run before (RUNS times)
#   off      --gpu-kernel-cache off (compiles at every start)
#   damaged  the cached file cut short: its digest does not check, the
#            start compiles again and replaces it
#   refused  the cached file overwritten with another ELF file and its
#            digest: the driver refuses it, the start compiles again and
#            replaces it
# With BEFORE=DIR (a bundle of an earlier srtpgate, which compiled the
# kernels to PTX and left the driver to compile that): that binary started
# with the driver's own cache (~/.nv/ComputeCache) emptied, then again.
#
#   # here
#   cargo build --release -p srtpgate -p srtpgate-bench
#   bench/device-quality.sh bundle                     # -> .gpurun/*.xz
#   # the GPU tests, stripped and xz'ed, as .gpu/gpu-tests.xz (see scripts/gpu-build.sh)
#   # there (the device tool's run, carrying .gpurun and .gpu)
#   bench/device-gpu-start.sh OUT [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/device-common.sh
OUT=${1:?usage: bench/device-gpu-start.sh OUT [RUNS]}
RUNS=${2:-5}
mkdir -p "$OUT"
unpack srtpgate
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
machine "$OUT" '|Flags'

echo "== GPU tests (bit-exactness against the CPU engine)"
[ -f .gpu/gpu-tests ] || xz -dk .gpu/gpu-tests.xz
chmod +x .gpu/gpu-tests
scripts/gpu-tests.sh "$OUT" 4

cache=$(mktemp -d)/kernels
port=23000
# One start: prints "<label> <seconds to /health 200>" and keeps its log.
start() {
  local label=$1
  shift
  local t0 t1 relay
  t0=$(date +%s.%N)
  "${BIN:-$B/srtpgate}" serve --listen-ng "127.0.0.1:$port" --listen-http "127.0.0.1:$((port + 1))" \
    --interface 127.0.0.1 --port-min 30000 --port-max 30999 --workers 4 --engine gpu --log-level info "$@" \
    > "$OUT/start-$label.log" 2>&1 &
  relay=$!
  until curl -sf -o /dev/null "127.0.0.1:$((port + 1))/health"; do
    if ! kill -0 "$relay" 2>/dev/null; then
      echo "$label: the relay exited before it was ready"
      tail -n 20 "$OUT/start-$label.log"
      return 1
    fi
    sleep 0.01
  done
  t1=$(date +%s.%N)
  kill "$relay"
  wait "$relay" 2>/dev/null || true
  echo "$label $(python3 -c "print(f'{$t1 - $t0:.3f}')")" | tee -a "$OUT/starts.txt"
  grep -E "GPU engine on|hybrid threshold|ready in" "$OUT/start-$label.log" | sed "s/^/    /"
  port=$((port + 10))
}

echo "== start to ready (seconds, exec to the first /health 200)"
start cold --gpu-kernel-cache "$cache"
ls -la "$cache" | tee "$OUT/cache.txt"
for i in $(seq 1 "$RUNS"); do start "warm$i" --gpu-kernel-cache "$cache"; done
start off --gpu-kernel-cache off
# The cached file damaged (its last byte cut): its digest does not check,
# the start compiles again and replaces it.
f=$(ls "$cache"/kernels-*.cubin)
size=$(stat -c %s "$f")
truncate -s -1 "$f"
start damaged --gpu-kernel-cache "$cache"
grep -q "kernels compiled" "$OUT/start-damaged.log" || { echo "damaged: not compiled again"; exit 1; }
[ "$(stat -c %s "$f")" -eq "$size" ] || { echo "damaged: the file was not replaced"; exit 1; }
# A file whose digest checks but which the driver refuses (another
# program's ELF file, its SHA-256 appended): compiled again and replaced.
cp "$B/srtpgate" "$f"
python3 -c "import hashlib, sys; p = sys.argv[1]; d = open(p, 'rb').read(); open(p, 'ab').write(hashlib.sha256(d).digest())" "$f"
start refused --gpu-kernel-cache "$cache"
grep -q "the driver refused the cached ones" "$OUT/start-refused.log" || { echo "refused: not compiled again"; exit 1; }
[ "$(stat -c %s "$f")" -eq "$size" ] || { echo "refused: the file was not replaced"; exit 1; }
start after-refused --gpu-kernel-cache "$cache"
grep -q "kernels from" "$OUT/start-after-refused.log" || { echo "after-refused: not loaded from the cache"; exit 1; }
if [ -n "${BEFORE:-}" ]; then
  B=$BEFORE unpack srtpgate
  rm -rf "$HOME/.nv/ComputeCache"
  BIN=$BEFORE/srtpgate start before-cold
  BIN=$BEFORE/srtpgate start before-warm
  # The new binary with the driver's cache off: its start does not need it.
  CUDA_CACHE_DISABLE=1 start driver-cache-off --gpu-kernel-cache "$cache"
fi
echo "== summary"
cat "$OUT/starts.txt"
