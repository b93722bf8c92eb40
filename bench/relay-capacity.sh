#!/usr/bin/env bash
# How many concurrent G.711 SRTP calls one relay worker core carries.
#
#   bench/relay-capacity.sh [SECONDS] [CALLS...]
#
# Starts `srtpgate serve` with one media worker pinned to core 0 (CPU engine,
# loopback) and runs `srtpgate-bench loadgen` pinned to core 1 for each number of
# concurrent calls (default 200 400 600 700 800 900 1000), SECONDS of
# measurement each (default 10). Every call has two SRTP legs with their own
# keys; 50 packets/s each way. Prints one line per count (end-to-end delay
# through the relay measured by the load generator, the relay's own
# receive-to-send delay histogram, loss, the relay's CPU use) and writes the
# JSON results to docs/results/relay-capacity-N.json (OUT=DIR to change).
# RELAY_ARGS adds flags to `srtpgate serve` (e.g. --busy-poll).
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-10}
shift || true
COUNTS=${*:-200 400 600 700 800 900 1000}
BIN=${SRTPGATE_BIN:-target/release/srtpgate}
[ -x "$BIN" ] && [ -x "$(dirname "$BIN")/srtpgate-bench" ] || cargo build --release -p srtpgate -p srtpgate-bench --quiet
NG=127.0.0.1:${NG_PORT:-2390}
HTTP=127.0.0.1:${HTTP_PORT:-9390}
OUT=${OUT:-docs/results}
mkdir -p "$OUT"
CORES=$(nproc)
RELAY_CPU=0
LG_CPU=$(( CORES > 1 ? 1 : 0 ))
taskset -c $RELAY_CPU "$BIN" serve --listen-ng "$NG" --listen-http "$HTTP" --interface 127.0.0.1 \
  --port-min 20000 --port-max 39999 --workers 1 --log-level warn ${RELAY_ARGS:-} &
RELAY=$!
trap 'kill $RELAY 2>/dev/null; wait $RELAY 2>/dev/null || true' EXIT
for _ in $(seq 50); do
  curl -sf "http://$HTTP/health" >/dev/null 2>&1 && break
  sleep 0.1
done
echo "machine: $(lscpu | sed -n 's/^Model name: *//p') ($CORES cores), relay on core $RELAY_CPU, load generator on core $LG_CPU"
printf '%6s %10s %9s %9s %9s %9s %12s %12s %8s %8s\n' calls pkts/s loss% e2e_p50 e2e_p99 e2e_max 'relay_p50<=' 'relay_p99<=' relayCPU lgCPU
for n in $COUNTS; do
  taskset -c $LG_CPU "$(dirname "$BIN")/srtpgate-bench" loadgen --ng "$NG" --calls "$n" --duration "$SECS" --setup-rate 1000 --quiet \
    --json "$OUT/relay-capacity-$n.json" >/dev/null
  python3 - "$OUT/relay-capacity-$n.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
d = r["delay_us"]
def rd(key):
    w = r.get("relay_delay_us") or {}
    v = w.get(key, "-")
    return ">100000" if v is None else v
cpu = r.get("relay_cpu_cores")
lg = r.get("loadgen_cpu_cores")
print("%6d %10.0f %9.4f %9s %9s %9s %12s %12s %8s %8s" % (
    r["calls"], r["packets_per_second"], 100 * r["loss_ratio"], d["p50"], d["p99"], d["max"],
    rd("p50_at_most"), rd("p99_at_most"), "%.0f%%" % (100 * cpu) if cpu is not None else "-",
    "%.0f%%" % (100 * lg) if lg is not None else "-"))
PY
done
