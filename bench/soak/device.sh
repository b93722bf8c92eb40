#!/usr/bin/env bash
# The long soak on a lent machine, in three calls of its 10-minute command
# limit (docs/RELIABILITY.md). The soak test binary (crates/bench), srtpgate
# and srtpgate-bench, built here and packed as .rig/soak-bundle.tar.xz (files
# `soak`, `srtpgate`, `srtpgate-bench`), are carried; the test finds the
# daemon beside itself and the load generator at the path it was built at
# (/work/main/target/release/srtpgate-bench), so it is put there.
#
#   bench/soak/device.sh start SECONDS CALLS   # starts it in the background, returns
#   bench/soak/device.sh wait N                # waits up to N s (or until it ends), copies what it has to $OUT
#
# Samples are written as they are taken (every 30 s in runs over 10 min), so
# a run cut short by the lending still leaves its CSV.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=/tmp/soak
case "${1:?start or wait}" in
start)
    seconds=${2:-1200}
    calls=${3:-2000}
    rm -rf "$dir" && mkdir -p "$dir" /work/main/target/release /work/main/target/tmp
    tar -xJf .rig/soak-bundle.tar.xz -C "$dir"
    cp "$dir/srtpgate" /work/main/target/release/srtpgate
    cp "$dir/srtpgate-bench" /work/main/target/release/srtpgate-bench
    {
        echo 'ulimit -n "$(ulimit -Hn)"'
        echo "export SRTPGATE_SOAK_SECONDS=$seconds SRTPGATE_SOAK_CALLS=$calls SRTPGATE_SOAK_WORKERS=4"
        echo "export SRTPGATE_SOAK_THREADS=8 SRTPGATE_SOAK_CALL_SECONDS=30 SRTPGATE_SOAK_CSV=$dir/soak.csv"
        echo "export SRTPGATE_SOAK_PORT_MIN=30000 SRTPGATE_SOAK_PORT_MAX=59999"
        echo "date -u +%FT%TZ >$dir/started"
        echo "$dir/soak --nocapture >$dir/soak.log 2>&1"
        echo "echo \$? >$dir/rc"
    } >"$dir/run.sh"
    # In a session of its own, so that it outlives this command.
    setsid nohup bash "$dir/run.sh" >/dev/null 2>&1 </dev/null &
    sleep 5
    echo "started: $(cat "$dir/started"), $seconds s, $calls calls; $(nproc) cores"
    tail -3 "$dir/soak.log" || true
    ;;
wait)
    limit=${2:-570}
    end=$((SECONDS + limit))
    while [ ! -f "$dir/rc" ] && [ $SECONDS -lt $end ]; do sleep 5; done
    out=${OUT:-/tmp/soak-out}
    mkdir -p "$out"
    cp "$dir/soak.csv" "$dir/soak.log" "$out/" 2>/dev/null || true
    cp /work/main/target/tmp/relay-tests/soak.log "$out/relay.log" 2>/dev/null || true
    [ -f "$dir/rc" ] && cp "$dir/rc" "$out/rc"
    echo "rc: $(cat "$dir/rc" 2>/dev/null || echo running)"
    tail -5 "$out/soak.csv" 2>/dev/null || true
    grep -E 'soak: loadgen|panicked|test result' "$dir/soak.log" | cut -c1-400 | tail -5 || true
    ;;
esac
