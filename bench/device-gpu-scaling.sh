#!/usr/bin/env bash
# Several GPUs (issue 39, part 5) on a lent machine with two or more: first
# the GPU tests (bit-exactness against the CPU engine in every mode, with the
# lanes spread over every GPU, each GPU's share checked); a failure stops
# here. Then host-to-host throughput from pool-resident packets
# (`srtpgate-bench engines gpu --only pool`, launch mode, zero-copy and DMA)
# on the first GPU alone and on all of them, alternately, RUNS times each,
# beside the references of the same run: each GPU's link (alone, through
# CUDA_VISIBLE_DEVICES), the kernel alone on GPU 0, and all the host's
# cores on the CPU engine.
#
#   # here
#   cargo build --release -p srtpgate -p srtpgate-bench
#   B=.gpurun bash bench/device-quality.sh bundle
#   (GPU tests as for bench/device-gpu-relay.sh, in .gpu/gpu-tests.xz)
#
#   # there (the device tool's run, carrying .gpurun and .gpu)
#   bench/device-gpu-scaling.sh OUT [RUNS] [THREADS] [BATCHES]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/device-common.sh
OUT=${1:?usage: bench/device-gpu-scaling.sh OUT [RUNS] [THREADS] [BATCHES]}
RUNS=${2:-2}
THREADS=${3:-8,16,32}
BATCHES=${4:-16384,65536}
SUITES=AES_CM_128_HMAC_SHA1_80,AEAD_AES_128_GCM
mkdir -p "$OUT"
machine "$OUT" "|NUMA node"
{
  nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv
  nvidia-smi topo -m
} >> "$OUT/machine.txt" 2>&1 || true
unpack srtpgate srtpgate-bench
[ -f .gpu/gpu-tests ] || xz -dkf .gpu/gpu-tests.xz
chmod +x .gpu/gpu-tests
echo "== GPU tests"
scripts/gpu-tests.sh "$OUT" 6
grep -E 'packets per GPU|SKIPPED' "$OUT/tests.log" || true
bench=$B/srtpgate-bench
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
echo "== $gpus GPUs"
for g in $(seq 0 $((gpus - 1))); do
  CUDA_VISIBLE_DEVICES=$g "$bench" engines gpu --only links --json > "$OUT/links-gpu$g.json"
done
"$bench" engines gpu --only kernel,cpu --gpus 1 --suite "$SUITES" --json > "$OUT/kernel-cpu.json"
for r in $(seq 1 "$RUNS"); do
  for n in 1 "$gpus"; do
    echo "== run $r, $n GPU(s)"
    "$bench" engines gpu --only pool --gpus "$n" --suite "$SUITES" --batch "$BATCHES" --threads "$THREADS" \
      --json > "$OUT/pool-gpus$n-run$r.json" 2> "$OUT/pool-gpus$n-run$r.log"
    grep -E '^GPU' "$OUT/pool-gpus$n-run$r.log" || true
  done
done
python3 - "$OUT" <<'EOF'
import glob, json, os, sys
out = sys.argv[1]
best = {}
for f in sorted(glob.glob(os.path.join(out, "pool-gpus*-run*.json"))):
    for r in json.load(open(f))["results"]:
        k = (r["suite"], r["op"], r.get("mode"), r.get("batch"), r.get("threads"), r.get("gpus"))
        best.setdefault(k, []).append(r["ops_per_s"] / 1e6)
print("suite op mode batch threads gpus: M ops/s per run")
for k in sorted(best, key=str):
    print(*k, " ".join(f"{v:.1f}" for v in best[k]))
EOF
