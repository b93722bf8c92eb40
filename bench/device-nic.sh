#!/usr/bin/env bash
# The relay at NIC speed (`srtpgate serve --io mem`) on a lent machine's CPU
# cores (no GPU used): one worker on core 0, `srtpgate-bench nic` (its
# generators, NIC threads and checkers) on the other cores. Each load is a
# fresh relay; every frame the worker transmits is checked (headers,
# checksums, decrypted under the receiving leg's key, payload as sent).
#
# The machine's hard limit of open files (20 000 on the GPU hosts) caps a
# relay at about 4 900 calls (4 sockets a call: the legs keep their ports),
# so loads past that are G.711 call equivalents: the same calls sending
# every PTIME ms instead of 20 (a call equivalent is 100 relayed packets/s;
# the flow table then has fewer entries than that many real calls).
#
#   # here
#   cargo build --release -p srtpgate -p srtpgate-bench
#   bench/device-quality.sh bundle                 # -> .gpurun/*.xz
#
#   # there (the device tool's run, carrying .gpurun)
#   bench/device-nic.sh OUT [LOADS] [BUSY]
#
# LOADS: CALLSxPTIME,... (default 1000x20,4000x20,4800x20,4800x10,4800x5,
# 4800x4,4800x3,4800x2); BUSY: busy-poll (the default, the lowest delay) or
# sleep (the worker parks when its rings are empty, so its CPU time is its
# work: the cost per packet); SERVE_ARGS: more options of `srtpgate serve`
# (e.g. "--batch-wait 50"; TAG_SUFFIX then names them in the tag); ENGINE: the relay's engine (cpu, the default,
# or gpu) and GPU_MODE its mode (launch or persistent; the kernels kept in
# OUT/gpu-kernels, or GPU_KERNEL_CACHE, between starts). Raw output: OUT/nic-TAG.tar.xz and
# OUT/nic-TAG-summary.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/device-common.sh
OUT=${1:?usage: bench/device-nic.sh OUT [LOADS] [BUSY]}
LOADS=${2:-1000x20,4000x20,4800x20,4800x10,4800x5,4800x4,4800x3,4800x2}
BUSY=${3:-busy-poll}
RELAY_CPU=${RELAY_CPU:-0} BENCH_CPUS=${BENCH_CPUS:-2-15} GENERATORS=${GENERATORS:-6} CHECKERS=${CHECKERS:-4}
ENGINE=${ENGINE:-cpu}
TAG=$(date -u +%Y%m%dT%H%M%S)-$BUSY-$ENGINE${GPU_MODE:+-$GPU_MODE}${TAG_SUFFIX:-}
KERNELS=${GPU_KERNEL_CACHE:-$OUT/gpu-kernels}
mkdir -p "$KERNELS"
engine=(--engine "$ENGINE")
[ "$ENGINE" = gpu ] && engine+=(--gpu-mode "${GPU_MODE:-launch}" --gpu-kernel-cache "$KERNELS")
W=$(mktemp -d)
unpack srtpgate srtpgate-bench
machine "$W" '|Flags'
echo "$ENGINE${GPU_MODE:+ $GPU_MODE}" > "$W/engine.txt"
[ "$ENGINE" = gpu ] && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> "$W/engine.txt"
grep -v Flags "$W/machine.txt"
ulimit -n 20000 || true
busy=()
[ "$BUSY" = busy-poll ] && busy=(--busy-poll)

port=21000
for load in ${LOADS//,/ }; do
  calls=${load%x*} ptime=${load#*x}
  dir=/dev/shm/srtpgate-nic-$port
  rm -rf "$dir"
  taskset -c "$RELAY_CPU" "$B/srtpgate" serve --listen-ng "127.0.0.1:$port" --listen-http "127.0.0.1:$((port + 1))" \
    --interface 127.0.0.1 --port-min 10000 --port-max 65000 --workers 1 "${engine[@]}" --log-level info \
    --io mem --mem-dir "$dir" "${busy[@]}" ${SERVE_ARGS:-} > "$W/relay-$load.log" 2>&1 &
  relay=$!
  for _ in $(seq 1 200); do
    curl -sf "127.0.0.1:$((port + 1))/health" > /dev/null 2>&1 && break
    sleep 0.1
  done
  echo "== $calls calls, ptime $ptime ms"
  taskset -c "$BENCH_CPUS" "$B/srtpgate-bench" nic --ng "127.0.0.1:$port" --mem-dir "$dir" --calls "$calls" \
    --ptime "$ptime" --duration 8 --generators "$GENERATORS" --checkers "$CHECKERS" --json "$W/nic-$load.json" \
    --http "127.0.0.1:$((port + 1))" \
    2>&1 | tee "$W/nic-$load.log" || true
  curl -s "127.0.0.1:$((port + 1))/metrics" > "$W/nic-$load.metrics" || true
  kill "$relay" 2>/dev/null || true
  wait "$relay" 2>/dev/null || true
  rm -rf "$dir"
  port=$((port + 10))
done

python3 - "$W" "$LOADS" > "$W/summary.txt" <<'PY' || true
import json, sys
W, loads = sys.argv[1], sys.argv[2].split(",")
print(open(f"{W}/machine.txt").read().split("Flags")[0].strip())
print("engine:", open(f"{W}/engine.txt").read().strip())
print("load (calls x ptime): call equivalents, packets/s relayed, loss, p50/p99/max us, worker cores, ns per relayed packet "
      "(primitives unprotect + protect), call equivalents per core; * over p99 5 ms or loss 0.01 %")
best = None
for load in loads:
    try:
        r = json.load(open(f"{W}/nic-{load}.json"))
    except Exception as e:
        print(f"{load}: not measured ({e})")
        continue
    d, p = r["delay_us"], r["primitives_ns"]
    ok = d["p99"] is not None and d["p99"] <= 5000 and r["loss_ratio"] <= 1e-4 and r["bad_frames"] == 0 and r["bad_payloads"] == 0
    if ok:
        best = r
    print(f"{load}: {r['call_equivalents']:.0f}, {r['packets_per_second']:.0f}/s, {100 * r['loss_ratio']:.4f} %, "
          f"{d['p50']}/{d['p99']}/{d['max']}, {r['worker_cpu_cores']:.3f}, {r['ns_per_relayed_packet']:.0f} "
          f"({p['unprotect']:.0f} + {p['protect']:.0f} = {p['sum']:.0f}), {r['calls_per_core']:.0f}{'' if ok else ' *'}")
    try:
        m = {}
        for line in open(f"{W}/nic-{load}.metrics"):
            for k in ("engine_path_packets_total", "engine_lane_batches_total", "engine_batches_total", "engine_lane_waits_total"):
                if line.startswith("srtpgate_" + k):
                    name, v = line.rsplit(" ", 1)
                    m[name.replace("srtpgate_", "")] = float(v)
        if any(k.startswith("engine_path") for k in m):
            print("    engine: " + ", ".join(f"{k} {v:.0f}" for k, v in sorted(m.items())))
    except OSError:
        pass
    st = r.get("stage_ns_per_relayed_packet") or {}
    if st:
        print("    by stage (ns per relayed packet): " + ", ".join(f"{k} {v:.0f}" for k, v in st.items())
              + f"; stages' sum {sum(st.values()):.0f}")
if best:
    print(f"highest load within the bounds: {best['call_equivalents']:.0f} call equivalents "
          f"({best['packets_per_second']:.0f} packets/s relayed) on {best['worker_cpu_cores']:.3f} worker cores")
PY
cat "$W/summary.txt"
mkdir -p "$OUT"
cp "$W/summary.txt" "$OUT/nic-$TAG-summary.txt"
tar -C "$W" -cJf "$OUT/nic-$TAG.tar.xz" .
