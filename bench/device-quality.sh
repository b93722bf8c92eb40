#!/usr/bin/env bash
# Issue 37's measurement on a lent machine's CPU cores (no GPU used): the
# relay's CPU per call with call quality on (`srtpgate serve --call-quality
# on`, the default: every RTCP report read, the RTP's jitter measured, loss,
# jitter, round trip and MOS per SSRC) beside `--call-quality off`, under
# G.711 SRTP calls whose endpoints send RTCP as phones do (`loadgen
# --rtcp-interval 5`: an SR with a report block and an SDES CNAME, as SRTCP,
# every 5 s from each endpoint). Target: on costs at most 3 % more relay CPU
# per call than off. From binaries built here:
#
#   # here
#   cargo build --release -p srtpgate -p srtpgate-bench
#   bench/device-quality.sh bundle                 # -> .gpurun/*.xz
#
#   # there (the device tool's run, carrying .gpurun)
#   bench/device-quality.sh sweep OUT [COUNTS] [RUNS] [SECONDS]
#
#   # here: the same in small (2 cores, small counts, short runs)
#   bench/device-quality.sh local OUT
#
# A run is one `loadgen sweep` of both configurations at every count (a relay
# started for each), one worker; the order alternates between runs (off
# first, then on first, ...), so that drift over the lease falls on both
# sides alike. On the device the relay (all its threads) is pinned to core 0,
# the load generator to cores 2-5 with two sender/receiver pairs. Defaults:
# counts 200,400,600,800 (G.711 held 800 calls a core on this host), 4 runs,
# 8 s a count: about 6 minutes.
#
# The summary (OUT/quality-TAG-summary.txt, and printed): per count each
# side's relay CPU per call (ms of core per second per call; the relay's
# process and its core's softirq time, the sweep's CPU figure; the process
# alone beside it) and calls per core, the ratio on/off per run, and the
# ratio on/off with a 95 % confidence interval over runs (Student t), where
# a run's ratio is its relay CPU with quality on over off summed over the
# counts both sides measured. Raw output: OUT/quality-TAG.tar.xz (each run's
# sweep.json and log, the machine).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/device-common.sh
usage='usage: bench/device-quality.sh bundle | sweep OUT [COUNTS] [RUNS] [SECONDS] | local OUT'
part=${1:?$usage}


# measure TAG WORK OUT BENCH SRTPGATE COUNTS RUNS SECONDS RTCP LOADGEN-OPTIONS...
measure() {
  local tag=$1 W=$2 out=$3 bench=$4 daemon=$5 counts=$6 runs=$7 secs=$8 rtcp=$9
  shift 9
  rm -rf "$W" && machine "$W"
  local off='srtpgate:cpu:1:args=--call-quality off' on='srtpgate:cpu:1:args=--call-quality on'
  for r in $(seq 1 "$runs"); do
    local configs="$off,$on"
    [ $((r % 2)) = 0 ] && configs="$on,$off"
    echo "run $r of $runs: ${configs//srtpgate:cpu:1:args=/}"
    SRTPGATE_BIN="$daemon" "$bench" loadgen sweep --configs "$configs" --counts "$counts" --repeat 1 \
      --duration "$secs" --rtcp-interval "$rtcp" "$@" --out "$W/run-$r" > "$W/run-$r.log" 2>&1 || true
    tail -3 "$W/run-$r.log"
  done
  python3 - "$W" "$runs" > "$W/summary.txt" <<'PY' || true
import json, math, os, sys

W, runs = sys.argv[1], int(sys.argv[2])
# Student t, 95 % two-sided, by degrees of freedom.
T = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
     2.131, 2.120, 2.110, 2.101, 2.093, 2.086]

def ci(xs):
    n = len(xs)
    m = sum(xs) / n
    if n < 2:
        return m, None
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1))
    return m, (T[n - 2] if n - 1 <= len(T) else 1.96) * sd / math.sqrt(n)

def side(name):
    return "on" if "call-quality on" in name else "off" if "call-quality off" in name else None

# points[run][side][calls] = the sweep's point
points, errors, rtcp = {}, [], {"on": [0, 0, 0], "off": [0, 0, 0]}
bounds = None
for r in range(1, runs + 1):
    path = f"{W}/run-{r}/sweep.json"
    if not os.path.exists(path):
        errors.append(f"run {r}: no sweep.json (see run-{r}.log)")
        continue
    s = json.load(open(path))
    bounds = s.get("bounds", bounds)
    if s.get("error"):
        errors.append(f"run {r}: {s['error']}")
    for c in s["configs"]:
        sd = side(c["name"])
        for p in c["points"]:
            if sd is None or "error" in p:
                if "error" in p:
                    errors.append(f"run {r}, {c['name']}, {p['calls']} calls: {p['error']}")
                continue
            points.setdefault(r, {}).setdefault(sd, {})[p["calls"]] = p
            q = p.get("rtcp", {})
            rtcp[sd][0] += q.get("sent", 0)
            rtcp[sd][1] += q.get("received", 0)
            rtcp[sd][2] += q.get("auth_failures", 0)

def cpu(p, process_only=False):
    c = p.get("relay_cpu_cores")
    if c is None:
        return None
    return c if process_only else c + (p.get("relay_softirq_cores") or 0.0)

def within(p):
    b = bounds or {"p99_ms": 5.0, "loss": 0.0001}
    p99 = (p.get("delay_us") or {}).get("p99")
    return p.get("setup_errors") == 0 and p99 is not None and p99 <= b["p99_ms"] * 1000 and p["loss_ratio"] <= b["loss"]

counts = sorted({n for r in points.values() for sd in r.values() for n in sd})
out = {"runs": runs, "counts": counts, "by_count": [], "errors": errors}
print(f"relay CPU per call, call quality on beside off ({runs} runs; ms of core per second per call;")
print("process + its core's softirq, process alone in brackets; p99 of the runs; * over the bounds)")
for n in counts:
    row = {"calls": n}
    cells = []
    for sd in ("off", "on"):
        ps = [points[r][sd][n] for r in points if n in points[r].get(sd, {})]
        per = [1000 * cpu(p) / n for p in ps if cpu(p) is not None]
        proc = [1000 * cpu(p, True) / n for p in ps if cpu(p) is not None]
        p99 = ["%.2f%s" % (p["delay_us"]["p99"] / 1000, "" if within(p) else "*") if p["delay_us"].get("p99") is not None else "n/a" for p in ps]
        # ms of core per second per call: calls per core is 1000 over it.
        row[sd] = {"runs": len(ps), "cpu_ms_per_call": per, "process_ms_per_call": proc,
                   "calls_per_core": [1000 / x for x in per if x > 0],
                   "all_within_bounds": bool(ps) and all(map(within, ps))}
        if per:
            mean = sum(per) / len(per)
            cells.append(f"{sd} {mean:.4f} ms ({sum(proc)/len(proc):.4f}), "
                         f"{1000 / mean:.0f} calls/core, p99 {', '.join(p99)} ms")
        else:
            cells.append(f"{sd} not measured")
    ratios = [cpu(points[r]["on"][n]) / cpu(points[r]["off"][n]) for r in points
              if n in points[r].get("on", {}) and n in points[r].get("off", {})
              and cpu(points[r]["on"][n]) and cpu(points[r]["off"][n])]
    row["ratio_per_run"] = ratios
    if ratios:
        m, h = ci(ratios)
        cells.append(f"on/off {m:.3f}" + (f" (95 % CI ± {h:.3f})" if h is not None else " (one run)"))
    out["by_count"].append(row)
    print(f"{n:>6} calls: " + "; ".join(cells))

def run_ratio(r, process_only=False):
    both = [n for n in points[r].get("on", {}) if n in points[r].get("off", {})]
    on = [cpu(points[r]["on"][n], process_only) for n in both]
    off = [cpu(points[r]["off"][n], process_only) for n in both]
    if not both or None in on or None in off or sum(off) <= 0:
        return None
    return sum(on) / sum(off)

for label, key, proc in (("process + softirq", "ratio", False), ("process alone", "ratio_process", True)):
    rs = [x for x in (run_ratio(r, proc) for r in sorted(points)) if x is not None]
    if not rs:
        print(f"on/off ({label}): not measured (both sides are needed)")
        continue
    m, h = ci(rs)
    lo, hi = (m - h, m + h) if h is not None else (None, None)
    verdict = ("not clearly met (one run)" if h is None else "met" if hi <= 1.03
               else "not met" if lo > 1.03 else "not clearly met")
    out[key] = {"per_run": rs, "mean": m, "ci95": [lo, hi]}
    ci_text = f"95 % CI {lo:.3f}–{hi:.3f}" if h is not None else "no CI"
    print(f"on/off relay CPU per call ({label}): {m:.3f} ({ci_text}; runs {', '.join('%.3f' % x for x in rs)}); "
          f"target ≤ 1.03: {verdict}")
for sd in ("off", "on"):
    s, rcv, bad = rtcp[sd]
    print(f"RTCP, quality {sd}: {s} sent, {rcv} received by the endpoints, {bad} failed authentication")
out["rtcp"] = rtcp
for e in errors:
    print("error:", e)
json.dump(out, open(f"{W}/summary.json", "w"), indent=1)
PY
  cat "$W/summary.txt"
  mkdir -p "$out"
  cp "$W/summary.txt" "$out/quality-$tag-summary.txt"
  tar -C "$W" -cJf "$out/quality-$tag.tar.xz" .
}

case "$part" in
bundle)
  mkdir -p "$B"
  strip -o "$B/srtpgate" target/release/srtpgate
  strip -o "$B/srtpgate-bench" target/release/srtpgate-bench
  (cd "$B" && xz -T2 -6 -f srtpgate srtpgate-bench)
  ls -la "$B"
  ;;
sweep)
  OUT=${2:?OUT}
  unpack srtpgate srtpgate-bench
  measure device "$B/out-quality" "$OUT" "$B/srtpgate-bench" "$PWD/$B/srtpgate" "${3:-200,400,600,800}" "${4:-4}" "${5:-8}" 5 \
    --relay-cpus 0 --loadgen-cpus 2-5 --loadgen-threads 2
  ;;
local)
  # This machine: target/release's binaries (the raw output is kept in
  # target/quality-local), relay on core 0, load on core 1; RTCP every
  # second so that a 3 s run carries some.
  OUT=${2:?OUT}
  measure local target/quality-local "$OUT" target/release/srtpgate-bench "$PWD/target/release/srtpgate" 20,40 2 3 1 \
    --relay-cpus 0 --loadgen-cpus 1 --loadgen-threads 1
  ;;
*)
  echo "unknown part $part; $usage" >&2
  exit 2
  ;;
esac
